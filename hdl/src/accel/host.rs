//! The host side of `sa_accel` (`docs/HOST.md`): the AXI4-Lite register
//! file and the DMA engine between the AXI4-Streams and the buffers.
//!
//! The DMA moves one buffer lane per beat, a word as its target's words
//! are ([`BeatWord`]: signed values in fixed point, sign-extended; a float
//! format's patterns, zero-extended). A write takes a beat whenever
//! one is offered. A read is a two-stage pipeline, the bank's registered
//! read data (`s1_*`) and the stream's output register (`m_*`), each
//! advancing only when the next stage has room, so `m_axis_tdata` holds
//! still under back-pressure and the stream still moves a beat per cycle.

use super::buffers::{BeatWord, Buf, Buffers, DmaNets, BUFFERS};
use super::counters::{CounterRegs, HostCounts};
use super::io::{HostProbes, Requests, Status};
use super::sizes::{sized_const, ADDR_BITS, TILE_BITS};
use crate::ir::*;
use crate::params::{AW, CNT_BITS, DW, FRAC, INTERLEAVED};
use sysgrad_isa::host::{
    format, reg, shape, status, Counter, DmaError, DmaTarget, Word, AXIL_ADDR_BITS, AXIL_DATA_BITS,
    DMA_READ, DMA_WRITE, ID_VALUE, STREAM_BITS,
};

/// A DMA target code (`DMA_TARGET`'s low bits).
const TARGET_BITS: u32 = 3;
/// A lane index or count of a line: as wide as a tile-size field.
const LANE_BITS: u32 = TILE_BITS;
/// Lines left of a transfer: up to a buffer's depth, `2^ADDR_BITS`.
const COUNT_BITS: u32 = ADDR_BITS + 1;
/// A DMA error code (`STATUS[23:16]`).
const DMA_ERROR_BITS: u32 = 8;

/// The ports of `sa_accel`: clock, reset, AXI4-Lite and the two
/// AXI4-Streams.
pub(super) struct HostPorts {
    pub clk: Net,
    pub rst: Net,
    pub awaddr: Net,
    pub awvalid: Net,
    pub awready: Net,
    pub wdata: Net,
    pub wstrb: Net,
    pub wvalid: Net,
    pub wready: Net,
    pub bresp: Net,
    pub bvalid: Net,
    pub bready: Net,
    pub araddr: Net,
    pub arvalid: Net,
    pub arready: Net,
    pub rdata: Net,
    pub rresp: Net,
    pub rvalid: Net,
    pub rready: Net,
    pub s_tdata: Net,
    pub s_tvalid: Net,
    pub s_tready: Net,
    pub m_tdata: Net,
    pub m_tvalid: Net,
    pub m_tready: Net,
    pub m_tlast: Net,
    ports: Vec<Port>,
}

impl HostPorts {
    pub fn new() -> HostPorts {
        let bit = Width::bit;
        let axil = |n: &str| format!("s_axil_{n}");
        let a = AXIL_ADDR_BITS as i64;
        let d = AXIL_DATA_BITS as i64;
        let s = STREAM_BITS as i64;
        let ports = vec![
            input("clk", bit()),
            input("rst", bit()),
            input(&axil("awaddr"), Width::of(a)),
            input(&axil("awvalid"), bit()),
            output(&axil("awready"), bit()),
            input(&axil("wdata"), Width::of(d)),
            input(&axil("wstrb"), Width::of(d / 8)),
            input(&axil("wvalid"), bit()),
            output(&axil("wready"), bit()),
            output(&axil("bresp"), Width::of(2)),
            output(&axil("bvalid"), bit()),
            input(&axil("bready"), bit()),
            input(&axil("araddr"), Width::of(a)),
            input(&axil("arvalid"), bit()),
            output(&axil("arready"), bit()),
            output(&axil("rdata"), Width::of(d)),
            output(&axil("rresp"), Width::of(2)),
            output(&axil("rvalid"), bit()),
            input(&axil("rready"), bit()),
            input("s_axis_tdata", Width::of(s)),
            input("s_axis_tvalid", bit()),
            output("s_axis_tready", bit()),
            output("m_axis_tdata", Width::of(s)),
            output("m_axis_tvalid", bit()),
            input("m_axis_tready", bit()),
            output("m_axis_tlast", bit()),
        ];
        let n: Vec<Net> = ports.iter().map(|p| p.net).collect();
        HostPorts {
            clk: n[0],
            rst: n[1],
            awaddr: n[2],
            awvalid: n[3],
            awready: n[4],
            wdata: n[5],
            wstrb: n[6],
            wvalid: n[7],
            wready: n[8],
            bresp: n[9],
            bvalid: n[10],
            bready: n[11],
            araddr: n[12],
            arvalid: n[13],
            arready: n[14],
            rdata: n[15],
            rresp: n[16],
            rvalid: n[17],
            rready: n[18],
            s_tdata: n[19],
            s_tvalid: n[20],
            s_tready: n[21],
            m_tdata: n[22],
            m_tvalid: n[23],
            m_tready: n[24],
            m_tlast: n[25],
            ports,
        }
    }
    /// The port list, in order.
    pub fn ports(&self) -> Vec<Port> {
        self.ports.clone()
    }
}

