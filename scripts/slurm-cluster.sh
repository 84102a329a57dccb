#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the cluster test
# (internal/clustertest) and for trying the recipes in deploy/slurm by hand.
#
#   scripts/slurm-cluster.sh start DIR   start munged, slurmctld and slurmd with
#                                        their configuration and state under DIR;
#                                        prints the SLURM_CONF line to export
#   scripts/slurm-cluster.sh stop DIR    cancel every job, stop the daemons and
#                                        remove what start made under DIR
#   scripts/slurm-cluster.sh logs DIR    print the daemons' logs
#
# Needs root and Debian's slurm-wlm and munge. The daemons run as root
# (SlurmUser=root) except munged, which runs as the munge user with a key of
# its own; every port, socket and file is this cluster's own, so a Slurm or
# munge already on the machine is left alone. Processes are tracked by
# /proc (proctrack/linuxproc) and jobs are not confined (task/none), so no
# cgroup set-up is needed. There is no accounting database: job states come
# from slurmctld (scontrol show job).
#
# The node is this host (hostname -s) at 127.0.0.1 with nproc CPUs.
# SLURM_START_TIMEOUT (seconds, default 90) bounds each wait; on a timeout
# the logs are printed and the cluster is stopped.
set -euo pipefail

usage() {
	echo "usage: $0 start|stop|logs DIR" >&2
	exit 2
}
[[ $# == 2 ]] || usage
cmd=$1
[[ -n $2 ]] || usage
dir=$(realpath -m -- "$2")
timeout=${SLURM_START_TIMEOUT:-90}

die() {
	echo "slurm-cluster: $*" >&2
	exit 1
}

logs() {
	local f
	for f in "$dir"/log/*.log "$dir"/munge.path; do
		[[ -f $f ]] || continue
		if [[ $f == */munge.path ]]; then
			f=$(cat "$f")/munged.log
			[[ -f $f ]] || continue
		fi
		echo "==== $f"
		tail -n 60 "$f"
	done
}

# stop_pid PIDFILE: SIGTERM, then SIGKILL after 15 s.
stop_pid() {
	local pf=$1 pid
	[[ -s $pf ]] || return 0
	pid=$(cat "$pf")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 150); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pf"
}

stop() {
	[[ -d $dir ]] || return 0
	if [[ -f $dir/slurm.conf && -s $dir/run/slurmctld.pid ]] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null; then
		# Cancel what is left so that no job step outlives the cluster,
		# and give slurmd a moment to end the steps.
		SLURM_CONF=$dir/slurm.conf scancel --quiet --user=root 2>/dev/null || true
		for _ in $(seq 100); do
			[[ -z $(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null) ]] && break
			sleep 0.1
		done
	fi
	stop_pid "$dir/run/slurmd.pid"
	stop_pid "$dir/run/slurmctld.pid"
	if [[ -f $dir/munge.path ]]; then
		local m
		m=$(cat "$dir/munge.path")
		stop_pid "$m/munged.pid"
		[[ $m == /tmp/godwarfs-munge.* ]] && rm -rf "$m"
		rm -f "$dir/munge.path"
	fi
	rm -rf "$dir/state" "$dir/spool" "$dir/run" "$dir/slurm.conf"
}

# wait_for WHAT CMD...: run CMD until it succeeds, for at most $timeout s.
wait_for() {
	local what=$1
	shift
	local end=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= end)); then
			echo "slurm-cluster: timed out after ${timeout}s waiting for $what" >&2
			logs >&2
			stop
			exit 1
		fi
		sleep 0.3
	done
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

node_idle() {
	[[ $(SLURM_CONF=$dir/slurm.conf sinfo -h -n "$node" -o %T) == idle ]]
}

start() {
	[[ $(id -u) == 0 ]] || die "must run as root (the daemons run as root)"
	local b
	for b in munged slurmctld slurmd sinfo scontrol; do
		command -v "$b" >/dev/null 2>&1 || [[ -x /usr/sbin/$b ]] || die "$b not found: install Debian's slurm-wlm and munge"
	done
	id munge >/dev/null 2>&1 || die "no munge user: install Debian's munge"
	export PATH=$PATH:/usr/sbin
	if [[ -s $dir/run/slurmctld.pid ]] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null; then
		die "a cluster is already running in $dir"
	fi
	stop
	mkdir -p "$dir"/{state,spool,run,log}
	: >"$dir/log/slurmctld.log"
	: >"$dir/log/slurmd.log"

	# munged checks that every directory above its key is writable only
	# by root or itself (or sticky) and that everyone can reach its
	# socket: a directory of its own under /tmp, whatever the permissions
	# of DIR's parents.
	local m
	m=$(mktemp -d /tmp/godwarfs-munge.XXXXXX)
	echo "$m" >"$dir/munge.path"
	dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
	chmod 0400 "$m/munge.key"
	chown -R munge:munge "$m"
	chmod 0711 "$m"
	runuser -u munge -- munged --key-file="$m/munge.key" --socket="$m/munge.socket" \
		--pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" \
		--origin=127.0.0.1 --num-threads=2 </dev/null >/dev/null 2>&1 ||
		{ logs >&2; stop; die "munged did not start"; }
	wait_for "munged's socket" test -S "$m/munge.socket"

	node=$(hostname -s)
	local cpus ctld_port d_port
	cpus=$(nproc)
	ctld_port=$(free_port)
	d_port=$(free_port)
	while [[ $d_port == "$ctld_port" ]]; do d_port=$(free_port); done
	cat >"$dir/slurm.conf" <<EOF
# Generated by scripts/slurm-cluster.sh: one node, root, no cgroups, no accounting.
ClusterName=godwarfs
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$m/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
MailProg=/bin/true
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=256 State=UNKNOWN
PartitionName=main Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
	export SLURM_CONF=$dir/slurm.conf
	# -c: no state from an earlier run of this directory.
	slurmctld -c -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmctld.log" 2>&1 ||
		{ logs >&2; stop; die "slurmctld did not start"; }
	wait_for "slurmctld to answer" scontrol ping
	slurmd -f "$SLURM_CONF" -N "$node" </dev/null >>"$dir/log/slurmd.log" 2>&1 ||
		{ logs >&2; stop; die "slurmd did not start"; }
	wait_for "node $node to be idle" node_idle
	echo "export SLURM_CONF=$SLURM_CONF"
}

case $cmd in
start) start ;;
stop) stop ;;
logs) logs ;;
*) usage ;;
esac
