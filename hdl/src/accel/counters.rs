//! The hardware counters of `sa_accel`, one per
//! `sysgrad_isa::host::Counter`, each adding an increment of
//! [`INC_BITS`] per cycle. The increments count what `docs/COMMANDS.md`
//! charges: cycles per array mode, MACs and buffer words (lanes accessed)
//! per phase. Write-back words are charged to the phase of the pass that
//! produced them (`wb_ph`), though the last one lands in the next decode
//! cycle. The host interface's own counters are charged here; each
//! controller charges the others.

use super::results::WbPhase;
use super::sizes::{TILE_AREA_BITS, TILE_BITS};
use crate::ir::*;
use crate::params::CNT_BITS;
use sysgrad_isa::host::{Counter, AXIL_DATA_BITS, MAX_COUNTER_BITS};

/// The largest increment is an interleaved pass's MACs per cycle,
/// `2 m k`: one bit more than a tile's area.
const INC_BITS: u32 = TILE_AREA_BITS + 1;

/// `e` (`bits` wide) zero-extended to an increment.
pub(super) fn widen(e: impl Into<Expr>, bits: u32) -> Expr {
    cat([zeros((INC_BITS - bits) as i64), e.into()])
}

pub(super) fn nothing() -> Expr {
    lit(INC_BITS, 0)
}

/// `on ? v : 0` for a lane count `v` (a tile-size field).
pub(super) fn lanes_if(on: impl Into<Expr>, v: impl Into<Expr>) -> Expr {
    cond(on, widen(v, TILE_BITS), nothing())
}

pub(super) fn one_if(on: impl Into<Expr>) -> Expr {
    widen(on, 1)
}

/// The MACs of a tile's area `mk` per cycle, twice that interleaved.
pub(super) fn twice(mk: Net) -> Expr {
    cat([mk.e(), lit(1, 0)])
}

/// The write-back unit as the counters see it.
pub(super) struct WbCount {
    pub write: Net,
    pub ph: Net,
    pub acc: Net,
    pub lanes: Net,
}

impl WbCount {
    /// The lanes of a write-back line of pass `ph`, first write (`acc`
    /// false) or accumulating (`acc` true).
    pub fn words(&self, ph: WbPhase, acc: bool) -> Expr {
        let acc_e = if acc { self.acc.e() } else { !self.acc };
        lanes_if(
            self.write.and(self.ph.equals(ph.lit())).and(acc_e),
            self.lanes,
        )
    }
}

/// The host interface's nets its counters count.
pub(super) struct HostCounts {
    pub dma_wbeat: Net,
    pub m_v: Net,
    pub m_axis_tready: Net,
    pub dma_on: Net,
    pub dma_dir: Net,
    pub s_axis_tvalid: Net,
    pub ctl_running: Net,
}

impl HostCounts {
    /// The host interface's counters, the same for both controllers.
    pub fn increment(&self, c: Counter) -> Option<Expr> {
        use Counter::*;
        Some(match c {
            DmaInBeats => one_if(self.dma_wbeat),
            DmaOutBeats => one_if(self.m_v.and(self.m_axis_tready)),
            DmaInStalls => one_if(self.dma_on.and(!self.dma_dir).and(!self.s_axis_tvalid)),
            DmaOutStalls => one_if(self.m_v.and(!self.m_axis_tready)),
            HostIdleCycles => one_if((!self.ctl_running).and(!self.dma_on)),
            _ => return None,
        })
    }
}

/// The counter registers `cnt_<name>`: the host reads them before they
/// are built, so their handles come first.
pub(super) struct CounterRegs(Vec<(Counter, Net)>);

impl CounterRegs {
    pub fn named() -> CounterRegs {
        CounterRegs(
            Counter::ALL
                .iter()
                .map(|&c| (c, Net::named(&format!("cnt_{}", c.name()))))
                .collect(),
        )
    }
    pub fn of(&self, c: Counter) -> Net {
        self.0
            .iter()
            .find(|(k, _)| *k == c)
            .expect("every counter")
            .1
    }

    /// What the AXI4-Lite register of counter `c` reads: its bits `[32 *
    /// half, 32 * half + 32)`, zero above [`MAX_COUNTER_BITS`].
    pub fn half(&self, c: Counter, half: u32) -> Expr {
        let lo = half * AXIL_DATA_BITS;
        let hi = MAX_COUNTER_BITS.min(lo + AXIL_DATA_BITS);
        let value = self.of(c).bits(hi as i64 - 1, lo as i64);
        if hi - lo == AXIL_DATA_BITS {
            value
        } else {
            cat([zeros((lo + AXIL_DATA_BITS - hi) as i64), value])
        }
    }
}

/// The counters, each adding `increment(counter)` per cycle modulo
/// `2^CNT_BITS` (`host.counter_bits`), cleared by reset and `clear_req`.
/// Each register is [`MAX_COUNTER_BITS`] wide and masked to `CNT_BITS`
/// as it is written, so the width is an ordinary parameter: synthesis
/// removes the bits the mask holds at zero (all of them, with the adders
/// and the read-out, for `CNT_BITS = 0`). Returns the increments
/// (`inc_<name>`).
pub(super) fn build(
    m: &mut Scope,
    regs: &CounterRegs,
    rst: Net,
    clear_req: Net,
    increment: impl Fn(Counter) -> Expr,
) -> Vec<(Counter, Net)> {
    let bits = MAX_COUNTER_BITS as i64;
    m.comment("Counters (docs/HOST.md): cleared by reset and CTRL.CLEAR, CNT_BITS wide.");
    let mask = m.localparam(
        "CNT_MASK",
        Width::of(bits),
        // Never a shift by the operand's whole width (which strict tools
        // warn of): CNT_BITS = 0 is its own case.
        cond(
            CNT_BITS.equals(int(0)),
            lit(MAX_COUNTER_BITS, 0),
            ones(bits) >> (int(bits) - CNT_BITS),
        ),
    );
    let mut body = Vec::new();
    let mut incs = Vec::new();
    for c in Counter::ALL {
        let cnt = regs.of(c);
        m.define(reg_for(cnt, Width::of(bits)));
        let inc = m.wire_of(&format!("inc_{}", c.name()), INC_BITS, increment(c));
        let sum = cnt + cat([zeros(bits - INC_BITS as i64), inc.e()]);
        body.push(set(cnt, sum.bit_and(mask)));
        incs.push((c, inc));
    }
    let clear: Vec<Stmt> = Counter::ALL
        .iter()
        .map(|&c| set(regs.of(c), lit(MAX_COUNTER_BITS, 0)))
        .collect();
    m.clocked(vec![if_else(rst.or(clear_req), clear, body)]);
    incs
}
