//! The closed forms of the synchronous schedules, on equal stages joined
//! by ideal links (no width limit, no latency): GPipe takes
//! (m + p - 1)(F + B + W) per mini-batch, 1F1B with a flush
//! m (F + B + W) + (p - 1)(F + B + W), and ZB-H1 (Qi et al. 2024,
//! section 3.1) m (F + B + W) + (p - 1)(F + B - W) when m >= p and W <= F
//! (the paper's setting, where F, B and W are about equal), with the peak
//! activations of 1F1B (p micro-batches, on stage 0). For m < p ZB-H1 is
//! bound by its critical path instead: the last micro-batch's forward
//! through every stage, every stage's forwards and dX of the m micro-batches
//! on the last stage, the dX back to stage 0 and its dW:
//! (m + p - 1)(F + B) + W (the paper's formula assumes m >= p; below it
//! would undercut this path by (p - m) W).
//!
//! F, B and W are the task costs the simulator charges per task kind
//! (`sim::task_cost`), never its iteration figure; the expected iteration
//! is the formula's.

use sysgrad_config::Backward;
use sysgrad_pipeline::cost::{Cost, TaskCosts};
use sysgrad_pipeline::metrics;
use sysgrad_pipeline::sim::{simulate, task_cost, StageLoad};
use sysgrad_pipeline::{Kind, Link, Plan, Schedule};

fn cost(cycles: u64) -> Cost {
    Cost {
        cycles,
        macs: cycles,
    }
}

fn stages(p: usize, f: u64, b: u64, w: u64, il: u64) -> Vec<StageLoad> {
    (0..p)
        .map(|s| StageLoad {
            costs: TaskCosts {
                forward: cost(f),
                dx: cost(b),
                dw: cost(w),
                backward_interleaved: cost(il),
                backward_sequential: cost(b + w),
            },
            send_words: 5,
            return_words: 5,
            dw_array: s,
            dw_words: 5,
            dw_return_words: 5,
        })
        .collect()
}

/// Iteration cycles and peak in-flight micro-batches (over the stages) of
/// `schedule` on `loads`, three mini-batches of m.
fn run(schedule: Schedule, backward: Backward, m: usize, loads: &[StageLoad]) -> (u64, usize) {
    let plan = Plan::new(schedule, backward, m, 1, None).unwrap();
    let tl = simulate(&plan, loads, Link::ideal(), &[m; 3]).unwrap();
    // Synchronous: every mini-batch takes the same time.
    let first = tl.group_end(0);
    assert_eq!(tl.group_end(1) - first, first, "{}", plan.label());
    assert_eq!(tl.group_end(2) - tl.group_end(1), first, "{}", plan.label());
    assert_eq!(metrics::iteration_cycles(&tl), first as f64);
    (first, tl.peak_in_flight.iter().copied().max().unwrap())
}

/// F, B, W as the simulator charges them on stage 0.
fn fbw(loads: &[StageLoad], backward: Backward) -> (u64, u64, u64, u64) {
    let plan = Plan::new(Schedule::ZeroBubble, backward, 1, 1, None).unwrap();
    let c = |k| task_cost(&loads[0], &plan, k).cycles;
    (c(Kind::F), c(Kind::B), c(Kind::W), c(Kind::BW))
}

const CASES: [(usize, usize); 14] = [
    (1, 1),
    (1, 3),
    (2, 1),
    (2, 2),
    (2, 5),
    (3, 2),
    (3, 7),
    (4, 2),
    (4, 4),
    (4, 8),
    (4, 9),
    (5, 11),
    (6, 6),
    (8, 17),
];

/// (F, B, W, interleaved backward) with W <= F and W <= B.
const COSTS: [(u64, u64, u64, u64); 6] = [
    (2016, 2016, 2016, 3000),
    (10, 10, 10, 15),
    (7, 6, 5, 9),
    (9, 13, 4, 14),
    (30, 20, 20, 41),
    (6, 6, 6, 6),
];

#[test]
fn gpipe_takes_m_plus_p_minus_1_times_f_b_w() {
    for (f, b, w, il) in COSTS {
        for (p, m) in CASES {
            let loads = stages(p, f, b, w, il);
            for backward in [Backward::Sequential, Backward::Interleaved] {
                let (tf, _, _, tbw) = fbw(&loads, backward);
                let (it, _) = run(Schedule::GPipe, backward, m, &loads);
                let want = (m + p - 1) as u64 * (tf + tbw);
                assert_eq!(it, want, "gpipe p={p} m={m} F={f} B={b} W={w}");
            }
        }
    }
}

