//! What is pipelined: the compute layers (the products the arrays run) of
//! a model file or a SCALE-Sim topology, with the sizes the links and the
//! memories see. Host-side layers (ReLU, pooling, LIF, flatten) ride with
//! the compute layer before them and cost no array cycles.

use crate::error::{PipelineError, Result};
use serde::Serialize;
use sysgrad_emulator::count::Count;
use sysgrad_workloads::model::{LayerSpec, Model};
use sysgrad_workloads::scalesim::Topology;

/// One product `Y = W X` of the network, per sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerWork {
    pub name: String,
    /// Rows of W (outputs).
    pub m: usize,
    /// Columns of W (reduction, with the bias column for model layers).
    pub k: usize,
    /// Stream columns per sample (output positions x time steps).
    pub n_per_sample: usize,
    /// Words of the layer's input per sample: what the link before it
    /// carries forward (and its gradient backward) and what a stage keeps
    /// for the backward pass.
    pub input_words: u64,
}

impl LayerWork {
    /// M x K, or `u64::MAX` if that does not fit (which
    /// `Setup::loads` refuses).
    pub fn weight_words(&self) -> u64 {
        (Count::from(self.m) * self.k).value().unwrap_or(u64::MAX)
    }
}

/// The compute layers of a network and its time steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Work {
    pub name: String,
    pub layers: Vec<LayerWork>,
    /// T: every stream column count includes it (1 for non-spiking work).
    pub time_steps: usize,
    /// For a model: the index in `model.spec.layers` of each compute layer.
    pub model_index: Vec<usize>,
}

impl Work {
    /// The dense and convolution layers of a checked model (its sizes,
    /// time steps and units within the model file's limits, so every
    /// product here is far below 2^64).
    pub fn of_model(model: &Model) -> Work {
        let t = model.spec.input.time_steps;
        let mut layers = Vec::new();
        let mut model_index = Vec::new();
        for (i, (spec, input)) in model.spec.layers.iter().zip(&model.shapes).enumerate() {
            let output = &model.shapes[i + 1];
            let (m, k, positions) = match *spec {
                LayerSpec::Dense { units } => (units, input.size() + 1, 1),
                LayerSpec::Conv2d {
                    filters, kernel, ..
                } => (filters, input.c * kernel * kernel + 1, output.h * output.w),
                _ => continue,
            };
            let kind = if positions == 1 { "dense" } else { "conv2d" };
            layers.push(LayerWork {
                name: format!("{i}:{kind}"),
                m,
                k,
                n_per_sample: positions * t,
                input_words: (input.size() * t) as u64,
            });
            model_index.push(i);
        }
        Work {
            name: model.spec.name.clone(),
            layers,
            time_steps: t,
            model_index,
        }
    }

    /// The layers of a SCALE-Sim topology, each sample run `time_steps`
    /// times (a spiking version of the network for `time_steps` > 1); an
    /// overflow of a layer's columns or input words names the layer.
    pub fn of_topology(topo: &Topology, time_steps: usize) -> Result<Work> {
        let layers = topo
            .layers
            .iter()
            .map(|l| {
                let input = match l.conv {
                    Some(c) => Count::from(c.ifmap_h) * c.ifmap_w * c.channels,
                    None => Count::from(l.gemm.k) * l.gemm.n,
                };
                let overflow = |overflow| PipelineError::Overflow {
                    input: format!("layer {} at {time_steps} time steps", l.name),
                    overflow,
                };
                let n = (Count::from(l.gemm.n) * time_steps).get("the stream columns per sample");
                Ok(LayerWork {
                    name: l.name.clone(),
                    m: l.gemm.m,
                    k: l.gemm.k,
                    n_per_sample: n.map_err(overflow)? as usize,
                    input_words: (input * time_steps)
                        .get("the input words per sample")
                        .map_err(overflow)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Work {
            name: topo.name.clone(),
            layers,
            time_steps,
            model_index: Vec::new(),
        })
    }
}
