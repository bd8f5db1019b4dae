//! The dense controller's two issue engines (`docs/COMMANDS.md`, Dense
//! controller, Issue), as `sysgrad_emulator::issue::Issuer` runs them: the
//! data engine (waves, swaps, UPDATE and DRAIN cycles, REQUANT lines, the
//! stop) and the load engine (R exchange slots per tile, the write-back
//! hazard), with the tiles they move: the one in the PEs (`act_*`), the
//! one in the shadow registers (`sh_*`) and the dirty rows in transit.
//!
//! Every decision of a cycle is a net (`do_*`, `slot_now`); the issue
//! register in [`super::outputs`] carries it to the array a cycle later.
//! Within a cycle the order is the model's: the data engine takes and
//! acts first, its swap moves the tiles (`sw_*`: the tiles after it), then
//! the load engine takes and issues its slot.

use super::super::control::{field_selects, pass_mode_of};
use super::super::sizes::*;
use super::super::{flag_wire, registers, sized_const, wire_of};
use super::entry::{self, kind_is, Kind};
use super::{enum_constants, partly_used};
use crate::ir::*;
use sysgrad_isa::command::{field, format, opcode};
use sysgrad_isa::mode::MODE_BITS;
use sysgrad_isa::BackwardMode;

/// The data engine's steps (`sysgrad_emulator::issue::Step`).
pub(super) const STEPS: [&str; 7] = [
    "D_SWAP_BUBBLE",
    "D_UPDATE_FIRST",
    "D_WAVE",
    "D_DRAIN",
    "D_REQUANT",
    "D_SETTLE",
    "D_STOP",
];
pub(super) const STEP_KIND_BITS: u32 = 3;

/// The load engine's phases (`LoadPhase`).
pub(super) const LOAD_PHASES: [&str; 3] = ["L_PUSH_OUT", "L_WAIT_CLEAN", "L_SLOTS"];
pub(super) const LOAD_PHASE_BITS: u32 = 2;

/// What the shadow registers hold (`Shadow`); junk is 0, the reset value.
pub(super) const SHADOW: [&str; 3] = ["SH_JUNK", "SH_LOADED", "SH_EVICTED"];
pub(super) const SHADOW_BITS: u32 = 2;

/// Rows of dirty tiles in transit: at most a tile in the shadow registers
/// and one leaving the array, R rows each; two bits of headroom.
const DIRTY_BITS: u32 = TILE_BITS + 2;

fn at(step: &str) -> Expr {
    id("c_valid").and(id("c_step").equals(step))
}

fn zero(net: &str, bits: u32) -> Expr {
    id(net).equals(lit(bits, 0))
}

fn plus_one(net: &str, bits: u32) -> Expr {
    id(net) + lit(bits, 1)
}

/// A line address `addr + k` in `SPAN_BITS`, for range comparisons.
fn span(addr: &str, len: &str) -> Expr {
    zext(SPAN_BITS - ADDR_BITS, id(addr)) + zext(SPAN_BITS - TILE_BITS, id(len))
}

pub(super) fn constants() -> Vec<Item> {
    let mut v = enum_constants(&STEPS, STEP_KIND_BITS);
    v.extend(enum_constants(&LOAD_PHASES, LOAD_PHASE_BITS));
    v.extend(enum_constants(&SHADOW, SHADOW_BITS));
    v.extend(sized_const("ROW_LAST", TILE_BITS, id("R") - 1));
    v.extend(sized_const("DRAIN_LAST", LEN_BITS, id("C") - 1));
    v
}

fn state_registers() -> (Vec<Item>, Vec<Stmt>) {
    let bits = |b: u32| int(b as i64);
    registers(&[
        ("d_busy", int(1)),
        ("d_e", int(entry::BITS as i64)),
        ("d_step", bits(STEP_KIND_BITS)),
        ("d_pass", int(1)),
        ("d_t", bits(LEN_BITS)),
        ("l_busy", int(1)),
        ("l_phase", bits(LOAD_PHASE_BITS)),
        ("l_row", bits(TILE_BITS)),
        ("l_has_tile", int(1)),
        ("l_zero", int(1)),
        ("l_addr", bits(ADDR_BITS)),
        ("l_m", bits(TILE_BITS)),
        ("l_k", bits(TILE_BITS)),
        ("o_dirty", int(1)),
        ("o_addr", bits(ADDR_BITS)),
        ("o_m", bits(TILE_BITS)),
        ("o_k", bits(TILE_BITS)),
        ("sh_state", bits(SHADOW_BITS)),
        ("sh_dirty", int(1)),
        ("sh_addr", bits(ADDR_BITS)),
        ("sh_m", bits(TILE_BITS)),
        ("sh_k", bits(TILE_BITS)),
        ("act_valid", int(1)),
        ("act_dirty", int(1)),
        ("act_addr", bits(ADDR_BITS)),
        ("act_m", bits(TILE_BITS)),
        ("act_k", bits(TILE_BITS)),
        ("act_mk", bits(TILE_AREA_BITS)),
        ("dirty_rows", bits(DIRTY_BITS)),
        ("hull_lo", bits(SPAN_BITS)),
        ("hull_hi", bits(SPAN_BITS)),
        ("wave_wait", bits(WAIT_BITS)),
        ("acc_wait", bits(WAIT_BITS)),
    ])
}

