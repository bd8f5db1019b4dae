//! The controller of `sa_accel`: fetches command words, checks a command
//! completely in its last decode cycle (`docs/COMMANDS.md`, Errors), then
//! sequences its execute cycles, driving the array's inputs exactly as the
//! emulator's `Driver` does.
//!
//! This file holds the sequencer: fetch, checks, the execute counter and
//! the *next-cycle* view (`nx_exec`, `nx_t`, `nx_pass`) from which
//! [`super::datapath`] issues every registered buffer read one cycle ahead;
//! the command memory is read at `pc + 1` in each decode cycle.

use super::{datapath, registers, sized_const, wb, wv};
use crate::ir::*;
use sysgrad_isa::command::FORMATS;
use sysgrad_isa::mode::MODE_BITS;
use sysgrad_isa::{ErrorCode, Mode};

/// `(Verilog name, opcode)` of every command, from the command table.
fn opcodes() -> Vec<(String, u8)> {
    FORMATS
        .iter()
        .map(|f| (f.verilog_name(), f.opcode))
        .collect()
}

pub(super) fn l(bits: u32, v: u64) -> Expr {
    lit(bits, v)
}

/// `{pad'b0, e}`: `e` zero-extended by `pad` bits.
pub(super) fn zext(pad: i64, e: Expr) -> Expr {
    cat([zeros(pad), e])
}

/// The first `n` lanes set: `~({lanes{1'b1}} << n)`.
pub(super) fn lane_mask(lanes: &str, n: &str) -> Expr {
    !(ones(lanes) << id(n))
}

/// Whether lines `a .. a + len` (16-bit fields) pass the depth `d18`.
fn past(a: Expr, len: Expr, d18: &str) -> Expr {
    (zext(2, a) + zext(2, len)).greater(d18)
}

/// The low `ab` bits of `e` (a buffer address from a wider field).
pub(super) fn low(ab: &str, e: &str) -> Expr {
    id(e).bits(id(ab) - 1, 0)
}

/// `a + b` in `ab` address bits.
pub(super) fn sum(ab: &str, a: &str, b: &str) -> Expr {
    low(ab, a) + low(ab, b)
}

/// 1 in `ab` bits: `{{(ab-1){1'b0}}, 1'b1}` would need ab > 1.
pub(super) fn one(ab: &str) -> Expr {
    !(ones(ab) << 1)
}

pub(super) fn any_of(es: Vec<Expr>) -> Expr {
    es.into_iter().reduce(|a, b| a.or(b)).expect("at least one")
}

fn constants() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Controller states, opcodes, modes, error codes.".into(),
    )];
    for (name, code) in [("S_STOP", 0), ("S_DEC", 1), ("S_DEC2", 2), ("S_EXEC", 3)] {
        v.push(localparam(name, Width::of(2), l(2, code)));
    }
    for (name, code) in opcodes() {
        v.push(localparam(&name, Width::of(8), l(8, code.into())));
    }
    for m in Mode::ALL {
        v.push(localparam(
            &m.verilog_name(),
            Width::of(MODE_BITS),
            l(MODE_BITS, m.code().into()),
        ));
    }
    for e in ErrorCode::ALL {
        v.push(localparam(
            &e.verilog_name(),
            Width::of(8),
            l(8, e.code().into()),
        ));
    }
    v.extend(sized_const("R8", 8, id("R")));
    v.extend(sized_const("C8", 8, id("C")));
    v.extend(sized_const("LA8", 8, id("LA")));
    v.extend(sized_const("RC8", 8, id("R") + "C"));
    v.extend(sized_const("R17", 17, id("R")));
    v.extend(sized_const("RM1_17", 17, id("R") - 1));
    v.extend(sized_const("CM1_17", 17, id("C") - 1));
    v.extend(sized_const("RC1_17", 17, id("R") + "C" - 1));
    v.extend(sized_const("C17", 17, id("C")));
    for (name, depth) in [
        ("W_D18", "W_DEPTH"),
        ("X_D18", "X_DEPTH"),
        ("G_D18", "G_DEPTH"),
        ("A_D18", "A_DEPTH"),
    ] {
        v.extend(sized_const(name, 18, id(depth)));
    }
    v
}

