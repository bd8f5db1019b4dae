//! The `none` controller's datapath: the array's inputs, the
//! controller's buffer ports, the accumulator read port and the write-back
//! unit, all driven from the sequencer's state ([`super::sequencer`]).
//!
//! Timing: every buffer read is registered, so reads are issued one cycle
//! ahead from the sequencer's next-cycle view. Results leave the array a
//! fixed R + C cycles after their input, so a small write-back unit
//! (`wb_*`) started with each pass writes Y or dX lines on its own, its
//! last write falling in the next command's first decode cycle; the
//! accumulator read port forwards a line written in the same cycle
//! (`a_fwd_*`), which a read-before-write bank would not.

use super::sequencer::Seq;
use crate::accel::activation::ActIn;
use crate::accel::buffers::CtlPort;
use crate::accel::counters::WbCount;
use crate::accel::io::ControllerIo;
use crate::accel::results::*;
use crate::accel::sizes::*;
use crate::accel::window::{self, Position};
use crate::array::core::TopPorts;
use crate::ir::*;
use crate::params::{C, DW, L, R};
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::command::opcode;
use sysgrad_isa::host::DmaTarget;
use sysgrad_isa::{BackwardMode, Mode};

/// What the array's inputs stream this cycle.
pub(super) struct Streams {
    pub stream: Net,
    pub x_on: Net,
    pub dy_on: Net,
    pub row: Net,
    pub w_on: Net,
    pub m_mask: Net,
}

/// What the datapath gives the counters and the formal checks.
pub(super) struct Datapath {
    pub streams: Streams,
    pub wback: Net,
    /// A REQUANT line and an ACT line are written.
    pub req_wr: Net,
    pub act_wr: Net,
    pub drain_wr: Net,
    pub wb: WbCount,
    pub wb_begin: Net,
    pub wb_we: Net,
}

/// The X lines of a windowed pass: the generator at the position whose
/// line is read this cycle (`nx_t`, streamed next cycle), and whether the
/// position streamed this cycle is padding (its X is 0; nothing was read).
struct XWindow {
    x_win: Net,
    pos: Position,
    x_pad_q: Net,
}

fn x_window(m: &mut Scope, io: &ControllerIo, s: &Seq) -> XWindow {
    let f = &s.fields;
    let x_win = m.flag(
        "x_win",
        f.f_win
            .and(window::present())
            .and(s.is(opcode::FORWARD).or(s.is(opcode::BACKWARD))),
    );
    // `nx_t` is 0 in decode cycles and where a pass begins, else it
    // counts up by one every cycle: the generator steps every cycle and
    // starts again at 0.
    let pos = window::generator(
        m,
        "gx",
        io.rst,
        &s.window,
        s.nx_t.equals(lit(STEP_BITS, 0)),
        lit(1, 1),
    );
    let x_pad_q = m.plain_register("x_pad_q", Width::bit(), x_win.and(!pos.inside), io.rst);
    XWindow {
        x_win,
        pos,
        x_pad_q,
    }
}

