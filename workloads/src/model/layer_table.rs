//! The file form of a layer: one flat table with a `type` and the fields of
//! every layer kind, all optional. Deserializing a flat struct keeps the
//! TOML parser's position for a bad value (an internally tagged enum would
//! buffer the table and lose it); which fields a kind needs and allows is
//! then checked here, with the field named in the message.

use super::spec::{LayerSpec, LifOutput, Reset, Surrogate};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    Dense,
    Conv2d,
    Relu,
    MaxPool,
    Flatten,
    Lif,
    AvgPool,
    GlobalAvgPool,
    Add,
    /// Refused with the reason (see [`BATCH_NORM_REFUSED`]).
    BatchNorm,
}

/// Why `batch_norm` is refused.
pub const BATCH_NORM_REFUSED: &str = "batch normalization is not supported: its batch \
statistics need a per-channel division by a square root that neither the array nor the \
model's fixed-point format provides exactly, and its running statistics would make \
evaluation differ from training; fold a trained model's normalization into the \
convolution before it (scale the filters, shift the bias) or train without it";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerTable {
    /// The graph form (see [`super::graph`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<String>>,
    #[serde(rename = "type")]
    pub kind: Option<LayerKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stride: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reset: Option<Reset>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surrogate: Option<Surrogate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slope: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<LifOutput>,
}

impl LayerTable {
    /// The names of the fields that are set, `type` excluded.
    fn present(&self) -> Vec<&'static str> {
        let t = self;
        [
            ("units", t.units.is_some()),
            ("filters", t.filters.is_some()),
            ("kernel", t.kernel.is_some()),
            ("stride", t.stride.is_some()),
            ("padding", t.padding.is_some()),
            ("size", t.size.is_some()),
            ("beta", t.beta.is_some()),
            ("threshold", t.threshold.is_some()),
            ("reset", t.reset.is_some()),
            ("surrogate", t.surrogate.is_some()),
            ("slope", t.slope.is_some()),
            ("output", t.output.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, set)| set.then_some(n))
        .collect()
    }
}

fn kind_name(k: LayerKind) -> &'static str {
    match k {
        LayerKind::Dense => "dense",
        LayerKind::Conv2d => "conv2d",
        LayerKind::Relu => "relu",
        LayerKind::MaxPool => "max_pool",
        LayerKind::Flatten => "flatten",
        LayerKind::Lif => "lif",
        LayerKind::AvgPool => "avg_pool",
        LayerKind::GlobalAvgPool => "global_avg_pool",
        LayerKind::Add => "add",
        LayerKind::BatchNorm => "batch_norm",
    }
}

fn allowed(k: LayerKind) -> &'static [&'static str] {
    match k {
        LayerKind::Dense => &["units"],
        LayerKind::Conv2d => &["filters", "kernel", "stride", "padding"],
        LayerKind::Relu
        | LayerKind::Flatten
        | LayerKind::GlobalAvgPool
        | LayerKind::Add
        | LayerKind::BatchNorm => &[],
        LayerKind::MaxPool | LayerKind::AvgPool => &["size", "stride"],
        LayerKind::Lif => &["beta", "threshold", "reset", "surrogate", "slope", "output"],
    }
}

impl TryFrom<LayerTable> for LayerSpec {
    type Error = String;

    fn try_from(t: LayerTable) -> Result<Self, String> {
        let kind = t.kind.ok_or(
            "a layer needs a `type` (dense, conv2d, relu, max_pool, avg_pool, \
                 global_avg_pool, add, flatten or lif)",
        )?;
        if kind == LayerKind::BatchNorm {
            return Err(BATCH_NORM_REFUSED.to_string());
        }
        let name = kind_name(kind);
        let ok = allowed(kind);
        if let Some(bad) = t.present().into_iter().find(|f| !ok.contains(f)) {
            return Err(if ok.is_empty() {
                format!("`{bad}` is not a field of a {name} layer (it has none)")
            } else {
                format!(
                    "`{bad}` is not a field of a {name} layer (fields: {})",
                    ok.join(", ")
                )
            });
        }
        let need = |v: Option<usize>, f: &str| v.ok_or(format!("a {name} layer needs `{f}`"));
        let need_f = |v: Option<f64>, f: &str| v.ok_or(format!("a {name} layer needs `{f}`"));
        Ok(match kind {
            LayerKind::Dense => LayerSpec::Dense {
                units: need(t.units, "units")?,
            },
            LayerKind::Conv2d => LayerSpec::Conv2d {
                filters: need(t.filters, "filters")?,
                kernel: need(t.kernel, "kernel")?,
                stride: t.stride.unwrap_or(1),
                padding: t.padding.unwrap_or(0),
            },
            LayerKind::Relu => LayerSpec::Relu,
            LayerKind::Flatten => LayerSpec::Flatten,
            LayerKind::MaxPool => LayerSpec::MaxPool {
                size: need(t.size, "size")?,
                stride: t.stride,
            },
            LayerKind::AvgPool => LayerSpec::AvgPool {
                size: need(t.size, "size")?,
                stride: t.stride,
            },
            LayerKind::GlobalAvgPool => LayerSpec::GlobalAvgPool,
            LayerKind::Add => LayerSpec::Add,
            LayerKind::BatchNorm => unreachable!("refused above"),
            LayerKind::Lif => LayerSpec::Lif {
                beta: need_f(t.beta, "beta")?,
                threshold: need_f(t.threshold, "threshold")?,
                reset: t.reset.unwrap_or(Reset::Subtract),
                surrogate: t.surrogate.unwrap_or(Surrogate::FastSigmoid),
                slope: t.slope.unwrap_or(25.0),
                output: t.output.unwrap_or(LifOutput::Spikes),
            },
        })
    }
}

impl From<LayerSpec> for LayerTable {
    fn from(l: LayerSpec) -> Self {
        let mut t = LayerTable::default();
        t.kind = Some(match l {
            LayerSpec::Dense { units } => {
                t.units = Some(units);
                LayerKind::Dense
            }
            LayerSpec::Conv2d {
                filters,
                kernel,
                stride,
                padding,
            } => {
                (t.filters, t.kernel, t.stride, t.padding) =
                    (Some(filters), Some(kernel), Some(stride), Some(padding));
                LayerKind::Conv2d
            }
            LayerSpec::Relu => LayerKind::Relu,
            LayerSpec::Flatten => LayerKind::Flatten,
            LayerSpec::MaxPool { size, stride } => {
                (t.size, t.stride) = (Some(size), stride);
                LayerKind::MaxPool
            }
            LayerSpec::AvgPool { size, stride } => {
                (t.size, t.stride) = (Some(size), stride);
                LayerKind::AvgPool
            }
            LayerSpec::GlobalAvgPool => LayerKind::GlobalAvgPool,
            LayerSpec::Add => LayerKind::Add,
            LayerSpec::Lif {
                beta,
                threshold,
                reset,
                surrogate,
                slope,
                output,
            } => {
                t.beta = Some(beta);
                t.threshold = Some(threshold);
                t.reset = Some(reset);
                t.surrogate = Some(surrogate);
                t.slope = Some(slope);
                t.output = Some(output);
                LayerKind::Lif
            }
        });
        t
    }
}
