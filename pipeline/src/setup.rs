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
use sysgrad_emulator::fast::EngineKind;

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
    fn unit_columns(&self, per_sample: usize) -> usize {
        self.micro_batch_size * per_sample / self.plan.chunks
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
        cost::table(
            &self.system.arrays,
            &self.work.layers,
            |l| self.unit_columns(l.n_per_sample),
            self.engine,
        )
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
    ) -> (Vec<StageLoad>, Vec<StageSizes>) {
        let per_unit = |words: u64| words * self.micro_batch_size as u64 / self.plan.chunks as u64;
        let first_input = |s: usize| self.work.layers[part.stages[s].start].input_words;
        let p = part.stages.len();
        let (mut loads, sizes): (Vec<StageLoad>, Vec<StageSizes>) = (0..p)
            .map(|s| {
                let r = part.stages[s].clone();
                let layers = &self.work.layers[r.clone()];
                let load = StageLoad {
                    costs: stage_costs(table, s, &r),
                    send_words: if s + 1 < p {
                        per_unit(first_input(s + 1))
                    } else {
                        0
                    },
                    return_words: if s > 0 { per_unit(first_input(s)) } else { 0 },
                    dw_array: s,
                    dw_words: layers
                        .iter()
                        .map(|l| per_unit(l.input_words + (l.m * l.n_per_sample) as u64))
                        .sum(),
                    dw_return_words: layers.iter().map(|l| l.weight_words()).sum(),
                };
                let cfg = &self.system.arrays[s];
                let sizes = StageSizes {
                    weight_words: layers.iter().map(|l| l.weight_words()).sum(),
                    activation_words: layers.iter().map(|l| l.input_words).sum::<u64>()
                        * self.micro_batch_size as u64,
                    pes: (cfg.rows() * cfg.cols()) as u64,
                };
                (load, sizes)
            })
            .unzip();
        if self.spreads_dw() {
            offload_dw(table, part, &mut loads);
        }
        (loads, sizes)
    }

    /// Mini-batches to simulate for steady-state figures: three for a
    /// synchronous schedule (they repeat exactly), enough for an
    /// asynchronous pipeline to fill and run at least two in steady state.
    pub fn figure_groups(&self) -> Vec<usize> {
        let m = self.plan.micro_batches;
        let n = if self.plan.schedule.synchronous() {
            3
        } else {
            3 + (4 * self.system.stages()).div_ceil(m)
        };
        vec![m; n]
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

    /// Costs, partition, timeline and figures. A moved dW costs link
    /// traffic (its operands there, the weight gradient back) and a longer
    /// round trip, so it is kept only when the timeline is shorter.
    pub fn measure(&self) -> Result<Measured> {
        self.check()?;
        let table = self.cost_table()?;
        let partition = self.partition(&table)?;
        let (mut loads, sizes) = self.loads(&table, &partition);
        let groups = self.figure_groups();
        let mut timeline = sim::simulate(&self.plan, &loads, self.system.link, &groups)?;
        if self.spreads_dw() {
            let own = Setup {
                dw_offload: false,
                ..self.clone()
            };
            let (own_loads, _) = own.loads(&table, &partition);
            let t = sim::simulate(&self.plan, &own_loads, self.system.link, &groups)?;
            if metrics::iteration_cycles(&t) <= metrics::iteration_cycles(&timeline) {
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
        Ok(Measured {
            partition,
            loads,
            sizes,
            timeline,
            figures,
        })
    }
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