/// `arr_*`: the array's inputs, zero outside the tile and the stream.
fn array_inputs(m: &mut Scope, io: &ControllerIo, s: &Seq, xw: &XWindow) -> Streams {
    // Only in execute: the latched command's fields, so no path runs
    // from the command memory's read port to the array.
    let (r, f) = (&s.regs, &s.xfields);
    let is = |op: u8| f.is(op);
    let mode = |md: Mode| s.mode(md);
    let top = TopPorts::new();
    let arr = |p: Net| io.arr.of(p);
    m.comment("Array inputs, as the emulator's Driver drives them.");
    let stream = m.flag(
        "stream",
        s.in_exec
            .and(r.ex_t.less(zext(STEP_BITS - LEN_BITS, f.f_len))),
    );
    // X streams (and counts, padding included: the counters charge the
    // stream the array takes); a padding position's X is 0.
    let x_on = m.flag(
        "x_on",
        stream.and(
            is(opcode::FORWARD)
                .or(is(opcode::BACKWARD).and(s.x_pass_mode.differs(mode(Mode::BwdDx)))),
        ),
    );
    let x_feed = m.flag("x_feed", x_on.and(!xw.x_pad_q));
    let dy_on = m.flag("dy_on", stream.and(is(opcode::BACKWARD)));
    let row = m.wire_of("row", STEP_BITS, s.consts.last_row - r.ex_t);
    let w_on = m.flag(
        "w_on",
        s.in_exec
            .and(is(opcode::LOAD_W))
            .and(row.less(zext(STEP_BITS - TILE_BITS, f.f_k))),
    );
    let k_mask = m.wire_of("k_mask", R, lane_mask(R, r.res_k));
    let m_mask = m.wire_of("m_mask", C, lane_mask(C, r.res_m));
    let fm_mask = m.wire_of("fm_mask", C, lane_mask(C, f.f_m));
    m.assign(
        arr(top.mode),
        cond(
            !s.in_exec,
            mode(Mode::Idle),
            cond(
                is(opcode::LOAD_W).or(is(opcode::FLUSH_W)),
                mode(Mode::Load).e(),
                cond(
                    is(opcode::FORWARD),
                    mode(Mode::Fwd).e(),
                    cond(
                        is(opcode::BACKWARD),
                        s.x_pass_mode.e(),
                        cond(
                            is(opcode::UPDATE),
                            mode(Mode::Update),
                            cond(is(opcode::DRAIN), mode(Mode::Drain), mode(Mode::Idle)),
                        ),
                    ),
                ),
            ),
        ),
    );
    m.assign(
        arr(top.lr_shift),
        cond(
            s.in_exec.and(is(opcode::UPDATE)),
            f.f_lr.bits(5, 0),
            lit(LR_SHIFT_BITS, 0),
        ),
    );
    m.assign(arr(top.dy_valid), dy_on);
    let bus = |t: DmaTarget| io.bufs.of(t).rdata;
    let mut gate = |lanes: P, out: Net, on: Net, mask: Net, src: Net| {
        let mut lane = Scope::new();
        lane.assign(
            out.lane(L, DW),
            cond(on.and(mask.at(L)), src.lane(L, DW), zeros(DW)),
        );
        m.gen_for(L.name(), lanes, &format!("g_{}", out.name()), lane);
    };
    gate(
        R,
        arr(top.x_in),
        x_feed,
        k_mask,
        bus(DmaTarget::Activations),
    );
    gate(C, arr(top.w_in), w_on, fm_mask, bus(DmaTarget::Weights));
    gate(C, arr(top.dy_in), dy_on, m_mask, bus(DmaTarget::Gradients));
    Streams {
        stream,
        x_on,
        dy_on,
        row,
        w_on,
        m_mask,
    }
}

/// The write-back unit's nets the buffer ports read before it is built.
struct WbEarly {
    wb_rd: Net,
    wb_raddr: Net,
    wb_line: Net,
    data: WriteBackData,
    dw_wide: Net,
}

