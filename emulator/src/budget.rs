//! What a layer costs this crate in memory and time, estimated from its
//! sizes before anything is allocated ([`sysgrad_config::budget`]). The
//! sizes are taken as given (no product of them is formed in `usize`), so
//! a layer of 2^32 x 2^32 gets an estimate, not an overflow.
//!
//! The rates are measured on a 2-core machine shared with other jobs (the
//! command next to each); a faster machine runs within the estimate.

use sysgrad_config::budget::{f, Estimate};
use sysgrad_config::ArrayConfig;

/// PE-cycles per second of the cycle-accurate model (`Driver`).
/// Measured: `sysgrad emulate --m 3000 --k 3000 --n 1` (four steps on the
/// 16x16 array, about 4e9 PE-cycles) in 17 s.
pub const PE_CYCLES_PER_SECOND: f64 = 2.5e8;

/// Weight tiles per second the fast mode's ledger walks (forward and
/// backward of one tile). Measured: `sysgrad sweep --sizes 4x4 --layers
/// fc1:20000x20000x64 --in-bits 8 --backward interleaved` (2.5e7 tiles)
/// in 0.8 s.
pub const LEDGER_TILES_PER_SECOND: f64 = 3e7;

/// Multiply-accumulates per second of the fast exact mode's numerics.
pub const FAST_MACS_PER_SECOND: f64 = 1e9;

/// Bytes of one matrix element (`i64`).
const WORD: f64 = 8.0;

/// Weight tiles of an M x K layer on `cfg`'s array.
pub fn tiles(cfg: &ArrayConfig, (m, k, _): (usize, usize, usize)) -> f64 {
    f(m.div_ceil(cfg.cols())) * f(k.div_ceil(cfg.rows()))
}

/// Cycles of one training step (forward, backward, update) of an M x K x N
/// layer, from above: per tile two LOADs, a forward pass, two backward
/// passes (the sequential schedule's), a drain and the update, and the
/// last results' way out of the array. A dense array overlaps them, so
/// this bounds it too (`tests` below hold it to both, within 4x).
pub fn step_cycles(cfg: &ArrayConfig, mkn: (usize, usize, usize)) -> f64 {
    let (r, c, n) = (f(cfg.rows()), f(cfg.cols()), f(mkn.2));
    let pass = n + r + c;
    tiles(cfg, mkn) * (2.0 * r + 3.0 * pass + c + 2.0) + r + c
}

/// The operands and results of one step held at once: W and its update,
/// X and dX, dY, Y and the accumulators (M x N).
pub fn operand_bytes((m, k, n): (usize, usize, usize)) -> f64 {
    let (m, k, n) = (f(m), f(k), f(n));
    WORD * (2.0 * m * k + 2.0 * k * n + 3.0 * m * n)
}

/// `steps` training steps of one layer on the cycle-accurate model.
pub fn cycle_steps(cfg: &ArrayConfig, mkn: (usize, usize, usize), steps: usize) -> Estimate {
    let pe_cycles = f(steps) * step_cycles(cfg, mkn) * f(cfg.rows() * cfg.cols());
    Estimate::new(
        format!(
            "{steps} cycle-accurate training step(s) of M={} K={} N={} on the {}x{} array",
            mkn.0,
            mkn.1,
            mkn.2,
            cfg.rows(),
            cfg.cols()
        ),
        operand_bytes(mkn),
        pe_cycles / PE_CYCLES_PER_SECOND,
    )
}

/// Recording one step's ports cycle by cycle (`Driver::recording`): each
/// cycle's inputs and outputs (X, W, dY in; Y, dX, dW, W out) held, then
/// rendered as text of about the same size.
pub fn recording(cfg: &ArrayConfig, mkn: (usize, usize, usize)) -> Estimate {
    let (r, c) = (f(cfg.rows()), f(cfg.cols()));
    let per_cycle = 2.0 * (WORD * (3.0 * r + 4.0 * c) + 256.0);
    Estimate::new(
        "recording the step's ports",
        step_cycles(cfg, mkn) * per_cycle,
        0.0,
    )
}

/// One training step of one layer counted by the fast mode's ledger (no
/// operands: the counts depend on the shapes only).
pub fn ledger(cfg: &ArrayConfig, mkn: (usize, usize, usize)) -> Estimate {
    Estimate::new(
        format!(
            "counting M={} K={} N={} on the {}x{} array",
            mkn.0,
            mkn.1,
            mkn.2,
            cfg.rows(),
            cfg.cols()
        ),
        0.0,
        tiles(cfg, mkn) / LEDGER_TILES_PER_SECOND,
    )
}

/// One training step of one layer in the fast exact mode: the operands,
/// and three products' multiply-accumulates.
pub fn fast_step(mkn: (usize, usize, usize)) -> Estimate {
    let macs = 3.0 * f(mkn.0) * f(mkn.1) * f(mkn.2);
    Estimate::new(
        format!(
            "a fast exact training step of M={} K={} N={}",
            mkn.0, mkn.1, mkn.2
        ),
        operand_bytes(mkn),
        macs / FAST_MACS_PER_SECOND,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_beyond_usize_products_are_estimated_not_wrapped() {
        let cfg = ArrayConfig::default_16x16();
        let huge = 1usize << 32;
        let e = cycle_steps(&cfg, (huge, huge, huge), 1);
        assert!(e.bytes > 1e20 && e.seconds > 1e20, "{e:?}");
    }

    /// The clocked cycles of one step (forward, sequential backward with
    /// the update) of an M x K x N layer on `cfg`.
    fn clocked(cfg: ArrayConfig, (m, k, n): (usize, usize, usize)) -> u64 {
        use crate::{gemm, Driver};
        use sysgrad_config::Backward;
        let mut rng = sysgrad_rng::Rng::new(3);
        let bits = cfg.format().in_bits;
        let (w, x, dy) = (
            rng.matrix(m, k, bits),
            rng.matrix(k, n, bits),
            rng.matrix(m, n, bits),
        );
        let mut drv = Driver::new(cfg.with_backward(Backward::Sequential));
        gemm::forward(&mut drv, w.view(), x.view()).unwrap();
        let sink = gemm::DwSink::Update { lr_shift: 4 };
        let schedule = Backward::Sequential;
        gemm::backward(&mut drv, schedule, w.view(), x.view(), dy.view(), sink).unwrap();
        drv.cycle()
    }

    #[test]
    fn the_step_bound_is_at_least_the_clocked_cycles_and_close_to_them() {
        let base = ArrayConfig::default_16x16();
        for p in [
            sysgrad_config::Pipelining::None,
            sysgrad_config::Pipelining::Dense,
        ] {
            let cfg = base.with_pipelining(p).unwrap();
            for mkn in [(40, 20, 5), (16, 16, 1), (100, 70, 64), (3, 200, 300)] {
                let (bound, real) = (step_cycles(&cfg, mkn), clocked(cfg, mkn) as f64);
                assert!(
                    bound >= real && bound <= 4.0 * real,
                    "{p:?} {mkn:?}: {bound} vs {real}"
                );
            }
        }
    }
}
