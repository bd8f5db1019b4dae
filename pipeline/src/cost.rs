//! Task costs, counted by the array models: the cycles and MACs of every
//! layer product that a pipeline task runs, on the stage's own array.
//! Nothing here is a formula: the fast exact mode's ledger
//! (`sysgrad_emulator::fast::count_*`) or a clocked run of
//! `sysgrad_emulator::gemm` on a `Driver` gives the counters, so the
//! figures follow whatever cycle model the emulator implements.

use crate::error::{PipelineError, Result};
use crate::work::LayerWork;
use ndarray::Array2;
use rayon::prelude::*;
use serde::Serialize;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::count::Count;
use sysgrad_emulator::fast::{self, EngineKind};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{DriveError, Driver, Phase, Stats};

/// Cycles and useful MACs of one task. Sums of task costs (a stage's
/// layers, a task's forward and backward) use plain `+`: [`table`] checks
/// that every cost of all layers together fits in `u64`, so no sum of a
/// subset of them can wrap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    pub cycles: u64,
    pub macs: u64,
}

impl std::ops::Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost {
            cycles: self.cycles + o.cycles,
            macs: self.macs + o.macs,
        }
    }
}

/// A part taken off a sum it is part of (never below zero).
impl std::ops::Sub for Cost {
    type Output = Cost;
    fn sub(self, o: Cost) -> Cost {
        Cost {
            cycles: self.cycles - o.cycles,
            macs: self.macs - o.macs,
        }
    }
}

impl std::iter::Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(it: I) -> Cost {
        it.fold(Cost::default(), |a, b| a + b)
    }
}

/// What the tasks of one layer (or of a stage's layers together) cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TaskCosts {
    pub forward: Cost,
    /// The dX task of a split backward (BWD_DX passes, with the loads).
    pub dx: Cost,
    /// The dW task of a split backward (BWD_DW passes, with the drains).
    pub dw: Cost,
    /// The whole backward in one task, interleaved (BWD_IL).
    pub backward_interleaved: Cost,
    /// The whole backward in one task, sequential (dX then dW per tile).
    pub backward_sequential: Cost,
}

impl std::ops::Add for TaskCosts {
    type Output = TaskCosts;
    fn add(self, o: TaskCosts) -> TaskCosts {
        TaskCosts {
            forward: self.forward + o.forward,
            dx: self.dx + o.dx,
            dw: self.dw + o.dw,
            backward_interleaved: self.backward_interleaved + o.backward_interleaved,
            backward_sequential: self.backward_sequential + o.backward_sequential,
        }
    }
}

impl TaskCosts {
    /// Every task cost, each once: what bounds any sum a stage, a task or
    /// a schedule forms from them.
    pub fn all(&self) -> [Cost; 5] {
        [
            self.forward,
            self.dx,
            self.dw,
            self.backward_interleaved,
            self.backward_sequential,
        ]
    }

    /// The fused backward task in `schedule`.
    pub fn backward(&self, schedule: Backward) -> Cost {
        match schedule {
            Backward::Interleaved => self.backward_interleaved,
            Backward::Sequential => self.backward_sequential,
        }
    }
    /// Forward and backward of one unit of work.
    pub fn training(&self, schedule: Backward) -> Cost {
        self.forward + self.backward(schedule)
    }
}

fn of(stats: &Stats) -> Cost {
    let t = stats.total();
    Cost {
        cycles: t.cycles,
        macs: t.macs,
    }
}

/// The dX and dW tasks of a split backward, from the phases of the
/// sequential backward: dX gets the loads and the BWD_DX passes, dW the
/// BWD_DW passes and the drains; cycles in which nothing streams (a dense
/// array's fill and result latency) are shared evenly. The two add up to
/// the fused sequential backward, so splitting moves work, it does not
/// create or remove any.
fn split(stats: &Stats) -> (Cost, Cost) {
    let p = |ph: Phase| *stats.phase(ph);
    let idle = p(Phase::Idle).cycles;
    let dx = Cost {
        cycles: p(Phase::Load).cycles + p(Phase::BackwardDx).cycles + idle / 2,
        macs: p(Phase::BackwardDx).macs,
    };
    let total = of(stats);
    let dw = Cost {
        cycles: total.cycles - dx.cycles,
        macs: total.macs - dx.macs,
    };
    (dx, dw)
}

