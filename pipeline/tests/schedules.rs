//! Invariants of every schedule's timeline, checked on the task and
//! message lists alone (not on the scheduler's state): every task exactly
//! once, dependencies and link arrivals respected, one task at a time per
//! array, dX sent upstream before dW runs, the in-flight bounds and the
//! stash sizes of each schedule, GPipe's bubble formula and LayerPipe2's
//! delays.

use proptest::prelude::*;
use std::collections::HashMap;
use sysgrad_config::Backward;
use sysgrad_pipeline::cost::{Cost, TaskCosts};
use sysgrad_pipeline::metrics::{self, StageSizes};
use sysgrad_pipeline::sim::{simulate, Carries, Message, StageLoad, Task, Timeline};
use sysgrad_pipeline::{Kind, Link, Plan, Schedule, Weights};

fn cost(cycles: u64) -> Cost {
    Cost {
        cycles,
        macs: cycles,
    }
}

/// A stage whose split tasks cost `f`, `dx`, `dw` and whose fused
/// backwards cost `il` (interleaved) and `dx + dw` (sequential).
fn load(f: u64, dx: u64, dw: u64, il: u64, words: u64) -> StageLoad {
    StageLoad {
        costs: TaskCosts {
            forward: cost(f),
            dx: cost(dx),
            dw: cost(dw),
            backward_interleaved: cost(il),
            backward_sequential: cost(dx + dw),
        },
        send_words: words,
        return_words: words,
        dw_array: 0,
        dw_words: words,
        dw_return_words: words,
    }
}

/// Every stage runs its own dW.
fn own_dw(mut loads: Vec<StageLoad>) -> Vec<StageLoad> {
    for (s, l) in loads.iter_mut().enumerate() {
        l.dw_array = s;
    }
    loads
}

fn sizes(p: usize) -> Vec<StageSizes> {
    vec![
        StageSizes {
            weight_words: 100,
            activation_words: 10,
            pes: 1,
        };
        p
    ]
}

type Key = (usize, Kind, usize, usize);

fn index(tl: &Timeline) -> HashMap<Key, Task> {
    let mut by_key = HashMap::new();
    for t in &tl.tasks {
        let old = by_key.insert((t.stage, t.kind, t.micro, t.chunk), *t);
        assert!(old.is_none(), "{} ran {t:?} twice", tl.plan.label());
    }
    by_key
}

/// The message that carried `what` of micro-batch `m`, chunk `c` from
/// `from` to `to`.
fn message(
    tl: &Timeline,
    what: Carries,
    (from, to): (usize, usize),
    m: usize,
    c: usize,
) -> Message {
    let found: Vec<_> = tl
        .messages
        .iter()
        .filter(|x| (x.carries, x.from, x.to, x.micro, x.chunk) == (what, from, to, m, c))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{}: messages {from}->{to} of {m}/{c}",
        tl.plan.label()
    );
    *found[0]
}

