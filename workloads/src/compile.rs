//! The network compiler for the accelerator: what each layer of a model
//! becomes on `sa_accel` (command programs, DMA transfers and host work
//! between them), where its weights live, how its products are cut to fit
//! the buffers, and an error naming the layer, the buffer and the size
//! when a layer cannot run at all.
//!
//! | layer | on the accelerator | on the host |
//! |---|---|---|
//! | `dense` | forward: LOAD_W / FORWARD per tile, REQUANT of Y; backward: LOAD_W / BACKWARD / UPDATE or DRAIN per tile, REQUANT of dX, FLUSH_W | the bias row of ones appended to X |
//! | `conv2d` | the same GEMM on the im2col patch matrix | im2col (X over the DMA), col2im of raw dX in accumulator precision, requantize |
//! | `relu`, `max_pool`, `flatten` | - | element-wise, exact |
//! | `lif` | - | membrane, spikes, BPTT over the T steps |
//! | loss | - | softmax cross-entropy, the scaled dY |
//!
//! Convolutions are lowered by the host (im2col through the DMA): the
//! controller has no im2col address generator, and [`ConvTraffic`] gives
//! what one would save, measured against the same run's DMA.

use crate::error::{Result, WorkloadError};
use crate::model::{LayerSpec, Model, OptimizerKind};
use crate::report::layers::{gemm_shapes, GemmShape};
use serde::Serialize;
use std::collections::BTreeMap;
use sysgrad_accel::link::dma_beats;
use sysgrad_accel::schedule::{
    plan_backward, plan_forward, Arena, BackwardPlan, ForwardPlan, Output, Shape,
};
use sysgrad_accel::BufferId;
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::gemm::DwSink;

/// One layer of the compiled network.
#[derive(Debug, Clone, Serialize)]
pub struct LayerPlan {
    pub index: usize,
    pub name: String,
    /// What runs on the host for this layer.
    pub host: &'static str,
    pub gemm: Option<GemmPlan>,
}

/// A layer's product on the accelerator (training batch).
#[derive(Debug, Clone, Serialize)]
pub struct GemmPlan {
    pub shape: GemmShape,
    /// First weight-buffer line of W, and its lines.
    pub w_base: usize,
    pub w_lines: usize,
    pub forward: ForwardPlan,
    pub backward: BackwardPlan,
    /// dW drained for the host's momentum, or applied in the PEs.
    pub drain: bool,
    pub conv: Option<ConvTraffic>,
}

/// DMA beats per training step of a convolution's input and input
/// gradient: as lowered here (the patch matrix over the DMA both ways, raw
/// dX of the patches out) and with an im2col address generator in the
/// controller (the image in once per pass, dX of the image out as data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConvTraffic {
    pub host_im2col_beats: u64,
    pub controller_im2col_beats: u64,
}

/// The compiled network.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkPlan {
    pub layers: Vec<LayerPlan>,
    /// Whether every layer's W has lines of its own (otherwise all share
    /// the weight buffer from line 0 and W crosses the DMA every product).
    pub weights_resident: bool,
}

impl NetworkPlan {
    /// The first weight line of each layer with weights.
    pub fn weight_bases(&self) -> BTreeMap<usize, usize> {
        self.layers
            .iter()
            .filter_map(|l| l.gemm.as_ref().map(|g| (l.index, g.w_base)))
            .collect()
    }
}

fn host_work(l: &LayerSpec) -> &'static str {
    match l {
        LayerSpec::Dense { .. } => "bias row of ones",
        LayerSpec::Conv2d { .. } => "im2col, col2im",
        LayerSpec::Relu => "ReLU",
        LayerSpec::MaxPool { .. } => "max pooling",
        LayerSpec::Flatten => "reshape",
        LayerSpec::Lif { .. } => "LIF dynamics, BPTT",
        LayerSpec::AvgPool { .. } | LayerSpec::GlobalAvgPool => "average pooling",
        LayerSpec::Add => "residual addition",
    }
}

