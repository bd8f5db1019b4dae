//! A pipeline run put together: the work, the arrays, the partition and
//! the plan become per-stage loads (costs counted by the engines, message
//! and memory sizes), a timeline and its figures.

use crate::cost::{self, TaskCosts};
use crate::error::{PipelineError, Result};
use crate::metrics::{self, Figures, StageSizes};
use crate::partition::{self, Partition};
use crate::plan::{Plan, Schedule};
use crate::sim::{self, StageLoad, Timeline};
use crate::system::System;
use crate::work::Work;
use serde::Serialize;
use sysgrad_emulator::count::{Count, Overflow};
use sysgrad_emulator::fast::EngineKind;

/// How many times [`Setup::simulate_steady`] may double the mini-batches
/// it simulates (so at most 2^this times [`Setup::figure_groups`]).
pub const MAX_DOUBLINGS: usize = 2;

/// How the layers are split over the arrays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionChoice {
    /// Balanced from the layers' counted cycles on each array.
    Balanced,
    /// Compute layers per stage, in order.
    Counts(Vec<usize>),
}

#[derive(Debug, Clone)]
pub struct Setup {
    pub work: Work,
    pub system: System,
    pub plan: Plan,
    /// Samples per micro-batch.
    pub micro_batch_size: usize,
    pub partition: PartitionChoice,
    pub engine: EngineKind,
    /// LayerPipe and LayerPipe2 on sequential arrays: move the dW tasks of
    /// the most loaded stage to a neighbour while that shortens the
    /// slowest array (see [`offload_dw`]).
    pub dw_offload: bool,
}

/// Everything measured for one setup.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub partition: Partition,
    pub loads: Vec<StageLoad>,
    pub sizes: Vec<StageSizes>,
    pub timeline: Timeline,
    pub figures: Figures,
}

impl Setup {
    /// Stream columns of one task of `layer_columns` columns per sample.
    fn unit_columns(&self, per_sample: usize) -> Result<usize> {
        let columns = self
            .micro_batch_size
            .checked_mul(per_sample)
            .ok_or_else(|| PipelineError::Overflow {
                input: format!("micro-batch size {}", self.micro_batch_size),
                overflow: Overflow::new(format!(
                    "the stream columns of a task ({per_sample} per sample)"
                )),
            })?;
        Ok(columns / self.plan.chunks)
    }

    fn check(&self) -> Result<()> {
        let t = self.work.time_steps;
        if self.plan.chunks > 1 && !t.is_multiple_of(self.plan.chunks) {
            return Err(PipelineError::out_of_range(
                "time chunks",
                self.plan.chunks,
                format!("a divisor of the {t} time steps"),
            ));
        }
        if self.micro_batch_size == 0 {
            return Err(PipelineError::out_of_range(
                "micro-batch size",
                0,
                "1 or more samples",
            ));
        }
        let layers = self.work.layers.len();
        if self.system.stages() > layers {
            return Err(PipelineError::out_of_range(
                "arrays",
                self.system.stages(),
                format!(
                    "1..={layers}: {} has {layers} compute layers, one stage needs at least one",
                    self.work.name
                ),
            ));
        }
        if let PartitionChoice::Counts(c) = &self.partition {
            if c.len() != self.system.stages() {
                return Err(PipelineError::out_of_range(
                    "partition (number of stages)",
                    c.len(),
                    format!("{}, one count per array", self.system.stages()),
                ));
            }
        }
        Ok(())
    }

    /// Per-layer task costs on every array, for one unit of work.
    pub fn cost_table(&self) -> Result<Vec<Vec<TaskCosts>>> {
        self.cost_table_with_progress(&|| {})
    }

    fn cost_table_with_progress(&self, tick: &(dyn Fn() + Sync)) -> Result<Vec<Vec<TaskCosts>>> {
        cost::table_with_progress(
            &self.system.arrays,
            &self.work.layers,
            |l| self.unit_columns(l.n_per_sample),
            self.engine,
            tick,
        )
    }