/// The controller's side of the buffer ports (`<b>_ctl_*`).
fn buffer_ports(
    m: &mut Scope,
    io: &ControllerIo,
    s: &Seq,
    st: &Streams,
    acc: &AccRead,
    wb: &WbEarly,
    xw: &XWindow,
) -> Writes {
    let (r, f) = (&s.regs, &s.fields);
    let is = |op: u8| s.is(op);
    let top = TopPorts::new();
    let ab = |t: DmaTarget| io.bufs.of(t).ab;
    let ctl = |t: DmaTarget| io.ctl.of(t);
    let define = |m: &mut Scope, net: Net, width: Width, e: Expr| {
        m.define(wire_for(net, width).init(e));
    };
    let n17 = || zext(STEP_BITS - LEN_BITS, f.f_len);
    // Command memory.
    let (c, c_ab) = (ctl(DmaTarget::Commands), ab(DmaTarget::Commands));
    m.comment(
        "Command memory, a word ahead of the decoder: pc+2 (pc+3 in a second decode), \
         PROG_START while stopped (and the word after it in the cycle of START).",
    );
    let start_req = io.requests.start_req;
    let two = || one(c_ab) << 1;
    let start = low(c_ab, io.requests.prog_start);
    define(m, c.re, Width::bit(), !s.in_exec);
    define(
        m,
        c.raddr,
        Width::of(c_ab),
        cond(
            s.ctl_running,
            low(c_ab, r.pc) + cond(s.in_dec, two(), two() + one(c_ab)),
            cond(start_req, start.clone() + one(c_ab), start),
        ),
    );
    unused_write_port(m, c, c_ab);
    // Weights.
    let (w, w_ab) = (ctl(DmaTarget::Weights), ab(DmaTarget::Weights));
    m.comment("Weights: the new tile's rows, bottom first; the old one written back.");
    let nx_row = m.wire_of("nx_row", STEP_BITS, s.consts.last_row - s.nx_t);
    define(
        m,
        w.re,
        Width::bit(),
        s.read_ahead
            .and(is(opcode::LOAD_W))
            .and(nx_row.less(zext(STEP_BITS - TILE_BITS, f.f_k))),
    );
    define(m, w.raddr, Width::of(w_ab), sum(w_ab, f.f_addr_a, nx_row));
    let wback = m.flag(
        "wback",
        any_of(vec![is(opcode::LOAD_W).e(), is(opcode::FLUSH_W).e()])
            .and(s.in_exec)
            .and(r.res_valid)
            .and(r.res_dirty)
            .and(st.row.less(zext(STEP_BITS - TILE_BITS, r.res_k))),
    );
    define(m, w.we, Width::of(C), cond(wback, st.m_mask, zeros(C)));
    define(m, w.waddr, Width::of(w_ab), sum(w_ab, r.res_addr, st.row));
    define(m, w.wdata, Width::of(C * DW), io.arr.of(top.w_out).e());
    // Activations and gradients.
    m.comment(
        "Activations and gradients: streamed lines and ACT's masks; REQUANT's and ACT's lines.",
    );
    let req_wr = m.flag("req_wr", s.in_exec.and(is(opcode::REQUANT)));
    let act_wr = m.flag("act_wr", s.in_exec.and(is(opcode::ACT)));
    let line_wr = m.flag("line_wr", req_wr.or(act_wr));
    let act_out = acc.act_out;
    // The lanes a line write writes: ACT's `lanes`, REQUANT's all.
    let line_mask = |m: &mut Scope, lanes: P| {
        m.wire_of(
            &format!("line_mask_{}", lanes.name().to_lowercase()),
            lanes,
            cond(is(opcode::ACT), lane_mask(lanes, f.f_lanes), ones(lanes)),
        )
    };
    let (x, x_ab) = (ctl(DmaTarget::Activations), ab(DmaTarget::Activations));
    define(
        m,
        x.re,
        Width::bit(),
        s.read_ahead
            .and(s.nx_t.less(n17()))
            .and(any_of(vec![
                is(opcode::FORWARD).e(),
                is(opcode::BACKWARD).and(s.nx_pass_mode.differs(s.mode(Mode::BwdDx))),
                is(opcode::ACT).and(f.reads_mask),
            ]))
            // A padding position reads nothing.
            .and((!xw.x_win).or(xw.pos.inside)),
    );
    define(
        m,
        x.raddr,
        Width::of(x_ab),
        cond(
            is(opcode::FORWARD),
            low(x_ab, f.f_addr_a),
            cond(is(opcode::ACT), low(x_ab, f.f_mask), low(x_ab, f.f_x_addr)),
        ) + cond(xw.x_win, low(x_ab, xw.pos.line), low(x_ab, s.nx_t)),
    );
    let x_mask = line_mask(m, R);
    define(
        m,
        x.we,
        Width::of(R),
        cond(line_wr.and(!f.f_flag), x_mask, zeros(R)),
    );
    define(m, x.waddr, Width::of(x_ab), sum(x_ab, f.f_addr_b, r.ex_t));
    define(m, x.wdata, Width::of(R * DW), act_out.bits(R * DW - 1, 0));
    let (g, g_ab) = (ctl(DmaTarget::Gradients), ab(DmaTarget::Gradients));
    define(
        m,
        g.re,
        Width::bit(),
        s.read_ahead
            .and(is(opcode::BACKWARD))
            .and(s.nx_t.less(n17())),
    );
    define(m, g.raddr, Width::of(g_ab), sum(g_ab, f.f_addr_a, s.nx_t));
    let g_mask = line_mask(m, C);
    define(
        m,
        g.we,
        Width::of(C),
        cond(line_wr.and(f.f_flag), g_mask, zeros(C)),
    );
    define(m, g.waddr, Width::of(g_ab), sum(g_ab, f.f_addr_b, r.ex_t));
    define(m, g.wdata, Width::of(C * DW), act_out.bits(C * DW - 1, 0));
    // Accumulators.
    let (a, a_ab) = (ctl(DmaTarget::Accumulators), ab(DmaTarget::Accumulators));
    let la = io.la;
    m.comment("Accumulators: REQUANT and ACT reads, DRAIN and write-back writes.");
    let req_rd = m.flag(
        "req_rd",
        s.read_ahead.and(is(opcode::REQUANT).or(is(opcode::ACT))),
    );
    define(m, a.re, Width::bit(), req_rd.or(wb.wb_rd));
    define(
        m,
        a.raddr,
        Width::of(a_ab),
        cond(req_rd, sum(a_ab, f.f_addr_a, s.nx_t), wb.wb_raddr),
    );
    let drain_j = m.wire_of("drain_j", STEP_BITS, s.consts.last_col - r.ex_t);
    let drain_wr = m.flag(
        "drain_wr",
        s.in_exec
            .and(is(opcode::DRAIN))
            .and(drain_j.less(zext(STEP_BITS - TILE_BITS, r.res_m))),
    );
    let drain_mask = m.wire_of("drain_mask", la, lane_mask(la, r.res_k));
    define(
        m,
        a.we,
        Width::of(la),
        cond(drain_wr, drain_mask, wb.data.we),
    );
    define(
        m,
        a.waddr,
        Width::of(a_ab),
        cond(drain_wr, sum(a_ab, f.f_addr_a, drain_j), wb.wb_line),
    );
    define(
        m,
        a.wdata,
        Width::of(la * crate::params::AW),
        cond(drain_wr, wb.dw_wide, wb.data.data),
    );
    Writes {
        wback,
        req_wr,
        act_wr,
        drain_wr,
    }
}

