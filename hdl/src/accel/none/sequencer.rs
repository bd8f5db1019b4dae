//! The `none` controller's sequencer: fetches command words, checks a
//! command completely in its last decode cycle (`docs/COMMANDS.md`,
//! Errors), then sequences its execute cycles, driving the array's inputs
//! exactly as the emulator's `Driver` does.
//!
//! This file holds the sequencer: fetch, the execute counter and the
//! *next-cycle* view (`read_ahead`, `nx_t`, `nx_pass`) from which the
//! datapath issues every registered buffer read one cycle ahead; the
//! checks run a cycle ahead of the decode cycle they decide
//! ([`super::precheck`]), and the command memory is read one word ahead
//! of the decoder (`pc + 2` in a first decode cycle, `pc + 3` in a
//! second, `PROG_START` while stopped).

use super::precheck::{self, Pre, PreIn};
use crate::accel::commands::*;
use crate::accel::io::ControllerIo;
use crate::accel::sizes::*;
use crate::accel::window::{self, Window};
use crate::array::core::{mode_constants, Modes};
use crate::ir::*;
use crate::params::{C, R};
use sysgrad_isa::command::opcode;
use sysgrad_isa::mode::MODE_BITS;
use sysgrad_isa::timing::{self, Cycles};
use sysgrad_isa::{BackwardMode, Mode};

/// The sequencer's states: stopped, decoding word 0 or word 1 of a
/// command, executing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Stop,
    Dec,
    Dec2,
    Exec,
}

impl State {
    const ALL: [State; 4] = [State::Stop, State::Dec, State::Dec2, State::Exec];
    const BITS: u32 = 2;
    fn name(self) -> &'static str {
        match self {
            State::Stop => "S_STOP",
            State::Dec => "S_DEC",
            State::Dec2 => "S_DEC2",
            State::Exec => "S_EXEC",
        }
    }
}

/// The controller's constants.
pub(super) struct Consts {
    states: Enum<State>,
    pub modes: Modes,
    pub cmd: CommandConsts,
    load_len: Const,
    pub last_row: Const,
    pub last_col: Const,
    pass_extra: Const,
    drain_len: Const,
    update_len: Const,
}

/// The sequencer's registers.
pub(super) struct Regs {
    pub ctl_state: Net,
    pub pc: Net,
    pub cmd_q: Net,
    pub cmd2_q: Net,
    pub ex_t: Net,
    pub ex_end: Net,
    pub ex_last_q: Net,
    pub nx_t_q: Net,
    pub ex_pass: Net,
    pub halted: Net,
    pub faulted: Net,
    pub err_code: Net,
    pub stop_pc: Net,
    pub res_valid: Net,
    pub res_dirty: Net,
    pub res_addr: Net,
    pub res_m: Net,
    pub res_k: Net,
    pub res_mk: Net,
    reset: Vec<Stmt>,
}

/// The sequencer, as the datapath and the counters read it.
pub(super) struct Seq {
    pub consts: Consts,
    pub regs: Regs,
    pub ctl_running: Net,
    pub in_dec: Net,
    pub in_dec2: Net,
    pub in_exec: Net,
    pub fields: Fields,
    /// The executing command's fields (`exec_fields`): for logic that
    /// acts only in execute, such as the array's inputs.
    pub xfields: ExecFields,
    pub dec_go: Net,
    pub dec_fault: Net,
    /// The error code of a decode cycle that faults (0 in other cycles).
    pub dec_err: Net,
    /// The word a decode cycle decodes (`precheck`).
    pub q0: Net,
    /// The window (WINDOW's registers).
    pub window: Window,
    pub exec_begin: Net,
    pub dec_end: Net,
    pub seq_more: Net,
    pub ex_done: Net,
    pub read_ahead: Net,
    pub nx_t: Net,
    pub pass_mode: Net,
    /// `pass_mode` from the executing command's fields.
    pub x_pass_mode: Net,
    pub nx_pass_mode: Net,
}

