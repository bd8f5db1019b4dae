//! The dense controller's decoder and command queue (`docs/COMMANDS.md`,
//! Dense controller, Decoder): one command word per cycle, checked as the
//! `none` controller checks it (the same fields and checks, against the
//! *logical* resident tile), turned into queue entries; FLUSH_W and a
//! stop queue their later entries from a two-entry backlog, one per cycle.

use super::entry::{self, pack, Field, Kind};
use crate::accel::commands::*;
use crate::accel::io::ControllerIo;
use crate::accel::sizes::*;
use crate::accel::window::{self, Window};
use crate::ir::*;
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::command::opcode;
use sysgrad_isa::host::DmaTarget;

/// Entries the queue holds (`sysgrad_accel::dense::QUEUE_DEPTH`).
pub(super) const QUEUE_BITS: u32 = 2;

/// The engines' takes from the queue and their stop, which the decoder
/// reads before the engines are built.
pub(super) struct Takes {
    pub data_take: Net,
    pub load_take: Net,
    pub stop_run: Net,
}

impl Takes {
    fn named() -> Takes {
        Takes {
            data_take: Net::named("data_take"),
            load_take: Net::named("load_take"),
            stop_run: Net::named("stop_run"),
        }
    }
}

/// The decoder, as the engines, outputs and counters read it.
pub(super) struct Decoder {
    pub ctl_running: Net,
    pub err_code: Net,
    pub stop_pc: Net,
    pub faulted: Net,
    pub halted: Net,
    pub q_len: Net,
    pub q0: Net,
    pub q1: Net,
    pub q0_kind: Net,
    pub in_dec: Net,
    pub in_dec2: Net,
    pub dec_go: Net,
    pub is_sync: Net,
    /// Defined by the engines.
    pub takes: Takes,
}

struct Regs {
    ctl_running: Net,
    pc: Net,
    dec_second: Net,
    dec_done: Net,
    cmd_q: Net,
    backlog_n: Net,
    backlog0: Net,
    backlog1: Net,
    pend_valid: Net,
    pend_lr: Net,
    resident_waits: Net,
    res_valid: Net,
    res_dirty: Net,
    res_addr: Net,
    res_m: Net,
    res_k: Net,
    stop_fault_q: Net,
    stop_code_q: Net,
    stop_pc_q: Net,
    halted: Net,
    faulted: Net,
    err_code: Net,
    stop_pc: Net,
    q_len: Net,
    q0: Net,
    q1: Net,
    reset: Vec<Stmt>,
}

fn state_registers(m: &mut Scope) -> Regs {
    let bits = |b: u32| int(b as i64);
    let e = || int(entry::BITS as i64);
    let (
        [ctl_running, pc, dec_second, dec_done, cmd_q, backlog_n, backlog0, backlog1, pend_valid, pend_lr, resident_waits, res_valid, res_dirty, res_addr, res_m, res_k, stop_fault_q, stop_code_q, stop_pc_q, halted, faulted, err_code, stop_pc, q_len, q0, q1],
        reset,
    ) = m.registers([
        ("ctl_running", int(1)),
        ("pc", bits(PC_BITS)),
        ("dec_second", int(1)),
        ("dec_done", int(1)),
        ("cmd_q", bits(WORD)),
        ("backlog_n", bits(QUEUE_BITS)),
        ("backlog0", e()),
        ("backlog1", e()),
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
        ("q0", e()),
        ("q1", e()),
    ]);
    Regs {
        ctl_running,
        pc,
        dec_second,
        dec_done,
        cmd_q,
        backlog_n,
        backlog0,
        backlog1,
        pend_valid,
        pend_lr,
        resident_waits,
        res_valid,
        res_dirty,
        res_addr,
        res_m,
        res_k,
        stop_fault_q,
        stop_code_q,
        stop_pc_q,
        halted,
        faulted,
        err_code,
        stop_pc,
        q_len,
        q0,
        q1,
        reset,
    }
}

/// When the decoder works: it may put one entry into the queue in a
/// cycle that starts with room in it, from the backlog first.
struct Cycles {
    backlog_push: Net,
    dec_cycle: Net,
    in_dec: Net,
    in_dec2: Net,
    cmd2_q: Net,
}

