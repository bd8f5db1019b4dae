//! `sysgrad train`: train a model (MLP, CNN, SNN) on the digits data set
//! with every matrix product on the emulated array, next to an f32
//! reference; or count the training cycles of a SCALE-Sim topology,
//! interleaved vs sequential. The reports are `sysgrad_workloads::report`'s.

mod args;
mod rtl;

pub use args::TrainArgs;

use crate::choices::Engine;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::Instant;
use sysgrad_workloads::energy::EnergyTable;
use sysgrad_workloads::report::summary::{self, ModelRun};
use sysgrad_workloads::report::{one_run, TrainingSummary};
use sysgrad_workloads::scalesim::iso_area::{self, Setup};
use sysgrad_workloads::scalesim::{self, report::TopologySummary, Exactness};
use sysgrad_workloads::{data, model, report, train};

pub fn run(a: &TrainArgs) -> Result<()> {
    a.check()?;
    if a.engine == Engine::Rtl {
        return rtl::run(a);
    }
    if !a.workload.model.is_empty() || !a.onnx.is_empty() {
        run_models(a)
    } else if a.iso_area {
        run_iso_area(a)
    } else if !a.workload.topology.is_empty() {
        run_topologies(a)
    } else {
        bail!("give --model or --topology")
    }
}

/// Trains every `--model` (with each `--pipelining`): one full report, or
/// a summary row per run.
fn run_models(a: &TrainArgs) -> Result<()> {
    let models = a.models()?;
    let several = models.len() > 1;
    let mut runs = Vec::new();
    for m in &models {
        let (run, wall) = run_model(a, m, several)?;
        if several {
            eprintln!("{}: {wall:.1} s", run.summary.model);
        } else {
            print_training(a, &run.summary, wall);
        }
        runs.push((run, wall));
    }
    if several {
        print!(
            "{}",
            summary::models(&runs, a.engine.array(), a.timings.timings)
        );
        if a.engine == Engine::Accel {
            print!("\n{}", summary::accel_models(&runs));
        }
        print!("\n{}", summary::utilization(&runs));
    }
    Ok(())
}

