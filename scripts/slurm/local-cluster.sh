#!/usr/bin/env bash
# A one-node Slurm on this machine (Debian's slurm-wlm and munge), a
# sharded sweep through it as a job array, the shards merged and compared
# byte for byte with the unsharded sweep; then the cluster is torn down.
#
#   scripts/slurm/local-cluster.sh [N]        (N shards, default 4; as root)
#
# Everything lives in a temporary folder: its own munge key and socket,
# a slurm.conf naming this host with its CPUs and one partition, the
# controller's state and the node's spool, on ports of their own; nothing
# under /etc is read or changed, and the daemons are stopped (and the
# folder removed) on every exit. `SYSGRAD` names the binary (default:
# target/release/sysgrad, built if missing); `KEEP=1` keeps the folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
root_dir=$PWD
n=${1:-4}
die() { echo "error: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root: slurmd runs jobs as their users and munged must own its key"
for t in munged mungekey slurmctld slurmd sbatch scontrol sinfo; do
  command -v "$t" >/dev/null || die "$t is missing (Debian: apt-get install slurm-wlm munge)"
done
sysgrad=${SYSGRAD:-$root_dir/target/release/sysgrad}
[ -x "$sysgrad" ] || cargo build --release --quiet --bin sysgrad

d=$(mktemp -d /tmp/sysgrad-slurm.XXXXXX)
chmod 755 "$d"
host=$(hostname -s)
cpus=$(nproc)
# Ports of our own, away from a real Slurm's 6817/6818.
ctld_port=${SLURMCTLD_PORT:-16817}
slurmd_port=${SLURMD_PORT:-16818}

stop() {
  status=$?
  set +e
  if [ -f "$d/slurm.conf" ]; then
    SLURM_CONF=$d/slurm.conf scontrol shutdown >/dev/null 2>&1
  fi
  for pid in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munged.pid"; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null
  done
  sleep 1
  if [ $status -ne 0 ]; then
    for log in "$d"/*.log; do
      [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; }
    done >&2
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $d"; else rm -rf "$d"; fi
  exit $status
}
trap stop EXIT INT TERM

# munge: a fresh key, its own socket.
mkdir -p "$d/munge"
chmod 700 "$d/munge"
mungekey --create --keyfile="$d/munge/munge.key" --force
chmod 400 "$d/munge/munge.key"
munged --key-file="$d/munge/munge.key" --socket="$d/munge.socket" \
  --pid-file="$d/munged.pid" --log-file="$d/munged.log" --seed-file="$d/munge/seed" --force
for _ in $(seq 50); do [ -S "$d/munge.socket" ] && break; sleep 0.1; done
[ -S "$d/munge.socket" ] || die "munged did not start"

# slurm.conf for this host only: no cgroups (linuxproc tracking), no
# accounting, every CPU of the machine in one partition.
mkdir -p "$d/state" "$d/spool" "$d/out"
cat >"$d/slurm.conf" <<CONF
ClusterName=sysgrad-local
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$d/slurm.conf
# Both daemonise (no -D); -i: ignore state a killed run may have left.
slurmctld -i
slurmd
up=""
for _ in $(seq 100); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then up=1; break; fi
  sleep 0.2
done
[ -n "$up" ] || die "the node $host did not come up: $(sinfo -N 2>&1 | tail -n 1)"
echo "slurm: node $host, $cpus CPUs, partition local"

# The study: a small sweep, unsharded and as an array of N shards.
study=(sweep --sizes 4x4,8x8,16x16,32x32 --in-bits 8,16 --layers fc1:256x784x64,fc2:128x256x64,fc3:10x128x64)
"$sysgrad" "${study[@]}" -o "$d/out/full" >/dev/null
start=$(date +%s)
SYSGRAD=$sysgrad sbatch --wait --quiet --array=0-$((n - 1)) --chdir="$d/out" \
  --output="$d/out/task-%a.out" scripts/slurm/shard-array.sbatch \
  "${study[@]}" -o "$d/out/shards"
echo "slurm: $n array tasks done in $(($(date +%s) - start)) s"
"$sysgrad" merge "$d/out/shards" -o "$d/out/merged"
for f in sweep.csv sweep.svg; do
  cmp "$d/out/full/$f" "$d/out/merged/$f" || die "$f: the merged shards differ from the unsharded sweep"
done
echo "the $n shards run through sbatch merge into the unsharded sweep's files, byte for byte"
