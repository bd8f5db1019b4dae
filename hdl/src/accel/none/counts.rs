//! What the `none` controller charges each counter in a cycle
//! (`docs/COMMANDS.md`, Cycles and counters): cycles per array mode,
//! MACs per streaming cycle of a pass, buffer words as they are read or
//! written.

use super::datapath::Datapath;
use super::sequencer::Seq;
use crate::accel::counters::{lanes_if, nothing, one_if, twice, widen};
use crate::accel::results::WbPhase;
use crate::accel::sizes::{TILE_AREA_BITS, TILE_BITS};
use crate::ir::*;
use sysgrad_isa::command::opcode;
use sysgrad_isa::host::Counter;
use sysgrad_isa::Mode;

/// The nets the counts read.
pub(super) struct Counted {
    pub ctl_running: Net,
    pub arr_mode: Net,
    pub stream: Net,
    pub is_backward: Net,
    pub is_forward: Net,
    pub is_sync: Net,
    pub pass_mode: Net,
    pub res_mk: Net,
    pub res_m: Net,
    pub res_k: Net,
    pub f_m: Net,
    pub f_flag: Net,
    pub f_lanes: Net,
    pub in_dec: Net,
    pub in_dec2: Net,
    pub dec_go: Net,
    pub max_m: Const,
    pub max_k: Const,
    pub modes: Vec<(Mode, Const)>,
    pub dp: Datapath,
}

impl Counted {
    pub fn of(s: &Seq, dp: Datapath, arr_mode: Net) -> Counted {
        Counted {
            ctl_running: s.ctl_running,
            arr_mode,
            stream: dp.streams.stream,
            is_backward: s.is(opcode::BACKWARD),
            is_forward: s.is(opcode::FORWARD),
            is_sync: s.is(opcode::SYNC),
            pass_mode: s.pass_mode,
            res_mk: s.regs.res_mk,
            res_m: s.regs.res_m,
            res_k: s.regs.res_k,
            f_m: s.fields.f_m,
            f_flag: s.fields.f_flag,
            f_lanes: s.fields.f_lanes,
            in_dec: s.in_dec,
            in_dec2: s.in_dec2,
            dec_go: s.dec_go,
            max_m: s.consts.cmd.max_m,
            max_k: s.consts.cmd.max_k,
            modes: Mode::ALL.iter().map(|m| (*m, s.mode(*m))).collect(),
            dp,
        }
    }

    fn mode(&self, m: Mode) -> Const {
        self.modes
            .iter()
            .find(|(k, _)| *k == m)
            .expect("every mode")
            .1
    }

    /// What the `none` controller charges counter `c` in a cycle (the
    /// host interface's counters are charged by it).
    pub fn increment(&self, c: Counter) -> Expr {
        use Counter::*;
        let mode_is = |m: Mode| self.arr_mode.equals(self.mode(m));
        let pass = |m: Mode| self.is_backward.and(self.pass_mode.equals(self.mode(m)));
        let stream_in = |m: Mode| self.stream.and(pass(m));
        let mk = || widen(self.res_mk, TILE_AREA_BITS);
        let (st, wb) = (&self.dp.streams, &self.dp.wb);
        match c {
            RunCycles => one_if(self.ctl_running),
            IdleCycles => one_if(self.ctl_running.and(mode_is(Mode::Idle))),
            LoadCycles => one_if(mode_is(Mode::Load)),
            FwdCycles => one_if(mode_is(Mode::Fwd)),
            DxCycles => one_if(mode_is(Mode::BwdDx)),
            DwCycles => one_if(mode_is(Mode::BwdDw)),
            IlCycles => one_if(mode_is(Mode::BwdIl)),
            UpdateCycles => one_if(mode_is(Mode::Update)),
            DrainCycles => one_if(mode_is(Mode::Drain)),
            FwdMacs => cond(self.stream.and(self.is_forward), mk(), nothing()),
            DxMacs => cond(stream_in(Mode::BwdDx), mk(), nothing()),
            DwMacs => cond(stream_in(Mode::BwdDw), mk(), nothing()),
            IlMacs => cond(stream_in(Mode::BwdIl), twice(self.res_mk), nothing()),
            LoadWReads => lanes_if(st.w_on, self.f_m),
            LoadWWrites => lanes_if(self.dp.wback, self.res_m),
            FwdXReads => lanes_if(st.x_on.and(self.is_forward), self.res_k),
            FwdYWrites => wb.words(WbPhase::Forward, false),
            FwdAccReads | FwdAccWrites => wb.words(WbPhase::Forward, true),
            DxDyReads => lanes_if(st.dy_on.and(pass(Mode::BwdDx)), self.res_m),
            DxDxWrites => wb.words(WbPhase::Dx, false),
            DxAccReads | DxAccWrites => wb.words(WbPhase::Dx, true),
            DwDyReads => lanes_if(st.dy_on.and(pass(Mode::BwdDw)), self.res_m),
            DwXReads => lanes_if(st.x_on.and(pass(Mode::BwdDw)), self.res_k),
            IlDyReads => lanes_if(st.dy_on.and(pass(Mode::BwdIl)), self.res_m),
            IlXReads => lanes_if(st.x_on.and(pass(Mode::BwdIl)), self.res_k),
            IlDxWrites => wb.words(WbPhase::Interleaved, false),
            IlAccReads | IlAccWrites => wb.words(WbPhase::Interleaved, true),
            DrainDwWrites => lanes_if(self.dp.drain_wr, self.res_k),
            DecodeCycles => one_if(self.in_dec.or(self.in_dec2)),
            RequantCycles => one_if(self.dp.req_wr),
            RequantWords => cond(
                self.dp.req_wr,
                widen(cond(self.f_flag, self.max_m, self.max_k), TILE_BITS),
                nothing(),
            ),
            ActCycles => one_if(self.dp.act_wr),
            ActWords => lanes_if(self.dp.act_wr, self.f_lanes),
            Syncs => one_if(self.dec_go.and(self.is_sync)),
            Commands => one_if(self.dec_go),
            LoadSlots => one_if(mode_is(Mode::Load)),
            DmaInBeats | DmaOutBeats | DmaInStalls | DmaOutStalls | HostIdleCycles => {
                unreachable!("the host interface's counters")
            }
        }
    }
}