/// The entry the data engine works on this cycle (`c_*`): the queue head
/// if it takes one now (it acts on it in the same cycle), else its own.
fn current_entry() -> Vec<Item> {
    let step = |s: &str| id(s);
    let forward = format(opcode::FORWARD).expect("a format").verilog_name();
    let mut v = vec![
        flag_wire(
            "q0_is_load",
            kind_is("q0", Kind::Load).or(kind_is("q0", Kind::ZeroLoad)),
        ),
        flag_wire(
            "data_take",
            id("ctl_running")
                .and(!id("d_busy"))
                .and(id("q_len").differs(lit(2, 0)))
                .and(!id("q0_is_load")),
        ),
        flag_wire("c_valid", id("d_busy").or("data_take")),
        wire_of("c_e", entry::BITS as i64, cond("data_take", "q0", "d_e")),
    ];
    // Word 0's reserved bits are unused.
    v.extend(partly_used(entry::unpack("c", "c_e", &entry::FIELD_NAMES)));
    v.extend([
        wire_of("c_n", LEN_BITS, slice("c_w0", field::LENGTH)),
        flag_wire("c_acc", id("c_w0").at(field::FLAG.lo)),
        wire_of(
            "c_mode",
            MODE_FIELD_BITS,
            slice("c_w0", field::BACKWARD_MODE),
        ),
        wire_of("c_addr_a", ADDR_BITS, slice("c_w0", field::ADDR_A)),
        wire_of("c_addr_b", ADDR_BITS, slice("c_w0", field::ADDR_B)),
        flag_wire("c_fwd", slice("c_w0", field::OPCODE).equals(id(&forward))),
        flag_wire(
            "c_seq",
            (!id("c_fwd")).and(field_selects(id("c_mode"), BackwardMode::Sequential)),
        ),
        wire_of(
            "c_init",
            STEP_KIND_BITS,
            cond(
                kind_is("c", Kind::Stream),
                cond(
                    id("c_swap").and("c_first"),
                    step("D_SWAP_BUBBLE"),
                    cond("c_first", step("D_UPDATE_FIRST"), step("D_WAVE")),
                ),
                cond(
                    kind_is("c", Kind::Drain),
                    cond(
                        "c_swap",
                        step("D_SWAP_BUBBLE"),
                        cond("c_first", step("D_UPDATE_FIRST"), step("D_DRAIN")),
                    ),
                    cond(
                        kind_is("c", Kind::Swap),
                        step("D_SWAP_BUBBLE"),
                        cond(
                            kind_is("c", Kind::Requant),
                            step("D_REQUANT"),
                            cond("c_first", step("D_UPDATE_FIRST"), step("D_STOP")),
                        ),
                    ),
                ),
            ),
        ),
        wire_of(
            "c_step",
            STEP_KIND_BITS,
            cond("data_take", "c_init", "d_step"),
        ),
        wire_of("c_t", LEN_BITS, cond("data_take", lit(LEN_BITS, 0), "d_t")),
        flag_wire("c_pass", (!id("data_take")).and("d_pass")),
        wire_of(
            "c_wave_mode",
            MODE_BITS,
            cond("c_fwd", "M_FWD", pass_mode_of(id("c_mode"), id("c_pass"))),
        ),
        flag_wire(
            "c_wave_swap",
            id("c_swap")
                .and(!id("c_first"))
                .and(!id("c_pass"))
                .and(zero("c_t", LEN_BITS)),
        ),
    ]);
    v
}

