//! `sysgrad pipeline`: pipelined training across several arrays. The
//! layers of a model or a SCALE-Sim topology are partitioned over P arrays
//! joined by links; each schedule's timeline gives time per iteration,
//! samples/s, bubble, utilisation, memory and link traffic per array and a
//! Gantt chart; with `--train` the model is also trained in the
//! schedule's order in fixed point, next to synchronous training.

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use sysgrad_config::{load_config, ArrayConfig, Backward};
use sysgrad_emulator::fast::EngineKind;
use sysgrad_pipeline::numerics::{self, TrainOptions};
use sysgrad_pipeline::{
    report, Link, Measured, PartitionChoice, Plan, Schedule, Setup, System, Weights, Work,
};
use sysgrad_workloads::{data, model, scalesim};

#[derive(clap::Args)]
pub struct PipelineArgs {
    /// Model file (.toml or .json), e.g. workloads/models/cnn.toml.
    #[arg(
        long,
        required_unless_present = "topology",
        conflicts_with = "topology"
    )]
    model: Option<PathBuf>,
    /// SCALE-Sim topology CSV, e.g. workloads/topologies/vgg16.csv.
    #[arg(long, requires = "scalesim_config")]
    topology: Option<PathBuf>,
    /// SCALE-Sim .cfg giving the array size (with --topology).
    #[arg(long)]
    scalesim_config: Option<PathBuf>,
    /// Arrays: a number (4), a list (2,4,8) or a range (2-9); every value
    /// is a separate run.
    #[arg(long, default_value = "4")]
    arrays: String,
    /// Schedules: gpipe, 1f1b, layerpipe, layerpipe2, zb, spikepipe, a
    /// comma-separated list of them, or `all`. With several, the table
    /// gives each one's speed-up over the first.
    #[arg(long, default_value = "1f1b")]
    schedule: String,
    /// The arrays' backward: interleaved, sequential or both.
    #[arg(long, default_value = "both")]
    backward: String,
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
    /// SpikePipe: time chunks per micro-batch [default: the time steps].
    #[arg(long)]
    chunks: Option<usize>,
    /// Asynchronous schedules: the weights of the backward pass, stash,
    /// latest or ema (LayerPipe2's reconstruction) [default: stash].
    #[arg(long)]
    weights: Option<String>,
    /// `balanced` (from every layer's counted cycles) or compute layers per
    /// array, e.g. 2,3,1.
    #[arg(long, default_value = "balanced")]
    partition: String,
    /// LayerPipe/LayerPipe2 on sequential arrays: keep every stage's dW on
    /// its own array (by default the most loaded stage's dW moves to a
    /// neighbour while that shortens the slowest array).
    #[arg(long)]
    no_dw_offload: bool,
    /// Array configuration (.toml/.json): once for every array, or once per
    /// array [default: the model's array, or the SCALE-Sim config's].
    #[arg(long)]
    array_config: Vec<PathBuf>,
    /// Link width in words per cycle (0: ideal, no serialisation).
    #[arg(long, default_value_t = 16)]
    link_width: u64,
    /// Link latency in cycles.
    #[arg(long, default_value_t = 8)]
    link_latency: u64,
    /// The clock at which cycles become seconds.
    #[arg(long, default_value_t = 200.0)]
    clock_mhz: f64,
    /// Task costs from `fast` (the fast exact mode's ledger) or `cycle`
    /// (clocking the register-level arrays; same counts, slow).
    #[arg(long, default_value = "fast")]
    engine: EngineKind,
    /// Model: also train it in each schedule's order in fixed point and
    /// report test accuracy against synchronous training, same seed.
    #[arg(long)]
    train: bool,
    /// With --train: epochs [default: the model's].
    #[arg(long)]
    epochs: Option<usize>,
    /// With --train: the first N training samples only.
    #[arg(long)]
    max_train: Option<usize>,
    /// With --train: the first N test samples only.
    #[arg(long)]
    max_test: Option<usize>,
    /// With --train and ema: the moving average follows each update with
    /// weight 2^-shift.
    #[arg(long, default_value_t = 2)]
    ema_shift: u32,
    /// Output folder for the JSON, CSV and SVG files [default:
    /// target/pipeline/<model or topology name>].
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// What the layers are and which arrays run them by default.
struct Source {
    work: Work,
    array: ArrayConfig,
    model: Option<model::Model>,
}

