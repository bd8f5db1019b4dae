//! `sysgrad formal`: bounded proofs (yosys-smtbmc, z3) of the properties
//! of `sysgrad_hdl::formal` on the generated `sa_accel` of a
//! configuration: the depth reached, the outcome and the run time.

use crate::args::{one_config, Budget, Configs, Out, Timings};
use anyhow::{bail, Context, Result};
use std::process::Command;

/// Where `formal` works without `-o`.
const DEFAULT_OUT: &str = "target/formal";

#[derive(clap::Args)]
#[command(
    mut_arg("config", |a| one_config(a).required(true).help("Accelerator configuration (.toml or .json); small buffers keep the check fast (configs/formal/accel_1x1.toml)")),
    mut_arg("out", |a| a.help("Working folder: the Verilog, the property file, the logs and, if a property fails, the counterexample (trace.vcd)").default_value(DEFAULT_OUT))
)]
pub struct FormalArgs {
    #[command(flatten)]
    config: Configs,
    /// Cycles from reset to check, every assertion in every cycle.
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..))]
    depth: u32,
    #[command(flatten)]
    out: Out,
    #[command(flatten)]
    timings: Timings,
    #[command(flatten)]
    budget: Budget,
}

/// The first line of `tool --version` (or `-V`).
fn version(tool: &str, arg: &str) -> String {
    Command::new(tool)
        .arg(arg)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| format!("{tool} (version unknown)"))
}

pub fn run(a: &FormalArgs) -> Result<()> {
    let path = a
        .config
        .config
        .first()
        .context("-c/--config: give the configuration")?;
    let cfg = crate::args::load(path)?;
    a.budget
        .admit(&sysgrad_synth::formal::estimate(a.depth))
        .with_context(|| {
            format!(
                "--depth {}: the deepest check within --max-time is about {}",
                a.depth,
                sysgrad_synth::formal::max_depth(a.budget.max_time)
            )
        })?;
    let out = a.out.or(DEFAULT_OUT);
    // A working folder (logs, counterexample): started so that its errors
    // name it, no manifest.
    crate::run_dir::start(&out)?;
    let (files, props) = sysgrad_hdl::formal::formal_design(&cfg, str::to_string)?;
    let sources: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f.name.as_str(), f.text.as_str()))
        .collect();
    eprintln!(
        "checking {} of {} for {} cycles in {} ...",
        sysgrad_hdl::accel_top_name(),
        cfg.tag(),
        a.depth,
        out.display()
    );
    let r = sysgrad_synth::formal::bmc(
        &sources,
        (&props.name, &props.text),
        sysgrad_hdl::accel_top_name(),
        a.depth,
        &out,
    )?;
    let b = cfg.buffers();
    println!(
        "**`{}` of {} ({}x{}, {}-bit data; buffers {}/{}/{}/{} lines, {} command words), {}, yosys-smtbmc with {}**\n",
        sysgrad_hdl::accel_top_name(),
        path.display(),
        cfg.rows(),
        cfg.cols(),
        cfg.format().in_bits,
        b.weights,
        b.activations,
        b.gradients,
        b.accumulators,
        b.commands,
        version("yosys", "-V"),
        version(sysgrad_synth::formal::SOLVER, "--version"),
    );
    let outcome = match &r.failure {
        None => format!("hold in every cycle 0..{}", r.depth - 1),
        Some(f) => format!(
            "FAIL in cycle {}: {} (counterexample {})",
            f.step,
            f.assertions.join(", "),
            f.vcd
        ),
    };
    println!("| property | depth (cycles from reset) | outcome |\n|---|---:|---|");
    for p in sysgrad_hdl::formal::PROPERTIES {
        println!("| {p} | {} | {outcome} |", r.depth);
    }
    a.timings.print(&format!("\nchecked in {:.0} s", r.seconds));
    if r.failure.is_some() {
        bail!("a property fails: {outcome}");
    }
    Ok(())
}
