//! The hardware counters of `sa_accel`, one per
//! `sysgrad_isa::host::Counter`, each adding an increment of
//! [`INC_BITS`] per cycle. The increments count what `docs/COMMANDS.md` charges: cycles
//! per array mode, MACs and buffer words (lanes accessed) per phase.
//! Write-back words are charged to the phase of the pass that produced
//! them (`wb_ph`), though the last one lands in the next decode cycle.

use super::datapath::WbPhase;
use super::sizes::{TILE_AREA_BITS, TILE_BITS};
use super::{reg_of, wire_of};
use crate::ir::*;
use sysgrad_isa::host::{Counter, AXIL_DATA_BITS, MAX_COUNTER_BITS};

/// The largest increment is an interleaved pass's MACs per cycle,
/// `2 m k`: one bit more than a tile's area.
const INC_BITS: u32 = TILE_AREA_BITS + 1;

/// `e` (`bits` wide) zero-extended to an increment.
pub(super) fn widen(e: Expr, bits: u32) -> Expr {
    cat([zeros((INC_BITS - bits) as i64), e])
}

pub(super) fn nothing() -> Expr {
    lit(INC_BITS, 0)
}

/// `on ? v : 0` for a lane count `v` (a tile-size field).
pub(super) fn lanes_if(on: Expr, v: &str) -> Expr {
    cond(on, widen(id(v), TILE_BITS), nothing())
}

pub(super) fn one_if(on: Expr) -> Expr {
    widen(on, 1)
}

fn mode_is(m: &str) -> Expr {
    id("arr_mode").equals(m)
}

/// A write-back line of pass `ph`, first write (`acc` false) or
/// accumulating (`acc` true).
pub(super) fn wb_line(ph: WbPhase, acc: bool) -> Expr {
    let acc_e = if acc { id("wb_acc") } else { !id("wb_acc") };
    id("wb_write").and(id("wb_ph").equals(ph.lit())).and(acc_e)
}

fn pass(m: &str) -> Expr {
    id("is_backward").and(id("pass_mode").equals(m))
}

/// The host interface's counters, the same for both controllers.
pub(super) fn host_increment(c: Counter) -> Option<Expr> {
    use Counter::*;
    Some(match c {
        DmaInBeats => one_if(id("dma_wbeat")),
        DmaOutBeats => one_if(id("m_v").and("m_axis_tready")),
        DmaInStalls => one_if(id("dma_on").and(!id("dma_dir")).and(!id("s_axis_tvalid"))),
        DmaOutStalls => one_if(id("m_v").and(!id("m_axis_tready"))),
        HostIdleCycles => one_if((!id("ctl_running")).and(!id("dma_on"))),
        _ => return None,
    })
}