impl Seq {
    pub fn is(&self, op: u8) -> Net {
        self.fields.is(op)
    }
    pub fn mode(&self, m: Mode) -> Const {
        self.consts.modes.of(m)
    }
}

/// The executing command's fields the array's inputs read, `x_<field>`:
/// decoded from the latched word 0 alone. In execute they equal the
/// decoder's [`Fields`], which in a decode cycle take the command
/// memory's read data; logic that acts only in execute reads these, so
/// that no path runs from that read port through it.
pub(super) struct ExecFields {
    pub f_len: Net,
    pub f_mode: Net,
    pub f_lr: Net,
    pub f_m: Net,
    pub f_k: Net,
    is: Vec<(u8, Net)>,
}

impl ExecFields {
    /// `x_is_<mnemonic>`: the executing command is `op`, one of [`EXEC_OPS`].
    pub fn is(&self, op: u8) -> Net {
        self.is
            .iter()
            .find(|(o, _)| *o == op)
            .expect("an executing opcode the array's inputs read")
            .1
    }
}

/// The opcodes the array's inputs tell apart.
const EXEC_OPS: [u8; 6] = [
    opcode::LOAD_W,
    opcode::FLUSH_W,
    opcode::FORWARD,
    opcode::BACKWARD,
    opcode::UPDATE,
    opcode::DRAIN,
];

fn exec_fields(m: &mut Scope, cmd_q: Net, c: &CommandConsts) -> ExecFields {
    use sysgrad_isa::command::{field, FORMATS};
    m.comment("The executing command's fields, from the latched word 0 alone.");
    let w0 = m.partly_used(wire("x_w0", Width::of(WORD)).init(cmd_q));
    let op = m.wire_of("x_op", OP_BITS, slice(w0, field::OPCODE));
    let is = EXEC_OPS
        .iter()
        .map(|&o| {
            let fmt = FORMATS.iter().find(|f| f.opcode == o).expect("a format");
            let name = format!("x_is_{}", fmt.mnemonic.to_lowercase());
            (o, m.flag(&name, op.equals(c.opcode(o))))
        })
        .collect();
    ExecFields {
        f_len: m.wire_of("x_f_len", LEN_BITS, slice(w0, field::LENGTH)),
        f_mode: m.wire_of("x_f_mode", MODE_FIELD_BITS, slice(w0, field::BACKWARD_MODE)),
        f_lr: m
            .partly_used(wire("x_f_lr", Width::of(LR_FIELD_BITS)).init(slice(w0, field::LR_SHIFT))),
        f_m: m.wire_of("x_f_m", TILE_BITS, slice(w0, field::TILE_M)),
        f_k: m.wire_of("x_f_k", TILE_BITS, slice(w0, field::TILE_K)),
        is,
    }
}

/// The last execute step of a command with the cost `c` and stream
/// length `len` (`STEP_BITS` wide): its length minus one, the named fixed
/// part less one plus `len` if the cost grows with N. One adder after the
/// field, not an add and a subtract in a row: `fixed - 1` is a constant.
fn last_step(c: Cycles, fixed: Option<Const>, len: Expr) -> Expr {
    let named = || fixed.expect("a localparam for a fixed part");
    let one = || lit(STEP_BITS, 1);
    match (c.n_coef, fixed_part(c)) {
        (0, _) => named() - one(),
        (1, Expr::Int(0)) => len - one(),
        (1, _) => len + (named() - one()),
        (k, _) => unreachable!("no command costs {k} cycles per column"),
    }
}

