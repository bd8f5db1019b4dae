#!/usr/bin/env bash
# The whole test suite: formatting, lints, rtl_out up to date, all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings
cargo build --release
scripts/check_rtl_out.sh
cargo test --workspace --release --no-fail-fast