/// The sequencer's registers and the resident weight tile.
fn state_registers() -> (Vec<Item>, Vec<Stmt>) {
    registers(&[
        ("ctl_state", int(2)),
        ("pc", int(17)),
        ("cmd_q", int(64)),
        ("cmd2_q", int(64)),
        ("ex_t", int(17)),
        ("ex_pass", int(1)),
        ("halted", int(1)),
        ("faulted", int(1)),
        ("err_code", int(8)),
        ("stop_pc", int(17)),
        ("res_valid", int(1)),
        ("res_dirty", int(1)),
        ("res_addr", int(16)),
        ("res_m", int(8)),
        ("res_k", int(8)),
        ("res_mk", int(16)),
    ])
}

fn state() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Sequencer state and the resident weight tile.".into(),
    )];
    v.extend(state_registers().0);
    v.extend([
        wb("ctl_running", id("ctl_state").differs("S_STOP")),
        wb("in_dec", id("ctl_state").equals("S_DEC")),
        wb("in_dec2", id("ctl_state").equals("S_DEC2")),
        wb("in_exec", id("ctl_state").equals("S_EXEC")),
    ]);
    v
}

/// Command fields: from the command memory in decode, latched after.
fn fields() -> Vec<Item> {
    let w0 = || id("w0");
    let mut v = vec![
        Item::Comment("The command: word 0 (and BACKWARD's word 1) and its fields.".into()),
        wv("w0", 64, cond("in_dec", "c_rdata", "cmd_q")),
        wv("w1", 64, cond("in_dec2", "c_rdata", "cmd2_q")),
        wv("op", 8, w0().bits(63, 56)),
        wv("f_a0", 16, w0().bits(15, 0)),
        wv("f_a1", 16, w0().bits(31, 16)),
        wv("f_n", 16, w0().bits(47, 32)),
        wb("f_flag", w0().at(48)),
        wv("f_mode", 2, w0().bits(50, 49)),
        wv("f_b0", 8, w0().bits(7, 0)),
        wv("f_m", 8, w0().bits(23, 16)),
        wv("f_k", 8, w0().bits(31, 24)),
        wv("f_x", 16, id("w1").bits(15, 0)),
    ];
    for f in &FORMATS {
        let short = f.mnemonic.to_lowercase();
        v.push(wb(
            &format!("is_{short}"),
            id("op").equals(id(&f.verilog_name())),
        ));
    }
    v
}

