//! The controller of `sa_accel`: fetches command words, checks a command
//! completely in its last decode cycle (`docs/COMMANDS.md`, Errors), then
//! sequences its execute cycles, driving the array's inputs exactly as the
//! emulator's `Driver` does.
//!
//! This file holds the sequencer: fetch, checks, the execute counter and
//! the *next-cycle* view (`read_ahead`, `nx_t`, `nx_pass`) from which
//! [`super::datapath`] issues every registered buffer read one cycle ahead;
//! the command memory is read at `pc + 1` in each decode cycle.
//!
//! Opcodes, field positions, reserved bits, mode and error codes and the
//! execute lengths all come from `sysgrad_isa`; nothing here is a number
//! of the command format.

use super::sizes::*;
use super::{datapath, flag_wire, registers, sized_const, wire_of};
use crate::ir::*;
use sysgrad_isa::command::{field, opcode, Format, FORMATS};
use sysgrad_isa::mode::MODE_BITS;
use sysgrad_isa::timing::{self, Cycles};
use sysgrad_isa::{BackwardMode, ErrorCode, Mode};

/// The sequencer's states.
const STATES: [(&str, u64); 4] = [("S_STOP", 0), ("S_DEC", 1), ("S_DEC2", 2), ("S_EXEC", 3)];
const STATE_BITS: u32 = 2;

/// The part of a cycle count that does not depend on N, over the
/// parameters `R`, `C` and `MUL_REG` (e.g. `R + C + MUL_REG - 1` for a
/// pass).
fn fixed_part(c: Cycles) -> Expr {
    let terms = [
        (c.row_coef, "R"),
        (c.col_coef, "C"),
        (c.mul_reg_coef, "MUL_REG"),
    ];
    let mut e: Option<Expr> = None;
    for (coef, name) in terms.into_iter().filter(|(coef, _)| *coef != 0) {
        let term = if coef == 1 { id(name) } else { coef * id(name) };
        e = Some(match e {
            None => term,
            Some(e) => e + term,
        });
    }
    match (e, c.constant) {
        (None, k) => int(k),
        (Some(e), 0) => e,
        (Some(e), k) if k > 0 => e + k,
        (Some(e), k) => e - (-k),
    }
}

/// `name`: the fixed part of `c` in `bits` bits, as a localparam.
fn cycles_const(name: &str, bits: u32, c: Cycles) -> Vec<Item> {
    sized_const(name, bits, fixed_part(c))
}

/// The execute length of a command with the cost `c` and stream length
/// `len` (`STEP_BITS` wide): the named fixed part, plus `len` if the cost
/// grows with N.
fn length(c: Cycles, name: &str, len: Expr) -> Expr {
    match (c.n_coef, fixed_part(c)) {
        (0, _) => id(name),
        (1, Expr::Int(0)) => len,
        (1, _) => len + id(name),
        (k, _) => unreachable!("no command costs {k} cycles per column"),
    }
}

/// A sized literal of `bits` bits.
fn word(bits: u32, v: u64) -> Expr {
    lit(bits, v)
}

/// `f_mode == m`: BACKWARD's mode field selects `m`.
pub(super) fn mode_is(m: BackwardMode) -> Expr {
    field_selects(id("f_mode"), m)
}

/// `mode_field == m`: a BACKWARD mode field selects `m`.
pub(super) fn field_selects(mode_field: Expr, m: BackwardMode) -> Expr {
    mode_field.equals(word(MODE_FIELD_BITS, m.code()))
}

/// `is_<mnemonic>`: the decoded opcode is this command.
pub(super) fn is(mnemonic: &str) -> Expr {
    id(&format!("is_{mnemonic}"))
}

fn is_format(f: &Format) -> Expr {
    is(&f.mnemonic.to_lowercase())
}

