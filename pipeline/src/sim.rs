//! The multi-array timeline: a list scheduler over the tasks of every
//! stage. Each array runs one task at a time, never preempted; when it is
//! free it starts the first ready task in its schedule's priority order,
//! subject to the schedule's admission rules (in-flight limits, LayerPipe2's
//! lag, the flush of synchronous schedules). A task is ready when its
//! inputs have arrived over the link. Event driven and exact in cycles.

use crate::cost::{Cost, TaskCosts};
use crate::error::{PipelineError, Result};
use crate::plan::{Kind, Plan};
use crate::system::Link;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::ops::Range;
use sysgrad_emulator::count::Count;

/// What one stage runs per unit of work (a micro-batch, or one time chunk
/// of it) and what it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StageLoad {
    pub costs: TaskCosts,
    /// Words of the activation it sends downstream per unit (and of the
    /// gradient it receives back).
    pub send_words: u64,
    /// Words of the gradient it sends upstream per unit.
    pub return_words: u64,
    /// The array that runs the stage's dW tasks (split backward): the
    /// stage's own, or a neighbour that has time to spare (LayerPipe's
    /// spreading of a layer's tasks over processors). `costs.dw` is
    /// counted on that array.
    pub dw_array: usize,
    /// Words sent to `dw_array` per unit when it is not the stage's own:
    /// the inputs and output gradients of the stage's layers.
    pub dw_words: u64,
    /// Words of the weight gradient sent back to the stage from
    /// `dw_array` per unit (its layers' weights), when not its own.
    pub dw_return_words: u64,
}

/// The cost of a task of `kind` on a stage whose backward runs `plan`'s way.
pub fn task_cost(load: &StageLoad, plan: &Plan, kind: Kind) -> Cost {
    match kind {
        Kind::F => load.costs.forward,
        Kind::B => load.costs.dx,
        Kind::W => load.costs.dw,
        Kind::BW => load.costs.backward(plan.backward),
    }
}

/// One task as it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Task {
    /// The stage whose layers it computes.
    pub stage: usize,
    /// The array it ran on (the stage's own, or its dW array).
    pub array: usize,
    pub kind: Kind,
    pub micro: usize,
    pub chunk: usize,
    pub start: u64,
    pub finish: u64,
}

/// What a message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Carries {
    Activation,
    Gradient,
    /// A stage's dW operands, to the array that runs its dW.
    DwOperands,
    /// The weight gradient back to the stage that owns the weights.
    DwResult,
}

/// One message over a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Message {
    pub carries: Carries,
    pub from: usize,
    pub to: usize,
    pub micro: usize,
    pub chunk: usize,
    pub words: u64,
    pub depart: u64,
    pub arrive: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    pub plan: Plan,
    pub stages: usize,
    /// Tasks in the order they started (ties: lower stage first).
    pub tasks: Vec<Task>,
    pub messages: Vec<Message>,
    /// The micro-batches of each mini-batch (iteration).
    pub groups: Vec<Range<usize>>,
    /// Most micro-batches in flight on each stage at once.
    pub peak_in_flight: Vec<usize>,
}

impl Timeline {
    pub fn makespan(&self) -> u64 {
        self.tasks.iter().map(|t| t.finish).max().unwrap_or(0)
    }
    /// The cycle at which every task of mini-batch `g` has finished.
    pub fn group_end(&self, g: usize) -> u64 {
        let r = &self.groups[g];
        self.tasks
            .iter()
            .filter(|t| r.contains(&t.micro))
            .map(|t| t.finish)
            .max()
            .unwrap_or(0)
    }
}

struct StageState {
    /// The next unit to forward (forwards run in unit order).
    next_forward: usize,
    /// Units forwarded whose dX (or whole backward) has not started.
    waiting_backward: BTreeSet<usize>,
    /// Units whose dX ran and whose dW has not (split backward).
    waiting_dw: BTreeSet<usize>,
    backward_done: Vec<bool>,
    finished: usize,
    /// Units of each mini-batch whose last backward task ran.
    finished_in_group: Vec<usize>,
    /// The cycle by which each mini-batch's last backward tasks end.
    group_done_at: Vec<u64>,
    micro_started: usize,
    /// The cycles at which micro-batches' last backward tasks end (their
    /// in-flight slot frees then, also when the dW ran on another array).
    micro_releases: BinaryHeap<Reverse<u64>>,
    /// Releases at or before the current cycle, taken off the heap.
    released: usize,
}

