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

use super::decoder::Decoder;
use super::entry::{self, Field, Kind};
use crate::accel::commands::{field_selects, pass_mode_of, reads_mask_of, CommandConsts};
use crate::accel::io::ControllerIo;
use crate::accel::sizes::*;
use crate::accel::window::{self, Window};
use crate::array::core::Modes;
use crate::ir::*;
use crate::params::{C, R};
use sysgrad_isa::command::{field, opcode};
use sysgrad_isa::mode::MODE_BITS;
use sysgrad_isa::{BackwardMode, Mode};

/// The data engine's steps (`sysgrad_emulator::issue::Step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    SwapBubble,
    UpdateFirst,
    Wave,
    Drain,
    Requant,
    Settle,
    Stop,
}

impl Step {
    const ALL: [Step; 7] = [
        Step::SwapBubble,
        Step::UpdateFirst,
        Step::Wave,
        Step::Drain,
        Step::Requant,
        Step::Settle,
        Step::Stop,
    ];
    const BITS: u32 = 3;
    fn name(self) -> &'static str {
        match self {
            Step::SwapBubble => "D_SWAP_BUBBLE",
            Step::UpdateFirst => "D_UPDATE_FIRST",
            Step::Wave => "D_WAVE",
            Step::Drain => "D_DRAIN",
            Step::Requant => "D_REQUANT",
            Step::Settle => "D_SETTLE",
            Step::Stop => "D_STOP",
        }
    }
}

/// The load engine's phases (`LoadPhase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    PushOut,
    WaitClean,
    Slots,
}

impl Phase {
    const ALL: [Phase; 3] = [Phase::PushOut, Phase::WaitClean, Phase::Slots];
    const BITS: u32 = 2;
    fn name(self) -> &'static str {
        match self {
            Phase::PushOut => "L_PUSH_OUT",
            Phase::WaitClean => "L_WAIT_CLEAN",
            Phase::Slots => "L_SLOTS",
        }
    }
}

/// What the shadow registers hold (`Shadow`); junk is 0, the reset value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shadow {
    Junk,
    Loaded,
    Evicted,
}

impl Shadow {
    const ALL: [Shadow; 3] = [Shadow::Junk, Shadow::Loaded, Shadow::Evicted];
    const BITS: u32 = 2;
    fn name(self) -> &'static str {
        match self {
            Shadow::Junk => "SH_JUNK",
            Shadow::Loaded => "SH_LOADED",
            Shadow::Evicted => "SH_EVICTED",
        }
    }
}

/// Rows of dirty tiles in transit: at most a tile in the shadow registers
/// and one leaving the array, R rows each; two bits of headroom.
const DIRTY_BITS: u32 = TILE_BITS + 2;

/// The engines' constants.
pub(super) struct States {
    steps: Enum<Step>,
    phases: Enum<Phase>,
    shadow: Enum<Shadow>,
    row_last: Const,
    pub drain_last: Const,
}

pub(super) fn constants(m: &mut Scope) -> States {
    let steps = Enum::declare(m, &Step::ALL, Step::name, Step::BITS);
    let phases = Enum::declare(m, &Phase::ALL, Phase::name, Phase::BITS);
    let shadow = Enum::declare(m, &Shadow::ALL, Shadow::name, Shadow::BITS);
    let row_last = sized_const(m, "ROW_LAST", TILE_BITS, R - 1).1;
    let drain_last = sized_const(m, "DRAIN_LAST", LEN_BITS, C - 1).1;
    States {
        steps,
        phases,
        shadow,
        row_last,
        drain_last,
    }
}

fn zero(net: Net, bits: u32) -> Expr {
    net.equals(lit(bits, 0))
}

fn plus_one(net: Net, bits: u32) -> Expr {
    net + lit(bits, 1)
}

/// A line address `addr + k` in `SPAN_BITS`, for range comparisons.
fn span(addr: Net, len: Net) -> Expr {
    zext(SPAN_BITS - ADDR_BITS, addr) + zext(SPAN_BITS - TILE_BITS, len)
}

/// The engines, as the outputs and the counters read them.
pub(super) struct Engines {
    pub c: entry::Unpacked,
    /// The entry is an ACT (else a REQUANT, where a line is written), its
    /// function and whether that reads a mask line.
    pub c_act: Net,
    pub c_func: Net,
    pub c_reads_mask: Net,
    pub c_acc: Net,
    pub c_addr_a: Net,
    pub c_addr_b: Net,
    pub c_x_addr: Net,
    pub c_fwd: Net,
    pub c_t: Net,
    pub c_wave_mode: Net,
    /// The pass follows its window (`win`), and where the generator is:
    /// wave `c_t`'s line and whether it is inside.
    pub c_win: Net,
    pub g_line: Net,
    pub g_inside: Net,
    pub do_swap: Net,
    pub do_update: Net,
    pub do_wave: Net,
    pub do_drain: Net,
    pub do_requant: Net,
    pub result_wave: Net,
    pub stream_cycle: Net,
    pub sw_act_m: Net,
    pub sw_act_k: Net,
    pub sw_act_mk: Net,
    pub slot_now: Net,
    pub slot_read: Net,
    pub evict_row: Net,
    pub lc_row: Net,
    pub lc_m: Net,
    pub lc_addr: Net,
    pub out_m: Net,
    pub out_addr: Net,
    /// Defined by the outputs: a dirty weight row lands this cycle.
    pub wd_valid: Net,
}

