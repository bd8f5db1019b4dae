//! The counters of a layer on a `none` array without clocking: the tiles
//! are walked in `gemm`'s order and every `Driver` operation charges
//! exactly what the driver would (its counts depend on tile shapes only).
//! Operand checks are made at the same points, so a bad layer fails with
//! the same error and leaves the same partial counters as the
//! cycle-accurate path. The words and MACs it counts are those of every
//! pipelining (the dense ledger, `dense.rs`, takes them from here).

use super::operands::{Layer, Operands};
use crate::driver::DriveError;
use crate::gemm::{tiles, DwSink};
use crate::stats::{Counters, Phase, Stats};
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_isa::{timing, Mode};

/// The counters of `layer` (M x K x N) on a `none` array (inner sizes and
/// `lr_shift` already checked).
pub fn count(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    mkn: (usize, usize, usize),
    layer: Layer,
    ops: &impl Operands,
) -> Result<(), DriveError> {
    match layer {
        Layer::Forward => forward(stats, cfg, mkn, ops),
        Layer::Backward(schedule, sink) => backward(stats, cfg, schedule, mkn, sink, ops),
    }
}

/// The `Driver` operations, charging counters instead of clocking.
struct Ledger<'a> {
    stats: &'a mut Stats,
    cfg: ArrayConfig,
}

impl Ledger<'_> {
    /// `cycles` for this array and a stream of `n` columns.
    fn cost(&self, cycles: timing::Cycles, n: usize) -> u64 {
        cycles.eval(&self.cfg, n)
    }

    /// `Driver::load` of an `mt` x `kt` tile (values already checked).
    fn load(&mut self, mt: usize, kt: usize) {
        let cycles = self.cost(timing::LOAD, 0);
        let st = self.stats.phase_mut(Phase::Load);
        st.cycles += cycles;
        st.w_reads += (mt * kt) as u64;
    }

    /// `gemm`'s `store`: the updated tile that a LOAD shifted out.
    fn store(&mut self, tile: Option<(usize, usize)>) {
        if let Some((mt, kt)) = tile {
            self.stats.phase_mut(Phase::Load).w_writes += (mt * kt) as u64;
        }
    }

    /// A streaming pass of `n` columns through an `mt` x `kt` tile.
    fn pass(&mut self, mode: Mode, mt: usize, kt: usize, n: usize) {
        let cycles = self.cost(timing::PASS, n);
        let phase = match mode {
            Mode::Fwd => Phase::Forward,
            Mode::BwdDx => Phase::BackwardDx,
            Mode::BwdDw => Phase::BackwardDw,
            Mode::BwdIl => Phase::BackwardInterleaved,
            _ => unreachable!("pass() takes a streaming mode"),
        };
        let st = self.stats.phase_mut(phase);
        st.cycles += cycles;
        let (mt, kt, n) = (mt as u64, kt as u64, n as u64);
        let streams_x = mode == Mode::Fwd || mode.computes_dw();
        if streams_x {
            st.x_reads += kt * n;
        }
        if mode != Mode::Fwd {
            st.dy_reads += mt * n;
        }
        let multipliers = if mode == Mode::BwdIl { 2 } else { 1 };
        st.macs += multipliers * mt * kt * n;
    }

    /// `gemm`'s `accumulate` of `len` words: the first tile writes, later
    /// ones read-modify-write the accumulator buffer.
    fn accumulate(
        &mut self,
        phase: Phase,
        first: bool,
        len: usize,
        write: fn(&mut Counters) -> &mut u64,
    ) {
        let st = self.stats.phase_mut(phase);
        let len = len as u64;
        if first {
            *write(st) += len;
        } else {
            st.acc_reads += len;
            st.acc_writes += len;
        }
    }

    /// `Driver::drain` after an `mt` x `kt` tile: only its words are written.
    fn drain(&mut self, mt: usize, kt: usize) {
        let cycles = self.cost(timing::DRAIN, 0);
        let st = self.stats.phase_mut(Phase::Drain);
        st.cycles += cycles;
        st.dw_writes += (mt * kt) as u64;
    }

    fn update(&mut self) {
        let cycles = self.cost(timing::UPDATE, 0);
        self.stats.phase_mut(Phase::Update).cycles += cycles;
    }
}

/// The counters of `gemm::forward` on an M x K x N layer.
fn forward(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    (m, k, n): (usize, usize, usize),
    ops: &impl Operands,
) -> Result<(), DriveError> {
    let mut ledger = Ledger { stats, cfg: *cfg };
    for (m0, mt) in tiles(m, cfg.cols()) {
        for (k0, kt) in tiles(k, cfg.rows()) {
            ops.check_w((m0, mt), (k0, kt))?;
            ledger.load(mt, kt);
            // X slices are the same for every tile row: checked on the first.
            if m0 == 0 {
                ops.check_x((k0, kt))?;
            }
            if n == 0 {
                return Err(DriveError::EmptyStream);
            }
            ledger.pass(Mode::Fwd, mt, kt, n);
            ledger.accumulate(Phase::Forward, k0 == 0, mt * n, |c| &mut c.y_writes);
        }
    }
    Ok(())
}

/// The checks `Driver::backward` makes before streaming, in its order.
fn check_pass(
    cfg: &ArrayConfig,
    mode: Mode,
    n: usize,
    (m0, mt, k0, kt): (usize, usize, usize, usize),
    ops: &impl Operands,
) -> Result<(), DriveError> {
    if mode == Mode::BwdIl && !cfg.interleaved() {
        return Err(DriveError::NotInterleaved);
    }
    // dY rows of a tile row are checked on its first tile, X on the first row.
    if k0 == 0 {
        ops.check_dy((m0, mt))?;
    }
    if n == 0 {
        return Err(DriveError::EmptyStream);
    }
    if mode.computes_dw() && m0 == 0 {
        ops.check_x((k0, kt))?;
    }
    Ok(())
}

/// The counters of `gemm::backward`.
fn backward(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    schedule: Backward,
    (m, k, n): (usize, usize, usize),
    sink: DwSink,
    ops: &impl Operands,
) -> Result<(), DriveError> {
    let mut ledger = Ledger { stats, cfg: *cfg };
    let modes: &[Mode] = match schedule {
        Backward::Interleaved => &[Mode::BwdIl],
        Backward::Sequential => &[Mode::BwdDx, Mode::BwdDw],
    };
    let dx_phase = match schedule {
        Backward::Interleaved => Phase::BackwardInterleaved,
        Backward::Sequential => Phase::BackwardDx,
    };
    let mut pending = None;
    for (m0, mt) in tiles(m, cfg.cols()) {
        for (k0, kt) in tiles(k, cfg.rows()) {
            ops.check_w((m0, mt), (k0, kt))?;
            ledger.load(mt, kt);
            ledger.store(pending.take());
            for &mode in modes {
                check_pass(cfg, mode, n, (m0, mt, k0, kt), ops)?;
                ledger.pass(mode, mt, kt, n);
            }
            ledger.accumulate(dx_phase, m0 == 0, kt * n, |c| &mut c.dx_writes);
            match sink {
                DwSink::Drain => ledger.drain(mt, kt),
                DwSink::Update { .. } => {
                    ledger.update();
                    pending = Some((mt, kt));
                }
            }
        }
    }
    if pending.is_some() {
        // The last updated tile leaves by loading an empty tile.
        ledger.load(0, 0);
        ledger.store(pending);
    }
    Ok(())
}
