#!/usr/bin/env bash
# The Slurm test: a real Slurm 22.05 on one host carries out ecosched's
# decisions. It brings up deploy/slurm/local-cluster.sh (3 nodes
# of 2 CPUs), one ecosched daemon per node, and `ecosched slurm advise`,
# then checks:
#   hooks      the Prolog and Epilog reached the node's ecosched for every job
#   confine    ecosched narrows a job's tasks inside the job's cpuset only
#   restore    ending a job (job-end) gives its tasks their CPUs back
#   mix        with 8 jobs (4 memory-bound, 4 compute-bound) submitted in a
#              bad order, every node runs one of each while 6 run at once
#   reconfig   the advisor's node settings come back after
#              `scontrol reconfigure`
#   remember   a rerun job without a declared class gets its --prefer from
#              the SQLite store (via job_submit.lua)
#   swap       of jobs packed badly while the advisor was off, it requeues
#              one opted-in (--requeue) job from each side, which Slurm
#              places on the other's node; jobs that did not opt in stay
#   unmanaged  with ecosched stopped, jobs still run and no node drains
#   records    every managed job's totals from ecosched (energy with its
#              source, CPU and wall seconds, policy) are in its AdminComment,
#              as `sacct` shows it, its CPU time within 10 % of sacct's
#              TotalCPU
# Its last line is a JSON summary with the per-node placement. Slurm,
# ecosched and the advisor are torn down on every exit.
#
#   tests/slurm/run.sh        (root; builds target/release/ecosched)
#
# Energy effects cannot be seen on one VM; this shows the system is correct.
# On a machine without hardware counters the memory component of a job's
# activity vector cannot be measured: classes here come from the job's
# comment (`ecosched:class=mem`) and then from the store, and what is
# measured is each job's CPU use (see docs/operators/slurm.md).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export ECOSCHED_SLURM_DIR=${ECOSCHED_SLURM_DIR:-/tmp/ecosched-slurm-test}
export ECOSCHED_SLURM_PORT=${ECOSCHED_SLURM_PORT:-16917}
D=$ECOSCHED_SLURM_DIR
BIN=$REPO/target/release/ecosched
METRICS_BASE=16940 # exporters n1..n3 at 16941..16943
NODES=(n1 n2 n3)
CLUSTER=$REPO/deploy/slurm/local-cluster.sh
started=$(date +%s)

log() { echo "slurm-test: $*" >&2; }
fail() {
	log "FAIL: $*"
	echo "{\"ok\":false,\"failed\":$(printf '%s' "$*" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}"
	exit 1
}

stop_daemons() {
	for n in "${NODES[@]}"; do
		f=$D/$n/ecosched.pid
		if [ -f "$f" ]; then
			pid=$(cat "$f")
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			rm -f "$f"
		fi
	done
}
stop_advisor() {
	if [ -f "$D/advisor.pid" ]; then
		kill "$(cat "$D/advisor.pid")" 2>/dev/null || true
		wait "$(cat "$D/advisor.pid")" 2>/dev/null || true
		rm -f "$D/advisor.pid"
	fi
}
cleanup() {
	stop_advisor
	stop_daemons
	"$CLUSTER" down || true
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || fail "run as root (Slurm daemons, cgroups)"
command -v stress-ng >/dev/null || {
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng
}
# Up to date with the tree (a no-op when it is).
(cd "$REPO" && cargo build --release -q -p ecosched)

# A clean slate: a previous run's state would answer for this one.
"$CLUSTER" down 2>/dev/null || true
rm -rf "$D"
ECOSCHED=$BIN ECOSCHED_POLICY=hilo-nospare "$CLUSTER" up
export SLURM_CONF=$D/etc/slurm.conf
cd "$D"

start_daemons() {
	for i in 1 2 3; do
		n=n$i
		mkdir -p "$D/$n/ecosched"
		cat >"$D/$n/ecosched.toml" <<EOF
[daemon]
state_dir = "$D/$n/ecosched"
socket = "$D/$n/ecosched/ctl.sock"
metrics = "127.0.0.1:$((METRICS_BASE + i))"
scan_interval_ms = 200
EOF
		setsid "$BIN" daemon --config "$D/$n/ecosched.toml" >>"$D/$n/ecosched.log" 2>&1 &
		echo $! >"$D/$n/ecosched.pid"
	done
	for n in "${NODES[@]}"; do
		for _ in $(seq 50); do [ -S "$D/$n/ecosched/ctl.sock" ] && break; sleep 0.1; done
		[ -S "$D/$n/ecosched/ctl.sock" ] || fail "ecosched on $n did not start: $(tail -3 "$D/$n/ecosched.log")"
	done
}
start_daemons

# wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds.
wait_for() {
	local limit=$1 what=$2
	shift 2
	local end=$(($(date +%s) + limit))
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || fail "$what (waited ${limit} s)"
		sleep 0.2
	done
}
job_state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
is_running() { [ "$(job_state "$1")" = RUNNING ]; }
is_done() { case "$(job_state "$1")" in COMPLETED | CANCELLED | FAILED | TIMEOUT) return 0 ;; esac; return 1; }
job_node() { scontrol show job -o "$1" | grep -o ' NodeList=[^ ]*' | cut -d= -f2; }

