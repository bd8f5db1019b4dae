//! What a training run or a topology count needs, estimated before it
//! allocates ([`sysgrad_config::budget`]), from the shapes this crate
//! derives (`report::layers::gemm_shapes`, the topology's layers). The
//! per-layer costs are `sysgrad_emulator::budget`'s.

use crate::model::Model;
use crate::report::layers::gemm_shapes;
use crate::scalesim::{Exactness, Topology};
use crate::train::TrainOptions;
use sysgrad_config::budget::{f, Estimate};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::budget;
use sysgrad_emulator::fast::EngineKind;

/// Memory a topology layer takes in a count and its reports (the layer,
/// its counters in three schedules, its energy and off-chip rows and their
/// report lines). Measured: a depthwise row of 10,000 channels (10,000
/// layers) on the 16x16 .cfg peaks at about 230 MB.
pub const TOPOLOGY_LAYER_BYTES: f64 = 23e3;

/// Counting every layer of `topo` with samples of `batch` on `cfg`, as
/// `scalesim::run_topology_with` does (forward and both backward
/// schedules per layer), and holding its reports.
pub fn topology(topo: &Topology, cfg: &ArrayConfig, batch: usize, how: Exactness) -> Estimate {
    let mut e = Estimate::none(format!(
        "counting the {} layers of topology {} (batch {batch}) on the {}x{} array",
        topo.layers.len(),
        topo.name,
        cfg.rows(),
        cfg.cols()
    ));
    for l in &topo.layers {
        let g = l.gemm;
        let mkn = (g.m, g.k, g.n.saturating_mul(batch));
        let n = f(g.n) * f(batch);
        let layer = match how {
            // Three walks of the tiles (forward, interleaved, sequential)
            // and the mapping efficiency's.
            Exactness::FastLedger => {
                let walk = budget::ledger(cfg, mkn);
                Estimate::new("", 0.0, 2.0 * walk.seconds)
            }
            // Three clocked runs on zero operands.
            Exactness::Stepped => {
                let mut run = budget::cycle_steps(cfg, mkn, 1);
                run.bytes = 8.0 * (f(g.m) * f(g.k) + (f(g.k) + f(g.m)) * n);
                run
            }
        };
        e = e.then(&layer);
    }
    e.bytes += f(topo.layers.len()) * TOPOLOGY_LAYER_BYTES;
    e
}

/// The first `steps` training steps of `m` on the emulated accelerator
/// with its port trace recorded for a replay on the RTL (`train --engine
/// rtl`): each step clocked twice (the accelerator and the array engine
/// it is checked against) and every cycle's ports held. Returns the
/// estimate and the run cycles, which the RTL replay clocks again.
pub fn accel_steps(m: &Model, steps: usize) -> (Estimate, f64) {
    let batch = m.spec.training.batch_size;
    let (mut bytes, mut seconds, mut cycles) = (0.0, 0.0, 0.0);
    for g in gemm_shapes(m, batch).iter().flatten() {
        let mkn = (g.m, g.k, g.n);
        seconds += 2.0 * budget::cycle_steps(&m.cfg, mkn, 1).seconds;
        bytes += budget::recording(&m.cfg, mkn).bytes;
        cycles += budget::step_cycles(&m.cfg, mkn);
    }
    let e = Estimate::new(
        format!(
            "{steps} recorded training step(s) of {} on the {}x{} accelerator",
            m.spec.name,
            m.cfg.rows(),
            m.cfg.cols()
        ),
        f(steps) * bytes,
        f(steps) * seconds,
    );
    (e, f(steps) * cycles)
}

/// Training `m` on `train` samples (testing on `test`) with `opts`: the
/// weights, gradients and activations held, and every step's products on
/// the array model `opts.engine` (and on the accelerator, with one).
pub fn training(m: &Model, opts: &TrainOptions, train: usize, test: usize) -> Estimate {
    let t = m.spec.training;
    let epochs = opts.epochs.unwrap_or(t.epochs);
    let train = opts.max_train.map_or(train, |n| n.min(train));
    let test = opts.max_test.map_or(test, |n| n.min(test));
    let steps = f(epochs) * f(train.div_ceil(t.batch_size.max(1)));
    let evals = f(epochs) * f(test.div_ceil(opts.eval_batch.max(1)));
    let sequential = f(opts.sequential_epochs.min(epochs)) / f(epochs.max(1));
    let shapes = gemm_shapes(m, t.batch_size);
    let (mut bytes, mut step_seconds) = (0.0, 0.0);
    for g in shapes.iter().flatten() {
        let mkn = (g.m, g.k, g.n);
        // Weights in fixed point and in the f32 reference, with their
        // gradients; the layer's input and output kept for the backward.
        bytes += f(g.m) * f(g.k) * (8.0 + 8.0 + 4.0 + 4.0) + (f(g.k) + f(g.m)) * f(g.n) * 12.0;
        let one = match opts.engine {
            EngineKind::Cycle => budget::cycle_steps(&m.cfg, mkn, 1).seconds,
            EngineKind::Fast => budget::fast_step(mkn).seconds,
        };
        // The sequential baseline's backward passes, in its epochs.
        let one = one * (1.0 + sequential);
        step_seconds += match opts.accelerator {
            Some(_) => 2.0 * one,
            None => one,
        };
    }
    // Average pooling and residual additions: their outputs, kept in both
    // number systems until their last reader (a graph keeps a residual
    // branch's value alive across the block).
    let cols = f(t.batch_size) * f(m.spec.input.time_steps);
    for (i, l) in m.spec.layers.iter().enumerate() {
        use crate::model::LayerSpec;
        if matches!(
            l,
            LayerSpec::AvgPool { .. } | LayerSpec::GlobalAvgPool | LayerSpec::Add
        ) {
            bytes += f(m.shapes[i + 1].size()) * cols * 12.0;
        }
    }
    // An evaluation is a forward pass: a third of a step's products.
    let seconds = step_seconds * (steps + evals / 3.0);
    Estimate::new(
        format!(
            "training {} ({} layers, {epochs} epochs of {train} samples in batches of {}) on the {}x{} array",
            m.spec.name,
            m.spec.layers.len(),
            t.batch_size,
            m.cfg.rows(),
            m.cfg.cols()
        ),
        bytes,
        seconds,
    )
}
