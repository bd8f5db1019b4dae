//! What the dense controller's decisions do: the buffer reads they issue,
//! the issue register that carries them to the array's inputs a cycle
//! later (`arr_*`), and the writes of what comes out: results and weight
//! rows R + C + 1 cycles after their decision (two delay lines), a DRAIN
//! line a cycle after, a REQUANT line a cycle after its read.

use super::super::datapath::{accumulator_read, widen_lanes, write_back_data, WbPhase};
use super::super::sizes::*;
use super::super::{flag_wire, registers, wire_of};
use super::partly_used;
use crate::ctl::RB;
use crate::ir::*;
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::mode::{MODE_BITS, WAVE_OP_BITS};
use sysgrad_isa::Mode;

/// A delay line of packed fields, `LAT + 1` stages deep (decision to due).
struct Pipe {
    name: &'static str,
    /// (field, bits), most significant first.
    fields: &'static [(&'static str, u32)],
}

/// Results on their way out: Y or dX, the line and lanes they go to.
const RESULTS: Pipe = Pipe {
    name: "rpipe",
    fields: &[
        ("valid", 1),
        ("acc", 1),
        ("ph", WbPhase::BITS),
        ("dx", 1),
        ("lanes", TILE_BITS),
        ("line", ADDR_BITS),
    ],
};

/// Weight rows of dirty tiles on their way out.
const WEIGHTS: Pipe = Pipe {
    name: "wpipe",
    fields: &[("valid", 1), ("lanes", TILE_BITS), ("line", ADDR_BITS)],
};

impl Pipe {
    fn bits(&self) -> u32 {
        self.fields.iter().map(|(_, b)| b).sum()
    }

    /// The register, its input `<name>_in` from `values` (one per field),
    /// the shift, and the fields `used` (all if `None`) of stage `stage`
    /// (0 = decided last cycle) as `<prefix>_<field>` for each
    /// `(prefix, stage, used)` in `taps`.
    fn items(&self, values: Vec<Expr>, taps: &[(&str, Expr, Option<&[&str]>)]) -> Vec<Item> {
        assert_eq!(
            values.len(),
            self.fields.len(),
            "{}: a value per field",
            self.name
        );
        let w = self.bits() as i64;
        let stages = id("RESULT_LATENCY_I") + 1;
        let input = format!("{}_in", self.name);
        let (regs, reset) = registers(&[(self.name, stages.clone() * w)]);
        let mut v = regs;
        v.push(wire_of(&input, w, Expr::Concat(values)));
        let shift = cat([
            id(self.name).bits(id("RESULT_LATENCY_I") * w - 1, 0),
            id(&input),
        ]);
        v.push(Item::Clocked(vec![if_else(
            "rst",
            reset,
            vec![set(self.name, shift)],
        )]));
        let mut fields = Vec::new();
        for (prefix, stage, used) in taps {
            let base = stage.clone() * w;
            let mut lsb = self.bits() as i64;
            for (field, bits) in self.fields {
                lsb -= *bits as i64;
                if used.is_some_and(|u| !u.contains(field)) {
                    continue;
                }
                let lo = base.clone() + lsb;
                let value = if *bits == 1 {
                    id(self.name).at(lo)
                } else {
                    id(self.name).bits(lo.clone() + (*bits as i64 - 1), lo)
                };
                fields.push(wire_of(&format!("{prefix}_{field}"), *bits as i64, value));
            }
        }
        // A line's bits above its buffer's address bits are unused.
        v.extend(partly_used(fields));
        v
    }
}

/// `a + t`: a line address plus a wave or line index, in `ADDR_BITS`.
fn line_plus(a: &str, t: &str) -> Expr {
    id(a) + id(t)
}

// Line indices (`c_t`, LEN_BITS) add to addresses without widening.
const _: () = assert!(LEN_BITS == ADDR_BITS);

