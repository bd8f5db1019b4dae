//! `sysgrad train`: train a model (MLP, CNN, SNN) on the digits data set
//! with every matrix product on the emulated array, next to an f32
//! reference; or count the training cycles of a SCALE-Sim topology,
//! interleaved vs sequential.

use crate::train_summary as summary;
use std::path::{Path, PathBuf};
use std::time::Instant;
use sysgrad_accel::HostLink;
use sysgrad_config::Pipelining;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_emulator::gemm::DwSink;
use sysgrad_workloads::arith::AccelOptions;
use sysgrad_workloads::energy::EnergyTable;
use sysgrad_workloads::report::TrainingSummary;
use sysgrad_workloads::scalesim::iso_area::{self, Setup};
use sysgrad_workloads::scalesim::{self, report::TopologySummary, Exactness};
use sysgrad_workloads::{data, model, report, train};

#[derive(clap::Args)]
pub struct TrainArgs {
    /// Model file (.toml or .json), e.g. workloads/models/mlp.toml. Give it
    /// several times to train each model and print one summary row per model.
    #[arg(
        long,
        required_unless_present = "topology",
        conflicts_with = "topology"
    )]
    pub model: Vec<PathBuf>,
    /// SCALE-Sim topology CSV (convolution or `Layer, M, N, K,` form): count
    /// forward and training cycles per layer instead of training. Several
    /// topologies or configs: every pair runs, one summary row each.
    #[arg(long, requires = "scalesim_config")]
    pub topology: Vec<PathBuf>,
    /// SCALE-Sim .cfg giving the array size (with --topology).
    #[arg(long)]
    pub scalesim_config: Vec<PathBuf>,
    /// Energy table (TOML, pJ per action; see `sysgrad_workloads::energy`)
    /// instead of the 45 nm default (with --topology).
    #[arg(long, requires = "topology")]
    pub energy_table: Option<PathBuf>,
    /// Output folder [default: target/train/<model or topology name>]; with
    /// several runs, the parent of one folder per run.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Override the model's number of epochs.
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Epochs whose backward passes also run on a sequential array (the
    /// baseline for the comparison; its counters are data-independent).
    #[arg(long, default_value_t = 1)]
    pub sequential_epochs: usize,
    /// Train on the first N training samples only.
    #[arg(long)]
    pub max_train: Option<usize>,
    /// Test on the first N test samples only.
    #[arg(long)]
    pub max_test: Option<usize>,
    /// Digits CSV (optionally .gz) instead of the model's data path.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Where the products run. `array` (or `cycle`) clocks the
    /// register-level array; `fast` computes the same bits and counters per
    /// tile without clocking it (`emulator/tests/fast_vs_cycle.rs` checks
    /// the equality); `accel` compiles the network to the accelerator's
    /// command stream and runs it on the emulated accelerator (commands,
    /// buffers, DMA, host link), checking every step's weights against the
    /// fast array; `rtl` runs `--steps` steps of that on the Verilator
    /// build of `sa_accel` through its AXI host interface.
    #[arg(long, default_value = "cycle")]
    pub engine: Engine,
    /// With --engine accel|rtl: the accelerator's config (its `[buffers]`
    /// and `pipelining`; array and format must be the model's)
    /// [default: the model's array with default buffers].
    #[arg(long)]
    pub accel_config: Option<PathBuf>,
    /// With --engine accel|rtl: bits the host link carries per cycle.
    #[arg(long, default_value_t = 64)]
    pub link_bits: u32,
    /// With --engine accel|rtl: host-link latency in cycles, paid by every
    /// transfer and register access.
    #[arg(long, default_value_t = 0)]
    pub link_latency: u32,
    /// With --engine rtl: training steps to run on the RTL.
    #[arg(long, default_value_t = 1)]
    pub steps: usize,
    /// With --engine rtl: play the steps through the generated C driver
    /// (`sa_accel.c` linked against the Verilated `sa_accel`) too.
    #[arg(long)]
    pub c_driver: bool,
    /// With --engine rtl: percentage of cycles in which the host stalls
    /// the streams.
    #[arg(long, default_value_t = 0)]
    pub gap: u32,
    /// Model: run on a `dense` or a `none` array instead of the model's
    /// `[array] pipelining`.
    #[arg(long, value_parser = ["dense", "none"])]
    pub pipelining: Option<String>,
    /// Print run times on stdout (they go to stderr otherwise, so that
    /// stdout is the same in every run).
    #[arg(long)]
    pub timings: bool,
    /// Topology: samples per step, folded into the stream length N.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// Topology: where dW goes, `update` (in place, lr 2^-8) or `drain`.
    #[arg(long, default_value = "update")]
    pub dw_sink: String,
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
    /// array (minutes).
    #[arg(long, requires = "iso_area")]
    pub iso_luts: Option<PathBuf>,
}

