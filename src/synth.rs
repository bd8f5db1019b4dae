//! `sysgrad synth`: Yosys resource reports per configuration and FPGA
//! family, each configuration built twice (interleaved and sequential PEs)
//! so that the hardware cost of interleaving is measured. Writes
//! `synth.csv` and `synth.md`.

use std::path::PathBuf;
use sysgrad_config::Backward;
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
}

pub fn run(a: &SynthArgs) -> Result<(), String> {
    let targets = a
        .targets
        .split(',')
        .map(|t| {
            Target::parse(t.trim())
                .ok_or_else(|| format!("unknown target `{t}` (xilinx, ice40, generic)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let configs = if a.configs.is_empty() {
        vec![sysgrad_config::ArrayConfig::default_16x16()]
    } else {
        a.configs
            .iter()
            .map(|p| sysgrad_config::load_config(p).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?
    };
    let mut csv = format!("{}\n", synth::CSV_HEADER);
    let top = if a.accel {
        sysgrad_hdl::accel_top_name()
    } else {
        sysgrad_hdl::top_name()
    };
    let mut md = String::from("| config | top | target | backward | LUTs | FFs | DSPs | BRAMs | carry cells |\n|---|---|---|---|---:|---:|---:|---:|---:|\n");
    for base in &configs {
        for target in &targets {
            for backward in [Backward::Interleaved, Backward::Sequential] {
                let cfg = base.with_backward(backward);
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
                let r =
                    synth::synthesize(&sources, *target, top, &work).map_err(|e| e.to_string())?;
                csv.push_str(&synth::csv_row(&cfg, top, &r));
                csv.push('\n');
                md.push_str(&format!(
                    "| {}x{} i{} a{} | {top} | {} | {} | {} | {} | {} | {} | {} |\n",
                    cfg.rows(),
                    cfg.cols(),
                    cfg.format().in_bits,
                    cfg.format().acc_bits,
                    target.name(),
                    backward.name(),
                    r.luts(),
                    r.ffs(),
                    r.dsps(),
                    r.brams(),
                    r.carries()
                ));
            }
        }
    }
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    crate::write_atomically(&a.out.join("synth.csv"), csv.as_bytes())?;
    crate::write_atomically(&a.out.join("synth.md"), md.as_bytes())?;
    print!("{md}");
    Ok(())
}
