#!/usr/bin/env bash
# Runs SCALE-Sim 3.0 (PyPI `scalesim` 3.0.0, numpy < 2, in a virtualenv
# under target/) and sysgrad on the same topology and config, and prints
# the forward cycles per layer side by side. Slow (SCALE-Sim simulates
# address traces cycle by cycle); not part of the test suite.
#
#   scripts/scalesim_compare.sh [TOPOLOGY.csv] [CONFIG.cfg] [conv|gemm]
set -euo pipefail
cd "$(dirname "$0")/.."
topo=${1:-workloads/topologies/vgg_small.csv}
cfg=${2:-workloads/topologies/sysgrad_16x16.cfg}
form=${3:-conv}
venv=target/scalesim-venv
if [ ! -x "$venv/bin/scalesim-ok" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet 'scalesim==3.0.0' 'numpy<2'
  touch "$venv/bin/scalesim-ok" && chmod +x "$venv/bin/scalesim-ok"
fi
bin=target/release/sysgrad
[ -x "$bin" ] || cargo build --release --quiet
out=target/scalesim-compare
rm -rf "$out" && mkdir -p "$out"
run_name=$(sed -n 's/^run_name *= *//p' "$cfg" | head -1)
# SCALE-Sim 3.0 always reads a layout file (used only with a custom layout):
# one neutral row per layer in its format.
"$venv/bin/python" - "$topo" "$out/layout.csv" <<'PY'
import sys
rows = [l for l in open(sys.argv[1]).read().splitlines()[1:] if l.strip()]
with open(sys.argv[2], "w") as f:
    f.write("Layer name, IFMAP Height Intraline Factor, IFMAP Width Intraline Factor, Filter Height Intraline Factor, Filter Width Intraline Factor, Channel Intraline Factor, Num Filter Intraline Factor, IFMAP Height Intraline Order, IFMAP Width Intraline Order, Channel Intraline Order, IFMAP Height Interline Order, IFMAP Width Interline Order, Channel Interline Order, Num Filter Intraline Order, Channel Intraline Order, Filter Height Intraline Order, Filter Width Intraline Order, Num Filter Interline Order, Channel Interline Order, Filter Height Interline Order, Filter Width Interline Order,\n")
    for r in rows:
        name = r.split(",")[0].strip()
        f.write(f"{name}, 1, 1, 1, 1, 1, 1, 0, 1, 2, 4, 5, 3, 3, 2, 1, 0, 4, 5, 6, 7,\n")
PY
"$venv/bin/python" -m scalesim.scale -c "$cfg" -t "$topo" -l "$out/layout.csv" -p "$out/scalesim" -i "$form" -s N >"$out/scalesim.log" 2>&1
"$bin" train --topology "$topo" --scalesim-config "$cfg" --out "$out/sysgrad" >"$out/sysgrad.log"
"$venv/bin/python" - "$out/scalesim/$run_name/COMPUTE_REPORT.csv" "$out/sysgrad/SYSGRAD_REPORT.csv" <<'PY'
import csv, sys
ss = [r for r in csv.reader(open(sys.argv[1]), skipinitialspace=True)][1:]
sg = [r for r in csv.DictReader(open(sys.argv[2])) if r["Pass"] == "forward"]
print("| layer | folds | SCALE-Sim 3.0 Total Cycles | sysgrad forward Total Cycles | sysgrad - SCALE-Sim | SCALE-Sim Compute Util % | sysgrad Compute Util % |")
print("|---|---:|---:|---:|---:|---:|---:|")
tot = [0, 0]
for a, b in zip(ss, sg):
    s, g = int(a[2]), int(b["Total Cycles"])
    tot[0] += s; tot[1] += g
    print(f"| {b['Layer']} | {b['Folds']} | {s} | {g} | {g - s:+d} | {float(a[6]):.2f} | {float(b['Compute Util %']):.2f} |")
print(f"| total | | {tot[0]} | {tot[1]} | {tot[1] - tot[0]:+d} | | |")
PY
