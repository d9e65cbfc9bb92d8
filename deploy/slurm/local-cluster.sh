#!/bin/sh
# A Slurm cluster on one host, for ecosched's tests and demos: slurmctld,
# three slurmd (nodes n1, n2, n3, all on 127.0.0.1 with a port each) and
# accounting (slurmdbd on a private MariaDB, so that `sacct` shows a job's
# AdminComment, where the Epilog writes ecosched's totals), every file under
# one directory so that `down` leaves nothing behind.
#
#   deploy/slurm/local-cluster.sh up     # installs slurm-wlm if missing; ~10 s
#   deploy/slurm/local-cluster.sh down   # stops every daemon it started
#   deploy/slurm/local-cluster.sh env    # prints `export SLURM_CONF=…`
#
# ECOSCHED_SLURM_DIR (default /tmp/ecosched-slurm) holds the configuration,
# the advisor's state (advisor/),
# spools, logs and pid files; ECOSCHED_SLURM_PORT (default 16817) is the
# controller's port, the nodes take the next three, slurmdbd the fourth and
# MariaDB the fifth (loopback only). Authentication is
# auth/none: the cluster listens on loopback only and is for tests.
#
# The nodes use Slurm's cgroup plugins (proctrack/cgroup, task/cgroup), so
# each job has a cpuset of its own, as on a real cluster; Debian's Slurm is
# built for several slurmd per host, which keeps each node's cgroups under
# slurm_<node>/. The Prolog and Epilog tell each node's ecosched about its
# jobs (deploy/slurm/prolog, deploy/slurm/epilog); job_submit.lua sets a
# job's soft preference from its class.
set -eu

DIR=${ECOSCHED_SLURM_DIR:-/tmp/ecosched-slurm}
PORT=${ECOSCHED_SLURM_PORT:-16817}
HERE=$(cd "$(dirname "$0")" && pwd)
NODES="n1 n2 n3"
SBIN=/usr/sbin