/// What the host interface reads of the rest of `sa_accel`.
pub(super) struct HostIo<'a> {
    pub ports: &'a HostPorts,
    pub status: &'a Status,
    pub bufs: &'a Buffers,
    /// The accumulator lanes as read (forwarded).
    pub a_rd: Net,
    pub counters: &'a CounterRegs,
    /// The DMA's nets the buffers read, defined here.
    pub dma: &'a DmaNets,
    /// The register requests the controller reads, defined here.
    pub requests: &'a Requests,
    /// The array's shape as the controller compares it: `MAX_M`, `MAX_K`,
    /// `ACC_LANES`.
    pub max_m: Const,
    pub max_k: Const,
    pub acc_lanes: Const,
    pub la: Const,
    /// SHAPE's dense and mul_reg bits.
    pub shape_dense: bool,
    pub shape_mul_reg: Expr,
    /// What `FORMAT` reads (`sysgrad_isa::host::format::value`), and
    /// whether its frac_bits come from the `FRAC` parameter (the format
    /// has one) rather than from the value.
    pub format_value: u32,
    pub frac_param: bool,
}

/// What the host interface gives the counters and the formal checks.
pub(super) struct HostOut {
    pub clear_req: Net,
    pub counts: HostCounts,
    pub probes: HostProbes,
}

/// Nets of the DMA the register file reads before the DMA is built.
struct Early {
    dma_err: Net,
    tgt_depth: Net,
    dma_target_sel: Net,
}

/// The register constants.
struct Consts {
    dw5: Const,
    aw6: Const,
    cnt_bits32: Const,
    il1: Const,
    p_dw: Const,
    p_aw: Const,
    depth_regs: Vec<Const>,
    /// `FRAC` in `FORMAT`'s frac_bits field, if the modules take `FRAC`.
    frac: Option<Const>,
}

/// Per-target value of the selected DMA target, as a mux on `sel` (3
/// bits) over the targets in `BUFFERS` order.
fn by_target(sel: Net, values: [Expr; 5], default: Expr) -> Expr {
    let mut e = default;
    for (b, v) in BUFFERS.iter().zip(values).rev() {
        e = cond(sel.equals(lit(3, b.target.code().into())), v, e);
    }
    e
}

fn addr(offset: u32) -> Expr {
    hex(AXIL_ADDR_BITS, offset.into())
}

/// `e` (`w` bits, sign bit `sign`) sign-extended to the 64-bit stream.
fn sext64(e: Expr, sign: Expr, w: P) -> Expr {
    cat([repeat(int(64) - w, sign), e])
}

fn constants(m: &mut Scope, io: &HostIo) -> Consts {
    m.comment("Host interface: registers (docs/HOST.md).");
    let dw5 = sized_const(m, "DW5", shape::IN_BITS_FIELD.bits, DW.e()).1;
    let aw6 = sized_const(m, "AW6", shape::ACC_BITS_FIELD.bits, AW.e()).1;
    let cnt_bits32 = sized_const(m, "CNT_BITS32", AXIL_DATA_BITS, CNT_BITS.e()).1;
    let il1 = sized_const(m, "IL1", 1, INTERLEAVED.e()).1;
    // Lanes per packed beat (config::host::lanes_per_beat), as wide as a
    // lane count.
    let p_dw = sized_const(m, "P_DW", LANE_BITS, cond(DW.greater(64), 1, 64 / DW.e())).1;
    let p_aw = sized_const(m, "P_AW", LANE_BITS, cond(AW.greater(64), 1, 64 / AW.e())).1;
    let depth_regs = BUFFERS
        .iter()
        .map(|b| {
            let name = format!("{}_DEPTH_REG", b.prefix.to_uppercase());
            sized_const(m, &name, 32, b.depth.e()).1
        })
        .collect();
    let frac = io.frac_param.then(|| {
        let name = format!("FRAC{}", format::FRAC.bits);
        sized_const(m, &name, format::FRAC.bits, FRAC.e()).1
    });
    Consts {
        dw5,
        aw6,
        cnt_bits32,
        il1,
        p_dw,
        p_aw,
        depth_regs,
        frac,
    }
}

