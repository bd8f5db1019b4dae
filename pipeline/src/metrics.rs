//! The figures of a timeline: time per iteration, bubble fraction,
//! utilisation, memory and link traffic per array, and the gradient delay
//! each stage's updates actually had.

use crate::error::{PipelineError, Result};
use crate::plan::{Kind, Plan, Weights};
use crate::sim::{task_cost, StageLoad, Timeline};
use serde::Serialize;
use std::collections::BTreeMap;

/// What a stage holds besides the task costs, per micro-batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StageSizes {
    /// Weight words of the stage's layers (one copy).
    pub weight_words: u64,
    /// Input words of the stage's layers for one micro-batch: what the
    /// backward pass needs kept from the forward.
    pub activation_words: u64,
    /// Processing elements of the stage's array.
    pub pes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageFigures {
    pub stage: usize,
    /// Busy cycles per iteration and their share of the iteration.
    pub busy_cycles: u64,
    pub utilization: f64,
    /// Useful MACs over the MAC slots of the iteration (one per PE and cycle).
    pub mac_utilization: f64,
    pub peak_in_flight: usize,
    /// Weight copies held at once (stashed versions, moving average or
    /// gradient sum included) and their words.
    pub weight_copies: usize,
    pub weight_memory_words: u64,
    pub activation_memory_words: u64,
    /// Words sent per iteration, downstream and upstream.
    pub sent_forward_words: u64,
    pub sent_backward_words: u64,
    /// The largest number of weight updates between a micro-batch's
    /// forward and its backward on this stage.
    pub max_delay: usize,
    /// The array that runs this stage's dW tasks.
    pub dw_array: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub label: String,
    pub stages: usize,
    pub samples_per_iteration: usize,
    pub iteration_cycles: f64,
    /// Whether the iteration is a periodic steady state the timeline
    /// reached; if not, the busiest array's work per iteration, which the
    /// simulated stream was still running ahead of
    /// ([`steady_iteration`]).
    pub steady: bool,
    pub clock_mhz: f64,
    pub iteration_seconds: f64,
    pub samples_per_second: f64,
    pub bubble_fraction: f64,
    pub per_stage: Vec<StageFigures>,
}

/// The cycle at which each mini-batch's last task ends.
pub fn group_ends(tl: &Timeline) -> Vec<u64> {
    let mut group_of = Vec::new();
    for (g, r) in tl.groups.iter().enumerate() {
        group_of.resize(r.end, g);
    }
    let mut ends = vec![0; tl.groups.len()];
    for t in &tl.tasks {
        let g = group_of[t.micro];
        ends[g] = ends[g].max(t.finish);
    }
    ends
}

/// The mini-batches whose end a longer stream would not change: all of
/// a synchronous schedule's (the flush separates them); of an
/// asynchronous stream, those that end by the time stage 0's last
/// forward does (until then the list scheduler decides exactly as it
/// would with more micro-batches to come, which only start after it),
/// so the drain at the stream's end is left out.
fn settled_groups(tl: &Timeline, ends: &[u64]) -> usize {
    if tl.plan.schedule.synchronous() {
        return ends.len();
    }
    let last_forward = tl
        .tasks
        .iter()
        .filter(|t| t.stage == 0 && t.kind == Kind::F)
        .map(|t| t.finish)
        .max()
        .unwrap_or(0);
    ends.iter().take_while(|&&e| e <= last_forward).count()
}

/// The steady state of a timeline, if it reached one: the period in
/// mini-batches q and the cycles of one mini-batch (the cycles of a
/// period over q). Found from the differences between the settled
/// mini-batches' end cycles ([`settled_groups`]): the last three periods
/// of them repeat (two for a synchronous schedule, whose mini-batches
/// each start from a flushed pipeline), the shortest such period. A
/// transient can repeat too (LayerPipe2 filling its lag runs below its
/// busiest array's work for many mini-batches): the caller checks the
/// figure against that bound ([`crate::Setup::simulate_steady`]).
pub fn steady_state(tl: &Timeline) -> Option<(usize, f64)> {
    let ends = group_ends(tl);
    let settled = settled_groups(tl, &ends);
    let d: Vec<u64> = (1..settled).map(|g| ends[g] - ends[g - 1]).collect();
    let repeats = if tl.plan.schedule.synchronous() { 2 } else { 3 };
    (1..=d.len() / repeats).find_map(|q| {
        let tail = &d[d.len() - repeats * q..];
        let periodic = (q..tail.len()).all(|i| tail[i] == tail[i - q]);
        periodic.then(|| {
            (
                q,
                tail[tail.len() - q..].iter().sum::<u64>() as f64 / q as f64,
            )
        })
    })
}

