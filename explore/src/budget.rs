//! What a sweep needs, estimated before it runs
//! ([`sysgrad_config::budget`]): every point is one layer's training step,
//! counted by the fast mode's ledger or, with random data, run in the fast
//! exact mode.

use crate::{points, Grid, Layer, Point, SweepData, SweepError};
use sysgrad_config::budget::Estimate;
use sysgrad_emulator::budget;

/// The whole sweep of `layers` over `grid`: the points' times shared by
/// the threads (but never less than the longest point), and the largest
/// point's memory times the threads that may hold one at once.
pub fn sweep(layers: &[Layer], grid: &Grid) -> Result<Estimate, SweepError> {
    Ok(sweep_points(&points(layers, grid)?, layers, grid))
}

/// Some points of a sweep (a shard of it, or all), as [`sweep`] estimates them.
pub fn sweep_points(points: &[Point], layers: &[Layer], grid: &Grid) -> Estimate {
    let count = points.len();
    let threads = rayon::current_num_threads().min(count.max(1)) as f64;
    let mut total = Estimate::none(format!("a sweep of {count} points"));
    let (mut largest, mut longest) = (0.0f64, 0.0f64);
    for p in points {
        let l = &layers[p.layer];
        let mkn = (l.m, l.k, l.n);
        let counted = budget::ledger(&p.cfg, mkn);
        let point = match grid.data {
            SweepData::Counters => counted,
            SweepData::Random { .. } => counted.and(&budget::fast_step(mkn)),
        };
        largest = largest.max(point.bytes);
        longest = longest.max(point.seconds);
        total = total.then(&point);
    }
    total.bytes = largest * threads;
    total.seconds = (total.seconds / threads).max(longest);
    let layer_names: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
    total.named(format!(
        "a sweep of {count} points (layers {})",
        layer_names.join(", ")
    ))
}