# --- confine and restore ---------------------------------------------------
# A 2-CPU job with one busy task: hilo-nospare sizes its set to one CPU, so
# ecosched narrows the task inside the job's cpuset (2 CPUs); job-end (what
# the Epilog sends) must give the CPUs back while the job still runs.
j=$(sbatch --parsable -o /dev/null -J confine -c2 -w n1 --wrap 'stress-ng --cpu 1 -t 60s')
wait_for 15 "job $j running" is_running "$j"
job_cg=/sys/fs/cgroup/cpuset/slurm_n1/uid_0/job_$j
has_cpus() { [ -n "$(cat "$job_cg/cpuset.cpus" 2>/dev/null)" ]; }
wait_for 10 "job $j cpuset" has_cpus
job_cpus=$(cat "$job_cg/cpuset.cpus")
# The job's own worker: other stress-ng processes may run on this host.
worker() {
	local p
	for p in $(cat "$job_cg/step_batch/cgroup.procs" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = stress-ng-cpu ] && { echo "$p"; return; }
	done
	return 0
}
allowed() {
	local p
	p=$(worker)
	[ -n "$p" ] && grep Cpus_allowed_list "/proc/$p/status" | awk '{print $2}'
}
during=
narrowed() {
	local now
	now=$(allowed 2>/dev/null) || return 1
	[ -n "$now" ] && [ "$now" != "$job_cpus" ] && during=$now
}
wait_for 15 "ecosched narrowing job $j inside its cpuset $job_cpus" narrowed
"$BIN" ctl --socket "$D/n1/ecosched/ctl.sock" job-end "$j" >/dev/null
restored() { [ "$(allowed)" = "$job_cpus" ]; }
wait_for 5 "job $j's CPUs restored to $job_cpus after job-end" restored
after=$(allowed)
scancel "$j"
wait_for 20 "job $j ended" is_done "$j"
log "confine/restore: job cpuset $job_cpus, task confined to $during, after job-end $after"

# --- mix -------------------------------------------------------------------
mkdir -p "$D/advisor"
start_advisor() {
	"$BIN" slurm advise --state-dir "$D/advisor" --interval-ms 300 \
		--node n1=127.0.0.1:$((METRICS_BASE + 1)) --node n2=127.0.0.1:$((METRICS_BASE + 2)) \
		--node n3=127.0.0.1:$((METRICS_BASE + 3)) 2>>"$D/advisor.log" &
	echo $! >"$D/advisor.pid"
}
start_advisor
pass() { python3 -c "import json;print(json.load(open('$D/advisor/advise-status.json'))['pass'])" 2>/dev/null || echo 0; }
# Two passes after now: the advisor has seen everything running now.
passed() { [ "$(pass)" -ge "$1" ]; }
settle() { wait_for 10 "advisor passes" passed $(($(pass) + 2)); }
wait_for 10 "advisor's first pass" passed 1

# The advisor's settings must come back after `scontrol reconfigure`,
# which puts slurm.conf's node features back.
features() {
	sinfo -h -N -o '%N %b %w' | sort -u | while read -r n f w; do
		printf '%s=%s/%s ' "$n" "$(printf '%s' "$f" | tr , '\n' | sort | paste -sd,)" "$w"
	done
}
check_reconfigure() {
	before=$(features)
	scontrol reconfigure
	# Say whether Slurm reset them before the advisor's next pass, so
	# that the check is known to have had work to do.
	just_after=$(features)
	same_features() { [ "$(features)" = "$before" ]; }
	wait_for 10 "advisor settings back after reconfigure (had: $before)" same_features
	log "reconfig: advised $before; right after reconfigure $just_after"
}

mem_job='stress-ng --vm 1 --vm-bytes 64M -t 25s'
cpu_job='stress-ng --cpu 1 -t 25s'
declare -A class_of
ids=()
# Three memory-bound jobs first: a packing scheduler puts two on n1.
for c in mem mem mem cpu cpu cpu mem cpu; do
	if [ "$c" = mem ]; then cmd=$mem_job name=stream; else cmd=$cpu_job name=crunch; fi
	id=$(sbatch --parsable -o /dev/null -J "$name" --comment "ecosched:class=$c" --wrap "$cmd")
	class_of[$id]=$c
	ids+=("$id")
	if [ "${#ids[@]}" -le 6 ]; then
		wait_for 15 "job $id running" is_running "$id"
		settle
		if [ "${#ids[@]}" = 1 ]; then check_reconfigure; fi
	fi
