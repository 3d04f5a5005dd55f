#!/usr/bin/env bash
# local-cluster.sh start|stop|status — a one-node Slurm cluster on this host for the CI test of
# the job-array scripts (docs/CLUSTERS.md, "Sweeps on a Slurm cluster"; tests/test_slurm.c): writes
# a slurm.conf in $TKP_SLURM_DIR (default /tmp/topkp-slurm-UID) for this host with the CPUs and
# memory `slurmd -C` reports, no cgroups (proctrack/linuxproc, task/none), a munge key, and
# starts munged, slurmctld and slurmd from there, every file they write under that folder.
# Meant for a container without systemd, as root or as any user (SlurmUser and SlurmdUser are
# whoever runs it; the jobs run as that user too). `start`
# waits (TKP_SLURM_WAIT seconds, default 60) until `sinfo` shows the node idle, else prints
# the daemons' logs, stops them and fails. The daemons are stopped by `stop`, and in any case
# after TKP_SLURM_MAX_SECONDS (default 1800) by a watchdog, so a killed test never leaves
# them running. Commands then need `export SLURM_CONF=$TKP_SLURM_DIR/slurm.conf` (`start`
# prints it). Ports: TKP_SLURM_PORT (slurmctld; default 16817 + 2 * (UID % 500), so that two
# users' clusters do not meet) and the next one (slurmd).
set -euo pipefail
dir="${TKP_SLURM_DIR:-${TMPDIR:-/tmp}/topkp-slurm-$(id -u)}"
port="${TKP_SLURM_PORT:-$((16817 + 2 * ($(id -u) % 500)))}"
me="local-cluster.sh"
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

die() { echo "$me: $*" >&2; exit 1; }

need() {
    local missing=()
    for c in "$@"; do command -v "$c" >/dev/null || missing+=("$c"); done
    [ ${#missing[@]} -eq 0 ] ||
        die "${missing[*]} not found; install Debian's slurm-wlm and munge (make test-deps)"
}

# The node line of slurm.conf: this host as slurmd sees it (NodeName, CPUs, sockets, cores,
# threads, RealMemory), reached on the loopback address.
node_line() {
    local line
    line="$(slurmd -C | head -n 1)"
    case "$line" in
        NodeName=*) echo "$line NodeAddr=127.0.0.1 Port=$((port + 1)) State=UNKNOWN" ;;
        *) die "slurmd -C printed no node line: $line" ;;
    esac
}

write_conf() {
    local user node
    user="$(id -un)"
    node="$(node_line)"
    node_name="${node%% *}"
    node_name="${node_name#NodeName=}"
    cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm/local-cluster.sh: one node, no cgroups, everything under $dir.
ClusterName=topkp-local
SlurmctldHost=$node_name(127.0.0.1)
SlurmctldPort=$port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=600
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
$node
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile="$dir/munge.key" --force
    else
        dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
    fi
    chmod 0400 "$dir/munge.key"
    munged --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
        --seed-file="$dir/munged.seed" </dev/null >>"$dir/munged.log" 2>&1 ||
        fail "munged did not start"
}

# The daemons' logs, for a failure. Harmless there: a fresh cluster's missing state files, and
# the pmix MPI plugins that cannot load without libpmix2 (a recommended package).
logs() {
    for f in "$dir"/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
        [ -f "$f" ] && { echo "== $f (last 40 lines)"; tail -n 40 "$f"; }
    done >&2
}

fail() {
    echo "$me: $*" >&2
    logs
    stop_all
    exit 1
}

# Is the process running (not gone, nor a zombie that no init here reaps)?
alive() {
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
    case "$state" in Z*) return 1 ;; esac
}

# Cancels every job of the cluster and waits (10 s at most) until none is left, so that no
# job script or slurmstepd outlives the daemons.
cancel_jobs() {
    [ -f "$dir/slurmctld.pid" ] && alive "$(cat "$dir/slurmctld.pid")" || return 0
    export SLURM_CONF="$dir/slurm.conf"
    scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 100); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
        sleep 0.1
    done
    echo "$me: jobs still in the queue after scancel:" >&2
    squeue >&2 || true
}

# The jobs, then each daemon by the pid its own pid file holds, then the watchdog.
stop_all() {
    local f pid
    cancel_jobs
    for f in slurmd slurmctld munged watchdog; do
        [ -f "$dir/$f.pid" ] || continue
        pid="$(cat "$dir/$f.pid")"
        rm -f "$dir/$f.pid"
        [ "$pid" != "$PPID" ] || continue # the watchdog stopping the cluster ends by itself
        [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
}

# Waits until sinfo reports the node idle, at most TKP_SLURM_WAIT seconds.
wait_idle() {
    local wait="${TKP_SLURM_WAIT:-60}" state=""
    for _ in $(seq $((wait * 2))); do
        state="$(sinfo -h -N -o %t 2>/dev/null | head -n 1)" || true
        [ "$state" = idle ] && return 0
        sleep 0.5
    done
    fail "the node is not idle after ${wait} s (sinfo: '${state:-no answer}')"
}

start() {
    need slurmctld slurmd sinfo munged
    [ -f "$dir/slurmctld.pid" ] && alive "$(cat "$dir/slurmctld.pid")" &&
        die "a cluster already runs from $dir; run '$me stop' first"
    rm -rf "$dir/state" "$dir/spool" "$dir"/*.log # a fresh cluster: no jobs or logs of an earlier one
    mkdir -p "$dir/state" "$dir/spool"
    chmod 0711 "$dir"
    export SLURM_CONF="$dir/slurm.conf"
    write_conf
    start_munge
    slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/slurmctld.log" 2>&1 || fail "slurmctld did not start"
    slurmd -f "$SLURM_CONF" </dev/null >>"$dir/slurmd.log" 2>&1 || fail "slurmd did not start"
    (trap 'kill $s; exit 0' TERM; sleep "${TKP_SLURM_MAX_SECONDS:-1800}" & s=$!; wait $s; TKP_SLURM_DIR="$dir" "$self" stop) \
        </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watchdog.pid"
    wait_idle
    echo "$me: node $node_name idle; export SLURM_CONF=$SLURM_CONF"
}

case "${1:-}" in
    start) start ;;
    stop) stop_all; echo "$me: stopped the cluster of $dir" ;;
    status) SLURM_CONF="$dir/slurm.conf" sinfo -N ;;
    *) echo "usage: $me start|stop|status   (TKP_SLURM_DIR=$dir)" >&2; exit 2 ;;
esac
