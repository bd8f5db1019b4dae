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

use super::control::mode_is;
use super::sizes::*;
use super::{flag_wire, reg_of, registers, wire_of};
use crate::ir::*;
use sysgrad_isa::BackwardMode;

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
        flag_wire(
            "stream",
            id("in_exec").and(id("ex_t").less(zext(STEP_BITS - LEN_BITS, id("f_len")))),
        ),
        flag_wire(
            "x_on",
            id("stream")
                .and(is("forward").or(is("backward").and(id("pass_mode").differs("M_BWD_DX")))),
        ),
        flag_wire("dy_on", id("stream").and(is("backward"))),
        wire_of("row", STEP_BITS, id("LAST_ROW") - "ex_t"),
        flag_wire(
            "w_on",
            id("in_exec")
                .and(is("load_w"))
                .and(id("row").less(zext(STEP_BITS - TILE_BITS, id("f_k")))),
        ),
        wire_of("k_mask", "R", lane_mask("R", "res_k")),
        wire_of("m_mask", "C", lane_mask("C", "res_m")),
        wire_of("fm_mask", "C", lane_mask("C", "f_m")),
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
                id("f_lr").bits(5, 0),
                lit(sysgrad_config::LR_SHIFT_BITS, 0),
            ),
        ),
        assign("arr_dy_valid", "dy_on"),
        lane_gate("l", "R", "arr_x_in", "x_on", "k_mask", "x_rdata"),
        lane_gate("l", "C", "arr_w_in", "w_on", "fm_mask", "w_rdata"),
        lane_gate("l", "C", "arr_dy_in", "dy_on", "m_mask", "g_rdata"),
    ]
}

