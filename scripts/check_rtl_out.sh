#!/usr/bin/env bash
# Regenerates rtl_out/ into a scratch folder and fails if it differs from
# the committed copy (run `scripts/gen_rtl_out.sh` to refresh it).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SYSGRAD_RTL_OUT="$tmp" scripts/gen_rtl_out.sh >/dev/null
# Manifests name the command line (the scratch folder): not compared.
if ! diff -r -x MANIFEST.json "$tmp" rtl_out; then
  echo "rtl_out/ is stale: run scripts/gen_rtl_out.sh and commit the result" >&2
  exit 1
fi
echo "rtl_out/ is up to date"
