"""Runs an ONNX model in onnxruntime: run.py MODEL IN_JSON OUT_JSON, where
IN_JSON is {"shape": [N, ...], "data": [flat floats]} for the model's one
input and OUT_JSON gets the same for its first output. Also checks the
model with onnx.checker first."""

import json
import sys

import numpy as np
import onnx
import onnxruntime as ort

model, inp, outp = sys.argv[1:4]
onnx.checker.check_model(onnx.load(model), full_check=True)
with open(inp) as f:
    x = json.load(f)
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
name = session.get_inputs()[0].name
data = np.asarray(x["data"], dtype=np.float32).reshape(x["shape"])
y = session.run(None, {name: data})[0]
with open(outp, "w") as f:
    json.dump({"shape": list(y.shape), "data": [float(v) for v in y.ravel()]}, f)