/// What the data engine does this cycle (`DataAction`).
fn data_actions() -> Vec<Item> {
    vec![
        flag_wire("load_idle", !id("l_busy")),
        flag_wire("quiet", zero("wave_wait", WAIT_BITS)),
        flag_wire("written", zero("acc_wait", WAIT_BITS)),
        flag_wire(
            "queue_empty",
            id("q_len").equals(cat([lit(1, 0), id("data_take")])),
        ),
        flag_wire(
            "shadow_dirty",
            id("sh_state").equals("SH_EVICTED").and("sh_dirty"),
        ),
        flag_wire("do_swap_bubble", at("D_SWAP_BUBBLE").and("load_idle")),
        flag_wire(
            "do_update",
            at("D_UPDATE_FIRST").and("load_idle").and("quiet"),
        ),
        flag_wire(
            "do_wave",
            at("D_WAVE").and((!id("c_wave_swap")).or("load_idle")),
        ),
        flag_wire(
            "do_drain",
            at("D_DRAIN").and((!zero("c_t", LEN_BITS)).or(id("load_idle").and("quiet"))),
        ),
        flag_wire(
            "do_requant",
            at("D_REQUANT").and((!zero("c_t", LEN_BITS)).or("written")),
        ),
        flag_wire(
            "stop_ready",
            at("D_STOP").and("load_idle").and("queue_empty"),
        ),
        flag_wire("do_push_out", id("stop_ready").and("shadow_dirty")),
        flag_wire(
            "do_stop",
            id("stop_ready").and(!id("shadow_dirty")).and("quiet"),
        ),
        flag_wire("stop_run", "do_stop"),
        flag_wire(
            "do_swap",
            id("do_swap_bubble").or(id("do_wave").and("c_wave_swap")),
        ),
        flag_wire(
            "result_wave",
            id("do_wave").and(id("c_wave_mode").differs("M_BWD_DW")),
        ),
    ]
}

/// Where the data engine's entry goes next (`nx_*`), whether it is done,
/// and whether it keeps the load engine from taking a load.
fn data_next() -> Vec<Item> {
    let t1 = || plus_one("c_t", LEN_BITS);
    let t0 = || lit(LEN_BITS, 0);
    vec![
        flag_wire("wave_last", id("c_t").equals(id("c_n") - lit(LEN_BITS, 1))),
        flag_wire("drain_last", id("c_t").equals("DRAIN_LAST")),
        flag_wire("more_passes", id("c_seq").and(!id("c_pass"))),
        flag_wire(
            "c_done",
            any_of(vec![
                id("do_swap_bubble").and(kind_is("c", Kind::Swap)),
                id("do_wave").and("wave_last").and(!id("more_passes")),
                id("do_drain").and("drain_last"),
                at("D_SETTLE"),
                id("do_stop"),
            ]),
        ),
        wire_of(
            "after_bubble",
            STEP_KIND_BITS,
            cond(
                kind_is("c", Kind::Drain).and(!id("c_first")),
                "D_DRAIN",
                "D_UPDATE_FIRST",
            ),
        ),
        wire_of(
            "after_update",
            STEP_KIND_BITS,
            cond(
                kind_is("c", Kind::Stream),
                "D_WAVE",
                cond(kind_is("c", Kind::Drain), "D_DRAIN", "D_STOP"),
            ),
        ),
        wire_of(
            "nx_step",
            STEP_KIND_BITS,
            cond(
                "do_swap_bubble",
                "after_bubble",
                cond(
                    "do_update",
                    "after_update",
                    cond(id("do_requant").and("wave_last"), "D_SETTLE", "c_step"),
                ),
            ),
        ),
        wire_of(
            "nx_t",
            LEN_BITS,
            cond(
                id("do_swap_bubble").or("do_update"),
                t0(),
                cond(
                    id("do_wave").or("do_requant"),
                    cond("wave_last", t0(), t1()),
                    cond("do_drain", t1(), "c_t"),
                ),
            ),
        ),
        flag_wire(
            "nx_pass",
            id("c_pass").or(id("do_wave").and("wave_last").and("c_seq")),
        ),
        flag_wire(
            "nx_wave_swap",
            id("c_swap")
                .and(!id("c_first"))
                .and(!id("nx_pass"))
                .and(zero("nx_t", LEN_BITS)),
        ),
        flag_wire(
            "data_blocks",
            any_of(vec![
                id("do_update"),
                id("do_drain"),
                id("c_valid").and(!id("c_done")).and(any_of(vec![
                    id("nx_step").equals("D_SWAP_BUBBLE"),
                    id("nx_step").equals("D_UPDATE_FIRST"),
                    id("nx_step").equals("D_DRAIN").and(zero("nx_t", LEN_BITS)),
                    id("nx_step").equals("D_WAVE").and("nx_wave_swap"),
                ])),
            ]),
        ),
    ]
}

