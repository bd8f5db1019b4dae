//! `sysgrad pipeline`: pipelined training across several arrays. The
//! layers of a model or a SCALE-Sim topology are partitioned over P arrays
//! joined by links; each schedule's timeline gives time per iteration,
//! samples/s, bubble, utilisation, memory and link traffic per array and a
//! Gantt chart; with `--train` the model is also trained in the
//! schedule's order in fixed point, next to synchronous training. The
//! tables are `sysgrad_pipeline::report`'s.

use crate::args::{once, Budget, Configs, Out, TrainingLimits, Workload};
use crate::choices::{
    array_counts, partition, ArrayCounts, ArrayEngine, ScheduleChoice, WeightsChoice,
};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::Path;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::fast::EngineKind;
use sysgrad_pipeline::numerics::{self, TrainOptions};
use sysgrad_pipeline::{
    report, Link, Measured, PartitionChoice, Plan, Schedule, Setup, System, Weights, Work,
};
use sysgrad_workloads::{data, model, scalesim};

/// Where `pipeline` writes without `-o`: a folder per model or topology.
const DEFAULT_OUT: &str = "target/pipeline";
/// Arrays without `--arrays`, when the network has that many compute layers.
const DEFAULT_ARRAYS: usize = 4;

#[derive(clap::Args)]
#[command(
    mut_arg("model", once),
    mut_arg("topology", once),
    mut_arg("scalesim_config", once),
    mut_arg("config", |a| a.alias("array-config").help("Array configuration (.toml or .json): once for every array, or once per array [default: the model's array, or the SCALE-Sim config's]")),
    mut_arg("out", |a| a.help("Output folder for the JSON, CSV and SVG files [default: target/pipeline/<model or topology name>]")),
    mut_arg("epochs", |a| a.help("With --train: epochs [default: the model's]")),
    mut_arg("max_train", |a| a.help("With --train: the first N training samples only")),
    mut_arg("max_test", |a| a.help("With --train: the first N test samples only"))
)]
pub struct PipelineArgs {
    #[command(flatten)]
    workload: Workload,
    /// Arrays: a number (4), a list (2,4,8) or a range (2-9); every value
    /// is a separate run [default: 4, or one per compute layer if the
    /// network has fewer].
    #[arg(long, value_delimiter = ',', value_parser = array_counts, value_name = "N")]
    arrays: Vec<ArrayCounts>,
    /// Schedules, comma-separated, or `all`. With several, the table gives
    /// each one's speed-up over the first.
    #[arg(long, value_delimiter = ',', default_value = "1f1b")]
    schedule: Vec<ScheduleChoice>,
    /// The arrays' backward schedules, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "sequential,interleaved")]
    backward: Vec<Backward>,
    /// Micro-batches per mini-batch [default: 4 for a model (a divisor of
    /// its batch size), 8 for a topology].
    #[arg(long)]
    microbatches: Option<usize>,
    /// Topology: samples per micro-batch.
    #[arg(long, default_value_t = 1)]
    micro_batch_size: usize,
    /// Topology: time steps per sample (a spiking version of the network).
    #[arg(long, default_value_t = 1)]
    time_steps: usize,
    /// spikepipe and spikepipe-sync: time chunks per micro-batch
    /// [default: the time steps].
    #[arg(long)]
    chunks: Option<usize>,
    /// Asynchronous schedules: the weights of the backward pass
    /// [default: stash].
    #[arg(long)]
    weights: Option<WeightsChoice>,
    /// `balanced` (from every layer's counted cycles) or compute layers per
    /// array, e.g. 2,3,1.
    #[arg(long, value_parser = partition, default_value = "balanced")]
    partition: PartitionChoice,
    /// LayerPipe/LayerPipe2 on sequential arrays: keep every stage's dW on
    /// its own array (by default the most loaded stage's dW moves to a
    /// neighbour while that shortens the slowest array).
    #[arg(long)]
    no_dw_offload: bool,
    #[command(flatten)]
    configs: Configs,
    /// Link width in words per cycle (0: ideal, no serialisation).
    #[arg(long, default_value_t = 16)]
    link_width: u64,
    /// Link latency in cycles.
    #[arg(long, default_value_t = 8)]
    link_latency: u64,
    /// The clock at which cycles become seconds.
    #[arg(long, default_value_t = 200.0)]
    clock_mhz: f64,
    /// How task costs are counted.
    #[arg(long, default_value = "fast")]
    engine: ArrayEngine,
    /// Model: also train it in each schedule's order in fixed point and
    /// report test accuracy against synchronous training, same seed.
    #[arg(long)]
    train: bool,
    #[command(flatten)]
    limits: TrainingLimits,
    /// With --train and ema: the moving average follows each update with
    /// weight 2^-shift, 0 to 61 (the average is kept to 62 bits, so a
    /// larger shift rounds every update to 0 and the average never moves).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=61))]
    ema_shift: u32,
    #[command(flatten)]
    out: Out,
    #[command(flatten)]
    budget: Budget,
    #[command(flatten)]
    shard: crate::shard::ShardChoice,
}

