//! Range checks and shape inference: a model that passes here can be built
//! and trained without any further checks (and so without panics).

use super::spec::*;
use crate::data::{DatasetInfo, DIGITS};
use crate::error::{Result, WorkloadError};
use sysgrad_config::{ArrayConfig, Backward};

/// Feature-map shape of one sample: channels x height x width. Dense
/// activations are `features x 1 x 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    pub c: usize,
    pub h: usize,
    pub w: usize,
}

impl Shape {
    pub fn size(&self) -> usize {
        self.c * self.h * self.w
    }
    pub fn is_flat(&self) -> bool {
        self.h == 1 && self.w == 1
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.c, self.h, self.w)
    }
}

pub const MAX_UNITS: usize = 4096;
pub const MAX_TIME_STEPS: usize = 256;
pub const MAX_EPOCHS: usize = 10_000;
pub const MAX_BATCH: usize = 1024;

fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<()> {
    if v < lo || v > hi {
        return Err(WorkloadError::out_of_range(
            field,
            v,
            format!("{lo}..={hi}"),
        ));
    }
    Ok(())
}

/// The array the model trains on (always built interleaved).
pub fn array_config(spec: &ModelSpec) -> Result<ArrayConfig> {
    ArrayConfig::new(
        spec.array.rows,
        spec.array.cols,
        Backward::Interleaved,
        spec.format.widths(),
    )
    .and_then(|cfg| cfg.with_update_rounding(spec.format.update_rounding()))
    .map_err(|e| match e {
        sysgrad_config::ConfigError::OutOfRange {
            field,
            value,
            allowed,
        } => WorkloadError::OutOfRange {
            field,
            value,
            allowed,
        },
        other => WorkloadError::model("array", other.to_string()),
    })
}

/// Checks every field and returns the input shape of each layer followed by
/// the output shape of the last one (on the digits).
pub fn validate(spec: &ModelSpec) -> Result<Vec<Shape>> {
    validate_for(spec, &DIGITS)
}

/// [`validate`] for a model whose input and classes are `data`'s.
pub fn validate_for(spec: &ModelSpec, data: &DatasetInfo) -> Result<Vec<Shape>> {
    validate_graph(spec, &super::graph::resolve(spec)?, data)
}

/// [`validate_for`] on the resolved `graph`: the shape of every value
/// (the input, then each layer's output).
pub fn validate_graph(
    spec: &ModelSpec,
    graph: &super::graph::Graph,
    data: &DatasetInfo,
) -> Result<Vec<Shape>> {
    check_name(&spec.name)?;
    let cfg = array_config(spec)?;
    check_range("input.time_steps", spec.input.time_steps, 1, MAX_TIME_STEPS)?;
    if spec.layers.is_empty() {
        return Err(WorkloadError::model(
            "layers",
            "a model needs at least one layer",
        ));
    }
    let mut shapes = vec![data.input];
    for (i, layer) in spec.layers.iter().enumerate() {
        let ins: Vec<Shape> = graph.inputs[i].iter().map(|&v| shapes[v]).collect();
        if let Some(other) = ins.iter().find(|s| **s != ins[0]) {
            return Err(WorkloadError::model(
                format!("layers[{i}] ({})", layer.kind()),
                format!(
                    "adds inputs of different shapes ({} and {other}); a residual branch \
                     must keep the shape (or project it with a 1x1 convolution)",
                    ins[0]
                ),
            ));
        }
        let next = layer_output(i, layer, ins[0], &cfg)?;
        shapes.push(next);
    }
    let out = *shapes.last().unwrap();
    if out
        != (Shape {
            c: data.classes,
            h: 1,
            w: 1,
        })
    {
        let each = if *data == DIGITS { "digit" } else { "class" };
        return Err(WorkloadError::model(
            format!("layers[{}]", spec.layers.len() - 1),
            format!(
                "the last layer must produce {} values (one per {each}) as a flat vector, it produces {out}",
                data.classes
            ),
        ));
    }
    check_time_steps(spec)?;
    validate_optimizer(&spec.optimizer, &cfg)?;
    validate_training(&spec.training)?;
    Ok(shapes)
}

/// The longest model name: it names an output folder and report files.
pub const MAX_NAME: usize = 64;

/// A model's name is a name, not a path: it becomes a folder of
/// `target/train` and `target/pipeline`, so `../x`, `/tmp/x` or `a/b`
/// would write outside them. Letters, digits, `-`, `_` and `.`, not
/// starting with `.` (no hidden folders, no `..`).
pub fn check_name(name: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name.chars().all(allowed);
    if ok {
        return Ok(());
    }
    Err(WorkloadError::out_of_range(
        "name",
        format!("{name:?}"),
        format!(
            "1..={MAX_NAME} letters, digits, '-', '_' or '.', not starting with '.': \
             a name, not a path (it names the output folder)"
        ),
    ))
}

/// A spiking model (one with `lif` layers) runs over T > 1 time steps: with
/// one step a LIF neuron never carries its membrane to a next step, and
/// SpikePipe's time chunks are a single chunk (docs say T > 1).
fn check_time_steps(spec: &ModelSpec) -> Result<()> {
    let spiking = spec
        .layers
        .iter()
        .any(|l| matches!(l, LayerSpec::Lif { .. }));
    if spiking && spec.input.time_steps < 2 {
        return Err(WorkloadError::out_of_range(
            "input.time_steps",
            spec.input.time_steps,
            format!("2..={MAX_TIME_STEPS} for a spiking model (lif layers)"),
        ));
    }
    Ok(())
}