/// The tiles after this cycle's swap (`sw_*`): the shadow registers then
/// hold the tile switched out (junk if the PEs held none), the PEs the
/// loaded one; a dirty tile switched out joins the rows in transit.
fn after_swap() -> Vec<Item> {
    let pick = |net: &str, bits: u32, swapped: &str, kept: &str| {
        wire_of(net, bits, cond("do_swap", swapped, kept))
    };
    vec![
        flag_wire(
            "swap_dirty",
            id("do_swap")
                .and("act_valid")
                .and(id("act_dirty").or("c_evict")),
        ),
        wire_of(
            "sw_sh_state",
            SHADOW_BITS,
            cond(
                "do_swap",
                cond("act_valid", "SH_EVICTED", "SH_JUNK"),
                "sh_state",
            ),
        ),
        flag_wire(
            "sw_sh_dirty",
            cond("do_swap", id("act_dirty").or("c_evict"), "sh_dirty"),
        ),
        pick("sw_sh_addr", ADDR_BITS, "act_addr", "sh_addr"),
        pick("sw_sh_m", TILE_BITS, "act_m", "sh_m"),
        pick("sw_sh_k", TILE_BITS, "act_k", "sh_k"),
        pick("sw_act_m", TILE_BITS, "sh_m", "act_m"),
        pick("sw_act_k", TILE_BITS, "sh_k", "act_k"),
        wire_of(
            "sh_mk",
            TILE_AREA_BITS,
            zext(TILE_AREA_BITS - TILE_BITS, id("sh_m"))
                * zext(TILE_AREA_BITS - TILE_BITS, id("sh_k")),
        ),
        pick("sw_act_mk", TILE_AREA_BITS, "sh_mk", "act_mk"),
        wire_of(
            "sw_dirty_rows",
            DIRTY_BITS,
            id("dirty_rows")
                + cond(
                    "swap_dirty",
                    zext(DIRTY_BITS - TILE_BITS, id("act_k")),
                    lit(DIRTY_BITS, 0),
                ),
        ),
        // A tile's lines join the hull (zero tiles have none).
        flag_wire(
            "swap_lines",
            id("swap_dirty").and(!zero("act_k", TILE_BITS)),
        ),
        flag_wire("hull_empty", zero("dirty_rows", DIRTY_BITS)),
        wire_of(
            "act_start",
            SPAN_BITS,
            zext(SPAN_BITS - ADDR_BITS, id("act_addr")),
        ),
        wire_of("act_end", SPAN_BITS, span("act_addr", "act_k")),
        wire_of(
            "sw_hull_lo",
            SPAN_BITS,
            cond(
                id("swap_lines").and(id("hull_empty").or(id("act_start").less("hull_lo"))),
                "act_start",
                "hull_lo",
            ),
        ),
        wire_of(
            "sw_hull_hi",
            SPAN_BITS,
            cond(
                id("swap_lines").and(id("hull_empty").or(id("act_end").greater("hull_hi"))),
                "act_end",
                "hull_hi",
            ),
        ),
    ]
}

