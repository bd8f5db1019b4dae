//! What both controllers do with the array's results alike: the
//! accumulator read port with same-cycle write forwarding and REQUANT,
//! the lanes of Y, dX and dW widened to the accumulator buffer's, and the
//! data of a write-back line (added to the line's old value or not).

use super::activation::{self, ActIn};
use super::buffers::BufNets;
use super::io::ControllerIo;
use super::sizes::lane_mask;
use crate::arith::{REQUANT_IN, REQUANT_OUT, REQUANT_TO_GRAD};
use crate::ir::*;
use crate::params::{AW, DW, L};

/// The pass a write-back line comes from (`wb_ph`), which decides the
/// counters it is charged to.
#[derive(Clone, Copy)]
pub(super) enum WbPhase {
    Forward = 0,
    Dx = 1,
    Interleaved = 2,
}

impl WbPhase {
    pub(super) const BITS: u32 = 2;
    pub(super) fn lit(self) -> Expr {
        lit(Self::BITS, self as u64)
    }
}

/// `wide` (LA lanes of AW) from `src` (`n` lanes), zero above `n`.
pub(super) fn widen_lanes(m: &mut Scope, la: Const, wide_net: Net, src: Net, n: P) {
    m.define(wire_for(wide_net, Width::of(la * AW)));
    let mut inside = Scope::new();
    inside.assign(wide_net.lane(L, AW), src.lane(L, AW));
    let mut above = Scope::new();
    above.assign(wide_net.lane(L, AW), zeros(AW));
    let mut lane = Scope::new();
    lane.gen_if(L.less(n), "g_in", inside, above);
    m.gen_for(L.name(), la, &format!("g_{}", wide_net.name()), lane);
}

/// What the accumulator reads give: each lane's word with same-cycle
/// write forwarding (`a_rd`), each lane requantized (`rq_out`), and
/// through the activation unit (`act_out`). The controllers write
/// REQUANT's and ACT's results before the read port is built.
pub(crate) struct AccRead {
    pub a_rd: Net,
    pub rq_out: Net,
    pub act_out: Net,
}

impl AccRead {
    pub fn named() -> AccRead {
        AccRead {
            a_rd: Net::named("a_rd"),
            rq_out: Net::named("rq_out"),
            act_out: Net::named("act_out"),
        }
    }
}

/// Accumulator read data with same-cycle write forwarding (`a`: the
/// accumulator buffer's ports), REQUANT (`io.requant`, the number
/// format's module, one instance per lane, its ports connected by name)
/// and the activation unit (reading `act`).
pub(super) fn accumulator_read(
    m: &mut Scope,
    io: &ControllerIo,
    a: &BufNets,
    act: &ActIn,
    out: &AccRead,
) {
    let (rst, la, requant) = (io.rst, io.la, io.requant);
    m.comment("A lane written in the cycle it is read reads the new word.");
    let a_fwd_q = m.reg_of("a_fwd_q", la);
    let a_fwd_data_q = m.reg_of("a_fwd_data_q", la * AW);
    m.clocked(vec![if_else(
        rst,
        vec![set(a_fwd_q, zeros(la))],
        vec![when(
            a.re,
            vec![
                set(a_fwd_q, cond(a.raddr.equals(a.waddr), a.we, zeros(la))),
                set(a_fwd_data_q, a.wdata),
            ],
        )],
    )]);
    let (a_rd, rq_out) = (out.a_rd, out.rq_out);
    m.define(wire_for(a_rd, Width::of(la * AW)));
    m.define(wire_for(rq_out, Width::of(la * DW)));
    let mut lane = Scope::new();
    lane.assign(
        a_rd.lane(L, AW),
        cond(a_fwd_q.at(L), a_fwd_data_q.lane(L, AW), a.rdata.lane(L, AW)),
    );
    let conns = requant
        .ports
        .iter()
        .map(|p| {
            let e = match p.name() {
                REQUANT_IN => a_rd.lane(L, AW),
                REQUANT_OUT => rq_out.lane(L, DW),
                REQUANT_TO_GRAD => act.to_grad.e(),
                other => panic!("sa_requant's port {other} has no connection"),
            };
            (p.name().to_string(), e)
        })
        .collect();
    lane.instance(Instance {
        module: requant.name.clone(),
        name: "u_requant".into(),
        params: requant
            .params
            .iter()
            .map(|p| (p.name.clone(), id(&p.name)))
            .collect(),
        conns,
    });
    m.gen_for(L.name(), la, "g_a_rd", lane);
    activation::build(m, la, rq_out, act, io.arith, out.act_out);
}

/// A write-back unit's state, as the data of its line needs it.
pub(super) struct WriteBack {
    /// Lanes of the line.
    pub lanes: Net,
    /// It writes this cycle.
    pub write: Net,
    /// dX (else Y).
    pub dx: Net,
    /// Added to the line's old value.
    pub acc: Net,
}

/// What a write-back line writes: the write enables and the data (the
/// accumulator port's mux reads them before they are built).
pub(super) struct WriteBackData {
    pub we: Net,
    pub data: Net,
}

impl WriteBackData {
    pub fn named() -> WriteBackData {
        WriteBackData {
            we: Net::named("wb_we"),
            data: Net::named("wb_data"),
        }
    }
}

/// What a write-back line writes: Y (`y_wide`) or dX (`dx_wide`) in the
/// first `wb_lanes` lanes, added to the line's old value (`a_rd`) with
/// the format's accumulate if `wb_acc`, when `wb_write`.
pub(super) fn write_back_data(
    m: &mut Scope,
    la: Const,
    wb: &WriteBack,
    [y_wide, dx_wide]: [Net; 2],
    a_rd: Net,
    accumulate: &Function,
    out: &WriteBackData,
) {
    let wb_mask = m.wire_of("wb_mask", la, lane_mask(la, wb.lanes));
    let wb_we = out.we;
    m.define(wire_for(wb_we, Width::of(la)).init(cond(wb.write, wb_mask, zeros(la))));
    let wb_new = m.wire_of("wb_new", la * AW, cond(wb.dx, dx_wide, y_wide));
    let wb_data = out.data;
    m.define(wire_for(wb_data, Width::of(la * AW)));
    let mut lane = Scope::new();
    lane.assign(
        wb_data.lane(L, AW),
        cond(
            wb.acc,
            accumulate.call([a_rd.lane(L, AW), wb_new.lane(L, AW)]),
            wb_new.lane(L, AW),
        ),
    );
    m.gen_for(L.name(), la, "g_wb_data", lane);
}