fn constants(m: &mut Scope, la: Const) -> Consts {
    m.comment("Controller states, opcodes, modes, error codes.");
    let states = Enum::declare(m, &State::ALL, State::name, State::BITS);
    let modes = mode_constants(m, &Mode::ALL);
    let cmd = command_constants(m, timing::RESULT_LATENCY, la);
    Consts {
        states,
        modes,
        cmd,
        load_len: cycles_const(m, "LOAD_LEN", STEP_BITS, timing::LOAD).1,
        last_row: sized_const(m, "LAST_ROW", STEP_BITS, R - 1).1,
        last_col: sized_const(m, "LAST_COL", STEP_BITS, C - 1).1,
        pass_extra: cycles_const(m, "PASS_EXTRA", STEP_BITS, timing::PASS).1,
        drain_len: cycles_const(m, "DRAIN_LEN", STEP_BITS, timing::DRAIN).1,
        update_len: cycles_const(m, "UPDATE_LEN", STEP_BITS, timing::UPDATE).1,
    }
}

/// The sequencer's registers and the resident weight tile.
fn state_registers(m: &mut Scope) -> Regs {
    let bits = |b: u32| int(b as i64);
    let (
        [ctl_state, pc, cmd_q, cmd2_q, ex_t, ex_end, ex_last_q, nx_t_q, ex_pass, halted, faulted, err_code, stop_pc, res_valid, res_dirty, res_addr, res_m, res_k, res_mk],
        reset,
    ) = m.registers([
        ("ctl_state", bits(State::BITS)),
        ("pc", bits(PC_BITS)),
        ("cmd_q", bits(WORD)),
        ("cmd2_q", bits(WORD)),
        ("ex_t", bits(STEP_BITS)),
        ("ex_end", bits(STEP_BITS)),
        ("ex_last_q", int(1)),
        ("nx_t_q", bits(STEP_BITS)),
        ("ex_pass", int(1)),
        ("halted", int(1)),
        ("faulted", int(1)),
        ("err_code", bits(ERROR_BITS)),
        ("stop_pc", bits(PC_BITS)),
        ("res_valid", int(1)),
        ("res_dirty", int(1)),
        ("res_addr", bits(ADDR_BITS)),
        ("res_m", bits(TILE_BITS)),
        ("res_k", bits(TILE_BITS)),
        ("res_mk", bits(TILE_AREA_BITS)),
    ]);
    Regs {
        ctl_state,
        pc,
        cmd_q,
        cmd2_q,
        ex_t,
        ex_end,
        ex_last_q,
        nx_t_q,
        ex_pass,
        halted,
        faulted,
        err_code,
        stop_pc,
        res_valid,
        res_dirty,
        res_addr,
        res_m,
        res_k,
        res_mk,
        reset,
    }
}

/// The last execute step of the decoded command: its execute length
/// (`docs/COMMANDS.md`, Cycles) minus one.
fn execute_last_step(f: &Fields, c: &Consts) -> Expr {
    let len = || zext(1, f.f_len);
    let is = |op: u8| f.is(op);
    cond(
        is(opcode::LOAD_W).or(is(opcode::FLUSH_W)),
        last_step(timing::LOAD, Some(c.load_len), len()),
        cond(
            is(opcode::FORWARD).or(is(opcode::BACKWARD)),
            last_step(timing::PASS, Some(c.pass_extra), len()),
            cond(
                is(opcode::DRAIN),
                last_step(timing::DRAIN, Some(c.drain_len), len()),
                cond(
                    is(opcode::UPDATE),
                    last_step(timing::UPDATE, Some(c.update_len), len()),
                    // REQUANT and ACT: a line per cycle.
                    last_step(timing::REQUANT, None, len()),
                ),
            ),
        ),
    )
}