/// The engines' registers.
struct Regs {
    d_busy: Net,
    d_e: Net,
    d_step: Net,
    d_pass: Net,
    d_t: Net,
    l_busy: Net,
    l_phase: Net,
    l_row: Net,
    l_has_tile: Net,
    l_zero: Net,
    l_addr: Net,
    l_m: Net,
    l_k: Net,
    o_dirty: Net,
    o_addr: Net,
    o_m: Net,
    o_k: Net,
    sh_state: Net,
    sh_dirty: Net,
    sh_addr: Net,
    sh_m: Net,
    sh_k: Net,
    act_valid: Net,
    act_dirty: Net,
    act_addr: Net,
    act_m: Net,
    act_k: Net,
    act_mk: Net,
    dirty_rows: Net,
    hull_lo: Net,
    hull_hi: Net,
    wave_wait: Net,
    acc_wait: Net,
    reset: Vec<Stmt>,
}

fn state_registers(m: &mut Scope) -> Regs {
    let bits = |b: u32| int(b as i64);
    let (
        [d_busy, d_e, d_step, d_pass, d_t, l_busy, l_phase, l_row, l_has_tile, l_zero, l_addr, l_m, l_k, o_dirty, o_addr, o_m, o_k, sh_state, sh_dirty, sh_addr, sh_m, sh_k, act_valid, act_dirty, act_addr, act_m, act_k, act_mk, dirty_rows, hull_lo, hull_hi, wave_wait, acc_wait],
        reset,
    ) = m.registers([
        ("d_busy", int(1)),
        ("d_e", int(entry::BITS as i64)),
        ("d_step", bits(Step::BITS)),
        ("d_pass", int(1)),
        ("d_t", bits(LEN_BITS)),
        ("l_busy", int(1)),
        ("l_phase", bits(Phase::BITS)),
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
        ("sh_state", bits(Shadow::BITS)),
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
    ]);
    Regs {
        d_busy,
        d_e,
        d_step,
        d_pass,
        d_t,
        l_busy,
        l_phase,
        l_row,
        l_has_tile,
        l_zero,
        l_addr,
        l_m,
        l_k,
        o_dirty,
        o_addr,
        o_m,
        o_k,
        sh_state,
        sh_dirty,
        sh_addr,
        sh_m,
        sh_k,
        act_valid,
        act_dirty,
        act_addr,
        act_m,
        act_k,
        act_mk,
        dirty_rows,
        hull_lo,
        hull_hi,
        wave_wait,
        acc_wait,
        reset,
    }
}

/// The entry the data engine works on this cycle (`c_*`).
struct Current {
    c_valid: Net,
    c: entry::Unpacked,
    c_act: Net,
    c_func: Net,
    c_reads_mask: Net,
    c_n: Net,
    c_acc: Net,
    c_addr_a: Net,
    c_addr_b: Net,
    c_fwd: Net,
    c_seq: Net,
    c_step: Net,
    c_t: Net,
    c_pass: Net,
    c_wave_mode: Net,
    c_wave_swap: Net,
}