fn check_invariants(tl: &Timeline, loads: &[StageLoad], link: Link, micros: usize) {
    let plan = &tl.plan;
    let label = plan.label();
    let p = tl.stages;
    let by_key = index(tl);
    let kinds: &[Kind] = if plan.schedule == Schedule::ZeroBubbleIl {
        &[Kind::F, Kind::B, Kind::W, Kind::BW]
    } else if plan.split() {
        &[Kind::F, Kind::B, Kind::W]
    } else {
        &[Kind::F, Kind::BW]
    };
    // Every task exactly once, with the cost of its kind: two or three per
    // unit (zb-il splits some backwards only).
    let per_unit = |k: &Key| {
        if plan.schedule == Schedule::ZeroBubbleIl {
            2 + usize::from(by_key.contains_key(&(k.0, Kind::B, k.2, k.3)))
        } else {
            kinds.len()
        }
    };
    let units: usize = by_key.keys().filter(|k| k.1 == Kind::F).map(per_unit).sum();
    assert_eq!(units, tl.tasks.len(), "{label}");
    assert_eq!(
        by_key.keys().filter(|k| k.1 == Kind::F).count(),
        p * micros * plan.chunks,
        "{label}"
    );
    for t in &tl.tasks {
        assert!(kinds.contains(&t.kind), "{label}: {t:?}");
        let c = &loads[t.stage].costs;
        let want = match t.kind {
            Kind::F => c.forward,
            Kind::B => c.dx,
            Kind::W => c.dw,
            Kind::BW => c.backward(plan.backward),
        };
        assert_eq!(t.finish - t.start, want.cycles, "{label}: {t:?}");
    }
    // One task at a time per array.
    for a in 0..p {
        let mut on: Vec<&Task> = tl.tasks.iter().filter(|t| t.array == a).collect();
        on.sort_by_key(|t| t.start);
        for w in on.windows(2) {
            assert!(
                w[1].start >= w[0].finish,
                "{label}: overlap {:?} {:?}",
                w[0],
                w[1]
            );
        }
    }
    let chunks = plan.chunks;
    // The task that sends a unit's dX: its dX task if split, else its
    // fused backward.
    let dx_kind = |s: usize, m: usize, c: usize| {
        if by_key.contains_key(&(s, Kind::B, m, c)) {
            Kind::B
        } else {
            Kind::BW
        }
    };
    for s in 0..p {
        for m in 0..micros {
            for c in 0..chunks {
                let dx_kind = dx_kind(s, m, c);
                let f = by_key[&(s, Kind::F, m, c)];
                let b = by_key[&(s, dx_kind, m, c)];
                assert!(
                    b.start >= f.finish,
                    "{label}: backward before forward {b:?}"
                );
                if s > 0 {
                    // The activation came over the link, after its forward.
                    let prev = by_key[&(s - 1, Kind::F, m, c)];
                    let msg = message(tl, Carries::Activation, (s - 1, s), m, c);
                    assert_eq!(msg.depart, prev.finish, "{label}");
                    let busy = link.width.map_or(0, |w| msg.words.div_ceil(w));
                    assert!(msg.arrive >= msg.depart + busy + link.latency, "{label}");
                    assert!(f.start >= msg.arrive, "{label}: {f:?} before {msg:?}");
                }
                if s + 1 < p {
                    // The gradient came back over the link, as soon as the
                    // downstream dX was done (before its dW, if split).
                    let next = by_key[&(
                        s + 1,
                        if by_key.contains_key(&(s + 1, Kind::B, m, c)) {
                            Kind::B
                        } else {
                            Kind::BW
                        },
                        m,
                        c,
                    )];
                    let msg = message(tl, Carries::Gradient, (s + 1, s), m, c);
                    assert_eq!(msg.depart, next.finish, "{label}: dX sent at once");
                    assert!(b.start >= msg.arrive, "{label}: {b:?} before {msg:?}");
                }
                if c + 1 < chunks {
                    // BPTT: chunk c's backward needs chunk c + 1's.
                    let later = by_key[&(s, dx_kind, m, c + 1)];
                    assert!(b.start >= later.finish, "{label}: chunk order");
                }
                if dx_kind == Kind::B {
                    let w = by_key[&(s, Kind::W, m, c)];
                    assert!(w.start >= b.finish, "{label}: dW before its dX");
                    let host = loads[s].dw_array;
                    assert_eq!(w.array, host, "{label}: dW on its array");
                    if host != s {
                        let msg = message(tl, Carries::DwOperands, (s, host), m, c);
                        assert_eq!(msg.depart, b.finish, "{label}");
                        assert!(w.start >= msg.arrive, "{label}: dW before its operands");
                        let back = message(tl, Carries::DwResult, (host, s), m, c);
                        assert_eq!(back.depart, w.finish, "{label}");
                    }
                } else {
                    assert_eq!(b.array, s);
                }
                assert_eq!(f.array, s);
            }
        }
    }
    // No two messages at once on one link direction (serialised).
    if link.width.is_some() {
        for from in 0..p {
            for to in [from.wrapping_sub(1), from + 1] {
                let mut on: Vec<&Message> = tl
                    .messages
                    .iter()
                    .filter(|m| m.from == from && m.to == to)
                    .collect();
                on.sort_by_key(|m| m.arrive);
                for w in on.windows(2) {
                    let busy = link.occupancy(w[1].words);
                    assert!(
                        w[1].arrive - link.latency - busy >= w[0].arrive - link.latency,
                        "{label}: link {from}->{to} carries two messages at once"
                    );
                }
            }
        }
    }
    // Synchronous schedules flush: a mini-batch's forwards on a stage
    // start after the previous one's backward tasks there.
    if plan.schedule.synchronous() {
        for s in 0..p {
            for g in 1..tl.groups.len() {
                let last = tl
                    .tasks
                    .iter()
                    .filter(|t| t.stage == s && tl.groups[g - 1].contains(&t.micro))
                    .map(|t| t.finish)
                    .max()
                    .unwrap();
                let first = tl
                    .tasks
                    .iter()
                    .filter(|t| t.stage == s && tl.groups[g].contains(&t.micro))
                    .map(|t| t.start)
                    .min()
                    .unwrap();
                assert!(
                    first >= last,
                    "{label}: stage {s} did not flush before group {g}"
                );
            }
        }
    }
    // In-flight bounds: micro-batches between their first forward task and
    // their last backward task on each stage, counted from the tasks.
    for s in 0..p {
        let mut events: Vec<(u64, i64)> = Vec::new();
        for m in 0..micros {
            events.push((by_key[&(s, Kind::F, m, 0)].start, 1));
            // Released once the weight gradient is back on the stage.
            let last_kind = if by_key.contains_key(&(s, Kind::W, m, 0)) {
                Kind::W
            } else {
                Kind::BW
            };
            let last = by_key[&(s, last_kind, m, 0)];
            let release = if last.array == s {
                last.finish
            } else {
                message(tl, Carries::DwResult, (last.array, s), m, 0).arrive
            };
            events.push((release, -1));
        }
        events.sort();
        let (mut now, mut peak) = (0i64, 0i64);
        for (_, d) in events {
            now += d;
            peak = peak.max(now);
        }
        assert_eq!(peak as usize, tl.peak_in_flight[s], "{label}: stage {s}");
        if let Some(limit) = plan.in_flight_limit(s, p) {
            assert!(tl.peak_in_flight[s] <= limit, "{label}: stage {s}");
        }
    }
}