/// What the layers are and which arrays run them by default.
struct Source {
    work: Work,
    array: ArrayConfig,
    model: Option<model::Model>,
}

fn source(a: &PipelineArgs) -> Result<Source> {
    let w = &a.workload;
    if let Some(path) = w.model.first() {
        if a.time_steps != 1 || a.micro_batch_size != 1 {
            bail!(
                "--time-steps and --micro-batch-size are for --topology; a model file sets its own"
            );
        }
        let m = model::load_model(path)?;
        return Ok(Source {
            work: Work::of_model(&m),
            array: m.cfg,
            model: Some(m),
        });
    }
    if a.train {
        bail!("--train needs --model (a topology has no data or weights)");
    }
    let (Some(topo), Some(cfg)) = (w.topology.first(), w.scalesim_config.first()) else {
        bail!("give --model, or --topology with --scalesim-config");
    };
    if a.time_steps == 0 {
        bail!("--time-steps = 0 is out of range (allowed: 1 or more)");
    }
    let topo = scalesim::load_topology(topo)?;
    let sc = scalesim::load_config(cfg)?;
    Ok(Source {
        work: Work::of_topology(&topo, a.time_steps)?,
        array: scalesim::array_for(&sc)?,
        model: None,
    })
}

/// The arrays of a system of `p`: the default, one file for all, or one per array.
fn arrays(a: &PipelineArgs, default: ArrayConfig, p: usize) -> Result<Vec<ArrayConfig>> {
    let loaded = a.configs.all()?;
    match loaded.len() {
        0 => Ok(vec![default; p]),
        1 => Ok(vec![loaded[0]; p]),
        n if n == p => Ok(loaded),
        n => {
            bail!("-c/--config given {n} times: give it once (every array) or once per array ({p})")
        }
    }
}

/// Every run: each number of arrays, schedule and backward.
fn setups(a: &PipelineArgs, src: &Source) -> Result<Vec<Setup>> {
    let link = if a.link_width == 0 {
        Link {
            width: None,
            latency: a.link_latency,
        }
    } else {
        Link::new(a.link_width, a.link_latency)?
    };
    let default_m = if src.model.is_some() { 4 } else { 8 };
    let m = a.microbatches.unwrap_or(default_m);
    let schedules = schedules(a, &src.work);
    // A stage needs a compute layer: the default of 4 arrays cannot run
    // the shipped MLP (2 layers) or CNN (3), so it is capped at the layers.
    let default_p = [DEFAULT_ARRAYS.min(src.work.layers.len()).max(1)];
    let counts: Vec<usize> = match a.arrays.is_empty() {
        true => default_p.to_vec(),
        false => a.arrays.iter().flat_map(|c| c.0.iter().copied()).collect(),
    };
    let mut out = Vec::new();
    for p in counts {
        let system = System::new(arrays(a, src.array, p)?, link, a.clock_mhz)
            .with_context(|| format!("--arrays {p}"))?;
        for &schedule in &schedules {
            for &backward in &a.backward {
                let chunks = match schedule.spiking() {
                    true => a.chunks.unwrap_or(src.work.time_steps),
                    false => 1,
                };
                // --weights applies to the asynchronous schedules of the
                // list (check_options refuses it when there are none).
                let weights = a
                    .weights
                    .filter(|_| !schedule.synchronous())
                    .map(Into::into);
                let plan = Plan::new(schedule, backward, m, chunks, weights)?;
                let micro_batch_size = match &src.model {
                    Some(model) => numerics::micro_batch_size(model, &plan)?,
                    None => a.micro_batch_size,
                };
                out.push(Setup {
                    work: src.work.clone(),
                    system: system.clone(),
                    plan,
                    micro_batch_size,
                    partition: a.partition.clone(),
                    engine: a.engine.into(),
                    dw_offload: !a.no_dw_offload,
                });
            }
        }
    }
    Ok(out)
}

