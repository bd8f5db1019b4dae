//! `sysgrad cosim`: the RTL and the emulator on the same random training
//! step, compared every cycle.

use crate::args::{one_config, Budget, Configs, Out, PipeliningChoice, Timings};
use crate::choices::Sim;
use anyhow::{Context, Result};
use std::time::Instant;
use sysgrad_testbench::{scenario, Simulator};

/// Where `cosim` works without `-o`.
const DEFAULT_OUT: &str = "target/cosim/runs";

#[derive(clap::Args)]
#[command(
    mut_arg("config", one_config),
    mut_arg("out", |a| a.alias("work").help("Working folder for stimulus, traces and builds (a subfolder per configuration)").default_value(DEFAULT_OUT))
)]
pub struct CosimArgs {
    #[command(flatten)]
    config: Configs,
    /// Seed of the random layer (printed, so a failure can be replayed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of consecutive seeds to run.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Simulator.
    #[arg(long, value_enum, default_value_t = Sim::Verilator)]
    sim: Sim,
    #[command(flatten)]
    out: Out,
    #[command(flatten)]
    pipelining: PipeliningChoice,
    #[command(flatten)]
    timings: Timings,
    #[command(flatten)]
    budget: Budget,
}

pub fn run(a: &CosimArgs) -> Result<()> {
    let sim = Simulator::from(a.sim);
    let work = a.out.or(DEFAULT_OUT);
    let configs = a.pipelining.configs(a.config.one_or_default()?)?;
    for cfg in &configs {
        a.budget
            .admit(&sysgrad_testbench::budget::cosim(cfg, a.runs, sim))?;
    }
    // A working folder (builds, traces): started so that its errors name
    // it, no manifest.
    crate::run_dir::start(&work)?;
    for cfg in configs {
        for s in a.seed..a.seed.saturating_add(a.runs) {
            let start = Instant::now();
            let (rec, what) = scenario::training_step(&cfg, s, sim == Simulator::Verilator);
            let report = sysgrad_testbench::run(&cfg, &rec, sim, &work.join(cfg.tag()))
                .with_context(|| format!("{} ({what})", cfg.tag()))?;
            println!(
                "{}: {what}: {} cycles match on every port, {} register samples match",
                cfg.tag(),
                report.cycles,
                report.register_samples
            );
            let minutes = start.elapsed().as_secs_f64() / 60.0;
            a.timings.print(&format!("time: {minutes:.1} min"));
        }
    }
    Ok(())
}
