//! The controller's datapath in `sa_accel`: the array's inputs, the
//! controller's buffer ports, the accumulator read port and the write-back
//! unit, all driven from the sequencer's state in [`super::control`].
//!
//! Timing: every buffer read is registered, so reads are issued one cycle
//! ahead from the sequencer's next-cycle view. Results leave the array a
//! fixed R + C cycles after their input, so a small write-back unit
//! (`wb_*`) started with each pass writes Y or dX lines on its own, its
//! last write falling in the next command's first decode cycle; the
//! accumulator read port forwards a line written in the same cycle
//! (`a_fwd_*`), which a read-before-write bank would not.

use super::control::{any_of, l, lane_mask, low, one, sum, zext};
use super::{registers, rv, wb, wv};
use crate::ir::*;

/// `arr_*`: the array's inputs, zero outside the tile and the stream.
fn array_inputs() -> Vec<Item> {
    let is = |o: &str| id(&format!("is_{o}"));
    let lane_gate = |var: &str, lanes: &str, out: &str, on: &str, mask: &str, src: &str| {
        gen_for(
            var,
            lanes,
            &format!("g_{out}"),
            vec![assign(
                id(out).lane(var, "DW"),
                cond(
                    id(on).and(id(mask).at(var)),
                    id(src).lane(var, "DW"),
                    zeros("DW"),
                ),
            )],
        )
    };
    vec![
        Item::Comment("Array inputs, as the emulator's Driver drives them.".into()),
        wb(
            "stream",
            id("in_exec").and(id("ex_t").less(zext(1, id("f_n")))),
        ),
        wb(
            "x_on",
            id("stream")
                .and(is("forward").or(is("backward").and(id("pass_mode").differs("M_BWD_DX")))),
        ),
        wb("dy_on", id("stream").and(is("backward"))),
        wv("row", 17, id("RM1_17") - "ex_t"),
        wb(
            "w_on",
            id("in_exec")
                .and(is("load_w"))
                .and(id("row").less(zext(9, id("f_k")))),
        ),
        wv("k_mask", "R", lane_mask("R", "res_k")),
        wv("m_mask", "C", lane_mask("C", "res_m")),
        wv("fm_mask", "C", lane_mask("C", "f_m")),
        assign(
            "arr_mode",
            cond(
                !id("in_exec"),
                "M_IDLE",
                cond(
                    is("load_w").or(is("flush_w")),
                    "M_LOAD",
                    cond(
                        is("forward"),
                        "M_FWD",
                        cond(
                            is("backward"),
                            "pass_mode",
                            cond(
                                is("update"),
                                "M_UPDATE",
                                cond(is("drain"), "M_DRAIN", "M_IDLE"),
                            ),
                        ),
                    ),
                ),
            ),
        ),
        assign(
            "arr_lr_shift",
            cond(
                id("in_exec").and(is("update")),
                id("f_b0").bits(5, 0),
                l(6, 0),
            ),
        ),
        assign("arr_dy_valid", "dy_on"),
        lane_gate("l", "R", "arr_x_in", "x_on", "k_mask", "x_rdata"),
        lane_gate("l", "C", "arr_w_in", "w_on", "fm_mask", "w_rdata"),
        lane_gate("l", "C", "arr_dy_in", "dy_on", "m_mask", "g_rdata"),
    ]
}

/// `wide` (LA lanes of AW) from `src` (`n` lanes), zero above `n`.
fn widen_lanes(wide: &str, src: &str, n: &str) -> Vec<Item> {
    vec![
        wire(wide, Width::of(id("LA") * "AW")).item(),
        gen_for(
            "l",
            "LA",
            &format!("g_{wide}"),
            vec![gen_if(
                id("l").less(n),
                "g_in",
                vec![assign(id(wide).lane("l", "AW"), id(src).lane("l", "AW"))],
                vec![assign(id(wide).lane("l", "AW"), zeros("AW"))],
            )],
        ),
    ]
}

