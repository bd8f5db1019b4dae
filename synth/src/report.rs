//! The tables of `sysgrad synth`: the resource reports of [`crate::synthesize`]
//! (CSV and Markdown, interleaved next to sequential) and the place-and-route
//! reports of [`crate::pnr`] (CSV, Markdown, critical paths, seed sweeps).
//! Formatting only: the runs are made by the caller.

use crate::pnr::{self, PnrReport, Spread, Use};
use crate::{Resources, Target, CSV_HEADER};
use std::fmt::Write;
use sysgrad_config::{ArrayConfig, Backward, COUNTER_BITS};

/// `8x8 i16 a40 lr8 mr`: a configuration as the tables name it, with its
/// pipelining when `pipelining` (and the array is dense).
fn config_words(cfg: &ArrayConfig, pipelining: bool) -> String {
    let f = cfg.format();
    let lr = cfg
        .fixed_lr_shift()
        .map(|k| format!(" lr{k}"))
        .unwrap_or_default();
    let mul_reg = if cfg.multiplier_register() { " mr" } else { "" };
    let deferred = if cfg.deferred_saturation() { " ds" } else { "" };
    // The hardware counters' width, when not the default 48.
    let counters = if cfg.counter_bits() == *COUNTER_BITS.end() {
        String::new()
    } else {
        format!(" c{}", cfg.counter_bits())
    };
    // Without the convolution address generator.
    let window = if cfg.has_window() { "" } else { " nw" };
    let dense = if pipelining && cfg.dense() {
        " dense"
    } else {
        ""
    };
    // Fixed point by its widths, a float format by its tag.
    let numbers = match cfg.numbers() {
        sysgrad_config::Numbers::Fixed(_) => format!("i{} a{}", f.in_bits, f.acc_bits),
        sysgrad_config::Numbers::Float(float) => float.tag(),
    };
    format!(
        "{}x{} {numbers}{dense}{lr}{mul_reg}{deferred}{counters}{window}",
        cfg.rows(),
        cfg.cols(),
    )
}

/// The label of a synthesised configuration: `8x8 i16 a40 dense lr8`.
pub fn label(cfg: &ArrayConfig) -> String {
    config_words(cfg, true)
}

/// `8x8 i16 a40 il none`: the label of a placed configuration, its
/// pipelining named once, at the end.
pub fn pnr_label(cfg: &ArrayConfig) -> String {
    let sched = match cfg.backward() {
        Backward::Interleaved => "il",
        Backward::Sequential => "seq",
    };
    format!(
        "{} {sched} {}",
        config_words(cfg, false),
        cfg.pipelining().name()
    )
}

/// What `yosys -V` says, for the heading of a table.
pub fn yosys_version() -> String {
    std::process::Command::new("yosys")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "Yosys (version unknown)".into())
}

/// One synthesis run: the configuration and its cell counts.
pub struct SynthRun {
    pub cfg: ArrayConfig,
    pub res: Resources,
}

impl SynthRun {
    fn target(&self) -> Target {
        self.res.target
    }
}

/// The CSV of synthesis runs of module `top` ([`CSV_HEADER`], then a row each).
pub fn synth_csv(top: &str, runs: &[SynthRun]) -> String {
    let mut csv = format!("{CSV_HEADER}\n");
    for r in runs {
        csv.push_str(&crate::csv_row(&r.cfg, top, &r.res));
        csv.push('\n');
    }
    csv
}

/// The Markdown table of synthesis runs of module `top`.
pub fn synth_markdown(top: &str, runs: &[SynthRun]) -> String {
    let mut md = String::from(
        "| config | top | target | backward | LUTs | FFs | DSPs | BRAMs | carry cells |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let _ = writeln!(
            md,
            "| {} | {top} | {} | {} | {} | {} | {} | {} | {} |",
            label(&r.cfg),
            r.target().name(),
            r.cfg.backward().name(),
            r.res.luts(),
            r.res.ffs(),
            r.res.dsps(),
            r.res.brams(),
            r.res.carries()
        );
    }
    md
}

