//! The dense controller's decoder and command queue (`docs/COMMANDS.md`,
//! Dense controller, Decoder): one command word per cycle, checked as the
//! `none` controller checks it (the same `fields` and `checks`, against
//! the *logical* resident tile), turned into queue entries; FLUSH_W and a
//! stop queue their later entries from a two-entry backlog, one per cycle.

use super::super::control::{checks, decode_outcome, fields, is};
use super::super::sizes::*;
use super::super::{flag_wire, registers, wire_of};
use super::entry::{self, pack, Kind};
use super::partly_used;
use crate::ir::*;
use sysgrad_config::LR_SHIFT_BITS;

/// Entries the queue holds (`sysgrad_accel::dense::QUEUE_DEPTH`).
const QUEUE_BITS: u32 = 2;

fn state_registers() -> (Vec<Item>, Vec<Stmt>) {
    let bits = |b: u32| int(b as i64);
    let e = int(entry::BITS as i64);
    registers(&[
        ("ctl_running", int(1)),
        ("pc", bits(PC_BITS)),
        ("dec_second", int(1)),
        ("dec_done", int(1)),
        ("cmd_q", bits(WORD)),
        ("backlog_n", bits(QUEUE_BITS)),
        ("backlog0", e.clone()),
        ("backlog1", e.clone()),
        ("pend_valid", int(1)),
        ("pend_lr", bits(LR_SHIFT_BITS)),
        ("resident_waits", int(1)),
        ("res_valid", int(1)),
        ("res_dirty", int(1)),
        ("res_addr", bits(ADDR_BITS)),
        ("res_m", bits(TILE_BITS)),
        ("res_k", bits(TILE_BITS)),
        ("stop_fault_q", int(1)),
        ("stop_code_q", bits(ERROR_BITS)),
        ("stop_pc_q", bits(PC_BITS)),
        ("halted", int(1)),
        ("faulted", int(1)),
        ("err_code", bits(ERROR_BITS)),
        ("stop_pc", bits(PC_BITS)),
        ("q_len", bits(QUEUE_BITS)),
        ("q0", e.clone()),
        ("q1", e),
    ])
}

/// When the decoder works: it may put one entry into the queue in a
/// cycle that starts with room in it, from the backlog first.
fn decode_cycles() -> Vec<Item> {
    let q = |n: u64| lit(QUEUE_BITS, n);
    vec![
        flag_wire("queue_room", id("q_len").differs(q(2))),
        flag_wire("dec_slot", id("ctl_running").and("queue_room")),
        flag_wire(
            "backlog_push",
            id("dec_slot").and(id("backlog_n").differs(q(0))),
        ),
        flag_wire(
            "dec_cycle",
            id("dec_slot")
                .and(id("backlog_n").equals(q(0)))
                .and(!id("dec_done")),
        ),
        flag_wire("in_dec", id("dec_cycle").and(!id("dec_second"))),
        flag_wire("in_dec2", id("dec_cycle").and("dec_second")),
        Item::Comment("Word 1 is only needed in the cycle it is fetched.".into()),
        wire_of("cmd2_q", WORD, "c_rdata"),
    ]
}

/// Where the next word comes from, read one cycle ahead (the command
/// memory's reads are registered).
fn fetch() -> Vec<Item> {
    let pc_lit = |k: u64| lit(PC_BITS, k);
    let mut v = vec![
        flag_wire("stop_now", id("dec_fault").or(id("dec_go").and(is("halt")))),
        flag_wire("cmd_next", id("dec_go").and(!is("halt"))),
        wire_of(
            "pc_next",
            PC_BITS,
            cond(
                "cmd_next",
                id("pc") + cond(is("backward"), pc_lit(2), pc_lit(1)),
                "pc",
            ),
        ),
        flag_wire(
            "second_next",
            cond("dec_final", lit(1, 0), id("dec_second").or("in_dec")),
        ),
    ];
    // The command memory takes the word index's low bits.
    v.extend(partly_used(vec![wire_of(
        "fetch_next",
        PC_BITS,
        id("pc_next") + cat([zeros(PC_BITS as i64 - 1), id("second_next")]),
    )]));
    v.extend([
        flag_wire("c_ctl_re", id("ctl_running").or("start_req")),
        wire_of(
            "c_ctl_raddr",
            "C_AB",
            cond(
                "start_req",
                zeros("C_AB"),
                id("fetch_next").bits(id("C_AB") - 1, 0),
            ),
        ),
        flag_wire("c_ctl_we", lit(1, 0)),
        wire_of("c_ctl_waddr", "C_AB", zeros("C_AB")),
        wire_of("c_ctl_wdata", 64, zeros(64)),
    ]);
    v
}