done
# All six slots taken: what runs where now.
declare -A at_once
for id in "${ids[@]:0:6}"; do
	n=$(job_node "$id")
	at_once[$n]="${at_once[$n]:-} ${class_of[$id]}"
done
for n in "${NODES[@]}"; do
	case "${at_once[$n]:-}" in
	*mem*cpu* | *cpu*mem*) ;;
	*) fail "node $n runs [${at_once[$n]:-}] at once, not a mix (advisor log: $(tail -3 "$D/advisor.log"))" ;;
	esac
done
log "mix: ${at_once[*]}"

for id in "${ids[@]}"; do wait_for 90 "job $id done" is_done "$id"; done

# --- hooks and restore after each job -------------------------------------
for id in "${ids[@]}"; do
	n=$(job_node "$id")
	grep -q "job-start node=$n job=$id rc=0 " "$D/$n/ecosched-prolog.log" ||
		fail "the Prolog of job $id did not reach ecosched on $n: $(grep "job=$id " "$D/$n/ecosched-prolog.log")"
	grep -q "job-end node=$n job=$id rc=0 " "$D/$n/ecosched-prolog.log" ||
		fail "the Epilog of job $id did not reach ecosched on $n: $(grep "job=$id " "$D/$n/ecosched-prolog.log")"
	grep -q "group job-$id: stopped managing" "$D/$n/ecosched.log" ||
		fail "ecosched on $n never stopped managing job $id"
done
for n in "${NODES[@]}"; do
	left=$(find "$D/$n/ecosched" -name 'journal-*' -size +0 2>/dev/null || true)
	[ -z "$left" ] || fail "journals left on $n after its jobs: $left"
done
left=$(find /sys/fs/cgroup -maxdepth 3 -name 'ecosched-job*' 2>/dev/null || true)
[ -z "$left" ] || fail "cgroups left after the jobs: $left"

# --- records: the Epilog wrote each job's totals into its AdminComment -------
admin_comment() { sacct -n -X -j "$1" -o AdminComment%300 2>/dev/null | sed -e 's/^ *//' -e 's/ *$//'; }
has_record() { case "$(admin_comment "$1")" in "ecosched: energy_j="*) return 0 ;; esac; return 1; }
for id in "${ids[@]}"; do
	wait_for 15 "job $id's totals in sacct's AdminComment (Epilog: $(grep "admin-comment.*job=$id " "$D"/n*/ecosched-prolog.log))" has_record "$id"
	comment=$(admin_comment "$id")
	case "$comment" in
	*"policy=hilo-nospare"*) ;;
	*) fail "job $id's AdminComment names no policy hilo-nospare: $comment" ;;
	esac
	# The CPU time against Slurm's own (the rusage of the job's steps).
	cpu=$(printf '%s' "$comment" | sed -n 's/.* cpu_s=\([0-9.]*\) .*/\1/p')
	steps=$(sacct -n -P -j "$id" -o JobID,TotalCPU)
	agree=$(python3 - "${cpu:-0}" "$steps" <<'PY'
import sys
cpu, rows = float(sys.argv[1]), sys.argv[2]
def secs(t):
    days, _, clock = t.strip().rpartition("-")
    s = 0.0
    for part in clock.split(":"):
        s = s * 60 + float(part)
    return s + 86400 * int(days or 0)
# The job's steps (batch, extern): the job's own line may carry none.
seconds = sum(secs(t) for j, t in (r.split("|") for r in rows.splitlines() if "|" in r) if "." in j)
print(f"{abs(cpu - seconds) <= 0.1 * seconds + 0.5} {seconds:.2f}")
PY
)
	[ "${agree%% *}" = True ] || fail "job $id: AdminComment cpu_s=${cpu}, sacct TotalCPU ${agree#* } s: $comment"
	cpu_pairs="${cpu_pairs:-}$id:${cpu}/${agree#* } "
done
records=$(admin_comment "${ids[0]}")
log "records: job ${ids[0]}: $records; CPU s ecosched/sacct: $cpu_pairs"

# --- remember: a rerun without a comment is classed from the store -------
id=$(sbatch --parsable -o /dev/null -J stream --hold --wrap 'true')
prefer=$(scontrol show job "$id" | grep -o 'Prefer=[^ ]*' | cut -d= -f2)
scancel "$id"
[ "$prefer" = eco_take_mem ] || fail "rerun of 'stream' got Prefer=$prefer, not eco_take_mem from the store"
classes=$(python3 - "$D/advisor/ecosched-slurm.sqlite" <<'EOF'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT user, name, class, source, cpu_busy, samples FROM jobs ORDER BY name").fetchall()
print("; ".join(f"{u}/{n}={c} ({s}, cpu_busy={b if b is None else round(b, 2)}, {k} samples)" for u, n, c, s, b, k in rows))
EOF
)
log "remember: $classes"

