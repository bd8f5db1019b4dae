//! `sysgrad formal`: bounded proofs (yosys-smtbmc, z3) of the properties
//! of `sysgrad_hdl::formal` on the generated `sa_accel` of a
//! configuration: the depth reached, the outcome and the run time.

use std::path::PathBuf;
use std::process::Command;

#[derive(clap::Args)]
pub struct FormalArgs {
    /// Accelerator configuration (.toml or .json); small buffers keep the
    /// check fast (configs/formal/accel_1x1.toml).
    #[arg(long, short)]
    config: PathBuf,
    /// Cycles from reset to check, every assertion in every cycle.
    #[arg(long, default_value_t = 24)]
    depth: u32,
    /// Working folder: the Verilog, the property file, the logs and, if
    /// a property fails, the counterexample (trace.vcd).
    #[arg(long, default_value = "target/formal")]
    out: PathBuf,
    /// Print the run time on stdout (else stderr).
    #[arg(long)]
    timings: bool,
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

pub fn run(a: &FormalArgs) -> Result<(), String> {
    let cfg = sysgrad_config::load_config(&a.config).map_err(|e| e.to_string())?;
    if a.depth == 0 {
        return Err("--depth: at least 1 cycle".into());
    }
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
        a.out.display()
    );
    let r = sysgrad_synth::formal::bmc(
        &sources,
        (&props.name, &props.text),
        sysgrad_hdl::accel_top_name(),
        a.depth,
        &a.out,
    )
    .map_err(|e| e.to_string())?;
    let b = cfg.buffers();
    println!(
        "**`{}` of {} ({}x{}, {}-bit data; buffers {}/{}/{}/{} lines, {} command words), {}, yosys-smtbmc with {}**\n",
        sysgrad_hdl::accel_top_name(),
        a.config.display(),
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
    crate::print_timing(a.timings, &format!("\nchecked in {:.0} s", r.seconds));
    match r.failure {
        None => Ok(()),
        Some(_) => Err(format!("a property fails: {outcome}")),
    }
}
