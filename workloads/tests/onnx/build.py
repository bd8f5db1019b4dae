"""Builds the small test models of workloads/tests/onnx_runtime.rs with the
`onnx` package alone (no sysgrad code): ir_version 8, opsets 13 and 17, the
forms torch.onnx.export writes. Usage: build.py OUT_DIR"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(30)


def weights(name, *dims):
    fan_in = int(np.prod(dims[1:])) if len(dims) > 1 else dims[0]
    w = rng.uniform(-1, 1, dims) * np.sqrt(3.0 / fan_in)
    return numpy_helper.from_array(w.astype(np.float32), name)


def save(out, name, nodes, inits, in_dims, opset):
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", *in_dims])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx-test"
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, name + ".onnx"))


def dense_gemm(out):
    """Flatten, Gemm (transB 1), Relu, Gemm: nn.Linear as exported."""
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc1.w", "fc1.b"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "fc2.w", "fc2.b"], ["logits"], name="fc2", transB=1),
    ]
    inits = [weights("fc1.w", 32, 64), weights("fc1.b", 32), weights("fc2.w", 10, 32), weights("fc2.b", 10)]
    save(out, "dense_gemm", nodes, inits, [1, 8, 8], 13)


def dense_matmul(out):
    """A flat input, MatMul + Add, Relu, Gemm (transB 0, no bias)."""
    nodes = [
        helper.make_node("MatMul", ["x", "fc1.w"], ["m"], name="fc1"),
        helper.make_node("Add", ["m", "fc1.b"], ["h"], name="fc1_bias"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "fc2.w"], ["logits"], name="fc2"),
    ]
    inits = [weights("fc1.w", 64, 24), weights("fc1.b", 24), weights("fc2.w", 24, 10)]
    save(out, "dense_matmul", nodes, inits, [64], 17)


def cnn(out):
    """Conv, Relu, MaxPool, Flatten, Gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    inits = [weights("c1.w", 4, 1, 3, 3), weights("c1.b", 4), weights("fc.w", 10, 64), weights("fc.b", 10)]
    save(out, "cnn", nodes, inits, [1, 8, 8], 13)


def cnn_reshape(out):
    """Two convolutions (the first without bias), an overlapping MaxPool,
    and Reshape to [N, -1] with a Constant shape, as torch's x.view(n, -1)."""
    shape = numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "shape")
    nodes = [
        helper.make_node("Conv", ["x", "c1.w"], ["c"], name="conv1", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("Conv", ["p", "c2.w", "c2.b"], ["c2"], name="conv2",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Constant", [], ["s"], name="shape", value=shape),
        helper.make_node("Reshape", ["r2", "s"], ["f"], name="reshape"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    inits = [weights("c1.w", 6, 1, 3, 3), weights("c2.w", 8, 6, 2, 2), weights("c2.b", 8),
             weights("fc.w", 10, 8 * 2 * 2), weights("fc.b", 10)]
    save(out, "cnn_reshape", nodes, inits, [1, 8, 8], 17)


def pools(out):
    """Conv, Relu, AveragePool (2, stride 2), Conv, Relu, AveragePool (3,
    stride 1, overlapping), GlobalAveragePool, Flatten, Gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("AveragePool", ["r"], ["p"], name="avg1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "c2.w", "c2.b"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("AveragePool", ["r2"], ["p2"], name="avg2", kernel_shape=[3, 3], strides=[1, 1]),
        helper.make_node("GlobalAveragePool", ["p2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    inits = [weights("c1.w", 4, 1, 3, 3), weights("c1.b", 4), weights("c2.w", 8, 4, 3, 3),
             weights("c2.b", 8), weights("fc.w", 10, 8), weights("fc.b", 10)]
    save(out, "pools", nodes, inits, [1, 8, 8], 13)


def residual(out):
    """Two residual blocks as torchvision's BasicBlock without batch norm:
    one adds its input as it is, the other halves the map (stride-2 3x3
    convolution) and adds a stride-2 1x1 projection of its input; then
    GlobalAveragePool, Flatten, Gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], name="stem",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="stem_relu"),
        helper.make_node("Conv", ["r1", "a1.w", "a1.b"], ["a1"], name="block1.conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a1"], ["ar1"], name="block1.relu1"),
        helper.make_node("Conv", ["ar1", "b1.w", "b1.b"], ["b1"], name="block1.conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["b1", "r1"], ["s1"], name="block1.add"),
        helper.make_node("Relu", ["s1"], ["o1"], name="block1.relu2"),
        helper.make_node("Conv", ["o1", "a2.w", "a2.b"], ["a2"], name="block2.conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["a2"], ["ar2"], name="block2.relu1"),
        helper.make_node("Conv", ["ar2", "b2.w", "b2.b"], ["b2"], name="block2.conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["o1", "p2.w", "p2.b"], ["p2"], name="block2.downsample",
                         kernel_shape=[1, 1], strides=[2, 2]),
        helper.make_node("Add", ["b2", "p2"], ["s2"], name="block2.add"),
        helper.make_node("Relu", ["s2"], ["o2"], name="block2.relu2"),
        helper.make_node("GlobalAveragePool", ["o2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    inits = [weights("c1.w", 4, 1, 3, 3), weights("c1.b", 4),
             weights("a1.w", 4, 4, 3, 3), weights("a1.b", 4),
             weights("b1.w", 4, 4, 3, 3), weights("b1.b", 4),
             weights("a2.w", 8, 4, 3, 3), weights("a2.b", 8),
             weights("b2.w", 8, 8, 3, 3), weights("b2.b", 8),
             weights("p2.w", 8, 4, 1, 1), weights("p2.b", 8),
             weights("fc.w", 10, 8), weights("fc.b", 10)]
    save(out, "residual", nodes, inits, [1, 8, 8], 17)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for build in (dense_gemm, dense_matmul, cnn, cnn_reshape, pools, residual):
        build(out)