/// `--engine`: where the products of a training run go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Array(EngineKind),
    Accel,
    Rtl,
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "array" | "cycle" => Ok(Engine::Array(EngineKind::Cycle)),
            "fast" => Ok(Engine::Array(EngineKind::Fast)),
            "accel" => Ok(Engine::Accel),
            "rtl" => Ok(Engine::Rtl),
            _ => Err(format!(
                "unknown engine {s:?} (expected array, cycle, fast, accel or rtl)"
            )),
        }
    }
}

/// `--out` itself for a single run; one folder per run under it (or under
/// `target/train`) otherwise.
fn out_dir(a: &TrainArgs, name: &str, several: bool) -> PathBuf {
    match &a.out {
        Some(out) if several => out.join(name),
        Some(out) => out.clone(),
        None => Path::new("target/train").join(name),
    }
}

pub fn run(a: &TrainArgs) -> Result<(), String> {
    if a.engine == Engine::Rtl {
        return crate::train_rtl::run(a);
    }
    if !a.model.is_empty() {
        run_models(a)
    } else if a.iso_area {
        run_iso_area(a)
    } else if !a.topology.is_empty() {
        run_topologies(a)
    } else {
        Err("give --model or --topology".into())
    }
}

/// Trains every `--model`: one full report, or a summary row per model.
fn run_models(a: &TrainArgs) -> Result<(), String> {
    let several = a.model.len() > 1;
    let mut runs = Vec::new();
    for path in &a.model {
        let (run, wall) = run_model(a, path, several)?;
        if several {
            eprintln!("{}: {wall:.1} s", run.summary.model);
        } else {
            print_training(a, &run.summary, wall);
        }
        runs.push((run, wall));
    }
    if several {
        print!("{}", summary::models(&runs, a.engine, a.timings));
        if a.engine == Engine::Accel {
            print!("\n{}", summary::accel_models(&runs));
        }
        print!("\n{}", summary::utilization(&runs));
    }
    Ok(())
}

/// Runs every `--topology` on every `--scalesim-config`: one full report,
/// or a summary row per pair.
fn run_topologies(a: &TrainArgs) -> Result<(), String> {
    let several = a.topology.len() * a.scalesim_config.len() > 1;
    let mut runs = Vec::new();
    for topology in &a.topology {
        for config in &a.scalesim_config {
            let (s, wall) = run_topology(a, topology, config, several)?;
            if several {
                crate::print_timing(
                    a.timings,
                    &format!("{} on {}: {wall:.2} s", s.topology, s.array),
                );
            } else {
                print_topology(a, &s, wall);
            }
            runs.push(s);
        }
    }
    if several {
        print!("{}", summary::topologies(&runs));
    }
    Ok(())
}

fn run_model(
    a: &TrainArgs,
    path: &Path,
    several: bool,
) -> Result<(summary::ModelRun, f64), String> {
    let mut m = model::load_model(path).map_err(|e| e.to_string())?;
    if let Some(d) = &a.data {
        m.data_path = d.clone();
    }
    if let Some(p) = &a.pipelining {
        let p = if p == "dense" {
            Pipelining::Dense
        } else {
            Pipelining::None
        };
        m.cfg = m.cfg.with_pipelining(p);
    }
    warn_saturation(&m);
    let samples = data::load(&m.data_path).map_err(|e| e.to_string())?;
    let t = m.spec.training;
    let split = data::split(&samples, t.test_fraction, t.seed).map_err(|e| e.to_string())?;
    let opts = train_options(a, &m)?;
    let start = Instant::now();
    let run = train::train(&m, &split, &opts).map_err(|e| e.to_string())?;
    let out = out_dir(a, &m.spec.name, several);
    let summary = report::write_training_report(&run, &out).map_err(|e| e.to_string())?;
    let seed = t.seed;
    Ok((
        summary::ModelRun {
            summary,
            seed,
            pes: m.cfg.rows() * m.cfg.cols(),
        },
        start.elapsed().as_secs_f64(),
    ))
}

/// The options of one model's run; on the accelerator the array engine
/// becomes the fast reference every step is checked against.
pub fn train_options(a: &TrainArgs, m: &model::Model) -> Result<train::TrainOptions, String> {
    let (engine, accelerator) = match a.engine {
        Engine::Array(kind) => (kind, None),
        Engine::Accel | Engine::Rtl => (EngineKind::Fast, Some(accel_options(a, m)?)),
    };
    Ok(train::TrainOptions {
        epochs: a.epochs,
        sequential_epochs: a.sequential_epochs,
        max_train: a.max_train,
        max_test: a.max_test,
        progress: !a.quiet,
        engine,
        accelerator,
        ..train::TrainOptions::default()
    })
}

