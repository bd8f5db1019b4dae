#!/usr/bin/env bash
# Writes the Verilog of every configuration in configs/ to rtl_out/<name>/,
# and of two float ones in configs/float/ to rtl_out/float_<name>/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${SYSGRAD_RTL_OUT:-rtl_out}
bin=target/release/sysgrad
[ -x "$bin" ] || cargo build --release --quiet
for cfg in configs/*.toml; do
  name=$(basename "$cfg" .toml)
  "$bin" gen --config "$cfg" --out "$out/$name"
done
# Two float accelerators (docs/ARCHITECTURE.md, Floating-point formats):
# all-bf16, and bf16/E4M3/E5M2 with stochastic rounding.
for name in bf16_4x4 fp8_sr_4x4; do
  "$bin" gen --config "configs/float/$name.toml" --out "$out/float_$name"
done
