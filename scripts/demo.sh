#!/usr/bin/env bash
# The main job on a fresh machine: install the tools, generate the Verilog of
# the default 16x16 array, emulate one training step of a 64x64 layer with a
# batch of 64 (interleaved vs sequential), and co-simulate one random step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release
target/release/sysgrad gen --config configs/default.toml --out rtl_out/default
target/release/sysgrad emulate --config configs/default.toml --m 64 --k 64 --n 64
target/release/sysgrad cosim --config configs/small_4x4.toml --seed 1