/// The checks of `docs/COMMANDS.md`, in priority order, into `dec_err`.
fn checks() -> Vec<Item> {
    let w0 = || id("w0");
    let is = |o: &str| id(&format!("is_{o}"));
    let n = || id("f_n");
    let mode_is = |m: u64| id("f_mode").equals(l(2, m));
    let reserved = cond(
        is("load_w"),
        w0().bits(55, 32).any(),
        cond(
            is("flush_w").or(is("sync")).or(is("halt")),
            w0().bits(55, 0).any(),
            cond(
                is("forward").or(is("requant")),
                w0().bits(55, 49).any(),
                cond(
                    is("backward"),
                    w0().bits(55, 51).any().or(id("w1").bits(63, 16).any()),
                    cond(is("drain"), w0().bits(55, 16).any(), w0().bits(55, 8).any()),
                ),
            ),
        ),
    );
    let sized = is("forward").or(is("backward")).or(is("requant"));
    let zero = cond(
        is("load_w"),
        id("f_m").equals(l(8, 0)).or(id("f_k").equals(l(8, 0))),
        sized.and(n().equals(l(16, 0))),
    );
    let range = cond(
        is("load_w"),
        past(id("f_a0"), zext(8, id("f_k")), "W_D18"),
        cond(
            is("forward"),
            past(id("f_a0"), n(), "X_D18").or(past(id("f_a1"), n(), "A_D18")),
            cond(
                is("backward"),
                any_of(vec![
                    past(id("f_a0"), n(), "G_D18"),
                    (!mode_is(0)).and(past(id("f_x"), n(), "X_D18")),
                    (!mode_is(1)).and(past(id("f_a1"), n(), "A_D18")),
                ]),
                cond(
                    is("drain"),
                    past(id("f_a0"), zext(8, id("res_m")), "A_D18"),
                    is("requant").and(past(id("f_a0"), n(), "A_D18").or(past(
                        id("f_a1"),
                        n(),
                        "dst_d18",
                    ))),
                ),
            ),
        ),
    );
    let span = |a: &str, k: &str| zext(2, id(a)) + zext(10, id(k));
    let overlap = is("load_w")
        .and(id("res_valid"))
        .and(id("res_dirty"))
        .and(id("f_a0").differs("res_addr"))
        .and(zext(2, id("f_a0")).less(span("res_addr", "res_k")))
        .and(zext(2, id("res_addr")).less(span("f_a0", "f_k")));
    let chain = [
        ("E_RESERVED_BITS", reserved),
        ("E_ZERO_SIZE", zero),
        (
            "E_TILE_TOO_LARGE",
            is("load_w").and(id("f_m").greater("C8").or(id("f_k").greater("R8"))),
        ),
        ("E_LR_SHIFT", is("update").and(id("f_b0").greater(l(8, 63)))),
        (
            "E_NOT_INTERLEAVED",
            is("backward")
                .and(mode_is(3))
                .and(id("INTERLEAVED").equals(0)),
        ),
        (
            "E_NO_TILE",
            any_of(vec![
                is("forward"),
                is("backward"),
                is("drain"),
                is("update"),
            ])
            .and(!id("res_valid")),
        ),
        ("E_ADDRESS_RANGE", range),
        ("E_WEIGHT_OVERLAP", overlap),
    ];
    let mut chk = l(8, 0);
    let mut nets = Vec::new();
    for (code, test) in chain.into_iter().rev() {
        let net = format!("bad_{}", code.trim_start_matches("E_").to_lowercase());
        nets.push(wb(&net, test));
        chk = cond(id(&net), code, chk);
    }
    nets.reverse();
    let mut v = vec![
        Item::Comment("Checks, each complete before the command has any effect.".into()),
        wv("dst_d18", 18, cond("f_flag", "G_D18", "X_D18")),
        wb(
            "known_op",
            id("op").differs(l(8, 0)).and(id("op").at_most("OP_HALT")),
        ),
    ];
    v.extend(nets);
    v.extend([
        wv("chk_err", 8, chk),
        wb("end0", id("pc").at_least("prog_len")),
        wb("end1", (id("pc") + l(17, 1)).at_least("prog_len")),
        wv(
            "dec_err",
            8,
            cond(
                "in_dec",
                cond(
                    "end0",
                    "E_PROGRAM_END",
                    cond(
                        !id("known_op"),
                        "E_UNKNOWN_OPCODE",
                        cond("is_backward", l(8, 0), "chk_err"),
                    ),
                ),
                cond("in_dec2", cond("end1", "E_PROGRAM_END", "chk_err"), l(8, 0)),
            ),
        ),
    ]);
    v
}

/// `pm(p)`: the array mode of a BACKWARD pass (`p` = second pass).
fn pass_mode(p: Expr) -> Expr {
    let mode_is = |m: u64| id("f_mode").equals(l(2, m));
    cond(
        mode_is(0),
        "M_BWD_DX",
        cond(
            mode_is(1),
            "M_BWD_DW",
            cond(mode_is(3), "M_BWD_IL", cond(p, "M_BWD_DW", "M_BWD_DX")),
        ),
    )
}