fn schedules() -> impl Strategy<Value = (Schedule, Backward)> {
    (
        prop::sample::select(Schedule::ALL.to_vec()),
        prop::sample::select(vec![Backward::Interleaved, Backward::Sequential]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn every_schedule_keeps_its_invariants(
        (schedule, backward) in schedules(),
        p in 1usize..7,
        m in 1usize..9,
        groups in 1usize..4,
        chunks in 1usize..4,
        costs in prop::collection::vec((1u64..40, 1u64..40, 1u64..40, 1u64..60), 7),
        width in prop::option::of(1u64..8),
        latency in 0u64..10,
        words in 0u64..30,
        moves in prop::collection::vec(0usize..3, 7),
    ) {
        let chunks = if schedule.spiking() { chunks } else { 1 };
        let plan = Plan::new(schedule, backward, m, chunks, None).unwrap();
        let mut loads: Vec<StageLoad> = own_dw(costs[..p]
            .iter()
            .map(|&(f, dx, dw, il)| load(f, dx, dw, il, words))
            .collect());
        // LayerPipe's split schedules: some stages' dW on a neighbour.
        if plan.split() && plan.order(0, p, m).is_none() {
            for (s, l) in loads.iter_mut().enumerate() {
                let to = (s + moves[s]).checked_sub(1).filter(|&a| a < p);
                l.dw_array = to.unwrap_or(s);
            }
        }
        let link = Link { width, latency };
        let tl = simulate(&plan, &loads, link, &vec![m; groups]).unwrap();
        check_invariants(&tl, &loads, link, m * groups);
    }
}

/// GPipe on equal stages over an ideal link: the bubble is exactly
/// (p - 1) / (m + p - 1) (Huang et al., GPipe), for either backward.
#[test]
fn gpipe_bubble_is_p_minus_1_over_m_plus_p_minus_1() {
    for backward in [Backward::Interleaved, Backward::Sequential] {
        for p in 1..=8 {
            for m in 1..=12 {
                let plan = Plan::new(Schedule::GPipe, backward, m, 1, None).unwrap();
                let loads = own_dw(vec![load(7, 5, 6, 9, 0); p]);
                let tl = simulate(&plan, &loads, Link::ideal(), &[m; 3]).unwrap();
                let f = metrics::figures(&tl, &loads, &sizes(p), m, 100.0);
                let want = (p - 1) as f64 / (m + p - 1) as f64;
                assert!(
                    (f.bubble_fraction - want).abs() < 1e-12,
                    "p={p} m={m} {}: bubble {} want {want}",
                    backward.name(),
                    f.bubble_fraction
                );
            }
        }
    }
}

/// 1F1B keeps p - s micro-batches in flight on stage s in steady state, so
/// stashing keeps p - s weight versions there (PipeDream), and each
/// gradient is p - 1 - s updates late; LayerPipe2 retimes to exactly
/// 2 (p - 1 - s) updates and keeps 2 (p - 1 - s) + 1 versions.
#[test]
fn stashes_and_delays_of_the_asynchronous_schedules() {
    let p = 5;
    let loads = own_dw(vec![load(10, 6, 6, 9, 0); p]);
    for (schedule, delay_per_stage) in [
        (Schedule::OneFOneB, 1),
        (Schedule::LayerPipe, 1),
        (Schedule::LayerPipe2, 2),
    ] {
        for backward in [Backward::Interleaved, Backward::Sequential] {
            let plan = Plan::new(schedule, backward, 4, 1, None).unwrap();
            let tl = simulate(&plan, &loads, Link::ideal(), &[4; 8]).unwrap();
            let (delays, versions) = metrics::delays_and_versions(&tl);
            let f = metrics::figures(&tl, &loads, &sizes(p), 4, 100.0);
            for s in 0..p {
                let d = delay_per_stage * (p - 1 - s);
                // Steady state: after the fill, before the drain.
                for (j, &got) in delays[s].iter().enumerate().take(24).skip(2 * p) {
                    assert_eq!(got, d, "{} stage {s} micro {j}", plan.label());
                }
                assert_eq!(versions[s], d + 1, "{} stage {s}", plan.label());
                let st = &f.per_stage[s];
                assert_eq!(st.weight_copies, d + 1);
                assert_eq!(st.weight_memory_words, 100 * (d as u64 + 1));
                assert_eq!(st.activation_memory_words, 10 * st.peak_in_flight as u64);
            }
        }
    }
}

/// SpikePipe (arXiv 2406.06879) trains with delayed gradients: stage s
/// applies each gradient 2 (p - 1 - s) updates late, the delay of the
/// retimed pipeline (LayerPipe2, arXiv 2512.08160: Delay(l) = 2 S(l)),
/// whatever the time chunks, the backward and the stage costs; stashing
/// keeps one weight version per update in flight.
#[test]
fn spikepipe_delays_are_the_retimed_closed_form() {
    for p in 1..=6 {
        // Uneven stages: the delay is the schedule's, not the costs'.
        let loads = own_dw(
            (0..p)
                .map(|s| load(10 + 3 * s as u64, 6, 5, 9, 4))
                .collect(),
        );
        for chunks in [1, 2, 4] {
            for backward in [Backward::Interleaved, Backward::Sequential] {
                let plan = Plan::new(Schedule::SpikePipe, backward, 4, chunks, None).unwrap();
                let tl = simulate(&plan, &loads, Link::new(4, 3).unwrap(), &[4; 10]).unwrap();
                let (delays, versions) = metrics::delays_and_versions(&tl);
                for s in 0..p {
                    let d = 2 * (p - 1 - s);
                    // Steady state: after the fill (the first d
                    // micro-batches see fewer updates), before the drain.
                    for (j, &got) in delays[s].iter().enumerate().take(28).skip(2 * p) {
                        assert_eq!(got, d, "{} p={p} stage {s} micro {j}", plan.label());
                    }
                    assert_eq!(versions[s], d + 1, "{} p={p} stage {s}", plan.label());
                }
            }
        }
    }
}

/// Without stashing one weight copy; the reconstruction keeps the average too.
#[test]
fn weight_copies_without_stashing() {
    let loads = own_dw(vec![load(10, 6, 6, 9, 0); 3]);
    for (w, copies) in [(Weights::Latest, 1), (Weights::Ema, 2)] {
        let plan = Plan::new(Schedule::LayerPipe2, Backward::Sequential, 4, 1, Some(w)).unwrap();
        let tl = simulate(&plan, &loads, Link::ideal(), &[4; 6]).unwrap();
        let f = metrics::figures(&tl, &loads, &sizes(3), 4, 100.0);
        assert!(f.per_stage.iter().all(|s| s.weight_copies == copies));
    }
}

/// Synchronous schedules apply every gradient in its own mini-batch.
#[test]
fn synchronous_schedules_have_no_delay() {
    let loads = own_dw(vec![load(10, 6, 6, 9, 3); 4]);
    for schedule in [
        Schedule::GPipe,
        Schedule::OneFOneBFlush,
        Schedule::ZeroBubble,
        Schedule::SpikePipeSync,
    ] {
        for backward in [Backward::Interleaved, Backward::Sequential] {
            let plan = Plan::new(schedule, backward, 6, 1, None).unwrap();
            let tl = simulate(&plan, &loads, Link::ideal(), &[6; 3]).unwrap();
            let (delays, _) = metrics::delays_and_versions(&tl);
            assert!(delays.iter().flatten().all(|&d| d == 0), "{}", plan.label());
        }
    }
}

/// ZB-H1 fills 1F1B's bubbles with deferred dW: with split tasks it is
/// faster per iteration than the same flush-per-mini-batch schedule with
/// fused backwards, and never slower than GPipe.
#[test]
fn zero_bubble_beats_its_fused_self_and_gpipe() {
    for p in 2..=6 {
        let loads = own_dw(vec![load(10, 10, 10, 20, 0); p]);
        let it = |s, b| {
            let plan = Plan::new(s, b, 2 * p, 1, None).unwrap();
            let tl = simulate(&plan, &loads, Link::ideal(), &[2 * p; 3]).unwrap();
            metrics::iteration_cycles(&tl)
        };
        let zb = it(Schedule::ZeroBubble, Backward::Sequential);
        let fused = it(Schedule::ZeroBubble, Backward::Interleaved);
        let gpipe = it(Schedule::GPipe, Backward::Sequential);
        assert!(zb < gpipe, "p={p}: zb {zb} gpipe {gpipe}");
        // The interleaved fused backward costs the same 20 cycles here.
        assert!(zb < fused, "p={p}: zb {zb} fused {fused}");
    }
}

#[test]
fn plan_options_are_checked() {
    let e = Plan::new(Schedule::GPipe, Backward::Sequential, 0, 1, None).unwrap_err();
    assert!(e.to_string().contains("microbatches"), "{e}");
    let e = Plan::new(Schedule::OneFOneB, Backward::Sequential, 4, 2, None).unwrap_err();
    assert!(e.to_string().contains("SpikePipe"), "{e}");
    let e = Plan::new(
        Schedule::GPipe,
        Backward::Sequential,
        4,
        1,
        Some(Weights::Stash),
    )
    .unwrap_err();
    assert!(e.to_string().contains("synchronous"), "{e}");
}

/// LayerPipe's spreading: when one stage's layer dominates, moving its dW
/// tasks to a lighter neighbour shortens the iteration (the slowest array
/// goes from F + dX + dW to the larger of F + dX and the neighbour's load
/// plus the dW), which no layer-granular partition can do.
#[test]
fn moving_the_heaviest_dw_to_a_neighbour_shortens_the_iteration() {
    use sysgrad_pipeline::partition::Partition;
    use sysgrad_pipeline::setup::offload_dw;
    let light = TaskCosts {
        forward: cost(10),
        dx: cost(10),
        dw: cost(10),
        backward_interleaved: cost(15),
        backward_sequential: cost(20),
    };
    let heavy = TaskCosts {
        forward: cost(40),
        dx: cost(40),
        dw: cost(40),
        backward_interleaved: cost(60),
        backward_sequential: cost(80),
    };
    // One layer per stage on three equal arrays; the middle one is heavy.
    let table = vec![vec![light, heavy, light]; 3];
    let part = Partition::from_counts(&[1, 1, 1], 3).unwrap();
    let base: Vec<StageLoad> = own_dw(
        [light, heavy, light]
            .iter()
            .map(|c| StageLoad {
                costs: *c,
                send_words: 0,
                return_words: 0,
                dw_array: 0,
                dw_words: 0,
                dw_return_words: 0,
            })
            .collect(),
    );
    let mut moved = base.clone();
    offload_dw(&table, &part, &mut moved);
    assert_eq!(
        moved[1].dw_array, 0,
        "to the lighter neighbour, ties: upstream"
    );
    assert_eq!(moved[0].dw_array, 0);
    assert_eq!(moved[2].dw_array, 2);
    let plan = Plan::new(Schedule::LayerPipe, Backward::Sequential, 8, 1, None).unwrap();
    let it = |loads: &[StageLoad]| {
        let tl = simulate(&plan, loads, Link::ideal(), &[8; 10]).unwrap();
        check_invariants(&tl, loads, Link::ideal(), 80);
        metrics::iteration_cycles(&tl)
    };
    let (before, after) = (it(&base), it(&moved));
    // Steady state: the slowest array's work per micro-batch times 8;
    // moved, the longer round trip (dW waits on array 0) lets 1F1B's
    // in-flight bound cost some of the gain, never all of it.
    assert_eq!(before, 8.0 * 120.0);
    assert!(after >= 8.0 * 80.0 && after < before, "{after}");
}
