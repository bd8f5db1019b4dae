//! What the dense controller's decisions do: the buffer reads they issue,
//! the issue register that carries them to the array's inputs a cycle
//! later (`arr_*`), and the writes of what comes out: results and weight
//! rows R + C + 1 cycles after their decision (two delay lines), a DRAIN
//! line a cycle after, a REQUANT or ACT line a cycle after its reads (the
//! accumulator line and ACT's mask line).

use super::engines::{Engines, States};
use super::entry::Field;
use crate::accel::activation::ActIn;
use crate::accel::commands::CommandConsts;
use crate::accel::counters::WbCount;
use crate::accel::io::ControllerIo;
use crate::accel::results::*;
use crate::accel::sizes::*;
use crate::array::core::{Modes, TopPorts};
use crate::array::dense::wave_port;
use crate::ir::*;
use crate::params::{AW, C, DW, L, R, RB};
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::command::field;
use sysgrad_isa::host::DmaTarget;
use sysgrad_isa::mode::{MODE_BITS, WAVE_OP_BITS};
use sysgrad_isa::wave::WaveField;
use sysgrad_isa::Mode;

/// A field of a delay line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PipeField {
    Valid,
    Acc,
    Ph,
    Dx,
    Lanes,
    Line,
    /// The line is written: not a windowed dX's padding position (the
    /// counters still count it, as the same pass without the window).
    Put,
}

impl PipeField {
    fn name(self) -> &'static str {
        match self {
            PipeField::Valid => "valid",
            PipeField::Acc => "acc",
            PipeField::Ph => "ph",
            PipeField::Dx => "dx",
            PipeField::Lanes => "lanes",
            PipeField::Line => "line",
            PipeField::Put => "put",
        }
    }
}

/// A delay line of packed fields, `LAT + 1` stages deep (decision to due).
struct Pipe {
    name: &'static str,
    /// (field, bits), most significant first.
    fields: &'static [(PipeField, u32)],
}

/// Results on their way out: Y or dX, the line and lanes they go to.
const RESULTS: Pipe = Pipe {
    name: "rpipe",
    fields: &[
        (PipeField::Valid, 1),
        (PipeField::Acc, 1),
        (PipeField::Ph, WbPhase::BITS),
        (PipeField::Dx, 1),
        (PipeField::Lanes, TILE_BITS),
        (PipeField::Line, ADDR_BITS),
        (PipeField::Put, 1),
    ],
};

/// Weight rows of dirty tiles on their way out.
const WEIGHTS: Pipe = Pipe {
    name: "wpipe",
    fields: &[
        (PipeField::Valid, 1),
        (PipeField::Lanes, TILE_BITS),
        (PipeField::Line, ADDR_BITS),
    ],
};

/// The fields of one stage of a delay line, `<prefix>_<field>`.
struct Tap(Vec<(PipeField, Net)>);

impl Tap {
    fn get(&self, f: PipeField) -> Net {
        self.0
            .iter()
            .find(|(g, _)| *g == f)
            .unwrap_or_else(|| panic!("{} not tapped", f.name()))
            .1
    }
}

impl Pipe {
    fn bits(&self) -> u32 {
        self.fields.iter().map(|(_, b)| b).sum()
    }