fn sequencer() -> Vec<Item> {
    let n17 = || zext(1, id("f_n"));
    vec![
        Item::Comment("Sequencing: decode ends, execute length, the next cycle's view.".into()),
        wb(
            "dec_final",
            id("in_dec")
                .and(any_of(vec![
                    id("end0"),
                    !id("known_op"),
                    !id("is_backward"),
                ]))
                .or(id("in_dec2")),
        ),
        wb(
            "dec_fault",
            id("dec_final").and(id("dec_err").differs(l(8, 0))),
        ),
        wb("dec_go", id("dec_final").and(id("dec_err").equals(l(8, 0)))),
        wb(
            "exec_begin",
            id("dec_go").and(!id("is_sync")).and(!id("is_halt")),
        ),
        wv(
            "ex_len",
            17,
            cond(
                id("is_load_w").or(id("is_flush_w")),
                "R17",
                cond(
                    id("is_forward").or(id("is_backward")),
                    n17() + "RC1_17",
                    cond("is_drain", "C17", cond("is_update", l(17, 1), n17())),
                ),
            ),
        ),
        wb(
            "ex_last",
            id("in_exec").and(id("ex_t").equals(id("ex_len") - l(17, 1))),
        ),
        wb(
            "seq_more",
            id("ex_last")
                .and(id("is_backward"))
                .and(id("f_mode").equals(l(2, 2)))
                .and(!id("ex_pass")),
        ),
        wb("ex_done", id("ex_last").and(!id("seq_more"))),
        wb(
            "nx_exec",
            id("exec_begin").or(id("in_exec").and(!id("ex_done"))),
        ),
        wv(
            "nx_t",
            17,
            cond(
                id("in_exec").and(!id("ex_last")),
                id("ex_t") + l(17, 1),
                l(17, 0),
            ),
        ),
        wb(
            "nx_pass",
            id("in_exec").and(id("ex_pass").or(id("ex_last"))),
        ),
        wv("pass_mode", 4, pass_mode(id("ex_pass"))),
        wv("nx_pass_mode", 4, pass_mode(id("nx_pass"))),
    ]
}

fn fsm() -> Item {
    let running = vec![
        Stmt::If {
            cond: id("in_dec"),
            then: vec![nb("cmd_q", "c_rdata")],
            els: vec![],
        },
        Stmt::If {
            cond: id("in_dec2"),
            then: vec![nb("cmd2_q", "c_rdata")],
            els: vec![],
        },
        if_else(
            "dec_fault",
            vec![
                nb("ctl_state", "S_STOP"),
                nb("faulted", lit(1, 1)),
                nb("err_code", "dec_err"),
                nb("stop_pc", "pc"),
            ],
            vec![if_else(
                "dec_go",
                vec![if_else(
                    "is_halt",
                    vec![
                        nb("ctl_state", "S_STOP"),
                        nb("halted", lit(1, 1)),
                        nb("stop_pc", "pc"),
                    ],
                    vec![if_else(
                        "is_sync",
                        vec![nb("pc", id("pc") + l(17, 1))],
                        vec![
                            nb("ctl_state", "S_EXEC"),
                            nb("ex_t", l(17, 0)),
                            nb("ex_pass", lit(1, 0)),
                        ],
                    )],
                )],
                vec![if_else(
                    "in_dec",
                    vec![nb("ctl_state", "S_DEC2")],
                    vec![if_else(
                        "seq_more",
                        vec![nb("ex_t", l(17, 0)), nb("ex_pass", lit(1, 1))],
                        vec![if_else(
                            "ex_done",
                            vec![
                                nb("ctl_state", "S_DEC"),
                                nb("pc", id("pc") + cond("is_backward", l(17, 2), l(17, 1))),
                            ],
                            vec![nb("ex_t", id("ex_t") + l(17, 1))],
                        )],
                    )],
                )],
            )],
        ),
    ];
    let stopped = vec![Stmt::If {
        cond: id("start_req"),
        then: vec![
            nb("ctl_state", "S_DEC"),
            nb("pc", l(17, 0)),
            nb("halted", lit(1, 0)),
            nb("faulted", lit(1, 0)),
            nb("err_code", l(8, 0)),
        ],
        els: vec![],
    }];
    let resident = vec![Stmt::If {
        cond: id("ex_done"),
        then: vec![
            Stmt::If {
                cond: id("is_load_w"),
                then: vec![
                    nb("res_valid", lit(1, 1)),
                    nb("res_dirty", lit(1, 0)),
                    nb("res_addr", "f_a0"),
                    nb("res_m", "f_m"),
                    nb("res_k", "f_k"),
                    nb("res_mk", zext(8, id("f_m")) * zext(8, id("f_k"))),
                ],
                els: vec![],
            },
            Stmt::If {
                cond: id("is_flush_w"),
                then: vec![nb("res_valid", lit(1, 0)), nb("res_dirty", lit(1, 0))],
                els: vec![],
            },
            Stmt::If {
                cond: id("is_update"),
                then: vec![nb("res_dirty", lit(1, 1))],
                els: vec![],
            },
        ],
        els: vec![],
    }];
    let reset = state_registers().1;
    let mut live = vec![if_else("ctl_running", running, stopped)];
    live.extend(resident);
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
