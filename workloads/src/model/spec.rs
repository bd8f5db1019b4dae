//! The model description as written in a TOML or JSON file. Every section
//! rejects unknown fields so that a typo is an error, not a silent default.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use sysgrad_config::float::Rounding;
use sysgrad_config::{NumberFormat, DEFAULT_SEED};

/// A model. Files are read as `ModelSpec<LayerTable>` (flat layer tables,
/// so that errors keep their position) and then converted, layer by layer,
/// with the layer's index in any error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec<L = LayerSpec> {
    pub name: String,
    #[serde(default)]
    pub array: ArraySpec,
    pub format: FormatSpec,
    #[serde(default)]
    pub input: InputSpec,
    /// Omitted with `onnx`, whose graph gives the layers.
    #[serde(default)]
    pub layers: Vec<L>,
    /// An ONNX file (relative to the model file) whose graph gives the
    /// layers and whose initializers give the initial weights (see
    /// docs/ONNX.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onnx: Option<PathBuf>,
    pub optimizer: OptimizerSpec,
    pub training: TrainingSpec,
    #[serde(default)]
    pub data: DataSpec,
    /// The graph form's wiring, one per layer (`None`: the list form, each
    /// layer reads the one before). In a file it is written as `name` and
    /// `inputs` in the `[[layers]]` tables (see [`super::graph`]).
    #[serde(skip)]
    pub graph: Option<Vec<super::graph::Wire>>,
}

/// `[format]`: the array's fixed-point format and how its in-PE update
/// rounds (`docs/ARCHITECTURE.md`, Number format rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatSpec {
    pub in_bits: u32,
    pub acc_bits: u32,
    pub frac_bits: u32,
    /// `nearest` (the default) or `stochastic`.
    #[serde(default, skip_serializing_if = "Rounding::is_nearest")]
    pub rounding: Rounding,
    /// The PEs' stochastic-rounding generators' seed (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
}

impl FormatSpec {
    pub fn widths(&self) -> NumberFormat {
        NumberFormat {
            in_bits: self.in_bits,
            acc_bits: self.acc_bits,
            frac_bits: self.frac_bits,
        }
    }

    /// The update's rounding and the generators' seed.
    pub fn update_rounding(&self) -> (Rounding, u32) {
        (self.rounding, self.seed.unwrap_or(DEFAULT_SEED))
    }
}

/// The PE mesh the model trains on. The backward schedule is not a field:
/// training always runs interleaved and the sequential schedule is run
/// beside it for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArraySpec {
    pub rows: usize,
    pub cols: usize,
}

impl Default for ArraySpec {
    fn default() -> Self {
        ArraySpec { rows: 16, cols: 16 }
    }
}

/// How pixels become the network's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// The pixel value (0..16 scaled to [0, 1]) at every time step.
    Analog,
    /// Rate code: at each time step a pixel spikes (value 1) with
    /// probability pixel/16, else 0.
    Rate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    pub encoding: Encoding,
    /// Time steps T; 1 for the non-spiking models.
    pub time_steps: usize,
}

