//! The graph form of a model: every layer has a `name` and takes the
//! outputs of earlier layers (or the model's input, named `input`) as its
//! `inputs`, so that a residual block can be written:
//!
//! ```toml
//! [[layers]]
//! name = "c1"
//! type = "conv2d"   # inputs default to the layer before (here: input)
//! ...
//! [[layers]]
//! name = "sum"
//! type = "add"
//! inputs = ["c2", "input"]
//! ```
//!
//! Layers are listed in an order where every input comes earlier (a
//! topological order, as ONNX lists its nodes); the model's output is the
//! last layer's. The list form (no names) is the chain where each layer
//! takes the one before. An importer (ONNX) builds a [`super::ModelSpec`]
//! whose `graph` holds one [`Wire`] per layer, in the same order as
//! `layers`, and checks it with [`super::from_spec`].

use super::spec::{LayerSpec, ModelSpec};
use crate::error::{Result, WorkloadError};
use serde::{Deserialize, Serialize};

/// The name of the model's input in `inputs`.
pub const INPUT: &str = "input";

/// A layer's place in the graph: its name and the names of what it reads.
/// An empty `inputs` means the layer before (or the model's input).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wire {
    pub name: String,
    pub inputs: Vec<String>,
}

/// The graph with names resolved: the values a model computes are its
/// input (value 0) and each layer's output (value `i + 1` for layer `i`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// For each layer, the values it reads (in order).
    pub inputs: Vec<Vec<usize>>,
}

impl Graph {
    /// The chain of `n` layers (the list form).
    pub fn chain(n: usize) -> Self {
        Graph {
            inputs: (0..n).map(|i| vec![i]).collect(),
        }
    }

    /// Whether this is the chain (every layer reads the one before).
    pub fn is_chain(&self) -> bool {
        self.inputs
            .iter()
            .enumerate()
            .all(|(i, ins)| ins.as_slice() == [i])
    }

    /// For each value, the last layer that reads it (`None` for the output).
    pub fn last_use(&self) -> Vec<Option<usize>> {
        let mut last = vec![None; self.inputs.len() + 1];
        for (i, ins) in self.inputs.iter().enumerate() {
            for &v in ins {
                last[v] = Some(i);
            }
        }
        last
    }
}

/// How many inputs a layer kind takes.
pub fn arity(l: &LayerSpec) -> usize {
    match l {
        LayerSpec::Add => 2,
        _ => 1,
    }
}

/// Resolves the names of `spec`'s graph (the chain when it has none),
/// checking that every name is unique, every input is an earlier layer or
/// `input`, each layer has as many inputs as its kind takes, and every
/// output but the last is read.
pub fn resolve(spec: &ModelSpec) -> Result<Graph> {
    let Some(wires) = &spec.graph else {
        let g = Graph::chain(spec.layers.len());
        if let Some((i, l)) = spec.layers.iter().enumerate().find(|(_, l)| arity(l) != 1) {
            return Err(WorkloadError::model(
                format!("layers[{i}] ({})", l.kind()),
                format!(
                    "takes {} inputs: give every layer a `name` and this one `inputs = [..]` (the graph form)",
                    arity(l)
                ),
            ));
        }
        return Ok(g);
    };
    if wires.len() != spec.layers.len() {
        return Err(WorkloadError::model(
            "layers",
            format!(
                "{} wires for {} layers (one per layer)",
                wires.len(),
                spec.layers.len()
            ),
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    let mut inputs = Vec::new();
    for (i, (w, l)) in wires.iter().zip(&spec.layers).enumerate() {
        let field = |f: &str| format!("layers[{i}] ({}).{f}", l.kind());
        if w.name.is_empty() || w.name == INPUT || names.contains(&w.name.as_str()) {
            return Err(WorkloadError::model(
                field("name"),
                format!(
                    "{:?} must be a name no other layer has (and not `{INPUT}`, the model's input)",
                    w.name
                ),
            ));
        }
        let ins: Vec<usize> = if w.inputs.is_empty() {
            vec![i]
        } else {
            w.inputs
                .iter()
                .map(|n| {
                    if n == INPUT {
                        return Ok(0);
                    }
                    names
                        .iter()
                        .position(|m| m == n)
                        .map(|j| j + 1)
                        .ok_or_else(|| {
                            WorkloadError::model(
                                field("inputs"),
                                format!(
                                    "{n:?} is not `{INPUT}` or the name of an earlier layer \
                                 (layers are listed so that every input comes first)"
                                ),
                            )
                        })
                })
                .collect::<Result<_>>()?
        };
        if ins.len() != arity(l) {
            return Err(WorkloadError::model(
                field("inputs"),
                format!(
                    "{} inputs; a {} layer takes {}",
                    ins.len(),
                    l.kind(),
                    arity(l)
                ),
            ));
        }
        names.push(&w.name);
        inputs.push(ins);
    }
    let g = Graph { inputs };
    let last = g.last_use();
    if let Some(v) = (1..spec.layers.len()).find(|&v| last[v].is_none()) {
        return Err(WorkloadError::model(
            format!("layers[{}] ({})", v - 1, spec.layers[v - 1].kind()),
            format!(
                "the output of {:?} is not used (only the last layer's is the model's output)",
                wires[v - 1].name
            ),
        ));
    }
    Ok(g)
}