/// The issue register: this cycle's decision, for the array next cycle.
fn issue_register() -> Vec<Item> {
    let bits = |b: u32| int(b as i64);
    let (regs, reset) = registers(&[
        ("iq_mode", bits(MODE_BITS)),
        ("iq_lr", bits(LR_SHIFT_BITS)),
        ("iq_op", bits(WAVE_OP_BITS)),
        ("iq_swap", int(1)),
        ("iq_update", int(1)),
        ("iq_load", int(1)),
        ("iq_row", id(RB)),
        ("iq_x_on", int(1)),
        ("iq_x_lanes", bits(TILE_BITS)),
        ("iq_dy_on", int(1)),
        ("iq_dy_lanes", bits(TILE_BITS)),
        ("iq_w_on", int(1)),
        ("iq_w_lanes", bits(TILE_BITS)),
    ]);
    let streams_x: Vec<Expr> = Mode::WAVE_OPS
        .iter()
        .filter(|m| m.streams_x())
        .map(|m| id("c_wave_mode").equals(id(&m.verilog_name())))
        .collect();
    let decide = vec![
        set(
            "iq_mode",
            cond(
                "do_update",
                "M_UPDATE",
                cond(
                    "do_drain",
                    "M_DRAIN",
                    cond("stream_cycle", "M_STREAM", "M_IDLE"),
                ),
            ),
        ),
        set(
            "iq_lr",
            cond(
                "do_update",
                id("c_first_lr"),
                cond(
                    id("do_swap").and("c_evict"),
                    id("c_evict_lr"),
                    lit(LR_SHIFT_BITS, 0),
                ),
            ),
        ),
        set(
            "iq_op",
            cond(
                "do_wave",
                id("c_wave_mode").bits(WAVE_OP_BITS as i64 - 1, 0),
                lit(WAVE_OP_BITS, 0),
            ),
        ),
        set("iq_swap", "do_swap"),
        set("iq_update", id("do_swap").and("c_evict")),
        set("iq_load", "slot_now"),
        set(
            "iq_row",
            cond("slot_now", id("lc_row").bits(id(RB) - 1, 0), zeros(RB)),
        ),
        set("iq_x_on", "wave_x"),
        set("iq_x_lanes", "sw_act_k"),
        set("iq_dy_on", "wave_dy"),
        set("iq_dy_lanes", "sw_act_m"),
        set("iq_w_on", "slot_read"),
        set("iq_w_lanes", "lc_m"),
    ];
    let mut v = vec![Item::Comment(
        "The issue register: a decision reaches the array's inputs in the next cycle.".into(),
    )];
    v.extend(regs);
    v.extend([
        flag_wire(
            "wave_x",
            id("do_wave").and(
                streams_x
                    .into_iter()
                    .reduce(|a, b| a.or(b))
                    .expect("modes that stream x"),
            ),
        ),
        flag_wire("wave_dy", id("do_wave").and(!id("c_fwd"))),
        Item::Clocked(vec![if_else("rst", reset, decide)]),
    ]);
    v
}

/// `arr_*`: the issue register, with the lines read for it, masked to the
/// lanes of the tile.
fn array_inputs() -> Vec<Item> {
    let gate = |out: &str, lanes: &str, on: &str, n: &str, src: &str| {
        let mask = format!("{out}_mask");
        vec![
            wire_of(&mask, lanes, lane_mask(lanes, n)),
            gen_for(
                "l",
                lanes,
                &format!("g_{out}"),
                vec![assign(
                    id(out).lane("l", "DW"),
                    cond(
                        id(on).and(id(&mask).at("l")),
                        id(src).lane("l", "DW"),
                        zeros("DW"),
                    ),
                )],
            ),
        ]
    };
    let mut v = vec![
        assign("arr_mode", "iq_mode"),
        assign("arr_lr_shift", "iq_lr"),
        assign("arr_dy_valid", "iq_dy_on"),
        assign("arr_wave_op", "iq_op"),
        assign("arr_wave_swap", "iq_swap"),
        assign("arr_wave_update", "iq_update"),
        assign("arr_wave_load", "iq_load"),
        assign("arr_wave_load_row", "iq_row"),
    ];
    v.extend(gate("arr_x_in", "R", "iq_x_on", "iq_x_lanes", "x_rdata"));
    v.extend(gate("arr_w_in", "C", "iq_w_on", "iq_w_lanes", "w_rdata"));
    v.extend(gate("arr_dy_in", "C", "iq_dy_on", "iq_dy_lanes", "g_rdata"));
    v
}

/// The two delay lines and what their last stages write.
fn write_backs() -> Vec<Item> {
    let lat = || id("RESULT_LATENCY_I");
    let mut v = vec![Item::Comment(
        "Results and weight rows, due R + C + 1 cycles after their decision.".into(),
    )];
    let phase = cond(
        "c_fwd",
        WbPhase::Forward.lit(),
        cond(
            id("c_wave_mode").equals("M_BWD_IL"),
            WbPhase::Interleaved.lit(),
            WbPhase::Dx.lit(),
        ),
    );
    v.extend(RESULTS.items(
        vec![
            id("result_wave"),
            id("c_acc"),
            phase,
            !id("c_fwd"),
            cond("c_fwd", "sw_act_m", "sw_act_k"),
            line_plus("c_addr_b", "c_t"),
        ],
        &[
            ("wb", lat(), None),
            ("pre", lat() - 1, Some(&["valid", "acc", "line"])),
        ],
    ));
    v.extend(WEIGHTS.items(
        vec![
            id("evict_row"),
            id("out_m"),
            id("out_addr") + zext(ADDR_BITS - TILE_BITS, id("lc_row")),
        ],
        &[("wd", lat(), None)],
    ));
    v.extend([
        flag_wire("wb_write", "wb_valid"),
        flag_wire("wb_rd", id("pre_valid").and("pre_acc")),
    ]);
    v.extend(widen_lanes("y_wide", "arr_y_out", "C"));
    v.extend(widen_lanes("dx_wide", "arr_dx_out", "R"));
    v.extend(widen_lanes("dw_wide", "arr_dw_out", "R"));
    v.push(crate::pe::sat_add());
    v.extend(write_back_data());
    v
}

