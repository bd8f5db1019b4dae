//! The host side of `sa_accel` (`docs/HOST.md`): the AXI4-Lite register
//! file and the DMA engine between the AXI4-Streams and the buffers.
//!
//! The DMA moves one buffer lane per beat. A write takes a beat whenever
//! one is offered. A read is a two-stage pipeline, the bank's registered
//! read data (`s1_*`) and the stream's output register (`m_*`), each
//! advancing only when the next stage has room, so `m_axis_tdata` holds
//! still under back-pressure and the stream still moves a beat per cycle.

use super::sizes::{ADDR_BITS, TILE_BITS};
use super::{flag_wire, registers, sized_const, wire_of, BUFFERS};
use crate::ir::*;
use sysgrad_isa::host::{
    reg, shape, status, Counter, DmaError, DmaTarget, AXIL_ADDR_BITS, AXIL_DATA_BITS, DMA_READ,
    DMA_WRITE, ID_VALUE, STREAM_BITS,
};

/// A DMA target code (`DMA_TARGET`'s low bits).
const TARGET_BITS: u32 = 3;
/// A lane index or count of a line: as wide as a tile-size field.
const LANE_BITS: u32 = TILE_BITS;
/// Lines left of a transfer: up to a buffer's depth, `2^ADDR_BITS`.
const COUNT_BITS: u32 = ADDR_BITS + 1;
/// A DMA error code (`STATUS[23:16]`).
const DMA_ERROR_BITS: u32 = 8;

fn addr(offset: u32) -> Expr {
    hex(AXIL_ADDR_BITS, offset.into())
}

fn is_wr(offset: u32) -> Expr {
    id("s_axil_awaddr").equals(addr(offset))
}

/// `e` (`w` bits, sign bit `sign`) sign-extended to the 64-bit stream.
fn sext64(e: Expr, sign: Expr, w: &str) -> Expr {
    cat([repeat(int(64) - w, sign), e])
}

/// Whether the beat fits a signed `w`-bit word, and its saturated value.
fn beat_value(w: &str) -> Vec<Item> {
    let t = id("s_axis_tdata");
    let lw = w.to_lowercase();
    let fits = format!("fits_{lw}");
    vec![
        flag_wire(
            &fits,
            sext64(t.bits(id(w) - 1, 0), t.at(id(w) - 1), w).equals(t.clone()),
        ),
        wire_of(
            &format!("dma_val_{lw}"),
            w,
            cond(&*fits, t.bits(id(w) - 1, 0), clamp_value(t.at(63), w)),
        ),
    ]
}

/// Per-target value of the selected DMA target, as a `bits`-bit mux on
/// `sel` (3 bits) over the targets in `BUFFERS` order.
fn by_target(sel: &str, values: [Expr; 5], default: Expr) -> Expr {
    let mut e = default;
    for (b, v) in BUFFERS.iter().zip(values).rev() {
        e = cond(id(sel).equals(lit(3, b.target.code().into())), v, e);
    }
    e
}

fn constants() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Host interface: registers (docs/HOST.md).".into(),
    )];
    v.extend(sized_const("DW5", shape::IN_BITS_FIELD.bits, id("DW")));
    v.extend(sized_const("AW6", shape::ACC_BITS_FIELD.bits, id("AW")));
    v.extend(sized_const("CNT_BITS32", AXIL_DATA_BITS, id("CNT_BITS")));
    v.extend(sized_const("IL1", 1, id("INTERLEAVED")));
    // Lanes per packed beat (config::host::lanes_per_beat), as wide as a
    // lane count.
    v.extend(sized_const(
        "P_DW",
        LANE_BITS,
        cond(id("DW").greater(64), 1, 64 / id("DW")),
    ));
    v.extend(sized_const(
        "P_AW",
        LANE_BITS,
        cond(id("AW").greater(64), 1, 64 / id("AW")),
    ));
    for b in &BUFFERS {
        v.extend(sized_const(
            &format!("{}_DEPTH_REG", b.prefix.to_uppercase()),
            32,
            id(b.depth),
        ));
    }
    v
}

