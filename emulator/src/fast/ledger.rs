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
use sysgrad_isa::count::{Count, Overflow};
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

/// The counters `count` charges on `Shapes` (no data), in closed form: the
/// tiles of a layer have at most four shapes, and every counter is a sum
/// over tiles of a product of the tile's sizes and N, so it is a product
/// of M, K, N and the tile counts. Checked: a layer whose counters exceed
/// `u64` is an overflow naming the counter, never a wrapped count, and it
/// costs no time however many tiles it has. `shape_count_is_the_walk`
/// (below) holds it equal to the walk, counter for counter, errors and
/// partial counters included.
pub fn shapes(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    (m, k, n): (usize, usize, usize),
    layer: Layer,
) -> Result<(), DriveError> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let (tm, tk) = (m.div_ceil(c), k.div_ceil(r));
    if tm == 0 || tk == 0 {
        return Ok(());
    }
    // The walk's checks on its first tile, after its LOAD.
    let first_check = match layer {
        Layer::Backward(Backward::Interleaved, _) if !cfg.interleaved() => {
            Err(DriveError::NotInterleaved)
        }
        _ if n == 0 => Err(DriveError::EmptyStream),
        _ => Ok(()),
    };
    if let Err(e) = first_check {
        let mut partial = Stats::default();
        let mut ledger = Ledger {
            stats: &mut partial,
            cfg: *cfg,
        };
        ledger.load(m.min(c), k.min(r));
        stats.checked_add(&partial)?;
        return Err(e);
    }
    let mut t = Tally::default();
    let tiles = Count::from(tm) * tk;
    let (mc, kc, nc) = (Count::from(m), Count::from(k), Count::from(n));
    let q = cfg.product_stages();
    let each = |cycles: timing::Cycles| tiles * cycles.count(r, c, q, n as u64);
    let pass = each(timing::PASS);
    match layer {
        Layer::Forward => {
            t.add(Phase::Load, Field::Cycles, each(timing::LOAD));
            t.add(Phase::Load, Field::WReads, mc * kc);
            t.add(Phase::Forward, Field::Cycles, pass);
            t.add(Phase::Forward, Field::XReads, Count::from(tm) * kc * nc);
            t.add(Phase::Forward, Field::Macs, mc * kc * nc);
            t.add(Phase::Forward, Field::YWrites, mc * nc);
            let later = Count::from(tk - 1) * mc * nc;
            t.add(Phase::Forward, Field::AccReads, later);
            t.add(Phase::Forward, Field::AccWrites, later);
        }
        Layer::Backward(schedule, sink) => {
            let update = matches!(sink, DwSink::Update { .. });
            // With an update, an empty tile's LOAD shifts the last one out.
            let loads = tiles + u64::from(update);
            let load_cycles = timing::LOAD.count(r, c, q, 0);
            t.add(Phase::Load, Field::Cycles, loads * load_cycles);
            t.add(Phase::Load, Field::WReads, mc * kc);
            if update {
                t.add(Phase::Load, Field::WWrites, mc * kc);
            }
            let (modes, dx_phase): (&[(Mode, Phase)], Phase) = match schedule {
                Backward::Interleaved => (
                    &[(Mode::BwdIl, Phase::BackwardInterleaved)],
                    Phase::BackwardInterleaved,
                ),
                Backward::Sequential => (
                    &[
                        (Mode::BwdDx, Phase::BackwardDx),
                        (Mode::BwdDw, Phase::BackwardDw),
                    ],
                    Phase::BackwardDx,
                ),
            };
            for &(mode, phase) in modes {
                t.add(phase, Field::Cycles, pass);
                if mode.computes_dw() {
                    t.add(phase, Field::XReads, Count::from(tm) * kc * nc);
                }
                t.add(phase, Field::DyReads, Count::from(tk) * mc * nc);
                let multipliers = if mode == Mode::BwdIl { 2u64 } else { 1 };
                t.add(phase, Field::Macs, mc * kc * nc * multipliers);
            }
            t.add(dx_phase, Field::DxWrites, kc * nc);
            let later = Count::from(tm - 1) * kc * nc;
            t.add(dx_phase, Field::AccReads, later);
            t.add(dx_phase, Field::AccWrites, later);
            if update {
                t.add(Phase::Update, Field::Cycles, each(timing::UPDATE));
            } else {
                t.add(Phase::Drain, Field::Cycles, each(timing::DRAIN));
                t.add(Phase::Drain, Field::DwWrites, mc * kc);
            }
        }
    }
    stats.checked_add(&t.stats()?)?;
    Ok(())
}

