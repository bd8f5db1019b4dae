//! What the dense controller charges each counter in a cycle
//! (`docs/COMMANDS.md`, Dense controller, Cycles and counters): a run
//! cycle goes to the phase of its decision (a data wave's pass; slots
//! alone: LOAD; UPDATE; DRAIN; else IDLE), words and MACs as they are
//! read, written or computed, exactly as `sysgrad_accel::dense` counts.

use super::super::counters::{host_increment, lanes_if, nothing, one_if, wb_line, widen};
use super::super::datapath::WbPhase;
use super::super::sizes::{TILE_AREA_BITS, TILE_BITS};
use crate::ir::*;
use sysgrad_isa::host::Counter;

/// A data wave of the pass with mode constant `m` decided this cycle.
fn wave_of(m: &str) -> Expr {
    id("do_wave").and(id("c_wave_mode").equals(m))
}

/// The MACs of a wave of `m` on the tile in the PEs after the swap.
fn macs(m: &str) -> Expr {
    cond(
        wave_of(m),
        widen(id("sw_act_mk"), TILE_AREA_BITS),
        nothing(),
    )
}

fn reads_if(on: Expr, m: &str, lanes: &str) -> Expr {
    lanes_if(on.and(id("c_wave_mode").equals(m)), lanes)
}

pub(in crate::accel) fn increment(c: Counter) -> Expr {
    use Counter::*;
    if let Some(e) = host_increment(c) {
        return e;
    }
    let x = || id("wave_x");
    let dy = || id("wave_dy");
    match c {
        RunCycles => one_if(id("ctl_running")),
        IdleCycles => one_if(
            id("ctl_running")
                .and(!id("do_wave"))
                .and(!id("slot_now"))
                .and(!id("do_update"))
                .and(!id("do_drain")),
        ),
        LoadCycles => one_if(id("slot_now").and(!id("do_wave"))),
        FwdCycles => one_if(wave_of("M_FWD")),
        DxCycles => one_if(wave_of("M_BWD_DX")),
        DwCycles => one_if(wave_of("M_BWD_DW")),
        IlCycles => one_if(wave_of("M_BWD_IL")),
        UpdateCycles => one_if(id("do_update")),
        DrainCycles => one_if(id("do_drain")),
        FwdMacs => macs("M_FWD"),
        DxMacs => macs("M_BWD_DX"),
        DwMacs => macs("M_BWD_DW"),
        IlMacs => cond(
            wave_of("M_BWD_IL"),
            cat([id("sw_act_mk"), lit(1, 0)]),
            nothing(),
        ),
        LoadWReads => lanes_if(id("slot_read"), "lc_m"),
        LoadWWrites => lanes_if(id("wd_valid"), "wd_lanes"),
        FwdXReads => reads_if(x(), "M_FWD", "sw_act_k"),
        FwdYWrites => lanes_if(wb_line(WbPhase::Forward, false), "wb_lanes"),
        FwdAccReads | FwdAccWrites => lanes_if(wb_line(WbPhase::Forward, true), "wb_lanes"),
        DxDyReads => reads_if(dy(), "M_BWD_DX", "sw_act_m"),
        DxDxWrites => lanes_if(wb_line(WbPhase::Dx, false), "wb_lanes"),
        DxAccReads | DxAccWrites => lanes_if(wb_line(WbPhase::Dx, true), "wb_lanes"),
        DwDyReads => reads_if(dy(), "M_BWD_DW", "sw_act_m"),
        DwXReads => reads_if(x(), "M_BWD_DW", "sw_act_k"),
        IlDyReads => reads_if(dy(), "M_BWD_IL", "sw_act_m"),
        IlXReads => reads_if(x(), "M_BWD_IL", "sw_act_k"),
        IlDxWrites => lanes_if(wb_line(WbPhase::Interleaved, false), "wb_lanes"),
        IlAccReads | IlAccWrites => lanes_if(wb_line(WbPhase::Interleaved, true), "wb_lanes"),
        DrainDwWrites => lanes_if(id("dr_write"), "dr_lanes"),
        DecodeCycles => one_if(id("in_dec").or("in_dec2")),
        RequantCycles => one_if(id("do_requant")),
        RequantWords => cond(
            "do_requant",
            widen(cond("c_acc", "MAX_M", "MAX_K"), TILE_BITS),
            nothing(),
        ),
        Syncs => one_if(id("dec_go").and("is_sync")),
        Commands => one_if(id("dec_go")),
        LoadSlots => one_if(id("slot_now")),
        DmaInBeats | DmaOutBeats | DmaInStalls | DmaOutStalls | HostIdleCycles => {
            unreachable!("host counters")
        }
    }
}