/// The writes the counters count.
struct Writes {
    wback: Net,
    req_wr: Net,
    act_wr: Net,
    drain_wr: Net,
}

/// The command memory's write port, which only the DMA uses.
fn unused_write_port(m: &mut Scope, c: CtlPort, ab: Const) {
    m.define(wire_for(c.we, Width::bit()).init(lit(1, 0)));
    m.define(wire_for(c.waddr, Width::of(ab)).init(zeros(ab)));
    m.define(wire_for(c.wdata, Width::of(64)).init(zeros(64)));
}

/// The write-back unit: Y or dX lines, R + C cycles after their input.
fn write_back(
    m: &mut Scope,
    io: &ControllerIo,
    s: &Seq,
    early: &WbEarly,
    wide: [Net; 2],
    acc: &AccRead,
) -> (WbCount, Net) {
    let (r, f) = (&s.regs, &s.fields);
    let is = |op: u8| s.is(op);
    let a_ab = io.bufs.of(DmaTarget::Accumulators).ab;
    m.comment("Write-back of a pass's Y (FORWARD) or dX (BACKWARD) lines.");
    let accumulate = io.arith.accumulate(m);
    let ([wb_start, wb_wait, wb_left], mut reset) = m.registers([
        ("wb_start", int(1)),
        ("wb_wait", int(WAIT_BITS as i64)),
        ("wb_left", int(STEP_BITS as i64)),
    ]);
    reset.extend(m.define_registers(&[(early.wb_line, a_ab.e())]));
    let ([wb_acc, wb_dx, wb_ph, wb_lanes], r2) = m.registers([
        ("wb_acc", int(1)),
        ("wb_dx", int(1)),
        ("wb_ph", int(WbPhase::BITS as i64)),
        ("wb_lanes", int(TILE_BITS as i64)),
    ]);
    reset.extend(r2);
    // A windowed DX pass writes dX at the window's lines (`wb_base` plus
    // the generator's line), not at padding positions (`wb_in`). The
    // generator runs a position ahead of `wb_line`: the accumulating read
    // of the next line is issued in the cycle that writes this one.
    let ([wb_win, wb_in, wb_base], r3) =
        m.registers([("wb_win", int(1)), ("wb_in", int(1)), ("wb_base", a_ab.e())]);
    reset.extend(r3);
    let wb_first = m.flag("wb_first", wb_wait.equals(lit(WAIT_BITS, 1)));
    let gw = window::generator(m, "gw", io.rst, &s.window, wb_first.e(), lit(1, 1));
    let gw_line = m.wire_of("wb_win_line", a_ab, wb_base + low(a_ab, gw.line));
    let wb_begin = m.flag(
        "wb_begin",
        s.exec_begin
            .and(is(opcode::FORWARD).or(is(opcode::BACKWARD).and(!f.mode_is(BackwardMode::Dw)))),
    );
    let wb_write = m.flag(
        "wb_write",
        wb_wait
            .equals(lit(WAIT_BITS, 0))
            .and(wb_left.differs(lit(STEP_BITS, 0))),
    );
    m.define(
        wire_for(early.wb_rd, Width::bit()).init(
            wb_acc
                .and(
                    wb_first
                        .and(wb_left.differs(lit(STEP_BITS, 0)))
                        .or(wb_write.and(wb_left.greater(lit(STEP_BITS, 1)))),
                )
                .and((!wb_win).or(gw.inside)),
        ),
    );
    m.define(wire_for(early.wb_raddr, Width::of(a_ab)).init(cond(
        wb_win,
        gw_line.e(),
        cond(wb_write, early.wb_line + one(a_ab), early.wb_line.e()),
    )));
    // The line written: a windowed pass's padding positions are skipped.
    let wb_put = m.flag("wb_put", wb_write.and((!wb_win).or(wb_in)));
    let unit = WriteBack {
        lanes: wb_lanes,
        write: wb_put,
        dx: wb_dx,
        acc: wb_acc,
    };
    write_back_data(m, io.la, &unit, wide, acc.a_rd, &accumulate, &early.data);
    let start = vec![
        // Loaded in the pass's first execute cycle, one after `wb_begin`
        // (R + C + MUL_REG >= 2), so that the checks of the decode cycle
        // do not reach these registers' enables.
        set(wb_wait, s.consts.cmd.result_latency.1 - lit(WAIT_BITS, 1)),
        set(wb_left, zext(STEP_BITS - LEN_BITS, f.f_len)),
        set(early.wb_line, low(a_ab, f.f_addr_b)),
        set(wb_acc, f.f_flag),
        set(wb_dx, is(opcode::BACKWARD)),
        set(
            wb_ph,
            cond(
                is(opcode::FORWARD),
                WbPhase::Forward.lit(),
                cond(
                    f.mode_is(BackwardMode::Interleaved),
                    WbPhase::Interleaved.lit(),
                    WbPhase::Dx.lit(),
                ),
            ),
        ),
        set(wb_lanes, cond(is(opcode::FORWARD), r.res_m, r.res_k)),
        set(
            wb_win,
            is(opcode::BACKWARD).and(f.f_win).and(window::present()),
        ),
        set(wb_base, low(a_ab, f.f_addr_b)),
    ];
    m.clocked(vec![if_else(
        io.rst,
        reset,
        vec![
            set(wb_start, wb_begin),
            if_else(
                wb_start,
                start,
                vec![if_else(
                    wb_wait.differs(lit(WAIT_BITS, 0)),
                    vec![
                        set(wb_wait, wb_wait - lit(WAIT_BITS, 1)),
                        when(
                            wb_first.and(wb_win),
                            vec![set(early.wb_line, gw_line), set(wb_in, gw.inside)],
                        ),
                    ],
                    vec![when(
                        wb_write,
                        vec![
                            set(wb_left, wb_left - lit(STEP_BITS, 1)),
                            set(
                                early.wb_line,
                                cond(wb_win, gw_line.e(), early.wb_line + one(a_ab)),
                            ),
                            set(wb_in, gw.inside),
                        ],
                    )],
                )],
            ),
        ],
    )]);
    (
        // Counted as without the window (`docs/COMMANDS.md`).
        WbCount {
            write: wb_write,
            ph: wb_ph,
            acc: wb_acc,
            lanes: wb_lanes,
        },
        wb_begin,
    )
}

