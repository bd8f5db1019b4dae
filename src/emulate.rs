//! `sysgrad emulate`: one training step of a random layer, interleaved and
//! sequential, on the dense and the `none` array, with the per-phase
//! counters side by side.

use crate::args::{
    one_config, pipelining_or_twins, write_atomically, Configs, LayerArgs, Out, PipeliningChoice,
};
use anyhow::{Context, Result};
use ndarray::Array2;
use sysgrad_config::{ArrayConfig, Backward, Pipelining};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{stats, Driver};
use sysgrad_rng::Rng;

#[derive(clap::Args)]
#[command(
    mut_arg("config", one_config),
    mut_arg("out", |a| a.alias("trace").help("Write the step's per-cycle port stimulus and trace, in the array's own schedule (stimulus.txt, ports.txt), into this folder")),
    mut_arg("pipelining", pipelining_or_twins)
)]
pub struct EmulateArgs {
    #[command(flatten)]
    config: Configs,
    #[command(flatten)]
    layer: LayerArgs,
    #[command(flatten)]
    out: Out,
    /// With -o, also write every register as emulator.vcd.
    #[arg(long, requires = "out")]
    vcd: bool,
    #[command(flatten)]
    pipelining: PipeliningChoice,
}

/// Writes a recording as stimulus, port trace and (with snapshots) VCD.
fn write_trace(
    cfg: &sysgrad_config::ArrayConfig,
    rec: sysgrad_emulator::Recording,
    dir: &std::path::Path,
) -> Result<()> {
    use sysgrad_testbench::{registers, stimulus};
    let out = crate::run_dir::start(dir)?;
    let mut files = vec![
        ("stimulus.txt", stimulus::render(cfg, &rec.inputs)),
        ("ports.txt", stimulus::render_ports(cfg, &rec.outputs)),
    ];
    if let Some(snaps) = &rec.snapshots {
        files.push(("emulator.vcd", registers::write_snapshots(snaps)));
    }
    for (name, text) in files {
        let path = dir.join(name);
        write_atomically(&path, text.as_bytes())?;
        println!("wrote {}", path.display());
    }
    crate::run_dir::finish(&out)
}

/// Forward + backward + update of one layer with `schedule` on `drv`.
fn step(
    mut drv: Driver,
    schedule: Backward,
    w: &Array2<i64>,
    x: &Array2<i64>,
    dy: &Array2<i64>,
    lr: u32,
) -> Result<Driver> {
    gemm::forward(&mut drv, w.view(), x.view()).context("forward pass")?;
    gemm::backward(
        &mut drv,
        schedule,
        w.view(),
        x.view(),
        dy.view(),
        DwSink::Update { lr_shift: lr },
    )
    .context("backward pass")?;
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

pub fn run(a: &EmulateArgs) -> Result<()> {
    let cfg = a.config.one_or_default()?;
    let (m, k, n) = a.layer.dims()?;
    let (lr_shift, seed) = (a.layer.lr_shift, a.layer.seed);
    for (terms, what) in [
        (k, "the forward reduction K"),
        (m, "the dX reduction M"),
        (n, "the dW reduction N"),
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
    let mut rng = Rng::new(seed);
    let bits = cfg.format().in_bits;
    let (w, x, dy) = (
        rng.matrix(m, k, bits),
        rng.matrix(k, n, bits),
        rng.matrix(m, n, bits),
    );
    let mut runs = Vec::new();
    for array in a.pipelining.configs_or_twins(cfg)? {
        for &schedule in schedules {
            let stats = step(Driver::new(array), schedule, &w, &x, &dy, lr_shift)?.stats;
            runs.push(Run {
                pipelining: array.pipelining(),
                schedule,
                stats,
            });
        }
    }
    if let Some(dir) = &a.out.out {
        let recording = Driver::recording(cfg, a.vcd);
        let mut drv = step(recording, cfg.backward(), &w, &x, &dy, lr_shift)?;
        let rec = drv.recording.take().context("a recording driver records")?;
        write_trace(&cfg, rec, dir)?;
    }
    let unpipelined = cfg.with_pipelining(Pipelining::None)?;
    println!(
        "**{}x{} array ({}), layer M={m} K={k} N={n} (forward + backward + SGD update)**\n",
        cfg.rows(),
        cfg.cols(),
        unpipelined.tag(),
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
