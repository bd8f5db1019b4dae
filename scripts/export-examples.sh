#!/usr/bin/env bash
# Writes the example ONNX models workloads/models/mlp.onnx and cnn.onnx:
# the digits MLP and CNN (workloads/models/*.toml) trained by sysgrad on the
# array's numerics (fast exact mode, the models' own epochs and seed), their
# fixed-point weights written as the real values they stand for. The runs
# are deterministic: the files come out the same every time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin sysgrad
for model in mlp cnn; do
    target/release/sysgrad train --model "workloads/models/$model.toml" \
        --engine fast --quiet -o "target/export-examples/$model" \
        --onnx-out "workloads/models/$model.onnx"
done
