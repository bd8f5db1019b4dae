#!/usr/bin/env bash
# Every injected-fault test of the array's co-simulation, the dense faults
# the default suite leaves out included (each fault is its own Verilator
# build, so the default runs one of each kind).
#   scripts/faults.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SYSGRAD_ALL_FAULTS=1 cargo test --release -p sysgrad-testbench --test soak_and_faults \
  -- --skip randomised_soak "$@"