/// The schedules of `--schedule`; `all` leaves both SpikePipes out for a
/// network that does not spike (one time step: nothing to chunk).
fn schedules(a: &PipelineArgs, work: &Work) -> Vec<Schedule> {
    let mut out: Vec<Schedule> = Vec::new();
    for choice in &a.schedule {
        for s in choice.schedules() {
            let inapplicable =
                *choice == ScheduleChoice::All && s.spiking() && work.time_steps == 1;
            if !inapplicable && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// Refuses, as a usage error (exit 2, before anything is written), an
/// option that does not apply to the run: a schedule the network cannot
/// run, an option that none of the schedules takes (it would be
/// ignored), a training limit that leaves nothing to train.
fn check_options(a: &PipelineArgs, src: &Source) -> std::result::Result<(), String> {
    let schedules = schedules(a, &src.work);
    let names = || {
        schedules
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(",")
    };
    let t = src.work.time_steps;
    if let Some(s) = schedules.iter().find(|s| s.spiking()).filter(|_| t == 1) {
        return Err(format!(
            "--schedule {} needs a spiking network (more than 1 time step, to split into \
             time chunks: a spiking model, or --topology with --time-steps N); {} has 1 time step",
            s.name(),
            src.work.name
        ));
    }
    if let Some(w) = a.weights {
        if schedules.iter().all(|s| s.synchronous()) {
            return Err(format!(
                "--weights {} is for the asynchronous schedules (1f1b, layerpipe, layerpipe2, spikepipe); \
             --schedule {} is synchronous (one weight step per mini-batch, the mini-batch's \
             weights)",
                Weights::from(w).name(),
                names()
            ));
        }
    }
    if a.chunks.is_some() && !schedules.iter().any(|s| s.spiking()) {
        return Err(format!(
            "--chunks (time chunks per micro-batch) is for --schedule spikepipe and spikepipe-sync; --schedule {} has none",
            names()
        ));
    }
    let limits = [
        ("--epochs", a.limits.epochs),
        ("--max-train", a.limits.max_train),
        ("--max-test", a.limits.max_test),
    ];
    for (flag, value) in limits {
        match (a.train, value) {
            (true, Some(0)) => {
                return Err(format!(
                    "{flag} 0 is out of range (allowed: 1 or more): --train needs at least one \
             epoch, training sample and test sample"
                ))
            }
            (false, Some(_)) => return Err(format!("{flag} is for --train")),
            _ => {}
        }
    }
    Ok(())
}

/// Clap's usage error (exit 2) for an option [`check_options`] refused.
fn usage(message: String) -> ! {
    clap::Error::raw(
        clap::error::ErrorKind::ArgumentConflict,
        format!("{message}\n"),
    )
    .exit()
}

fn bar(n: usize, quiet: bool, what: &str) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(n as u64);
    let template = format!("{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {what}, eta {{eta}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A run's name in an error: its plan and its number of arrays.
fn run_name(s: &Setup) -> String {
    format!("{} on {} arrays", s.plan.label(), s.system.arrays.len())
}

pub fn run(a: &PipelineArgs) -> Result<()> {
    let src = source(a)?;
    if let Err(message) = check_options(a, &src) {
        usage(message);
    }
    // `--shard I/N`: this process's share of the runs (all without it).
    let sel = crate::shard::select(a.shard.shard, setups(a, &src)?, |s| format!("{s:?}"));
    let setups: Vec<Setup> = sel.jobs().cloned().collect();
    // Training's data, split, before anything is written.
    let training = match &src.model {
        Some(model) if a.train => Some(training_data(a, model)?),
        _ => None,
    };
    if let (Some(model), Some(split)) = (&src.model, &training) {
        a.budget
            .admit(&training_estimate(a, model, split, setups.len()))?;
    }
    // Every run's figures are held until the reports are written.
    let need = setups
        .iter()
        .fold(sysgrad_config::budget::Estimate::none(""), |e, s| {
            let one = sysgrad_pipeline::budget::setup(s);
            let what = if setups.len() == 1 {
                one.what.clone()
            } else {
                format!("{} runs, the first {}", setups.len(), one.what)
            };
            e.and(&one).named(what)
        });
    a.budget.admit(&need)?;
    let out = a.out.or(Path::new(DEFAULT_OUT).join(&src.work.name));
    // Steps within the runs: each layer counted, each timeline simulated.
    let steps: u64 = setups.iter().map(Setup::progress_steps).sum();
    let progress = bar(steps as usize, a.limits.quiet, "steps");
    let measured: Vec<Measured> = setups
        .par_iter()
        .map(|s| {
            s.measure_with_progress(&|n| progress.inc(n))
                .with_context(|| run_name(s))
        })
        .collect::<Result<_>>()?;
    progress.finish_and_clear();
    let printed: Vec<Printed> = setups
        .iter()
        .zip(&measured)
        .map(|(s, m)| Printed {
            header: report::header(s),
            one_run: report::one_run(m),
            row: report::Row::of(s, m),
            training: None,
        })
        .collect();
    if let Some(shard) = sel.shard {
        // Shards share a folder: they neither sweep it nor write a manifest.
        // Each run's training row is stored with its files, for the merge.
        let mut printed = printed;
        if let (Some(model), Some(split)) = (&src.model, &training) {
            train(a, model, split, &setups, &measured, &mut |i, row| {
                printed[i].training = Some(row)
            })?;
        }
        let write = |dir: &Path, m: &Measured| Ok(report::write(dir, m, &src.work.name)?);
        let stored = |i: usize| Ok(serde_json::to_value(&printed[i])?);
        crate::shard::write_runs(&out, "pipeline", &sel, shard, &measured, write, stored)?;
        return Ok(());
    }
    // Only now, every run measured, the output folder: a run that fails
    // leaves none.
    let dir = crate::run_dir::start(&out)?;
    let mut files = Vec::new();
    for m in &measured {
        files.extend(report::write(&out, m, &src.work.name)?);
    }
    print!("{}", tables(&printed));
    if let (Some(model), Some(split)) = (&src.model, &training) {
        print!("{}", report::TRAINING_HEAD);
        train(a, model, split, &setups, &measured, &mut |_, row| {
            print!("{row}")
        })?;
    }
    println!("\nwrote {} files to {}", files.len(), out.display());
    crate::run_dir::finish(&dir)
}

/// What `sysgrad pipeline` prints of one run, also stored in its shard
/// file so that `sysgrad merge` prints what the unsharded run prints.
#[derive(Debug, Serialize, Deserialize)]
struct Printed {
    /// The set-up (the first run's heads the output).
    header: String,
    /// The run's table of arrays (printed when it is the only run).
    one_run: String,
    /// Its row of the comparison of several runs.
    row: report::Row,
    /// With --train: its row of the training table.
    training: Option<String>,
}

/// The header and the table of `runs`: a run's own table, or the
/// comparison of several.
fn tables(runs: &[Printed]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let table = match runs {
        [one] => one.one_run.clone(),
        _ => {
            let rows: Vec<report::Row> = runs.iter().map(|r| r.row.clone()).collect();
            report::comparison(&rows)
        }
    };
    format!("{}{table}", first.header)
}

/// `sysgrad merge` of a pipeline study's shards: every run's files, and
/// the tables (with the training rows of `--train`) the unsharded run
/// prints.
pub fn merge(out: &Path, results: Vec<serde_json::Value>) -> Result<()> {
    let (dir, written, reports) = crate::shard::write_files(out, results)?;
    let runs = reports
        .into_iter()
        .enumerate()
        .map(|(job, r)| {
            serde_json::from_value::<Printed>(r).with_context(|| {
                format!("job {job}: no stored tables (a shard of an older sysgrad?)")
            })
        })
        .collect::<Result<Vec<_>>>()?;
    print!("{}", tables(&runs));
    let training: Vec<&str> = runs.iter().filter_map(|r| r.training.as_deref()).collect();
    if !training.is_empty() {
        print!("{}{}", report::TRAINING_HEAD, training.concat());
    }
    println!("\nwrote {written} files to {}", out.display());
    crate::run_dir::finish(&dir)
}

/// Training `model` in the order of each of `runs` schedules, each with
/// its synchronous reference: a fast exact training run apiece, twice.
fn training_estimate(
    a: &PipelineArgs,
    model: &model::Model,
    split: &data::Split,
    runs: usize,
) -> sysgrad_config::budget::Estimate {
    let opts = sysgrad_workloads::train::TrainOptions {
        epochs: a.limits.epochs,
        max_train: a.limits.max_train,
        max_test: a.limits.max_test,
        engine: EngineKind::Fast,
        ..Default::default()
    };
    let one =
        sysgrad_workloads::budget::training(model, &opts, split.train.len(), split.test.len());
    let seconds = 2.0 * runs as f64 * one.seconds;
    sysgrad_config::budget::Estimate { seconds, ..one }.named(format!(
        "training {} in the order of {runs} schedule(s), each beside synchronous training",
        model.spec.name
    ))
}

/// The model's data set, split as training splits it, checked to leave
/// samples to train and test on under the limits.
fn training_data(a: &PipelineArgs, model: &model::Model) -> Result<data::Split> {
    let samples = data::load(&model.data_path)?;
    let t = model.spec.training;
    let split = data::split(&samples, t.test_fraction, t.seed)?;
    let limit = |n: usize, max: Option<usize>| n.min(max.unwrap_or(usize::MAX));
    let train = limit(split.train.len(), a.limits.max_train);
    let test = limit(split.test.len(), a.limits.max_test);
    if train == 0 || test == 0 {
        bail!(
            "{}: {train} training and {test} test samples after the split and the limits: \
             --train needs both",
            model.data_path.display()
        );
    }
    Ok(split)
}

/// Trains `model` in each run's order beside synchronous training,
/// handing `row(i, text)` run i's row of the training table.
fn train(
    a: &PipelineArgs,
    model: &model::Model,
    split: &data::Split,
    setups: &[Setup],
    measured: &[Measured],
    row: &mut dyn FnMut(usize, String),
) -> Result<()> {
    let opts = TrainOptions {
        epochs: a.limits.epochs,
        max_train: a.limits.max_train,
        max_test: a.limits.max_test,
        progress: !a.limits.quiet,
        ema_shift: a.ema_shift,
        engine: EngineKind::Fast,
        reference: true,
    };
    for (i, (s, m)) in setups.iter().zip(measured).enumerate() {
        let res = numerics::train(
            model,
            split,
            &s.system,
            &m.partition.stages,
            &s.work.model_index,
            &m.timeline.plan,
            &m.loads,
            &opts,
        )
        .with_context(|| run_name(s))?;
        row(
            i,
            report::training_row(s.system.arrays.len(), &s.plan, &res),
        );
    }
    Ok(())
}
