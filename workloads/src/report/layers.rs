//! Per-layer counters of a training run, interleaved next to sequential.

use crate::arith::{Bucket, Ledger};
use crate::model::{LayerSpec, Model};
use serde::Serialize;
use sysgrad_emulator::{Counters, Phase, Stats};

/// The product a layer runs on the array per training step: W is M x K
/// (bias column included), X is K x N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GemmShape {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

/// The GEMM of every layer that has one, for a batch of `batch` samples.
pub fn gemm_shapes(model: &Model, batch: usize) -> Vec<Option<GemmShape>> {
    let cols = batch * model.spec.input.time_steps;
    model
        .spec
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| (l, [model.input_shape(i), model.shapes[i + 1]]))
        .map(|(l, io)| match *l {
            LayerSpec::Dense { units } => Some(GemmShape {
                m: units,
                k: io[0].size() + 1,
                n: cols,
            }),
            LayerSpec::Conv2d {
                filters, kernel, ..
            } => Some(GemmShape {
                m: filters,
                k: io[0].c * kernel * kernel + 1,
                n: cols * io[1].h * io[1].w,
            }),
            _ => None,
        })
        .collect()
}

pub fn layer_name(i: usize, l: &LayerSpec) -> String {
    format!("{i}:{}", l.kind())
}

/// One layer's counters in one epoch.
#[derive(Debug, Clone, Serialize)]
pub struct LayerCounters {
    pub layer: usize,
    pub name: String,
    pub gemm: GemmShape,
    pub forward: Counters,
    pub backward_interleaved: Counters,
    /// `None` when the sequential baseline was not run.
    pub backward_sequential: Option<Counters>,
    pub utilization_forward: f64,
    pub utilization_backward_interleaved: f64,
    pub utilization_backward_sequential: Option<f64>,
    #[serde(skip)]
    pub stats_forward: Stats,
    #[serde(skip)]
    pub stats_backward_interleaved: Stats,
    #[serde(skip)]
    pub stats_backward_sequential: Option<Stats>,
}

impl LayerCounters {
    pub fn training_interleaved(&self) -> Counters {
        let mut c = self.forward;
        c += self.backward_interleaved;
        c
    }
    pub fn training_sequential(&self) -> Option<Counters> {
        self.backward_sequential.map(|b| {
            let mut c = self.forward;
            c += b;
            c
        })
    }
}

/// The counters of every GEMM layer in `ledger` (one epoch).
pub fn layer_counters(model: &Model, ledger: &Ledger) -> Vec<LayerCounters> {
    let pes = model.cfg.rows() * model.cfg.cols();
    let util = |c: &Counters| Stats::utilization(c, pes);
    let shapes = gemm_shapes(model, model.spec.training.batch_size);
    model
        .spec
        .layers
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let gemm = shapes[i]?;
            let fwd = ledger.get(i, Bucket::Forward);
            let bil = ledger.get(i, Bucket::Backward);
            let bseq = ledger.sequential_backward.get(&i).cloned();
            Some(LayerCounters {
                layer: i,
                name: layer_name(i, l),
                gemm,
                forward: fwd.total(),
                backward_interleaved: bil.total(),
                backward_sequential: bseq.as_ref().map(|s| s.total()),
                utilization_forward: util(&fwd.total()),
                utilization_backward_interleaved: util(&bil.total()),
                utilization_backward_sequential: bseq.as_ref().map(|s| util(&s.total())),
                stats_forward: fwd,
                stats_backward_interleaved: bil,
                stats_backward_sequential: bseq,
            })
        })
        .collect()
}

/// One CSV row per layer, schedule, pass and phase (phases that took no
/// cycles are left out), then a total row per pass.
pub fn phase_rows(layers: &[LayerCounters], pes: usize) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for l in layers {
        let mut runs: Vec<(&str, &str, &Stats)> = vec![
            ("interleaved", "forward", &l.stats_forward),
            ("interleaved", "backward", &l.stats_backward_interleaved),
        ];
        if let Some(s) = &l.stats_backward_sequential {
            runs.push(("sequential", "forward", &l.stats_forward));
            runs.push(("sequential", "backward", s));
        }
        for (schedule, pass, st) in runs {
            let phases = st
                .iter()
                .filter(|(_, c)| c.cycles > 0)
                .map(|(p, c)| (p.name(), *c))
                .chain(std::iter::once(("total", st.total())));
            for (phase, c) in phases {
                rows.push(vec![
                    schedule.to_string(),
                    l.layer.to_string(),
                    l.name.clone(),
                    pass.to_string(),
                    phase.to_string(),
                    c.cycles.to_string(),
                    c.macs.to_string(),
                    format!("{:.4}", Stats::utilization(&c, pes)),
                    c.reads().to_string(),
                    c.writes().to_string(),
                    c.accesses().to_string(),
                ]);
            }
        }
    }
    rows
}

pub const PHASE_HEADER: [&str; 11] = [
    "schedule",
    "layer",
    "name",
    "pass",
    "phase",
    "cycles",
    "macs",
    "utilization",
    "reads",
    "writes",
    "accesses",
];

/// Sum of the counters of several layers.
pub fn sum<'a>(cs: impl Iterator<Item = &'a Counters>) -> Counters {
    let mut t = Counters::default();
    for c in cs {
        t += *c;
    }
    t
}

/// Cycles of the streaming phases (the array multiplies), i.e. without
/// weight loads, drains, updates and idle cycles.
pub fn streaming_cycles(s: &Stats) -> u64 {
    [
        Phase::Forward,
        Phase::BackwardDx,
        Phase::BackwardDw,
        Phase::BackwardInterleaved,
    ]
    .iter()
    .map(|p| s.phase(*p).cycles)
    .sum()
}