/// Constants, state, the command's fields and checks, and the
/// sequencing nets: everything of the sequencer but its clocked process.
pub(super) fn front(m: &mut Scope, io: &ControllerIo) -> Seq {
    let consts = constants(m, io.la);
    let state = |s: State| consts.states.of(s);
    m.comment("Sequencer state and the resident weight tile.");
    let regs = state_registers(m);
    let ctl_running = m.flag("ctl_running", regs.ctl_state.differs(state(State::Stop)));
    let in_dec = m.flag("in_dec", regs.ctl_state.equals(state(State::Dec)));
    let in_dec2 = m.flag("in_dec2", regs.ctl_state.equals(state(State::Dec2)));
    let in_exec = m.flag("in_exec", regs.ctl_state.equals(state(State::Exec)));
    let pre_regs = precheck::registers(m);
    // A decode cycle's word is in `q0` (`precheck`).
    let src = WordSource {
        in_dec,
        in_dec2,
        c_rdata: pre_regs.q0,
        cmd_q: regs.cmd_q,
        cmd2_q: regs.cmd2_q,
    };
    let fields = fields(m, &src, &consts.cmd);
    // The checks read the pre-check's own fields (`p_*`); of these the
    // datapath takes only some bits.
    for (net, bits) in [
        (fields.w0, WORD),
        (fields.w1, WORD),
        (fields.f_addr_b, ADDR_BITS),
        (fields.f_lr, LR_FIELD_BITS),
        (fields.f_x_addr, ADDR_BITS),
        (fields.f_mask, ADDR_BITS),
        (fields.dst_lanes, TILE_BITS),
    ] {
        m.wire_of(&format!("{}_unused", net.name()), bits, net);
    }
    let xfields = exec_fields(m, regs.cmd_q, &consts.cmd);
    let resident = Resident {
        valid: regs.res_valid,
        dirty: regs.res_dirty,
        addr: regs.res_addr,
        m: regs.res_m,
        k: regs.res_k,
    };
    // WINDOW: word 0 is in `q0` in its first decode cycle, word 1 in its
    // second (word 0 then latched in `cmd_q`). Its limits are registered
    // in the first, from the words the pre-check reads (`precheck`).
    let ahead = window::Ahead {
        // The pre-check's words (`fields_of` in `precheck::build`).
        w0_next: Net::named("p_w0"),
        w1: Net::named("p_w1"),
        first_of_two: Net::named("p_second"),
    };
    let staged = window::staged_ahead(m, "wn", io.rst, pre_regs.q0, in_dec, &ahead);
    let win_new = window::decoded(m, "wn", regs.cmd_q, &staged);
    let win_load = Net::named("win_load");
    let (window, limits) = window::registers(m, "win", io.rst, &win_new, win_load);
    let Pre {
        dec_go,
        dec_fault,
        dec_err,
    } = precheck::build(
        m,
        io,
        &PreIn {
            regs: &pre_regs,
            consts: &consts.cmd,
            fields: &fields,
            resident: &resident,
            window: &limits,
            win_new: &win_new,
            res_m: regs.res_m,
            res_k: regs.res_k,
            pc: regs.pc,
            cmd_q: regs.cmd_q,
            ctl_running,
            in_dec,
            in_dec2,
            in_exec,
        },
    );
    m.comment("Sequencing: decode ends, execute length, the next cycle's view.");
    let is = |op: u8| fields.is(op);
    // A WINDOW that goes sets the window at the end of its second decode
    // cycle; the pre-check of the next command has seen it already.
    m.define(wire_for(win_load, Width::bit()).init(dec_go.and(is(opcode::WINDOW))));
    // SYNC, HALT and WINDOW have no execute cycle.
    let exec_begin = m.flag(
        "exec_begin",
        dec_go
            .and(!is(opcode::SYNC))
            .and(!is(opcode::HALT))
            .and(!is(opcode::WINDOW)),
    );
    // The decoded command's last step, loaded into `ex_end` in every
    // decode cycle (`ex_end` is read only in execute, which only a
    // decode cycle that goes begins): its load waits for no check.
    let dec_end = m.wire_of("dec_end", STEP_BITS, execute_last_step(&fields, &consts));
    // The last step: `ex_last_q` holds `ex_t == ex_end` for the cycle,
    // set a cycle ahead (`fsm`), so no compare of the step counter
    // stands in front of the next-cycle view and every buffer read
    // enable (the accelerator's critical path when it did).
    let ex_last = m.flag("ex_last", in_exec.and(regs.ex_last_q));
    let seq_more = m.flag(
        "seq_more",
        ex_last
            .and(is(opcode::BACKWARD))
            .and(fields.mode_is(BackwardMode::Sequential))
            .and(!regs.ex_pass),
    );
    let ex_done = m.flag("ex_done", ex_last.and(!seq_more));
    // Buffer reads are issued one cycle ahead, from the next cycle's
    // view below. A read has no effect, so the first line of a stream
    // is read in every decode cycle without waiting for the checks
    // (a command that faults, or reads nothing, ignores what it
    // returns): the checks reach no read enable, and were the
    // accelerator's critical path when they did.
    let read_ahead = m.flag(
        "read_ahead",
        any_of(vec![in_dec.e(), in_dec2.e(), in_exec.and(!ex_done)]),
    );
    // The next cycle's step, `in_exec && !ex_last ? ex_t + 1 : 0`, held
    // in a register set a cycle ahead (`fsm`): every read address adds
    // it, and the read enables compare it, without an increment first.
    let nx_t = m.wire_of("nx_t", STEP_BITS, regs.nx_t_q);
    let nx_pass = m.flag("nx_pass", in_exec.and(regs.ex_pass.or(ex_last)));
    let pass_mode = m.wire_of(
        "pass_mode",
        MODE_BITS,
        pass_mode_of(&consts.modes, fields.f_mode, regs.ex_pass),
    );
    let x_pass_mode = m.wire_of(
        "x_pass_mode",
        MODE_BITS,
        pass_mode_of(&consts.modes, xfields.f_mode, regs.ex_pass),
    );
    let nx_pass_mode = m.wire_of(
        "nx_pass_mode",
        MODE_BITS,
        pass_mode_of(&consts.modes, fields.f_mode, nx_pass),
    );
    Seq {
        consts,
        regs,
        ctl_running,
        in_dec,
        in_dec2,
        in_exec,
        fields,
        xfields,
        dec_go,
        dec_fault,
        dec_err,
        q0: pre_regs.q0,
        window,
        exec_begin,
        dec_end,
        seq_more,
        ex_done,
        read_ahead,
        nx_t,
        pass_mode,
        x_pass_mode,
        nx_pass_mode,
    }
}

