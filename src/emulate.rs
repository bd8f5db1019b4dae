//! `sysgrad emulate`: one training step of a random layer, interleaved and
//! sequential, with the per-phase counters side by side.

use ndarray::Array2;
use sysgrad_config::Backward;
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{stats, Driver, Stats};
use sysgrad_testbench::scenario::Rng;

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
}

/// Forward + backward + update of one layer with `schedule`.
fn step(
    cfg: sysgrad_config::ArrayConfig,
    schedule: Backward,
    w: &Array2<i64>,
    x: &Array2<i64>,
    dy: &Array2<i64>,
    lr: u32,
) -> Result<Stats, String> {
    let mut drv = Driver::new(cfg);
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
    Ok(drv.stats)
}

pub fn run(a: &EmulateArgs) -> Result<(), String> {
    let mut cfg = a.config.load()?;
    if a.m == 0 || a.k == 0 || a.n == 0 {
        return Err(format!(
            "layer sizes must be at least 1 (got M={} K={} N={})",
            a.m, a.k, a.n
        ));
    }
    // Both schedules run on the interleaved array so that only the schedule differs.
    cfg.array.backward = Backward::Interleaved;
    let mut rng = Rng::new(a.seed);
    let bits = cfg.format.in_bits;
    let (w, x, dy) = (
        rng.matrix(a.m, a.k, bits),
        rng.matrix(a.k, a.n, bits),
        rng.matrix(a.m, a.n, bits),
    );
    let il = step(cfg, Backward::Interleaved, &w, &x, &dy, a.lr_shift)?;
    let seq = step(cfg, Backward::Sequential, &w, &x, &dy, a.lr_shift)?;
    println!(
        "# {} array, layer M={} K={} N={} (forward + backward + SGD update)\n",
        cfg.tag(),
        a.m,
        a.k,
        a.n
    );
    let pes = cfg.rows() * cfg.cols();
    print!(
        "{}",
        stats::markdown_table(&[("interleaved", &il), ("sequential", &seq)], pes)
    );
    let (bi, bs) = (il.backward(), seq.backward());
    println!(
        "\nbackward pass: {} cycles interleaved vs {} sequential ({:.2}x fewer); buffer accesses {} vs {} ({:.2}x fewer)",
        bi.cycles,
        bs.cycles,
        bs.cycles as f64 / bi.cycles as f64,
        bi.accesses(),
        bs.accesses(),
        bs.accesses() as f64 / bi.accesses() as f64
    );
    let (ti, ts) = (il.total(), seq.total());
    println!(
        "whole step:    {} cycles interleaved vs {} sequential ({:.2}x fewer)",
        ti.cycles,
        ts.cycles,
        ts.cycles as f64 / ti.cycles as f64
    );
    Ok(())
}