fn source(a: &PipelineArgs) -> Result<Source, String> {
    if let Some(path) = &a.model {
        if a.time_steps != 1 || a.micro_batch_size != 1 {
            return Err(
                "--time-steps and --micro-batch-size are for --topology; a model file sets its own"
                    .into(),
            );
        }
        let m = model::load_model(path).map_err(|e| e.to_string())?;
        return Ok(Source {
            work: Work::of_model(&m),
            array: m.cfg,
            model: Some(m),
        });
    }
    if a.train {
        return Err("--train needs --model (a topology has no data or weights)".into());
    }
    let (Some(topo), Some(cfg)) = (&a.topology, &a.scalesim_config) else {
        return Err("give --model, or --topology with --scalesim-config".into());
    };
    if a.time_steps == 0 {
        return Err("--time-steps = 0 is out of range (allowed: 1 or more)".into());
    }
    let topo = scalesim::load_topology(topo).map_err(|e| e.to_string())?;
    let sc = scalesim::load_config(cfg).map_err(|e| e.to_string())?;
    Ok(Source {
        work: Work::of_topology(&topo, a.time_steps),
        array: scalesim::array_for(&sc).map_err(|e| e.to_string())?,
        model: None,
    })
}

/// `4`, `2,4,8` or `2-9`.
fn parse_arrays(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("--arrays {s:?}: expected a number, a list (2,4,8) or a range (2-9)");
    if let Some((lo, hi)) = s.split_once('-') {
        let lo: usize = lo.trim().parse().map_err(|_| bad())?;
        let hi: usize = hi.trim().parse().map_err(|_| bad())?;
        if lo > hi {
            return Err(bad());
        }
        return Ok((lo..=hi).collect());
    }
    s.split(',')
        .map(|v| v.trim().parse().map_err(|_| bad()))
        .collect()
}

fn parse_schedules(s: &str) -> Result<Vec<Schedule>, String> {
    if s == "all" {
        return Ok(Schedule::ALL.to_vec());
    }
    s.split(',')
        .map(|v| v.trim().parse().map_err(|e| format!("--schedule: {e}")))
        .collect()
}

fn parse_backward(s: &str) -> Result<Vec<Backward>, String> {
    match s {
        "both" => Ok(vec![Backward::Sequential, Backward::Interleaved]),
        "interleaved" => Ok(vec![Backward::Interleaved]),
        "sequential" => Ok(vec![Backward::Sequential]),
        other => Err(format!(
            "--backward {other:?} (allowed: interleaved, sequential, both)"
        )),
    }
}

fn parse_partition(s: &str) -> Result<PartitionChoice, String> {
    if s == "balanced" {
        return Ok(PartitionChoice::Balanced);
    }
    s.split(',')
        .map(|v| {
            v.trim().parse().map_err(|_| {
                format!("--partition {s:?}: expected `balanced` or layers per array, e.g. 2,3,1")
            })
        })
        .collect::<Result<Vec<usize>, String>>()
        .map(PartitionChoice::Counts)
}

/// The arrays of a system of `p`: the default, one file for all, or one per array.
fn arrays(a: &PipelineArgs, default: ArrayConfig, p: usize) -> Result<Vec<ArrayConfig>, String> {
    let loaded: Vec<ArrayConfig> = a
        .array_config
        .iter()
        .map(|f| load_config(f).map_err(|e| format!("{}: {e}", f.display())))
        .collect::<Result<_, _>>()?;
    match loaded.len() {
        0 => Ok(vec![default; p]),
        1 => Ok(vec![loaded[0]; p]),
        n if n == p => Ok(loaded),
        n => Err(format!(
            "--array-config given {n} times: give it once (every array) or once per array ({p})"
        )),
    }
}

/// One run: a schedule, a backward, a number of arrays.
struct Run {
    p: usize,
    plan: Plan,
    setup: Setup,
}