/// The AXI4-Lite write channel and the writable registers.
fn axil_write() -> Vec<Item> {
    let wd = || id("s_axil_wdata");
    let busy = || id("ctl_running").or("dma_on");
    let ok = [
        is_wr(reg::CTRL).and(!(wd().at(0).and(busy()))),
        is_wr(reg::PROG_LEN)
            .and(wd().at_most("C_DEPTH_REG"))
            .and(!id("ctl_running")),
        is_wr(reg::DMA_TARGET),
        is_wr(reg::DMA_ADDR),
        is_wr(reg::DMA_COUNT),
        is_wr(reg::DMA_CTRL)
            .and(wd().bits(31, 3).equals(lit(29, 0)))
            .and(
                wd().bits(1, 0)
                    .equals(lit(2, DMA_WRITE.into()))
                    .or(wd().bits(1, 0).equals(lit(2, DMA_READ.into()))),
            ),
    ]
    .into_iter()
    .reduce(|a, b| a.or(b))
    .expect("writable registers");
    let store = |offset: u32, r: &str, value: Expr| Stmt::If {
        cond: is_wr(offset),
        then: vec![set(r, value)],
        els: vec![],
    };
    let (regs, reset) = registers(&[
        ("bvalid_q", int(1)),
        ("bresp_q", int(2)),
        ("prog_len", int(17)),
        ("dma_target_q", int(32)),
        ("dma_addr_q", int(32)),
        ("dma_count_q", int(32)),
    ]);
    let body = if_else(
        "rst",
        reset,
        vec![if_else(
            "axil_wr",
            vec![
                set("bvalid_q", lit(1, 1)),
                set("bresp_q", cond("wr_ok", lit(2, 0), lit(2, 2))),
                Stmt::If {
                    cond: id("wr_ok"),
                    then: vec![
                        store(reg::PROG_LEN, "prog_len", wd().bits(16, 0)),
                        store(reg::DMA_TARGET, "dma_target_q", wd()),
                        store(reg::DMA_ADDR, "dma_addr_q", wd()),
                        store(reg::DMA_COUNT, "dma_count_q", wd()),
                    ],
                    els: vec![],
                },
            ],
            vec![Stmt::If {
                cond: id("s_axil_bready"),
                then: vec![set("bvalid_q", lit(1, 0))],
                els: vec![],
            }],
        )],
    );
    let mut v = regs;
    v.extend([
        Item::Comment("A write takes address and data together, answered the next cycle.".into()),
        flag_wire(
            "axil_wr",
            id("s_axil_awvalid")
                .and(id("s_axil_wvalid"))
                .and(!id("bvalid_q")),
        ),
        assign("s_axil_awready", "axil_wr"),
        assign("s_axil_wready", "axil_wr"),
        assign("s_axil_bvalid", "bvalid_q"),
        assign("s_axil_bresp", "bresp_q"),
        flag_wire("wr_ok", id("s_axil_wstrb").equals(hex(4, 0xf)).and(ok)),
        flag_wire("wr_accepted", id("axil_wr").and(id("wr_ok"))),
        flag_wire(
            "start_req",
            id("wr_accepted").and(is_wr(reg::CTRL)).and(wd().at(0)),
        ),
        flag_wire(
            "clear_req",
            id("wr_accepted").and(is_wr(reg::CTRL)).and(wd().at(1)),
        ),
        flag_wire("dma_req", id("wr_accepted").and(is_wr(reg::DMA_CTRL))),
        Item::Clocked(vec![body]),
    ]);
    v
}

// The STATUS concatenation in `axil_read` has the layout of
// `sysgrad_isa::host::status`; checked when this crate compiles (the
// tests run in release, where a debug_assert would not).
const _: () = assert!(
    status::RUNNING == 1
        && status::HALTED == 2
        && status::FAULTED == 4
        && status::DMA_BUSY == 8
        && status::ERROR_SHIFT == 8
        && status::DMA_ERROR_SHIFT == 16
);