/// The entries a command queues. The marks of a data entry: a swap if the
/// resident tile waits in the shadow registers (carrying the pending
/// update, which then evicts with the tile it replaces), else the pending
/// update first.
fn entries() -> Vec<Item> {
    let lr = |e: &str| id(e).bits(LR_SHIFT_BITS as i64 - 1, 0);
    let marks = || {
        vec![
            ("swap", id("mk_swap")),
            ("evict", id("mk_evict")),
            ("evict_lr", id("pend_lr")),
            ("first", id("mk_first")),
            ("first_lr", id("pend_lr")),
        ]
    };
    let with_word = |mut m: Vec<(&'static str, Expr)>| {
        m.push(("w0", id("w0")));
        m.push(("x_addr", id("f_x_addr")));
        m
    };
    let swap_out = || {
        pack(
            Kind::Swap,
            &[
                ("swap", lit(1, 1)),
                ("evict", id("pend_valid")),
                ("evict_lr", id("pend_lr")),
            ],
        )
    };
    let zero_load = || pack(Kind::ZeroLoad, &[]);
    let stream = || pack(Kind::Stream, &with_word(marks()));
    let drain = || pack(Kind::Drain, &with_word(marks()));
    let load = || pack(Kind::Load, &[("w0", id("w0"))]);
    let requant = || pack(Kind::Requant, &[("w0", id("w0"))]);
    let stop = || {
        pack(
            Kind::Stop,
            &[("first", id("pend_valid")), ("first_lr", id("pend_lr"))],
        )
    };
    let waiting = || id("resident_waits");
    let by_command = cond(
        "stop_now",
        cond(waiting(), swap_out(), stop()),
        cond(
            is("load_w"),
            cond(waiting(), swap_out(), load()),
            cond(
                is("flush_w"),
                zero_load(),
                cond(
                    is("forward").or(is("backward")),
                    stream(),
                    cond(
                        is("drain"),
                        drain(),
                        cond(is("requant"), requant(), swap_out()),
                    ),
                ),
            ),
        ),
    );
    vec![
        Item::Comment("Queue entries of the decoded command.".into()),
        flag_wire("mk_swap", waiting()),
        flag_wire("mk_evict", waiting().and("pend_valid")),
        flag_wire("mk_first", (!id("resident_waits")).and("pend_valid")),
        wire_of("lr_field", LR_SHIFT_BITS, lr("f_lr")),
        flag_wire(
            "dec_push",
            id("dec_cycle").and(id("stop_now").or(id("dec_go").and(any_of(vec![
                is("load_w"),
                is("flush_w"),
                is("forward"),
                is("backward"),
                is("drain"),
                is("requant"),
                is("update").and(waiting()),
            ])))),
        ),
        flag_wire("push_valid", id("backlog_push").or("dec_push")),
        wire_of(
            "push_entry",
            entry::BITS as i64,
            cond("backlog_push", "backlog0", by_command),
        ),
        // What goes into the backlog: FLUSH_W's swap and second zero load;
        // a stop's zero load and stop entry after the swap of a waiting tile;
        // LOAD_W's load after the swap of a waiting tile.
        wire_of("flush_swap", entry::BITS as i64, swap_out()),
        wire_of("load_entry", entry::BITS as i64, load()),
        wire_of("zero_entry", entry::BITS as i64, zero_load()),
        wire_of("last_stop", entry::BITS as i64, pack(Kind::Stop, &[])),
    ]
}

/// The queue after this cycle's takes (`data_take`, `load_take`, from the
/// head) and push.
fn queue_update() -> Vec<Stmt> {
    let q = |n: u64| lit(QUEUE_BITS, n);
    vec![
        if_else(
            id("queue_left").equals(q(0)),
            vec![Stmt::If {
                cond: id("push_valid"),
                then: vec![set("q0", "push_entry")],
                els: vec![],
            }],
            vec![Stmt::If {
                cond: id("queue_pops").differs(q(0)),
                then: vec![set("q0", "q1")],
                els: vec![],
            }],
        ),
        Stmt::If {
            cond: id("queue_left").equals(q(1)).and("push_valid"),
            then: vec![set("q1", "push_entry")],
            els: vec![],
        },
        set(
            "q_len",
            id("queue_left") + cat([zeros(QUEUE_BITS as i64 - 1), id("push_valid")]),
        ),
    ]
}

fn queue_nets() -> Vec<Item> {
    let widen = |e: &str| cat([zeros(QUEUE_BITS as i64 - 1), id(e)]);
    vec![
        wire_of(
            "queue_pops",
            QUEUE_BITS,
            widen("data_take") + widen("load_take"),
        ),
        wire_of("queue_left", QUEUE_BITS, id("q_len") - "queue_pops"),
    ]
}

