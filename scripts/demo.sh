#!/usr/bin/env bash
# The main job on a fresh machine: install the tools, generate the Verilog of
# the default 16x16 array, emulate one training step of a 64x64 layer with a
# batch of 64 (interleaved vs sequential), co-simulate one random step, and
# run one FC training step on the whole accelerator (emulator and RTL).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release
target/release/sysgrad gen --config configs/default.toml --out rtl_out/default
target/release/sysgrad emulate --config configs/default.toml --m 64 --k 64 --n 64
target/release/sysgrad cosim --config configs/small_4x4.toml --seed 1
# The whole accelerator: one 100x70 FC training step through the command
# stream, emulated, then run on the RTL through its AXI host interface.
target/release/sysgrad accel --config configs/accel_8x8.toml --rtl