fn constants() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Controller states, opcodes, modes, error codes.".into(),
    )];
    for (name, code) in STATES {
        v.push(localparam(
            name,
            Width::of(STATE_BITS),
            lit(STATE_BITS, code),
        ));
    }
    v.extend(mode_constants(&Mode::ALL));
    v.extend(command_constants(timing::RESULT_LATENCY));
    v.extend(cycles_const("LOAD_LEN", STEP_BITS, timing::LOAD));
    v.extend(sized_const("LAST_ROW", STEP_BITS, id("R") - 1));
    v.extend(sized_const("LAST_COL", STEP_BITS, id("C") - 1));
    v.extend(cycles_const("PASS_EXTRA", STEP_BITS, timing::PASS));
    v.extend(cycles_const("DRAIN_LEN", STEP_BITS, timing::DRAIN));
    v.extend(cycles_const("UPDATE_LEN", STEP_BITS, timing::UPDATE));
    v
}

/// `M_<name>`: the array's mode codes in `modes`.
pub(super) fn mode_constants(modes: &[Mode]) -> Vec<Item> {
    modes
        .iter()
        .map(|m| {
            localparam(
                &m.verilog_name(),
                Width::of(MODE_BITS),
                lit(MODE_BITS, m.code().into()),
            )
        })
        .collect()
}

/// What both controllers compare with: opcodes, error codes, the array's
/// shape in the widths of the command fields, the result latency and the
/// buffers' depths. `result_latency` is `timing::RESULT_LATENCY`, on a
/// dense array without its product-stage term.
pub(super) fn command_constants(result_latency: Cycles) -> Vec<Item> {
    let mut v = Vec::new();
    for f in &FORMATS {
        v.push(localparam(
            &f.verilog_name(),
            Width::of(OP_BITS),
            lit(OP_BITS, f.opcode.into()),
        ));
    }
    for e in ErrorCode::ALL {
        v.push(localparam(
            &e.verilog_name(),
            Width::of(ERROR_BITS),
            lit(ERROR_BITS, e.code().into()),
        ));
    }
    // The array's shape in the widths of the fields compared with it.
    v.extend(sized_const("MAX_K", TILE_BITS, id("R")));
    v.extend(sized_const("MAX_M", TILE_BITS, id("C")));
    v.extend(sized_const("ACC_LANES", TILE_BITS, id("LA")));
    v.extend(sized_const("LR_CONSTANT", LR_FIELD_BITS, id("LR_SHIFT")));
    v.extend(cycles_const("RESULT_LATENCY", WAIT_BITS, result_latency));
    for buffer in ["W", "X", "G", "A"] {
        let name = format!("{buffer}_DEPTH");
        v.extend(sized_const(&format!("{name}_SPAN"), SPAN_BITS, id(&name)));
    }
    v
}

/// The sequencer's registers and the resident weight tile.
fn state_registers() -> (Vec<Item>, Vec<Stmt>) {
    let bits = |b: u32| int(b as i64);
    registers(&[
        ("ctl_state", bits(STATE_BITS)),
        ("pc", bits(PC_BITS)),
        ("cmd_q", bits(WORD)),
        ("cmd2_q", bits(WORD)),
        ("ex_t", bits(STEP_BITS)),
        ("ex_end", bits(STEP_BITS)),
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
    ])
}

fn state() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Sequencer state and the resident weight tile.".into(),
    )];
    v.extend(state_registers().0);
    v.extend([
        flag_wire("ctl_running", id("ctl_state").differs("S_STOP")),
        flag_wire("in_dec", id("ctl_state").equals("S_DEC")),
        flag_wire("in_dec2", id("ctl_state").equals("S_DEC2")),
        flag_wire("in_exec", id("ctl_state").equals("S_EXEC")),
    ]);
    v
}

