--[[
ecosched's job_submit.lua: give a job the soft node preference of its class,
so that Slurm puts it where `ecosched slurm advise` found room for that
class (features eco_take_mem / eco_take_cpu).

The class comes from the job's comment (`--comment=ecosched:class=mem`, or
`cpu`), else from an earlier run of the same user and job name (the
advisor's SQLite store, exported as classes.tsv: user<TAB>name<TAB>class).
Only `--prefer` is set, never `--constraint`: a preference that cannot be
met is dropped by the scheduler, so a job is never starved. A job that
already asks for a preference keeps its own.

ECOSCHED_CLASSES in slurmctld's environment names the class table
(default /var/lib/ecosched/slurm/classes.tsv).
--]]

local CLASSES = os.getenv("ECOSCHED_CLASSES") or "/var/lib/ecosched/slurm/classes.tsv"

local function valid(class)
	if class == "mem" or class == "cpu" then
		return class
	end
	return nil
end

local function declared(comment)
	if comment == nil then
		return nil
	end
	return valid(string.match(comment, "ecosched:class=(%a+)"))
end

local function remembered(user, name)
	if user == nil or name == nil then
		return nil
	end
	local f = io.open(CLASSES, "r")
	if f == nil then
		return nil
	end
	local found = nil
	for line in f:lines() do
		local u, n, c = string.match(line, "^([^\t]*)\t([^\t]*)\t([^\t]*)$")
		if u == user and n == name then
			found = valid(c)
		end
	end
	f:close()
	return found
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	if job_desc.prefer ~= nil and job_desc.prefer ~= "" then
		return slurm.SUCCESS
	end
	local class = declared(job_desc.comment)
	local source = "comment"
	if class == nil then
		class = remembered(job_desc.user_name, job_desc.name)
		source = "an earlier run"
	end
	if class ~= nil then
		job_desc.prefer = "eco_take_" .. class
		slurm.log_info("ecosched: job %s of %s: class %s (from %s), prefer %s",
			tostring(job_desc.name), tostring(job_desc.user_name), class, source, job_desc.prefer)
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

slurm.log_info("ecosched job_submit.lua loaded (classes from %s)", CLASSES)
return slurm.SUCCESS