/// `--accel-config` (or the model's array with default buffers) and the
/// host link.
pub fn accel_options(a: &TrainArgs, m: &model::Model) -> Result<AccelOptions, String> {
    let cfg = match &a.accel_config {
        Some(p) => sysgrad_config::load_config(p).map_err(|e| e.to_string())?,
        None => m.cfg,
    };
    let link =
        HostLink::new(a.link_bits, a.link_latency).map_err(|e| format!("--link-bits: {e}"))?;
    Ok(AccelOptions {
        cfg,
        link,
        record_trace: false,
    })
}

/// Warns about layers whose reductions could saturate the accumulators
/// (defined behaviour, but worth knowing before a long run).
fn warn_saturation(m: &model::Model) {
    let shapes = report::layers::gemm_shapes(m, m.spec.training.batch_size);
    for (i, g) in shapes.iter().enumerate() {
        let Some(g) = g else { continue };
        for (terms, what) in [
            (g.k, "forward reduction K"),
            (g.m, "dX reduction M"),
            (g.n, "dW reduction N"),
        ] {
            if let Some(w) = m
                .cfg
                .saturation_warning(terms, &format!("layer {i}'s {what}"))
            {
                eprintln!("warning: {w}");
            }
        }
    }
}

fn print_training(a: &TrainArgs, s: &TrainingSummary, wall: f64) {
    println!(
        "# {} on {} ({} train / {} test samples, {} epochs)\n",
        s.model, s.array, s.train_samples, s.test_samples, s.epochs
    );
    println!(
        "test accuracy: fixed point (emulator) {:.2}%, f32 reference {:.2}% (gap {:+.2} points)",
        100.0 * s.fixed.test_accuracy,
        100.0 * s.float.test_accuracy,
        s.accuracy_gap_points
    );
    println!(
        "final train loss: fixed {:.4}, f32 {:.4}",
        s.fixed.train_loss, s.float.train_loss
    );
    println!(
        "array cycles: {} in training, {} in evaluation\n",
        s.all_epochs_training.cycles, s.all_epochs_eval.cycles
    );
    crate::print_timing(
        a.timings,
        &format!(
            "time: {:.1} s fixed point, {:.2} s f32, {:.1} s wall\n",
            s.fixed_seconds, s.float_seconds, wall
        ),
    );
    println!(
        "per layer, epoch {} (cycles; ratio = sequential / interleaved):\n",
        s.counters_epoch
    );
    println!("| layer | GEMM MxKxN | forward | backward IL | backward SEQ | bwd ratio | train ratio | accesses ratio | util fwd | util bwd IL | util bwd SEQ |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for l in &s.layers {
        let seq = l.backward_sequential;
        let r = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        println!(
            "| {} | {}x{}x{} | {} | {} | {} | {} | {} | {} | {:.1}% | {:.1}% | {} |",
            l.name,
            l.gemm.m,
            l.gemm.k,
            l.gemm.n,
            l.forward.cycles,
            l.backward_interleaved.cycles,
            cell(seq.map(|b| b.cycles.to_string())),
            cell(seq.map(|b| format!("{:.2}x", r(b.cycles, l.backward_interleaved.cycles)))),
            cell(
                l.training_sequential()
                    .map(|t| format!("{:.2}x", r(t.cycles, l.training_interleaved().cycles)))
            ),
            cell(l.training_sequential().map(|t| format!(
                "{:.2}x",
                r(t.accesses(), l.training_interleaved().accesses())
            ))),
            100.0 * l.utilization_forward,
            100.0 * l.utilization_backward_interleaved,
            cell(
                l.utilization_backward_sequential
                    .map(|u| format!("{:.1}%", 100.0 * u))
            ),
        );
    }
    if let Some(n) = &s.network {
        println!(
            "\nwhole network, one epoch: training {} cycles interleaved vs {} sequential ({:.2}x, {:.1}% fewer); backward {:.2}x; buffer accesses {:.2}x fewer",
            n.training_cycles_interleaved,
            n.training_cycles_sequential,
            n.training_cycle_ratio,
            100.0 * (1.0 - 1.0 / n.training_cycle_ratio.max(f64::MIN_POSITIVE)),
            n.backward_cycle_ratio,
            n.training_access_ratio
        );
    }
    if s.activity
        .iter()
        .any(|a| a.spiking_input || a.fixed.neuron_steps > 0)
    {
        println!("\nsparsity (fixed point, all epochs):");
        for a in &s.activity {
            if a.fixed.neuron_steps > 0 {
                println!(
                    "  {}: spike rate {:.1}% (f32 {:.1}%)",
                    a.name,
                    100.0 * a.fixed_spike_rate,
                    100.0 * a.float_spike_rate
                );
            } else {
                println!(
                    "  {}: input {:.1}% zeros{}, {} of {} forward MACs accumulate-only; dY {:.1}% zeros (f32 {:.1}%)",
                    a.name,
                    100.0 * a.fixed_input_sparsity,
                    if a.spiking_input { " (spikes)" } else { "" },
                    a.fixed.accumulate_only_macs,
                    a.fixed.macs,
                    100.0 * a.fixed_gradient_sparsity,
                    100.0 * a.float_gradient_sparsity
                );
            }
        }
    }
    if let Some(acc) = &s.accel {
        println!("\n{}", summary::accel_passes(acc));
    }
    println!("\nwrote:");
    for f in &s.files {
        println!("  {}", f.display());
    }
}