/// Command fields: from the command memory in decode, latched after.
/// Reads `in_dec`, `in_dec2` (the cycles that fetch word 0 and word 1),
/// `c_rdata`, `cmd_q` and `cmd2_q`.
pub(super) fn fields() -> Vec<Item> {
    let mut v = vec![
        Item::Comment("The command: word 0 (and BACKWARD's word 1) and its fields.".into()),
        wire_of("w0", WORD, cond("in_dec", "c_rdata", "cmd_q")),
        wire_of("w1", WORD, cond("in_dec2", "c_rdata", "cmd2_q")),
        wire_of("op", OP_BITS, slice("w0", field::OPCODE)),
        wire_of("f_addr_a", ADDR_BITS, slice("w0", field::ADDR_A)),
        wire_of("f_addr_b", ADDR_BITS, slice("w0", field::ADDR_B)),
        wire_of("f_len", LEN_BITS, slice("w0", field::LENGTH)),
        flag_wire("f_flag", id("w0").at(field::FLAG.lo)),
        wire_of("f_mode", MODE_FIELD_BITS, slice("w0", field::BACKWARD_MODE)),
        wire_of("f_lr", LR_FIELD_BITS, slice("w0", field::LR_SHIFT)),
        wire_of("f_m", TILE_BITS, slice("w0", field::TILE_M)),
        wire_of("f_k", TILE_BITS, slice("w0", field::TILE_K)),
        wire_of("f_x_addr", ADDR_BITS, slice("w1", field::X_ADDR)),
    ];
    for f in &FORMATS {
        v.push(flag_wire(
            &format!("is_{}", f.mnemonic.to_lowercase()),
            id("op").equals(id(&f.verilog_name())),
        ));
    }
    v
}

/// Whether a bit outside the command's fields is set: `w0` and, for a
/// two-word command, `w1`. Every command's mask comes from the table.
fn reserved_bits() -> Expr {
    let stray = |w: &str, f: &Format, word_no: usize| {
        // The opcode byte is part of word 0's used bits; it is checked
        // separately (an unknown opcode is its own error).
        let reserved = !f.used_bits(word_no) & !field::OPCODE.mask();
        id(w).bit_and(hex(WORD, reserved)).any()
    };
    let mut e = lit(1, 0);
    for f in FORMATS.iter().rev() {
        let mut test = stray("w0", f, 0);
        if f.words() > 1 {
            test = test.or(stray("w1", f, 1));
        }
        e = cond(is_format(f), test, e);
    }
    e
}

/// `past_end(a, len, limit)`: whether `a + len > limit` (all `SPAN_BITS`
/// wide), as the carry out of the one sum `a + len + ~limit`, which is
/// `a + len - limit - 1` plus `2^SPAN_BITS`. Yosys maps it to a layer of
/// LUTs and one carry chain, where an add and then a compare were two
/// chains in a row; the checks decide every decode cycle, the
/// accelerator's critical path.
fn past_end_function() -> Item {
    let span = || Width::of(SPAN_BITS);
    let sum = zext(1, id("a")) + zext(1, id("len")) + zext(1, !id("limit"));
    Item::Function(Function {
        name: "past_end".into(),
        width: Width::of(1),
        signed: false,
        inputs: ["a", "len", "limit"]
            .iter()
            .map(|n| (n.to_string(), span(), false))
            .collect(),
        locals: vec![],
        // The carry out: bit SPAN_BITS of the sum, its only bit used.
        body: vec![blocking("past_end", (sum >> int(SPAN_BITS as i64)).any())],
    })
}

/// Whether lines `a .. a + len` reach past `limit` (`a + len > limit`).
fn past(a: Expr, a_bits: u32, len: Expr, len_bits: u32, limit: Expr) -> Expr {
    call(
        "past_end",
        [
            zext(SPAN_BITS - a_bits, a),
            zext(SPAN_BITS - len_bits, len),
            limit,
        ],
    )
}