struct Sim<'a> {
    plan: &'a Plan,
    loads: &'a [StageLoad],
    link: Link,
    units: usize,
    chunks: usize,
    group_of: Vec<usize>,
    groups: Vec<Range<usize>>,
    st: Vec<StageState>,
    /// Arrival cycle of unit u's activation at stage s / gradient at s.
    activation_at: Vec<Vec<Option<u64>>>,
    gradient_at: Vec<Vec<Option<u64>>>,
    /// When unit u's dW operands are on the stage's dW array.
    dw_operands_at: Vec<Vec<Option<u64>>>,
    /// When each array is free.
    array_free: Vec<u64>,
    forward_link_free: Vec<u64>,
    backward_link_free: Vec<u64>,
    events: BinaryHeap<Reverse<u64>>,
    tasks: Vec<Task>,
    messages: Vec<Message>,
    peak: Vec<usize>,
    /// Schedules with a fixed task order: each stage's tasks over every
    /// mini-batch, as (kind, unit), and how many of them have started.
    orders: Option<Vec<Vec<(Kind, usize)>>>,
    cursor: Vec<usize>,
    /// The stages whose dW each array runs, its own first.
    hosted: Vec<Vec<usize>>,
}

/// Runs `plan` for mini-batches of `group_sizes` micro-batches on the
/// stages `loads` joined by `link`. Asynchronous schedules run the
/// micro-batches as one stream (the groups only mark iterations).
pub fn simulate(
    plan: &Plan,
    loads: &[StageLoad],
    link: Link,
    group_sizes: &[usize],
) -> Result<Timeline> {
    check_horizon(plan, loads, link, group_sizes)?;
    if plan.order(0, loads.len(), 1).is_some() {
        if let Some(s) = (0..loads.len()).find(|&s| loads[s].dw_array != s) {
            return Err(PipelineError::Internal(format!(
                "{}: stage {s}'s dW on array {}, but the schedule orders each stage's own tasks",
                plan.label(),
                loads[s].dw_array
            )));
        }
    }
    let mut sim = Sim::new(plan, loads, link, group_sizes);
    sim.run()?;
    Ok(Timeline {
        plan: *plan,
        stages: loads.len(),
        tasks: sim.tasks,
        messages: sim.messages,
        groups: sim.groups,
        peak_in_flight: sim.peak,
    })
}

/// Refuses a run whose cycles, MACs or words could pass `u64`, before it
/// starts, so that the timeline's plain `u64` arithmetic cannot wrap. At
/// every cycle before the last some task runs or some message is on a
/// link or in its latency (a list scheduler never idles with work ready),
/// so no cycle of the timeline exceeds the sum, over every unit and
/// stage, of all its tasks' cycles and of all its messages' occupancy
/// plus latency; the MACs and words of the figures are bounded the same
/// way. The bound is loose by a small factor at most, so a run refused
/// here is one within that factor of 2^64 cycles.
pub fn check_horizon(
    plan: &Plan,
    loads: &[StageLoad],
    link: Link,
    group_sizes: &[usize],
) -> Result<()> {
    let units = group_sizes.iter().copied().map(Count::from).sum::<Count>() * plan.chunks;
    let (mut cycles, mut macs, mut words) = (Count::ZERO, Count::ZERO, Count::ZERO);
    for l in loads {
        for t in l.costs.all() {
            (cycles, macs) = (cycles + t.cycles, macs + t.macs);
        }
        for w in [l.send_words, l.return_words, l.dw_words, l.dw_return_words] {
            cycles += Count::from(link.occupancy(w)) + link.latency;
            words += w;
        }
    }
    let input = || {
        format!(
            "{} units of work (micro-batches x time chunks, {} mini-batches) with link latency {}",
            units.value().map_or("over 2^64".into(), |u| u.to_string()),
            group_sizes.len(),
            link.latency
        )
    };
    let check = |c: Count, what: &str| {
        (c * units)
            .get(what)
            .map_err(|overflow| PipelineError::Overflow {
                input: input(),
                overflow,
            })
    };
    check(cycles, "the cycles of the timeline")?;
    check(macs, "the MACs of the timeline")?;
    check(words, "the words sent over the links")?;
    Ok(())
}