fn decode_cycles(m: &mut Scope, r: &Regs, c_rdata: Net) -> Cycles {
    let q = |n: u64| lit(QUEUE_BITS, n);
    let queue_room = m.flag("queue_room", r.q_len.differs(q(2)));
    let dec_slot = m.flag("dec_slot", r.ctl_running.and(queue_room));
    let backlog_push = m.flag("backlog_push", dec_slot.and(r.backlog_n.differs(q(0))));
    let dec_cycle = m.flag(
        "dec_cycle",
        dec_slot.and(r.backlog_n.equals(q(0))).and(!r.dec_done),
    );
    let in_dec = m.flag("in_dec", dec_cycle.and(!r.dec_second));
    let in_dec2 = m.flag("in_dec2", dec_cycle.and(r.dec_second));
    m.comment("Word 1 is only needed in the cycle it is fetched.");
    let cmd2_q = m.wire_of("cmd2_q", WORD, c_rdata);
    Cycles {
        backlog_push,
        dec_cycle,
        in_dec,
        in_dec2,
        cmd2_q,
    }
}

/// Where the next word comes from, read one cycle ahead (the command
/// memory's reads are registered).
struct Fetch {
    stop_now: Net,
    pc_next: Net,
    second_next: Net,
}

fn fetch(
    m: &mut Scope,
    io: &ControllerIo,
    r: &Regs,
    f: &Fields,
    cy: &Cycles,
    out: &Outcome,
) -> Fetch {
    let is = |op: u8| f.is(op);
    let stop_now = m.flag(
        "stop_now",
        out.dec_fault.or(out.dec_go.and(is(opcode::HALT))),
    );
    let cmd_next = m.flag("cmd_next", out.dec_go.and(!is(opcode::HALT)));
    let pc_next = m.wire_of("pc_next", PC_BITS, cond(cmd_next, r.pc + f.words(), r.pc));
    let second_next = m.flag(
        "second_next",
        cond(out.dec_final, lit(1, 0), r.dec_second.or(cy.in_dec)),
    );
    // The command memory takes the word index's low bits.
    let fetch_next = m.partly_used(
        wire("fetch_next", Width::of(PC_BITS as i64))
            .init(pc_next + cat([zeros(PC_BITS as i64 - 1), second_next.e()])),
    );
    let c = io.ctl.of(DmaTarget::Commands);
    let c_ab = io.bufs.of(DmaTarget::Commands).ab;
    let start_req = io.requests.start_req;
    m.define(wire_for(c.re, Width::bit()).init(r.ctl_running.or(start_req)));
    m.define(wire_for(c.raddr, Width::of(c_ab)).init(cond(
        start_req,
        io.requests.prog_start.bits(c_ab - 1, 0),
        fetch_next.bits(c_ab - 1, 0),
    )));
    m.define(wire_for(c.we, Width::bit()).init(lit(1, 0)));
    m.define(wire_for(c.waddr, Width::of(c_ab)).init(zeros(c_ab)));
    m.define(wire_for(c.wdata, Width::of(64)).init(zeros(64)));
    Fetch {
        stop_now,
        pc_next,
        second_next,
    }
}

/// What goes into the queue, and the backlog's entries.
struct Entries {
    lr_field: Net,
    push_valid: Net,
    push_entry: Net,
    flush_swap: Net,
    load_entry: Net,
    zero_entry: Net,
    last_stop: Net,
}

/// What `entries` reads of the decoder.
#[derive(Clone, Copy)]
struct EntryIn<'a> {
    r: &'a Regs,
    f: &'a Fields,
    cy: &'a Cycles,
    out: &'a Outcome,
    stop_now: Net,
    win: &'a Window,
}

