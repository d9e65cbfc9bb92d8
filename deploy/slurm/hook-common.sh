# Shared by deploy/slurm/prolog and epilog (sourced; see prolog for the
# settings). Nothing here may make the hook fail.
ENV_FILE=${ECOSCHED_SLURM_ENV:-/etc/ecosched/slurm.env}
# shellcheck disable=SC1090
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
ECOSCHED=${ECOSCHED:-ecosched}
ECOSCHED_SOCKET=${ECOSCHED_SOCKET:-/run/ecosched/ctl.sock}
ECOSCHED_CGROUP=${ECOSCHED_CGROUP:-/sys/fs/cgroup/cpuset/slurm/uid_%u/job_%j}
ECOSCHED_POLICY=${ECOSCHED_POLICY:-hilo}
ECOSCHED_LOG=${ECOSCHED_LOG:-/var/log/ecosched-slurm.log}
ECOSCHED_TIMEOUT=${ECOSCHED_TIMEOUT:-5}

# Replace %n, %u and %j in $1.
expand() {
	printf '%s\n' "$1" | sed -e "s/%n/${SLURMD_NODENAME:-}/g" \
		-e "s/%u/${SLURM_JOB_UID:-}/g" -e "s/%j/${SLURM_JOB_ID:-}/g"
}

# hook_run REQUEST ARGS...: `ecosched ctl REQUEST ARGS...`, bounded by
# $ECOSCHED_TIMEOUT, with one log line saying what happened; the answer is
# left in $answer.
hook_run() {
	log=$(expand "$ECOSCHED_LOG")
	socket=$(expand "$ECOSCHED_SOCKET")
	answer=$(timeout -k 1 "$ECOSCHED_TIMEOUT" "$ECOSCHED" ctl --socket "$socket" "$@" 2>&1)
	rc=$?
	hook_note "$1" "$answer" "$rc"
}

# hook_note WHAT TEXT RC: one log line saying what happened.
hook_note() {
	log=$(expand "$ECOSCHED_LOG")
	printf '%s %s node=%s job=%s rc=%s %s\n' "$(date -u +%FT%TZ)" "$1" \
		"${SLURMD_NODENAME:-?}" "${SLURM_JOB_ID:-?}" "$3" \
		"$(printf '%s' "$2" | tr '\n' ' ')" >>"$log" 2>/dev/null || true
}
