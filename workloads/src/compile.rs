//! The network compiler for the accelerator: what each layer of a model
//! becomes on `sa_accel` (command programs, DMA transfers and host work
//! between them), where its weights live, how its products are cut to fit
//! the buffers, and an error naming the layer, the buffer and the size
//! when a layer cannot run at all.
//!
//! | layer | on the accelerator | on the host |
//! |---|---|---|
//! | `dense` | forward: LOAD_W / FORWARD per tile, REQUANT of Y (or `ACT relu` into the next layer's X); backward: LOAD_W / BACKWARD / UPDATE or DRAIN per tile, FLUSH_W, REQUANT of dX (or `ACT relu_grad` into the previous layer's dY) | the bias row of ones appended to X (sent once when resident) |
//! | `conv2d` | on the address generator (`sysgrad_accel::conv`): per tap LOAD_W / WINDOW / windowed FORWARD, REQUANT of Y; per tap LOAD_W / WINDOW / windowed BACKWARD / DRAIN or UPDATE, dX accumulated into the image's lines, REQUANT of dX; where it does not fit, the same GEMM on the im2col patch matrix | the ones channel beside the image (sent once); without the address generator im2col, col2im of raw dX, requantize |
//! | `relu`, `max_pool`, `flatten` | - | element-wise, exact |
//! | `lif` | - | membrane, spikes, BPTT over the T steps |
//! | loss | - | softmax cross-entropy, the scaled dY |
//!
//! Convolutions run on the controller's address generator where their
//! image, dY and accumulators fit (the image is read in place, a pixel per
//! line; the host sends images, not im2col patches): their image and dY
//! get regions of their own like a resident dense layer's X and dY
//! ([`Residency::window`]). Where they do not fit (or a batch of another
//! size, e.g. evaluation) the host lowers them to the im2col GEMM through
//! the DMA. [`ConvTraffic`] gives both lowerings' DMA per step.
//!
//! Dense layers are made **resident** where they fit ([`Residency`]): X
//! (with its bias row) and dY get regions of their own in the activation
//! and gradient buffers for the whole step, allocated across the network
//! in layer order, each only if it leaves every other product's plan as it
//! was. `dense, relu, dense` with both dense layers resident is **chained**:
//! the first layer's forward pass ends with `ACT relu` into the second's X
//! region and the second's backward pass with `ACT relu_grad` into the
//! first's dY region, so neither crosses the host link. The plan says for
//! every layer why it is not resident or not chained.

use crate::arith::{ClampGradient, Placement, ResidentLayer};
use crate::error::{Result, WorkloadError};
use crate::model::{LayerSpec, Model, OptimizerKind};
use crate::report::layers::{gemm_shapes, GemmShape};
use serde::Serialize;
use std::collections::BTreeMap;
use sysgrad_accel::conv::{Bases, ConvLayer, ConvShape};
use sysgrad_accel::link::dma_beats;
use sysgrad_accel::resident::Regions;
use sysgrad_accel::schedule::{
    plan_backward, plan_forward, Arena, BackwardPlan, ForwardPlan, Output, Region, Shape,
};
use sysgrad_accel::{Blocked, BufferId};
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
    /// Whether X and dY stay on chip for the step, and why (not).
    pub residency: Residency,
}

/// A layer's data on chip: its X region (activation lines, bias row
/// included) and dY region (gradient lines), whether its output and input
/// gradient pass to its neighbours by ACT, and the reasons where not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Residency {
    /// `None` on the DMA path.
    pub x: Option<Region>,
    pub dy: Option<Region>,
    /// The forward pass ends with `ACT relu` into this layer's X region.
    pub relu_into: Option<usize>,
    /// The backward pass ends with `ACT relu_grad` into this layer's dY region.
    pub gate_into: Option<usize>,
    /// Why X and dY cross the DMA, or why no neighbour is chained.
    pub why: String,
    /// A convolution on the address generator, its image in `x` (with
    /// the ones channel) and its dY in `dy`.
    pub window: Option<ConvShape>,
}