/// The entries a command queues. The marks of a data entry: a swap if the
/// resident tile waits in the shadow registers (carrying the pending
/// update, which then evicts with the tile it replaces), else the pending
/// update first.
fn entries(m: &mut Scope, kinds: &Enum<Kind>, inp: &EntryIn) -> Entries {
    let EntryIn {
        r,
        f,
        cy,
        out,
        stop_now,
        win,
    } = *inp;
    let is = |op: u8| f.is(op);
    let waiting = r.resident_waits;
    m.comment("Queue entries of the decoded command.");
    let mk_swap = m.flag("mk_swap", waiting);
    let mk_evict = m.flag("mk_evict", waiting.and(r.pend_valid));
    let mk_first = m.flag("mk_first", (!r.resident_waits).and(r.pend_valid));
    let marks = || {
        vec![
            (Field::Swap, mk_swap.e()),
            (Field::Evict, mk_evict.e()),
            (Field::EvictLr, r.pend_lr.e()),
            (Field::First, mk_first.e()),
            (Field::FirstLr, r.pend_lr.e()),
        ]
    };
    let with_word = |mut marks: Vec<(Field, Expr)>| {
        marks.push((Field::W0, f.w0.e()));
        marks.push((Field::XAddr, f.f_x_addr.e()));
        marks
    };
    let pk = |k: Kind, set: &[(Field, Expr)]| pack(kinds, k, set);
    let swap_out = || {
        pk(
            Kind::Swap,
            &[
                (Field::Swap, lit(1, 1)),
                (Field::Evict, r.pend_valid.e()),
                (Field::EvictLr, r.pend_lr.e()),
            ],
        )
    };
    let zero_load = || pk(Kind::ZeroLoad, &[]);
    // A pass carries the window as it stands at its decode.
    let stream = || {
        let mut set = with_word(marks());
        set.push((Field::Win, win.packed()));
        pk(Kind::Stream, &set)
    };
    let drain = || pk(Kind::Drain, &with_word(marks()));
    let load = || pk(Kind::Load, &[(Field::W0, f.w0.e())]);
    // REQUANT writes every lane of its destination (C of gradients, R of
    // activations), ACT its `lanes`.
    let line_lanes = cond(is(opcode::ACT), f.f_lanes, f.dst_lanes);
    let requant = || {
        pk(
            Kind::Requant,
            &[
                (Field::W0, f.w0.e()),
                (Field::XAddr, f.f_mask.e()),
                (Field::Lanes, line_lanes.clone()),
            ],
        )
    };
    let stop = || {
        pk(
            Kind::Stop,
            &[
                (Field::First, r.pend_valid.e()),
                (Field::FirstLr, r.pend_lr.e()),
            ],
        )
    };
    let by_command = cond(
        stop_now,
        cond(waiting, swap_out(), stop()),
        cond(
            is(opcode::LOAD_W),
            cond(waiting, swap_out(), load()),
            cond(
                is(opcode::FLUSH_W),
                zero_load(),
                cond(
                    is(opcode::FORWARD).or(is(opcode::BACKWARD)),
                    stream(),
                    cond(
                        is(opcode::DRAIN),
                        drain(),
                        cond(
                            is(opcode::REQUANT).or(is(opcode::ACT)),
                            requant(),
                            swap_out(),
                        ),
                    ),
                ),
            ),
        ),
    );
    let lr_field = m.wire_of(
        "lr_field",
        LR_SHIFT_BITS,
        f.f_lr.bits(LR_SHIFT_BITS as i64 - 1, 0),
    );
    let dec_push = m.flag(
        "dec_push",
        cy.dec_cycle.and(stop_now.or(out.dec_go.and(any_of(vec![
            is(opcode::LOAD_W).e(),
            is(opcode::FLUSH_W).e(),
            is(opcode::FORWARD).e(),
            is(opcode::BACKWARD).e(),
            is(opcode::DRAIN).e(),
            is(opcode::REQUANT).e(),
            is(opcode::ACT).e(),
            is(opcode::UPDATE).and(waiting),
        ])))),
    );
    let push_valid = m.flag("push_valid", cy.backlog_push.or(dec_push));
    let bits = entry::BITS as i64;
    let push_entry = m.wire_of(
        "push_entry",
        bits,
        cond(cy.backlog_push, r.backlog0, by_command),
    );
    // What goes into the backlog: FLUSH_W's swap and second zero load;
    // a stop's zero load and stop entry after the swap of a waiting tile;
    // LOAD_W's load after the swap of a waiting tile.
    let flush_swap = m.wire_of("flush_swap", bits, swap_out());
    let load_entry = m.wire_of("load_entry", bits, load());
    let zero_entry = m.wire_of("zero_entry", bits, zero_load());
    let last_stop = m.wire_of("last_stop", bits, pk(Kind::Stop, &[]));
    Entries {
        lr_field,
        push_valid,
        push_entry,
        flush_swap,
        load_entry,
        zero_entry,
        last_stop,
    }
}

/// The queue after this cycle's takes (`data_take`, `load_take`, from the
/// head) and push.
fn queue_update(r: &Regs, e: &Entries, queue_pops: Net, queue_left: Net) -> Vec<Stmt> {
    let q = |n: u64| lit(QUEUE_BITS, n);
    vec![
        if_else(
            queue_left.equals(q(0)),
            vec![when(e.push_valid, vec![set(r.q0, e.push_entry)])],
            vec![when(queue_pops.differs(q(0)), vec![set(r.q0, r.q1)])],
        ),
        when(
            queue_left.equals(q(1)).and(e.push_valid),
            vec![set(r.q1, e.push_entry)],
        ),
        set(
            r.q_len,
            queue_left + cat([zeros(QUEUE_BITS as i64 - 1), e.push_valid.e()]),
        ),
    ]
}