/// The logical resident tile, the pending update and the backlog after a
/// decode cycle.
fn decode_step() -> Vec<Stmt> {
    let q = |n: u64| lit(QUEUE_BITS, n);
    let when = |c: Expr, then: Vec<Stmt>| Stmt::If {
        cond: c,
        then,
        els: vec![],
    };
    let go = |c: &str| id("dec_go").and(is(c));
    let taken = vec![
        set("pend_valid", lit(1, 0)),
        set("resident_waits", lit(1, 0)),
    ];
    let stop = vec![
        set("dec_done", lit(1, 1)),
        set("stop_fault_q", "dec_fault"),
        set("stop_code_q", "dec_err"),
        set("stop_pc_q", "pc"),
        set("pend_valid", lit(1, 0)),
        set("resident_waits", lit(1, 0)),
        when(
            id("resident_waits"),
            vec![
                set("backlog0", "zero_entry"),
                set("backlog1", "last_stop"),
                set("backlog_n", q(2)),
            ],
        ),
    ];
    // A tile loaded but never used is swapped in first (its swap entry
    // takes the pending update); the load follows from the backlog.
    let load = vec![
        when(
            id("resident_waits"),
            vec![
                set("backlog0", "load_entry"),
                set("backlog_n", q(1)),
                set("pend_valid", lit(1, 0)),
            ],
        ),
        set("res_valid", lit(1, 1)),
        set("res_dirty", lit(1, 0)),
        set("res_addr", "f_addr_a"),
        set("res_m", "f_m"),
        set("res_k", "f_k"),
        set("resident_waits", lit(1, 1)),
    ];
    let flush = vec![
        set("res_valid", lit(1, 0)),
        set("res_dirty", lit(1, 0)),
        set("backlog0", "flush_swap"),
        set("backlog1", "zero_entry"),
        set("backlog_n", q(2)),
        set("pend_valid", lit(1, 0)),
        set("resident_waits", lit(1, 0)),
    ];
    let update = vec![
        set("res_dirty", lit(1, 1)),
        set("resident_waits", lit(1, 0)),
        // A tile swapped in now starts clean: the update is its own.
        when(
            (!id("pend_valid")).or("resident_waits"),
            vec![set("pend_valid", lit(1, 1)), set("pend_lr", "lr_field")],
        ),
    ];
    let uses_tile = any_of(vec![go("forward"), go("backward"), go("drain")]);
    vec![
        when(id("in_dec"), vec![set("cmd_q", "c_rdata")]),
        set("pc", "pc_next"),
        set("dec_second", "second_next"),
        when(id("stop_now"), stop),
        when(go("load_w"), load),
        when(go("flush_w"), flush),
        when(go("update"), update),
        when(uses_tile, taken),
    ]
}

/// What the stop entry does when it completes (`stop_run`).
fn stop_step() -> Vec<Stmt> {
    vec![
        set("ctl_running", lit(1, 0)),
        set("halted", !id("stop_fault_q")),
        set("faulted", "stop_fault_q"),
        set(
            "err_code",
            cond("stop_fault_q", "stop_code_q", lit(ERROR_BITS, 0)),
        ),
        set("stop_pc", "stop_pc_q"),
    ]
}

fn start_step() -> Vec<Stmt> {
    vec![
        set("ctl_running", lit(1, 1)),
        set("pc", lit(PC_BITS, 0)),
        set("dec_second", lit(1, 0)),
        set("dec_done", lit(1, 0)),
        set("backlog_n", lit(QUEUE_BITS, 0)),
        set("halted", lit(1, 0)),
        set("faulted", lit(1, 0)),
        set("err_code", lit(ERROR_BITS, 0)),
    ]
}

fn clocked() -> Item {
    let q = |n: u64| lit(QUEUE_BITS, n);
    let backlog = Stmt::If {
        cond: id("backlog_push"),
        then: vec![
            set("backlog0", "backlog1"),
            set("backlog_n", id("backlog_n") - q(1)),
        ],
        els: vec![],
    };
    let mut running = vec![backlog];
    running.push(Stmt::If {
        cond: id("dec_cycle"),
        then: decode_step(),
        els: vec![],
    });
    running.extend(queue_update());
    running.push(Stmt::If {
        cond: id("stop_run"),
        then: stop_step(),
        els: vec![],
    });
    let live = if_else(
        "ctl_running",
        running,
        vec![Stmt::If {
            cond: id("start_req"),
            then: start_step(),
            els: vec![],
        }],
    );
    Item::Clocked(vec![if_else("rst", state_registers().1, vec![live])])
}

pub(super) fn items() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Decoder: one word per cycle into the two-entry command queue.".into(),
    )];
    v.extend(state_registers().0);
    v.extend(decode_cycles());
    v.extend(fields());
    v.extend(checks());
    v.extend(decode_outcome());
    v.extend(fetch());
    v.extend(entries());
    v.extend(queue_nets());
    v.extend(entry::unpack("q0", "q0", &["kind"]));
    v.push(clocked());
    v
}