/// The write channel's registers the formal checks watch.
struct Written {
    dma_target_q: Net,
    dma_addr_q: Net,
    dma_count_q: Net,
    axil_wr: Net,
    clear_req: Net,
    dma_req: Net,
}

/// The AXI4-Lite write channel and the writable registers.
fn axil_write(m: &mut Scope, io: &HostIo, consts: &Consts) -> Written {
    let p = io.ports;
    let is_wr = |offset: u32| p.awaddr.equals(addr(offset));
    let wd = || p.wdata;
    let busy = || io.status.ctl_running.or(io.dma.dma_on);
    let ok = any_of(vec![
        is_wr(reg::CTRL).and(!(wd().at(0).and(busy()))),
        is_wr(reg::PROG_LEN)
            .or(is_wr(reg::PROG_START))
            .and(wd().at_most(consts.depth_regs[0]))
            .and(!io.status.ctl_running),
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
    ]);
    let (prog_len, prog_start) = (io.requests.prog_len, io.requests.prog_start);
    let ([bvalid_q, bresp_q], mut reset) = m.registers([("bvalid_q", int(1)), ("bresp_q", int(2))]);
    reset.extend(m.define_registers(&[(prog_len, int(17)), (prog_start, int(17))]));
    let ([dma_target_q, dma_addr_q, dma_count_q], r2) = m.registers([
        ("dma_target_q", int(32)),
        ("dma_addr_q", int(32)),
        ("dma_count_q", int(32)),
    ]);
    reset.extend(r2);
    m.comment("A write takes address and data together, answered the next cycle.");
    let axil_wr = m.flag("axil_wr", p.awvalid.and(p.wvalid).and(!bvalid_q));
    m.assign(p.awready, axil_wr);
    m.assign(p.wready, axil_wr);
    m.assign(p.bvalid, bvalid_q);
    m.assign(p.bresp, bresp_q);
    let wr_ok = m.flag("wr_ok", p.wstrb.equals(hex(4, 0xf)).and(ok));
    let wr_accepted = m.flag("wr_accepted", axil_wr.and(wr_ok));
    m.define(
        wire_for(io.requests.start_req, Width::bit())
            .init(wr_accepted.and(is_wr(reg::CTRL)).and(wd().at(0))),
    );
    let clear_req = m.flag(
        "clear_req",
        wr_accepted.and(is_wr(reg::CTRL)).and(wd().at(1)),
    );
    let dma_req = m.flag("dma_req", wr_accepted.and(is_wr(reg::DMA_CTRL)));
    let store = |offset: u32, r: Net, value: Expr| when(is_wr(offset), vec![set(r, value)]);
    m.clocked(vec![if_else(
        p.rst,
        reset,
        vec![if_else(
            axil_wr,
            vec![
                set(bvalid_q, lit(1, 1)),
                set(bresp_q, cond(wr_ok, lit(2, 0), lit(2, 2))),
                when(
                    wr_ok,
                    vec![
                        store(reg::PROG_LEN, prog_len, wd().bits(16, 0)),
                        store(reg::PROG_START, prog_start, wd().bits(16, 0)),
                        store(reg::DMA_TARGET, dma_target_q, wd().e()),
                        store(reg::DMA_ADDR, dma_addr_q, wd().e()),
                        store(reg::DMA_COUNT, dma_count_q, wd().e()),
                    ],
                ),
            ],
            vec![when(p.bready, vec![set(bvalid_q, lit(1, 0))])],
        )],
    )]);
    Written {
        dma_target_q,
        dma_addr_q,
        dma_count_q,
        axil_wr,
        clear_req,
        dma_req,
    }
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
fn shape_value(io: &HostIo, consts: &Consts) -> Expr {
    let value = |name: &str| match name {
        "dense" => lit(1, io.shape_dense.into()),
        "mul_reg" => io.shape_mul_reg.clone(),
        "interleaved" => consts.il1.e(),
        "acc_bits" => consts.aw6.e(),
        "in_bits" => consts.dw5.e(),
        "cols" => io.max_m.e(),
        "rows" => io.max_k.e(),
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

/// `FORMAT` from the fields of `sysgrad_isa::host::format`, high to low,
/// zero above the top field: each the configuration's constant, but
/// frac_bits the `FRAC` parameter where the modules take it (as `SHAPE`
/// reads `DW` and `AW`).
fn format_value(io: &HostIo, consts: &Consts) -> Expr {
    let value = |f: sysgrad_isa::command::Field| match consts.frac {
        Some(frac) if f == format::FRAC => frac.e(),
        _ => lit(f.bits, f.get(io.format_value.into())),
    };
    let top = format::GRADIENTS.lo + format::GRADIENTS.bits;
    let mut parts: Vec<Expr> = (top < AXIL_DATA_BITS)
        .then(|| lit(AXIL_DATA_BITS - top, 0))
        .into_iter()
        .collect();
    parts.extend(format::FIELDS.iter().map(|(_, f)| value(*f)));
    Expr::Concat(parts)
}

/// The AXI4-Lite read channel: one register per offset, SLVERR elsewhere.
fn axil_read(m: &mut Scope, io: &HostIo, consts: &Consts, w: &Written, early: &Early) {
    let (p, st) = (io.ports, io.status);
    let read = |offset: u32, value: Expr, rdata_q: Net, rresp_q: Net| {
        (
            vec![addr(offset)],
            vec![set(rdata_q, value), set(rresp_q, lit(2, 0))],
        )
    };
    m.comment("A read is answered the cycle after its address.");
    let ([rvalid_q, rdata_q, rresp_q], reset) = m.registers([
        ("rvalid_q", int(1)),
        ("rdata_q", int(32)),
        ("rresp_q", int(2)),
    ]);
    let r = |offset: u32, value: Expr| read(offset, value, rdata_q, rresp_q);
    let mut arms = vec![
        r(reg::ID, hex(32, ID_VALUE.into())),
        r(reg::SHAPE, shape_value(io, consts)),
        r(
            reg::STATUS,
            cat([
                lit(8, 0),
                early.dma_err.e(),
                st.err_code.e(),
                lit(4, 0),
                io.dma.dma_on.e(),
                st.faulted.e(),
                st.halted.e(),
                st.ctl_running.e(),
            ]),
        ),
        r(reg::PC, cat([lit(15, 0), st.stop_pc.e()])),
        r(reg::PROG_LEN, cat([lit(15, 0), io.requests.prog_len.e()])),
        r(
            reg::PROG_START,
            cat([lit(15, 0), io.requests.prog_start.e()]),
        ),
        r(reg::COUNTER_WIDTH, consts.cnt_bits32.e()),
        r(reg::DMA_TARGET, w.dma_target_q.e()),
        r(reg::DMA_ADDR, w.dma_addr_q.e()),
        r(reg::DMA_COUNT, w.dma_count_q.e()),
        r(reg::DMA_DEPTH, early.tgt_depth.e()),
        r(reg::FORMAT, format_value(io, consts)),
    ];
    for c in Counter::ALL {
        for half in 0..2 {
            arms.push(r(c.offset() + 4 * half, io.counters.half(c, half)));
        }
    }
    let axil_rd = m.flag("axil_rd", p.arvalid.and(!rvalid_q));
    m.assign(p.arready, !rvalid_q);
    m.assign(p.rvalid, rvalid_q);
    m.assign(p.rdata, rdata_q);
    m.assign(p.rresp, rresp_q);
    m.clocked(vec![if_else(
        p.rst,
        reset,
        vec![if_else(
            axil_rd,
            vec![
                set(rvalid_q, lit(1, 1)),
                Stmt::Case {
                    sel: p.araddr.e(),
                    arms,
                    default: vec![set(rdata_q, lit(32, 0)), set(rresp_q, lit(2, 2))],
                },
            ],
            vec![when(p.rready, vec![set(rvalid_q, lit(1, 0))])],
        )],
    )]);
}

/// The DMA's registers.
struct DmaRegs {
    dma_dir: Net,
    dma_lane: Net,
    dma_left: Net,
    s1_v: Net,
    s1_lane: Net,
    s1_last: Net,
    m_v: Net,
    m_data: Net,
    m_last: Net,
}

fn dma_registers(m: &mut Scope, io: &HostIo, early: &Early) -> (DmaRegs, Vec<Stmt>) {
    let d = io.dma;
    let bits = |b: u32| int(b as i64);
    let mut reset = m.define_registers(&[(d.dma_on, int(1))]);
    let ([dma_dir], r) = m.registers([("dma_dir", int(1))]);
    reset.extend(r);
    reset.extend(m.define_registers(&[
        (d.dma_packed, int(1)),
        (d.dma_tgt, bits(TARGET_BITS)),
        (d.dma_line, bits(ADDR_BITS)),
    ]));
    let ([dma_lane, dma_left], r) = m.registers([
        ("dma_lane", bits(LANE_BITS)),
        ("dma_left", bits(COUNT_BITS)),
    ]);
    reset.extend(r);
    reset.extend(m.define_registers(&[(early.dma_err, bits(DMA_ERROR_BITS))]));
    let ([s1_v, s1_lane, s1_last, m_v, m_data, m_last], r) = m.registers([
        ("s1_v", int(1)),
        ("s1_lane", bits(LANE_BITS)),
        ("s1_last", int(1)),
        ("m_v", int(1)),
        ("m_data", bits(STREAM_BITS)),
        ("m_last", int(1)),
    ]);
    reset.extend(r);
    (
        DmaRegs {
            dma_dir,
            dma_lane,
            dma_left,
            s1_v,
            s1_lane,
            s1_last,
            m_v,
            m_data,
            m_last,
        },
        reset,
    )
}

/// A `DMA_CTRL` write: the target's depth and the checks that refuse it.
struct Request {
    dma_bad_target: Net,
    dma_bad_range: Net,
    dma_busy_req: Net,
    dma_start: Net,
}

fn dma_request(m: &mut Scope, io: &HostIo, consts: &Consts, w: &Written, early: &Early) -> Request {
    let depths: Vec<Expr> = consts.depth_regs.iter().map(|c| c.e()).collect();
    let depths: [Expr; 5] = depths.try_into().expect("five buffers");
    m.define(
        wire_for(early.tgt_depth, Width::of(AXIL_DATA_BITS)).init(by_target(
            early.dma_target_sel,
            depths,
            lit(AXIL_DATA_BITS, 0),
        )),
    );
    m.define(
        wire_for(early.dma_target_sel, Width::of(TARGET_BITS))
            .init(w.dma_target_q.bits(TARGET_BITS - 1, 0)),
    );
    let dma_bad_target = m.flag(
        "dma_bad_target",
        w.dma_target_q
            .greater(lit(AXIL_DATA_BITS, DmaTarget::Accumulators.code().into())),
    );
    let dma_bad_range = m.flag(
        "dma_bad_range",
        w.dma_count_q
            .equals(lit(AXIL_DATA_BITS, 0))
            .or(
                (cat([lit(1, 0), w.dma_addr_q.e()]) + cat([lit(1, 0), w.dma_count_q.e()]))
                    .greater(cat([lit(1, 0), early.tgt_depth.e()])),
            ),
    );
    let dma_busy_req = m.flag("dma_busy_req", io.status.ctl_running.or(io.dma.dma_on));
    let dma_start = m.flag(
        "dma_start",
        w.dma_req
            .and(!dma_busy_req)
            .and(!dma_bad_target)
            .and(!dma_bad_range),
    );
    Request {
        dma_bad_target,
        dma_bad_range,
        dma_busy_req,
        dma_start,
    }
}

/// Lanes of the target's lines, lanes a beat moves, and whether this beat
/// ends its line.
fn dma_lanes(m: &mut Scope, io: &HostIo, consts: &Consts, regs: &DmaRegs) -> (Net, Net) {
    let one = || lit(LANE_BITS, 1);
    let tgt = io.dma.dma_tgt;
    let lanes = [
        one(),
        io.max_m.e(),
        io.max_k.e(),
        io.max_m.e(),
        io.acc_lanes.e(),
    ];
    let packed = [
        one(),
        consts.p_dw.e(),
        consts.p_dw.e(),
        consts.p_dw.e(),
        consts.p_aw.e(),
    ];
    let wide = |n: Net| cat([lit(1, 0), n.e()]);
    let dma_lanes = m.wire_of("dma_lanes", LANE_BITS, by_target(tgt, lanes, one()));
    m.comment("Lanes a beat moves: 1, or as many as fit 64 bits when packed.");
    let dma_step = m.wire_of(
        "dma_step",
        LANE_BITS,
        cond(io.dma.dma_packed, by_target(tgt, packed, one()), one()),
    );
    let lane_last = m.flag(
        "lane_last",
        (wide(regs.dma_lane) + wide(dma_step)).at_least(wide(dma_lanes)),
    );
    (dma_step, lane_last)
}

/// Whether the write beat `t` fits a word of kind `w`, and the word it
/// stores (`dma_val_<w>`): a signed word (as wide as its parameter)
/// saturated; a pattern of `b` bits fits when no bit above them is set,
/// and keeps them, zeros above.
fn beat_value(m: &mut Scope, t: Net, w: BeatWord, val: Net) -> Net {
    let fits_name = format!("fits_{}", w.suffix());
    let width = w.width;
    match w.word {
        Word::Signed(_) => {
            let fits = m.flag(
                &fits_name,
                sext64(t.bits(width - 1, 0), t.at(width - 1), width).equals(t),
            );
            m.define(wire_for(val, Width::of(width)).init(cond(
                fits,
                t.bits(width - 1, 0),
                clamp_value(t.at(63), width),
            )));
            fits
        }
        Word::Pattern(bits) => {
            let fits = m.flag(
                &fits_name,
                t.bits(63, bits as i64).equals(zeros(64 - bits as i64)),
            );
            let pattern = t.bits(bits as i64 - 1, 0);
            let pad = w.width_bits - bits;
            let word = if pad == 0 {
                pattern
            } else {
                cat([lit(pad, 0), pattern])
            };
            m.define(wire_for(val, Width::of(width)).init(word));
            fits
        }
    }
}

/// A word of kind `w` (`part`, its top bit `sign`) as a 64-bit read beat:
/// sign-extended, or a pattern's word zero-extended.
fn beat_of_word(w: BeatWord, part: Expr, sign: Expr) -> Expr {
    match w.word {
        Word::Signed(_) => sext64(part, sign, w.width),
        Word::Pattern(_) => cat([zeros(int(64) - w.width), part]),
    }
}

/// The read data of each buffer shifted to the beat's first lane, and
/// the mask of a packed beat's lanes.
fn dma_read_lanes(
    m: &mut Scope,
    io: &HostIo,
    consts: &Consts,
    regs: &DmaRegs,
) -> ([Const; 2], [Net; 4]) {
    let pmask = [(DW, consts.p_dw), (AW, consts.p_aw)].map(|(w, p)| {
        m.localparam(
            &format!("PMASK_{}", w.name()),
            Width::of(64),
            // p * w is 1..=64: shifting right by 64 - p * w never shifts
            // by the operand's whole width (which strict tools warn of).
            ones(64) >> (int(64) - p * w),
        )
    });
    let buses = [
        (
            io.bufs.of(DmaTarget::Weights).rdata,
            Buf::of(DmaTarget::Weights),
            DW,
        ),
        (
            io.bufs.of(DmaTarget::Activations).rdata,
            Buf::of(DmaTarget::Activations),
            DW,
        ),
        (
            io.bufs.of(DmaTarget::Gradients).rdata,
            Buf::of(DmaTarget::Gradients),
            DW,
        ),
        (io.a_rd, Buf::of(DmaTarget::Accumulators), AW),
    ];
    let rx = buses.map(|(bus, b, w)| {
        let bits = b.lanes(io.la) * w;
        let rx = m.wire_of(
            &format!("rx_{}", bus.name()),
            bits.clone() + 64,
            cat([zeros(64), bus.e()]) >> (regs.s1_lane * w),
        );
        m.wire_of(
            &format!("rx_{}_unused", bus.name()),
            bits.clone(),
            rx.bits(bits + 63, 64),
        );
        rx
    });
    (pmask, rx)
}

/// A write beat: whether it fits its word, the lanes it writes, and its
/// lanes placed in the line when packed.
fn dma_write_packing(
    m: &mut Scope,
    io: &HostIo,
    regs: &DmaRegs,
    fits: &[(BeatWord, Net)],
    dma_step: Net,
) -> Net {
    let d = io.dma;
    let la = io.la;
    let fits_of = |t: DmaTarget| {
        let w = d.word(t);
        let (_, net) = fits
            .iter()
            .find(|(k, _)| *k == w)
            .expect("a check per kind");
        net.e()
    };
    let beat_fits = m.flag(
        "beat_fits",
        d.dma_packed.or(by_target(
            d.dma_tgt,
            [
                lit(1, 1),
                fits_of(DmaTarget::Weights),
                fits_of(DmaTarget::Activations),
                fits_of(DmaTarget::Gradients),
                fits_of(DmaTarget::Accumulators),
            ],
            lit(1, 1),
        )),
    );
    m.define(wire_for(d.dma_wmask, Width::of(la)).init(!(ones(la) << dma_step) << regs.dma_lane));
    m.comment("Packed beats: lane dma_lane + i is bits [i*W +: W] of the beat.");
    let t = io.ports.s_tdata;
    for (w, pkw) in [(DW, d.dma_pkw_dw), (AW, d.dma_pkw_aw)] {
        m.define(
            wire_for(pkw, Width::of(la * w + 64))
                .init(cat([zeros(la * w), t.e()]) << (regs.dma_lane * w)),
        );
    }
    for (w, pkw) in [(DW, d.dma_pkw_dw), (AW, d.dma_pkw_aw)] {
        m.wire_of(
            &format!("{}_unused", pkw.name()),
            64,
            pkw.bits(la * w + 63, la * w),
        );
    }
    beat_fits
}

/// The read pipeline: the bank's registered read (`s1_*`), then the
/// stream's output register (`m_*`), each moving only into room.
struct ReadPipe {
    s1_move: Net,
    dma_issue: Net,
    dma_advance: Net,
    dma_last_line: Net,
    dma_rsel: Net,
}

fn dma_read_pipeline(
    m: &mut Scope,
    io: &HostIo,
    regs: &DmaRegs,
    pmask: [Const; 2],
    rx: [Net; 4],
    dma_wbeat: Net,
) -> ReadPipe {
    let d = io.dma;
    let p = io.ports;
    // Unpacked: lane s1_lane of target `t`'s read data as a beat.
    let sel_lane = |t: DmaTarget| {
        let bus = match t {
            DmaTarget::Accumulators => io.a_rd,
            _ => io.bufs.of(t).rdata,
        };
        let word = d.word(t);
        let w = word.width;
        let base = || regs.s1_lane * w;
        beat_of_word(word, bus.part(base(), w), bus.at(base() + w - 1))
    };
    // Packed: the beat's lanes from s1_lane on, zero above them.
    let read_lanes = |rx: Net, mask: Const, single: Expr| {
        cond(d.dma_packed, rx.bits(63, 0).bit_and(mask), single)
    };
    let s1_move = m.flag("s1_move", regs.s1_v.and((!regs.m_v).or(p.m_tready)));
    let dma_issue = m.flag(
        "dma_issue",
        d.dma_on
            .and(regs.dma_dir)
            .and(regs.dma_left.differs(lit(COUNT_BITS, 0)))
            .and((!regs.s1_v).or(s1_move)),
    );
    m.define(wire_for(d.dma_re, Width::bit()).init(dma_issue));
    m.define(wire_for(d.dma_rd_hold, Width::bit()).init(dma_issue.or(regs.s1_v)));
    let dma_advance = m.flag("dma_advance", dma_wbeat.or(dma_issue));
    let dma_last_line = m.flag("dma_last_line", regs.dma_left.equals(lit(COUNT_BITS, 1)));
    let [w_rx, x_rx, g_rx, a_rx] = rx;
    let [pm_dw, pm_aw] = pmask;
    let dma_rsel = m.wire_of(
        "dma_rsel",
        64,
        by_target(
            d.dma_tgt,
            [
                io.bufs.of(DmaTarget::Commands).rdata.e(),
                read_lanes(w_rx, pm_dw, sel_lane(DmaTarget::Weights)),
                read_lanes(x_rx, pm_dw, sel_lane(DmaTarget::Activations)),
                read_lanes(g_rx, pm_dw, sel_lane(DmaTarget::Gradients)),
                read_lanes(a_rx, pm_aw, sel_lane(DmaTarget::Accumulators)),
            ],
            zeros(64),
        ),
    );
    m.assign(p.m_tvalid, regs.m_v);
    m.assign(p.m_tdata, regs.m_data);
    m.assign(p.m_tlast, regs.m_last);
    ReadPipe {
        s1_move,
        dma_issue,
        dma_advance,
        dma_last_line,
        dma_rsel,
    }
}

/// The DMA's parts its clocked process reads: the registers (and their
/// reset), the request checks, the read pipeline, the beat's lane step
/// and whether it ends its line, and whether a write beat fits its word.
struct Dma {
    regs: DmaRegs,
    reset: Vec<Stmt>,
    req: Request,
    rp: ReadPipe,
    lane: (Net, Net),
    beat_fits: Net,
}

/// The DMA's clocked process: start, run (advance lanes and lines, move
/// the read pipeline, end), and the DMA error code.
fn dma_sequencer(m: &mut Scope, io: &HostIo, dma: Dma, early: &Early, w: &Written) {
    let d = io.dma;
    let p = io.ports;
    let Dma {
        regs,
        reset,
        req,
        rp,
        lane: (dma_step, lane_last),
        beat_fits,
    } = dma;
    let (regs, req, rp) = (&regs, &req, &rp);
    let dma_wbeat = d.dma_wbeat;
    let code = |e: DmaError| lit(DMA_ERROR_BITS, e as u64);
    let run = vec![
        when(
            rp.dma_advance,
            vec![if_else(
                lane_last,
                vec![
                    set(regs.dma_lane, lit(LANE_BITS, 0)),
                    set(d.dma_line, d.dma_line + lit(ADDR_BITS, 1)),
                    set(regs.dma_left, regs.dma_left - lit(COUNT_BITS, 1)),
                ],
                vec![set(regs.dma_lane, regs.dma_lane + dma_step)],
            )],
        ),
        when(
            dma_wbeat.and(lane_last).and(rp.dma_last_line),
            vec![set(d.dma_on, lit(1, 0))],
        ),
        set(regs.s1_v, rp.dma_issue.or(regs.s1_v.and(!rp.s1_move))),
        when(
            rp.dma_issue,
            vec![
                set(regs.s1_lane, regs.dma_lane),
                set(regs.s1_last, lane_last.and(rp.dma_last_line)),
            ],
        ),
        if_else(
            rp.s1_move,
            vec![
                set(regs.m_v, lit(1, 1)),
                set(regs.m_data, rp.dma_rsel),
                set(regs.m_last, regs.s1_last),
            ],
            vec![when(p.m_tready, vec![set(regs.m_v, lit(1, 0))])],
        ),
        when(
            regs.m_v.and(p.m_tready).and(regs.m_last),
            vec![set(d.dma_on, lit(1, 0))],
        ),
    ];
    let errors = if_else(
        w.dma_req,
        vec![set(
            early.dma_err,
            cond(
                req.dma_busy_req,
                code(DmaError::Busy),
                cond(
                    req.dma_bad_target,
                    code(DmaError::BadTarget),
                    cond(
                        req.dma_bad_range,
                        code(DmaError::Range),
                        lit(DMA_ERROR_BITS, 0),
                    ),
                ),
            ),
        )],
        vec![when(
            dma_wbeat.and(!beat_fits),
            vec![set(early.dma_err, code(DmaError::Value))],
        )],
    );
    let start = vec![
        set(d.dma_on, lit(1, 1)),
        set(regs.dma_dir, p.wdata.at(1)),
        set(d.dma_packed, p.wdata.at(2)),
        set(d.dma_tgt, early.dma_target_sel),
        set(d.dma_line, w.dma_addr_q.bits(ADDR_BITS - 1, 0)),
        set(regs.dma_lane, lit(LANE_BITS, 0)),
        set(regs.dma_left, w.dma_count_q.bits(COUNT_BITS - 1, 0)),
        set(regs.s1_v, lit(1, 0)),
        set(regs.m_v, lit(1, 0)),
        set(regs.m_last, lit(1, 0)),
    ];
    m.clocked(vec![if_else(
        p.rst,
        reset,
        vec![if_else(req.dma_start, start, run), errors],
    )]);
}

/// The DMA; returns `m_v` and `dma_dir` (the counters count them).
fn dma(m: &mut Scope, io: &HostIo, consts: &Consts, w: &Written, early: &Early) -> (Net, Net) {
    m.comment("DMA: one buffer lane (or command word) per stream beat.");
    let (regs, reset) = dma_registers(m, io, early);
    let req = dma_request(m, io, consts, w, early);
    let lane = dma_lanes(m, io, consts, &regs);
    let d = io.dma;
    m.assign(io.ports.s_tready, d.dma_on.and(!regs.dma_dir));
    m.define(wire_for(d.dma_wbeat, Width::bit()).init(io.ports.s_tvalid.and(io.ports.s_tready)));
    let t = io.ports.s_tdata;
    let fits: Vec<(BeatWord, Net)> = d
        .kinds()
        .into_iter()
        .map(|w| (w, beat_value(m, t, w, d.value(w))))
        .collect();
    let (pmask, rx) = dma_read_lanes(m, io, consts, &regs);
    let beat_fits = dma_write_packing(m, io, &regs, &fits, lane.0);
    let rp = dma_read_pipeline(m, io, &regs, pmask, rx, d.dma_wbeat);
    let m_v = regs.m_v;
    let dma_dir = regs.dma_dir;
    dma_sequencer(
        m,
        io,
        Dma {
            regs,
            reset,
            req,
            rp,
            lane,
            beat_fits,
        },
        early,
        w,
    );
    (m_v, dma_dir)
}

/// The host interface: the register file and the DMA.
pub(super) fn build(m: &mut Scope, io: &HostIo) -> HostOut {
    let early = Early {
        dma_err: Net::named("dma_err"),
        tgt_depth: Net::named("tgt_depth"),
        dma_target_sel: Net::named("dma_target_sel"),
    };
    let consts = constants(m, io);
    let w = axil_write(m, io, &consts);
    axil_read(m, io, &consts, &w, &early);
    let (m_v, dma_dir) = dma(m, io, &consts, &w, &early);
    let d = io.dma;
    HostOut {
        clear_req: w.clear_req,
        counts: HostCounts {
            dma_wbeat: d.dma_wbeat,
            m_v,
            m_axis_tready: io.ports.m_tready,
            dma_on: d.dma_on,
            dma_dir,
            s_axis_tvalid: io.ports.s_tvalid,
            ctl_running: io.status.ctl_running,
        },
        probes: HostProbes {
            prog_len: io.requests.prog_len,
            dma_target_q: w.dma_target_q,
            dma_addr_q: w.dma_addr_q,
            dma_count_q: w.dma_count_q,
            dma_err: early.dma_err,
            dma_on: d.dma_on,
            axil_wr: w.axil_wr,
        },
    }
}
