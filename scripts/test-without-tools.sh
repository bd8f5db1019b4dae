#!/usr/bin/env bash
# The tool-free subset: `cargo test --workspace --release` with a PATH that
# holds only the Rust toolchain, the C linker rustc calls and a few base
# commands, so that a test needing Verilator, Icarus, Yosys, nextpnr,
# IceStorm, z3 or a C compiler that is not marked
# `#[ignore = "needs TOOL"]` fails here (docs/TESTING.md). Arguments go to
# cargo test (e.g. `-p sysgrad-testbench`).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# The toolchain (rustup's proxies find their toolchain by their own name),
# the linker driver and linker, and what the tests themselves start.
for cmd in cargo rustc rustdoc rustup cc ld sh bash env echo false true; do
  if path=$(type -P "$cmd"); then
    ln -s "$path" "$bin/$cmd"
  elif [[ $cmd == cargo || $cmd == rustc || $cmd == cc ]]; then
    echo "test-without-tools: $cmd is not on PATH" >&2
    exit 1
  fi
done
# Nor the ECP5 tools of scripts/setup-fpga.sh's virtualenv, the ONNX
# checkers of scripts/setup-onnx.sh's, or Debian's Fashion-MNIST files.
export SYSGRAD_FPGA_VENV="$bin/no-fpga-venv"
export SYSGRAD_ONNX_VENV="$bin/no-onnx-venv"
export SYSGRAD_FASHION_MNIST="$bin/no-fashion-mnist"
PATH="$bin" cargo test --workspace --release "$@"