/// `SHAPE` from the fields of `sysgrad_isa::host::shape`, high to low,
/// zero above the top field.
fn shape_value(dense: bool) -> Expr {
    let value = |name: &str| match name {
        "dense" => lit(1, dense.into()),
        // A dense array has no multiplier register (and no MUL_REG).
        "mul_reg" if dense => lit(1, 0),
        "mul_reg" => id("MUL_REG").differs(0),
        "interleaved" => id("IL1"),
        "acc_bits" => id("AW6"),
        "in_bits" => id("DW5"),
        "cols" => id("MAX_M"),
        "rows" => id("MAX_K"),
        other => unreachable!("SHAPE field {other} has no RTL value"),
    };
    let top = shape::MUL_REG.lo + shape::MUL_REG.bits;
    let mut parts: Vec<Expr> = (top < AXIL_DATA_BITS)
        .then(|| lit(AXIL_DATA_BITS - top, 0))
        .into_iter()
        .collect();
    parts.extend(shape::FIELDS.iter().map(|(name, _)| value(name)));
    Expr::Concat(parts)
}

/// The AXI4-Lite read channel: one register per offset, SLVERR elsewhere.
fn axil_read(dense: bool) -> Vec<Item> {
    let read = |offset: u32, value: Expr| {
        (
            vec![addr(offset)],
            vec![set("rdata_q", value), set("rresp_q", lit(2, 0))],
        )
    };
    let mut arms = vec![
        read(reg::ID, hex(32, ID_VALUE.into())),
        read(reg::SHAPE, shape_value(dense)),
        read(
            reg::STATUS,
            cat([
                lit(8, 0),
                id("dma_err"),
                id("err_code"),
                lit(4, 0),
                id("dma_on"),
                id("faulted"),
                id("halted"),
                id("ctl_running"),
            ]),
        ),
        read(reg::PC, cat([lit(15, 0), id("stop_pc")])),
        read(reg::PROG_LEN, cat([lit(15, 0), id("prog_len")])),
        read(reg::COUNTER_WIDTH, id("CNT_BITS32")),
        read(reg::DMA_TARGET, id("dma_target_q")),
        read(reg::DMA_ADDR, id("dma_addr_q")),
        read(reg::DMA_COUNT, id("dma_count_q")),
        read(reg::DMA_DEPTH, id("tgt_depth")),
    ];
    for c in Counter::ALL {
        for half in 0..2 {
            let value = super::counters::register_half(c, half);
            arms.push(read(c.offset() + 4 * half, value));
        }
    }
    let (regs, reset) = registers(&[
        ("rvalid_q", int(1)),
        ("rdata_q", int(32)),
        ("rresp_q", int(2)),
    ]);
    let body = if_else(
        "rst",
        reset,
        vec![if_else(
            "axil_rd",
            vec![
                set("rvalid_q", lit(1, 1)),
                Stmt::Case {
                    sel: id("s_axil_araddr"),
                    arms,
                    default: vec![set("rdata_q", lit(32, 0)), set("rresp_q", lit(2, 2))],
                },
            ],
            vec![Stmt::If {
                cond: id("s_axil_rready"),
                then: vec![set("rvalid_q", lit(1, 0))],
                els: vec![],
            }],
        )],
    );
    let mut v = vec![Item::Comment(
        "A read is answered the cycle after its address.".into(),
    )];
    v.extend(regs);
    v.extend([
        flag_wire("axil_rd", id("s_axil_arvalid").and(!id("rvalid_q"))),
        assign("s_axil_arready", !id("rvalid_q")),
        assign("s_axil_rvalid", "rvalid_q"),
        assign("s_axil_rdata", "rdata_q"),
        assign("s_axil_rresp", "rresp_q"),
        Item::Clocked(vec![body]),
    ]);
    v
}