/// ADDRESS_RANGE: every line range the command names, in the order of
/// `docs/COMMANDS.md`.
fn address_range() -> Expr {
    let len = || id("f_len");
    let range =
        |a: &str, l: Expr, l_bits: u32, depth: &str| past(id(a), ADDR_BITS, l, l_bits, id(depth));
    let stream = |a: &str, depth: &str| range(a, len(), LEN_BITS, depth);
    cond(
        is("load_w"),
        range("f_addr_a", id("f_k"), TILE_BITS, "W_DEPTH_SPAN"),
        cond(
            is("forward"),
            stream("f_addr_a", "X_DEPTH_SPAN").or(stream("f_addr_b", "A_DEPTH_SPAN")),
            cond(
                is("backward"),
                any_of(vec![
                    stream("f_addr_a", "G_DEPTH_SPAN"),
                    (!mode_is(BackwardMode::Dx)).and(stream("f_x_addr", "X_DEPTH_SPAN")),
                    (!mode_is(BackwardMode::Dw)).and(stream("f_addr_b", "A_DEPTH_SPAN")),
                ]),
                cond(
                    is("drain"),
                    range("f_addr_a", id("res_m"), TILE_BITS, "A_DEPTH_SPAN"),
                    is("requant")
                        .and(stream("f_addr_a", "A_DEPTH_SPAN").or(stream("f_addr_b", "dst_span"))),
                ),
            ),
        ),
    )
}

/// WEIGHT_OVERLAP: LOAD_W's lines overlap a dirty resident tile's at
/// another address: each range ends past the other's start.
fn weight_overlap() -> Expr {
    let ends_past = |a: &str, k: &str, other: &str| {
        past(
            id(a),
            ADDR_BITS,
            id(k),
            TILE_BITS,
            zext(SPAN_BITS - ADDR_BITS, id(other)),
        )
    };
    is("load_w")
        .and(id("res_valid"))
        .and(id("res_dirty"))
        .and(id("f_addr_a").differs("res_addr"))
        .and(ends_past("res_addr", "res_k", "f_addr_a"))
        .and(ends_past("f_addr_a", "f_k", "res_addr"))
}

/// The test for one checked error code.
fn violates(code: ErrorCode) -> Expr {
    let zero = |n: &str, bits: u32| id(n).equals(lit(bits, 0));
    match code {
        ErrorCode::ReservedBits => reserved_bits(),
        ErrorCode::ZeroSize => cond(
            is("load_w"),
            zero("f_m", TILE_BITS).or(zero("f_k", TILE_BITS)),
            any_of(vec![is("forward"), is("backward"), is("requant")]).and(zero("f_len", LEN_BITS)),
        ),
        ErrorCode::TileTooLarge => {
            is("load_w").and(id("f_m").greater("MAX_M").or(id("f_k").greater("MAX_K")))
        }
        ErrorCode::LrShift => {
            // ArrayConfig::accepts_lr_shift: fits the port and, on an
            // array built with a constant shift, is that constant.
            let max = (1u64 << sysgrad_config::LR_SHIFT_BITS) - 1;
            let too_large = id("f_lr").greater(lit(LR_FIELD_BITS, max));
            let not_constant = id("LR_FIXED")
                .differs(0)
                .and(id("f_lr").differs("LR_CONSTANT"));
            is("update").and(too_large.or(not_constant))
        }
        ErrorCode::NotInterleaved => is("backward")
            .and(mode_is(BackwardMode::Interleaved))
            .and(id("INTERLEAVED").equals(0)),
        ErrorCode::NoTile => any_of(vec![
            is("forward"),
            is("backward"),
            is("drain"),
            is("update"),
        ])
        .and(!id("res_valid")),
        ErrorCode::AddressRange => address_range(),
        ErrorCode::WeightOverlap => weight_overlap(),
        ErrorCode::UnknownOpcode | ErrorCode::ProgramEnd => {
            unreachable!("found while fetching, not by the checks")
        }
    }
}