/// Runs every `--topology` on every `--scalesim-config`: one full report,
/// or a summary row per pair.
fn run_topologies(a: &TrainArgs) -> Result<()> {
    let w = &a.workload;
    let several = w.topology.len() * w.scalesim_config.len() > 1;
    let mut runs = Vec::new();
    for topology in &w.topology {
        for config in &w.scalesim_config {
            let (s, wall) = run_topology(a, topology, config, several)?;
            if several {
                a.timings
                    .print(&format!("{} on {}: {wall:.2} s", s.topology, s.array));
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

fn run_model(a: &TrainArgs, run: &args::TrainJob, several: bool) -> Result<(ModelRun, f64)> {
    let m = &run.model;
    let dir = a.out_dir(&run.name, several);
    let t = m.spec.training;
    let split = data::load_split(m)?;
    let opts = a.train_options(m)?;
    let need = sysgrad_workloads::budget::training(m, &opts, split.train.len(), split.test.len());
    a.budget.admit(&need)?;
    warn_saturation(m);
    if a.onnx_out.is_some() {
        // Refuse a model ONNX cannot hold before training it.
        let init = sysgrad_workloads::net::initial_weights(m);
        sysgrad_workloads::onnx::to_onnx(m, &init).context("--onnx-out")?;
    }
    let out = crate::run_dir::start(&dir)?;
    let start = Instant::now();
    let trained = train::train(m, &split, &opts).with_context(|| m.spec.name.clone())?;
    let summary = report::write_training_report(&trained, &dir)?;
    crate::run_dir::finish(&out)?;
    if let Some(path) = &a.onnx_out {
        let weights = sysgrad_workloads::onnx::network_weights(&trained.fixed);
        sysgrad_workloads::onnx::write(path, m, &weights)?;
        eprintln!("wrote {}", path.display());
    }
    Ok((
        ModelRun {
            summary,
            seed: t.seed,
            pes: m.cfg.rows() * m.cfg.cols(),
        },
        start.elapsed().as_secs_f64(),
    ))
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
    print!("{}", one_run::training_head(s));
    a.timings.print(&one_run::training_time(s, wall));
    print!("{}", one_run::training_tables(s));
}

/// `--iso-area`: each topology on each config's interleaved array and on
/// the sequential arrays sized against it.
fn run_iso_area(a: &TrainArgs) -> Result<()> {
    // With --iso-luts the arrays take that config's number format too: a
    // float config's LUT ratio is its float PE's, and its MACs cost float
    // energy.
    let (lut_ratio, numbers) = match &a.iso_luts {
        Some(p) => {
            let work = a.out.or(args::DEFAULT_OUT).join("iso-luts");
            let (ratio, said) = crate::synth::lut_ratio(p, &work)?;
            println!("{said}\n");
            (Some(ratio), Some(crate::args::load(p)?.numbers()))
        }
        None => (None, None),
    };
    for topology in &a.workload.topology {
        for config in &a.workload.scalesim_config {
            let mut inputs = topology_inputs(a, topology, config)?;
            if let Some(n) = numbers {
                inputs.numbers = n;
            }
            let sc = &inputs.config;
            let contenders = iso_area::contenders(sc.array_height, sc.array_width, lut_ratio);
            let one = sysgrad_workloads::budget::topology(
                &inputs.topology,
                &scalesim::array_for(sc)?,
                inputs.batch,
                inputs.how,
            );
            let runs = contenders.len() as f64;
            a.budget.admit(&sysgrad_config::budget::Estimate {
                seconds: one.seconds * runs,
                ..one
            })?;
            let measured = iso_area::measure(&inputs, &contenders)?;
            println!("{}", iso_area::markdown(&inputs.topology.name, &measured));
        }
    }
    Ok(())
}

/// A topology, its config and how to count it, read from the arguments
/// (with notes on what sysgrad does not use or model).
fn topology_inputs(a: &TrainArgs, path: &Path, cfg_path: &Path) -> Result<Setup> {
    let topology = scalesim::load_topology(path)?;
    let config = scalesim::load_config(cfg_path)?;
    let how = if a.exact {
        Exactness::Stepped
    } else {
        Exactness::FastLedger
    };
    let table = match &a.energy_table {
        Some(p) => EnergyTable::load(p)?,
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
    let numbers = scalesim::array_for(&config)?.numbers();
    Ok(Setup {
        topology,
        config,
        batch: a.batch,
        sink: a.dw_sink.into(),
        how,
        table,
        numbers,
    })
}

fn run_topology(
    a: &TrainArgs,
    path: &Path,
    cfg_path: &Path,
    several: bool,
) -> Result<(TopologySummary, f64)> {
    let s = topology_inputs(a, path, cfg_path)?;
    let cfg = scalesim::array_for(&s.config)?;
    a.budget.admit(&sysgrad_workloads::budget::topology(
        &s.topology,
        &cfg,
        s.batch,
        s.how,
    ))?;
    let start = Instant::now();
    let run = scalesim::run_topology_with(&s.topology, &s.config, s.batch, s.sink, s.how, s.table)?;
    let name = format!("{}_{}", s.topology.name, run.cfg.tag());
    let dir = a.out_dir(&name, several);
    let out = crate::run_dir::start(&dir)?;
    let s = scalesim::report::write_topology_report(&run, &dir)?;
    crate::run_dir::finish(&out)?;
    Ok((s, start.elapsed().as_secs_f64()))
}

fn print_topology(a: &TrainArgs, s: &TopologySummary, wall: f64) {
    print!("{}", one_run::topology_head(s));
    a.timings.print(&one_run::topology_time(wall));
    print!("{}", one_run::topology_tables(s));
}