    /// The steps [`Setup::measure_with_progress`] reports: a layer
    /// counted on a distinct array each, and one per timeline simulated
    /// (at most [`MAX_DOUBLINGS`] + 1, twice when LayerPipe compares
    /// moving a dW; the steps it did not need are reported at the end).
    pub fn progress_steps(&self) -> u64 {
        let orders = 1 + u64::from(self.spreads_dw()) + u64::from(self.tries_eager_dw());
        let sims = (MAX_DOUBLINGS as u64 + 1) * orders;
        cost::counted_layers(&self.system.arrays, self.work.layers.len()) as u64 + sims
    }

    pub fn partition(&self, table: &[Vec<TaskCosts>]) -> Result<Partition> {
        match &self.partition {
            PartitionChoice::Counts(c) => Partition::from_counts(c, self.work.layers.len()),
            PartitionChoice::Balanced => {
                let b = self.plan.backward;
                let cycles: Vec<Vec<u64>> = table
                    .iter()
                    .map(|row| row.iter().map(|c| c.training(b).cycles).collect())
                    .collect();
                partition::balanced(&cycles)
            }
        }
    }

    /// The stages' loads and sizes under `part`.
    pub fn loads(
        &self,
        table: &[Vec<TaskCosts>],
        part: &Partition,
    ) -> Result<(Vec<StageLoad>, Vec<StageSizes>)> {
        // Words per unit and per micro-batch, saturated here and refused
        // below if any is over (checked once, after the stages are built).
        let mbs = self.micro_batch_size as u64;
        let words = |w: Count| w.value().unwrap_or(u64::MAX);
        let per_unit = |w: u64| words(Count::from(w) * mbs / self.plan.chunks as u64);
        let first_input = |s: usize| self.work.layers[part.stages[s].start].input_words;
        let p = part.stages.len();
        let (mut loads, sizes): (Vec<StageLoad>, Vec<StageSizes>) = (0..p)
            .map(|s| {
                let r = part.stages[s].clone();
                let layers = &self.work.layers[r.clone()];
                let mut costs = stage_costs(table, s, &r);
                if s == 0 {
                    // Nothing upstream needs the network input's gradient:
                    // the sequential backward skips the first layer's
                    // BWD_DX passes (an interleaved pass computes dX and
                    // dW together, so it runs whole).
                    let first = table[0][0].dx;
                    costs.dx = costs.dx - first;
                    costs.backward_sequential = costs.backward_sequential - first;
                }
                let load = StageLoad {
                    costs,
                    send_words: if s + 1 < p {
                        per_unit(first_input(s + 1))
                    } else {
                        0
                    },
                    return_words: if s > 0 { per_unit(first_input(s)) } else { 0 },
                    dw_array: s,
                    dw_words: words(
                        layers
                            .iter()
                            .map(|l| {
                                per_unit(words(Count::from(l.m) * l.n_per_sample + l.input_words))
                            })
                            .sum(),
                    ),
                    dw_return_words: words(layers.iter().map(|l| l.weight_words()).sum()),
                };
                let cfg = &self.system.arrays[s];
                let sizes = StageSizes {
                    weight_words: words(layers.iter().map(|l| l.weight_words()).sum()),
                    activation_words: words(
                        layers.iter().map(|l| l.input_words).sum::<Count>() * mbs,
                    ),
                    pes: (cfg.rows() * cfg.cols()) as u64,
                };
                (load, sizes)
            })
            .unzip();
        if self.spreads_dw() {
            offload_dw(table, part, &mut loads);
        }
        let saturated = |w: u64| w == u64::MAX;
        if loads.iter().any(|l| {
            [l.send_words, l.return_words, l.dw_words, l.dw_return_words]
                .into_iter()
                .any(saturated)
        }) || sizes
            .iter()
            .any(|s| saturated(s.weight_words) || saturated(s.activation_words))
        {
            return Err(PipelineError::Overflow {
                input: format!("micro-batch size {}", self.micro_batch_size),
                overflow: Overflow::new("the words a stage sends or holds"),
            });
        }
        Ok((loads, sizes))
    }

    /// Mini-batches to simulate first for steady-state figures: three for
    /// a synchronous schedule (they repeat after the first), enough for an
    /// asynchronous pipeline to fill and run several in steady state.
    /// [`Setup::simulate_steady`] doubles them until the timeline is
    /// periodic ([`metrics::steady_state`]), up to [`MAX_DOUBLINGS`] times.
    pub fn figure_groups(&self) -> Vec<usize> {
        let m = self.plan.micro_batches;
        let n = if self.plan.schedule.synchronous() {
            3
        } else {
            3 + (4 * self.system.stages()).div_ceil(m)
        };
        vec![m; n]
    }