/// The checks of `docs/COMMANDS.md`, in priority order, into `dec_err`,
/// against the resident tile `res_*`, the command at `pc` and `prog_len`.
pub(super) fn checks() -> Vec<Item> {
    let no_error = || lit(ERROR_BITS, 0);
    let order = std::iter::once(ErrorCode::ReservedBits).chain(ErrorCode::CHECK_ORDER);
    let mut nets = Vec::new();
    let mut first_failing = no_error();
    let mut failing = Vec::new();
    for code in order.collect::<Vec<_>>().into_iter().rev() {
        let net = format!("bad_{}", code.name().to_lowercase());
        nets.push(flag_wire(&net, violates(code)));
        first_failing = cond(id(&net), id(&code.verilog_name()), first_failing);
        failing.push(id(&net));
    }
    nets.reverse();
    failing.reverse();
    let last_opcode = FORMATS.iter().map(|f| f.opcode).max().expect("commands");
    let last_name = sysgrad_isa::command::format(last_opcode).expect("a format");
    debug_assert_eq!(last_opcode, opcode::HALT);
    let mut v = vec![
        Item::Comment("Checks, each complete before the command has any effect.".into()),
        past_end_function(),
        wire_of(
            "dst_span",
            SPAN_BITS,
            cond("f_flag", "G_DEPTH_SPAN", "X_DEPTH_SPAN"),
        ),
        flag_wire(
            "known_op",
            id("op")
                .differs(lit(OP_BITS, 0))
                .and(id("op").at_most(id(&last_name.verilog_name()))),
        ),
    ];
    v.extend(nets);
    let pc_plus = |k: u64| id("pc") + lit(PC_BITS, k);
    v.extend([
        wire_of("chk_err", ERROR_BITS, first_failing),
        // Whether any check fails, without the priority that picks the
        // code: what decides between executing and faulting (only
        // `err_code` needs the code).
        flag_wire("chk_bad", any_of(failing)),
        flag_wire("end0", id("pc").at_least("prog_len")),
        flag_wire("end1", pc_plus(1).at_least("prog_len")),
        wire_of(
            "dec_err",
            ERROR_BITS,
            cond(
                "in_dec",
                cond(
                    "end0",
                    "E_PROGRAM_END",
                    cond(
                        !id("known_op"),
                        "E_UNKNOWN_OPCODE",
                        cond("is_backward", no_error(), "chk_err"),
                    ),
                ),
                cond(
                    "in_dec2",
                    cond("end1", "E_PROGRAM_END", "chk_err"),
                    no_error(),
                ),
            ),
        ),
    ]);
    v
}

/// The array mode of a BACKWARD pass (`second` = the second pass of a
/// SEQUENTIAL command), from the mode table.
fn pass_mode(second: Expr) -> Expr {
    pass_mode_of(id("f_mode"), second)
}

/// The array mode of pass `second` of a BACKWARD whose mode field is
/// `mode_field`.
pub(super) fn pass_mode_of(mode_field: Expr, second: Expr) -> Expr {
    let mode = |m: Mode| id(&m.verilog_name());
    let sel = |m: BackwardMode| field_selects(mode_field.clone(), m);
    let sequential = BackwardMode::Sequential.passes();
    cond(
        sel(BackwardMode::Dx),
        mode(BackwardMode::Dx.passes()[0]),
        cond(
            sel(BackwardMode::Dw),
            mode(BackwardMode::Dw.passes()[0]),
            cond(
                sel(BackwardMode::Interleaved),
                mode(BackwardMode::Interleaved.passes()[0]),
                cond(second, mode(sequential[1]), mode(sequential[0])),
            ),
        ),
    )
}

/// The execute length of the decoded command (`docs/COMMANDS.md`, Cycles).
fn execute_length() -> Expr {
    let len = || zext(1, id("f_len"));
    cond(
        is("load_w").or(is("flush_w")),
        length(timing::LOAD, "LOAD_LEN", len()),
        cond(
            is("forward").or(is("backward")),
            length(timing::PASS, "PASS_EXTRA", len()),
            cond(
                is("drain"),
                length(timing::DRAIN, "DRAIN_LEN", len()),
                cond(
                    is("update"),
                    length(timing::UPDATE, "UPDATE_LEN", len()),
                    length(timing::REQUANT, "", len()),
                ),
            ),
        ),
    )
}