/// The DMA's registers, and the reset statements that clear them.
fn dma_registers() -> (Vec<Item>, Vec<Stmt>) {
    registers(&[
        ("dma_on", int(1)),
        ("dma_dir", int(1)),
        ("dma_packed", int(1)),
        ("dma_tgt", int(TARGET_BITS as i64)),
        ("dma_line", int(ADDR_BITS as i64)),
        ("dma_lane", int(LANE_BITS as i64)),
        ("dma_left", int(COUNT_BITS as i64)),
        ("dma_err", int(DMA_ERROR_BITS as i64)),
        ("s1_v", int(1)),
        ("s1_lane", int(LANE_BITS as i64)),
        ("s1_last", int(1)),
        ("m_v", int(1)),
        ("m_data", int(STREAM_BITS as i64)),
        ("m_last", int(1)),
    ])
}

/// A `DMA_CTRL` write: the target's depth and the checks that refuse it.
fn dma_request() -> Vec<Item> {
    let depth_reg = |b: &str| id(&format!("{}_DEPTH_REG", b.to_uppercase()));
    vec![
        wire_of(
            "tgt_depth",
            AXIL_DATA_BITS,
            by_target(
                "dma_target_sel",
                BUFFERS.map(|b| depth_reg(b.prefix)),
                lit(AXIL_DATA_BITS, 0),
            ),
        ),
        wire_of(
            "dma_target_sel",
            TARGET_BITS,
            id("dma_target_q").bits(TARGET_BITS - 1, 0),
        ),
        flag_wire(
            "dma_bad_target",
            id("dma_target_q").greater(lit(AXIL_DATA_BITS, DmaTarget::Accumulators.code().into())),
        ),
        flag_wire(
            "dma_bad_range",
            id("dma_count_q").equals(lit(AXIL_DATA_BITS, 0)).or((cat([
                lit(1, 0),
                id("dma_addr_q"),
            ]) + cat([
                lit(1, 0),
                id("dma_count_q"),
            ]))
            .greater(cat([lit(1, 0), id("tgt_depth")]))),
        ),
        flag_wire("dma_busy_req", id("ctl_running").or("dma_on")),
        flag_wire(
            "dma_start",
            id("dma_req")
                .and(!id("dma_busy_req"))
                .and(!id("dma_bad_target"))
                .and(!id("dma_bad_range")),
        ),
    ]
}

/// Lanes of the target's lines, lanes a beat moves, and whether this beat
/// ends its line.
fn dma_lanes() -> Vec<Item> {
    let one = || lit(LANE_BITS, 1);
    let lanes = [
        one(),
        id("MAX_M"),
        id("MAX_K"),
        id("MAX_M"),
        id("ACC_LANES"),
    ];
    let packed = [one(), id("P_DW"), id("P_DW"), id("P_DW"), id("P_AW")];
    let wide = |n: &str| cat([lit(1, 0), id(n)]);
    vec![
        wire_of("dma_lanes", LANE_BITS, by_target("dma_tgt", lanes, one())),
        Item::Comment("Lanes a beat moves: 1, or as many as fit 64 bits when packed.".into()),
        wire_of(
            "dma_step",
            LANE_BITS,
            cond("dma_packed", by_target("dma_tgt", packed, one()), one()),
        ),
        flag_wire(
            "lane_last",
            (wide("dma_lane") + wide("dma_step")).at_least(wide("dma_lanes")),
        ),
    ]
}

/// Taking beats from `s_axis`, and each beat's value per word width.
fn dma_write_beats() -> Vec<Item> {
    let mut v = vec![
        assign("s_axis_tready", id("dma_on").and(!id("dma_dir"))),
        flag_wire("dma_wbeat", id("s_axis_tvalid").and("s_axis_tready")),
    ];
    v.extend(beat_value("DW"));
    v.extend(beat_value("AW"));
    v
}

/// The read data of each buffer shifted to the beat's first lane, and
/// the mask of a packed beat's lanes.
fn dma_read_lanes() -> Vec<Item> {
    let mut v = Vec::new();
    for (w, p) in [("DW", "P_DW"), ("AW", "P_AW")] {
        v.push(localparam(
            &format!("PMASK_{w}"),
            Width::of(64),
            !(ones(64) << (id(p) * w)),
        ));
    }
    for (bus, lanes, w) in [
        ("w_rdata", "C", "DW"),
        ("x_rdata", "R", "DW"),
        ("g_rdata", "C", "DW"),
        ("a_rd", "LA", "AW"),
    ] {
        let bits = id(lanes) * w;
        let rx = format!("rx_{bus}");
        v.push(wire_of(
            &rx,
            bits.clone() + 64,
            cat([zeros(64), id(bus)]) >> (id("s1_lane") * w),
        ));
        v.push(wire_of(
            &format!("{rx}_unused"),
            bits.clone(),
            id(&rx).bits(bits + 63, 64),
        ));
    }
    v
}

