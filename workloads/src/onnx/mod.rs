//! Models in and out through ONNX (see docs/ONNX.md).
//!
//! * [`proto`]: the ONNX protobuf messages, generated once from
//!   `onnx.proto` by `scripts/gen-onnx-proto.sh` (prost).
//! * [`table`]: the importer's mapping, one row per ONNX op type.
//! * [`read`]: a graph as `torch.onnx.export` writes it -> the list form
//!   of a model and its initial weights.
//! * [`write`]: a model's weights -> the same graph (or, for a model
//!   from a TOML file, a graph built from its layers).

#[allow(clippy::all, missing_docs, rustdoc::all)]
pub mod proto;
pub mod read;
pub mod table;
pub mod write;

pub use read::{import, Imported};
pub use write::{to_onnx, write};

use crate::arith::{Arith, FloatArith, Step};
use crate::error::{Result, WorkloadError};
use crate::model::{self, Model, ModelSpec};
use crate::net::Network;
use ndarray::{Array2, Array4};
use std::path::Path;

/// Imports `path` into `spec`, whose `layers` (and, for a graph with
/// branches, its wiring) it fills: they must be empty, or already the
/// graph's, since the graph gives them. `input` is the data set's sample
/// shape, which the graph's input must take.
pub fn import_into(spec: &mut ModelSpec, path: &Path, input: model::Shape) -> Result<Imported> {
    let imported = import(path, input)?;
    // A spec written back out (with its layers) reads again.
    if !spec.layers.is_empty() && spec.layers != imported.layers {
        return Err(WorkloadError::model(
            "onnx",
            "give either `onnx` (the layers come from its graph) or `[[layers]]`, not both",
        ));
    }
    spec.layers = imported.layers.clone();
    spec.graph = imported.graph.clone();
    Ok(imported)
}

/// A check's error on an imported model, with the node its layer came
/// from (`layers[i]` means nothing to the author of the graph).
pub fn at_node(e: WorkloadError, imported: &Imported) -> WorkloadError {
    let text = e.to_string();
    let node = text
        .strip_prefix("layers[")
        .and_then(|rest| rest.split(']').next())
        .and_then(|i| i.parse::<usize>().ok())
        .and_then(|i| imported.node_of(i));
    WorkloadError::Parse {
        path: imported.path.clone(),
        message: match node {
            Some(n) => format!("{n}: {text}"),
            None => text,
        },
    }
}

/// The initializers as f64, unrounded.
pub fn exact_weights(imported: &Imported) -> Vec<Option<Array2<f64>>> {
    imported
        .weights
        .iter()
        .map(|w| w.as_ref().map(|w| w.mapv(f64::from)))
        .collect()
}

/// The weights of every layer of `net` as the real values they stand for
/// (fixed point: `value / 2^F`).
pub fn network_weights<A: Arith>(net: &Network<A>) -> Vec<Option<Array2<f64>>> {
    net.layers
        .iter()
        .map(|l| l.weights().map(|w| w.mapv(|v| net.arith.real(v))))
        .collect()
}

/// The f32 reference network of an imported model with the initializers
/// exactly as stored (not rounded to the fixed-point grid): what
/// onnxruntime computes, for the independent check.
pub fn float_network(model: &Model) -> Option<Network<FloatArith>> {
    let imported = model.onnx.as_ref()?;
    let o = model.spec.optimizer;
    let step = Step {
        lr_shift: o.lr_shift,
        momentum: o.momentum,
    };
    Some(Network::new(
        model,
        FloatArith::new(step),
        &exact_weights(imported),
    ))
}

/// `x` given as ONNX lays it out (`[N, C, H, W]`, row-major) in sysgrad's
/// `(C, N, H, W)`.
pub fn from_nchw(x: &[f32], n: usize, s: model::Shape) -> Array4<f64> {
    Array4::from_shape_fn((s.c, n, s.h, s.w), |(c, b, h, w)| {
        x[((b * s.c + c) * s.h + h) * s.w + w] as f64
    })
}

/// The settings `sysgrad train --onnx FILE` trains with: those of
/// `workloads/models/mlp.toml` (Q5.10 on a 16 x 16 array, plain SGD).
/// A model file with `onnx = "FILE"` chooses others.
pub const DEFAULT_SETTINGS: &str = r#"
[format]
in_bits = 16
acc_bits = 40
frac_bits = 10

[optimizer]
kind = "sgd"
lr_shift = 11
grad_scale_shift = 4

[training]
epochs = 20
batch_size = 32
seed = 1
"#;

/// The model of `sysgrad train --onnx FILE`: [`DEFAULT_SETTINGS`] and the
/// file's graph, named after the file.
pub fn default_model(path: &Path) -> Result<Model> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("onnx");
    let name: String = stem
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                true => c,
                false => '_',
            },
        )
        .collect();
    let name = name.trim_start_matches('.');
    let text = format!(
        "name = {:?}\nonnx = {:?}\n{DEFAULT_SETTINGS}",
        if name.is_empty() { "onnx" } else { name },
        path
    );
    let spec: ModelSpec<model::layer_table::LayerTable> =
        toml::from_str(&text).map_err(|e| WorkloadError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let spec = spec.try_map_layers(|_, t| {
        model::LayerSpec::try_from(t).map_err(|m| WorkloadError::model("layers", m))
    })?;
    model::from_spec(spec, None)
}
