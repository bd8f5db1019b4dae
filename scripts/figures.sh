#!/usr/bin/env bash
# Regenerates every measured figure of the Markdown pages (README.md,
# docs/**, every page with a figure block: docs/TESTING.md, "Figures"):
# each sits between `<!-- figure KIND: COMMAND -->` and `<!-- /figure -->`
# and is replaced by the output of COMMAND (see `sysgrad figures --help`).
#
#   scripts/figures.sh            every block: checked, timed and slow; the
#                                 slow ones (Yosys on the array and the whole
#                                 accelerator, the 32x32 co-simulation) take
#                                 about half an hour on 2 cores
#   scripts/figures.sh --no-slow  checked and timed blocks, a few minutes
#
# One block alone (here the 8x8 ECP5 place and route):
#   target/release/sysgrad figures --write --kinds slow --matching ecp5_array_8x8
#
# tests/figures.rs checks the checked blocks (deterministic figures) against
# a fresh run; timed and slow blocks change only when this script runs.
# Run it on an otherwise idle machine: timed blocks measure run times.
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=checked,timed,slow
case "${1:-}" in
  "") ;;
  --no-slow) kinds=checked,timed ;;
  *) echo "usage: scripts/figures.sh [--no-slow]" >&2; exit 2 ;;
esac
cargo build --release
target/release/sysgrad figures --write --kinds "$kinds"
