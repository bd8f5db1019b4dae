//! Models in and out through ONNX (see docs/ONNX.md).
//!
//! * [`proto`]: the ONNX protobuf messages, generated once from
//!   `onnx.proto` by `scripts/gen-onnx-proto.sh` (prost).

#[allow(clippy::all, missing_docs, rustdoc::all)]
pub mod proto;
