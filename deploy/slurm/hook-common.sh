# Shared by deploy/slurm/prolog and epilog, which source it in a subshell
# (the settings are listed in prolog). It only sets defaults and defines
# functions; nothing here may make a hook fail.
ECOSCHED=ecosched
ECOSCHED_SOCKET=/run/ecosched/ctl.sock
ECOSCHED_CGROUP=/sys/fs/cgroup/cpuset/slurm/uid_%u/job_%j
ECOSCHED_POLICY=hilo
ECOSCHED_LOG=/var/log/ecosched-slurm.log
ECOSCHED_TIMEOUT=5
# At most this many lines are read from the settings file.
HOOK_MAX_LINES=200

# hook_say TEXT: TEXT on stderr and to syslog (tag ecosched-slurm), for
# what went wrong: slurmd keeps neither a hook's output nor, since the
# hooks exit 0, a failure.
hook_say() {
	printf 'ecosched-slurm: %s\n' "$1" >&2
	logger -t ecosched-slurm -p daemon.err -- "$1" 2>/dev/null || true
}

# hook_settings: the settings from $ECOSCHED_SLURM_ENV (default
# /etc/ecosched/slurm.env), if that file exists. Returns 1, having said
# why, when it exists but is not fit to use; the hook then does not act
# and the job runs unmanaged.
hook_settings() {
	env_file=${ECOSCHED_SLURM_ENV:-/etc/ecosched/slurm.env}
	[ -e "$env_file" ] || [ -L "$env_file" ] || return 0
	if [ ! -f "$env_file" ] || [ ! -r "$env_file" ]; then
		hook_say "$env_file: not a readable regular file; settings not used, the job runs unmanaged"
		return 1
	fi
	hook_parse "$env_file" <"$env_file"
}

# hook_parse FILE, with FILE open on stdin: the settings it holds. The
# file is data and is never run: KEY=VALUE lines with a key of prolog's
# table, `#` comments and blank lines; a value may be put in '…' or "…"
# and is taken as written, so a `$` or backquote in it is refused rather
# than left unexpanded. The hooks run as root, so the file must be owned
# by root and writable by no one else (checked on the open file itself,
# so that it cannot be swapped after the check): a file another user
# could change would choose the program root runs.
hook_parse() {
	if ! owner_mode=$(stat -L -c '%u %a' /dev/stdin 2>&1); then
		hook_say "$1: $owner_mode; settings not used, the job runs unmanaged"
		return 1
	fi
	owner=${owner_mode% *}
	mode=${owner_mode#* }
	if [ "$owner" != 0 ]; then
		hook_say "$1: owned by uid $owner, not root; settings not used, the job runs unmanaged"
		return 1
	fi
	if [ $((0$mode & 022)) != 0 ]; then
		hook_say "$1: mode $mode: writable by group or others; settings not used, the job runs unmanaged"
		return 1
	fi
	n=0
	bad=0
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		if [ "$n" -gt "$HOOK_MAX_LINES" ]; then
			hook_say "$1: more than $HOOK_MAX_LINES lines"
			bad=1
			break
		fi
		case $line in
		'' | '#'*) continue ;;
		[A-Za-z_]*=*) ;;
		*)
			hook_say "$1: line $n: not KEY=VALUE"
			bad=1
			continue
			;;
		esac
		key=${line%%=*}
		value=${line#*=}
		case $key in
		*[!A-Za-z0-9_]*)
			hook_say "$1: line $n: not KEY=VALUE"
			bad=1
			continue
			;;
		esac
		case $value in
		\"*\" | \'*\') value=${value#?} value=${value%?} ;;
		esac
		case $value in
		*'$'* | *'`'*)
			hook_say "$1: line $n: $key: a shell expansion (\$ or \`), which is not run: write the value itself"
			bad=1
			continue
			;;
		\"* | \'* | *\" | *\')
			hook_say "$1: line $n: $key: unbalanced quote"
			bad=1
			continue
			;;
		'')
			hook_say "$1: line $n: $key: empty value"
			bad=1
			continue
			;;
		esac
		case $key in
		ECOSCHED) ECOSCHED=$value ;;
		ECOSCHED_SOCKET) ECOSCHED_SOCKET=$value ;;
		ECOSCHED_CGROUP) ECOSCHED_CGROUP=$value ;;
		ECOSCHED_POLICY) ECOSCHED_POLICY=$value ;;
		ECOSCHED_LOG) ECOSCHED_LOG=$value ;;
		ECOSCHED_TIMEOUT)
			case $value in
			*[!0-9]* | 0 | 00*)
				hook_say "$1: line $n: ECOSCHED_TIMEOUT: $value is not a whole number of seconds above 0"
				bad=1
				;;
			*) ECOSCHED_TIMEOUT=$value ;;
			esac
			;;
		*)
			hook_say "$1: line $n: unknown key $key (known: ECOSCHED, ECOSCHED_SOCKET, ECOSCHED_CGROUP, ECOSCHED_POLICY, ECOSCHED_LOG, ECOSCHED_TIMEOUT)"
			bad=1
			;;
		esac
	done
	if [ "$bad" != 0 ]; then
		hook_say "$1: settings not used, the job runs unmanaged"
		return 1
	fi
}

# Replace %n, %u and %j in $1.
expand() {
	printf '%s\n' "$1" | sed -e "s/%n/${SLURMD_NODENAME:-}/g" \
		-e "s/%u/${SLURM_JOB_UID:-}/g" -e "s/%j/${SLURM_JOB_ID:-}/g"
}

# hook_run REQUEST ARGS...: `ecosched ctl REQUEST ARGS...`, bounded by
# $ECOSCHED_TIMEOUT, with one log line saying what happened; the answer is
# left in $answer.
hook_run() {
	socket=$(expand "$ECOSCHED_SOCKET")
	answer=$(timeout -k 1 "$ECOSCHED_TIMEOUT" "$ECOSCHED" ctl --socket "$socket" "$@" 2>&1)
	rc=$?
	hook_note "$1" "$answer" "$rc"
}

# hook_note WHAT TEXT RC: one log line saying what happened; a failure
# (RC not 0) is also said on stderr and to syslog.
hook_note() {
	log=$(expand "$ECOSCHED_LOG")
	text=$(printf '%s' "$2" | tr '\n' ' ')
	printf '%s %s node=%s job=%s rc=%s %s\n' "$(date -u +%FT%TZ)" "$1" \
		"${SLURMD_NODENAME:-?}" "${SLURM_JOB_ID:-?}" "$3" "$text" \
		>>"$log" 2>/dev/null || hook_say "$log: cannot append the hook's log"
	if [ "$3" != 0 ]; then
		hook_say "job ${SLURM_JOB_ID:-?}: $1 failed (rc=$3): $text"
	fi
}