/// The load engine: the load it takes (`lh_*`, the head left after the
/// data engine's take), the write-back hazard, and this cycle's slot.
fn load_engine() -> Vec<Item> {
    let q = |n: u64| lit(2, n);
    // A load entry has only a kind and a word.
    let mut head = vec![wire_of(
        "lh_e",
        entry::BITS as i64,
        cond("data_take", "q1", "q0"),
    )];
    head.extend(entry::unpack("lh", "lh_e", &["kind", "w0"]));
    let mut v = partly_used(head);
    let from_take = |net: &str, bits: u32, taken: Expr, held: &str| {
        wire_of(net, bits, cond("load_take", taken, held))
    };
    v.extend([
        flag_wire(
            "lh_avail",
            id("q_len")
                .equals(q(2))
                .or(id("q_len").equals(q(1)).and(!id("data_take"))),
        ),
        flag_wire("lh_zero", kind_is("lh", Kind::ZeroLoad)),
        flag_wire(
            "load_take",
            all_of(vec![
                id("ctl_running"),
                !id("do_push_out"),
                !id("l_busy"),
                !id("data_blocks"),
                id("lh_avail"),
                kind_is("lh", Kind::Load).or("lh_zero"),
            ]),
        ),
        wire_of("lh_addr", ADDR_BITS, slice("lh_w0", field::ADDR_A)),
        wire_of("lh_m", TILE_BITS, slice("lh_w0", field::TILE_M)),
        wire_of("lh_k", TILE_BITS, slice("lh_w0", field::TILE_K)),
        flag_wire(
            "hazard",
            all_of(vec![
                !id("lh_zero"),
                !zero("sw_dirty_rows", DIRTY_BITS),
                zext(SPAN_BITS - ADDR_BITS, id("lh_addr")).less("sw_hull_hi"),
                id("sw_hull_lo").less(span("lh_addr", "lh_k")),
            ]),
        ),
        wire_of(
            "take_phase",
            LOAD_PHASE_BITS,
            cond(
                "hazard",
                cond(
                    id("sw_sh_state").equals("SH_EVICTED").and("sw_sh_dirty"),
                    "L_PUSH_OUT",
                    "L_WAIT_CLEAN",
                ),
                "L_SLOTS",
            ),
        ),
        flag_wire("lc_new", id("load_take").or("do_push_out")),
        flag_wire("lc_busy", id("l_busy").or("lc_new")),
        wire_of(
            "lc_phase",
            LOAD_PHASE_BITS,
            cond(
                "load_take",
                "take_phase",
                cond("do_push_out", "L_PUSH_OUT", "l_phase"),
            ),
        ),
        wire_of(
            "lc_row",
            TILE_BITS,
            cond("lc_new", lit(TILE_BITS, 0), "l_row"),
        ),
        flag_wire(
            "lc_tile",
            id("load_take").or((!id("do_push_out")).and("l_has_tile")),
        ),
        flag_wire(
            "lc_zero",
            cond("load_take", id("lh_zero"), id("do_push_out").or("l_zero")),
        ),
        from_take("lc_addr", ADDR_BITS, id("lh_addr"), "l_addr"),
        from_take("lc_m", TILE_BITS, id("lh_m"), "l_m"),
        from_take("lc_k", TILE_BITS, id("lh_k"), "l_k"),
    ]);
    v.extend(slot());
    v
}

/// This cycle's exchange slot, the row it sends out, and where the load
/// engine goes next.
fn slot() -> Vec<Item> {
    let from_row0 = |net: &str, bits: u32, shadow: &str, held: &str| {
        wire_of(net, bits, cond("row0", shadow, held))
    };
    vec![
        flag_wire(
            "lc_wait",
            id("lc_phase")
                .equals("L_WAIT_CLEAN")
                .and(!zero("sw_dirty_rows", DIRTY_BITS)),
        ),
        flag_wire("slot_now", id("lc_busy").and(!id("lc_wait"))),
        flag_wire("lc_slots", id("lc_phase").differs("L_PUSH_OUT")),
        flag_wire(
            "slot_read",
            all_of(vec![
                id("slot_now"),
                id("lc_slots"),
                !id("lc_zero"),
                id("lc_row").less("lc_k"),
            ]),
        ),
        flag_wire("slot_last", id("lc_row").equals("ROW_LAST")),
        // Row 0 takes the tile in the shadow registers out with it.
        flag_wire("row0", id("slot_now").and(zero("lc_row", TILE_BITS))),
        flag_wire(
            "out_dirty",
            cond(
                "row0",
                id("sw_sh_state").equals("SH_EVICTED").and("sw_sh_dirty"),
                id("o_dirty"),
            ),
        ),
        from_row0("out_addr", ADDR_BITS, "sw_sh_addr", "o_addr"),
        from_row0("out_m", TILE_BITS, "sw_sh_m", "o_m"),
        from_row0("out_k", TILE_BITS, "sw_sh_k", "o_k"),
        flag_wire(
            "evict_row",
            all_of(vec![
                id("slot_now"),
                id("out_dirty"),
                id("lc_row").less("out_k"),
            ]),
        ),
        flag_wire(
            "load_finish",
            all_of(vec![
                id("slot_now"),
                id("slot_last"),
                id("lc_slots").or(!id("lc_tile")),
            ]),
        ),
        wire_of(
            "l_phase_next",
            LOAD_PHASE_BITS,
            cond(
                "slot_now",
                cond(
                    "lc_slots",
                    "L_SLOTS",
                    cond("slot_last", "L_WAIT_CLEAN", "L_PUSH_OUT"),
                ),
                "lc_phase",
            ),
        ),
        wire_of(
            "l_row_next",
            TILE_BITS,
            cond(
                id("slot_now").and(!id("slot_last")),
                plus_one("lc_row", TILE_BITS),
                cond("slot_now", lit(TILE_BITS, 0), "lc_row"),
            ),
        ),
        flag_wire(
            "stream_cycle",
            any_of(vec![id("do_wave"), id("do_swap"), id("slot_now")]),
        ),
    ]
}