/// The entry the data engine works on this cycle (`c_*`): the queue head
/// if it takes one now (it acts on it in the same cycle), else its own.
fn current_entry(
    m: &mut Scope,
    dec: &Decoder,
    r: &Regs,
    kinds: &Enum<Kind>,
    st: &States,
    modes: &Modes,
    cmd: &CommandConsts,
) -> Current {
    let step = |s: Step| st.steps.of(s);
    let data_take = dec.takes.data_take;
    let q0_is_load = m.flag(
        "q0_is_load",
        dec.q0_kind
            .equals(kinds.of(Kind::Load))
            .or(dec.q0_kind.equals(kinds.of(Kind::ZeroLoad))),
    );
    m.define(
        wire_for(data_take, Width::bit()).init(
            dec.ctl_running
                .and(!r.d_busy)
                .and(dec.q_len.differs(lit(2, 0)))
                .and(!q0_is_load),
        ),
    );
    let c_valid = m.flag("c_valid", r.d_busy.or(data_take));
    let c_e = m.wire_of("c_e", entry::BITS as i64, cond(data_take, dec.q0, r.d_e));
    // Word 0's reserved bits are unused.
    let c = entry::unpack(m, "c", c_e, &entry::ALL_FIELDS, true);
    let w0 = c.get(Field::W0);
    let kind_is = |k: Kind| c.get(Field::Kind).equals(kinds.of(k));
    let (swap, first) = (c.get(Field::Swap), c.get(Field::First));
    let c_n = m.wire_of("c_n", LEN_BITS, slice(w0, field::LENGTH));
    let c_acc = m.flag("c_acc", w0.at(field::FLAG.lo));
    let c_mode = m.wire_of("c_mode", MODE_FIELD_BITS, slice(w0, field::BACKWARD_MODE));
    let c_addr_a = m.wire_of("c_addr_a", ADDR_BITS, slice(w0, field::ADDR_A));
    let c_addr_b = m.wire_of("c_addr_b", ADDR_BITS, slice(w0, field::ADDR_B));
    let c_fwd = m.flag(
        "c_fwd",
        slice(w0, field::OPCODE).equals(cmd.opcode(opcode::FORWARD)),
    );
    let c_act = m.flag(
        "c_act",
        slice(w0, field::OPCODE).equals(cmd.opcode(opcode::ACT)),
    );
    let c_func = m.wire_of("c_func", field::ACT_FUNC.bits, slice(w0, field::ACT_FUNC));
    let c_reads_mask = m.flag("c_reads_mask", reads_mask_of(c_func));
    let c_seq = m.flag(
        "c_seq",
        (!c_fwd).and(field_selects(c_mode, BackwardMode::Sequential)),
    );
    let c_init = m.wire_of(
        "c_init",
        Step::BITS,
        cond(
            kind_is(Kind::Stream),
            cond(
                swap.and(first),
                step(Step::SwapBubble),
                cond(first, step(Step::UpdateFirst), step(Step::Wave)),
            ),
            cond(
                kind_is(Kind::Drain),
                cond(
                    swap,
                    step(Step::SwapBubble),
                    cond(first, step(Step::UpdateFirst), step(Step::Drain)),
                ),
                cond(
                    kind_is(Kind::Swap),
                    step(Step::SwapBubble),
                    cond(
                        kind_is(Kind::Requant),
                        step(Step::Requant),
                        cond(first, step(Step::UpdateFirst), step(Step::Stop)),
                    ),
                ),
            ),
        ),
    );
    let c_step = m.wire_of("c_step", Step::BITS, cond(data_take, c_init, r.d_step));
    let c_t = m.wire_of("c_t", LEN_BITS, cond(data_take, lit(LEN_BITS, 0), r.d_t));
    let c_pass = m.flag("c_pass", (!data_take).and(r.d_pass));
    let c_wave_mode = m.wire_of(
        "c_wave_mode",
        MODE_BITS,
        cond(
            c_fwd,
            modes.of(Mode::Fwd),
            pass_mode_of(modes, c_mode, c_pass),
        ),
    );
    let c_wave_swap = m.flag(
        "c_wave_swap",
        swap.and(!first).and(!c_pass).and(zero(c_t, LEN_BITS)),
    );
    Current {
        c_valid,
        c,
        c_act,
        c_func,
        c_reads_mask,
        c_n,
        c_acc,
        c_addr_a,
        c_addr_b,
        c_fwd,
        c_seq,
        c_step,
        c_t,
        c_pass,
        c_wave_mode,
        c_wave_swap,
    }
}

/// What the data engine does this cycle (`DataAction`).
struct Actions {
    do_swap_bubble: Net,
    do_update: Net,
    do_wave: Net,
    do_drain: Net,
    do_requant: Net,
    do_push_out: Net,
    do_stop: Net,
    do_swap: Net,
    result_wave: Net,
}

fn data_actions(
    m: &mut Scope,
    dec: &Decoder,
    r: &Regs,
    cur: &Current,
    st: &States,
    modes: &Modes,
) -> Actions {
    let at = |s: Step| cur.c_valid.and(cur.c_step.equals(st.steps.of(s)));
    let load_idle = m.flag("load_idle", !r.l_busy);
    let quiet = m.flag("quiet", zero(r.wave_wait, WAIT_BITS));
    let written = m.flag("written", zero(r.acc_wait, WAIT_BITS));
    let queue_empty = m.flag(
        "queue_empty",
        dec.q_len.equals(cat([lit(1, 0), dec.takes.data_take.e()])),
    );
    let shadow_dirty = m.flag(
        "shadow_dirty",
        r.sh_state
            .equals(st.shadow.of(Shadow::Evicted))
            .and(r.sh_dirty),
    );
    let do_swap_bubble = m.flag("do_swap_bubble", at(Step::SwapBubble).and(load_idle));
    let do_update = m.flag("do_update", at(Step::UpdateFirst).and(load_idle).and(quiet));
    let do_wave = m.flag(
        "do_wave",
        at(Step::Wave).and((!cur.c_wave_swap).or(load_idle)),
    );
    let do_drain = m.flag(
        "do_drain",
        at(Step::Drain).and((!zero(cur.c_t, LEN_BITS)).or(load_idle.and(quiet))),
    );
    let do_requant = m.flag(
        "do_requant",
        at(Step::Requant).and((!zero(cur.c_t, LEN_BITS)).or(written)),
    );
    let stop_ready = m.flag("stop_ready", at(Step::Stop).and(load_idle).and(queue_empty));
    let do_push_out = m.flag("do_push_out", stop_ready.and(shadow_dirty));
    let do_stop = m.flag("do_stop", stop_ready.and(!shadow_dirty).and(quiet));
    m.define(wire_for(dec.takes.stop_run, Width::bit()).init(do_stop));
    let do_swap = m.flag("do_swap", do_swap_bubble.or(do_wave.and(cur.c_wave_swap)));
    let result_wave = m.flag(
        "result_wave",
        do_wave.and(cur.c_wave_mode.differs(modes.of(Mode::BwdDw))),
    );
    Actions {
        do_swap_bubble,
        do_update,
        do_wave,
        do_drain,
        do_requant,
        do_push_out,
        do_stop,
        do_swap,
        result_wave,
    }
}

