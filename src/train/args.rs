//! The arguments of `sysgrad train` and what they choose: the models (with
//! each `--pipelining`), the training options, the accelerator. Shared by
//! the array and accelerator runs (`super`) and the RTL runs (`super::rtl`),
//! which do not import each other.

use crate::args::{
    one_config, Budget, Configs, HostStalls, Out, PipeliningChoice, Timings, TrainingLimits,
    Workload,
};
use crate::choices::{DwSinkChoice, Engine};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use sysgrad_accel::HostLink;
use sysgrad_workloads::arith::AccelOptions;
use sysgrad_workloads::{model, train};

/// Where `train` writes without `-o`: a folder per model or topology.
pub const DEFAULT_OUT: &str = "target/train";

#[derive(clap::Args)]
#[command(
    mut_arg("model", |a| a.required_unless_present_any(["topology", "onnx"]).help("Model file (.toml or .json), e.g. workloads/models/mlp.toml. Give it several times to train each model and print one summary row per model")),
    mut_arg("topology", |a| a.help("SCALE-Sim topology CSV (convolution or `Layer, M, N, K,` form): count forward and training cycles per layer instead of training. Several topologies or configs: every pair runs, one summary row each")),
    mut_arg("out", |a| a.help("Output folder [default: target/train/<model or topology name>]; with several runs, the parent of one folder per run")),
    mut_arg("config", |a| one_config(a).alias("accel-config").help("With --engine accel|rtl: the accelerator's configuration (its [buffers] and pipelining; array and format must be the model's) [default: the model's array with default buffers]")),
    mut_arg("pipelining", |a| a.conflicts_with("topology").help("Model: train with these pipelinings instead of the model's [array] pipelining (and, with -c, the accelerator's), comma-separated (one run each)")),
    mut_arg("epochs", |a| a.help("Override the model's number of epochs")),
    mut_arg("gap", |a| a.default_value("0").help("With --engine rtl: percentage of cycles in which the host stalls the streams"))
)]
pub struct TrainArgs {
    #[command(flatten)]
    pub workload: Workload,
    /// Energy table (TOML, pJ per action; see `sysgrad_workloads::energy`)
    /// instead of the 45 nm default (with --topology).
    #[arg(long, requires = "topology", value_name = "FILE")]
    pub energy_table: Option<PathBuf>,
    #[command(flatten)]
    pub out: Out,
    /// ONNX model (as torch.onnx.export writes it, opset 13 or later) to
    /// train with the settings of workloads/models/mlp.toml; a model file
    /// with `onnx = "FILE"` chooses others (docs/ONNX.md).
    #[arg(long, value_name = "FILE", conflicts_with = "topology")]
    pub onnx: Vec<PathBuf>,
    /// After training, write the trained fixed-point weights (as the real
    /// values they stand for) as an ONNX model: the imported graph with
    /// new initializers, or a graph built from the model file's layers.
    #[arg(long, value_name = "FILE", conflicts_with = "topology")]
    pub onnx_out: Option<PathBuf>,
    #[command(flatten)]
    pub limits: TrainingLimits,
    /// Epochs whose backward passes also run on a sequential array (the
    /// baseline for the comparison; its counters are data-independent).
    #[arg(long, default_value_t = 1)]
    pub sequential_epochs: usize,
    /// Digits CSV (optionally .gz) instead of the model's data path.
    #[arg(long, value_name = "CSV")]
    pub data: Option<PathBuf>,
    /// Where the products run.
    #[arg(long, default_value = "cycle")]
    pub engine: Engine,
    #[command(flatten)]
    pub config: Configs,
    /// With --engine accel|rtl: bits the host link carries per cycle.
    #[arg(long, default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<u32>::new().range(1..=u64::from(sysgrad_accel::link::MAX_LINK_BITS)))]
    pub link_bits: u32,
    /// With --engine accel|rtl: host-link latency in cycles, paid by every
    /// transfer and register access (at most 2^20: docs/LIMITS.md).
    #[arg(long, default_value_t = 0, value_parser = clap::builder::RangedU64ValueParser::<u32>::new().range(..=u64::from(sysgrad_accel::link::MAX_LINK_LATENCY)))]
    pub link_latency: u32,
    /// With --engine rtl: training steps to run on the RTL.
    #[arg(long, default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub steps: usize,
    /// With --engine rtl: play the steps through the generated C driver
    /// (`sa_accel.c` linked against the Verilated `sa_accel`) too.
    #[arg(long)]
    pub c_driver: bool,
    #[command(flatten)]
    pub stalls: HostStalls,
    #[command(flatten)]
    pub pipelining: PipeliningChoice,
    #[command(flatten)]
    pub timings: Timings,
    /// Topology: samples per step, folded into the stream length N.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// Topology: where dW goes.
    #[arg(long, default_value = "update")]
    pub dw_sink: DwSinkChoice,
    /// Topology: step every tile cycle by cycle instead of counting with
    /// the fast mode's ledger (same counts; slow on big layers).
    #[arg(long)]
    pub exact: bool,
    /// Topology: compare the interleaved array of each config with
    /// sequential arrays of the same PEs and of the same multipliers
    /// (R x 2C and the nearest square) instead of writing the reports.
    #[arg(long, requires = "topology")]
    pub iso_area: bool,
    /// With --iso-area: also a sequential array of the same LUTs, from the
    /// sequential / interleaved LUT ratio Yosys measures on this config's
    /// array (minutes; Yosys works in a subfolder of -o). Every array of
    /// the comparison takes this config's number format (a float one's
    /// MACs cost float energy).
    #[arg(long, requires = "iso_area", value_name = "FILE")]
    pub iso_luts: Option<PathBuf>,
    #[command(flatten)]
    pub budget: Budget,
}