    /// The register, its input `<name>_in` from `values` (one per field),
    /// the shift, and the fields `used` (all if `None`) of stage `stage`
    /// (0 = decided last cycle) as `<prefix>_<field>` for each
    /// `(prefix, stage, used)` in `taps`; a field whose net another part
    /// read first is defined on its handle, one of `early`.
    fn build(
        &self,
        m: &mut Scope,
        rst: Net,
        lat: Const,
        values: Vec<Expr>,
        taps: &[(&str, Expr, Option<&[PipeField]>)],
        early: &[Net],
    ) -> Vec<Tap> {
        assert_eq!(
            values.len(),
            self.fields.len(),
            "{}: a value per field",
            self.name
        );
        let w = self.bits() as i64;
        let stages = lat + 1;
        let ([pipe], reset) = m.registers([(self.name, stages * w)]);
        let input = m.wire_of(&format!("{}_in", self.name), w, Expr::Concat(values));
        let shift = cat([pipe.bits(lat * w - 1, 0), input.e()]);
        m.clocked(vec![if_else(rst, reset, vec![set(pipe, shift)])]);
        let mut out = Vec::new();
        for (prefix, stage, used) in taps {
            let base = stage.clone() * w;
            let mut lsb = self.bits() as i64;
            let mut tap = Vec::new();
            for (field, bits) in self.fields {
                lsb -= *bits as i64;
                if used.is_some_and(|u| !u.contains(field)) {
                    continue;
                }
                let lo = base.clone() + lsb;
                let value = if *bits == 1 {
                    pipe.at(lo)
                } else {
                    pipe.bits(lo.clone() + (*bits as i64 - 1), lo)
                };
                let name = format!("{prefix}_{}", field.name());
                let width = Width::of(*bits as i64);
                // A line's bits above its buffer's address bits are unused.
                let net = match early.iter().find(|n| n.name() == name) {
                    Some(n) => {
                        m.define(wire_for(*n, width.clone()).init(value));
                        m.add(wire(&format!("{name}_unused"), width).init(*n));
                        *n
                    }
                    None => m.partly_used(wire(&name, width).init(value)),
                };
                tap.push((*field, net));
            }
            out.push(Tap(tap));
        }
        out
    }
}

/// `a + t`: a line address plus a wave or line index, in `ADDR_BITS`.
fn line_plus(a: Net, t: Net) -> Expr {
    a + t
}

// Line indices (`c_t`, LEN_BITS) add to addresses without widening.
const _: () = assert!(LEN_BITS == ADDR_BITS);

/// The issue register: this cycle's decision, for the array next cycle.
struct Issue {
    iq_mode: Net,
    iq_lr: Net,
    iq_op: Net,
    iq_swap: Net,
    iq_update: Net,
    iq_load: Net,
    iq_row: Net,
    iq_x_on: Net,
    iq_x_lanes: Net,
    iq_dy_on: Net,
    iq_dy_lanes: Net,
    iq_w_on: Net,
    iq_w_lanes: Net,
    wave_x: Net,
    x_read: Net,
    wave_dy: Net,
}

fn issue_register(m: &mut Scope, io: &ControllerIo, e: &Engines, modes: &Modes) -> Issue {
    let bits = |b: u32| int(b as i64);
    m.comment("The issue register: a decision reaches the array's inputs in the next cycle.");
    let (
        [iq_mode, iq_lr, iq_op, iq_swap, iq_update, iq_load, iq_row, iq_x_on, iq_x_lanes, iq_dy_on, iq_dy_lanes, iq_w_on, iq_w_lanes],
        reset,
    ) = m.registers([
        ("iq_mode", bits(MODE_BITS)),
        ("iq_lr", bits(LR_SHIFT_BITS)),
        ("iq_op", bits(WAVE_OP_BITS)),
        ("iq_swap", int(1)),
        ("iq_update", int(1)),
        ("iq_load", int(1)),
        ("iq_row", RB.e()),
        ("iq_x_on", int(1)),
        ("iq_x_lanes", bits(TILE_BITS)),
        ("iq_dy_on", int(1)),
        ("iq_dy_lanes", bits(TILE_BITS)),
        ("iq_w_on", int(1)),
        ("iq_w_lanes", bits(TILE_BITS)),
    ]);
    let streams_x: Vec<Expr> = Mode::WAVE_OPS
        .iter()
        .filter(|md| md.streams_x())
        .map(|md| e.c_wave_mode.equals(modes.of(*md)))
        .collect();
    // A windowed wave at a padding position streams X = 0, reading
    // nothing (`x_read`); it counts as the same pass without the window.
    let wave_x = m.flag("wave_x", e.do_wave.and(any_of(streams_x)));
    let x_read = m.flag("x_read", wave_x.and((!e.c_win).or(e.g_inside)));
    let wave_dy = m.flag("wave_dy", e.do_wave.and(!e.c_fwd));
    let evict = e.c.get(Field::Evict);
    let mode = |md: Mode| modes.of(md);
    let decide = vec![
        set(
            iq_mode,
            cond(
                e.do_update,
                mode(Mode::Update),
                cond(
                    e.do_drain,
                    mode(Mode::Drain),
                    cond(e.stream_cycle, mode(Mode::Stream), mode(Mode::Idle)),
                ),
            ),
        ),
        set(
            iq_lr,
            cond(
                e.do_update,
                e.c.get(Field::FirstLr).e(),
                cond(
                    e.do_swap.and(evict),
                    e.c.get(Field::EvictLr).e(),
                    lit(LR_SHIFT_BITS, 0),
                ),
            ),
        ),
        set(
            iq_op,
            cond(
                e.do_wave,
                e.c_wave_mode.bits(WAVE_OP_BITS as i64 - 1, 0),
                lit(WAVE_OP_BITS, 0),
            ),
        ),
        set(iq_swap, e.do_swap),
        set(iq_update, e.do_swap.and(evict)),
        set(iq_load, e.slot_now),
        set(
            iq_row,
            cond(e.slot_now, e.lc_row.bits(RB - 1, 0), zeros(RB)),
        ),
        set(iq_x_on, x_read),
        set(iq_x_lanes, e.sw_act_k),
        set(iq_dy_on, wave_dy),
        set(iq_dy_lanes, e.sw_act_m),
        set(iq_w_on, e.slot_read),
        set(iq_w_lanes, e.lc_m),
    ];
    m.clocked(vec![if_else(io.rst, reset, decide)]);
    Issue {
        iq_mode,
        iq_lr,
        iq_op,
        iq_swap,
        iq_update,
        iq_load,
        iq_row,
        iq_x_on,
        iq_x_lanes,
        iq_dy_on,
        iq_dy_lanes,
        iq_w_on,
        iq_w_lanes,
        wave_x,
        x_read,
        wave_dy,
    }
}

