//! The `none` controller (`docs/COMMANDS.md`): one command at a time, a
//! sequencer ([`sequencer`]: fetch, checks, execute steps) and its
//! datapath ([`datapath`]: the array's inputs, the buffer ports, the
//! write-back unit); [`counts`] charges the counters.

mod counts;
mod datapath;
mod precheck;
mod sequencer;

use crate::accel::io::{Built, ControlProbes, Controller, ControllerIo, Status};
use crate::accel::results::AccRead;
use crate::array::core::TopPorts;
use crate::ir::*;
use crate::params::MUL_REG;

/// The `none` controller.
pub(crate) struct NoneController;

impl Controller for NoneController {
    fn shape_bits(&self) -> (bool, Expr) {
        (false, MUL_REG.differs(0))
    }

    fn build(&self, m: &mut Scope, io: &ControllerIo) -> Built {
        let s = sequencer::front(m, io);
        let acc = AccRead::named();
        let dp = datapath::build(m, io, &s, &acc);
        sequencer::fsm(m, io, &s);
        let r = &s.regs;
        let probes = ControlProbes {
            dec_fault: s.dec_fault,
            dec_err: s.dec_err,
            in_dec: s.in_dec,
            in_dec2: s.in_dec2,
            pc: r.pc,
            resident: [
                r.res_valid,
                r.res_dirty,
                r.res_addr,
                r.res_m,
                r.res_k,
                r.res_mk,
            ],
            wb_write: dp.wb.write,
            wb_we: dp.wb_we,
            wb_begin: dp.wb_begin,
        };
        let status = Status {
            ctl_running: s.ctl_running,
            err_code: r.err_code,
            stop_pc: r.stop_pc,
            faulted: r.faulted,
            halted: r.halted,
        };
        let cmd = &s.consts.cmd;
        let shape = [cmd.max_m, cmd.max_k, cmd.acc_lanes];
        let counted = counts::Counted::of(&s, dp, io.arr.of(TopPorts::new().mode));
        Built {
            status,
            acc,
            shape,
            counts: Box::new(move |c| counted.increment(c)),
            probes: Ok(probes),
        }
    }
}
