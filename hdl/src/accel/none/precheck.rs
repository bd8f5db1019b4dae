//! The `none` controller's pre-check: every decode cycle's outcome (go,
//! fault, error code) is decided in the cycle before it and held in
//! registers, so a decode cycle only selects registered flags.
//!
//! The command memory is read one word further ahead than the decoder
//! consumes: at the start of a decode cycle at word `p` (`pc` in the
//! first, `pc + 1` in the second), `q0` holds word `p` and the memory's
//! read data word `p + 1`, read in the cycle before. Every decode cycle
//! latches the read data into `q0` and reads `p + 2`; execute reads
//! nothing and holds both. So in each cycle the pre-check has the words
//! of the next decode cycle in registers:
//!
//! * in execute, the next command's word 0 is `q0`; its checks read the
//!   resident tile as the executing command leaves it (LOAD_W, FLUSH_W,
//!   UPDATE change it when they end);
//! * in a decode cycle, the next is this command's second (word 0 in
//!   `q0`, word 1 the read data) or, after a SYNC, the command at
//!   `pc + 1` (word 0 the read data);
//! * while stopped the memory is read at `PROG_START` in every cycle the
//!   DMA does not hold its read port (a DMA write beat at the same word
//!   forwarded), so the cycle of START checks the first command.
//!
//! No cycle of `docs/COMMANDS.md` moves: the same checks decide the same
//! decode cycles, a cycle earlier in the logic.

use crate::accel::commands::*;
use crate::accel::io::ControllerIo;
use crate::accel::sizes::*;
use crate::ir::*;
use sysgrad_isa::command::opcode;
use sysgrad_isa::host::DmaTarget;
use sysgrad_isa::ErrorCode;

/// The pre-check's registers.
pub(super) struct PreRegs {
    /// The word of the next decode cycle (see the module's comment).
    pub q0: Net,
    pre_go: Net,
    pre_fault: Net,
    pre_err: Net,
    fwd_q: Net,
    fwd_data: Net,
    reset: Vec<Stmt>,
}

/// The pre-check's registers; the words (`q0`, `fwd_data`) have no reset:
/// they are loaded in every cycle before they are read.
pub(super) fn registers(m: &mut Scope) -> PreRegs {
    let ([pre_go, pre_fault, pre_err], reset) = m.registers([
        ("pre_go", int(1)),
        ("pre_fault", int(1)),
        ("pre_err", int(ERROR_BITS as i64)),
    ]);
    PreRegs {
        q0: m.reg("q0", Width::of(WORD)),
        pre_go,
        pre_fault,
        pre_err,
        fwd_q: m.reg("fwd_q", Width::bit()),
        fwd_data: m.reg("fwd_data", Width::of(WORD)),
        reset,
    }
}

/// What the pre-check reads of the sequencer.
pub(super) struct PreIn<'a> {
    pub regs: &'a PreRegs,
    pub consts: &'a CommandConsts,
    /// The decoder's fields: the word in `q0` in a decode cycle, the
    /// executing command's in execute.
    pub fields: &'a Fields,
    pub resident: &'a Resident,
    pub res_m: Net,
    pub res_k: Net,
    pub pc: Net,
    pub ctl_running: Net,
    pub in_dec: Net,
    pub in_dec2: Net,
    pub in_exec: Net,
}

/// What a decode cycle does, from the registered pre-check: it goes
/// (`dec_go`), or faults (`dec_fault`) with `dec_err`; neither in the
/// first decode cycle of a two-word command that passes.
pub(super) struct Pre {
    pub dec_go: Net,
    pub dec_fault: Net,
    pub dec_err: Net,
}

/// The resident tile as the executing command leaves it (the one in
/// place outside execute).
fn resident_after(m: &mut Scope, c: &PreIn) -> Resident {
    let (f, res) = (c.fields, c.resident);
    let ends = |op: u8| c.in_exec.and(f.is(op));
    let load = m.flag("p_x_load", ends(opcode::LOAD_W));
    let flush = m.flag("p_x_flush", ends(opcode::FLUSH_W));
    let update = ends(opcode::UPDATE);
    Resident {
        valid: m.flag(
            "p_res_valid",
            cond(load, lit(1, 1), cond(flush, lit(1, 0), res.valid)),
        ),
        dirty: m.flag(
            "p_res_dirty",
            cond(
                load.or(flush),
                lit(1, 0),
                cond(update, lit(1, 1), res.dirty),
            ),
        ),
        addr: m.wire_of("p_res_addr", ADDR_BITS, cond(load, f.f_addr_a, res.addr)),
        m: m.wire_of("p_res_m", TILE_BITS, cond(load, f.f_m, c.res_m)),
        k: m.wire_of("p_res_k", TILE_BITS, cond(load, f.f_k, c.res_k)),
    }
}