/// Where the data engine's entry goes next (`nx_*`), whether it is done,
/// and whether it keeps the load engine from taking a load.
struct Next {
    wave_last: Net,
    c_done: Net,
    nx_step: Net,
    nx_t: Net,
    nx_pass: Net,
    data_blocks: Net,
}

fn data_next(m: &mut Scope, cur: &Current, a: &Actions, st: &States, kinds: &Enum<Kind>) -> Next {
    let step = |s: Step| st.steps.of(s);
    let at = |s: Step| cur.c_valid.and(cur.c_step.equals(step(s)));
    let kind_is = |k: Kind| cur.c.get(Field::Kind).equals(kinds.of(k));
    let (swap, first) = (cur.c.get(Field::Swap), cur.c.get(Field::First));
    let t1 = || plus_one(cur.c_t, LEN_BITS);
    let t0 = || lit(LEN_BITS, 0);
    let wave_last = m.flag("wave_last", cur.c_t.equals(cur.c_n - lit(LEN_BITS, 1)));
    let drain_last = m.flag("drain_last", cur.c_t.equals(st.drain_last));
    let more_passes = m.flag("more_passes", cur.c_seq.and(!cur.c_pass));
    let c_done = m.flag(
        "c_done",
        any_of(vec![
            a.do_swap_bubble.and(kind_is(Kind::Swap)),
            a.do_wave.and(wave_last).and(!more_passes),
            a.do_drain.and(drain_last),
            at(Step::Settle),
            a.do_stop.e(),
        ]),
    );
    let after_bubble = m.wire_of(
        "after_bubble",
        Step::BITS,
        cond(
            kind_is(Kind::Drain).and(!first),
            step(Step::Drain),
            step(Step::UpdateFirst),
        ),
    );
    let after_update = m.wire_of(
        "after_update",
        Step::BITS,
        cond(
            kind_is(Kind::Stream),
            step(Step::Wave).e(),
            cond(kind_is(Kind::Drain), step(Step::Drain), step(Step::Stop)),
        ),
    );
    let nx_step = m.wire_of(
        "nx_step",
        Step::BITS,
        cond(
            a.do_swap_bubble,
            after_bubble,
            cond(
                a.do_update,
                after_update.e(),
                cond(
                    a.do_requant.and(wave_last),
                    step(Step::Settle).e(),
                    cur.c_step.e(),
                ),
            ),
        ),
    );
    let nx_t = m.wire_of(
        "nx_t",
        LEN_BITS,
        cond(
            a.do_swap_bubble.or(a.do_update),
            t0(),
            cond(
                a.do_wave.or(a.do_requant),
                cond(wave_last, t0(), t1()),
                cond(a.do_drain, t1(), cur.c_t),
            ),
        ),
    );
    let nx_pass = m.flag(
        "nx_pass",
        cur.c_pass.or(a.do_wave.and(wave_last).and(cur.c_seq)),
    );
    let nx_wave_swap = m.flag(
        "nx_wave_swap",
        swap.and(!first).and(!nx_pass).and(zero(nx_t, LEN_BITS)),
    );
    let data_blocks = m.flag(
        "data_blocks",
        any_of(vec![
            a.do_update.e(),
            a.do_drain.e(),
            cur.c_valid.and(!c_done).and(any_of(vec![
                nx_step.equals(step(Step::SwapBubble)),
                nx_step.equals(step(Step::UpdateFirst)),
                nx_step.equals(step(Step::Drain)).and(zero(nx_t, LEN_BITS)),
                nx_step.equals(step(Step::Wave)).and(nx_wave_swap),
            ])),
        ]),
    );
    Next {
        wave_last,
        c_done,
        nx_step,
        nx_t,
        nx_pass,
        data_blocks,
    }
}

/// The tiles after this cycle's swap (`sw_*`).
struct AfterSwap {
    sw_sh_state: Net,
    sw_sh_dirty: Net,
    sw_sh_addr: Net,
    sw_sh_m: Net,
    sw_sh_k: Net,
    sw_act_m: Net,
    sw_act_k: Net,
    sh_mk: Net,
    sw_act_mk: Net,
    sw_dirty_rows: Net,
    sw_hull_lo: Net,
    sw_hull_hi: Net,
}