/// `arr_*`: the issue register, with the lines read for it, masked to the
/// lanes of the tile.
fn array_inputs(m: &mut Scope, io: &ControllerIo, iq: &Issue) {
    let top = TopPorts::new();
    let arr = |p: Net| io.arr.of(p);
    let wave = |f: WaveField| io.arr.of(wave_port(f));
    m.assign(arr(top.mode), iq.iq_mode);
    m.assign(arr(top.lr_shift), iq.iq_lr);
    m.assign(arr(top.dy_valid), iq.iq_dy_on);
    m.assign(wave(WaveField::Op), iq.iq_op);
    m.assign(wave(WaveField::Swap), iq.iq_swap);
    m.assign(wave(WaveField::Update), iq.iq_update);
    m.assign(wave(WaveField::Load), iq.iq_load);
    m.assign(wave(WaveField::LoadRow), iq.iq_row);
    let bus = |t: DmaTarget| io.bufs.of(t).rdata;
    let mut gate = |out: Net, lanes: P, on: Net, n: Net, src: Net| {
        let mask = m.wire_of(&format!("{}_mask", out.name()), lanes, lane_mask(lanes, n));
        let mut lane = Scope::new();
        lane.assign(
            out.lane(L, DW),
            cond(on.and(mask.at(L)), src.lane(L, DW), zeros(DW)),
        );
        m.gen_for(L.name(), lanes, &format!("g_{}", out.name()), lane);
    };
    gate(
        arr(top.x_in),
        R,
        iq.iq_x_on,
        iq.iq_x_lanes,
        bus(DmaTarget::Activations),
    );
    gate(
        arr(top.w_in),
        C,
        iq.iq_w_on,
        iq.iq_w_lanes,
        bus(DmaTarget::Weights),
    );
    gate(
        arr(top.dy_in),
        C,
        iq.iq_dy_on,
        iq.iq_dy_lanes,
        bus(DmaTarget::Gradients),
    );
}

/// The delay lines' outputs: the write-back unit and the weight rows.
pub(super) struct Outputs {
    pub wb: WbCount,
    pub wd_lanes: Net,
    pub dr_write: Net,
    pub dr_lanes: Net,
    pub wave_x: Net,
    pub wave_dy: Net,
}