/// The command memory's read data, with a DMA write beat to the word
/// read in the same cycle forwarded (the memory reads before it writes).
fn command_word(m: &mut Scope, io: &ControllerIo, r: &PreRegs) -> Net {
    let c = io.bufs.of(DmaTarget::Commands);
    m.comment("The command memory's word, a write beat to the word read forwarded.");
    let word = m.wire_of("c_word", WORD, cond(r.fwd_q, r.fwd_data, c.rdata));
    let fwd = c.we.at(0).and(c.re).and(c.waddr.equals(c.raddr));
    m.clocked(vec![if_else(
        io.rst,
        vec![set(r.fwd_q, lit(1, 0))],
        vec![set(r.fwd_q, fwd)],
    )]);
    m.clocked(vec![set(r.fwd_data, c.wdata)]);
    word
}

/// The pre-check: the next decode cycle's outcome into the registers, and
/// this one's from them.
pub(super) fn build(m: &mut Scope, io: &ControllerIo, c: &PreIn) -> Pre {
    let r = c.regs;
    let c_word = command_word(m, io, r);
    m.comment("Pre-check: the next decode cycle's words, resident tile and place.");
    // The next decode cycle is this command's second word.
    let next_second = m.flag("p_second", c.in_dec.and(c.fields.two_words));
    let w0 = cond(c.in_exec.or(next_second), r.q0, c_word);
    let f = fields_of(m, "p_", w0, c_word.e(), c.consts);
    let resident = resident_after(m, c);
    let pc_plus = |k: u64| c.pc + lit(PC_BITS, k);
    let place = cond(
        c.in_exec,
        c.pc + c.fields.words(),
        cond(c.ctl_running, pc_plus(1), io.requests.prog_start),
    );
    let past = m.flag("p_end", place.at_least(io.requests.prog_len));
    m.comment("Pre-check: the checks of the next decode cycle's command.");
    let past_end = past_end_function(m);
    let chk = word_checks(
        m,
        "p_",
        &past_end,
        &WordIn {
            fields: &f,
            consts: c.consts,
            resident: &resident,
        },
    );
    let err = |e: ErrorCode| c.consts.error(e).e();
    let none = || lit(ERROR_BITS, 0);
    // A first word goes if it is a known one-word command that passes;
    // it ends decoding (goes or faults) unless it is a two-word one.
    let first_go = all_of(vec![!past, chk.known_op.e(), !f.two_words, !chk.chk_bad]);
    let first_final = any_of(vec![past.e(), !chk.known_op, !f.two_words]);
    let first_err = cond(
        past,
        err(ErrorCode::ProgramEnd),
        cond(
            !chk.known_op,
            err(ErrorCode::UnknownOpcode),
            cond(f.two_words, none(), chk.chk_err),
        ),
    );
    let second_go = (!past).and(!chk.chk_bad);
    let second_err = cond(past, err(ErrorCode::ProgramEnd), chk.chk_err);
    let go = m.flag("p_go", cond(next_second, second_go.clone(), first_go));
    let fault = cond(next_second, !second_go, first_final.and(!go));
    let code = cond(next_second, second_err, first_err);
    m.clocked(vec![if_else(
        io.rst,
        r.reset.clone(),
        vec![
            set(r.pre_go, go),
            set(r.pre_fault, fault),
            set(r.pre_err, code),
        ],
    )]);
    // Execute holds the next command's word 0.
    m.clocked(vec![when(!c.in_exec, vec![set(r.q0, c_word)])]);
    m.comment("Decode: the registered pre-check.");
    let in_decode = c.in_dec.or(c.in_dec2);
    let dec_go = m.flag("dec_go", in_decode.clone().and(r.pre_go));
    let dec_fault = m.flag("dec_fault", in_decode.clone().and(r.pre_fault));
    let dec_err = m.wire_of("dec_err", ERROR_BITS, cond(in_decode, r.pre_err, none()));
    Pre {
        dec_go,
        dec_fault,
        dec_err,
    }
}