install_packages() {
	if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
		command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null &&
		ls /usr/lib/*/slurm-wlm/job_submit_lua.so >/dev/null 2>&1; then
		return 0
	fi
	echo "local-cluster: installing slurm-wlm, slurmdbd and mariadb-server" >&2
	apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm slurmdbd mariadb-server lua5.3 >&2
}

write_config() {
	mkdir -p "$DIR/etc" "$DIR/ctld"
	for n in $NODES; do mkdir -p "$DIR/$n/spool"; done
	# Prolog/Epilog and job_submit.lua read their settings from here.
	cat >"$DIR/etc/ecosched-slurm.env" <<ENV
# Read by deploy/slurm/prolog and epilog as KEY=VALUE data, never run.
ECOSCHED=${ECOSCHED:-ecosched}
ECOSCHED_SOCKET=$DIR/%n/ecosched/ctl.sock
ECOSCHED_CGROUP=/sys/fs/cgroup/cpuset/slurm_%n/uid_%u/job_%j
ECOSCHED_POLICY=${ECOSCHED_POLICY:-hilo}
ECOSCHED_LOG=$DIR/%n/ecosched-prolog.log
ENV
	# The hooks use it only if root owns it and no one else may write it.
	chmod 0644 "$DIR/etc/ecosched-slurm.env"
	for hook in prolog epilog; do
		cat >"$DIR/etc/$hook" <<HOOK
#!/bin/sh
ECOSCHED_SLURM_ENV=$DIR/etc/ecosched-slurm.env exec "$HERE/$hook" "\$@"
HOOK
		chmod 0755 "$DIR/etc/$hook"
	done
	cp "$HERE/job_submit.lua" "$DIR/etc/job_submit.lua"
	cat >"$DIR/etc/cgroup.conf" <<CG
CgroupPlugin=cgroup/v1
ConstrainCores=yes
CG
	cat >"$DIR/etc/slurm.conf" <<CONF
ClusterName=ecosched-local
SlurmctldHost=localhost
SlurmctldPort=$PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$DIR/ctld
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdSpoolDir=$DIR/%n/spool
SlurmdPidFile=$DIR/%n/slurmd.pid
SlurmdLogFile=$DIR/%n/slurmd.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PrologFlags=Alloc,Contain
Prolog=$DIR/etc/prolog
Epilog=$DIR/etc/epilog
JobSubmitPlugins=lua
ReturnToService=2
MpiDefault=none
SchedulerParameters=bf_interval=1
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=600
# Jobs opt in to being requeued (moved by the advisor) with --requeue.
JobRequeue=0
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
AccountingStorageType=accounting_storage/slurmdbd
JobAcctGatherType=jobacct_gather/cgroup
AccountingStorageHost=localhost
AccountingStoragePort=$((PORT + 4))
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT + 1)) Features=eco_take_mem,eco_take_cpu CPUs=2 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT + 2)) Features=eco_take_mem,eco_take_cpu CPUs=2 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000
NodeName=n3 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT + 3)) Features=eco_take_mem,eco_take_cpu CPUs=2 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000
PartitionName=debug Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP
CONF
	cat >"$DIR/etc/slurmdbd.conf" <<DBD
AuthType=auth/none
DbdHost=localhost
DbdPort=$((PORT + 4))
SlurmUser=root
PidFile=$DIR/slurmdbd.pid
LogFile=$DIR/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT + 5))
StorageUser=root
StorageLoc=ecosched_acct
DBD
	chmod 0600 "$DIR/etc/slurmdbd.conf"
}

# A private MariaDB for slurmdbd: its data, socket and log under $DIR/db.
start_db() {
	mkdir -p "$DIR/db"
	if [ ! -d "$DIR/db/data/mysql" ]; then
		mariadb-install-db --user=root --datadir="$DIR/db/data" \
			--auth-root-authentication-method=normal >"$DIR/db/install.log" 2>&1
	fi
	mariadbd --user=root --datadir="$DIR/db/data" --socket="$DIR/db/mysqld.sock" \
		--bind-address=127.0.0.1 --port=$((PORT + 5)) --pid-file="$DIR/db/mysqld.pid" \
		--log-error="$DIR/db/mysqld.log" --innodb-buffer-pool-size=32M >/dev/null 2>&1 &
	i=0
	until mariadb --socket="$DIR/db/mysqld.sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 60 ] || { echo "local-cluster: MariaDB did not start; see $DIR/db/mysqld.log" >&2; return 1; }
		sleep 0.5
	done
	# slurmdbd connects over TCP as root without a password.
	mariadb --socket="$DIR/db/mysqld.sock" -uroot -e \
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL ON *.* TO 'root'@'127.0.0.1'"
}

start_accounting() {
	start_db
	# slurmdbd reads slurmdbd.conf beside $SLURM_CONF.
	"$SBIN/slurmdbd"
	i=0
	until sacctmgr -n list cluster >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 60 ] || { echo "local-cluster: slurmdbd did not answer; see $DIR/slurmdbd.log" >&2; return 1; }
		sleep 0.5
	done
	sacctmgr -i add cluster ecosched-local >/dev/null 2>&1 || true
}

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

up() {
	install_packages
	if running "$DIR/slurmctld.pid"; then
		echo "local-cluster: already up ($DIR)" >&2
		return 0
	fi
	write_config
	export SLURM_CONF="$DIR/etc/slurm.conf"
	start_accounting
	# job_submit.lua reads the advisor's class table.
	ECOSCHED_CLASSES="$DIR/advisor/classes.tsv" "$SBIN/slurmctld" -i
	for n in $NODES; do "$SBIN/slurmd" -N "$n"; done
	# Up when every node answers and is idle.
	i=0
	while [ $i -lt 60 ]; do
		idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$' || true)
		[ "$idle" = 3 ] && { echo "local-cluster: up: 3 nodes idle; export SLURM_CONF=$SLURM_CONF" >&2; return 0; }
		sleep 0.5
		i=$((i + 1))
	done
	echo "local-cluster: the nodes did not come up within 30 s; see $DIR/*.log and $DIR/n*/slurmd.log" >&2
	sinfo -N >&2 || true
	return 1
}

stop_pid() {
	f=$1
	running "$f" || { rm -f "$f"; return 0; }
	pid=$(cat "$f")
	kill "$pid" 2>/dev/null || true
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$f"
}

down() {
	export SLURM_CONF="$DIR/etc/slurm.conf"
	if [ -f "$SLURM_CONF" ] && running "$DIR/slurmctld.pid"; then
		scancel --full -p debug 2>/dev/null || true
	fi
	for n in $NODES; do stop_pid "$DIR/$n/slurmd.pid"; done
	stop_pid "$DIR/slurmctld.pid"
	stop_pid "$DIR/slurmdbd.pid"
	stop_pid "$DIR/db/mysqld.pid"
	# slurmstepd processes of killed jobs end with their slurmd's jobs.
	i=0
	while pgrep -f "slurmstepd.*" >/dev/null 2>&1 && [ $i -lt 25 ]; do sleep 0.2; i=$((i + 1)); done
	for n in $NODES; do
		for c in /sys/fs/cgroup/*/slurm_$n; do
			[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		done
	done
	echo "local-cluster: down" >&2
}

case "${1:-}" in
up) up ;;
down) down ;;
env) echo "export SLURM_CONF=$DIR/etc/slurm.conf" ;;
*)
	echo "usage: $0 up|down|env" >&2
	exit 2
	;;
esac