/// The tiles after this cycle's swap (`sw_*`): the shadow registers then
/// hold the tile switched out (junk if the PEs held none), the PEs the
/// loaded one; a dirty tile switched out joins the rows in transit.
fn after_swap(m: &mut Scope, r: &Regs, cur: &Current, a: &Actions, st: &States) -> AfterSwap {
    let evict = cur.c.get(Field::Evict);
    let do_swap = a.do_swap;
    let swap_dirty = m.flag(
        "swap_dirty",
        do_swap.and(r.act_valid).and(r.act_dirty.or(evict)),
    );
    let sw_sh_state = m.wire_of(
        "sw_sh_state",
        Shadow::BITS,
        cond(
            do_swap,
            cond(
                r.act_valid,
                st.shadow.of(Shadow::Evicted),
                st.shadow.of(Shadow::Junk),
            ),
            r.sh_state,
        ),
    );
    let sw_sh_dirty = m.flag(
        "sw_sh_dirty",
        cond(do_swap, r.act_dirty.or(evict), r.sh_dirty),
    );
    let mut pick = |name: &str, bits: u32, swapped: Net, kept: Net| {
        m.wire_of(name, bits, cond(do_swap, swapped, kept))
    };
    let sw_sh_addr = pick("sw_sh_addr", ADDR_BITS, r.act_addr, r.sh_addr);
    let sw_sh_m = pick("sw_sh_m", TILE_BITS, r.act_m, r.sh_m);
    let sw_sh_k = pick("sw_sh_k", TILE_BITS, r.act_k, r.sh_k);
    let sw_act_m = pick("sw_act_m", TILE_BITS, r.sh_m, r.act_m);
    let sw_act_k = pick("sw_act_k", TILE_BITS, r.sh_k, r.act_k);
    let sh_mk = m.wire_of(
        "sh_mk",
        TILE_AREA_BITS,
        zext(TILE_AREA_BITS - TILE_BITS, r.sh_m) * zext(TILE_AREA_BITS - TILE_BITS, r.sh_k),
    );
    let sw_act_mk = m.wire_of("sw_act_mk", TILE_AREA_BITS, cond(do_swap, sh_mk, r.act_mk));
    let sw_dirty_rows = m.wire_of(
        "sw_dirty_rows",
        DIRTY_BITS,
        r.dirty_rows
            + cond(
                swap_dirty,
                zext(DIRTY_BITS - TILE_BITS, r.act_k),
                lit(DIRTY_BITS, 0),
            ),
    );
    // A tile's lines join the hull (zero tiles have none).
    let swap_lines = m.flag("swap_lines", swap_dirty.and(!zero(r.act_k, TILE_BITS)));
    let hull_empty = m.flag("hull_empty", zero(r.dirty_rows, DIRTY_BITS));
    let act_start = m.wire_of(
        "act_start",
        SPAN_BITS,
        zext(SPAN_BITS - ADDR_BITS, r.act_addr),
    );
    let act_end = m.wire_of("act_end", SPAN_BITS, span(r.act_addr, r.act_k));
    let sw_hull_lo = m.wire_of(
        "sw_hull_lo",
        SPAN_BITS,
        cond(
            swap_lines.and(hull_empty.or(act_start.less(r.hull_lo))),
            act_start,
            r.hull_lo,
        ),
    );
    let sw_hull_hi = m.wire_of(
        "sw_hull_hi",
        SPAN_BITS,
        cond(
            swap_lines.and(hull_empty.or(act_end.greater(r.hull_hi))),
            act_end,
            r.hull_hi,
        ),
    );
    AfterSwap {
        sw_sh_state,
        sw_sh_dirty,
        sw_sh_addr,
        sw_sh_m,
        sw_sh_k,
        sw_act_m,
        sw_act_k,
        sh_mk,
        sw_act_mk,
        sw_dirty_rows,
        sw_hull_lo,
        sw_hull_hi,
    }
}

/// The load engine's choices this cycle (`lc_*`) and its slot.
struct Load {
    lc_busy: Net,
    lc_row: Net,
    lc_tile: Net,
    lc_zero: Net,
    lc_addr: Net,
    lc_m: Net,
    lc_k: Net,
    slot: Slot,
}

/// What every part of the engines reads: the decoder's queue, the
/// engines' registers and the codes of states and kinds.
struct Ctx<'a> {
    dec: &'a Decoder,
    r: &'a Regs,
    st: &'a States,
    kinds: &'a Enum<Kind>,
}