impl<'a> Sim<'a> {
    fn new(plan: &'a Plan, loads: &'a [StageLoad], link: Link, group_sizes: &[usize]) -> Self {
        let p = loads.len();
        let mut groups = Vec::new();
        let mut group_of = Vec::new();
        let mut start = 0;
        for (g, &n) in group_sizes.iter().enumerate() {
            groups.push(start..start + n);
            group_of.extend(std::iter::repeat_n(g, n));
            start += n;
        }
        let chunks = plan.chunks;
        let units = start * chunks;
        let st = (0..p)
            .map(|_| StageState {
                next_forward: 0,
                waiting_backward: BTreeSet::new(),
                waiting_dw: BTreeSet::new(),
                backward_done: vec![false; units],
                finished: 0,
                finished_in_group: vec![0; groups.len()],
                group_done_at: vec![0; groups.len()],
                micro_started: 0,
                micro_releases: BinaryHeap::new(),
                released: 0,
            })
            .collect();
        Sim {
            plan,
            loads,
            link,
            units,
            chunks,
            group_of,
            groups,
            st,
            activation_at: vec![vec![None; units]; p],
            gradient_at: vec![vec![None; units]; p],
            dw_operands_at: vec![vec![None; units]; p],
            array_free: vec![0; p],
            forward_link_free: vec![0; p],
            backward_link_free: vec![0; p],
            events: BinaryHeap::new(),
            tasks: Vec::new(),
            messages: Vec::new(),
            peak: vec![0; p],
            orders: Self::orders(plan, p, group_sizes),
            cursor: vec![0; p],
            hosted: (0..p)
                .map(|a| {
                    std::iter::once(a)
                        .chain((0..p).filter(|&s| s != a))
                        .filter(|&s| loads[s].dw_array == a)
                        .collect()
                })
                .collect(),
        }
    }

    /// Every stage's task order over all mini-batches, if `plan` fixes it
    /// (one unit per micro-batch: ordered schedules have no time chunks).
    fn orders(plan: &Plan, p: usize, group_sizes: &[usize]) -> Option<Vec<Vec<(Kind, usize)>>> {
        plan.order(0, p, 1)?;
        Some(
            (0..p)
                .map(|s| {
                    let mut start = 0;
                    let mut out = Vec::new();
                    for &n in group_sizes {
                        let one = plan.order(s, p, n).expect("ordered");
                        out.extend(one.into_iter().map(|(k, j)| (k, start + j)));
                        start += n;
                    }
                    out
                })
                .collect(),
        )
    }

    fn p(&self) -> usize {
        self.loads.len()
    }

    fn run(&mut self) -> Result<()> {
        let mut t = 0;
        loop {
            self.release_until(t);
            while self.start_ready_tasks(t) {
                self.release_until(t);
            }
            if self.st.iter().all(|s| s.finished == self.units) {
                return Ok(());
            }
            t = loop {
                match self.events.pop() {
                    Some(Reverse(x)) if x > t => break x,
                    Some(_) => continue,
                    None => return Err(self.deadlock(t)),
                }
            };
        }
    }

    /// Takes the in-flight releases at or before `t` (which only grows)
    /// off each stage's heap, so that [`Sim::in_flight`] looks at the few
    /// still pending only.
    fn release_until(&mut self, t: u64) {
        for st in &mut self.st {
            while st.micro_releases.peek().is_some_and(|r| r.0 <= t) {
                st.micro_releases.pop();
                st.released += 1;
            }
        }
    }