/// The controller's side of the buffer ports (`<b>_ctl_*`).
fn buffer_ports() -> Vec<Item> {
    let is = |o: &str| id(&format!("is_{o}"));
    let n17 = || zext(1, id("f_n"));
    let mut v = vec![
        Item::Comment("Command memory: read pc+1 (pc+2 in BACKWARD's second decode).".into()),
        wb("c_ctl_re", id("in_dec").or(id("in_dec2")).or("start_req")),
        wv(
            "c_ctl_raddr",
            "C_AB",
            cond(
                "start_req",
                zeros("C_AB"),
                low("C_AB", "pc") + cond("in_dec", one("C_AB"), one("C_AB") << 1),
            ),
        ),
        wb("c_ctl_we", lit(1, 0)),
        wv("c_ctl_waddr", "C_AB", zeros("C_AB")),
        wv("c_ctl_wdata", 64, zeros(64)),
        Item::Comment(
            "Weights: the new tile's rows, bottom first; the old one written back.".into(),
        ),
        wv("nx_row", 17, id("RM1_17") - "nx_t"),
        wb(
            "w_ctl_re",
            id("nx_exec")
                .and(is("load_w"))
                .and(id("nx_row").less(zext(9, id("f_k")))),
        ),
        wv("w_ctl_raddr", "W_AB", sum("W_AB", "f_a0", "nx_row")),
        wb(
            "wback",
            any_of(vec![is("load_w"), is("flush_w")])
                .and(id("in_exec"))
                .and(id("res_valid"))
                .and(id("res_dirty"))
                .and(id("row").less(zext(9, id("res_k")))),
        ),
        wv("w_ctl_we", "C", cond("wback", "m_mask", zeros("C"))),
        wv("w_ctl_waddr", "W_AB", sum("W_AB", "res_addr", "row")),
        wv("w_ctl_wdata", id("C") * "DW", "arr_w_out"),
        Item::Comment("Activations and gradients: streamed lines; REQUANT's results.".into()),
        wb("req_wr", id("in_exec").and(is("requant"))),
        wb(
            "x_ctl_re",
            id("nx_exec")
                .and(id("nx_t").less(n17()))
                .and(is("forward").or(is("backward").and(id("nx_pass_mode").differs("M_BWD_DX")))),
        ),
        wv(
            "x_ctl_raddr",
            "X_AB",
            cond("is_forward", low("X_AB", "f_a0"), low("X_AB", "f_x")) + low("X_AB", "nx_t"),
        ),
        wv(
            "x_ctl_we",
            "R",
            cond(id("req_wr").and(!id("f_flag")), ones("R"), zeros("R")),
        ),
        wv("x_ctl_waddr", "X_AB", sum("X_AB", "f_a1", "ex_t")),
        wv(
            "x_ctl_wdata",
            id("R") * "DW",
            id("rq_out").bits(id("R") * "DW" - 1, 0),
        ),
        wb(
            "g_ctl_re",
            id("nx_exec")
                .and(is("backward"))
                .and(id("nx_t").less(n17())),
        ),
        wv("g_ctl_raddr", "G_AB", sum("G_AB", "f_a0", "nx_t")),
        wv(
            "g_ctl_we",
            "C",
            cond(id("req_wr").and(id("f_flag")), ones("C"), zeros("C")),
        ),
        wv("g_ctl_waddr", "G_AB", sum("G_AB", "f_a1", "ex_t")),
        wv(
            "g_ctl_wdata",
            id("C") * "DW",
            id("rq_out").bits(id("C") * "DW" - 1, 0),
        ),
        Item::Comment("Accumulators: REQUANT reads, DRAIN and write-back writes.".into()),
        wb("req_rd", id("nx_exec").and(is("requant"))),
        wb("a_ctl_re", id("req_rd").or("wb_rd")),
        wv(
            "a_ctl_raddr",
            "A_AB",
            cond("req_rd", sum("A_AB", "f_a0", "nx_t"), "wb_raddr"),
        ),
        wv("drain_j", 17, id("CM1_17") - "ex_t"),
        wb(
            "drain_wr",
            id("in_exec")
                .and(is("drain"))
                .and(id("drain_j").less(zext(9, id("res_m")))),
        ),
        wv("drain_mask", "LA", lane_mask("LA", "res_k")),
        wv("a_ctl_we", "LA", cond("drain_wr", "drain_mask", "wb_we")),
        wv(
            "a_ctl_waddr",
            "A_AB",
            cond("drain_wr", sum("A_AB", "f_a0", "drain_j"), "wb_line"),
        ),
        wv(
            "a_ctl_wdata",
            id("LA") * "AW",
            cond("drain_wr", "dw_wide", "wb_data"),
        ),
    ];
    v.extend(widen_lanes("dw_wide", "arr_dw_out", "R"));
    v.extend(widen_lanes("y_wide", "arr_y_out", "C"));
    v.extend(widen_lanes("dx_wide", "arr_dx_out", "R"));
    v
}