pub(super) fn build(m: &mut Scope, io: &ControllerIo, s: &Seq, acc: &AccRead) -> Datapath {
    let top = TopPorts::new();
    let xw = x_window(m, io, s);
    let streams = array_inputs(m, io, s, &xw);
    let early = WbEarly {
        wb_rd: Net::named("wb_rd"),
        wb_raddr: Net::named("wb_raddr"),
        wb_line: Net::named("wb_line"),
        data: WriteBackData::named(),
        dw_wide: Net::named("dw_wide"),
    };
    let writes = buffer_ports(m, io, s, &streams, acc, &early, &xw);
    widen_lanes(m, io.la, early.dw_wide, io.arr.of(top.dw_out), R);
    let y_wide = Net::named("y_wide");
    widen_lanes(m, io.la, y_wide, io.arr.of(top.y_out), C);
    let dx_wide = Net::named("dx_wide");
    widen_lanes(m, io.la, dx_wide, io.arr.of(top.dx_out), R);
    let a = io.bufs.of(DmaTarget::Accumulators);
    let act = ActIn {
        func: s.fields.f_func,
        to_grad: s.fields.f_flag,
        mask: io.bufs.of(DmaTarget::Activations).rdata,
    };
    accumulator_read(m, io, &a, &act, acc);
    let (wb, wb_begin) = write_back(m, io, s, &early, [y_wide, dx_wide], acc);
    Datapath {
        streams,
        wback: writes.wback,
        req_wr: writes.req_wr,
        act_wr: writes.act_wr,
        drain_wr: writes.drain_wr,
        wb,
        wb_begin,
        wb_we: early.data.we,
    }
}