/// DRAIN and REQUANT lines: written in the cycle after their decision.
fn line_writes() -> Vec<Item> {
    let (regs, reset) = registers(&[
        ("dr_write", int(1)),
        ("dr_line", int(ADDR_BITS as i64)),
        ("dr_lanes", int(TILE_BITS as i64)),
        ("rq_write", int(1)),
        ("rq_line", int(ADDR_BITS as i64)),
        ("rq_to_g", int(1)),
    ]);
    let capture = vec![
        set(
            "dr_write",
            id("do_drain").and(id("drain_j").less(zext(LEN_BITS - TILE_BITS, id("sw_act_m")))),
        ),
        set("dr_line", id("c_addr_a") + id("drain_j")),
        set("dr_lanes", "sw_act_k"),
        set("rq_write", "do_requant"),
        set("rq_line", line_plus("c_addr_b", "c_t")),
        set("rq_to_g", "c_acc"),
    ];
    let mut v = partly_used(regs);
    v.push(wire_of("drain_j", LEN_BITS, id("DRAIN_LAST") - "c_t"));
    v.push(Item::Clocked(vec![if_else("rst", reset, capture)]));
    v
}

/// The controller's side of the data buffers' ports (`<b>_ctl_*`).
fn buffer_ports() -> Vec<Item> {
    let x_base = cond("c_fwd", "c_addr_a", "c_x_addr");
    let lines = partly_used(vec![
        Item::Comment("The lines the decisions read, before their buffers' address bits.".into()),
        wire_of(
            "w_line",
            ADDR_BITS,
            id("lc_addr") + zext(ADDR_BITS - TILE_BITS, id("lc_row")),
        ),
        wire_of("x_base", ADDR_BITS, x_base),
        wire_of("x_line", ADDR_BITS, line_plus("x_base", "c_t")),
        wire_of("line_a_t", ADDR_BITS, line_plus("c_addr_a", "c_t")),
    ]);
    let ports = vec![
        Item::Comment("Weights: slot reads; rows of dirty tiles written back.".into()),
        flag_wire("w_ctl_re", "slot_read"),
        wire_of("w_ctl_raddr", "W_AB", low("W_AB", "w_line")),
        wire_of(
            "w_ctl_we",
            "C",
            cond("wd_valid", lane_mask("C", "wd_lanes"), zeros("C")),
        ),
        wire_of("w_ctl_waddr", "W_AB", low("W_AB", "wd_line")),
        wire_of("w_ctl_wdata", id("C") * "DW", "arr_w_out"),
        Item::Comment("Activations and gradients: wave reads; REQUANT's lines.".into()),
        flag_wire("x_ctl_re", "wave_x"),
        wire_of("x_ctl_raddr", "X_AB", low("X_AB", "x_line")),
        wire_of(
            "x_ctl_we",
            "R",
            cond(id("rq_write").and(!id("rq_to_g")), ones("R"), zeros("R")),
        ),
        wire_of("x_ctl_waddr", "X_AB", low("X_AB", "rq_line")),
        wire_of(
            "x_ctl_wdata",
            id("R") * "DW",
            id("rq_out").bits(id("R") * "DW" - 1, 0),
        ),
        flag_wire("g_ctl_re", "wave_dy"),
        wire_of("g_ctl_raddr", "G_AB", low("G_AB", "line_a_t")),
        wire_of(
            "g_ctl_we",
            "C",
            cond(id("rq_write").and("rq_to_g"), ones("C"), zeros("C")),
        ),
        wire_of("g_ctl_waddr", "G_AB", low("G_AB", "rq_line")),
        wire_of(
            "g_ctl_wdata",
            id("C") * "DW",
            id("rq_out").bits(id("C") * "DW" - 1, 0),
        ),
        Item::Comment("Accumulators: REQUANT and accumulating reads; results and DRAIN.".into()),
        flag_wire("a_ctl_re", id("do_requant").or("wb_rd")),
        wire_of(
            "a_ctl_raddr",
            "A_AB",
            cond(
                "do_requant",
                low("A_AB", "line_a_t"),
                low("A_AB", "pre_line"),
            ),
        ),
        wire_of(
            "a_ctl_we",
            "LA",
            cond("dr_write", lane_mask("LA", "dr_lanes"), "wb_we"),
        ),
        wire_of(
            "a_ctl_waddr",
            "A_AB",
            cond("dr_write", low("A_AB", "dr_line"), low("A_AB", "wb_line")),
        ),
        wire_of(
            "a_ctl_wdata",
            id("LA") * "AW",
            cond("dr_write", "dw_wide", "wb_data"),
        ),
    ];
    [lines, ports].concat()
}

pub(super) fn items() -> Vec<Item> {
    let mut v = issue_register();
    v.extend(array_inputs());
    v.extend(write_backs());
    v.extend(line_writes());
    v.extend(buffer_ports());
    v.extend(accumulator_read());
    v
}