/// The load engine: the load it takes (`lh_*`, the head left after the
/// data engine's take), the write-back hazard, and this cycle's slot.
fn load_engine(m: &mut Scope, ctx: &Ctx, a: &Actions, nx: &Next, sw: &AfterSwap) -> Load {
    let (dec, r, st, kinds) = (ctx.dec, ctx.r, ctx.st, ctx.kinds);
    let q = |n: u64| lit(2, n);
    let phase = |p: Phase| st.phases.of(p);
    let data_take = dec.takes.data_take;
    let load_take = dec.takes.load_take;
    // A load entry has only a kind and a word.
    let lh_e = m.partly_used(
        wire("lh_e", Width::of(entry::BITS as i64)).init(cond(data_take, dec.q1, dec.q0)),
    );
    let lh = entry::unpack(m, "lh", lh_e, &[Field::Kind, Field::W0], true);
    let (lh_kind, lh_w0) = (lh.get(Field::Kind), lh.get(Field::W0));
    let lh_avail = m.flag(
        "lh_avail",
        dec.q_len
            .equals(q(2))
            .or(dec.q_len.equals(q(1)).and(!data_take)),
    );
    let lh_zero = m.flag("lh_zero", lh_kind.equals(kinds.of(Kind::ZeroLoad)));
    m.define(wire_for(load_take, Width::bit()).init(all_of(vec![
        dec.ctl_running.e(),
        !a.do_push_out,
        !r.l_busy,
        !nx.data_blocks,
        lh_avail.e(),
        lh_kind.equals(kinds.of(Kind::Load)).or(lh_zero),
    ])));
    let lh_addr = m.wire_of("lh_addr", ADDR_BITS, slice(lh_w0, field::ADDR_A));
    let lh_m = m.wire_of("lh_m", TILE_BITS, slice(lh_w0, field::TILE_M));
    let lh_k = m.wire_of("lh_k", TILE_BITS, slice(lh_w0, field::TILE_K));
    let hazard = m.flag(
        "hazard",
        all_of(vec![
            !lh_zero,
            !zero(sw.sw_dirty_rows, DIRTY_BITS),
            zext(SPAN_BITS - ADDR_BITS, lh_addr).less(sw.sw_hull_hi),
            sw.sw_hull_lo.less(span(lh_addr, lh_k)),
        ]),
    );
    let take_phase = m.wire_of(
        "take_phase",
        Phase::BITS,
        cond(
            hazard,
            cond(
                sw.sw_sh_state
                    .equals(st.shadow.of(Shadow::Evicted))
                    .and(sw.sw_sh_dirty),
                phase(Phase::PushOut),
                phase(Phase::WaitClean),
            ),
            phase(Phase::Slots),
        ),
    );
    let lc_new = m.flag("lc_new", load_take.or(a.do_push_out));
    let lc_busy = m.flag("lc_busy", r.l_busy.or(lc_new));
    let lc_phase = m.wire_of(
        "lc_phase",
        Phase::BITS,
        cond(
            load_take,
            take_phase.e(),
            cond(a.do_push_out, phase(Phase::PushOut), r.l_phase),
        ),
    );
    let lc_row = m.wire_of(
        "lc_row",
        TILE_BITS,
        cond(lc_new, lit(TILE_BITS, 0), r.l_row),
    );
    let lc_tile = m.flag("lc_tile", load_take.or((!a.do_push_out).and(r.l_has_tile)));
    let lc_zero = m.flag(
        "lc_zero",
        cond(load_take, lh_zero.e(), a.do_push_out.or(r.l_zero)),
    );
    let mut from_take = |name: &str, bits: u32, taken: Net, held: Net| {
        m.wire_of(name, bits, cond(load_take, taken, held))
    };
    let lc_addr = from_take("lc_addr", ADDR_BITS, lh_addr, r.l_addr);
    let lc_m = from_take("lc_m", TILE_BITS, lh_m, r.l_m);
    let lc_k = from_take("lc_k", TILE_BITS, lh_k, r.l_k);
    let cur = LoadCurrent {
        lc_busy,
        lc_phase,
        lc_row,
        lc_tile,
        lc_zero,
        lc_k,
    };
    let slot = slot(m, r, a, sw, st, &cur);
    Load {
        lc_busy,
        lc_row,
        lc_tile,
        lc_zero,
        lc_addr,
        lc_m,
        lc_k,
        slot,
    }
}

struct LoadCurrent {
    lc_busy: Net,
    lc_phase: Net,
    lc_row: Net,
    lc_tile: Net,
    lc_zero: Net,
    lc_k: Net,
}

/// This cycle's exchange slot, the row it sends out, and where the load
/// engine goes next.
struct Slot {
    slot_now: Net,
    slot_read: Net,
    row0: Net,
    out_dirty: Net,
    out_addr: Net,
    out_m: Net,
    evict_row: Net,
    load_finish: Net,
    l_phase_next: Net,
    l_row_next: Net,
    stream_cycle: Net,
}