    /// The timeline of `loads` in steady state: [`Setup::figure_groups`]
    /// mini-batches, doubled until the mini-batches' ends are periodic
    /// at no fewer cycles per mini-batch than the busiest array works
    /// (at most [`MAX_DOUBLINGS`] times; past that, see
    /// [`metrics::steady_iteration`]).
    pub fn simulate_steady(&self, loads: &[StageLoad]) -> Result<Timeline> {
        self.simulate_steady_with_progress(loads, &|_| {})
    }

    /// [`Setup::simulate_steady`], calling `tick(1)` after each timeline
    /// and `tick(n)` with the doublings it did not need.
    fn simulate_steady_with_progress(
        &self,
        loads: &[StageLoad],
        tick: &(dyn Fn(u64) + Sync),
    ) -> Result<Timeline> {
        let mut groups = self.figure_groups();
        // A plateau below an array's own work is a transient (LayerPipe2
        // filling its long lag), never the steady state.
        let busy = metrics::busy_per_iteration(&self.plan, loads)
            .iter()
            .map(|b| b.0)
            .max()
            .unwrap_or(0);
        for doubling in 0..=MAX_DOUBLINGS {
            let tl = sim::simulate(&self.plan, loads, self.system.link, &groups)?;
            tick(1);
            if doubling == MAX_DOUBLINGS || metrics::steady_iteration(&tl, busy).1 {
                tick((MAX_DOUBLINGS - doubling) as u64);
                return Ok(tl);
            }
            groups = vec![self.plan.micro_batches; 2 * groups.len()];
        }
        unreachable!("the last doubling returns")
    }

    /// LayerPipe and LayerPipe2 with split tasks may run a stage's dW on
    /// a neighbour.
    fn spreads_dw(&self) -> bool {
        let layerpipe = matches!(
            self.plan.schedule,
            Schedule::LayerPipe | Schedule::LayerPipe2
        );
        self.dw_offload && layerpipe && self.plan.split()
    }

    /// LayerPipe on sequential arrays also tries 1F1B's order with split
    /// tasks ([`Plan::eager_dw`]).
    fn tries_eager_dw(&self) -> bool {
        self.plan.schedule == Schedule::LayerPipe && self.plan.split() && !self.plan.eager_dw
    }

    /// Costs, partition, timeline and figures. A moved dW costs link
    /// traffic (its operands there, the weight gradient back) and a longer
    /// round trip, so it is kept only when the timeline is shorter.
    pub fn measure(&self) -> Result<Measured> {
        self.measure_with_progress(&|_| {})
    }

    /// [`Setup::measure`], calling `tick(n)` as it goes: the
    /// [`Setup::progress_steps`] of the run, in all.
    pub fn measure_with_progress(&self, tick: &(dyn Fn(u64) + Sync)) -> Result<Measured> {
        self.check()?;
        let table = self.cost_table_with_progress(&|| tick(1))?;
        let partition = self.partition(&table)?;
        let (mut loads, sizes) = self.loads(&table, &partition)?;
        let most = self.figure_groups().len() << MAX_DOUBLINGS;
        check_memory(
            &sizes,
            &vec![self.plan.micro_batches; most],
            self.micro_batch_size,
        )?;
        let mut timeline = self.simulate_steady_with_progress(&loads, tick)?;
        let it = |tl: &Timeline, l: &[StageLoad]| {
            let busy = metrics::busy_per_iteration(&tl.plan, l);
            metrics::steady_iteration(tl, busy.iter().map(|b| b.0).max().unwrap_or(0)).0
        };
        if self.spreads_dw() {
            let own = Setup {
                dw_offload: false,
                ..self.clone()
            };
            let (own_loads, _) = own.loads(&table, &partition)?;
            let t = self.simulate_steady_with_progress(&own_loads, tick)?;
            if it(&t, &own_loads) <= it(&timeline, &loads) {
                (loads, timeline) = (own_loads, t);
            }
        }
        if self.tries_eager_dw() {
            // LayerPipe's greedy order can lose what the split gains (a dX
            // sent upstream early lets that stage run its backward before
            // a forward the pipeline waits on): 1F1B's timeline with split
            // tasks (each dW right after its dX on the stage's own array,
            // the dX sent with it) costs what 1F1B does where the split
            // adds up to the fused backward; keep the faster.
            let eager = Setup {
                plan: Plan {
                    eager_dw: true,
                    ..self.plan
                },
                dw_offload: false,
                ..self.clone()
            };
            let (own_loads, _) = eager.loads(&table, &partition)?;
            let t = eager.simulate_steady_with_progress(&own_loads, tick)?;
            if it(&t, &own_loads) < it(&timeline, &loads) {
                (loads, timeline) = (own_loads, t);
            }
        }
        let figures = metrics::figures(
            &timeline,
            &loads,
            &sizes,
            self.plan.micro_batches * self.micro_batch_size,
            self.system.clock_mhz,
        );
        metrics::check(&figures)?;
        Ok(Measured {
            partition,
            loads,
            sizes,
            timeline,
            figures,
        })
    }
}