/// How a decode cycle ends: `dec_final` (the command's last word),
/// `dec_fault` (a check failed or a word is missing), `dec_go` (checked).
pub(super) fn decode_outcome() -> Vec<Item> {
    vec![
        flag_wire(
            "dec_final",
            id("in_dec")
                .and(any_of(vec![
                    id("end0"),
                    !id("known_op"),
                    !id("is_backward"),
                ]))
                .or(id("in_dec2")),
        ),
        // `dec_err` is nonzero exactly when the final decode cycle does
        // not go; `dec_go` says so from the failing checks directly, not
        // through `dec_err`'s priority.
        flag_wire(
            "dec_go",
            id("in_dec")
                .and(!id("end0"))
                .and(id("known_op"))
                .and(!id("is_backward"))
                .and(!id("chk_bad"))
                .or(id("in_dec2").and(!id("end1")).and(!id("chk_bad"))),
        ),
        flag_wire("dec_fault", id("dec_final").and(!id("dec_go"))),
    ]
}

fn sequencer() -> Vec<Item> {
    let step = |k: u64| lit(STEP_BITS, k);
    let mut v = vec![Item::Comment(
        "Sequencing: decode ends, execute length, the next cycle's view.".into(),
    )];
    v.extend(decode_outcome());
    v.extend([
        flag_wire(
            "exec_begin",
            id("dec_go").and(!id("is_sync")).and(!id("is_halt")),
        ),
        wire_of("ex_len", STEP_BITS, execute_length()),
        // The last step, against a register set as execution begins: the
        // length is a function of the command, and computing it from the
        // command word every cycle put the decoder in front of every
        // buffer read enable (the accelerator's critical path).
        flag_wire("ex_last", id("in_exec").and(id("ex_t").equals("ex_end"))),
        flag_wire(
            "seq_more",
            id("ex_last")
                .and(is("backward"))
                .and(mode_is(BackwardMode::Sequential))
                .and(!id("ex_pass")),
        ),
        flag_wire("ex_done", id("ex_last").and(!id("seq_more"))),
        // Buffer reads are issued one cycle ahead, from the next cycle's
        // view below. A read has no effect, so the first line of a stream
        // is read in every decode cycle without waiting for the checks
        // (a command that faults, or reads nothing, ignores what it
        // returns): the checks reach no read enable, and were the
        // accelerator's critical path when they did.
        flag_wire(
            "read_ahead",
            any_of(vec![
                id("in_dec"),
                id("in_dec2"),
                id("in_exec").and(!id("ex_done")),
            ]),
        ),
        wire_of(
            "nx_t",
            STEP_BITS,
            cond(
                id("in_exec").and(!id("ex_last")),
                id("ex_t") + step(1),
                step(0),
            ),
        ),
        flag_wire(
            "nx_pass",
            id("in_exec").and(id("ex_pass").or(id("ex_last"))),
        ),
        wire_of("pass_mode", MODE_BITS, pass_mode(id("ex_pass"))),
        wire_of("nx_pass_mode", MODE_BITS, pass_mode(id("nx_pass"))),
    ]);
    v
}