/// The cycles of one mini-batch in steady state ([`steady_state`]), if
/// the timeline reached it; one or two mini-batches: the makespan, the
/// second's duration.
pub fn iteration_cycles(tl: &Timeline) -> f64 {
    match tl.groups.len() {
        0 => 0.0,
        1 => tl.makespan() as f64,
        2 => (tl.group_end(1) - tl.group_end(0)) as f64,
        _ => steady_iteration(tl, 0).0,
    }
}

/// The cycles of one mini-batch of a timeline of three or more, and
/// whether they are its steady state: the period [`steady_state`] found,
/// if at least `busy` (the busiest array's work per mini-batch, which no
/// steady state undercuts); else the last third of the settled
/// mini-batches, but never less than `busy`. A stream that runs faster
/// than its busiest array can work has not used up the slack it started
/// with (work done ahead, in-flight room, while its latencies fill), and
/// that array is saturated once it has: `busy` is then the steady state
/// the simulated stream is heading for, a lower bound on it.
pub fn steady_iteration(tl: &Timeline, busy: u64) -> (f64, bool) {
    if let Some((_, c)) = steady_state(tl).filter(|&(_, c)| c >= busy as f64) {
        return (c, true);
    }
    let ends = group_ends(tl);
    let last = settled_groups(tl, &ends).max(2) - 1;
    let first = 2 * last / 3;
    let window = (ends[last] - ends[first]) as f64 / (last - first) as f64;
    (window.max(busy as f64), false)
}

/// Busy cycles and useful MACs of one full mini-batch on each array: its
/// stage's forward and backward tasks, and the dW tasks it runs for
/// itself or a neighbour.
pub fn busy_per_iteration(plan: &Plan, loads: &[StageLoad]) -> Vec<(u64, u64)> {
    let units = (plan.micro_batches * plan.chunks) as u64;
    let p = loads.len();
    let mut busy = vec![(0, 0); p];
    for (s, l) in loads.iter().enumerate() {
        // Tasks of each kind per mini-batch: the fixed order's, or every
        // unit's forward and backward tasks.
        let counts: Vec<(Kind, u64)> = match plan.order(s, p, plan.micro_batches) {
            Some(order) => [Kind::F, Kind::B, Kind::W, Kind::BW]
                .into_iter()
                .map(|k| (k, order.iter().filter(|t| t.0 == k).count() as u64))
                .collect(),
            None if plan.split() => vec![(Kind::F, units), (Kind::B, units), (Kind::W, units)],
            None => vec![(Kind::F, units), (Kind::BW, units)],
        };
        for (k, n) in counts {
            let a = if k == Kind::W { l.dw_array } else { s };
            let t = task_cost(l, plan, k);
            busy[a].0 += n * t.cycles;
            busy[a].1 += n * t.macs;
        }
    }
    busy
}

/// The weight updates between each micro-batch's forward and backward
/// on every stage (`delays[stage][micro]`), and the most weight versions
/// a stage held at once (the current one and those in-flight micro-batches
/// still need). Synchronous schedules step once per mini-batch, after its
/// backwards, so their delays are 0.
pub fn delays_and_versions(tl: &Timeline) -> (Vec<Vec<usize>>, Vec<usize>) {
    let plan = &tl.plan;
    let micros = tl.groups.last().map_or(0, |g| g.end);
    let mut delays = vec![vec![0; micros]; tl.stages];
    let mut versions = vec![1; tl.stages];
    for s in 0..tl.stages {
        let mut updates = 0usize;
        let mut seen_at_forward = vec![0usize; micros];
        let mut referenced: BTreeMap<usize, usize> = BTreeMap::new();
        let mut done_in_group = 0usize;
        for t in tl.tasks.iter().filter(|t| t.stage == s) {
            match t.kind {
                Kind::F if t.chunk == 0 => {
                    seen_at_forward[t.micro] = updates;
                    *referenced.entry(updates).or_default() += 1;
                }
                Kind::B | Kind::BW if t.chunk + 1 == plan.chunks => {
                    delays[s][t.micro] = updates - seen_at_forward[t.micro];
                }
                _ => {}
            }
            if plan.ends_unit(t.kind) && t.chunk == 0 {
                let v = seen_at_forward[t.micro];
                let n = referenced.get_mut(&v).expect("forwarded before");
                *n -= 1;
                if *n == 0 {
                    referenced.remove(&v);
                }
                if plan.schedule.synchronous() {
                    done_in_group += 1;
                    let g = tl.groups.iter().position(|g| g.contains(&t.micro)).unwrap();
                    if done_in_group == tl.groups[g].len() {
                        done_in_group = 0;
                        updates += 1;
                    }
                } else {
                    updates += 1;
                }
            }
            let held = referenced.len() + usize::from(!referenced.contains_key(&updates));
            versions[s] = versions[s].max(held);
        }
    }
    (delays, versions)
}