/// The figures multiply a stage's weight and activation words by the
/// weight copies and micro-batches in flight, both at most the
/// micro-batches simulated plus two: refuse sizes whose product could
/// pass `u64`.
fn check_memory(sizes: &[StageSizes], groups: &[usize], micro_batch_size: usize) -> Result<()> {
    let most = groups.iter().copied().map(Count::from).sum::<Count>() + 2u64;
    for s in sizes {
        for (w, what) in [
            (s.weight_words, "the weight words of a stage's copies"),
            (s.activation_words, "the activation words a stage holds"),
        ] {
            (most * w)
                .get(what)
                .map_err(|overflow| PipelineError::Overflow {
                    input: format!("micro-batch size {micro_batch_size}"),
                    overflow,
                })?;
        }
    }
    Ok(())
}

/// The task costs of stage `s`'s layers `r` on array `a`.
fn stage_costs_on(table: &[Vec<TaskCosts>], a: usize, r: &std::ops::Range<usize>) -> TaskCosts {
    r.clone()
        .map(|l| table[a][l])
        .reduce(|x, y| x + y)
        .expect("stages are not empty")
}

fn stage_costs(table: &[Vec<TaskCosts>], s: usize, r: &std::ops::Range<usize>) -> TaskCosts {
    stage_costs_on(table, s, r)
}

/// LayerPipe's spreading of a layer's tasks over processors, on a line of
/// arrays: the dW tasks of the most loaded array's stage move to the
/// neighbour where the slower of the two gets fastest, as long as that
/// beats the most loaded array's load (sequential backward: a stage's load
/// is its forward, dX and the dW tasks it runs, per unit). Greedy; a
/// stage's dW moves at most once and only to an array that keeps its own.
pub fn offload_dw(table: &[Vec<TaskCosts>], part: &Partition, loads: &mut [StageLoad]) {
    let p = loads.len();
    let array_load = |loads: &[StageLoad], a: usize| -> u64 {
        let own = loads[a].costs.forward.cycles + loads[a].costs.dx.cycles;
        let hosted: u64 = (0..p)
            .filter(|&s| loads[s].dw_array == a)
            .map(|s| loads[s].costs.dw.cycles)
            .sum();
        own + hosted
    };
    loop {
        let heavy = (0..p)
            .max_by_key(|&a| (array_load(loads, a), std::cmp::Reverse(a)))
            .expect("at least one array");
        if loads[heavy].dw_array != heavy {
            return;
        }
        let worst = array_load(loads, heavy);
        let r = &part.stages[heavy];
        let best = [heavy.wrapping_sub(1), heavy + 1]
            .into_iter()
            .filter(|&n| n < p && loads[n].dw_array == n)
            .map(|n| {
                let dw = stage_costs_on(table, n, r).dw;
                let there = array_load(loads, n) + dw.cycles;
                let here = worst - loads[heavy].costs.dw.cycles;
                (there.max(here), n, dw)
            })
            .min_by_key(|c| (c.0, c.1));
        match best {
            Some((new_worst, n, dw)) if new_worst < worst => {
                loads[heavy].dw_array = n;
                loads[heavy].costs.dw = dw;
            }
            _ => return,
        }
    }
}