/// What a decode cycle does: latch the word, then stop (fault, HALT),
/// step over a SYNC, start executing, or go on to the second word.
fn decode_step(s: &Seq) -> Stmt {
    let r = &s.regs;
    let state = |st: State| s.consts.states.of(st);
    let pc_plus = |k: u64| r.pc + lit(PC_BITS, k);
    let stop = |flag: Net, extra: Vec<Stmt>| {
        let mut v = vec![set(r.ctl_state, state(State::Stop)), set(flag, lit(1, 1))];
        v.extend(extra);
        v.push(set(r.stop_pc, r.pc));
        v
    };
    if_else(
        s.dec_fault,
        stop(r.faulted, vec![set(r.err_code, s.dec_err)]),
        vec![if_else(
            s.dec_go,
            vec![if_else(
                s.is(opcode::HALT),
                stop(r.halted, vec![]),
                vec![if_else(
                    s.is(opcode::SYNC),
                    vec![set(r.pc, pc_plus(1))],
                    vec![if_else(
                        s.is(opcode::WINDOW),
                        vec![set(r.ctl_state, state(State::Dec)), set(r.pc, pc_plus(2))],
                        vec![
                            set(r.ctl_state, state(State::Exec)),
                            set(r.ex_t, lit(STEP_BITS, 0)),
                            set(
                                r.nx_t_q,
                                cond(
                                    s.dec_end.equals(lit(STEP_BITS, 0)),
                                    lit(STEP_BITS, 0),
                                    lit(STEP_BITS, 1),
                                ),
                            ),
                            set(r.ex_pass, lit(1, 0)),
                        ],
                    )],
                )],
            )],
            vec![if_else(
                s.in_dec,
                vec![set(r.ctl_state, state(State::Dec2))],
                vec![execute_step(s)],
            )],
        )],
    )
}