/// DMA beats per training step of a convolution's input and input
/// gradient in the two lowerings: im2col on the host (the patch matrix in
/// for the forward and again for the backward pass, raw dX of the patches
/// out for col2im) and the address generator (the image in once, kept for
/// the backward pass, dX of the image out as data). Which one the layer
/// uses is its [`Residency::window`].
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
    /// What the products of layers on the DMA path may use: the data
    /// buffers' lines that no resident region takes.
    pub arena: Arena,
}

impl NetworkPlan {
    /// The first weight line of each layer with weights.
    pub fn weight_bases(&self) -> BTreeMap<usize, usize> {
        self.layers
            .iter()
            .filter_map(|l| l.gemm.as_ref().map(|g| (l.index, g.w_base)))
            .collect()
    }

    /// Where the engine keeps each layer's data on the accelerator `cfg`
    /// (the one the plan was compiled for).
    pub fn placement(&self, cfg: &ArrayConfig) -> Placement {
        let mut resident = BTreeMap::new();
        let mut convolutions = BTreeMap::new();
        for l in &self.layers {
            let Some(g) = &l.gemm else { continue };
            let (Some(x), Some(dy)) = (g.residency.x, g.residency.dy) else {
                continue;
            };
            if let Some(shape) = g.residency.window {
                let at = Bases {
                    weights: g.w_base,
                    image: x.base,
                    dy: dy.base,
                    accumulators: 0,
                };
                let conv = ConvLayer::new(cfg, shape, at).expect("checked when placed");
                convolutions.insert(l.index, conv);
                continue;
            }
            let s = g.shape;
            let lay = |r: Region, rows, lanes| Blocked {
                base: r.base,
                rows,
                cols: s.n,
                lanes,
            };
            let regions = Regions {
                x: lay(x, s.k, cfg.rows()),
                dy: lay(dy, s.m, cfg.cols()),
            };
            let r = ResidentLayer {
                regions,
                relu_into: g.residency.relu_into,
                gate_into: g.residency.gate_into,
            };
            resident.insert(l.index, r);
        }
        Placement {
            weight_bases: self.weight_bases(),
            resident,
            convolutions,
            arena: Some(self.arena),
        }
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
        // The image's blocks of channels (a channel per lane, a pixel per
        // line) in once; the ones channel rides in the last block, or, in
        // a block of its own, is sent once per run. dX out requantized.
        controller_im2col_beats: act(input.c, pixels)
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
                // A convolution's W in the address generator's layout
                // takes as many lines, or R more (the zero tile).
                let w_cols = conv_shape(model, i, g)
                    .and_then(|s| ConvLayer::at_zero(cfg, s).ok())
                    .map_or(g.k, |l| l.w.cols.max(g.k));
                let w_lines = g.m.div_ceil(cfg.cols()) * w_cols;
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
                    residency: Residency::default(),
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
    let arena = place_data(model, cfg, &mut layers, sink);
    Ok(NetworkPlan {
        layers,
        weights_resident,
        arena,
    })
}

/// Layer `i`'s convolution for the training batch (`None` for other layers).
fn conv_shape(model: &Model, i: usize, g: &GemmShape) -> Option<ConvShape> {
    let LayerSpec::Conv2d {
        filters,
        kernel,
        stride,
        padding,
    } = model.spec.layers[i]
    else {
        return None;
    };
    let input = model.input_shape(i);
    let mut s = ConvShape {
        c_in: input.c,
        c_out: filters,
        h: input.h,
        w: input.w,
        kernel,
        stride,
        pad: padding,
        images: 1,
    };
    s.images = g.n / (s.out_h() * s.out_w()).max(1);
    Some(s)
}

/// The regions a convolution on the address generator takes (image with
/// its ones channel, dY), or why it cannot run there.
fn conv_regions(
    cfg: &ArrayConfig,
    (s, g, traffic): (ConvShape, &GemmShape, Option<ConvTraffic>),
    (sink, free): (DwSink, &Free),
) -> std::result::Result<(Region, Region), String> {
    let b = cfg.buffers();
    let l = ConvLayer::at_zero(cfg, s).map_err(|e| format!("im2col on the host: {e}"))?;
    if let Some(why) = traffic.and_then(|t| costlier(cfg, &l, g, t)) {
        return Err(why);
    }
    let drained = if sink == DwSink::Drain {
        l.taps(cfg).len() * s.c_out
    } else {
        0
    };
    let acc = l.y.lines().max(l.dx.lines() + drained);
    if acc > b.accumulators {
        return Err(format!(
            "im2col on the host: Y, or dX and the drained dW, of the whole batch need {acc} \
             accumulator lines, the buffer has {}",
            b.accumulators
        ));
    }
    let (x_lines, dy_lines) = (l.image.lines(), l.dy.lines());
    if free.activations + x_lines > b.activations {
        return Err(format!(
            "im2col on the host: the image needs {x_lines} activation lines, {} are left",
            b.activations - free.activations
        ));
    }
    if free.gradients + dy_lines > b.gradients {
        return Err(format!(
            "im2col on the host: dY needs {dy_lines} gradient lines, {} are left",
            b.gradients - free.gradients
        ));
    }
    let x = Region {
        base: free.activations,
        len: x_lines,
    };
    let dy = Region {
        base: free.gradients,
        len: dy_lines,
    };
    Ok((x, dy))
}

/// Why the address generator would make a convolution's step longer than
/// im2col on the host (`None`: it does not). A windowed pass streams one
/// kernel element over a block of input channels, so a convolution over
/// few channels takes a pass per element where its patch matrix fits in
/// one tile; the estimate is both passes' array cycles (a pass of n
/// positions takes n + R + C - 1) plus the DMA beats of the two lowerings
/// ([`ConvTraffic`]) at a beat a cycle (the 64-bit host link).
fn costlier(cfg: &ArrayConfig, l: &ConvLayer, g: &GemmShape, t: ConvTraffic) -> Option<String> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let pass = (g.n + r + c - 1) as u64;
    let mb = g.m.div_ceil(c) as u64;
    let (taps, tiles) = (l.taps(cfg).len() as u64, g.k.div_ceil(r) as u64);
    let window = 2 * mb * taps * pass + t.controller_im2col_beats;
    let im2col = 2 * mb * tiles * pass + t.host_im2col_beats;
    (window > im2col).then(|| {
        format!(
            "im2col on the host: the address generator's {taps} passes per block of filters \
             (a kernel element each) against the patch matrix's {tiles} would take about \
             {window} cycles a step against {im2col}"
        )
    })
}

