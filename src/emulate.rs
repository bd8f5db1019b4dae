//! `sysgrad emulate`: one training step of a random layer, interleaved and
//! sequential, on the dense and the `none` array, with the per-phase
//! counters side by side.

use ndarray::Array2;
use sysgrad_config::{ArrayConfig, Backward, Pipelining};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{stats, Driver};
use sysgrad_rng::Rng;

#[derive(clap::Args)]
pub struct EmulateArgs {
    #[command(flatten)]
    config: crate::ConfigArg,
    /// Layer output size M (rows of W).
    #[arg(long, default_value_t = 64)]
    m: usize,
    /// Layer input size K (columns of W).
    #[arg(long, default_value_t = 64)]
    k: usize,
    /// Batch size N (columns of X).
    #[arg(long, default_value_t = 64)]
    n: usize,
    /// SGD learning rate as 2^-lr_shift.
    #[arg(long, default_value_t = 6)]
    lr_shift: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the step's per-cycle port stimulus and trace, in the array's
    /// own schedule
    /// (stimulus.txt, ports.txt) into this folder.
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// With --trace, also write every register as emulator.vcd.
    #[arg(long, requires = "trace")]
    vcd: bool,
    /// Which pipelinings to run: `both` (the configuration's first), or only
    /// `dense` or `none`.
    #[arg(long, default_value = "both")]
    pipelining: String,
}