/// What the two convolution lowerings move for one training step.
/// dX crosses the DMA only if an earlier layer learns (`needs_dx`).
fn conv_traffic(
    cfg: &ArrayConfig,
    model: &Model,
    (i, needs_dx): (usize, bool),
    g: &GemmShape,
) -> ConvTraffic {
    let input = model.input_shape(i);
    let pixels = model.spec.training.batch_size * model.spec.input.time_steps * input.h * input.w;
    let act = |rows: usize, cols: usize| {
        dma_beats(
            cfg,
            BufferId::Activations.target(),
            rows.div_ceil(cfg.rows()) * cols,
            true,
        )
    };
    let acc = |rows: usize, cols: usize| {
        dma_beats(
            cfg,
            BufferId::Accumulators.target(),
            rows.div_ceil(cfg.rows()) * cols,
            true,
        )
    };
    ConvTraffic {
        // Patches in for the forward and again for the backward pass,
        // raw patch dX out for col2im.
        host_im2col_beats: 2 * act(g.k, g.n) + if needs_dx { acc(g.k, g.n) } else { 0 },
        // The image (a channel per lane, a pixel per line, plus the bias
        // row) in twice, its dX out requantized.
        controller_im2col_beats: 2 * act(input.c + 1, pixels)
            + if needs_dx { act(input.c, pixels) } else { 0 },
    }
}

/// Compiles `model` for the accelerator `cfg` (its `[buffers]` and
/// pipelining; array and format as the model's).
pub fn compile_network(model: &Model, cfg: &ArrayConfig) -> Result<NetworkPlan> {
    let batch = model.spec.training.batch_size;
    let shapes = gemm_shapes(model, batch);
    let arena = Arena::whole(cfg);
    let drain = model.spec.optimizer.kind == OptimizerKind::Momentum;
    let sink = if drain {
        DwSink::Drain
    } else {
        DwSink::Update {
            lr_shift: model.spec.optimizer.lr_shift,
        }
    };
    let depth = cfg.buffers().weights;
    let mut layers = Vec::new();
    let mut next_w = 0;
    for (i, (spec, g)) in model.spec.layers.iter().zip(&shapes).enumerate() {
        let field = format!("layers[{i}] ({})", spec.kind());
        let gemm = match g {
            None => None,
            Some(g) => {
                let s = Shape {
                    m: g.m,
                    k: g.k,
                    n: g.n,
                };
                let w_lines = g.m.div_ceil(cfg.cols()) * g.k;
                if w_lines > depth {
                    return Err(WorkloadError::model(
                        field,
                        format!(
                            "W ({} x {}) needs {w_lines} lines of the weights buffer, which has \
                             {depth} (raise buffers.weights)",
                            g.m, g.k
                        ),
                    ));
                }
                let phase = |what: &str| {
                    let field = field.clone();
                    let what = what.to_string();
                    move |e| WorkloadError::model(field, format!("{what}: {e}"))
                };
                let forward =
                    plan_forward(cfg, &s, &arena, Output::Data).map_err(phase("forward"))?;
                let backward = plan_backward(cfg, &s, &arena, sink, Output::Data)
                    .map_err(phase("backward"))?;
                let conv = matches!(spec, LayerSpec::Conv2d { .. }).then(|| {
                    let needs_dx = shapes[..i].iter().any(Option::is_some);
                    conv_traffic(cfg, model, (i, needs_dx), g)
                });
                let plan = GemmPlan {
                    shape: *g,
                    w_base: next_w,
                    w_lines,
                    forward,
                    backward,
                    drain,
                    conv,
                };
                next_w += w_lines;
                Some(plan)
            }
        };
        layers.push(LayerPlan {
            index: i,
            name: crate::report::layers::layer_name(i, spec),
            host: host_work(spec),
            gemm,
        });
    }
    let weights_resident = next_w <= depth;
    if !weights_resident {
        // Every layer fits alone: they take turns from line 0.
        for g in layers.iter_mut().filter_map(|l| l.gemm.as_mut()) {
            g.w_base = 0;
        }
    }
    Ok(NetworkPlan {
        layers,
        weights_resident,
    })
}

/// A model's accelerator: `cfg`'s buffers and pipelining on the model's
/// array and format, or an error naming the field that differs.
pub fn accelerator_config(model: &Model, cfg: &ArrayConfig) -> Result<ArrayConfig> {
    let m = model.cfg;
    let differs = |field: &str, got: String, want: String| {
        WorkloadError::model(
            format!("accelerator config {field}"),
            format!("is {got}, the model's is {want} (they must agree)"),
        )
    };
    if (cfg.rows(), cfg.cols()) != (m.rows(), m.cols()) {
        return Err(differs(
            "array.rows x array.cols",
            format!("{}x{}", cfg.rows(), cfg.cols()),
            format!("{}x{}", m.rows(), m.cols()),
        ));
    }
    if cfg.format() != m.format() {
        return Err(differs(
            "format",
            format!("{:?}", cfg.format()),
            format!("{:?}", m.format()),
        ));
    }
    Ok(cfg.with_backward(sysgrad_config::Backward::Interleaved))
}
