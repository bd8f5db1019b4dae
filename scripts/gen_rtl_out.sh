#!/usr/bin/env bash
# Writes the Verilog of every configuration in configs/ to rtl_out/<tag>/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${SYSGRAD_RTL_OUT:-rtl_out}
bin=target/release/sysgrad
[ -x "$bin" ] || cargo build --release --quiet
for cfg in configs/*.toml; do
  name=$(basename "$cfg" .toml)
  "$bin" gen --config "$cfg" --out "$out/$name"
done