/// `wide` (LA lanes of AW) from `src` (`n` lanes), zero above `n`.
pub(super) fn widen_lanes(wide: &str, src: &str, n: &str) -> Vec<Item> {
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
    let n17 = || zext(STEP_BITS - LEN_BITS, id("f_len"));
    let mut v = vec![
        Item::Comment("Command memory: read pc+1 (pc+2 in BACKWARD's second decode).".into()),
        flag_wire("c_ctl_re", id("in_dec").or(id("in_dec2")).or("start_req")),
        wire_of(
            "c_ctl_raddr",
            "C_AB",
            cond(
                "start_req",
                zeros("C_AB"),
                low("C_AB", "pc") + cond("in_dec", one("C_AB"), one("C_AB") << 1),
            ),
        ),
        flag_wire("c_ctl_we", lit(1, 0)),
        wire_of("c_ctl_waddr", "C_AB", zeros("C_AB")),
        wire_of("c_ctl_wdata", 64, zeros(64)),
        Item::Comment(
            "Weights: the new tile's rows, bottom first; the old one written back.".into(),
        ),
        wire_of("nx_row", STEP_BITS, id("LAST_ROW") - "nx_t"),
        flag_wire(
            "w_ctl_re",
            id("read_ahead")
                .and(is("load_w"))
                .and(id("nx_row").less(zext(STEP_BITS - TILE_BITS, id("f_k")))),
        ),
        wire_of("w_ctl_raddr", "W_AB", sum("W_AB", "f_addr_a", "nx_row")),
        flag_wire(
            "wback",
            any_of(vec![is("load_w"), is("flush_w")])
                .and(id("in_exec"))
                .and(id("res_valid"))
                .and(id("res_dirty"))
                .and(id("row").less(zext(STEP_BITS - TILE_BITS, id("res_k")))),
        ),
        wire_of("w_ctl_we", "C", cond("wback", "m_mask", zeros("C"))),
        wire_of("w_ctl_waddr", "W_AB", sum("W_AB", "res_addr", "row")),
        wire_of("w_ctl_wdata", id("C") * "DW", "arr_w_out"),
        Item::Comment("Activations and gradients: streamed lines; REQUANT's results.".into()),
        flag_wire("req_wr", id("in_exec").and(is("requant"))),
        flag_wire(
            "x_ctl_re",
            id("read_ahead")
                .and(id("nx_t").less(n17()))
                .and(is("forward").or(is("backward").and(id("nx_pass_mode").differs("M_BWD_DX")))),
        ),
        wire_of(
            "x_ctl_raddr",
            "X_AB",
            cond(
                "is_forward",
                low("X_AB", "f_addr_a"),
                low("X_AB", "f_x_addr"),
            ) + low("X_AB", "nx_t"),
        ),
        wire_of(
            "x_ctl_we",
            "R",
            cond(id("req_wr").and(!id("f_flag")), ones("R"), zeros("R")),
        ),
        wire_of("x_ctl_waddr", "X_AB", sum("X_AB", "f_addr_b", "ex_t")),
        wire_of(
            "x_ctl_wdata",
            id("R") * "DW",
            id("rq_out").bits(id("R") * "DW" - 1, 0),
        ),
        flag_wire(
            "g_ctl_re",
            id("read_ahead")
                .and(is("backward"))
                .and(id("nx_t").less(n17())),
        ),
        wire_of("g_ctl_raddr", "G_AB", sum("G_AB", "f_addr_a", "nx_t")),
        wire_of(
            "g_ctl_we",
            "C",
            cond(id("req_wr").and(id("f_flag")), ones("C"), zeros("C")),
        ),
        wire_of("g_ctl_waddr", "G_AB", sum("G_AB", "f_addr_b", "ex_t")),
        wire_of(
            "g_ctl_wdata",
            id("C") * "DW",
            id("rq_out").bits(id("C") * "DW" - 1, 0),
        ),
        Item::Comment("Accumulators: REQUANT reads, DRAIN and write-back writes.".into()),
        flag_wire("req_rd", id("read_ahead").and(is("requant"))),
        flag_wire("a_ctl_re", id("req_rd").or("wb_rd")),
        wire_of(
            "a_ctl_raddr",
            "A_AB",
            cond("req_rd", sum("A_AB", "f_addr_a", "nx_t"), "wb_raddr"),
        ),
        wire_of("drain_j", STEP_BITS, id("LAST_COL") - "ex_t"),
        flag_wire(
            "drain_wr",
            id("in_exec")
                .and(is("drain"))
                .and(id("drain_j").less(zext(STEP_BITS - TILE_BITS, id("res_m")))),
        ),
        wire_of("drain_mask", "LA", lane_mask("LA", "res_k")),
        wire_of("a_ctl_we", "LA", cond("drain_wr", "drain_mask", "wb_we")),
        wire_of(
            "a_ctl_waddr",
            "A_AB",
            cond("drain_wr", sum("A_AB", "f_addr_a", "drain_j"), "wb_line"),
        ),
        wire_of(
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
pub(super) fn accumulator_read() -> Vec<Item> {
    let fwd = Stmt::If {
        cond: id("rst"),
        then: vec![set("a_fwd_q", zeros("LA"))],
        els: vec![Stmt::If {
            cond: id("a_re"),
            then: vec![
                set(
                    "a_fwd_q",
                    cond(id("a_raddr").equals("a_waddr"), "a_we", zeros("LA")),
                ),
                set("a_fwd_data_q", "a_wdata"),
            ],
            els: vec![],
        }],
    };
    vec![
        Item::Comment("A lane written in the cycle it is read reads the new word.".into()),
        reg_of("a_fwd_q", "LA"),
        reg_of("a_fwd_data_q", id("LA") * "AW"),
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
        // Loaded in the pass's first execute cycle, one after `wb_begin`
        // (R + C + MUL_REG >= 2), so that the checks of the decode cycle
        // do not reach these registers' enables.
        set("wb_wait", id("RESULT_LATENCY") - lit(WAIT_BITS, 1)),
        set("wb_left", zext(STEP_BITS - LEN_BITS, id("f_len"))),
        set("wb_line", low("A_AB", "f_addr_b")),
        set("wb_acc", "f_flag"),
        set("wb_dx", "is_backward"),
        set(
            "wb_ph",
            cond(
                "is_forward",
                WbPhase::Forward.lit(),
                cond(
                    mode_is(BackwardMode::Interleaved),
                    WbPhase::Interleaved.lit(),
                    WbPhase::Dx.lit(),
                ),
            ),
        ),
        set("wb_lanes", cond("is_forward", "res_m", "res_k")),
    ];
    let (regs, reset) = registers(&[
        ("wb_start", int(1)),
        ("wb_wait", int(WAIT_BITS as i64)),
        ("wb_left", int(STEP_BITS as i64)),
        ("wb_line", id("A_AB")),
        ("wb_acc", int(1)),
        ("wb_dx", int(1)),
        ("wb_ph", int(WbPhase::BITS as i64)),
        ("wb_lanes", int(TILE_BITS as i64)),
    ]);
    let body = if_else(
        "rst",
        reset,
        vec![
            set("wb_start", "wb_begin"),
            if_else(
                "wb_start",
                start,
                vec![if_else(
                    id("wb_wait").differs(lit(WAIT_BITS, 0)),
                    vec![set("wb_wait", id("wb_wait") - lit(WAIT_BITS, 1))],
                    vec![Stmt::If {
                        cond: id("wb_write"),
                        then: vec![
                            set("wb_left", id("wb_left") - lit(STEP_BITS, 1)),
                            set("wb_line", id("wb_line") + one("A_AB")),
                        ],
                        els: vec![],
                    }],
                )],
            ),
        ],
    );
    let mut v = vec![
        Item::Comment("Write-back of a pass's Y (FORWARD) or dX (BACKWARD) lines.".into()),
        crate::pe::sat_add(),
    ];
    v.extend(regs);
    v.extend([
        flag_wire(
            "wb_begin",
            id("exec_begin").and(is("forward").or(is("backward").and(!mode_is(BackwardMode::Dw)))),
        ),
        flag_wire(
            "wb_write",
            id("wb_wait")
                .equals(lit(WAIT_BITS, 0))
                .and(id("wb_left").differs(lit(STEP_BITS, 0))),
        ),
        flag_wire(
            "wb_rd",
            id("wb_acc").and(
                id("wb_wait")
                    .equals(lit(WAIT_BITS, 1))
                    .and(id("wb_left").differs(lit(STEP_BITS, 0)))
                    .or(id("wb_write").and(id("wb_left").greater(lit(STEP_BITS, 1)))),
            ),
        ),
        wire_of(
            "wb_raddr",
            "A_AB",
            cond("wb_write", id("wb_line") + one("A_AB"), "wb_line"),
        ),
    ]);
    v.extend(write_back_data());
    v.push(Item::Clocked(vec![body]));
    v
}

/// What a write-back line writes: Y (`y_wide`) or dX (`dx_wide`) in the
/// first `wb_lanes` lanes, added to the line's old value (`a_rd`) if
/// `wb_acc`, when `wb_write`.
pub(super) fn write_back_data() -> Vec<Item> {
    vec![
        wire_of("wb_mask", "LA", lane_mask("LA", "wb_lanes")),
        wire_of("wb_we", "LA", cond("wb_write", "wb_mask", zeros("LA"))),
        wire_of(
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
    ]
}

pub(super) fn items() -> Vec<Item> {
    let mut v = array_inputs();
    v.extend(buffer_ports());
    v.extend(accumulator_read());
    v.extend(write_back());
    v
}
