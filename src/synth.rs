//! `sysgrad synth`: Yosys resource reports per configuration and FPGA
//! family, each configuration built twice (interleaved and sequential PEs)
//! so that the hardware cost of interleaving is measured. Writes
//! `synth.csv` and `synth.md`.

use std::path::PathBuf;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_synth::{self as synth, Target};

#[derive(clap::Args)]
pub struct SynthArgs {
    /// Configurations (.toml/.json); the built-in 16x16 default if none.
    #[arg(long = "config", short)]
    configs: Vec<PathBuf>,
    /// Targets, comma-separated: xilinx, ice40, generic.
    #[arg(long, default_value = "xilinx,ice40")]
    targets: String,
    /// Synthesise the whole accelerator (sa_accel: array, buffers as block
    /// RAM, controller, AXI host interface) instead of the array (sa_top).
    #[arg(long)]
    accel: bool,
    /// Output folder for synth.csv, synth.md and the Yosys logs.
    #[arg(long, default_value = "target/synth")]
    out: PathBuf,
    /// Print the run time on stdout (else stderr).
    #[arg(long)]
    timings: bool,
}

/// One synthesis run's configuration, target and cell counts.
struct Run {
    cfg: ArrayConfig,
    target: Target,
    res: synth::Resources,
}

fn label(cfg: &ArrayConfig) -> String {
    let f = cfg.format();
    format!(
        "{}x{} i{} a{}{}",
        cfg.rows(),
        cfg.cols(),
        f.in_bits,
        f.acc_bits,
        if cfg.dense() { " dense" } else { "" }
    )
}

/// What `yosys -V` says, for the heading of the table.
fn yosys_version() -> String {
    std::process::Command::new("yosys")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "Yosys (version unknown)".into())
}

fn markdown_row(top: &str, r: &Run) -> String {
    format!(
        "| {} | {top} | {} | {} | {} | {} | {} | {} | {} |\n",
        label(&r.cfg),
        r.target.name(),
        r.cfg.backward().name(),
        r.res.luts(),
        r.res.ffs(),
        r.res.dsps(),
        r.res.brams(),
        r.res.carries()
    )
}

/// Sequential over interleaved per configuration and target: what
/// interleaving costs (the runs come in interleaved, sequential pairs).
fn cost_lines(runs: &[Run]) -> String {
    let ratio = |a: u64, b: u64| {
        if b == 0 {
            "-".to_string()
        } else {
            format!("{:.2}x", a as f64 / b as f64)
        }
    };
    runs.chunks(2)
        .filter(|p| p.len() == 2)
        .map(|p| {
            let (il, seq) = (&p[0].res, &p[1].res);
            format!(
                "{}, {}: sequential / interleaved LUTs {}, FFs {}, DSPs {}\n",
                label(&p[0].cfg),
                p[0].target.name(),
                ratio(seq.luts(), il.luts()),
                ratio(seq.ffs(), il.ffs()),
                ratio(seq.dsps(), il.dsps())
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn synthesize(a: &SynthArgs, cfg: ArrayConfig, target: Target, top: &str) -> Result<Run, String> {
    let work = a.out.join(format!("{}-{top}-{}", cfg.tag(), target.name()));
    eprintln!(
        "synthesising {top} of {} for {} ...",
        cfg.tag(),
        target.name()
    );
    let files = sysgrad_hdl::generate(&cfg);
    let sources: Vec<synth::Source> = files
        .iter()
        .map(|f| (f.name.as_str(), f.text.as_str()))
        .collect();
    let res = synth::synthesize(&sources, target, top, &work).map_err(|e| e.to_string())?;
    Ok(Run { cfg, target, res })
}

pub fn run(a: &SynthArgs) -> Result<(), String> {
    let start = std::time::Instant::now();
    let targets = a
        .targets
        .split(',')
        .map(|t| {
            Target::parse(t.trim())
                .ok_or_else(|| format!("unknown target `{t}` (xilinx, ice40, generic)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let configs = if a.configs.is_empty() {
        vec![ArrayConfig::default_16x16()]
    } else {
        a.configs
            .iter()
            .map(|p| sysgrad_config::load_config(p).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?
    };
    let top = if a.accel {
        sysgrad_hdl::accel_top_name()
    } else {
        sysgrad_hdl::top_name()
    };
    let mut runs = Vec::new();
    for base in &configs {
        for target in &targets {
            for backward in [Backward::Interleaved, Backward::Sequential] {
                runs.push(synthesize(a, base.with_backward(backward), *target, top)?);
            }
        }
    }
    let mut csv = format!("{}\n", synth::CSV_HEADER);
    let mut md = String::from("| config | top | target | backward | LUTs | FFs | DSPs | BRAMs | carry cells |\n|---|---|---|---|---:|---:|---:|---:|---:|\n");
    for r in &runs {
        csv.push_str(&synth::csv_row(&r.cfg, top, &r.res));
        csv.push('\n');
        md.push_str(&markdown_row(top, r));
    }
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    crate::write_atomically(&a.out.join("synth.csv"), csv.as_bytes())?;
    crate::write_atomically(&a.out.join("synth.md"), md.as_bytes())?;
    println!("**`{top}`, {}**\n", yosys_version());
    print!("{md}\n{}", cost_lines(&runs));
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    crate::print_timing(
        a.timings,
        &format!("\n{} runs in {minutes:.1} min", runs.len()),
    );
    Ok(())
}