struct WriteBacks {
    wb: Tap,
    pre: Tap,
    wd: Tap,
    wb_write: Net,
    wb_rd: Net,
    dw_wide: Net,
    data: WriteBackData,
}

/// The two delay lines and what their last stages write.
fn write_backs(
    m: &mut Scope,
    io: &ControllerIo,
    e: &Engines,
    modes: &Modes,
    cmd: &CommandConsts,
    acc: &AccRead,
) -> WriteBacks {
    let lat = cmd.result_latency.0;
    m.comment("Results and weight rows, due R + C + 1 cycles after their decision.");
    let phase = cond(
        e.c_fwd,
        WbPhase::Forward.lit(),
        cond(
            e.c_wave_mode.equals(modes.of(Mode::BwdIl)),
            WbPhase::Interleaved.lit(),
            WbPhase::Dx.lit(),
        ),
    );
    let pre_used = [
        PipeField::Valid,
        PipeField::Acc,
        PipeField::Line,
        PipeField::Put,
    ];
    // A windowed pass's dX goes to the window's lines and, at a padding
    // position, nowhere: the line and the verdict ride down the delay line.
    let dx_win = m.flag("dx_win", e.c_win.and(!e.c_fwd));
    let result_line = cond(
        dx_win,
        line_plus(e.c_addr_b, e.g_line),
        line_plus(e.c_addr_b, e.c_t),
    );
    let mut results = RESULTS
        .build(
            m,
            io.rst,
            lat,
            vec![
                e.result_wave.e(),
                e.c_acc.e(),
                phase,
                !e.c_fwd,
                cond(e.c_fwd, e.sw_act_m, e.sw_act_k),
                result_line,
                (!dx_win).or(e.g_inside),
            ],
            &[("wb", lat.e(), None), ("pre", lat - 1, Some(&pre_used))],
            &[],
        )
        .into_iter();
    let (wb, pre) = (results.next().unwrap(), results.next().unwrap());
    let wd = WEIGHTS
        .build(
            m,
            io.rst,
            lat,
            vec![
                e.evict_row.e(),
                e.out_m.e(),
                e.out_addr + zext(ADDR_BITS - TILE_BITS, e.lc_row),
            ],
            &[("wd", lat.e(), None)],
            &[e.wd_valid],
        )
        .remove(0);
    let wb_write = m.flag("wb_write", wb.get(PipeField::Valid));
    let wb_put = m.flag("wb_store", wb_write.and(wb.get(PipeField::Put)));
    let wb_rd = m.flag(
        "wb_rd",
        pre.get(PipeField::Valid)
            .and(pre.get(PipeField::Acc))
            .and(pre.get(PipeField::Put)),
    );
    let top = TopPorts::new();
    let [y_wide, dx_wide, dw_wide] = ["y_wide", "dx_wide", "dw_wide"].map(Net::named);
    widen_lanes(m, io.la, y_wide, io.arr.of(top.y_out), C);
    widen_lanes(m, io.la, dx_wide, io.arr.of(top.dx_out), R);
    widen_lanes(m, io.la, dw_wide, io.arr.of(top.dw_out), R);
    let accumulate = io.arith.accumulate(m);
    let unit = WriteBack {
        lanes: wb.get(PipeField::Lanes),
        write: wb_put,
        dx: wb.get(PipeField::Dx),
        acc: wb.get(PipeField::Acc),
    };
    let data = WriteBackData::named();
    write_back_data(
        m,
        io.la,
        &unit,
        [y_wide, dx_wide],
        acc.a_rd,
        &accumulate,
        &data,
    );
    WriteBacks {
        wb,
        pre,
        wd,
        wb_write,
        wb_rd,
        dw_wide,
        data,
    }
}

/// DRAIN, REQUANT and ACT lines: written in the cycle after their
/// decision (`rq_*`: REQUANT and ACT, through the activation unit).
struct LineWrites {
    dr_write: Net,
    dr_line: Net,
    dr_lanes: Net,
    rq_write: Net,
    rq_line: Net,
    rq_to_g: Net,
    rq_lanes: Net,
    rq_func: Net,
}