fn slot(
    m: &mut Scope,
    r: &Regs,
    a: &Actions,
    sw: &AfterSwap,
    st: &States,
    lc: &LoadCurrent,
) -> Slot {
    let phase = |p: Phase| st.phases.of(p);
    let lc_wait = m.flag(
        "lc_wait",
        lc.lc_phase
            .equals(phase(Phase::WaitClean))
            .and(!zero(sw.sw_dirty_rows, DIRTY_BITS)),
    );
    let slot_now = m.flag("slot_now", lc.lc_busy.and(!lc_wait));
    let lc_slots = m.flag("lc_slots", lc.lc_phase.differs(phase(Phase::PushOut)));
    let slot_read = m.flag(
        "slot_read",
        all_of(vec![
            slot_now.e(),
            lc_slots.e(),
            !lc.lc_zero,
            lc.lc_row.less(lc.lc_k),
        ]),
    );
    let slot_last = m.flag("slot_last", lc.lc_row.equals(st.row_last));
    // Row 0 takes the tile in the shadow registers out with it.
    let row0 = m.flag("row0", slot_now.and(zero(lc.lc_row, TILE_BITS)));
    let out_dirty = m.flag(
        "out_dirty",
        cond(
            row0,
            sw.sw_sh_state
                .equals(st.shadow.of(Shadow::Evicted))
                .and(sw.sw_sh_dirty),
            r.o_dirty.e(),
        ),
    );
    let mut from_row0 = |name: &str, bits: u32, shadow: Net, held: Net| {
        m.wire_of(name, bits, cond(row0, shadow, held))
    };
    let out_addr = from_row0("out_addr", ADDR_BITS, sw.sw_sh_addr, r.o_addr);
    let out_m = from_row0("out_m", TILE_BITS, sw.sw_sh_m, r.o_m);
    let out_k = from_row0("out_k", TILE_BITS, sw.sw_sh_k, r.o_k);
    let evict_row = m.flag(
        "evict_row",
        all_of(vec![slot_now.e(), out_dirty.e(), lc.lc_row.less(out_k)]),
    );
    let load_finish = m.flag(
        "load_finish",
        all_of(vec![slot_now.e(), slot_last.e(), lc_slots.or(!lc.lc_tile)]),
    );
    let l_phase_next = m.wire_of(
        "l_phase_next",
        Phase::BITS,
        cond(
            slot_now,
            cond(
                lc_slots,
                phase(Phase::Slots),
                cond(slot_last, phase(Phase::WaitClean), phase(Phase::PushOut)),
            ),
            lc.lc_phase,
        ),
    );
    let l_row_next = m.wire_of(
        "l_row_next",
        TILE_BITS,
        cond(
            slot_now.and(!slot_last),
            plus_one(lc.lc_row, TILE_BITS),
            cond(slot_now, lit(TILE_BITS, 0), lc.lc_row),
        ),
    );
    let stream_cycle = m.flag(
        "stream_cycle",
        any_of(vec![a.do_wave.e(), a.do_swap.e(), slot_now.e()]),
    );
    Slot {
        slot_now,
        slot_read,
        row0,
        out_dirty,
        out_addr,
        out_m,
        evict_row,
        load_finish,
        l_phase_next,
        l_row_next,
        stream_cycle,
    }
}

/// What the engines decided this cycle.
struct Cycle<'a> {
    cur: &'a Current,
    a: &'a Actions,
    nx: &'a Next,
    sw: &'a AfterSwap,
    ld: &'a Load,
}

/// The registers' next values; `wd_valid`: a dirty weight row lands.
fn clocked(m: &mut Scope, rst: Net, ctx: &Ctx, c: &Cycle, wd_valid: Net, result_latency: Const) {
    let (r, st) = (ctx.r, ctx.st);
    let (cur, a, nx, sw, ld) = (c.cur, c.a, c.nx, c.sw, c.ld);
    let (data_take, q0) = (ctx.dec.takes.data_take, ctx.dec.q0);
    let sl = &ld.slot;
    let count_down = |net: Net| {
        cond(
            zero(net, WAIT_BITS),
            lit(WAIT_BITS, 0),
            net - lit(WAIT_BITS, 1),
        )
    };
    let landed = sw.sw_dirty_rows - zext(DIRTY_BITS - 1, wd_valid);
    let data = vec![
        set(r.d_busy, cur.c_valid.and(!nx.c_done)),
        when(data_take, vec![set(r.d_e, q0)]),
        set(r.d_step, nx.nx_step),
        set(r.d_t, nx.nx_t),
        set(r.d_pass, nx.nx_pass),
    ];
    let load = vec![
        set(r.l_busy, ld.lc_busy.and(!sl.load_finish)),
        set(r.l_phase, sl.l_phase_next),
        set(r.l_row, sl.l_row_next),
        set(r.l_has_tile, ld.lc_tile),
        set(r.l_zero, ld.lc_zero),
        set(r.l_addr, ld.lc_addr),
        set(r.l_m, ld.lc_m),
        set(r.l_k, ld.lc_k),
        when(
            sl.row0,
            vec![
                set(r.o_dirty, sl.out_dirty),
                set(r.o_addr, sw.sw_sh_addr),
                set(r.o_m, sw.sw_sh_m),
                set(r.o_k, sw.sw_sh_k),
            ],
        ),
    ];
    // The shadow registers: a finished load's tile, else junk once row 0
    // has taken their tile out, else what the swap left.
    let shadow = if_else(
        sl.load_finish,
        vec![
            set(
                r.sh_state,
                cond(
                    ld.lc_tile,
                    st.shadow.of(Shadow::Loaded),
                    st.shadow.of(Shadow::Junk),
                ),
            ),
            set(r.sh_dirty, lit(1, 0)),
            set(r.sh_addr, ld.lc_addr),
            set(r.sh_m, ld.lc_m),
            set(r.sh_k, ld.lc_k),
        ],
        vec![if_else(
            sl.row0,
            vec![
                set(r.sh_state, st.shadow.of(Shadow::Junk)),
                set(r.sh_dirty, lit(1, 0)),
            ],
            vec![
                set(r.sh_state, sw.sw_sh_state),
                set(r.sh_dirty, sw.sw_sh_dirty),
                set(r.sh_addr, sw.sw_sh_addr),
                set(r.sh_m, sw.sw_sh_m),
                set(r.sh_k, sw.sw_sh_k),
            ],
        )],
    );
    let active = vec![
        when(
            a.do_swap,
            vec![
                set(r.act_valid, lit(1, 1)),
                set(r.act_addr, r.sh_addr),
                set(r.act_m, r.sh_m),
                set(r.act_k, r.sh_k),
                set(r.act_mk, sw.sh_mk),
            ],
        ),
        set(r.act_dirty, (!a.do_swap).and(r.act_dirty.or(a.do_update))),
    ];
    let transit = vec![
        set(r.dirty_rows, landed.clone()),
        if_else(
            landed.equals(lit(DIRTY_BITS, 0)),
            vec![
                set(r.hull_lo, lit(SPAN_BITS, 0)),
                set(r.hull_hi, lit(SPAN_BITS, 0)),
            ],
            vec![set(r.hull_lo, sw.sw_hull_lo), set(r.hull_hi, sw.sw_hull_hi)],
        ),
        set(
            r.wave_wait,
            cond(sl.stream_cycle, result_latency, count_down(r.wave_wait)),
        ),
        set(
            r.acc_wait,
            cond(
                a.result_wave,
                result_latency + lit(WAIT_BITS, 1),
                cond(a.do_drain, lit(WAIT_BITS, 1), count_down(r.acc_wait)),
            ),
        ),
    ];
    let body = [data, load, vec![shadow], active, transit].concat();
    m.clocked(vec![if_else(rst, r.reset.clone(), body)]);
}

