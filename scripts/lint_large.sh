#!/usr/bin/env bash
# Checks too slow for the test suite: Verilator lint (-Wall) of the whole
# accelerator at TPU-like sizes (the suite lints 256x1 and 1x256 to cover
# the widest fields), and Icarus compiling those two (the suite compiles
# every other configuration of hdl/tests/lint_and_synth.rs: Icarus spends
# 80-120 s a top, more on a loaded machine, elaborating their skew
# banks' 32,640 stage scopes).
# Usage: scripts/lint_large.sh [SIZE...]   (default: 128)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v verilator >/dev/null || { echo "verilator not found: apt-get install verilator" >&2; exit 1; }
command -v iverilog >/dev/null || { echo "iverilog not found: apt-get install iverilog" >&2; exit 1; }
bin=target/release/sysgrad
[ -x "$bin" ] || cargo build --release --quiet
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(128)

# write DIR ROWS COLS BACKWARD IN ACC FRAC: a config and its Verilog in DIR/rtl.
write() {
  mkdir -p "$1"
  cat > "$1/config.toml" <<CFG
[array]
rows = $2
cols = $3
backward = "$4"

[format]
in_bits = $5
acc_bits = $6
frac_bits = $7
CFG
  "$bin" gen --config "$1/config.toml" --out "$1/rtl" >/dev/null
}

# check NAME COMMAND...: runs the command, fails on any warning.
check() {
  local name=$1 start out
  shift
  start=$(date +%s)
  if ! out=$("$@" 2>&1); then
    echo "$out" >&2; echo "$name: failed" >&2; exit 1
  fi
  if grep -qi "%Warning\|%Error\|warning\|error" <<<"$out"; then
    echo "$out" >&2; echo "$name: warnings" >&2; exit 1
  fi
  echo "$name: clean ($(( $(date +%s) - start )) s)"
}

for n in "${sizes[@]}"; do
  dir=target/lint_large/${n}x${n}
  write "$dir" "$n" "$n" interleaved 16 40 8
  for top in sa_top sa_accel; do
    check "verilator ${n}x${n} $top" \
      verilator --lint-only -Wall --top-module "$top" "$dir"/rtl/*.v
  done
done

# The widest tile, wait and SHAPE fields in Icarus (MAX_DIM = 256).
for shape in "256 1 interleaved" "1 256 sequential"; do
  read -r rows cols backward <<<"$shape"
  dir=target/lint_large/${rows}x${cols}
  write "$dir" "$rows" "$cols" "$backward" 8 24 4
  for top in sa_top sa_accel; do
    check "iverilog ${rows}x${cols} $top" \
      iverilog -g2012 -Wall -o "$dir/$top.vvp" -s "$top" "$dir"/rtl/*.v
  done
done
