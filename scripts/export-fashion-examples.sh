#!/usr/bin/env bash
# Writes the Fashion-MNIST example ONNX models workloads/models/fashion/
# mlp.onnx, cnn.onnx and resnet8.onnx: the models of the TOML files beside
# them trained by sysgrad for one epoch over the full training set (60,000
# images) on the array's numerics (fast exact mode, the models' seed),
# their fixed-point weights written as the real values they stand for.
# Needs Debian's dataset-fashion-mnist (scripts/setup.sh). The spiking CNN
# has no ONNX form (no ONNX operator is a LIF neuron). The runs are
# deterministic: the files come out the same every time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin sysgrad
for model in "${@:-mlp cnn resnet8}"; do
    for m in $model; do
        target/release/sysgrad train --model "workloads/models/fashion/$m.toml" \
            --engine fast --epochs 1 --quiet -o "target/export-examples/fashion-$m" \
            --onnx-out "workloads/models/fashion/$m.onnx"
    done
done