/// What the `none` controller charges each counter in a cycle.
pub(super) fn none_increment(c: Counter) -> Expr {
    use Counter::*;
    if let Some(e) = host_increment(c) {
        return e;
    }
    let stream_in = |m: &str| id("stream").and(pass(m));
    let mk = || widen(id("res_mk"), TILE_AREA_BITS);
    match c {
        RunCycles => one_if(id("ctl_running")),
        IdleCycles => one_if(id("ctl_running").and(mode_is("M_IDLE"))),
        LoadCycles => one_if(mode_is("M_LOAD")),
        FwdCycles => one_if(mode_is("M_FWD")),
        DxCycles => one_if(mode_is("M_BWD_DX")),
        DwCycles => one_if(mode_is("M_BWD_DW")),
        IlCycles => one_if(mode_is("M_BWD_IL")),
        UpdateCycles => one_if(mode_is("M_UPDATE")),
        DrainCycles => one_if(mode_is("M_DRAIN")),
        FwdMacs => cond(id("stream").and("is_forward"), mk(), nothing()),
        DxMacs => cond(stream_in("M_BWD_DX"), mk(), nothing()),
        DwMacs => cond(stream_in("M_BWD_DW"), mk(), nothing()),
        IlMacs => cond(
            stream_in("M_BWD_IL"),
            cat([id("res_mk"), lit(1, 0)]),
            nothing(),
        ),
        LoadWReads => lanes_if(id("w_on"), "f_m"),
        LoadWWrites => lanes_if(id("wback"), "res_m"),
        FwdXReads => lanes_if(id("x_on").and("is_forward"), "res_k"),
        FwdYWrites => lanes_if(wb_line(WbPhase::Forward, false), "wb_lanes"),
        FwdAccReads | FwdAccWrites => lanes_if(wb_line(WbPhase::Forward, true), "wb_lanes"),
        DxDyReads => lanes_if(id("dy_on").and(pass("M_BWD_DX")), "res_m"),
        DxDxWrites => lanes_if(wb_line(WbPhase::Dx, false), "wb_lanes"),
        DxAccReads | DxAccWrites => lanes_if(wb_line(WbPhase::Dx, true), "wb_lanes"),
        DwDyReads => lanes_if(id("dy_on").and(pass("M_BWD_DW")), "res_m"),
        DwXReads => lanes_if(id("x_on").and(pass("M_BWD_DW")), "res_k"),
        IlDyReads => lanes_if(id("dy_on").and(pass("M_BWD_IL")), "res_m"),
        IlXReads => lanes_if(id("x_on").and(pass("M_BWD_IL")), "res_k"),
        IlDxWrites => lanes_if(wb_line(WbPhase::Interleaved, false), "wb_lanes"),
        IlAccReads | IlAccWrites => lanes_if(wb_line(WbPhase::Interleaved, true), "wb_lanes"),
        DrainDwWrites => lanes_if(id("drain_wr"), "res_k"),
        DecodeCycles => one_if(id("in_dec").or("in_dec2")),
        RequantCycles => one_if(id("req_wr")),
        RequantWords => cond(
            "req_wr",
            widen(cond("f_flag", "MAX_M", "MAX_K"), TILE_BITS),
            nothing(),
        ),
        Syncs => one_if(id("dec_go").and("is_sync")),
        Commands => one_if(id("dec_go")),
        LoadSlots => one_if(mode_is("M_LOAD")),
        DmaInBeats | DmaOutBeats | DmaInStalls | DmaOutStalls | HostIdleCycles => {
            unreachable!("host counters")
        }
    }
}

/// The counters, each adding `increment(counter)` per cycle modulo
/// `2^CNT_BITS` (`host.counter_bits`). Each register is
/// [`MAX_COUNTER_BITS`] wide and masked to `CNT_BITS` as it is written, so
/// the width is an ordinary parameter: synthesis removes the bits the mask
/// holds at zero (all of them, with the adders and the read-out, for
/// `CNT_BITS = 0`).
pub(super) fn items(increment: impl Fn(Counter) -> Expr) -> Vec<Item> {
    let bits = MAX_COUNTER_BITS as i64;
    let mut v = vec![
        Item::Comment(
            "Counters (docs/HOST.md): cleared by reset and CTRL.CLEAR, CNT_BITS wide.".into(),
        ),
        localparam(
            "CNT_MASK",
            Width::of(bits),
            (lit(MAX_COUNTER_BITS, 1) << id("CNT_BITS")) - lit(MAX_COUNTER_BITS, 1),
        ),
    ];
    let mut body = Vec::new();
    for c in Counter::ALL {
        let (cnt, inc) = (register(c), format!("inc_{}", c.name()));
        v.push(reg_of(&cnt, bits));
        v.push(wire_of(&inc, INC_BITS, increment(c)));
        let sum = id(&cnt) + cat([zeros(bits - INC_BITS as i64), id(&inc)]);
        body.push(set(&*cnt, sum.bit_and("CNT_MASK")));
    }
    let clear: Vec<Stmt> = Counter::ALL
        .iter()
        .map(|&c| set(&*register(c), lit(MAX_COUNTER_BITS, 0)))
        .collect();
    v.push(Item::Clocked(vec![if_else(
        id("rst").or("clear_req"),
        clear,
        body,
    )]));
    v
}

fn register(c: Counter) -> String {
    format!("cnt_{}", c.name())
}

/// What the AXI4-Lite register of counter `c` reads: its bits `[32 *
/// half, 32 * half + 32)`, zero above [`MAX_COUNTER_BITS`].
pub(super) fn register_half(c: Counter, half: u32) -> Expr {
    let lo = half * AXIL_DATA_BITS;
    let hi = MAX_COUNTER_BITS.min(lo + AXIL_DATA_BITS);
    let value = id(&register(c)).bits(hi as i64 - 1, lo as i64);
    if hi - lo == AXIL_DATA_BITS {
        value
    } else {
        cat([zeros((lo + AXIL_DATA_BITS - hi) as i64), value])
    }
}
