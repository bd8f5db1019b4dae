#!/usr/bin/env bash
# Writes the Fashion-MNIST example ONNX models workloads/models/fashion/
# mlp.onnx, cnn.onnx and resnet8.onnx: the models of the TOML files beside
# them trained by sysgrad for one epoch on the array's numerics (fast exact
# mode, the models' seed), their fixed-point weights written as the real
# values they stand for. The MLP and the CNN see the full training set
# (60,000 images); ResNet-8 its first 4,000, because its fixed-point run
# collapses to chance later in the first epoch (docs/ONNX.md). Needs
# Debian's dataset-fashion-mnist (scripts/setup.sh). The spiking CNN has no
# ONNX form (no ONNX operator is a LIF neuron). The runs are deterministic:
# the files come out the same every time. Arguments: the models to write
# (default: all three).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin sysgrad
for m in "${@:-mlp cnn resnet8}"; do
    for model in $m; do
        slice=()
        if [ "$model" = resnet8 ]; then slice=(--max-train 4000); fi
        target/release/sysgrad train --model "workloads/models/fashion/$model.toml" \
            --engine fast --epochs 1 "${slice[@]}" --quiet \
            -o "target/export-examples/fashion-$model" \
            --onnx-out "workloads/models/fashion/$model.onnx"
    done
done