    fn deadlock(&self, t: u64) -> PipelineError {
        let detail = self
            .st
            .iter()
            .enumerate()
            .map(|(s, st)| {
                format!(
                    "stage {s}: next forward {}, waiting dX {:?}, waiting dW {:?}",
                    st.next_forward, st.waiting_backward, st.waiting_dw
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        PipelineError::Deadlock {
            schedule: self.plan.label(),
            cycle: t,
            detail,
        }
    }

    /// Starts one task on every free array that has one ready; true if any started.
    fn start_ready_tasks(&mut self, t: u64) -> bool {
        let mut any = false;
        for a in 0..self.p() {
            if self.array_free[a] <= t {
                if let Some((s, kind, u)) = self.pick(a, t) {
                    self.start(s, a, kind, u, t);
                    any = true;
                }
            }
        }
        any
    }

    fn micro_of(&self, u: usize) -> usize {
        u / self.chunks
    }

    /// The task array `a` starts next: its own stage's forward and dX, or
    /// the dW of a stage whose dW it runs (its own first).
    fn pick(&self, a: usize, t: u64) -> Option<(usize, Kind, usize)> {
        if let Some(orders) = &self.orders {
            return self.pick_in_order(&orders[a], a, t);
        }
        for &kind in self.plan.priority() {
            let found = match kind {
                Kind::F => self
                    .forward_ready(a, t)
                    .then(|| (a, self.st[a].next_forward)),
                Kind::B | Kind::BW => self.backward_ready(a, t).map(|u| (a, u)),
                Kind::W => self.dw_ready(a, t),
            };
            if let Some((s, u)) = found {
                return Some((s, kind, u));
            }
        }
        None
    }

    /// The next task of stage `a`'s fixed order, once its inputs are there
    /// (its stage's dW runs on its own array).
    fn pick_in_order(
        &self,
        order: &[(Kind, usize)],
        a: usize,
        t: u64,
    ) -> Option<(usize, Kind, usize)> {
        let &(kind, u) = order.get(self.cursor[a])?;
        let st = &self.st[a];
        let ready = match kind {
            Kind::F => {
                debug_assert_eq!(u, st.next_forward);
                (a == 0 || self.activation_at[a][u].is_some_and(|x| x <= t))
                    && self.flushed(a, u, t)
            }
            Kind::B | Kind::BW => {
                st.waiting_backward.contains(&u) && self.backward_unit_ready(a, u, t)
            }
            Kind::W => {
                st.waiting_dw.contains(&u)
                    && self.loads[a].dw_array == a
                    && self.dw_operands_at[a][u].is_some_and(|x| x <= t)
            }
        };
        ready.then_some((a, kind, u))
    }

    /// The oldest dW task array `a` can run: its own stage's first, then
    /// those of the stages whose dW it runs, once their operands are there.
    fn dw_ready(&self, a: usize, t: u64) -> Option<(usize, usize)> {
        for &s in &self.hosted[a] {
            let ready = self.st[s]
                .waiting_dw
                .iter()
                .find(|&&u| self.dw_operands_at[s][u].is_some_and(|x| x <= t));
            if let Some(&u) = ready {
                return Some((s, u));
            }
        }
        None
    }

    fn forward_ready(&self, s: usize, t: u64) -> bool {
        let st = &self.st[s];
        let u = st.next_forward;
        if u >= self.units {
            return false;
        }
        let arrived = s == 0 || self.activation_at[s][u].is_some_and(|a| a <= t);
        let p = self.p();
        let in_flight = self.in_flight(s, t);
        let new_micro = u.is_multiple_of(self.chunks);
        let limit_ok = !new_micro
            || self
                .plan
                .in_flight_limit(s, p)
                .is_none_or(|l| in_flight < l);
        arrived && limit_ok && self.flushed(s, u, t)
    }

    /// A synchronous stage starts a mini-batch only after the previous
    /// one's backward passes are all done (and its weights stepped).
    fn flushed(&self, s: usize, u: usize, t: u64) -> bool {
        if !self.plan.schedule.synchronous() {
            return true;
        }
        let g = self.group_of[self.micro_of(u)];
        let st = &self.st[s];
        g == 0
            || (st.finished_in_group[g - 1] == self.groups[g - 1].len() * self.chunks
                && st.group_done_at[g - 1] <= t)
    }

    fn backward_ready(&self, s: usize, t: u64) -> Option<usize> {
        let st = &self.st[s];
        let ready = |&u: &usize| self.backward_unit_ready(s, u, t);
        if self.plan.backward_newest_first() {
            st.waiting_backward.iter().rev().find(|u| ready(u)).copied()
        } else {
            st.waiting_backward.iter().find(|u| ready(u)).copied()
        }
    }

    fn backward_unit_ready(&self, s: usize, u: usize, t: u64) -> bool {
        let st = &self.st[s];
        let last = s + 1 == self.p();
        let gradient = last || self.gradient_at[s][u].is_some_and(|a| a <= t);
        // BPTT carries the membrane gradient from the later time chunk.
        let carry = (u + 1).is_multiple_of(self.chunks) || st.backward_done[u + 1];
        let lag_ok = self.plan.lag(s, self.p()).is_none_or(|lag| {
            let j = (self.micro_of(u) + lag).min(self.units / self.chunks - 1);
            st.next_forward > j * self.chunks + self.chunks - 1
        });
        // GPipe: a mini-batch's backwards come after all of its forwards.
        let all_forwarded = !self.plan.backward_newest_first() || {
            let g = self.group_of[self.micro_of(u)];
            st.next_forward >= self.groups[g].end * self.chunks
        };
        gradient && carry && lag_ok && all_forwarded
    }

    fn start(&mut self, s: usize, a: usize, kind: Kind, u: usize, t: u64) {
        let cost = task_cost(&self.loads[s], self.plan, kind).cycles;
        let finish = t + cost;
        self.array_free[a] = finish;
        self.cursor[a] += 1;
        self.events.push(Reverse(finish));
        self.tasks.push(Task {
            stage: s,
            array: a,
            kind,
            micro: self.micro_of(u),
            chunk: u % self.chunks,
            start: t,
            finish,
        });
        match kind {
            Kind::F => self.started_forward(s, u, t, finish),
            Kind::B => {
                self.started_dx(s, u, finish);
                self.st[s].waiting_dw.insert(u);
                let host = self.loads[s].dw_array;
                self.dw_operands_at[s][u] = Some(if host == s {
                    finish
                } else {
                    let words = self.loads[s].dw_words;
                    self.send(Carries::DwOperands, s, host, u, words, finish)
                });
            }
            Kind::W => {
                self.st[s].waiting_dw.remove(&u);
                if self.plan.eager_dw && s > 0 {
                    self.send_gradient(s, u, finish);
                }
                // A micro-batch is done on its stage once the weight
                // gradient is back where the weights are.
                let done = if a == s {
                    finish
                } else {
                    let words = self.loads[s].dw_return_words;
                    self.send(Carries::DwResult, a, s, u, words, finish)
                };
                self.finished_unit(s, u, done);
            }
            Kind::BW => {
                self.started_dx(s, u, finish);
                self.finished_unit(s, u, finish);
            }
        }
    }

    /// Micro-batches forwarded on stage `s` whose last backward task has
    /// not ended by cycle `t`.
    fn in_flight(&self, s: usize, t: u64) -> usize {
        let st = &self.st[s];
        let pending = st.micro_releases.iter().filter(|r| r.0 <= t).count();
        st.micro_started - st.released - pending
    }

    fn started_forward(&mut self, s: usize, u: usize, start: u64, finish: u64) {
        if u.is_multiple_of(self.chunks) {
            let now = self.in_flight(s, start) + 1;
            self.peak[s] = self.peak[s].max(now);
        }
        let st = &mut self.st[s];
        st.next_forward += 1;
        st.waiting_backward.insert(u);
        if u.is_multiple_of(self.chunks) {
            st.micro_started += 1;
        }
        if s + 1 < self.p() {
            let words = self.loads[s].send_words;
            let arrive = self.send(Carries::Activation, s, s + 1, u, words, finish);
            self.activation_at[s + 1][u] = Some(arrive);
        }
    }

    fn started_dx(&mut self, s: usize, u: usize, finish: u64) {
        let st = &mut self.st[s];
        st.waiting_backward.remove(&u);
        st.backward_done[u] = true;
        // With eager dW (1F1B's order, split tasks) the gradient leaves
        // with the dW, as the fused backward's does.
        if s > 0 && !(self.plan.eager_dw && self.plan.split()) {
            self.send_gradient(s, u, finish);
        }
    }

    fn send_gradient(&mut self, s: usize, u: usize, finish: u64) {
        {
            let words = self.loads[s].return_words;
            let arrive = self.send(Carries::Gradient, s, s - 1, u, words, finish);
            self.gradient_at[s - 1][u] = Some(arrive);
        }
    }

    fn finished_unit(&mut self, s: usize, u: usize, finish: u64) {
        let g = self.group_of[self.micro_of(u)];
        let st = &mut self.st[s];
        st.finished += 1;
        st.finished_in_group[g] += 1;
        st.group_done_at[g] = st.group_done_at[g].max(finish);
        // The backward runs the chunks last to first: chunk 0 ends the micro-batch.
        if u.is_multiple_of(self.chunks) {
            st.micro_releases.push(Reverse(finish));
        }
    }

    /// Queues a message on the link from `from` to `to` (neighbours); its
    /// arrival cycle.
    fn send(
        &mut self,
        carries: Carries,
        from: usize,
        to: usize,
        u: usize,
        words: u64,
        depart: u64,
    ) -> u64 {
        let free = if to > from {
            &mut self.forward_link_free[from]
        } else {
            &mut self.backward_link_free[to]
        };
        let begin = depart.max(*free);
        let busy = self.link.occupancy(words);
        *free = begin + busy;
        let arrive = begin + busy + self.link.latency;
        self.events.push(Reverse(arrive));
        self.messages.push(Message {
            carries,
            from,
            to,
            micro: self.micro_of(u),
            chunk: u % self.chunks,
            words,
            depart,
            arrive,
        });
        arrive
    }
}
