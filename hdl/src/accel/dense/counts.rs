//! What the dense controller charges each counter in a cycle
//! (`docs/COMMANDS.md`, Dense controller, Cycles and counters): a run
//! cycle goes to the phase of its decision (a data wave's pass; slots
//! alone: LOAD; UPDATE; DRAIN; else IDLE), words and MACs as they are
//! read, written or computed, exactly as `sysgrad_accel::dense` counts.

use super::decoder::Decoder;
use super::engines::Engines;
use super::outputs::Outputs;
use crate::accel::commands::CommandConsts;
use crate::accel::counters::{lanes_if, nothing, one_if, twice, widen, WbCount};
use crate::accel::results::WbPhase;
use crate::accel::sizes::{TILE_AREA_BITS, TILE_BITS};
use crate::array::core::Modes;
use crate::ir::*;
use sysgrad_isa::host::Counter;
use sysgrad_isa::Mode;

/// The nets the counts read.
pub(super) struct Counted {
    ctl_running: Net,
    do_wave: Net,
    do_update: Net,
    do_drain: Net,
    do_requant: Net,
    c_act: Net,
    c_lanes: Net,
    slot_now: Net,
    slot_read: Net,
    c_wave_mode: Net,
    c_acc: Net,
    sw_act_mk: Net,
    sw_act_m: Net,
    sw_act_k: Net,
    lc_m: Net,
    wd_valid: Net,
    wd_lanes: Net,
    wave_x: Net,
    wave_dy: Net,
    dr_write: Net,
    dr_lanes: Net,
    in_dec: Net,
    in_dec2: Net,
    dec_go: Net,
    is_sync: Net,
    max_m: Const,
    max_k: Const,
    modes: Vec<(Mode, Const)>,
    wb: WbCount,
}

impl Counted {
    pub fn of(
        dec: &Decoder,
        e: &Engines,
        out: &Outputs,
        modes: &Modes,
        cmd: &CommandConsts,
    ) -> Counted {
        Counted {
            ctl_running: dec.ctl_running,
            do_wave: e.do_wave,
            do_update: e.do_update,
            do_drain: e.do_drain,
            do_requant: e.do_requant,
            c_act: e.c_act,
            c_lanes: e.c.get(super::entry::Field::Lanes),
            slot_now: e.slot_now,
            slot_read: e.slot_read,
            c_wave_mode: e.c_wave_mode,
            c_acc: e.c_acc,
            sw_act_mk: e.sw_act_mk,
            sw_act_m: e.sw_act_m,
            sw_act_k: e.sw_act_k,
            lc_m: e.lc_m,
            wd_valid: e.wd_valid,
            wd_lanes: out.wd_lanes,
            wave_x: out.wave_x,
            wave_dy: out.wave_dy,
            dr_write: out.dr_write,
            dr_lanes: out.dr_lanes,
            in_dec: dec.in_dec,
            in_dec2: dec.in_dec2,
            dec_go: dec.dec_go,
            is_sync: dec.is_sync,
            max_m: cmd.max_m,
            max_k: cmd.max_k,
            modes: Mode::WAVE_OPS.iter().map(|m| (*m, modes.of(*m))).collect(),
            wb: WbCount {
                write: out.wb.write,
                ph: out.wb.ph,
                acc: out.wb.acc,
                lanes: out.wb.lanes,
            },
        }
    }

    fn mode(&self, m: Mode) -> Const {
        self.modes
            .iter()
            .find(|(k, _)| *k == m)
            .expect("a wave op")
            .1
    }

    /// A data wave of the pass with mode `m` decided this cycle.
    fn wave_of(&self, m: Mode) -> Expr {
        self.do_wave.and(self.c_wave_mode.equals(self.mode(m)))
    }

    /// The MACs of a wave of `m` on the tile in the PEs after the swap.
    fn macs(&self, m: Mode) -> Expr {
        cond(
            self.wave_of(m),
            widen(self.sw_act_mk, TILE_AREA_BITS),
            nothing(),
        )
    }

    fn reads_if(&self, on: Net, m: Mode, lanes: Net) -> Expr {
        lanes_if(on.and(self.c_wave_mode.equals(self.mode(m))), lanes)
    }

    /// What the dense controller charges counter `c` in a cycle (the host
    /// interface's counters are charged by it).
    pub fn increment(&self, c: Counter) -> Expr {
        use Counter::*;
        let (x, dy, wb) = (self.wave_x, self.wave_dy, &self.wb);
        match c {
            RunCycles => one_if(self.ctl_running),
            IdleCycles => one_if(
                self.ctl_running
                    .and(!self.do_wave)
                    .and(!self.slot_now)
                    .and(!self.do_update)
                    .and(!self.do_drain),
            ),
            LoadCycles => one_if(self.slot_now.and(!self.do_wave)),
            FwdCycles => one_if(self.wave_of(Mode::Fwd)),
            DxCycles => one_if(self.wave_of(Mode::BwdDx)),
            DwCycles => one_if(self.wave_of(Mode::BwdDw)),
            IlCycles => one_if(self.wave_of(Mode::BwdIl)),
            UpdateCycles => one_if(self.do_update),
            DrainCycles => one_if(self.do_drain),
            FwdMacs => self.macs(Mode::Fwd),
            DxMacs => self.macs(Mode::BwdDx),
            DwMacs => self.macs(Mode::BwdDw),
            IlMacs => cond(self.wave_of(Mode::BwdIl), twice(self.sw_act_mk), nothing()),
            LoadWReads => lanes_if(self.slot_read, self.lc_m),
            LoadWWrites => lanes_if(self.wd_valid, self.wd_lanes),
            FwdXReads => self.reads_if(x, Mode::Fwd, self.sw_act_k),
            FwdYWrites => wb.words(WbPhase::Forward, false),
            FwdAccReads | FwdAccWrites => wb.words(WbPhase::Forward, true),
            DxDyReads => self.reads_if(dy, Mode::BwdDx, self.sw_act_m),
            DxDxWrites => wb.words(WbPhase::Dx, false),
            DxAccReads | DxAccWrites => wb.words(WbPhase::Dx, true),
            DwDyReads => self.reads_if(dy, Mode::BwdDw, self.sw_act_m),
            DwXReads => self.reads_if(x, Mode::BwdDw, self.sw_act_k),
            IlDyReads => self.reads_if(dy, Mode::BwdIl, self.sw_act_m),
            IlXReads => self.reads_if(x, Mode::BwdIl, self.sw_act_k),
            IlDxWrites => wb.words(WbPhase::Interleaved, false),
            IlAccReads | IlAccWrites => wb.words(WbPhase::Interleaved, true),
            DrainDwWrites => lanes_if(self.dr_write, self.dr_lanes),
            DecodeCycles => one_if(self.in_dec.or(self.in_dec2)),
            RequantCycles => one_if(self.do_requant.and(!self.c_act)),
            RequantWords => cond(
                self.do_requant.and(!self.c_act),
                widen(cond(self.c_acc, self.max_m, self.max_k), TILE_BITS),
                nothing(),
            ),
            ActCycles => one_if(self.do_requant.and(self.c_act)),
            ActWords => lanes_if(self.do_requant.and(self.c_act), self.c_lanes),
            Syncs => one_if(self.dec_go.and(self.is_sync)),
            Commands => one_if(self.dec_go),
            LoadSlots => one_if(self.slot_now),
            DmaInBeats | DmaOutBeats | DmaInStalls | DmaOutStalls | HostIdleCycles => {
                unreachable!("the host interface's counters")
            }
        }
    }
}