fn runs(a: &PipelineArgs, src: &Source) -> Result<Vec<Run>, String> {
    let weights = a
        .weights
        .as_deref()
        .map(|w| w.parse::<Weights>().map_err(|e| format!("--weights: {e}")))
        .transpose()?;
    let link = if a.link_width == 0 {
        Link {
            width: None,
            latency: a.link_latency,
        }
    } else {
        Link::new(a.link_width, a.link_latency).map_err(|e| e.to_string())?
    };
    let partition = parse_partition(&a.partition)?;
    let default_m = if src.model.is_some() { 4 } else { 8 };
    let m = a.microbatches.unwrap_or(default_m);
    let mut out = Vec::new();
    for p in parse_arrays(&a.arrays)? {
        let system = System::new(arrays(a, src.array, p)?, link, a.clock_mhz)
            .map_err(|e| format!("--arrays {p}: {e}"))?;
        for &schedule in &parse_schedules(&a.schedule)? {
            for &backward in &parse_backward(&a.backward)? {
                let chunks = match schedule {
                    Schedule::SpikePipe => a.chunks.unwrap_or(src.work.time_steps),
                    _ => 1,
                };
                let w = weights.filter(|_| !schedule.synchronous());
                let plan =
                    Plan::new(schedule, backward, m, chunks, w).map_err(|e| e.to_string())?;
                let micro_batch_size = match &src.model {
                    Some(model) => {
                        numerics::micro_batch_size(model, &plan).map_err(|e| e.to_string())?
                    }
                    None => a.micro_batch_size,
                };
                let setup = Setup {
                    work: src.work.clone(),
                    system: system.clone(),
                    plan,
                    micro_batch_size,
                    partition: partition.clone(),
                    engine: a.engine,
                    dw_offload: !a.no_dw_offload,
                };
                out.push(Run { p, plan, setup });
            }
        }
    }
    Ok(out)
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

pub fn run(a: &PipelineArgs) -> Result<(), String> {
    let src = source(a)?;
    let runs = runs(a, &src)?;
    let progress = bar(runs.len(), a.quiet, "runs");
    let measured: Vec<Measured> = runs
        .par_iter()
        .map(|r| {
            let m = r
                .setup
                .measure()
                .map_err(|e| format!("{} on {} arrays: {e}", r.plan.label(), r.p));
            progress.inc(1);
            m
        })
        .collect::<Result<_, _>>()?;
    progress.finish_and_clear();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| Path::new("target/pipeline").join(&src.work.name));
    let mut files = Vec::new();
    for m in &measured {
        files.extend(report::write(&out, m, &src.work.name).map_err(|e| e.to_string())?);
    }
    print_header(a, &src, &runs);
    if measured.len() == 1 {
        print_one(&measured[0]);
    } else {
        print_table(&runs, &measured);
    }
    if a.train {
        let model = src.model.as_ref().expect("--train needs --model, checked");
        train(a, model, &runs, &measured)?;
    }
    println!("\nwrote {} files to {}", files.len(), out.display());
    Ok(())
}

fn print_header(a: &PipelineArgs, src: &Source, runs: &[Run]) {
    let r = &runs[0];
    let link = match r.setup.system.link.width {
        Some(w) => format!("{w} words/cycle, {} cycles latency", a.link_latency),
        None => format!("ideal width, {} cycles latency", a.link_latency),
    };
    println!(
        "# {} ({} compute layers, {} time steps) on {}x{} arrays, link {link}, {} MHz\n",
        src.work.name,
        src.work.layers.len(),
        src.work.time_steps,
        r.setup.system.arrays[0].rows(),
        r.setup.system.arrays[0].cols(),
        a.clock_mhz
    );
    println!(
        "micro-batch: {} samples, {} per mini-batch; task costs counted by the {} engine\n",
        r.setup.micro_batch_size,
        r.plan.micro_batches,
        match a.engine {
            EngineKind::Fast => "fast exact",
            EngineKind::Cycle => "cycle-accurate",
        }
    );
}

fn print_one(m: &Measured) {
    let f = &m.figures;
    println!(
        "{} on {} arrays, partition {:?}\n",
        f.label,
        f.stages,
        m.partition.counts()
    );
    println!(
        "iteration: {:.0} cycles = {:.3} ms at {} MHz, {:.1} samples/s, bubble {:.1}%\n",
        f.iteration_cycles,
        1e3 * f.iteration_seconds,
        f.clock_mhz,
        f.samples_per_second,
        100.0 * f.bubble_fraction
    );
    println!("| array | layers | dW on | busy cycles | utilization | MAC util | in flight | weight copies | weight words | activation words | sent fwd | sent bwd | max delay |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (s, r) in f.per_stage.iter().zip(&m.partition.stages) {
        println!(
            "| {} | {}..{} | {} | {} | {:.1}% | {:.1}% | {} | {} | {} | {} | {} | {} | {} |",
            s.stage,
            r.start,
            r.end,
            s.dw_array,
            s.busy_cycles,
            100.0 * s.utilization,
            100.0 * s.mac_utilization,
            s.peak_in_flight,
            s.weight_copies,
            s.weight_memory_words,
            s.activation_memory_words,
            s.sent_forward_words,
            s.sent_backward_words,
            s.max_delay
        );
    }
}