/// A write beat: whether it fits its word, the lanes it writes, and its
/// lanes placed in the line when packed.
fn dma_write_packing() -> Vec<Item> {
    vec![
        flag_wire(
            "beat_fits",
            id("dma_packed").or(by_target(
                "dma_tgt",
                [
                    lit(1, 1),
                    id("fits_dw"),
                    id("fits_dw"),
                    id("fits_dw"),
                    id("fits_aw"),
                ],
                lit(1, 1),
            )),
        ),
        wire_of(
            "dma_wmask",
            "LA",
            !(ones("LA") << id("dma_step")) << id("dma_lane"),
        ),
        Item::Comment("Packed beats: lane dma_lane + i is bits [i*W +: W] of the beat.".into()),
        wire_of(
            "dma_pkw_dw",
            id("LA") * "DW" + 64,
            cat([zeros(id("LA") * "DW"), id("s_axis_tdata")]) << (id("dma_lane") * "DW"),
        ),
        wire_of(
            "dma_pkw_aw",
            id("LA") * "AW" + 64,
            cat([zeros(id("LA") * "AW"), id("s_axis_tdata")]) << (id("dma_lane") * "AW"),
        ),
        wire_of(
            "dma_pkw_dw_unused",
            64,
            id("dma_pkw_dw").bits(id("LA") * "DW" + 63, id("LA") * "DW"),
        ),
        wire_of(
            "dma_pkw_aw_unused",
            64,
            id("dma_pkw_aw").bits(id("LA") * "AW" + 63, id("LA") * "AW"),
        ),
    ]
}

/// The read pipeline: the bank's registered read (`s1_*`), then the
/// stream's output register (`m_*`), each moving only into room.
fn dma_read_pipeline() -> Vec<Item> {
    let sel_lane = |bus: &str, w: &str| {
        let base = || id("s1_lane") * w;
        sext64(id(bus).part(base(), w), id(bus).at(base() + w - 1), w)
    };
    // Packed: the beat's lanes from s1_lane on, zero above them.
    let read_lanes = |bus: &str, w: &str, single: Expr| {
        cond(
            "dma_packed",
            id(&format!("rx_{bus}"))
                .bits(63, 0)
                .bit_and(id(&format!("PMASK_{w}"))),
            single,
        )
    };
    vec![
        flag_wire("s1_move", id("s1_v").and((!id("m_v")).or("m_axis_tready"))),
        flag_wire(
            "dma_issue",
            id("dma_on")
                .and(id("dma_dir"))
                .and(id("dma_left").differs(lit(COUNT_BITS, 0)))
                .and((!id("s1_v")).or("s1_move")),
        ),
        flag_wire("dma_re", "dma_issue"),
        flag_wire("dma_advance", id("dma_wbeat").or("dma_issue")),
        flag_wire("dma_last_line", id("dma_left").equals(lit(COUNT_BITS, 1))),
        wire_of(
            "dma_rsel",
            64,
            by_target(
                "dma_tgt",
                [
                    id("c_rdata"),
                    read_lanes("w_rdata", "DW", sel_lane("w_rdata", "DW")),
                    read_lanes("x_rdata", "DW", sel_lane("x_rdata", "DW")),
                    read_lanes("g_rdata", "DW", sel_lane("g_rdata", "DW")),
                    read_lanes("a_rd", "AW", sel_lane("a_rd", "AW")),
                ],
                zeros(64),
            ),
        ),
        assign("m_axis_tvalid", "m_v"),
        assign("m_axis_tdata", "m_data"),
        assign("m_axis_tlast", "m_last"),
    ]
}