impl Default for InputSpec {
    fn default() -> Self {
        InputSpec {
            encoding: Encoding::Analog,
            time_steps: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reset {
    /// `mem -= threshold` after a spike (snnTorch "subtract").
    Subtract,
    /// `mem = 0` after a spike (snnTorch "zero").
    Zero,
}

/// What a LIF layer passes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifOutput {
    /// The spike train (0 or 1 per step).
    Spikes,
    /// The membrane potential: a readout layer whose membrane is the
    /// per-step logit (as in snnTorch's tutorials); it still spikes and
    /// resets internally.
    Membrane,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surrogate {
    /// d spike / d mem = 1 / (1 + slope |mem - thr|)^2
    FastSigmoid,
    /// d spike / d mem = (slope / 2) / (1 + (pi slope (mem - thr) / 2)^2)
    Arctan,
}

impl<L> ModelSpec<L> {
    /// The same model with every layer converted by `f(index, layer)`.
    pub fn try_map_layers<M, E>(
        self,
        f: impl Fn(usize, L) -> Result<M, E>,
    ) -> Result<ModelSpec<M>, E> {
        let layers = self
            .layers
            .into_iter()
            .enumerate()
            .map(|(i, l)| f(i, l))
            .collect::<Result<_, _>>()?;
        Ok(ModelSpec {
            name: self.name,
            array: self.array,
            format: self.format,
            input: self.input,
            layers,
            onnx: self.onnx,
            optimizer: self.optimizer,
            training: self.training,
            data: self.data,
            graph: self.graph,
        })
    }
}

/// One `[[layers]]` table. The file form is a flat table (see
/// [`super::layer_table`]) so that a bad value is reported at its own line;
/// this enum is what the rest of the crate uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    try_from = "super::layer_table::LayerTable",
    into = "super::layer_table::LayerTable"
)]
pub enum LayerSpec {
    /// Fully connected, with bias: y = W x + b.
    Dense {
        units: usize,
    },
    /// 2-D convolution with bias, square kernel, lowered to GEMM by im2col.
    /// `stride` defaults to 1, `padding` to 0.
    Conv2d {
        filters: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
    },
    Relu,
    /// `stride` defaults to `size` (non-overlapping windows).
    MaxPool {
        size: usize,
        stride: Option<usize>,
    },
    Flatten,
    /// Average pooling: the rounded mean of each window (see
    /// `workloads/README.md` for the fixed-point rule). `stride` defaults
    /// to `size`.
    AvgPool {
        size: usize,
        stride: Option<usize>,
    },
    /// The mean of each channel over the whole feature map: `(C, H, W)` to
    /// `(C, 1, 1)`.
    GlobalAvgPool,
    /// Residual addition of two inputs of the same shape (graph form only),
    /// saturating in fixed point.
    Add,
    /// Leaky integrate-and-fire neurons (see `net::lif`). Defaults: reset
    /// subtract, fast-sigmoid surrogate, slope 25, spike output.
    Lif {
        beta: f64,
        threshold: f64,
        reset: Reset,
        surrogate: Surrogate,
        slope: f64,
        output: LifOutput,
    },
}

impl LayerSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            LayerSpec::Dense { .. } => "dense",
            LayerSpec::Conv2d { .. } => "conv2d",
            LayerSpec::Relu => "relu",
            LayerSpec::MaxPool { .. } => "max_pool",
            LayerSpec::Flatten => "flatten",
            LayerSpec::Lif { .. } => "lif",
            LayerSpec::AvgPool { .. } => "avg_pool",
            LayerSpec::GlobalAvgPool => "global_avg_pool",
            LayerSpec::Add => "add",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptimizerKind {
    /// `W -= 2^-lr_shift dW` in the PEs (DwSink::Update).
    Sgd,
    /// dW drained to the host, `v = momentum v + dW; W -= 2^-lr_shift v`.
    Momentum,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptimizerSpec {
    pub kind: OptimizerKind,
    /// Learning rate 2^-lr_shift applied to the summed, scaled gradient.
    pub lr_shift: u32,
    /// The loss gradient is scaled by 2^grad_scale_shift before it enters
    /// the array (see the crate docs on gradient scaling).
    pub grad_scale_shift: u32,
    /// Only with `kind = "momentum"`.
    pub momentum: Option<f64>,
    /// How the learning rate changes over the epochs.
    #[serde(default)]
    pub schedule: crate::arith::LrSchedule,
    /// The gradient of a value clamped to the number format.
    #[serde(default)]
    pub clamp_gradient: crate::arith::ClampGradient,
    /// How the host's momentum step rounds to the weights' grid.
    #[serde(default)]
    pub rounding: crate::arith::Rounding,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpec {
    pub epochs: usize,
    pub batch_size: usize,
    pub seed: u64,
    /// Share of the data set held out for testing.
    #[serde(default = "default_test_fraction")]
    pub test_fraction: f64,
}

fn default_test_fraction() -> f64 {
    0.2
}

/// The `[data]` section: which data set a model trains on. Without a
/// `format` it is the digits CSV (`path`, or the shipped copy) with a
/// seeded split; `idx` and `cifar10` name their official `train` and
/// `test` files. The input shape is read from the files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSpec {
    /// The digits CSV (optionally gzip'ed), relative to the model file;
    /// the copy shipped in `workloads/data/` when omitted.
    pub path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<DataFormat>,
    /// The folder `train` and `test` are in (relative to the model file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// An environment variable that, when set, replaces `dir` (so that a
    /// shipped model finds a data set installed elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_env: Option<String>,
    /// IDX: `[images, labels]`; CIFAR-10: the batch files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<Vec<PathBuf>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<Vec<PathBuf>>,
    /// Number of classes (labels 0..classes); 10 when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<usize>,
}

/// The file formats `[data] format` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataFormat {
    /// The digits CSV: 64 pixels (0..16) and a label per line.
    DigitsCsv,
    /// IDX image and label files (MNIST, Fashion-MNIST), gzip'ed or not.
    Idx,
    /// CIFAR-10 binary batches.
    Cifar10,
}