# --- swap: running jobs move only when they opted in -----------------------
# Without the advisor Slurm packs m m | m c | c c; the advisor then
# requeues one opted-in job from each side (m1, c3), which Slurm places
# again by their preferences, each where the other was.
stop_advisor
swap_ids=()
for c in mem mem mem cpu cpu cpu; do
	if [ "$c" = mem ]; then cmd='stress-ng --vm 1 --vm-bytes 64M -t 60s'; else cmd='stress-ng --cpu 1 -t 60s'; fi
	opt=()
	if [ "${#swap_ids[@]}" = 0 ] || [ "${#swap_ids[@]}" = 5 ]; then opt=(--requeue); fi
	id=$(sbatch --parsable -o /dev/null -J "swap-$c" "${opt[@]}" --comment "ecosched:class=$c" --wrap "$cmd")
	swap_ids+=("$id")
	class_of[$id]=$c
	wait_for 15 "job $id running" is_running "$id"
done
packed=$(for id in "${swap_ids[@]}"; do echo -n "$id:${class_of[$id]}@$(job_node "$id") "; done)
m1=${swap_ids[0]} c3=${swap_ids[5]}
m1_was=$(job_node "$m1") c3_was=$(job_node "$c3")
start_advisor
restarted() { scontrol show job -o "$1" | grep -q 'Restarts=1' && is_running "$1"; }
wait_for 30 "the advisor swapping jobs $m1 and $c3 (packed: $packed)" restarted "$m1"
# Each requeued job waits out the cleanup of the one whose place it takes;
# on a loaded machine the second can take as long as the first.
wait_for 30 "job $c3 running again" restarted "$c3"
[ "$(job_node "$m1")" != "$m1_was" ] || fail "job $m1 was requeued but came back to $m1_was"
[ "$(job_node "$c3")" != "$c3_was" ] || fail "job $c3 was requeued but came back to $c3_was"
for id in "${swap_ids[@]:1:4}"; do
	scontrol show job -o "$id" | grep -q 'Restarts=0' || fail "job $id moved without opting in"
done
swapped=$(for id in "${swap_ids[@]}"; do echo -n "$id:${class_of[$id]}@$(job_node "$id") "; done)
log "swap: packed $packed-> $swapped"
stop_advisor
scancel "${swap_ids[@]}"
for id in "${swap_ids[@]}"; do wait_for 30 "job $id ended" is_done "$id"; done

# --- unmanaged: ecosched stopped -----------------------------------------
stop_daemons
u1=$(sbatch --parsable -o /dev/null -J unmanaged -w n2 --wrap 'stress-ng --cpu 1 -t 2s')
u2=$(sbatch --parsable -o /dev/null -J unmanaged -w n3 --wrap 'true')
wait_for 30 "jobs $u1 $u2 done without ecosched" is_done "$u1"
wait_for 30 "job $u2 done without ecosched" is_done "$u2"
for u in "$u1" "$u2"; do
	[ "$(job_state "$u")" = COMPLETED ] || fail "job $u ended $(job_state "$u") with ecosched stopped"
done
 grep -q "job-start node=n2 job=$u1 rc=[1-9]" "$D/n2/ecosched-prolog.log" ||
	fail "the Prolog did not log its failure to reach a stopped ecosched"
[ -z "$(sinfo -h -R)" ] || fail "a node drained: $(sinfo -R)"

# --- summary ---------------------------------------------------------------
placement=$(for id in "${ids[@]}"; do echo "$(job_node "$id") $id ${class_of[$id]}"; done)
python3 - "$placement" "$job_cpus" "$during" "$after" "$before" "$just_after" "$classes" "$packed" "$swapped" "$records" "$(($(date +%s) - started))" <<'EOF'
import json, sys
placement, job_cpus, during, after, features, just_after, classes, packed, swapped, records, secs = sys.argv[1:]
nodes = {}
for line in placement.splitlines():
    node, job, cls = line.split()
    nodes.setdefault(node, []).append({"job": int(job), "class": cls})
print(json.dumps({
    "ok": True,
    "placement": nodes,
    "confine": {"job_cpuset": job_cpus, "managed": during, "after_job_end": after},
    "features": {"advised": features.strip(), "right_after_reconfigure": just_after.strip()},
    "store": classes,
    "swap": {"packed": packed.strip(), "after": swapped.strip()},
    "admin_comment": records,
    "checks": ["hooks", "confine", "restore", "mix", "reconfig", "remember", "swap", "unmanaged", "records"],
    "seconds": int(secs),
}))
EOF