/// The registers' next values.
fn clocked() -> Item {
    let when = |c: &str, then: Vec<Stmt>| Stmt::If {
        cond: id(c),
        then,
        els: vec![],
    };
    let count_down = |net: &str| {
        cond(
            zero(net, WAIT_BITS),
            lit(WAIT_BITS, 0),
            id(net) - lit(WAIT_BITS, 1),
        )
    };
    let landed = id("sw_dirty_rows") - zext(DIRTY_BITS - 1, id("wd_valid"));
    let data = vec![
        set("d_busy", id("c_valid").and(!id("c_done"))),
        when("data_take", vec![set("d_e", "q0")]),
        set("d_step", "nx_step"),
        set("d_t", "nx_t"),
        set("d_pass", "nx_pass"),
    ];
    let load = vec![
        set("l_busy", id("lc_busy").and(!id("load_finish"))),
        set("l_phase", "l_phase_next"),
        set("l_row", "l_row_next"),
        set("l_has_tile", "lc_tile"),
        set("l_zero", "lc_zero"),
        set("l_addr", "lc_addr"),
        set("l_m", "lc_m"),
        set("l_k", "lc_k"),
        when(
            "row0",
            vec![
                set("o_dirty", "out_dirty"),
                set("o_addr", "sw_sh_addr"),
                set("o_m", "sw_sh_m"),
                set("o_k", "sw_sh_k"),
            ],
        ),
    ];
    // The shadow registers: a finished load's tile, else junk once row 0
    // has taken their tile out, else what the swap left.
    let shadow = if_else(
        "load_finish",
        vec![
            set("sh_state", cond("lc_tile", "SH_LOADED", "SH_JUNK")),
            set("sh_dirty", lit(1, 0)),
            set("sh_addr", "lc_addr"),
            set("sh_m", "lc_m"),
            set("sh_k", "lc_k"),
        ],
        vec![if_else(
            "row0",
            vec![set("sh_state", "SH_JUNK"), set("sh_dirty", lit(1, 0))],
            vec![
                set("sh_state", "sw_sh_state"),
                set("sh_dirty", "sw_sh_dirty"),
                set("sh_addr", "sw_sh_addr"),
                set("sh_m", "sw_sh_m"),
                set("sh_k", "sw_sh_k"),
            ],
        )],
    );
    let active = vec![
        when(
            "do_swap",
            vec![
                set("act_valid", lit(1, 1)),
                set("act_addr", "sh_addr"),
                set("act_m", "sh_m"),
                set("act_k", "sh_k"),
                set("act_mk", "sh_mk"),
            ],
        ),
        set(
            "act_dirty",
            (!id("do_swap")).and(id("act_dirty").or("do_update")),
        ),
    ];
    let transit = vec![
        set("dirty_rows", landed.clone()),
        if_else(
            landed.equals(lit(DIRTY_BITS, 0)),
            vec![
                set("hull_lo", lit(SPAN_BITS, 0)),
                set("hull_hi", lit(SPAN_BITS, 0)),
            ],
            vec![set("hull_lo", "sw_hull_lo"), set("hull_hi", "sw_hull_hi")],
        ),
        set(
            "wave_wait",
            cond(
                "stream_cycle",
                id("RESULT_LATENCY"),
                count_down("wave_wait"),
            ),
        ),
        set(
            "acc_wait",
            cond(
                "result_wave",
                id("RESULT_LATENCY") + lit(WAIT_BITS, 1),
                cond("do_drain", lit(WAIT_BITS, 1), count_down("acc_wait")),
            ),
        ),
    ];
    let body = [data, load, vec![shadow], active, transit].concat();
    Item::Clocked(vec![if_else("rst", state_registers().1, body)])
}

/// The logical AND of `es`.
fn all_of(es: Vec<Expr>) -> Expr {
    es.into_iter()
        .reduce(|a, b| a.and(b))
        .expect("at least one")
}

pub(super) fn items() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Issue engines: the data engine, the load engine and the tiles they move.".into(),
    )];
    v.extend(state_registers().0);
    v.extend(current_entry());
    v.extend(data_actions());
    v.extend(data_next());
    v.extend(after_swap());
    v.extend(load_engine());
    v.push(clocked());
    v
}
