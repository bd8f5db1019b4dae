//! A pipeline run put together: the work, the arrays, the partition and
//! the plan become per-stage loads (costs counted by the engines, message
//! and memory sizes), a timeline and its figures.

use crate::cost::{self, TaskCosts};
use crate::error::{PipelineError, Result};
use crate::metrics::{self, Figures, StageSizes};
use crate::partition::{self, Partition};
use crate::plan::Plan;
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
        if self.plan.chunks > 1 && t % self.plan.chunks != 0 {
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
        (0..p)
            .map(|s| {
                let r = part.stages[s].clone();
                let costs = r
                    .clone()
                    .map(|l| table[s][l])
                    .reduce(|a, b| a + b)
                    .expect("stages are not empty");
                let load = StageLoad {
                    costs,
                    send_words: if s + 1 < p {
                        per_unit(first_input(s + 1))
                    } else {
                        0
                    },
                    return_words: if s > 0 { per_unit(first_input(s)) } else { 0 },
                };
                let layers = &self.work.layers[r];
                let cfg = &self.system.arrays[s];
                let sizes = StageSizes {
                    weight_words: layers.iter().map(|l| l.weight_words()).sum(),
                    activation_words: layers.iter().map(|l| l.input_words).sum::<u64>()
                        * self.micro_batch_size as u64,
                    pes: (cfg.rows() * cfg.cols()) as u64,
                };
                (load, sizes)
            })
            .unzip()
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

    /// Costs, partition, timeline and figures.
    pub fn measure(&self) -> Result<Measured> {
        self.check()?;
        let table = self.cost_table()?;
        let partition = self.partition(&table)?;
        let (loads, sizes) = self.loads(&table, &partition);
        let timeline = sim::simulate(&self.plan, &loads, self.system.link, &self.figure_groups())?;
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