/// What an execute cycle does: the next pass of a SEQUENTIAL BACKWARD, the
/// next command's decode, or the next step.
fn execute_step(s: &Seq) -> Stmt {
    let r = &s.regs;
    let s_dec = s.consts.states.of(State::Dec);
    let step = |k: u64| lit(STEP_BITS, k);
    // `ex_last_q` and `nx_t_q` follow `ex_t` (`front`): in a step
    // that is not the last, `nx_t_q` is `ex_t + 1`, the last when it
    // equals `ex_end` (unchanged in execute); a new pass starts at 0.
    let first_last = r.ex_end.equals(step(0));
    let next_last = r.nx_t_q.equals(r.ex_end);
    if_else(
        s.seq_more,
        vec![
            set(r.ex_t, step(0)),
            set(r.ex_last_q, first_last.clone()),
            set(r.nx_t_q, cond(first_last, step(0), step(1))),
            set(r.ex_pass, lit(1, 1)),
        ],
        vec![if_else(
            s.ex_done,
            vec![
                set(r.ctl_state, s_dec),
                set(r.pc, r.pc + s.fields.words()),
                set(r.nx_t_q, step(0)),
            ],
            vec![
                set(r.ex_last_q, next_last.clone()),
                set(r.nx_t_q, cond(next_last, step(0), r.nx_t_q + step(1))),
                set(r.ex_t, r.nx_t_q),
            ],
        )],
    )
}

/// The resident tile after a command that changes it.
fn resident_update(s: &Seq) -> Stmt {
    let (r, f) = (&s.regs, &s.fields);
    let tile_area =
        zext(TILE_AREA_BITS - TILE_BITS, f.f_m) * zext(TILE_AREA_BITS - TILE_BITS, f.f_k);
    when(
        s.ex_done,
        vec![
            when(
                s.is(opcode::LOAD_W),
                vec![
                    set(r.res_valid, lit(1, 1)),
                    set(r.res_dirty, lit(1, 0)),
                    set(r.res_addr, f.f_addr_a),
                    set(r.res_m, f.f_m),
                    set(r.res_k, f.f_k),
                    set(r.res_mk, tile_area),
                ],
            ),
            when(
                s.is(opcode::FLUSH_W),
                vec![set(r.res_valid, lit(1, 0)), set(r.res_dirty, lit(1, 0))],
            ),
            when(s.is(opcode::UPDATE), vec![set(r.res_dirty, lit(1, 1))]),
        ],
    )
}

/// The sequencer's clocked process.
pub(super) fn fsm(m: &mut Scope, io: &ControllerIo, s: &Seq) {
    let r = &s.regs;
    let s_dec = s.consts.states.of(State::Dec);
    let q0 = s.q0;
    let running = vec![
        when(s.in_dec, vec![set(r.cmd_q, q0)]),
        when(s.in_dec2, vec![set(r.cmd2_q, q0)]),
        // The last step and whether the first is it, for the command
        // being decoded, whether or not it goes (see `dec_end`).
        when(
            s.in_dec.or(s.in_dec2),
            vec![
                set(r.ex_end, s.dec_end),
                set(r.ex_last_q, s.dec_end.equals(lit(STEP_BITS, 0))),
                set(r.nx_t_q, lit(STEP_BITS, 0)),
            ],
        ),
        decode_step(s),
    ];
    let stopped = vec![when(
        io.requests.start_req,
        vec![
            set(r.ctl_state, s_dec),
            set(r.pc, io.requests.prog_start),
            set(r.halted, lit(1, 0)),
            set(r.faulted, lit(1, 0)),
            set(r.err_code, lit(ERROR_BITS, 0)),
        ],
    )];
    let live = vec![if_else(s.ctl_running, running, stopped), resident_update(s)];
    m.clocked(vec![if_else(io.rst, r.reset.clone(), live)]);
}
