//! The `none` controller's pre-check: every decode cycle's outcome (go or
//! fault, and each check's verdict) is decided in the cycle before it and
//! held in registers, so a decode cycle only selects registered flags
//! (the error code of a fault is picked from the verdicts, into
//! `err_code` only).
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
use crate::accel::window::{Decoded, Limits};
use crate::ir::*;
use sysgrad_isa::command::opcode;
use sysgrad_isa::host::DmaTarget;
use sysgrad_isa::ErrorCode;

/// The checks in priority order, each a bit of `pre_bad`.
fn check_order() -> Vec<ErrorCode> {
    std::iter::once(ErrorCode::ReservedBits)
        .chain(ErrorCode::CHECK_ORDER)
        .collect()
}

/// The pre-check's registers.
pub(super) struct PreRegs {
    /// The word of the next decode cycle (see the module's comment).
    pub q0: Net,
    /// `q0` is a two-word command's word 0.
    q0_two: Net,
    /// `q0`, or while `fwd_q` the DMA's write beat to the word read.
    alt_q: Net,
    fwd_q: Net,
    /// The next decode cycle goes, or faults.
    pre_go: Net,
    pre_fault: Net,
    /// What picks its error code: it is a second word, the program ends
    /// before it, the opcode is known, a two-word one, each check fails.
    pre_second: Net,
    pre_end: Net,
    pre_known: Net,
    pre_two: Net,
    pre_bad: Net,
    reset: Vec<Stmt>,
}

