#!/usr/bin/env bash
# A sysgrad study as N shards over several hosts with GNU parallel (no
# Slurm), then merged:
#
#   scripts/slurm/parallel-hosts.sh N HOSTFILE sweep --sizes 4x4,8x8 -o /shared/study/shards
#   sysgrad merge /shared/study/shards -o /shared/study/sweep
#
# HOSTFILE lists the hosts, one per line (GNU parallel's --sshloginfile:
# `8/host1` runs up to 8 shards at once there, `:` is this machine). Each
# host runs `sysgrad` from its PATH in the current folder's path, which,
# like the -o folder, must be on a file system every host shares. The
# line itself, for a shell history:
#
#   seq 0 $((N-1)) | parallel --sshloginfile HOSTFILE --workdir "$PWD" --halt soon,fail=1 \
#       sysgrad sweep ... -o /shared/study/shards --shard {}/N
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 N HOSTFILE SUBCOMMAND ARGS... -o SHARED_DIR" >&2; exit 2; }
n=$1 hosts=$2
shift 2
command -v parallel >/dev/null || { echo "error: GNU parallel is not installed (Debian: apt-get install parallel)" >&2; exit 1; }
# -q: the arguments reach sysgrad as given (spaces, quotes), {} still replaced.
seq 0 $((n - 1)) | parallel -q --sshloginfile "$hosts" --workdir "$PWD" --halt soon,fail=1 \
  "${SYSGRAD:-sysgrad}" "$@" --shard "{}/$n"