/// The lines of the three data buffers not yet taken by resident regions.
struct Free {
    activations: usize,
    gradients: usize,
}

impl Free {
    fn arena(&self, cfg: &ArrayConfig) -> Arena {
        let b = cfg.buffers();
        let rest = |base: usize, depth: usize| Region {
            base,
            len: depth - base,
        };
        Arena {
            activations: rest(self.activations, b.activations),
            gradients: rest(self.gradients, b.gradients),
            accumulators: rest(0, b.accumulators),
        }
    }
}

/// Why a layer's data cannot stay on chip for the whole step (`None`: it
/// can, given the lines still free).
fn not_resident(cfg: &ArrayConfig, g: &GemmShape, (sink, free): (DwSink, &Free)) -> Option<String> {
    let b = cfg.buffers();
    let (kb, mb) = (g.k.div_ceil(cfg.rows()), g.m.div_ceil(cfg.cols()));
    let (x_lines, dy_lines) = (kb * g.n, mb * g.n);
    Some(if sink == DwSink::Drain {
        "momentum: dW is drained to the host's optimizer".into()
    } else if g.n > usize::from(u16::MAX) {
        format!("{} batch columns exceed a command's stream length", g.n)
    } else if kb.max(mb) * g.n > b.accumulators {
        format!(
            "Y or dX of the whole batch needs {} accumulator lines, the buffer has {}",
            kb.max(mb) * g.n,
            b.accumulators
        )
    } else if free.activations + x_lines > b.activations {
        format!(
            "X needs {x_lines} activation lines, {} are left",
            b.activations - free.activations
        )
    } else if free.gradients + dy_lines > b.gradients {
        format!(
            "dY needs {dy_lines} gradient lines, {} are left",
            b.gradients - free.gradients
        )
    } else {
        return None;
    })
}