/// Sequential over interleaved per configuration and target: what
/// interleaving costs (the runs come in interleaved, sequential pairs).
pub fn cost_lines(runs: &[SynthRun]) -> String {
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
                p[0].target().name(),
                ratio(seq.luts(), il.luts()),
                ratio(seq.ffs(), il.ffs()),
                ratio(seq.dsps(), il.dsps())
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A seed sweep's best run, the spread of the others and the place and
/// route time of all of them.
pub struct SeedSweep {
    pub best_seed: u64,
    pub seeds: u64,
    pub spread: Spread,
    pub pnr_seconds: f64,
}

/// One placed configuration on one part.
pub struct PnrRun {
    pub cfg: ArrayConfig,
    /// The run of the best seed (the only one without a sweep).
    pub report: PnrReport,
    /// With several seeds: the best one, the spread, the time of all.
    pub sweep: Option<SeedSweep>,
}

impl PnrRun {
    /// The best run of `runs`, one per seed from `first` (`seeds` of them),
    /// and what the others reached.
    pub fn best_of(cfg: ArrayConfig, runs: Vec<PnrReport>, first: u64, seeds: u64) -> PnrRun {
        let pnr_seconds = runs.iter().map(|r| r.pnr_seconds).sum();
        let spread = pnr::spread(&runs);
        let best = spread.map_or(0, |s| s.best);
        let report = runs
            .into_iter()
            .nth(best)
            .expect("a sweep has a run per seed");
        let sweep = spread.filter(|_| seeds > 1).map(|spread| SeedSweep {
            best_seed: first + best as u64,
            seeds,
            spread,
            pnr_seconds,
        });
        PnrRun { cfg, report, sweep }
    }

    fn pnr_seconds(&self) -> f64 {
        self.sweep
            .as_ref()
            .map_or(self.report.pnr_seconds, |s| s.pnr_seconds)
    }

    /// The Fmax cell of the table: the best seed's, with the spread of a sweep.
    fn fmax_cell(&self) -> String {
        match (&self.report.does_not_fit, &self.sweep) {
            (Some(_), _) => "does not fit".into(),
            (None, None) => format!("{:.1} MHz", self.report.fmax_mhz),
            (None, Some(s)) => format!(
                "{:.1} MHz (seed {}; median {:.1}, worst {:.1} of {} seeds)",
                s.spread.best_mhz, s.best_seed, s.spread.median_mhz, s.spread.worst_mhz, s.seeds
            ),
        }
    }
}

/// `used / available (percent)` of one kind of cell.
fn cells(u: Use) -> String {
    if u.available == 0 && u.used == 0 {
        "0 / 0".into()
    } else {
        format!("{} / {} ({:.0}%)", u.used, u.available, u.percent())
    }
}

/// The CSV of place-and-route runs of module `top`, swept over `seeds`
/// seeds from `first_seed`.
pub fn pnr_csv(top: &str, runs: &[PnrRun], first_seed: u64, seeds: u64) -> String {
    let mut csv = String::from("config,top,backward,pipelining,part,fits,fmax_mhz,target_mhz,luts,luts_available,ffs,ffs_available,dsps,dsps_available,brams,brams_available,wrapper_ffs,synth_s,pnr_s,seed,seeds,fmax_median_mhz,fmax_worst_mhz,critical_path\n");
    for r in runs {
        let p = &r.report;
        let _ = writeln!(
            csv,
            "{},{top},{},{},{},{},{:.2},{:.1},{},{},{},{},{},{},{},{},{},{:.1},{:.1},{},{},{:.2},{:.2},\"{}\"",
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
            r.pnr_seconds(),
            r.sweep.as_ref().map_or(first_seed, |s| s.best_seed),
            seeds,
            r.sweep.as_ref().map_or(p.fmax_mhz, |s| s.spread.median_mhz),
            r.sweep.as_ref().map_or(p.fmax_mhz, |s| s.spread.worst_mhz),
            p.path_summary().replace('"', "'")
        );
    }
    csv
}

/// The Markdown table of place-and-route runs of module `top`.
pub fn pnr_markdown(top: &str, runs: &[PnrRun]) -> String {
    let mut md = String::from(
        "| config | top | part | Fmax | LUTs | FFs | DSPs | BRAMs | synth | PnR |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let p = &r.report;
        let _ = writeln!(
            md,
            "| {} | {top} | {} | {} | {} | {} | {} | {} | {:.0} s | {:.0} s |",
            pnr_label(&r.cfg),
            p.part.name(),
            r.fmax_cell(),
            cells(p.luts),
            cells(p.ffs),
            cells(p.dsps),
            cells(p.brams),
            p.synth_seconds,
            r.pnr_seconds()
        );
    }
    md
}

/// One line per run: its critical path (of the best seed), or why it
/// does not fit.
pub fn critical_paths(runs: &[PnrRun]) -> String {
    let mut paths = String::new();
    for r in runs {
        let p = &r.report;
        let what = match (&p.does_not_fit, &r.sweep) {
            (None, None) => p.path_summary(),
            (None, Some(s)) => format!("seed {}: {}", s.best_seed, p.path_summary()),
            (Some(why), _) => format!("does not fit: {why}"),
        };
        let _ = writeln!(paths, "* {}, {}: {what}", pnr_label(&r.cfg), p.part.name());
        if p.does_not_fit.is_none() {
            let _ = writeln!(paths, "  * steps (ns): {}", p.path_steps());
        }
    }
    paths
}

/// The flip-flops the pin wrapper adds, once per configuration.
pub fn wrapper_ffs(runs: &[PnrRun]) -> String {
    let mut wrapper: Vec<String> = Vec::new();
    for r in runs {
        let w = format!("{} {}", pnr_label(&r.cfg), r.report.wrapper_ffs);
        if !wrapper.contains(&w) {
            wrapper.push(w);
        }
    }
    wrapper.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sysgrad_config::{NumberFormat, Pipelining};

    fn cfg() -> ArrayConfig {
        let format = NumberFormat {
            in_bits: 8,
            acc_bits: 24,
            frac_bits: 4,
        };
        ArrayConfig::new(2, 3, Backward::Sequential, format)
            .unwrap()
            .with_fixed_lr_shift(Some(8))
            .unwrap()
    }

    #[test]
    fn labels_name_the_options_and_the_pipelining_once() {
        let mr = cfg().with_multiplier_register(true).unwrap();
        assert_eq!(label(&mr), "2x3 i8 a24 lr8 mr");
        assert_eq!(pnr_label(&mr), "2x3 i8 a24 lr8 mr seq none");
        let dense = cfg().with_pipelining(Pipelining::Dense).unwrap();
        assert_eq!(label(&dense), "2x3 i8 a24 dense lr8");
        assert_eq!(pnr_label(&dense), "2x3 i8 a24 lr8 seq dense");
    }

    #[test]
    fn costs_are_sequential_over_interleaved_per_pair() {
        let res = |luts: u64| Resources {
            target: Target::Xilinx,
            cells: [("LUT4".to_string(), luts), ("FDRE".to_string(), 10)].into(),
        };
        let runs = [
            SynthRun {
                cfg: cfg().with_backward(Backward::Interleaved),
                res: res(100),
            },
            SynthRun {
                cfg: cfg(),
                res: res(80),
            },
        ];
        assert_eq!(
            cost_lines(&runs),
            "2x3 i8 a24 lr8, xilinx: sequential / interleaved LUTs 0.80x, FFs 1.00x, DSPs -\n"
        );
        let md = synth_markdown("sa_top", &runs);
        assert!(md.contains("| 2x3 i8 a24 lr8 | sa_top | xilinx | sequential | 80 | 10 |"));
        assert_eq!(synth_csv("sa_top", &runs).lines().count(), 3);
    }
}