/// The counters [`Tally`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Cycles,
    Macs,
    WReads,
    XReads,
    DyReads,
    WWrites,
    YWrites,
    DxWrites,
    DwWrites,
    AccReads,
    AccWrites,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Cycles => "cycles",
            Field::Macs => "MACs",
            Field::WReads => "weight reads",
            Field::XReads => "X reads",
            Field::DyReads => "dY reads",
            Field::WWrites => "weight writes",
            Field::YWrites => "Y writes",
            Field::DxWrites => "dX writes",
            Field::DwWrites => "dW writes",
            Field::AccReads => "partial-sum reads",
            Field::AccWrites => "partial-sum writes",
        }
    }
}

/// Per-phase counters as checked [`Count`]s, read out once at the end.
#[derive(Default)]
struct Tally(Vec<(Phase, Field, Count)>);

impl Tally {
    fn add(&mut self, phase: Phase, field: Field, v: Count) {
        self.0.push((phase, field, v));
    }

    fn stats(&self) -> Result<Stats, Overflow> {
        let mut st = Stats::default();
        for &(phase, field, v) in &self.0 {
            let c = st.phase_mut(phase);
            let slot = match field {
                Field::Cycles => &mut c.cycles,
                Field::Macs => &mut c.macs,
                Field::WReads => &mut c.w_reads,
                Field::XReads => &mut c.x_reads,
                Field::DyReads => &mut c.dy_reads,
                Field::WWrites => &mut c.w_writes,
                Field::YWrites => &mut c.y_writes,
                Field::DxWrites => &mut c.dx_writes,
                Field::DwWrites => &mut c.dw_writes,
                Field::AccReads => &mut c.acc_reads,
                Field::AccWrites => &mut c.acc_writes,
            };
            *slot = (v + *slot).get(format!(
                "the {} {} of the layer",
                phase.name(),
                field.name()
            ))?;
        }
        st.checked_totals()?;
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::operands::Shapes;
    use proptest::prelude::*;
    use sysgrad_config::NumberFormat;

    fn cfg(rows: usize, cols: usize, interleaved: bool) -> ArrayConfig {
        let b = if interleaved {
            Backward::Interleaved
        } else {
            Backward::Sequential
        };
        let format = NumberFormat {
            in_bits: 16,
            acc_bits: 40,
            frac_bits: 8,
        };
        ArrayConfig::new(rows, cols, b, format).unwrap()
    }

    fn layers() -> impl Strategy<Value = Layer> {
        prop_oneof![
            Just(Layer::Forward),
            Just(Layer::Backward(Backward::Interleaved, DwSink::Drain)),
            Just(Layer::Backward(Backward::Sequential, DwSink::Drain)),
            Just(Layer::Backward(
                Backward::Interleaved,
                DwSink::Update { lr_shift: 3 }
            )),
            Just(Layer::Backward(
                Backward::Sequential,
                DwSink::Update { lr_shift: 3 }
            )),
        ]
    }

    proptest! {
        /// The closed form against the tile walk (the reference, which
        /// `tests/fast_vs_cycle.rs` holds against the clocked driver).
        #[test]
        fn shape_count_is_the_walk(
            rows in 1usize..6, cols in 1usize..6, interleaved: bool,
            m in 0usize..20, k in 0usize..20, n in 0usize..9,
            layer in layers(),
        ) {
            let cfg = cfg(rows, cols, interleaved);
            let (mut walked, mut closed) = (Stats::default(), Stats::default());
            let a = count(&mut walked, &cfg, (m, k, n), layer, &Shapes);
            let b = shapes(&mut closed, &cfg, (m, k, n), layer);
            prop_assert_eq!(a, b);
            prop_assert_eq!(walked, closed);
        }
    }

    /// Sizes no memory holds are counted at once, or refused as overflow.
    #[test]
    fn huge_layers_count_or_overflow_at_once() {
        let cfg = cfg(16, 16, true);
        let mut st = Stats::default();
        shapes(&mut st, &cfg, (1 << 40, 1 << 20, 1), Layer::Forward).unwrap();
        assert_eq!(st.total().macs, 1 << 60);
        let before = st.clone();
        let e = shapes(&mut st, &cfg, (1 << 40, 1 << 40, 1), Layer::Forward).unwrap_err();
        assert!(matches!(e, DriveError::Overflow(_)), "{e}");
        assert_eq!(st, before, "an overflow leaves the counters as they were");
        let layer = Layer::Backward(Backward::Interleaved, DwSink::Drain);
        let e = shapes(&mut st, &cfg, (16, 16, usize::MAX), layer).unwrap_err();
        assert!(e.to_string().contains("exceed 2^64 - 1"), "{e}");
    }
}
