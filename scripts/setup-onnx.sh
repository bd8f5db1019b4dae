#!/usr/bin/env bash
# Installs the independent ONNX checkers of the tests: the `onnx` package
# (builds test models) and onnxruntime (runs them), from PyPI into the
# virtualenv target/onnx-venv (never system-wide). sysgrad itself never
# calls Python; only tests do, to check sysgrad against code that shares
# nothing with it. Tests find the virtualenv through SYSGRAD_ONNX_VENV
# (default target/onnx-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ONNX_PIN=1.23.0
ORT_PIN=1.31.0
venv=${SYSGRAD_ONNX_VENV:-target/onnx-venv}

if ! python3 -c 'import ensurepip' 2>/dev/null; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  $SUDO apt-get install -y python3-venv
fi
if [ ! -x "$venv/bin/pip" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  "onnx==$ONNX_PIN" "onnxruntime==$ORT_PIN" numpy
"$venv/bin/python" -c 'import onnx, onnxruntime; print("onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)'