/// Accumulator read data with same-cycle write forwarding, and REQUANT.
fn accumulator_read() -> Vec<Item> {
    let fwd = Stmt::If {
        cond: id("rst"),
        then: vec![nb("a_fwd_q", zeros("LA"))],
        els: vec![Stmt::If {
            cond: id("a_re"),
            then: vec![
                nb(
                    "a_fwd_q",
                    cond(id("a_raddr").equals("a_waddr"), "a_we", zeros("LA")),
                ),
                nb("a_fwd_data_q", "a_wdata"),
            ],
            els: vec![],
        }],
    };
    vec![
        Item::Comment("A lane written in the cycle it is read reads the new word.".into()),
        rv("a_fwd_q", "LA"),
        rv("a_fwd_data_q", id("LA") * "AW"),
        Item::Clocked(vec![fwd]),
        wire("a_rd", Width::of(id("LA") * "AW")).item(),
        wire("rq_out", Width::of(id("LA") * "DW")).item(),
        gen_for(
            "l",
            "LA",
            "g_a_rd",
            vec![
                assign(
                    id("a_rd").lane("l", "AW"),
                    cond(
                        id("a_fwd_q").at("l"),
                        id("a_fwd_data_q").lane("l", "AW"),
                        id("a_rdata").lane("l", "AW"),
                    ),
                ),
                Item::Instance(Instance {
                    module: "sa_requant".into(),
                    name: "u_requant".into(),
                    params: ["DW", "AW", "FRAC"]
                        .iter()
                        .map(|p| (p.to_string(), id(p)))
                        .collect(),
                    conns: vec![
                        conn("a", id("a_rd").lane("l", "AW")),
                        conn("q", id("rq_out").lane("l", "DW")),
                    ],
                }),
            ],
        ),
    ]
}

/// The write-back unit: Y or dX lines, R + C cycles after their input.
fn write_back() -> Vec<Item> {
    let is = |o: &str| id(&format!("is_{o}"));
    let start = vec![
        nb("wb_wait", "RC8"),
        nb("wb_left", zext(1, id("f_n"))),
        nb("wb_line", low("A_AB", "f_a1")),
        nb("wb_acc", "f_flag"),
        nb("wb_dx", "is_backward"),
        nb(
            "wb_ph",
            cond(
                "is_forward",
                l(2, 0),
                cond(id("f_mode").equals(l(2, 3)), l(2, 2), l(2, 1)),
            ),
        ),
        nb("wb_lanes", cond("is_forward", "res_m", "res_k")),
    ];
    let (regs, reset) = registers(&[
        ("wb_wait", int(8)),
        ("wb_left", int(17)),
        ("wb_line", id("A_AB")),
        ("wb_acc", int(1)),
        ("wb_dx", int(1)),
        ("wb_ph", int(2)),
        ("wb_lanes", int(8)),
    ]);
    let body = if_else(
        "rst",
        reset,
        vec![if_else(
            "wb_start",
            start,
            vec![if_else(
                id("wb_wait").differs(l(8, 0)),
                vec![nb("wb_wait", id("wb_wait") - l(8, 1))],
                vec![Stmt::If {
                    cond: id("wb_write"),
                    then: vec![
                        nb("wb_left", id("wb_left") - l(17, 1)),
                        nb("wb_line", id("wb_line") + one("A_AB")),
                    ],
                    els: vec![],
                }],
            )],
        )],
    );
    let mut v = vec![
        Item::Comment("Write-back of a pass's Y (FORWARD) or dX (BACKWARD) lines.".into()),
        crate::pe::sat_add(),
    ];
    v.extend(regs);
    v.extend([
        wb(
            "wb_start",
            id("exec_begin")
                .and(is("forward").or(is("backward").and(id("f_mode").differs(l(2, 1))))),
        ),
        wb(
            "wb_write",
            id("wb_wait")
                .equals(l(8, 0))
                .and(id("wb_left").differs(l(17, 0))),
        ),
        wb(
            "wb_rd",
            id("wb_acc").and(
                id("wb_wait")
                    .equals(l(8, 1))
                    .and(id("wb_left").differs(l(17, 0)))
                    .or(id("wb_write").and(id("wb_left").greater(l(17, 1)))),
            ),
        ),
        wv(
            "wb_raddr",
            "A_AB",
            cond("wb_write", id("wb_line") + one("A_AB"), "wb_line"),
        ),
        wv("wb_mask", "LA", lane_mask("LA", "wb_lanes")),
        wv("wb_we", "LA", cond("wb_write", "wb_mask", zeros("LA"))),
        wv(
            "wb_new",
            id("LA") * "AW",
            cond("wb_dx", "dx_wide", "y_wide"),
        ),
        wire("wb_data", Width::of(id("LA") * "AW")).item(),
        gen_for(
            "l",
            "LA",
            "g_wb_data",
            vec![assign(
                id("wb_data").lane("l", "AW"),
                cond(
                    "wb_acc",
                    call(
                        "sat_add",
                        [id("a_rd").lane("l", "AW"), id("wb_new").lane("l", "AW")],
                    ),
                    id("wb_new").lane("l", "AW"),
                ),
            )],
        ),
        Item::Clocked(vec![body]),
    ]);
    v
}

pub(super) fn items() -> Vec<Item> {
    let mut v = array_inputs();
    v.extend(buffer_ports());
    v.extend(accumulator_read());
    v.extend(write_back());
    v
}