#[test]
fn one_f_one_b_with_a_flush_takes_m_plus_p_minus_1_times_f_b_w() {
    for (f, b, w, il) in COSTS {
        for (p, m) in CASES {
            let loads = stages(p, f, b, w, il);
            for backward in [Backward::Sequential, Backward::Interleaved] {
                let (tf, _, _, tbw) = fbw(&loads, backward);
                let (it, peak) = run(Schedule::OneFOneBFlush, backward, m, &loads);
                let want = m as u64 * (tf + tbw) + (p - 1) as u64 * (tf + tbw);
                assert_eq!(it, want, "1f1b-flush p={p} m={m} F={f} B={b} W={w}");
                assert_eq!(peak, p.min(m), "1f1b-flush p={p} m={m}");
                // ZB on interleaved arrays (nothing to split) is this schedule.
                if backward == Backward::Interleaved {
                    let (zb, zb_peak) = run(Schedule::ZeroBubble, backward, m, &loads);
                    assert_eq!((zb, zb_peak), (it, peak));
                }
            }
        }
    }
}

#[test]
fn zb_h1_takes_m_f_b_w_plus_p_minus_1_times_f_plus_b_minus_w() {
    for (f, b, w, il) in COSTS {
        for (p, m) in CASES {
            let loads = stages(p, f, b, w, il);
            let (tf, tb, tw, _) = fbw(&loads, Backward::Sequential);
            assert!(tw <= tf && tw <= tb);
            let (it, peak) = run(Schedule::ZeroBubble, Backward::Sequential, m, &loads);
            let (m64, p64) = (m as u64, p as u64);
            let want = if m >= p {
                m64 * (tf + tb + tw) + (p64 - 1) * (tf + tb - tw)
            } else {
                (m64 + p64 - 1) * (tf + tb) + tw
            };
            assert_eq!(it, want, "zb p={p} m={m} F={f} B={b} W={w}");
            // 1F1B's peak activations: p micro-batches (m if fewer).
            let (_, one_f_one_b) = run(Schedule::OneFOneBFlush, Backward::Sequential, m, &loads);
            assert_eq!(peak, one_f_one_b, "zb p={p} m={m}");
            assert_eq!(peak, p.min(m), "zb p={p} m={m}");
        }
    }
}

/// ZB-H1 against the baseline it is measured against: never slower than
/// 1F1B with a flush on the same split costs, and it saves (p - 1) 2W
/// per mini-batch when m >= p.
#[test]
fn zb_h1_saves_two_w_per_stage_over_one_f_one_b_with_a_flush() {
    for (f, b, w, il) in COSTS {
        for (p, m) in CASES {
            let loads = stages(p, f, b, w, il);
            let (zb, _) = run(Schedule::ZeroBubble, Backward::Sequential, m, &loads);
            let (flush, _) = run(Schedule::OneFOneBFlush, Backward::Sequential, m, &loads);
            assert!(zb <= flush, "p={p} m={m}");
            if m >= p {
                assert_eq!(flush - zb, 2 * (p as u64 - 1) * w, "p={p} m={m}");
            }
        }
    }
}

/// `zb-il` on interleaved arrays: never slower than 1F1B with a flush on
/// the same arrays where it pays (see below), at the same peak
/// activations as ZB-H1 (p micro-batches, m if fewer); on sequential
/// arrays (fused = dX + dW) it times exactly as ZB-H1.
#[test]
fn zb_il_against_one_f_one_b_with_a_flush_and_zb_h1() {
    for (f, b, w, il) in COSTS {
        for (p, m) in CASES {
            let loads = stages(p, f, b, w, il);
            let (zbil, peak) = run(Schedule::ZeroBubbleIl, Backward::Interleaved, m, &loads);
            let (flush, _) = run(Schedule::OneFOneBFlush, Backward::Interleaved, m, &loads);
            // Where it wins: three or more arrays and a fused pass that
            // saves at most a quarter of dX + dW (the arrays' BWD_IL saves
            // about that: 3000 against 4032 cycles on the equal layers).
            // With one or two arrays, or a fused pass as cheap as dX
            // alone, the extra cost of the split backwards outweighs the
            // bubble they fill.
            if p >= 3 && 4 * il >= 3 * (b + w) {
                assert!(
                    zbil <= flush,
                    "p={p} m={m} F={f} B={b} W={w} IL={il}: {zbil} > {flush}"
                );
            }
            assert_eq!(peak, p.min(m), "p={p} m={m}");
            let seq = run(Schedule::ZeroBubbleIl, Backward::Sequential, m, &loads);
            assert_eq!(
                seq,
                run(Schedule::ZeroBubble, Backward::Sequential, m, &loads)
            );
        }
    }
}