fn layer_output(i: usize, layer: &LayerSpec, s: Shape, cfg: &ArrayConfig) -> Result<Shape> {
    let field = |f: &str| format!("layers[{i}] ({}).{f}", layer.kind());
    match *layer {
        LayerSpec::Dense { units } => {
            check_range(&field("units"), units, 1, MAX_UNITS)?;
            if !s.is_flat() {
                return Err(WorkloadError::model(
                    format!("layers[{i}] (dense)"),
                    format!("needs a flat input but gets {s}; add a flatten layer before it"),
                ));
            }
            Ok(Shape {
                c: units,
                h: 1,
                w: 1,
            })
        }
        LayerSpec::Conv2d {
            filters,
            kernel,
            stride,
            padding,
        } => {
            check_range(&field("filters"), filters, 1, MAX_UNITS)?;
            let span = s.h.min(s.w);
            check_range(&field("padding"), padding, 0, 8)?;
            check_range(&field("kernel"), kernel, 1, span + 2 * padding)?;
            // A stride above the kernel skips pixels, as ResNet's 1x1
            // projections with stride 2 do.
            check_range(&field("stride"), stride, 1, span + 2 * padding)?;
            if padding >= kernel {
                return Err(WorkloadError::out_of_range(
                    field("padding"),
                    padding,
                    format!("0..={} (less than the kernel)", kernel - 1),
                ));
            }
            let out = |n: usize| sysgrad_accel::conv::out_size(n, kernel, stride, padding);
            Ok(Shape {
                c: filters,
                h: out(s.h),
                w: out(s.w),
            })
        }
        LayerSpec::Relu | LayerSpec::Add => Ok(s),
        LayerSpec::GlobalAvgPool => Ok(Shape { c: s.c, h: 1, w: 1 }),
        LayerSpec::Flatten => Ok(Shape {
            c: s.size(),
            h: 1,
            w: 1,
        }),
        LayerSpec::MaxPool { size, stride } | LayerSpec::AvgPool { size, stride } => {
            check_range(&field("size"), size, 1, s.h.min(s.w))?;
            let stride = stride.unwrap_or(size);
            check_range(&field("stride"), stride, 1, size)?;
            let out = |n: usize| (n - size) / stride + 1;
            Ok(Shape {
                c: s.c,
                h: out(s.h),
                w: out(s.w),
            })
        }
        LayerSpec::Lif {
            beta,
            threshold,
            slope,
            ..
        } => {
            let f = cfg.format();
            let lsb = 1.0 / (1u64 << f.frac_bits) as f64;
            let max = sysgrad_config::fixed::max_of(f.in_bits) as f64 * lsb;
            if !(beta > 0.0 && beta <= 1.0) {
                return Err(WorkloadError::out_of_range(field("beta"), beta, "(0, 1]"));
            }
            if !(threshold >= lsb && threshold <= max / 2.0) {
                return Err(WorkloadError::out_of_range(
                    field("threshold"),
                    threshold,
                    format!(
                        "{lsb}..={} (representable, with room for the membrane above it)",
                        max / 2.0
                    ),
                ));
            }
            if !(slope > 0.0 && slope <= 1000.0) {
                return Err(WorkloadError::out_of_range(
                    field("slope"),
                    slope,
                    "(0, 1000]",
                ));
            }
            Ok(s)
        }
    }
}

fn validate_optimizer(o: &OptimizerSpec, cfg: &ArrayConfig) -> Result<()> {
    let f = cfg.format();
    // W -= round_shift(dW, F + lr_shift): a shift of AW or more rounds every
    // gradient to zero, and the port is 6 bits wide.
    let max_lr = (f.acc_bits - f.frac_bits - 1).min((1 << sysgrad_config::LR_SHIFT_BITS) - 1);
    check_range("optimizer.lr_shift", o.lr_shift, 0, max_lr)?;
    // |softmax - onehot| <= 1, so the scaled loss gradient is at most 2^s
    // and must stay inside the data range 2^(in_bits - 1 - F).
    let max_scale = (f.in_bits - 1 - f.frac_bits).saturating_sub(1);
    check_range(
        "optimizer.grad_scale_shift",
        o.grad_scale_shift,
        0,
        max_scale,
    )?;
    match (o.kind, o.momentum) {
        (OptimizerKind::Momentum, None) => Err(WorkloadError::model(
            "optimizer.momentum",
            "is required with kind = \"momentum\"",
        )),
        (OptimizerKind::Momentum, Some(m)) if !(0.0..1.0).contains(&m) => Err(
            WorkloadError::out_of_range("optimizer.momentum", m, "[0, 1)"),
        ),
        (OptimizerKind::Sgd, Some(_)) => Err(WorkloadError::model(
            "optimizer.momentum",
            "is only used with kind = \"momentum\" (plain SGD updates the weights in the array)",
        )),
        _ => Ok(()),
    }
}

fn validate_training(t: &TrainingSpec) -> Result<()> {
    check_range("training.epochs", t.epochs, 1, MAX_EPOCHS)?;
    check_range("training.batch_size", t.batch_size, 1, MAX_BATCH)?;
    if !(0.05..=0.5).contains(&t.test_fraction) {
        return Err(WorkloadError::out_of_range(
            "training.test_fraction",
            t.test_fraction,
            "0.05..=0.5",
        ));
    }
    Ok(())
}