/// The DMA's clocked process: start, run (advance lanes and lines, move
/// the read pipeline, end), and the DMA error code.
fn dma_sequencer(reset: Vec<Stmt>) -> Item {
    let code = |e: DmaError| lit(DMA_ERROR_BITS, e as u64);
    let run = vec![
        Stmt::If {
            cond: id("dma_advance"),
            then: vec![if_else(
                "lane_last",
                vec![
                    set("dma_lane", lit(LANE_BITS, 0)),
                    set("dma_line", id("dma_line") + lit(ADDR_BITS, 1)),
                    set("dma_left", id("dma_left") - lit(COUNT_BITS, 1)),
                ],
                vec![set("dma_lane", id("dma_lane") + id("dma_step"))],
            )],
            els: vec![],
        },
        Stmt::If {
            cond: id("dma_wbeat")
                .and(id("lane_last"))
                .and(id("dma_last_line")),
            then: vec![set("dma_on", lit(1, 0))],
            els: vec![],
        },
        set("s1_v", id("dma_issue").or(id("s1_v").and(!id("s1_move")))),
        Stmt::If {
            cond: id("dma_issue"),
            then: vec![
                set("s1_lane", "dma_lane"),
                set("s1_last", id("lane_last").and("dma_last_line")),
            ],
            els: vec![],
        },
        if_else(
            "s1_move",
            vec![
                set("m_v", lit(1, 1)),
                set("m_data", "dma_rsel"),
                set("m_last", "s1_last"),
            ],
            vec![Stmt::If {
                cond: id("m_axis_tready"),
                then: vec![set("m_v", lit(1, 0))],
                els: vec![],
            }],
        ),
        Stmt::If {
            cond: id("m_v").and("m_axis_tready").and("m_last"),
            then: vec![set("dma_on", lit(1, 0))],
            els: vec![],
        },
    ];
    let errors = if_else(
        "dma_req",
        vec![set(
            "dma_err",
            cond(
                "dma_busy_req",
                code(DmaError::Busy),
                cond(
                    "dma_bad_target",
                    code(DmaError::BadTarget),
                    cond(
                        "dma_bad_range",
                        code(DmaError::Range),
                        lit(DMA_ERROR_BITS, 0),
                    ),
                ),
            ),
        )],
        vec![Stmt::If {
            cond: id("dma_wbeat").and(!id("beat_fits")),
            then: vec![set("dma_err", code(DmaError::Value))],
            els: vec![],
        }],
    );
    let start = vec![
        set("dma_on", lit(1, 1)),
        set("dma_dir", id("s_axil_wdata").at(1)),
        set("dma_packed", id("s_axil_wdata").at(2)),
        set("dma_tgt", "dma_target_sel"),
        set("dma_line", id("dma_addr_q").bits(ADDR_BITS - 1, 0)),
        set("dma_lane", lit(LANE_BITS, 0)),
        set("dma_left", id("dma_count_q").bits(COUNT_BITS - 1, 0)),
        set("s1_v", lit(1, 0)),
        set("m_v", lit(1, 0)),
        set("m_last", lit(1, 0)),
    ];
    Item::Clocked(vec![if_else(
        "rst",
        reset,
        vec![if_else("dma_start", start, run), errors],
    )])
}

fn dma() -> Vec<Item> {
    let (regs, reset) = dma_registers();
    let mut v = vec![Item::Comment(
        "DMA: one buffer lane (or command word) per stream beat.".into(),
    )];
    v.extend(regs);
    v.extend(dma_request());
    v.extend(dma_lanes());
    v.extend(dma_write_beats());
    v.extend(dma_read_lanes());
    v.extend(dma_write_packing());
    v.extend(dma_read_pipeline());
    v.push(dma_sequencer(reset));
    v
}

/// The host interface; `dense` is SHAPE's dense bit (`sysgrad_isa::host::shape::DENSE`).
pub(super) fn items(dense: bool) -> Vec<Item> {
    let mut v = constants();
    v.extend(axil_write());
    v.extend(axil_read(dense));
    v.extend(dma());
    v
}