/// Writes a recording as stimulus, port trace and (with snapshots) VCD.
fn write_trace(
    cfg: &sysgrad_config::ArrayConfig,
    rec: sysgrad_emulator::Recording,
    dir: &std::path::Path,
) -> Result<(), String> {
    use sysgrad_testbench::{registers, stimulus};
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = vec![
        ("stimulus.txt", stimulus::render(cfg, &rec.inputs)),
        ("ports.txt", stimulus::render_ports(cfg, &rec.outputs)),
    ];
    if let Some(snaps) = &rec.snapshots {
        files.push(("emulator.vcd", registers::write_snapshots(snaps)));
    }
    for (name, text) in files {
        let path = dir.join(name);
        crate::write_atomically(&path, text.as_bytes())?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Forward + backward + update of one layer with `schedule` on `drv`.
fn step(
    mut drv: Driver,
    schedule: Backward,
    w: &Array2<i64>,
    x: &Array2<i64>,
    dy: &Array2<i64>,
    lr: u32,
) -> Result<Driver, String> {
    gemm::forward(&mut drv, w.view(), x.view()).map_err(|e| e.to_string())?;
    gemm::backward(
        &mut drv,
        schedule,
        w.view(),
        x.view(),
        dy.view(),
        DwSink::Update { lr_shift: lr },
    )
    .map_err(|e| e.to_string())?;
    Ok(drv)
}

/// `a` over `b` as "N cycles vs M (Rx fewer)" for the summary lines.
fn versus(what: &str, (an, a): (&str, u64), (bn, b): (&str, u64), unit: &str) -> String {
    format!(
        "{what}: {a} {unit} {an} vs {b} {bn} ({:.2}x fewer)",
        b as f64 / a as f64
    )
}

/// How far each run is from what the array could do at best: the MAC bound
/// (every MAC slot busy) and the weight-load bound (weights streaming in at
/// C words a cycle); the step cannot beat the larger.
fn print_bounds(cfg: &ArrayConfig, runs: &[Run]) {
    println!();
    for r in runs {
        let cycles = r.stats.total().cycles;
        let mac = r.stats.mac_bound(cfg.rows() * cfg.cols());
        let load = r.stats.weight_load_bound(cfg.cols());
        let bound = mac.max(load);
        println!(
            "{} {}: {cycles} cycles; MAC bound {mac}, weight-load bound {load}: {:+.2}% over the larger",
            r.pipelining.name(),
            r.schedule.name(),
            100.0 * (cycles as f64 / bound as f64 - 1.0)
        );
    }
}

/// The summary lines: interleaved against sequential on each array, and
/// dense against none for each schedule.
fn print_comparisons(runs: &[Run]) {
    let find =
        |p: Pipelining, s: Backward| runs.iter().find(|r| r.pipelining == p && r.schedule == s);
    for p in [Pipelining::Dense, Pipelining::None] {
        let (Some(il), Some(seq)) = (
            find(p, Backward::Interleaved),
            find(p, Backward::Sequential),
        ) else {
            continue;
        };
        let (bi, bs) = (il.stats.backward(), seq.stats.backward());
        println!(
            "\n{} array: {}; {}; {}",
            p.name(),
            versus(
                "backward pass",
                ("interleaved", bi.cycles),
                ("sequential", bs.cycles),
                "cycles"
            ),
            versus(
                "buffer accesses",
                ("interleaved", bi.accesses()),
                ("sequential", bs.accesses()),
                "words"
            ),
            versus(
                "whole step",
                ("interleaved", il.stats.total().cycles),
                ("sequential", seq.stats.total().cycles),
                "cycles"
            ),
        );
    }
    for s in [Backward::Interleaved, Backward::Sequential] {
        let (Some(d), Some(n)) = (find(Pipelining::Dense, s), find(Pipelining::None, s)) else {
            continue;
        };
        println!(
            "\n{} schedule: {}",
            s.name(),
            versus(
                "whole step",
                ("dense", d.stats.total().cycles),
                ("none", n.stats.total().cycles),
                "cycles"
            ),
        );
    }
}

/// One step on one array with one schedule.
struct Run {
    pipelining: Pipelining,
    schedule: Backward,
    stats: stats::Stats,
}

/// The pipelinings to run, the configuration's own first.
pub(crate) fn pipelinings(cfg: &ArrayConfig, which: &str) -> Result<Vec<Pipelining>, String> {
    let other = match cfg.pipelining() {
        Pipelining::Dense => Pipelining::None,
        Pipelining::None => Pipelining::Dense,
    };
    match which {
        // The dense PE has no multiplier register: no dense twin to compare.
        "both" if cfg.multiplier_register() => Ok(vec![cfg.pipelining()]),
        "both" => Ok(vec![cfg.pipelining(), other]),
        "dense" => cfg
            .checked_with_pipelining(Pipelining::Dense)
            .map(|_| vec![Pipelining::Dense])
            .map_err(|e| format!("--pipelining dense: {e}")),
        "none" => Ok(vec![Pipelining::None]),
        other => Err(format!(
            "--pipelining {other}: expected both, dense or none"
        )),
    }
}

pub fn run(a: &EmulateArgs) -> Result<(), String> {
    let cfg = a.config.load()?;
    if a.m == 0 || a.k == 0 || a.n == 0 {
        return Err(format!(
            "layer sizes must be at least 1 (got M={} K={} N={})",
            a.m, a.k, a.n
        ));
    }
    for (terms, what) in [
        (a.k, "the forward reduction K"),
        (a.m, "the dX reduction M"),
        (a.n, "the dW reduction N"),
    ] {
        if let Some(w) = cfg.saturation_warning(terms, what) {
            eprintln!("warning: {w}");
        }
    }
    // An interleaved array also runs the sequential baseline (same
    // hardware, only the schedule differs); a sequential array can only run
    // its own schedule.
    let schedules: &[Backward] = if cfg.interleaved() {
        &[Backward::Interleaved, Backward::Sequential]
    } else {
        &[Backward::Sequential]
    };
    let mut rng = Rng::new(a.seed);
    let bits = cfg.format().in_bits;
    let (w, x, dy) = (
        rng.matrix(a.m, a.k, bits),
        rng.matrix(a.k, a.n, bits),
        rng.matrix(a.m, a.n, bits),
    );
    let mut runs = Vec::new();
    for pipelining in pipelinings(&cfg, &a.pipelining)? {
        for &schedule in schedules {
            let drv = Driver::new(cfg.with_pipelining(pipelining));
            let stats = step(drv, schedule, &w, &x, &dy, a.lr_shift)?.stats;
            runs.push(Run {
                pipelining,
                schedule,
                stats,
            });
        }
    }
    if let Some(dir) = &a.trace {
        let recording = Driver::recording(cfg, a.vcd);
        let mut drv = step(recording, cfg.backward(), &w, &x, &dy, a.lr_shift)?;
        write_trace(&cfg, drv.recording.take().expect("recording driver"), dir)?;
    }
    println!(
        "**{}x{} array ({}), layer M={} K={} N={} (forward + backward + SGD update)**\n",
        cfg.rows(),
        cfg.cols(),
        cfg.with_pipelining(Pipelining::None).tag(),
        a.m,
        a.k,
        a.n
    );
    let pes = cfg.rows() * cfg.cols();
    let names: Vec<String> = runs
        .iter()
        .map(|r| format!("{} {}", r.pipelining.name(), r.schedule.name()))
        .collect();
    let table: Vec<(&str, &stats::Stats)> = names
        .iter()
        .map(String::as_str)
        .zip(runs.iter().map(|r| &r.stats))
        .collect();
    print!("{}", stats::markdown_table(&table, pes));
    print_comparisons(&runs);
    print_bounds(&cfg, &runs);
    Ok(())
}