/// `--iso-area`: each topology on each config's interleaved array and on
/// the sequential arrays sized against it.
fn run_iso_area(a: &TrainArgs) -> Result<(), String> {
    let lut_ratio = match &a.iso_luts {
        Some(p) => {
            let (ratio, said) = crate::synth::lut_ratio(p)?;
            println!("{said}\n");
            Some(ratio)
        }
        None => None,
    };
    for topology in &a.topology {
        for config in &a.scalesim_config {
            let inputs = topology_inputs(a, topology, config)?;
            let sc = &inputs.config;
            let contenders = iso_area::contenders(sc.array_height, sc.array_width, lut_ratio);
            let measured = iso_area::measure(&inputs, &contenders).map_err(|e| e.to_string())?;
            println!("{}", iso_area::markdown(&inputs.topology.name, &measured));
        }
    }
    Ok(())
}

/// A topology, its config and how to count it, read from the arguments
/// (with notes on what sysgrad does not use or model).
fn topology_inputs(a: &TrainArgs, path: &Path, cfg_path: &Path) -> Result<Setup, String> {
    let topology = scalesim::load_topology(path).map_err(|e| e.to_string())?;
    let config = scalesim::load_config(cfg_path).map_err(|e| e.to_string())?;
    let sink = match a.dw_sink.as_str() {
        "update" => DwSink::Update { lr_shift: 8 },
        "drain" => DwSink::Drain,
        other => return Err(format!("--dw-sink `{other}` (allowed: update, drain)")),
    };
    let how = if a.exact {
        Exactness::Stepped
    } else {
        Exactness::FastLedger
    };
    let table = match &a.energy_table {
        Some(p) => EnergyTable::load(p).map_err(|e| e.to_string())?,
        None => EnergyTable::default(),
    };
    for key in &config.unused {
        eprintln!("note: {}: {key} is not used by sysgrad", cfg_path.display());
    }
    if topology.is_sparse() {
        eprintln!(
            "note: {}: N:M sparsity is reported but not exploited (the array has a dense dataflow; zero weights are multiplied)",
            path.display()
        );
    }
    Ok(Setup {
        topology,
        config,
        batch: a.batch,
        sink,
        how,
        table,
    })
}

fn run_topology(
    a: &TrainArgs,
    path: &Path,
    cfg_path: &Path,
    several: bool,
) -> Result<(TopologySummary, f64), String> {
    let s = topology_inputs(a, path, cfg_path)?;
    let start = Instant::now();
    let run = scalesim::run_topology_with(&s.topology, &s.config, s.batch, s.sink, s.how, s.table)
        .map_err(|e| e.to_string())?;
    let out = out_dir(
        a,
        &format!("{}_{}", s.topology.name, run.cfg.tag()),
        several,
    );
    let s = scalesim::report::write_topology_report(&run, &out).map_err(|e| e.to_string())?;
    Ok((s, start.elapsed().as_secs_f64()))
}

fn print_topology(a: &TrainArgs, s: &TopologySummary, wall: f64) {
    println!(
        "# {} on {} (config {}, dataflow in config: {}), batch {}, dW {}\n",
        s.topology, s.array, s.run_name, s.dataflow_in_config, s.batch, s.dw_sink
    );
    crate::print_timing(a.timings, &format!("time: {wall:.2} s\n"));
    println!("| layer | FC | GEMM MxKxN | forward cycles | training IL | training SEQ | ratio | reduction | util fwd | mapping eff |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for l in &s.layers {
        let (i, q) = (
            l.training_interleaved.total_cycles,
            l.training_sequential.total_cycles,
        );
        println!(
            "| {} | {} | {}x{}x{} | {} | {} | {} | {:.2}x | {:.1}% | {:.1}% | {:.1}% |",
            l.name,
            if l.fully_connected { "yes" } else { "" },
            l.m,
            l.k,
            l.n,
            l.forward.total_cycles,
            i,
            q,
            q as f64 / i as f64,
            100.0 * (1.0 - i as f64 / q as f64),
            l.forward.overall_util,
            l.forward.mapping_efficiency
        );
    }
    println!();
    print!("{}", scalesim::report::comparison_markdown(s));
    println!("\nwrote:");
    for f in &s.files {
        println!("  {}", f.display());
    }
}