/// The iteration of `runs[i]`'s twin with `schedule` and `backward`.
fn twin(
    runs: &[Run],
    measured: &[Measured],
    i: usize,
    schedule: Schedule,
    backward: Backward,
) -> Option<f64> {
    runs.iter()
        .zip(measured)
        .find(|(r, _)| {
            r.p == runs[i].p && r.plan.schedule == schedule && r.plan.backward == backward
        })
        .map(|(_, m)| m.figures.iteration_cycles)
}

fn print_table(runs: &[Run], measured: &[Measured]) {
    let first = runs[0].plan.schedule;
    println!(
        "speed-up = iteration cycles of {} (same arrays, same backward) / this run's; IL gain = sequential / interleaved iteration (same schedule and arrays)\n",
        first.name()
    );
    println!("| arrays | schedule | partition | iteration cycles | samples/s | bubble | util min..max | weight words max | activation words max | link words/iter | speed-up | IL gain |");
    println!("|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|");
    for (i, (r, m)) in runs.iter().zip(measured).enumerate() {
        let f = &m.figures;
        let util = |pick: fn(f64, f64) -> f64, init| {
            f.per_stage.iter().map(|s| s.utilization).fold(init, pick)
        };
        let max = |g: fn(&sysgrad_pipeline::metrics::StageFigures) -> u64| {
            f.per_stage.iter().map(g).max().unwrap_or(0)
        };
        let link: u64 = f
            .per_stage
            .iter()
            .map(|s| s.sent_forward_words + s.sent_backward_words)
            .sum();
        let speedup = twin(runs, measured, i, first, r.plan.backward)
            .map_or("-".into(), |t| format!("{:.3}x", t / f.iteration_cycles));
        let il = match r.plan.backward {
            Backward::Interleaved => twin(runs, measured, i, r.plan.schedule, Backward::Sequential)
                .map_or("-".into(), |t| format!("{:.3}x", t / f.iteration_cycles)),
            Backward::Sequential => "-".into(),
        };
        println!(
            "| {} | {} | {:?} | {:.0} | {:.1} | {:.1}% | {:.0}%..{:.0}% | {} | {} | {} | {} | {} |",
            r.p,
            f.label,
            m.partition.counts(),
            f.iteration_cycles,
            f.samples_per_second,
            100.0 * f.bubble_fraction,
            100.0 * util(f64::min, f64::INFINITY),
            100.0 * util(f64::max, 0.0),
            max(|s| s.weight_memory_words),
            max(|s| s.activation_memory_words),
            link,
            speedup,
            il
        );
    }
}

fn train(
    a: &PipelineArgs,
    model: &model::Model,
    runs: &[Run],
    measured: &[Measured],
) -> Result<(), String> {
    let samples = data::load(&model.data_path).map_err(|e| e.to_string())?;
    let t = model.spec.training;
    let split = data::split(&samples, t.test_fraction, t.seed).map_err(|e| e.to_string())?;
    let opts = TrainOptions {
        epochs: a.epochs,
        max_train: a.max_train,
        max_test: a.max_test,
        progress: !a.quiet,
        ema_shift: a.ema_shift,
        engine: EngineKind::Fast,
        reference: true,
    };
    println!("\ntraining in each schedule's order (fixed point, fast exact arrays), against synchronous training with the same seed and samples per weight step:\n");
    println!("| arrays | schedule | samples per step | epochs | test accuracy | synchronous | difference (points) | bit-identical |");
    println!("|---:|---|---:|---:|---:|---:|---:|---|");
    for (r, m) in runs.iter().zip(measured) {
        let res = numerics::train(
            model,
            &split,
            &r.setup.system,
            &m.partition.stages,
            &r.setup.work.model_index,
            &r.plan,
            &m.loads,
            &opts,
        )
        .map_err(|e| format!("{} on {} arrays: {e}", r.plan.label(), r.p))?;
        let last = res.epochs.last().expect("at least one epoch");
        let sync = last.reference_test_accuracy.unwrap_or(f64::NAN);
        let same = res.reference_layers.as_ref().is_some_and(|l| {
            l.iter()
                .filter_map(|x| x.weights())
                .eq(res.layers.iter().filter_map(|x| x.weights()))
        });
        println!(
            "| {} | {} | {} | {} | {:.2}% | {:.2}% | {:+.2} | {} |",
            r.p,
            r.plan.label(),
            res.update_batch,
            res.epochs.len(),
            100.0 * last.test_accuracy,
            100.0 * sync,
            100.0 * (last.test_accuracy - sync),
            if same { "yes" } else { "no" }
        );
    }
    Ok(())
}
