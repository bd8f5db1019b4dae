#!/usr/bin/env bash
# Co-simulates every configuration in configs/ (or those given) for a few seeds.
#   scripts/cosim.sh [--runs N] [--sim verilator|icarus] [--pipelining dense|none]
#                    [config.toml ...]
# (--pipelining: every configuration with that pipelining instead of its own)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 sim=verilator pipe=() cfgs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --sim) sim=$2; shift 2 ;;
    --pipelining) pipe=(--pipelining "$2"); shift 2 ;;
    *) cfgs+=("$1"); shift ;;
  esac
done
[ ${#cfgs[@]} -gt 0 ] || cfgs=(configs/*.toml)
cargo build --release --quiet
for cfg in "${cfgs[@]}"; do
  target/release/sysgrad cosim --config "$cfg" --runs "$runs" --sim "$sim" "${pipe[@]}"
done
