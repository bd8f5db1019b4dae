//! The controller of a dense `sa_accel` (`docs/COMMANDS.md`, Dense
//! controller): the decoder and its command queue ([`decoder`], entries
//! laid out in [`entry`]), the two issue engines ([`engines`]) and what
//! their decisions read and write ([`outputs`]); [`counts`] charges the
//! counters. It implements the rules `sysgrad_emulator::issue` runs, net
//! for step, so the co-simulation can compare the array's inputs in every
//! cycle.

mod counts;
mod decoder;
mod engines;
mod entry;
mod outputs;

use crate::accel::commands::command_constants;
use crate::accel::io::{Built, Controller, ControllerIo, Status};
use crate::accel::results::AccRead;
use crate::array::core::mode_constants;
use crate::ir::*;
use sysgrad_isa::Mode;

/// The dense controller.
pub(crate) struct DenseController;

impl Controller for DenseController {
    fn shape_bits(&self) -> (bool, Expr) {
        // A dense array has no multiplier register (and no MUL_REG).
        (true, lit(1, 0))
    }

    fn build(&self, m: &mut Scope, io: &ControllerIo) -> Built {
        m.comment("Dense controller: modes, opcodes, error codes, entry kinds and engine states.");
        // The array's modes (IDLE, UPDATE, DRAIN, STREAM) and the waves' ops.
        let modes = mode_constants(
            m,
            &[Mode::DENSE.as_slice(), Mode::WAVE_OPS.as_slice()].concat(),
        );
        // The dense PE has no multiplier register (ArrayConfig refuses one).
        let cmd = command_constants(
            m,
            sysgrad_isa::timing::RESULT_LATENCY.without_product_stages(),
            io.la,
        );
        let kinds = entry::constants(m);
        let states = engines::constants(m);
        let dec = decoder::build(m, io, &cmd, &kinds);
        let eng = engines::build(m, io, &dec, &kinds, &states, &modes, &cmd);
        let acc = AccRead::named();
        let out = outputs::build(m, io, &eng, &states, &modes, &cmd, &acc);
        let status = Status {
            ctl_running: dec.ctl_running,
            err_code: dec.err_code,
            stop_pc: dec.stop_pc,
            faulted: dec.faulted,
            halted: dec.halted,
        };
        let shape = [cmd.max_m, cmd.max_k, cmd.acc_lanes];
        let counted = counts::Counted::of(&dec, &eng, &out, &modes, &cmd);
        Built {
            status,
            acc,
            shape,
            counts: Box::new(move |c| counted.increment(c)),
            probes: Err("the formal properties cover the `none` controller; the dense controller has none yet"),
        }
    }
}