/// The first non-resident layer but `except` whose products would plan
/// otherwise than with the whole buffers if `arena` were all they got.
/// While convolutions are placed (`convs`), those after `except` are left
/// out: they will try the address generator themselves.
fn first_changed(
    cfg: &ArrayConfig,
    layers: &[LayerPlan],
    (arena, except, convs): (&Arena, usize, bool),
    sink: DwSink,
) -> Option<usize> {
    layers
        .iter()
        .filter_map(|l| l.gemm.as_ref().map(|g| (l.index, g)))
        .filter(|&(j, g)| g.residency.x.is_none() && j != except)
        .filter(|&(j, g)| !(convs && g.conv.is_some() && j > except))
        .find(|(_, g)| {
            let s = Shape {
                m: g.shape.m,
                k: g.shape.k,
                n: g.shape.n,
            };
            plan_forward(cfg, &s, arena, Output::Data).ok() != Some(g.forward)
                || plan_backward(cfg, &s, arena, sink, Output::Data).ok() != Some(g.backward)
        })
        .map(|(i, _)| i)
}

/// Allocates regions, first to the convolutions that fit the address
/// generator, then to resident dense layers, each in layer order, and
/// chains `dense, relu, dense`; returns the arena left for the other
/// products.
fn place_data(model: &Model, cfg: &ArrayConfig, layers: &mut [LayerPlan], sink: DwSink) -> Arena {
    let mut free = Free {
        activations: 0,
        gradients: 0,
    };
    for convs in [true, false] {
        for i in 0..layers.len() {
            place(model, cfg, layers, (i, convs), (sink, &mut free));
        }
        if convs {
            replan_dma_convs(cfg, layers, &free.arena(cfg), sink);
        }
    }
    chain(model, cfg, layers);
    free.arena(cfg)
}

/// The plans of the convolutions left on the DMA path, with the lines the
/// others' regions leave them.
fn replan_dma_convs(cfg: &ArrayConfig, layers: &mut [LayerPlan], arena: &Arena, sink: DwSink) {
    for g in layers.iter_mut().filter_map(|l| l.gemm.as_mut()) {
        if g.conv.is_none() || g.residency.window.is_some() {
            continue;
        }
        let s = Shape {
            m: g.shape.m,
            k: g.shape.k,
            n: g.shape.n,
        };
        if let Ok(f) = plan_forward(cfg, &s, arena, Output::Data) {
            g.forward = f;
        }
        if let Ok(b) = plan_backward(cfg, &s, arena, sink, Output::Data) {
            g.backward = b;
        }
    }
}

/// Gives layer `i` its regions if it is of the kind placed now (`convs`)
/// and fits, or records why not.
fn place(
    model: &Model,
    cfg: &ArrayConfig,
    layers: &mut [LayerPlan],
    (i, convs): (usize, bool),
    (sink, free): (DwSink, &mut Free),
) {
    let Some(g) = layers[i].gemm.as_ref().map(|g| g.shape) else {
        return;
    };
    let window = conv_shape(model, i, &g);
    if window.is_some() != convs {
        return;
    }
    let regions = match window {
        Some(s) => {
            let traffic = layers[i].gemm.as_ref().and_then(|p| p.conv);
            conv_regions(cfg, (s, &g, traffic), (sink, free))
        }
        None => match not_resident(cfg, &g, (sink, free)) {
            Some(why) => Err(why),
            None => Ok(dense_regions(cfg, &g, free)),
        },
    };
    let (x, dy) = match regions {
        Ok(r) => r,
        Err(why) => {
            layers[i].gemm.as_mut().expect("a product").residency.why = why;
            return;
        }
    };
    let taken = Free {
        activations: x.base + x.len,
        gradients: dy.base + dy.len,
    };
    // A batch of another size (the last, evaluation) takes the DMA path
    // through what is left.
    let s = Shape {
        m: g.m,
        k: g.k,
        n: g.n,
    };
    let rest = taken.arena(cfg);
    let fallback = plan_forward(cfg, &s, &rest, Output::Data)
        .and_then(|_| plan_backward(cfg, &s, &rest, sink, Output::Data));
    if let Err(e) = fallback {
        layers[i].gemm.as_mut().expect("a product").residency.why =
            format!("a batch of another size would not fit what its regions leave: {e}");
        return;
    }
    if let Some(j) = first_changed(cfg, layers, (&taken.arena(cfg), i, convs), sink) {
        layers[i].gemm.as_mut().expect("a product").residency.why = format!(
            "its regions would leave layer {j}'s products fewer buffer lines than they use"
        );
        return;
    }
    *free = taken;
    let r = &mut layers[i].gemm.as_mut().expect("a product").residency;
    r.x = Some(x);
    r.dy = Some(dy);
    r.window = window;
    r.why = if window.is_some() {
        "on the address generator: the image (a pixel per line, with a ones channel) and dY \
             on chip for the step"
            .into()
    } else {
        "resident".into()
    };
    if window.is_some() {
        layers[i].host = "the ones channel beside the image";
    }
}

