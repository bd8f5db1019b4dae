#!/usr/bin/env bash
# Installs the simulators, synthesis, place-and-route and formal tools
# sysgrad uses: Debian packages here (the simulators, the Fashion-MNIST
# data set, a one-node Slurm and GNU parallel for the cluster tests), the PyPI ECP5 tools
# (into target/fpga-venv) by scripts/setup-fpga.sh and the ONNX checkers
# (into target/onnx-venv) by scripts/setup-onnx.sh, which this script runs.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for tool in verilator iverilog yosys; do
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
for pkg in dataset-fashion-mnist slurm-wlm munge parallel; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  $SUDO apt-get install -y "${need[@]}"
fi
verilator --version
iverilog -V 2>&1 | head -n 1 || true  # -V without sources exits non-zero
yosys -V
scripts/setup-fpga.sh
scripts/setup-onnx.sh