/// A model to train, as loaded and with the pipelining it runs with.
pub struct TrainJob {
    pub model: model::Model,
    /// The folder name of its report.
    pub name: String,
}

impl TrainArgs {
    /// Refuses options that the engine would ignore.
    pub fn check(&self) -> Result<()> {
        if !self.config.config.is_empty() && !self.engine.accelerator() {
            bail!(
                "-c/--config is the accelerator's configuration: give it with --engine accel or rtl \
                 (--pipelining changes the model's array)"
            );
        }
        if self.onnx_out.is_some() {
            let runs = (self.workload.model.len() + self.onnx.len())
                * self.pipelining.pipelining.len().max(1);
            if runs > 1 {
                bail!("--onnx-out names one file: give one model (it has {runs} runs)");
            }
            if self.engine == crate::choices::Engine::Rtl {
                bail!("--onnx-out writes the weights of a training run: use --engine cycle, fast or accel");
            }
        }
        Ok(())
    }

    /// Every `--model`, then every `--onnx`, with `--data` and each
    /// `--pipelining`, in order.
    pub fn models(&self) -> Result<Vec<TrainJob>> {
        let several = self.pipelining.pipelining.len() > 1;
        let mut runs = Vec::new();
        let files = self.workload.model.iter().map(|p| (p, false));
        for (path, onnx) in files.chain(self.onnx.iter().map(|p| (p, true))) {
            let mut m = match onnx {
                true => sysgrad_workloads::onnx::default_model(path)?,
                false => model::load_model(path)?,
            };
            if let Some(d) = &self.data {
                m.data_path = d.clone();
            }
            for cfg in self
                .pipelining
                .configs(m.cfg)
                .context(path.display().to_string())?
            {
                let name = match several {
                    true => format!("{}_{}", m.spec.name, cfg.pipelining().name()),
                    false => m.spec.name.clone(),
                };
                let model = model::Model { cfg, ..m.clone() };
                runs.push(TrainJob { model, name });
            }
        }
        Ok(runs)
    }

    /// `-o` itself for a single run; one folder per run under it (or under
    /// `target/train`) otherwise.
    pub fn out_dir(&self, name: &str, several: bool) -> PathBuf {
        match &self.out.out {
            Some(out) if several => out.join(name),
            Some(out) => out.clone(),
            None => Path::new(DEFAULT_OUT).join(name),
        }
    }

    /// The options of one model's run; on the accelerator the array engine
    /// becomes the fast reference every step is checked against.
    pub fn train_options(&self, m: &model::Model) -> Result<train::TrainOptions> {
        let accelerator = match self.engine.accelerator() {
            true => Some(self.accel_options(m)?),
            false => None,
        };
        Ok(train::TrainOptions {
            epochs: self.limits.epochs,
            sequential_epochs: self.sequential_epochs,
            max_train: self.limits.max_train,
            max_test: self.limits.max_test,
            progress: !self.limits.quiet,
            engine: self.engine.array(),
            accelerator,
            ..train::TrainOptions::default()
        })
    }

    /// `-c` (or the model's array with default buffers) and the host link.
    /// `--pipelining` changes the accelerator given with `-c` as it changes
    /// the model's array: checked, refused naming the field.
    pub fn accel_options(&self, m: &model::Model) -> Result<AccelOptions> {
        let p = m.cfg.pipelining();
        let cfg = match self.config.one()? {
            Some(c) if !self.pipelining.pipelining.is_empty() => c
                .with_pipelining(p)
                .with_context(|| format!("--pipelining {}", p.name()))?,
            Some(c) => c,
            None => m.cfg,
        };
        let link = HostLink::new(self.link_bits, self.link_latency)?;
        Ok(AccelOptions {
            cfg,
            link,
            record_trace: false,
        })
    }
}