/// What a decode cycle decided: the command, its checks and outcome,
/// where the next word comes from and what goes into the queue.
struct Decision<'a> {
    f: &'a Fields,
    cy: &'a Cycles,
    out: &'a Outcome,
    checks: &'a Checks,
    fe: &'a Fetch,
    e: &'a Entries,
}

/// The logical resident tile, the pending update and the backlog after a
/// decode cycle.
fn decode_step(r: &Regs, d: &Decision, c_rdata: Net) -> Vec<Stmt> {
    let (f, cy, out, checks, fe, e) = (d.f, d.cy, d.out, d.checks, d.fe, d.e);
    let q = |n: u64| lit(QUEUE_BITS, n);
    let go = |op: u8| out.dec_go.and(f.is(op));
    let taken = vec![
        set(r.pend_valid, lit(1, 0)),
        set(r.resident_waits, lit(1, 0)),
    ];
    let stop = vec![
        set(r.dec_done, lit(1, 1)),
        set(r.stop_fault_q, out.dec_fault),
        set(r.stop_code_q, checks.dec_err),
        set(r.stop_pc_q, r.pc),
        set(r.pend_valid, lit(1, 0)),
        set(r.resident_waits, lit(1, 0)),
        when(
            r.resident_waits,
            vec![
                set(r.backlog0, e.zero_entry),
                set(r.backlog1, e.last_stop),
                set(r.backlog_n, q(2)),
            ],
        ),
    ];
    // A tile loaded but never used is swapped in first (its swap entry
    // takes the pending update); the load follows from the backlog.
    let load = vec![
        when(
            r.resident_waits,
            vec![
                set(r.backlog0, e.load_entry),
                set(r.backlog_n, q(1)),
                set(r.pend_valid, lit(1, 0)),
            ],
        ),
        set(r.res_valid, lit(1, 1)),
        set(r.res_dirty, lit(1, 0)),
        set(r.res_addr, f.f_addr_a),
        set(r.res_m, f.f_m),
        set(r.res_k, f.f_k),
        set(r.resident_waits, lit(1, 1)),
    ];
    let flush = vec![
        set(r.res_valid, lit(1, 0)),
        set(r.res_dirty, lit(1, 0)),
        set(r.backlog0, e.flush_swap),
        set(r.backlog1, e.zero_entry),
        set(r.backlog_n, q(2)),
        set(r.pend_valid, lit(1, 0)),
        set(r.resident_waits, lit(1, 0)),
    ];
    let update = vec![
        set(r.res_dirty, lit(1, 1)),
        set(r.resident_waits, lit(1, 0)),
        // A tile swapped in now starts clean: the update is its own.
        when(
            (!r.pend_valid).or(r.resident_waits),
            vec![set(r.pend_valid, lit(1, 1)), set(r.pend_lr, e.lr_field)],
        ),
    ];
    let uses_tile = any_of(vec![
        go(opcode::FORWARD),
        go(opcode::BACKWARD),
        go(opcode::DRAIN),
    ]);
    vec![
        when(cy.in_dec, vec![set(r.cmd_q, c_rdata)]),
        set(r.pc, fe.pc_next),
        set(r.dec_second, fe.second_next),
        when(fe.stop_now, stop),
        when(go(opcode::LOAD_W), load),
        when(go(opcode::FLUSH_W), flush),
        when(go(opcode::UPDATE), update),
        when(uses_tile, taken),
    ]
}

/// What the stop entry does when it completes (`stop_run`).
fn stop_step(r: &Regs) -> Vec<Stmt> {
    vec![
        set(r.ctl_running, lit(1, 0)),
        set(r.halted, !r.stop_fault_q),
        set(r.faulted, r.stop_fault_q),
        set(
            r.err_code,
            cond(r.stop_fault_q, r.stop_code_q, lit(ERROR_BITS, 0)),
        ),
        set(r.stop_pc, r.stop_pc_q),
    ]
}