/// What a decode cycle does: latch the word, then stop (fault, HALT),
/// step over a SYNC, start executing, or go on to the second word.
fn decode_step() -> Stmt {
    let pc_plus = |k: u64| id("pc") + lit(PC_BITS, k);
    let stop = |flag: &str, extra: Vec<Stmt>| {
        let mut v = vec![set("ctl_state", "S_STOP"), set(flag, lit(1, 1))];
        v.extend(extra);
        v.push(set("stop_pc", "pc"));
        v
    };
    if_else(
        "dec_fault",
        stop("faulted", vec![set("err_code", "dec_err")]),
        vec![if_else(
            "dec_go",
            vec![if_else(
                "is_halt",
                stop("halted", vec![]),
                vec![if_else(
                    "is_sync",
                    vec![set("pc", pc_plus(1))],
                    vec![
                        set("ctl_state", "S_EXEC"),
                        set("ex_t", lit(STEP_BITS, 0)),
                        set("ex_end", id("ex_len") - lit(STEP_BITS, 1)),
                        set("ex_pass", lit(1, 0)),
                    ],
                )],
            )],
            vec![if_else(
                "in_dec",
                vec![set("ctl_state", "S_DEC2")],
                vec![execute_step()],
            )],
        )],
    )
}

/// What an execute cycle does: the next pass of a SEQUENTIAL BACKWARD, the
/// next command's decode, or the next step.
fn execute_step() -> Stmt {
    let step = |k: u64| lit(STEP_BITS, k);
    // BACKWARD is the only two-word command (`sysgrad_isa`'s tests).
    let backward_words = sysgrad_isa::command::format(opcode::BACKWARD)
        .expect("a format")
        .words() as u64;
    if_else(
        "seq_more",
        vec![set("ex_t", step(0)), set("ex_pass", lit(1, 1))],
        vec![if_else(
            "ex_done",
            vec![
                set("ctl_state", "S_DEC"),
                set(
                    "pc",
                    id("pc") + cond("is_backward", lit(PC_BITS, backward_words), lit(PC_BITS, 1)),
                ),
            ],
            vec![set("ex_t", id("ex_t") + step(1))],
        )],
    )
}

/// The resident tile after a command that changes it.
fn resident_update() -> Stmt {
    let tile_area =
        zext(TILE_AREA_BITS - TILE_BITS, id("f_m")) * zext(TILE_AREA_BITS - TILE_BITS, id("f_k"));
    let when = |c: &str, then: Vec<Stmt>| Stmt::If {
        cond: is(c),
        then,
        els: vec![],
    };
    Stmt::If {
        cond: id("ex_done"),
        then: vec![
            when(
                "load_w",
                vec![
                    set("res_valid", lit(1, 1)),
                    set("res_dirty", lit(1, 0)),
                    set("res_addr", "f_addr_a"),
                    set("res_m", "f_m"),
                    set("res_k", "f_k"),
                    set("res_mk", tile_area),
                ],
            ),
            when(
                "flush_w",
                vec![set("res_valid", lit(1, 0)), set("res_dirty", lit(1, 0))],
            ),
            when("update", vec![set("res_dirty", lit(1, 1))]),
        ],
        els: vec![],
    }
}

fn fsm() -> Item {
    let latch = |state: &str, q: &str| Stmt::If {
        cond: id(state),
        then: vec![set(q, "c_rdata")],
        els: vec![],
    };
    let running = vec![
        latch("in_dec", "cmd_q"),
        latch("in_dec2", "cmd2_q"),
        decode_step(),
    ];
    let stopped = vec![Stmt::If {
        cond: id("start_req"),
        then: vec![
            set("ctl_state", "S_DEC"),
            set("pc", lit(PC_BITS, 0)),
            set("halted", lit(1, 0)),
            set("faulted", lit(1, 0)),
            set("err_code", lit(ERROR_BITS, 0)),
        ],
        els: vec![],
    }];
    let reset = state_registers().1;
    let live = vec![if_else("ctl_running", running, stopped), resident_update()];
    Item::Clocked(vec![if_else("rst", reset, live)])
}

pub(super) fn items() -> Vec<Item> {
    let mut v = constants();
    v.extend(state());
    v.extend(fields());
    v.extend(checks());
    v.extend(sequencer());
    v.extend(datapath::items());
    v.push(fsm());
    v
}