fn line_writes(m: &mut Scope, io: &ControllerIo, e: &Engines, st: &States) -> LineWrites {
    let table = [
        ("dr_write", int(1)),
        ("dr_line", int(ADDR_BITS as i64)),
        ("dr_lanes", int(TILE_BITS as i64)),
        ("rq_write", int(1)),
        ("rq_line", int(ADDR_BITS as i64)),
        ("rq_to_g", int(1)),
        ("rq_lanes", int(TILE_BITS as i64)),
        ("rq_func", int(field::ACT_FUNC.bits as i64)),
    ];
    let mut reset = Vec::new();
    let [dr_write, dr_line, dr_lanes, rq_write, rq_line, rq_to_g, rq_lanes, rq_func] =
        table.map(|(name, width)| {
            let (d, zero) = register_and_zero(Net::named(name), width);
            let net = m.partly_used(d);
            reset.push(set(net, zero));
            net
        });
    let drain_j = m.wire_of("drain_j", LEN_BITS, st.drain_last - e.c_t);
    let capture = vec![
        set(
            dr_write,
            e.do_drain
                .and(drain_j.less(zext(LEN_BITS - TILE_BITS, e.sw_act_m))),
        ),
        set(dr_line, e.c_addr_a + drain_j),
        set(dr_lanes, e.sw_act_k),
        set(rq_write, e.do_requant),
        set(rq_line, line_plus(e.c_addr_b, e.c_t)),
        set(rq_to_g, e.c_acc),
        set(rq_lanes, e.c.get(Field::Lanes)),
        set(rq_func, e.c_func),
    ];
    m.clocked(vec![if_else(io.rst, reset, capture)]);
    LineWrites {
        dr_write,
        dr_line,
        dr_lanes,
        rq_write,
        rq_line,
        rq_to_g,
        rq_lanes,
        rq_func,
    }
}

