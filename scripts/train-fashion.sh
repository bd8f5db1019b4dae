#!/usr/bin/env bash
# Full Fashion-MNIST runs: trains every model in workloads/models/fashion/
# (or the model files named on the command line) on the whole training set
# in the fast exact mode, the f32 reference beside it from the same initial
# weights, one model at a time, then prints the results table
# (`fashion-table`, Markdown on stdout). Each run writes its report folder
# under target/fashion/<model>/, with report.md (sysgrad's report) and
# train.log (one line per epoch: accuracies, times, samples/s, clamps).
# Needs Debian's dataset-fashion-mnist (scripts/setup.sh) or
# SYSGRAD_FASHION_MNIST pointing at the IDX files.
#
#     scripts/train-fashion.sh [workloads/models/fashion/cnn.toml ...]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin sysgrad --bin fashion-table >&2
if [ "$#" -gt 0 ]; then
    models=("$@")
else
    models=(workloads/models/fashion/*.toml)
fi
for model in "${models[@]}"; do
    name=$(basename "$model" .toml)
    out=target/fashion/$name
    mkdir -p "$out"
    echo "== $model -> $out" >&2
    # --sequential-epochs 1: the first epoch's backward passes also run on a
    # sequential array, for the interleaved-vs-sequential counters.
    ./target/release/sysgrad train --model "$model" --engine fast \
        --sequential-epochs 1 -o "$out" 2> >(tee "$out/train.log" >&2) > "$out/report.md"
done
./target/release/fashion-table "${models[@]}"