/// Weight copies a stage keeps: stashing keeps every version still
/// needed; the moving average is one more copy; a synchronous stage keeps
/// the gradient sum of the mini-batch.
fn weight_copies(plan: &Plan, versions: usize) -> usize {
    match plan.weights {
        Weights::Current => 2,
        Weights::Stash => versions,
        Weights::Latest => 1,
        Weights::Ema => 2,
    }
}

/// Words each stage sends per iteration, downstream and upstream.
fn traffic(tl: &Timeline, iterations: f64) -> Vec<(u64, u64)> {
    let mut out = vec![(0u64, 0u64); tl.stages];
    for m in &tl.messages {
        if m.to > m.from {
            out[m.from].0 += m.words;
        } else {
            out[m.from].1 += m.words;
        }
    }
    out.into_iter()
        .map(|(f, b)| {
            (
                (f as f64 / iterations).round() as u64,
                (b as f64 / iterations).round() as u64,
            )
        })
        .collect()
}

/// The figures a timeline can never have: an iteration shorter than an
/// array's own work per iteration (a utilisation above 100%). Either
/// would be a bug in the simulator or in the steady-state measurement:
/// an internal error naming the schedule, never a figure.
pub fn check(f: &Figures) -> Result<()> {
    for s in &f.per_stage {
        if s.busy_cycles as f64 > f.iteration_cycles {
            return Err(PipelineError::Internal(format!(
                "{} on {} arrays: array {} works {} cycles per iteration, above the iteration's {} (utilisation {:.1}%)",
                f.label,
                f.stages,
                s.stage,
                s.busy_cycles,
                f.iteration_cycles,
                100.0 * s.utilization
            )));
        }
    }
    Ok(())
}

/// Every figure of `tl`.
pub fn figures(
    tl: &Timeline,
    loads: &[StageLoad],
    sizes: &[StageSizes],
    samples_per_iteration: usize,
    clock_mhz: f64,
) -> Figures {
    let plan = &tl.plan;
    let busy = busy_per_iteration(plan, loads);
    let most = busy.iter().map(|b| b.0).max().unwrap_or(0);
    let (cycles, steady) = match tl.groups.len() {
        0..=2 => (iteration_cycles(tl), false),
        _ => steady_iteration(tl, most),
    };
    let (delays, versions) = delays_and_versions(tl);
    let full_groups = tl.groups.len() as f64;
    let sent = traffic(tl, full_groups);
    let total_busy: u64 = busy.iter().map(|b| b.0).sum();
    let per_stage = (0..tl.stages)
        .map(|s| {
            let copies = weight_copies(plan, versions[s]);
            StageFigures {
                stage: s,
                busy_cycles: busy[s].0,
                utilization: busy[s].0 as f64 / cycles,
                mac_utilization: busy[s].1 as f64 / (cycles * sizes[s].pes as f64),
                peak_in_flight: tl.peak_in_flight[s],
                weight_copies: copies,
                weight_memory_words: copies as u64 * sizes[s].weight_words,
                activation_memory_words: tl.peak_in_flight[s] as u64 * sizes[s].activation_words,
                sent_forward_words: sent[s].0,
                sent_backward_words: sent[s].1,
                max_delay: delays[s].iter().copied().max().unwrap_or(0),
                dw_array: loads[s].dw_array,
            }
        })
        .collect();
    let seconds = cycles / (clock_mhz * 1e6);
    Figures {
        label: plan.label(),
        stages: tl.stages,
        samples_per_iteration,
        iteration_cycles: cycles,
        steady,
        clock_mhz,
        iteration_seconds: seconds,
        samples_per_second: samples_per_iteration as f64 / seconds,
        bubble_fraction: 1.0 - total_busy as f64 / (tl.stages as f64 * cycles),
        per_stage,
    }
}