/// The controller's side of the data buffers' ports (`<b>_ctl_*`).
fn buffer_ports(
    m: &mut Scope,
    io: &ControllerIo,
    e: &Engines,
    iq: &Issue,
    wbs: &WriteBacks,
    lw: &LineWrites,
    acc: &AccRead,
) {
    let ab = |t: DmaTarget| io.bufs.of(t).ab;
    let ctl = |t: DmaTarget| io.ctl.of(t);
    let define = |m: &mut Scope, net: Net, width: Width, v: Expr| {
        m.define(wire_for(net, width).init(v));
    };
    let lines = |m: &mut Scope, name: &str, v: Expr| {
        m.partly_used(wire(name, Width::of(ADDR_BITS as i64)).init(v))
    };
    m.comment("The lines the decisions read, before their buffers' address bits.");
    let w_line = lines(
        m,
        "w_line",
        e.lc_addr + zext(ADDR_BITS - TILE_BITS, e.lc_row),
    );
    let x_base = lines(m, "x_base", cond(e.c_fwd, e.c_addr_a, e.c_x_addr));
    let x_line = lines(
        m,
        "x_line",
        cond(
            e.c_win,
            line_plus(x_base, e.g_line),
            line_plus(x_base, e.c_t),
        ),
    );
    let line_a_t = lines(m, "line_a_t", line_plus(e.c_addr_a, e.c_t));
    let top = TopPorts::new();
    let (wd_lanes, wd_line) = (wbs.wd.get(PipeField::Lanes), wbs.wd.get(PipeField::Line));
    let (w, w_ab) = (ctl(DmaTarget::Weights), ab(DmaTarget::Weights));
    m.comment("Weights: slot reads; rows of dirty tiles written back.");
    define(m, w.re, Width::bit(), e.slot_read.e());
    define(m, w.raddr, Width::of(w_ab), low(w_ab, w_line));
    define(
        m,
        w.we,
        Width::of(C),
        cond(e.wd_valid, lane_mask(C, wd_lanes), zeros(C)),
    );
    define(m, w.waddr, Width::of(w_ab), low(w_ab, wd_line));
    define(m, w.wdata, Width::of(C * DW), io.arr.of(top.w_out).e());
    m.comment("Activations and gradients: wave and ACT mask reads; REQUANT's and ACT's lines.");
    let (x, x_ab) = (ctl(DmaTarget::Activations), ab(DmaTarget::Activations));
    let mask_read = m.flag("mask_read", e.do_requant.and(e.c_act).and(e.c_reads_mask));
    define(m, x.re, Width::bit(), iq.x_read.or(mask_read));
    // ACT's mask line is its entry's x address (word 1) plus the line.
    define(m, x.raddr, Width::of(x_ab), low(x_ab, x_line));
    define(
        m,
        x.we,
        Width::of(R),
        cond(
            lw.rq_write.and(!lw.rq_to_g),
            lane_mask(R, lw.rq_lanes),
            zeros(R),
        ),
    );
    define(m, x.waddr, Width::of(x_ab), low(x_ab, lw.rq_line));
    define(
        m,
        x.wdata,
        Width::of(R * DW),
        acc.act_out.bits(R * DW - 1, 0),
    );
    let (g, g_ab) = (ctl(DmaTarget::Gradients), ab(DmaTarget::Gradients));
    define(m, g.re, Width::bit(), iq.wave_dy.e());
    define(m, g.raddr, Width::of(g_ab), low(g_ab, line_a_t));
    define(
        m,
        g.we,
        Width::of(C),
        cond(
            lw.rq_write.and(lw.rq_to_g),
            lane_mask(C, lw.rq_lanes),
            zeros(C),
        ),
    );
    define(m, g.waddr, Width::of(g_ab), low(g_ab, lw.rq_line));
    define(
        m,
        g.wdata,
        Width::of(C * DW),
        acc.act_out.bits(C * DW - 1, 0),
    );
    m.comment("Accumulators: REQUANT, ACT and accumulating reads; results and DRAIN.");
    let (a, a_ab) = (ctl(DmaTarget::Accumulators), ab(DmaTarget::Accumulators));
    let la = io.la;
    define(m, a.re, Width::bit(), e.do_requant.or(wbs.wb_rd));
    define(
        m,
        a.raddr,
        Width::of(a_ab),
        cond(
            e.do_requant,
            low(a_ab, line_a_t),
            low(a_ab, wbs.pre.get(PipeField::Line)),
        ),
    );
    define(
        m,
        a.we,
        Width::of(la),
        cond(lw.dr_write, lane_mask(la, lw.dr_lanes), wbs.data.we),
    );
    define(
        m,
        a.waddr,
        Width::of(a_ab),
        cond(
            lw.dr_write,
            low(a_ab, lw.dr_line),
            low(a_ab, wbs.wb.get(PipeField::Line)),
        ),
    );
    define(
        m,
        a.wdata,
        Width::of(la * AW),
        cond(lw.dr_write, wbs.dw_wide, wbs.data.data),
    );
}

pub(super) fn build(
    m: &mut Scope,
    io: &ControllerIo,
    e: &Engines,
    st: &States,
    modes: &Modes,
    cmd: &CommandConsts,
    acc: &AccRead,
) -> Outputs {
    let iq = issue_register(m, io, e, modes);
    array_inputs(m, io, &iq);
    let wbs = write_backs(m, io, e, modes, cmd, acc);
    let lw = line_writes(m, io, e, st);
    buffer_ports(m, io, e, &iq, &wbs, &lw, acc);
    let a = io.bufs.of(DmaTarget::Accumulators);
    let act = ActIn {
        func: lw.rq_func,
        to_grad: lw.rq_to_g,
        mask: io.bufs.of(DmaTarget::Activations).rdata,
    };
    accumulator_read(m, io, &a, &act, acc);
    Outputs {
        wb: WbCount {
            write: wbs.wb_write,
            ph: wbs.wb.get(PipeField::Ph),
            acc: wbs.wb.get(PipeField::Acc),
            lanes: wbs.wb.get(PipeField::Lanes),
        },
        wd_lanes: wbs.wd.get(PipeField::Lanes),
        dr_write: lw.dr_write,
        dr_lanes: lw.dr_lanes,
        wave_x: iq.wave_x,
        wave_dy: iq.wave_dy,
    }
}
