//! What one pipeline run needs, estimated before it allocates
//! ([`sysgrad_config::budget`]): the cost table (every layer counted on
//! every distinct array) and the timeline (every task and message of every
//! unit of work, for the mini-batches [`Setup::figure_groups`] simulates).

use crate::setup::Setup;
use crate::sim::{Message, Task};
use sysgrad_config::budget::{f, Estimate};
use sysgrad_emulator::budget;
use sysgrad_emulator::fast::EngineKind;

/// Tasks per second the event-driven timeline schedules (with its
/// messages). Measured: `sysgrad pipeline --topology
/// workloads/topologies/resnet18.csv --scalesim-config
/// workloads/topologies/sysgrad_16x16.cfg --schedule spikepipe
/// --time-steps 4000` (about 1e6 tasks) in about 1 s.
pub const TASKS_PER_SECOND: f64 = 1e6;

/// The run `s` describes: counting, then the timeline (twice when
/// LayerPipe may move dW tasks and compares both), at the most
/// mini-batches the steady-state search may simulate (its last doubling;
/// the earlier ones together take as long again).
pub fn setup(s: &Setup) -> Estimate {
    let stages = f(s.system.stages());
    let most = f(1usize << crate::setup::MAX_DOUBLINGS);
    let units: f64 = most * s.figure_groups().iter().map(|&m| f(m)).sum::<f64>() * f(s.plan.chunks);
    // Per unit and stage: up to three tasks (F, dX, dW) and four messages
    // (activation, gradient, dW operands and result), and the simulator's
    // per-unit arrival times.
    let per_unit =
        3.0 * f(std::mem::size_of::<Task>()) + 4.0 * f(std::mem::size_of::<Message>()) + 64.0;
    let tasks = 3.0 * units * stages;
    let timeline = Estimate::new(
        "",
        2.0 * units * stages * per_unit,
        4.0 * tasks / TASKS_PER_SECOND,
    );
    let mut counting = Estimate::none("");
    for cfg in &s.system.arrays {
        for l in &s.work.layers {
            let columns = f(s.micro_batch_size) * f(l.n_per_sample) / f(s.plan.chunks.max(1));
            let mkn = (l.m, l.k, columns.min(usize::MAX as f64) as usize);
            let layer = match s.engine {
                EngineKind::Fast => budget::ledger(cfg, mkn).and(&budget::ledger(cfg, mkn)),
                EngineKind::Cycle => budget::cycle_steps(cfg, mkn, 1),
            };
            counting = counting.then(&layer);
        }
    }
    counting.then(&timeline).named(format!(
        "{} of {} on {} arrays ({} units of work per stage)",
        s.plan.label(),
        s.work.name,
        s.system.arrays.len(),
        units
    ))
}