fn start_step(r: &Regs, prog_start: Net) -> Vec<Stmt> {
    vec![
        set(r.ctl_running, lit(1, 1)),
        set(r.pc, prog_start),
        set(r.dec_second, lit(1, 0)),
        set(r.dec_done, lit(1, 0)),
        set(r.backlog_n, lit(QUEUE_BITS, 0)),
        set(r.halted, lit(1, 0)),
        set(r.faulted, lit(1, 0)),
        set(r.err_code, lit(ERROR_BITS, 0)),
    ]
}

pub(super) fn build(
    m: &mut Scope,
    io: &ControllerIo,
    consts: &CommandConsts,
    kinds: &Enum<Kind>,
) -> Decoder {
    let takes = Takes::named();
    let c_rdata = io.bufs.of(DmaTarget::Commands).rdata;
    m.comment("Decoder: one word per cycle into the two-entry command queue.");
    let r = state_registers(m);
    let cy = decode_cycles(m, &r, c_rdata);
    let src = WordSource {
        in_dec: cy.in_dec,
        in_dec2: cy.in_dec2,
        c_rdata,
        cmd_q: r.cmd_q,
        cmd2_q: cy.cmd2_q,
    };
    let f = fields(m, &src, consts);
    let resident = Resident {
        valid: r.res_valid,
        dirty: r.res_dirty,
        addr: r.res_addr,
        m: r.res_m,
        k: r.res_k,
    };
    // WINDOW: word 0 is the read data in its first decode cycle; in its
    // second, word 0 is in `cmd_q` and word 1 the read data. It takes no
    // queue entry: the decoder's window is set when it goes.
    let staged = window::staged(m, "wn", io.rst, c_rdata, cy.in_dec, c_rdata);
    let win_new = window::decoded(m, "wn", r.cmd_q, &staged);
    let win_load = Net::named("win_load");
    let (win, limits) = window::registers(m, "win", io.rst, &win_new, win_load);
    let checks = checks(
        m,
        &CheckIn {
            fields: &f,
            consts,
            resident: &resident,
            window: &limits,
            pc: r.pc,
            prog_len: io.requests.prog_len,
            in_dec: cy.in_dec,
            in_dec2: cy.in_dec2,
        },
    );
    let out = decode_outcome(m, cy.in_dec, cy.in_dec2, &f, &checks);
    m.define(wire_for(win_load, Width::bit()).init(out.dec_go.and(f.is(opcode::WINDOW))));
    let fe = fetch(m, io, &r, &f, &cy, &out);
    let e = entries(
        m,
        kinds,
        &EntryIn {
            r: &r,
            f: &f,
            cy: &cy,
            out: &out,
            stop_now: fe.stop_now,
            win: &win,
        },
    );
    let widen = |n: Net| cat([zeros(QUEUE_BITS as i64 - 1), n.e()]);
    let queue_pops = m.wire_of(
        "queue_pops",
        QUEUE_BITS,
        widen(takes.data_take) + widen(takes.load_take),
    );
    let queue_left = m.wire_of("queue_left", QUEUE_BITS, r.q_len - queue_pops);
    let q0_kind = entry::unpack(m, "q0", r.q0, &[Field::Kind], false).get(Field::Kind);
    let q = |n: u64| lit(QUEUE_BITS, n);
    let mut running = vec![when(
        cy.backlog_push,
        vec![
            set(r.backlog0, r.backlog1),
            set(r.backlog_n, r.backlog_n - q(1)),
        ],
    )];
    running.push(when(
        cy.dec_cycle,
        decode_step(
            &r,
            &Decision {
                f: &f,
                cy: &cy,
                out: &out,
                checks: &checks,
                fe: &fe,
                e: &e,
            },
            c_rdata,
        ),
    ));
    running.extend(queue_update(&r, &e, queue_pops, queue_left));
    running.push(when(takes.stop_run, stop_step(&r)));
    let live = if_else(
        r.ctl_running,
        running,
        vec![when(
            io.requests.start_req,
            start_step(&r, io.requests.prog_start),
        )],
    );
    m.clocked(vec![if_else(io.rst, r.reset.clone(), vec![live])]);
    Decoder {
        ctl_running: r.ctl_running,
        err_code: r.err_code,
        stop_pc: r.stop_pc,
        faulted: r.faulted,
        halted: r.halted,
        q_len: r.q_len,
        q0: r.q0,
        q1: r.q1,
        q0_kind,
        in_dec: cy.in_dec,
        in_dec2: cy.in_dec2,
        dec_go: out.dec_go,
        is_sync: f.is(opcode::SYNC),
        takes,
    }
}
