#!/usr/bin/env bash
# Verilator lint (-Wall) of the whole accelerator at TPU-like sizes, too slow
# for the test suite (which lints 256x1 and 1x256 to cover the widest
# fields). Usage: scripts/lint_large.sh [SIZE...]   (default: 128)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v verilator >/dev/null || { echo "verilator not found: apt-get install verilator" >&2; exit 1; }
bin=target/release/sysgrad
[ -x "$bin" ] || cargo build --release --quiet
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(128)
for n in "${sizes[@]}"; do
  dir=target/lint_large/${n}x${n}
  mkdir -p "$dir"
  cat > "$dir/config.toml" <<CFG
[array]
rows = $n
cols = $n
backward = "interleaved"

[format]
in_bits = 16
acc_bits = 40
frac_bits = 8
CFG
  "$bin" gen --config "$dir/config.toml" --out "$dir/rtl" >/dev/null
  for top in sa_top sa_accel; do
    start=$(date +%s)
    if ! out=$(verilator --lint-only -Wall --top-module "$top" "$dir"/rtl/*.v 2>&1); then
      echo "$out" >&2; echo "${n}x${n} $top: lint failed" >&2; exit 1
    fi
    if grep -q "%Warning\|%Error" <<<"$out"; then
      echo "$out" >&2; echo "${n}x${n} $top: lint warnings" >&2; exit 1
    fi
    echo "${n}x${n} $top: lint clean ($(( $(date +%s) - start )) s)"
  done
done