/// The counters of the forward and of both backward schedules of an
/// M x K x N product on `cfg`, from `engine`. dW is drained in every
/// pipeline task (a schedule decides when and to which weights it is
/// applied), so the backward counts use the Drain sink.
pub fn count(
    cfg: &ArrayConfig,
    (m, k, n): (usize, usize, usize),
    engine: EngineKind,
) -> Result<(Stats, Stats, Stats)> {
    let il = cfg.with_backward(Backward::Interleaved);
    let seq = cfg.with_backward(Backward::Sequential);
    match engine {
        EngineKind::Fast => {
            let mut f = Stats::default();
            fast::count_forward(&mut f, cfg, (m, k, n))?;
            let mut bi = Stats::default();
            fast::count_backward(
                &mut bi,
                &il,
                Backward::Interleaved,
                (m, k, n),
                DwSink::Drain,
            )?;
            let mut bs = Stats::default();
            fast::count_backward(
                &mut bs,
                &seq,
                Backward::Sequential,
                (m, k, n),
                DwSink::Drain,
            )?;
            Ok((f, bi, bs))
        }
        EngineKind::Cycle => {
            // The counters depend on shapes only, so zero operands give the
            // cycles of any data.
            let w = Array2::<i64>::zeros((m, k));
            let x = Array2::<i64>::zeros((k, n));
            let dy = Array2::<i64>::zeros((m, n));
            let mut d = Driver::new(*cfg);
            gemm::forward(&mut d, w.view(), x.view())?;
            let run = |c: ArrayConfig, s: Backward| -> Result<Stats> {
                let mut d = Driver::new(c);
                gemm::backward(&mut d, s, w.view(), x.view(), dy.view(), DwSink::Drain)?;
                Ok(d.stats)
            };
            let bi = run(il, Backward::Interleaved)?;
            let bs = run(seq, Backward::Sequential)?;
            Ok((d.stats, bi, bs))
        }
    }
}

/// The task costs of one layer for `samples` samples (in `chunks` time
/// chunks: each task streams 1/chunks of the columns).
pub fn layer_costs(
    cfg: &ArrayConfig,
    layer: &LayerWork,
    columns: usize,
    engine: EngineKind,
) -> Result<TaskCosts> {
    let (f, bi, bs) = match count(cfg, (layer.m, layer.k, columns), engine) {
        Err(PipelineError::Array(DriveError::Overflow(overflow))) => {
            return Err(PipelineError::Overflow {
                input: format!(
                    "layer {} (M {} x K {}, {columns} stream columns per task) on {}",
                    layer.name,
                    layer.m,
                    layer.k,
                    cfg.tag()
                ),
                overflow,
            })
        }
        counted => counted?,
    };
    let (dx, dw) = split(&bs);
    Ok(TaskCosts {
        forward: of(&f),
        dx,
        dw,
        backward_interleaved: of(&bi),
        backward_sequential: of(&bs),
    })
}

/// Every layer's task costs on every array, counted in parallel:
/// `table[array][layer]` for tasks of `columns(layer)` stream columns.
/// Checked: each cost, and the sum of every cost of every layer on an
/// array, fit in `u64`.
pub fn table(
    arrays: &[ArrayConfig],
    layers: &[LayerWork],
    columns: impl Fn(&LayerWork) -> Result<usize> + Sync,
    engine: EngineKind,
) -> Result<Vec<Vec<TaskCosts>>> {
    table_with_progress(arrays, layers, columns, engine, &|| {})
}

/// The layers [`table`] counts for `arrays`: one per layer and distinct
/// array configuration (the steps `tick` sees in [`table_with_progress`]).
pub fn counted_layers(arrays: &[ArrayConfig], layers: usize) -> usize {
    distinct_arrays(arrays).len() * layers
}

/// [`table`], calling `tick` once per layer counted on a distinct array.
pub fn table_with_progress(
    arrays: &[ArrayConfig],
    layers: &[LayerWork],
    columns: impl Fn(&LayerWork) -> Result<usize> + Sync,
    engine: EngineKind,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Vec<TaskCosts>>> {
    let distinct = distinct_arrays(arrays);
    let per_config: Vec<Vec<TaskCosts>> = distinct
        .par_iter()
        .map(|cfg| {
            let row = layers
                .par_iter()
                .map(|l| {
                    let c = layer_costs(cfg, l, columns(l)?, engine);
                    tick();
                    c
                })
                .collect::<Result<Vec<_>>>()?;
            check_sums(cfg, &row)?;
            Ok(row)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(arrays
        .iter()
        .map(|a| {
            let i = distinct.iter().position(|d| d == a).expect("listed");
            per_config[i].clone()
        })
        .collect())
}

/// Every cycle and MAC of every task of `row` (one array's layers)
/// together: the largest sum any stage, task or schedule forms from them.
pub fn total(row: &[TaskCosts]) -> (Count, Count) {
    let mut sum = (Count::ZERO, Count::ZERO);
    for t in row.iter().flat_map(TaskCosts::all) {
        sum = (sum.0 + t.cycles, sum.1 + t.macs);
    }
    sum
}

fn check_sums(cfg: &ArrayConfig, row: &[TaskCosts]) -> Result<()> {
    let (cycles, macs) = total(row);
    let overflow = |overflow| PipelineError::Overflow {
        input: format!("the layers' tasks together on {}", cfg.tag()),
        overflow,
    };
    cycles.get("the cycles").map_err(overflow)?;
    macs.get("the MACs").map_err(overflow)?;
    Ok(())
}

/// Arrays with the same configuration cost the same: count each once.
fn distinct_arrays(arrays: &[ArrayConfig]) -> Vec<ArrayConfig> {
    let mut out: Vec<ArrayConfig> = Vec::new();
    for a in arrays {
        if !out.contains(a) {
            out.push(*a);
        }
    }
    out
}