/// The pre-check's registers; the words (`q0`, `alt_q`) have no reset:
/// they are loaded in every cycle before they are read.
pub(super) fn registers(m: &mut Scope) -> PreRegs {
    let checks = check_order().len() as i64;
    let (
        [q0_two, fwd_q, pre_go, pre_fault, pre_second, pre_end, pre_known, pre_two, pre_bad],
        reset,
    ) = m.registers([
        ("q0_two", int(1)),
        ("fwd_q", int(1)),
        ("pre_go", int(1)),
        ("pre_fault", int(1)),
        ("pre_second", int(1)),
        ("pre_end", int(1)),
        ("pre_known", int(1)),
        ("pre_two", int(1)),
        ("pre_bad", int(checks)),
    ]);
    PreRegs {
        q0: m.reg("q0", Width::of(WORD)),
        q0_two,
        alt_q: m.reg("alt_q", Width::of(WORD)),
        fwd_q,
        pre_go,
        pre_fault,
        pre_second,
        pre_end,
        pre_known,
        pre_two,
        pre_bad,
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
    /// The window registers, and a WINDOW's own in its second decode cycle.
    pub window: &'a Limits,
    pub win_new: &'a Decoded,
    pub res_m: Net,
    pub res_k: Net,
    pub pc: Net,
    /// The executing command's word 0.
    pub cmd_q: Net,
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

/// The window as the next decode cycle sees it: a WINDOW in its second
/// decode cycle sets it at the end of the cycle (if it faults, nothing is
/// decoded after it).
fn window_after(m: &mut Scope, c: &PreIn) -> Limits {
    let setting = m.flag(
        "p_win_set",
        c.in_dec2
            .and(c.fields.is(opcode::WINDOW))
            .and(crate::accel::window::present()),
    );
    let (w, d) = (c.window, c.win_new);
    Limits {
        valid: m.flag("p_win_valid", setting.or(w.valid)),
        x_lines: m.wire_of(
            "p_win_x_lines",
            crate::accel::window::LIMIT_BITS,
            cond(setting, d.x_lines, w.x_lines),
        ),
        positions: m.wire_of(
            "p_win_positions",
            crate::accel::window::LIMIT_BITS,
            cond(setting, d.positions, w.positions),
        ),
    }
}

/// Whether `word` is a two-word command's word 0.
fn two_words_of(word: Net, consts: &CommandConsts) -> Expr {
    use sysgrad_isa::command::{field, FORMATS};
    let op = slice(word, field::OPCODE);
    any_of(
        FORMATS
            .iter()
            .filter(|fmt| fmt.words() > 1)
            .map(|fmt| op.clone().equals(consts.opcode(fmt.opcode)))
            .collect(),
    )
}

/// The pre-check: the next decode cycle's outcome into the registers, and
/// this one's from them.
pub(super) fn build(m: &mut Scope, io: &ControllerIo, c: &PreIn) -> Pre {
    let r = c.regs;
    let mem = io.bufs.of(DmaTarget::Commands);
    m.comment("The command memory's word, a write beat to the word read forwarded.");
    // The memory reads before it writes: a DMA beat writing the word
    // read shows in `alt_q` (`fwd_q`) the cycle after.
    let c_word = m.wire_of("c_word", WORD, cond(r.fwd_q, r.alt_q, mem.rdata));
    let fwd = m.flag(
        "fwd",
        mem.we.at(0).and(mem.re).and(mem.waddr.equals(mem.raddr)),
    );
    let q0_next = m.wire_of("q0_next", WORD, cond(c.in_exec, r.q0, c_word));
    m.comment("Pre-check: the next decode cycle's words, resident tile and place.");
    // The next decode cycle is this command's second word.
    let next_second = m.flag("p_second", c.in_dec.and(r.q0_two));
    // Word 0: `q0` in execute and before a second word, the memory's
    // word otherwise (`alt_q` is `q0` while running).
    let from_alt = r.fwd_q.or(c.in_exec).or(next_second);
    let w0 = cond(from_alt, r.alt_q, mem.rdata);
    let f = fields_of(m, "p_", w0, mem.rdata.e(), c.consts);
    let resident = resident_after(m, c);
    let window = window_after(m, c);
    // The next decode cycle's word index against `PROG_LEN`: `pc + 2`
    // after a two-word command, `pc + 1` after any other and before a
    // second word, `PROG_START` while stopped; each compare starts at
    // registers, and the state picks one.
    let pc_plus = |k: u64| c.pc + lit(PC_BITS, k);
    let prog_len = io.requests.prog_len;
    let end_1 = m.flag("p_end_1", pc_plus(1).at_least(prog_len));
    let end_2 = m.flag("p_end_2", pc_plus(2).at_least(prog_len));
    let end_start = m.flag("p_end_start", io.requests.prog_start.at_least(prog_len));
    // A two-word command that executes, or a WINDOW (it has no execute
    // cycle) in its second decode cycle, is followed at `pc + 2`.
    let x_two = c.in_exec.and(two_words_of(c.cmd_q, c.consts)).or(c.in_dec2);
    let past = m.flag(
        "p_end",
        cond(c.ctl_running, cond(x_two, end_2, end_1), end_start.e()),
    );
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
            window: &window,
        },
    );
    // A first word goes if it is a known one-word command that passes;
    // it ends decoding (goes or faults) unless it is a two-word one. A
    // second word goes if it passes.
    let first_go = all_of(vec![!past, chk.known_op.e(), !f.two_words, !chk.chk_bad]);
    let first_final = any_of(vec![past.e(), !chk.known_op, !f.two_words]);
    let second_go = (!past).and(!chk.chk_bad);
    let go = m.flag("p_go", cond(next_second, second_go.clone(), first_go));
    let fault = cond(next_second, !second_go, first_final.and(!go));
    let bad_bits = Expr::Concat(chk.bad.iter().rev().map(|(_, n)| n.e()).collect());
    m.clocked(vec![if_else(
        io.rst,
        r.reset.clone(),
        vec![
            when(
                !c.in_exec,
                vec![set(r.q0_two, two_words_of(c_word, c.consts))],
            ),
            set(r.fwd_q, fwd),
            set(r.pre_go, go),
            set(r.pre_fault, fault),
            set(r.pre_second, next_second),
            set(r.pre_end, past),
            set(r.pre_known, chk.known_op),
            set(r.pre_two, f.two_words),
            set(r.pre_bad, bad_bits),
        ],
    )]);
    m.clocked(vec![
        set(r.q0, q0_next),
        set(r.alt_q, cond(fwd, mem.wdata, q0_next)),
    ]);
    m.comment("Decode: the registered pre-check; the error code from its flags.");
    let in_decode = c.in_dec.or(c.in_dec2);
    let dec_go = m.flag("dec_go", in_decode.clone().and(r.pre_go));
    let dec_fault = m.flag("dec_fault", in_decode.clone().and(r.pre_fault));
    let err = |e: ErrorCode| c.consts.error(e).e();
    let none = || lit(ERROR_BITS, 0);
    let bad: Vec<(ErrorCode, Expr)> = check_order()
        .into_iter()
        .zip(0..)
        .map(|(code, i)| (code, r.pre_bad.at(i)))
        .collect();
    let checked = m.wire_of("pre_chk_err", ERROR_BITS, first_failing(c.consts, &bad));
    let code = cond(
        r.pre_end,
        err(ErrorCode::ProgramEnd),
        cond(
            r.pre_second,
            checked.e(),
            cond(
                !r.pre_known,
                err(ErrorCode::UnknownOpcode),
                cond(r.pre_two, none(), checked),
            ),
        ),
    );
    let dec_err = m.wire_of("dec_err", ERROR_BITS, cond(in_decode, code, none()));
    Pre {
        dec_go,
        dec_fault,
        dec_err,
    }
}