pub(super) fn build(
    m: &mut Scope,
    io: &ControllerIo,
    dec: &Decoder,
    kinds: &Enum<Kind>,
    st: &States,
    modes: &Modes,
    cmd: &CommandConsts,
) -> Engines {
    let wd_valid = Net::named("wd_valid");
    m.comment("Issue engines: the data engine, the load engine and the tiles they move.");
    let r = state_registers(m);
    let cur = current_entry(m, dec, &r, kinds, st, modes, cmd);
    let a = data_actions(m, dec, &r, &cur, st, modes);
    let nx = data_next(m, &cur, &a, st, kinds);
    let sw = after_swap(m, &r, &cur, &a, st);
    // The window the pass carries (its entry's, as at its decode); the
    // generator follows `c_t`: position 0 where a pass begins, one step
    // per wave.
    let c_win = m.flag(
        "c_windowed",
        cur.c
            .get(Field::W0)
            .at(field::WIN.lo)
            .and(window::present()),
    );
    let cwin = Window::unpack(m, "cw", cur.c.get(Field::Win));
    let gen = window::generator(
        m,
        "gd",
        io.rst,
        &cwin,
        zero(cur.c_t, LEN_BITS),
        a.do_wave.and(!nx.wave_last),
    );
    let ctx = Ctx {
        dec,
        r: &r,
        st,
        kinds,
    };
    let ld = load_engine(m, &ctx, &a, &nx, &sw);
    let cycle = Cycle {
        cur: &cur,
        a: &a,
        nx: &nx,
        sw: &sw,
        ld: &ld,
    };
    clocked(m, io.rst, &ctx, &cycle, wd_valid, cmd.result_latency.1);
    let sl = &ld.slot;
    Engines {
        c_act: cur.c_act,
        c_func: cur.c_func,
        c_reads_mask: cur.c_reads_mask,
        c_acc: cur.c_acc,
        c_addr_a: cur.c_addr_a,
        c_addr_b: cur.c_addr_b,
        c_x_addr: cur.c.get(Field::XAddr),
        c_fwd: cur.c_fwd,
        c_t: cur.c_t,
        c_wave_mode: cur.c_wave_mode,
        c_win,
        g_line: gen.line,
        g_inside: gen.inside,
        c: cur.c,
        do_swap: a.do_swap,
        do_update: a.do_update,
        do_wave: a.do_wave,
        do_drain: a.do_drain,
        do_requant: a.do_requant,
        result_wave: a.result_wave,
        stream_cycle: sl.stream_cycle,
        sw_act_m: sw.sw_act_m,
        sw_act_k: sw.sw_act_k,
        sw_act_mk: sw.sw_act_mk,
        slot_now: sl.slot_now,
        slot_read: sl.slot_read,
        evict_row: sl.evict_row,
        lc_row: ld.lc_row,
        lc_m: ld.lc_m,
        lc_addr: ld.lc_addr,
        out_m: sl.out_m,
        out_addr: sl.out_addr,
        wd_valid,
    }
}
