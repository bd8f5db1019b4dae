#!/usr/bin/env bash
# Installs the simulators, synthesis, place-and-route and formal tools
# sysgrad uses: Debian packages here, the PyPI ECP5 tools (into
# target/fpga-venv) by scripts/setup-fpga.sh, which this script runs.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for tool in verilator iverilog yosys; do
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  $SUDO apt-get install -y verilator iverilog yosys
fi
verilator --version
iverilog -V 2>&1 | head -n 1 || true  # -V without sources exits non-zero
yosys -V
scripts/setup-fpga.sh