/// A resident dense layer's X region (bias row included) and dY region
/// from the first free lines.
fn dense_regions(cfg: &ArrayConfig, g: &GemmShape, free: &Free) -> (Region, Region) {
    let (kb, mb) = (g.k.div_ceil(cfg.rows()), g.m.div_ceil(cfg.cols()));
    let x = Region {
        base: free.activations,
        len: kb * g.n,
    };
    let dy = Region {
        base: free.gradients,
        len: mb * g.n,
    };
    (x, dy)
}

/// Why `dense, relu, dense` at `i` cannot pass data by ACT (`None`: it can).
fn not_chained(model: &Model, cfg: &ArrayConfig) -> Option<&'static str> {
    if cfg.rows() != cfg.cols() {
        Some("R != C: Y is blocked by C lanes, the next X by R")
    } else if model.spec.optimizer.clamp_gradient == ClampGradient::StopOutward {
        Some("stop_outward clamp gradient: ACT does not drop outward gradients")
    } else {
        None
    }
}

fn chain(model: &Model, cfg: &ArrayConfig, layers: &mut [LayerPlan]) {
    let specs = &model.spec.layers;
    let resident = |l: &LayerPlan| l.gemm.as_ref().is_some_and(|g| g.residency.x.is_some());
    for i in 0..layers.len().saturating_sub(2) {
        let pattern = matches!(specs[i], LayerSpec::Dense { .. })
            && specs[i + 1] == LayerSpec::Relu
            && matches!(specs[i + 2], LayerSpec::Dense { .. });
        if !pattern || !resident(&layers[i]) || !resident(&layers[i + 2]) {
            continue;
        }
        if let Some(why) = not_chained(model, cfg) {
            let r = &mut layers[i].gemm.as_mut().expect("a product").residency;
            r.why = format!("resident, not chained to layer {}: {why}", i + 2);
            continue;
        }
        layers[i]
            .gemm
            .as_mut()
            .expect("a product")
            .residency
            .relu_into = Some(i + 2);
        layers[i + 2]
            .gemm
            .as_mut()
            .expect("a product")
            .residency
            .gate_into = Some(i);
    }
    for l in layers.iter_mut().filter_map(|l| l.gemm.as_mut()) {
        let r = &mut l.residency;
        if r.relu_into.is_some() || r.gate_into.is_some() {
            let mut parts = vec![];
            if let Some(n) = r.relu_into {
                parts.push(format!("ACT relu into layer {n}'s X"));
            }
            if let Some(p) = r.gate_into {
                parts.push(format!("ACT relu_grad into layer {p}'s dY"));
            }
            r.why = format!("resident, chained: {}", parts.join(", "));
        }
    }
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
    if let sysgrad_config::Numbers::Float(f) = cfg.numbers() {
        return Err(WorkloadError::model(
            "format.kind",
            format!(
                "is \"float\" ({}): training through the accelerator (--engine accel or rtl) \
                 is fixed point only, its host side (splitting products through the DMA, \
                 pooling, the LIF dynamics, momentum) computing on signed words; the float \
                 sa_accel runs programs (`sysgrad accel`), and a float model trains on the \
                 array (`sysgrad formats`, engines array and fast)",
                f.tag()
            ),
        ));
    }
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
