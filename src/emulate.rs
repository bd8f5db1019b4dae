//! `sysgrad emulate`: one training step of a random layer, interleaved and
//! sequential, on the dense and the `none` array, with the per-phase
//! counters side by side.

use crate::args::{
    one_config, pipelining_or_twins, write_atomically, Budget, Configs, LayerArgs, Out,
    PipeliningChoice, Staged,
};
use anyhow::{Context, Result};
use ndarray::Array2;
use std::path::Path;
use std::sync::Arc;
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
    #[command(flatten)]
    budget: Budget,
}

/// The step's trace: every cycle's ports recorded, and with `vcd` every
/// register written to `emulator.vcd` in `dir` as the step runs (staged,
/// renamed into place once stimulus and ports are written).
fn write_trace(
    cfg: &ArrayConfig,
    (w, x, dy, lr_shift): (&Array2<i64>, &Array2<i64>, &Array2<i64>, u32),
    dir: &Path,
    vcd: bool,
) -> Result<()> {
    use sysgrad_testbench::registers::{SnapshotWriter, Streamed};
    use sysgrad_testbench::stimulus;
    let run = crate::run_dir::start(dir)?;
    let mut drv = Driver::recording(*cfg, false);
    let mut streamed = None;
    if vcd {
        let path = dir.join("emulator.vcd");
        let (staged, out) = Staged::create(&path)?;
        let writer =
            SnapshotWriter::new(out, cfg).with_context(|| format!("writing {}", path.display()))?;
        let shared = Streamed::new(writer);
        drv = drv.watched(SnapshotWriter::watcher(shared.clone()));
        streamed = Some((staged, shared));
    }
    let mut drv = step(drv, cfg.backward(), w, x, dy, lr_shift)?;
    drop(drv.unwatch());
    let rec = drv.recording.take().context("a recording driver records")?;
    for (name, text) in [
        ("stimulus.txt", stimulus::render(cfg, &rec.inputs)),
        ("ports.txt", stimulus::render_ports(cfg, &rec.outputs)),
    ] {
        let path = dir.join(name);
        write_atomically(&path, text.as_bytes())?;
        println!("wrote {}", path.display());
    }
    if let Some((staged, shared)) = streamed {
        let writing = || format!("writing {}", staged.path().display());
        let streamed = Arc::into_inner(shared)
            .context("the driver let go of the VCD")?
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let out = streamed.finish().with_context(writing)?;
        let path = staged.path().to_path_buf();
        staged.commit(out)?;
        println!("wrote {}", path.display());
    }
    crate::run_dir::finish(&run)
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

/// What `runs` steps of the layer need, with the recorded step when
/// writing a trace (its ports are held until written; the VCD is streamed).
fn estimate(
    a: &EmulateArgs,
    cfg: &ArrayConfig,
    runs: usize,
    mkn: (usize, usize, usize),
) -> sysgrad_config::budget::Estimate {
    use sysgrad_emulator::budget;
    let steps = runs + usize::from(a.out.out.is_some());
    let e = budget::cycle_steps(cfg, mkn, steps);
    match a.out.out {
        Some(_) => e.and(&budget::recording(cfg, mkn)),
        None => e,
    }
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
    let arrays = a.pipelining.configs_or_twins(cfg)?;
    a.budget.admit(&estimate(
        a,
        &cfg,
        arrays.len() * schedules.len(),
        (m, k, n),
    ))?;
    let mut rng = Rng::new(seed);
    let bits = cfg.format().in_bits;
    let (w, x, dy) = (
        rng.matrix(m, k, bits),
        rng.matrix(k, n, bits),
        rng.matrix(m, n, bits),
    );
    let mut runs = Vec::new();
    for array in arrays {
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
        write_trace(&cfg, (&w, &x, &dy, lr_shift), dir, a.vcd)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use sysgrad_testbench::registers::write_snapshots;

    /// The VCD written as the step runs is, byte for byte, the one built
    /// in memory from a recording's snapshots; no temporary file is left.
    #[test]
    fn the_streamed_vcd_is_the_in_memory_one_byte_for_byte() {
        let dense = ArrayConfig::default_16x16();
        let small = crate::args::load(Path::new("configs/small_4x4.toml")).unwrap();
        for cfg in [
            dense,
            small,
            small.with_pipelining(Pipelining::Dense).unwrap(),
        ] {
            let mut rng = Rng::new(7);
            let bits = cfg.format().in_bits;
            let (m, k, n) = (9, 6, 5);
            let (w, x, dy) = (
                rng.matrix(m, k, bits),
                rng.matrix(k, n, bits),
                rng.matrix(m, n, bits),
            );
            let dir = tempfile::tempdir().unwrap();
            write_trace(&cfg, (&w, &x, &dy, 6), dir.path(), true).unwrap();
            let streamed = std::fs::read(dir.path().join("emulator.vcd")).unwrap();
            let recorded = step(Driver::recording(cfg, true), cfg.backward(), &w, &x, &dy, 6)
                .unwrap()
                .recording
                .and_then(|r| r.snapshots)
                .unwrap();
            assert!(recorded.len() > 10);
            assert!(
                streamed == write_snapshots(&recorded).into_bytes(),
                "{}",
                cfg.tag()
            );
            let mut files: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            // The run's manifest, written last, and no temporary file.
            assert_eq!(
                files,
                ["MANIFEST.json", "emulator.vcd", "ports.txt", "stimulus.txt"]
            );
        }
    }
}
