#!/usr/bin/env bash
# The whole test suite: formatting, lints, rtl_out up to date, all tests,
# the tool tests too (`--include-ignored`: docs/TESTING.md). A missing tool
# fails its tests, naming the package that installs it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings
# `--include-ignored` below runs every ignored test, so an ignored test is
# a tool test and says which tools: `#[ignore = "needs TOOL, ..."]`.
if grep -rn --include='*.rs' --exclude-dir=target '#\[ignore' . | grep -v '#\[ignore = "needs '; then
  echo 'an #[ignore] above does not say `= "needs TOOL, ..."` (docs/TESTING.md)' >&2
  exit 1
fi
cargo build --release
scripts/check_rtl_out.sh
cargo test --workspace --release --no-fail-fast -- --include-ignored
