//! End-to-end figures of training on the accelerator: per layer and pass,
//! the array's cycles, the controller's (decode, REQUANT, ACT, waits), the host
//! link's (DMA transfers and register accesses), buffer and host traffic,
//! interleaved next to the sequential baseline, and the share of a step
//! spent outside the array.

use crate::arith::{AccelCost, Bucket, Ledger};
use crate::model::Model;
use crate::report::layers::{gemm_shapes, layer_name};
use serde::Serialize;
use sysgrad_accel::Traffic;

/// One layer's pass on the accelerator, over one epoch.
#[derive(Debug, Clone, Serialize)]
pub struct PassCost {
    pub layer: usize,
    pub name: String,
    /// `forward`, `backward_interleaved` or `backward_sequential`.
    pub pass: &'static str,
    pub array_cycles: u64,
    pub controller_cycles: u64,
    /// The controller's own counters (none: they sum to its cycles;
    /// dense: decode overlaps the array).
    pub decode_cycles: u64,
    pub requant_cycles: u64,
    pub act_cycles: u64,
    pub link_cycles: u64,
    pub total_cycles: u64,
    /// Words moved between the array and the buffers (controller side).
    pub buffer_words: u64,
    pub host_words_in: u64,
    pub host_words_out: u64,
    pub beats_in: u64,
    pub beats_out: u64,
    pub transfers: u64,
    pub runs: u64,
}

impl PassCost {
    fn new(layer: usize, name: &str, pass: &'static str, c: &AccelCost) -> Self {
        let (i, o) = (c.host.total(true), c.host.total(false));
        PassCost {
            layer,
            name: name.to_string(),
            pass,
            array_cycles: c.array_cycles(),
            controller_cycles: c.controller_cycles(),
            decode_cycles: c.decode_cycles,
            requant_cycles: c.requant_cycles,
            act_cycles: c.act_cycles,
            link_cycles: c.host.link_cycles(),
            total_cycles: c.total_cycles(),
            buffer_words: c.array.total().accesses(),
            host_words_in: i.words,
            host_words_out: o.words,
            beats_in: i.beats,
            beats_out: o.beats,
            transfers: i.transfers + o.transfers,
            runs: c.host.runs,
        }
    }
    /// Fraction of the pass's cycles in which the array does nothing.
    pub fn outside_array(&self) -> f64 {
        1.0 - self.array_cycles as f64 / self.total_cycles.max(1) as f64
    }
}

/// One training step of the whole network (epoch totals / steps).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct StepCost {
    pub array_cycles: f64,
    pub controller_cycles: f64,
    pub decode_cycles: f64,
    pub requant_cycles: f64,
    pub act_cycles: f64,
    pub link_cycles: f64,
    pub total_cycles: f64,
    pub beats_in: f64,
    pub beats_out: f64,
}

impl StepCost {
    fn add(&mut self, p: &PassCost, steps: f64) {
        self.array_cycles += p.array_cycles as f64 / steps;
        self.controller_cycles += p.controller_cycles as f64 / steps;
        self.decode_cycles += p.decode_cycles as f64 / steps;
        self.requant_cycles += p.requant_cycles as f64 / steps;
        self.act_cycles += p.act_cycles as f64 / steps;
        self.link_cycles += p.link_cycles as f64 / steps;
        self.total_cycles += p.total_cycles as f64 / steps;
        self.beats_in += p.beats_in as f64 / steps;
        self.beats_out += p.beats_out as f64 / steps;
    }
    pub fn outside_array(&self) -> f64 {
        1.0 - self.array_cycles / self.total_cycles.max(1.0)
    }
}

/// Host traffic of one kind, per step.
#[derive(Debug, Clone, Serialize)]
pub struct TrafficRow {
    pub traffic: &'static str,
    pub words: f64,
    pub beats: f64,
    pub cycles: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AccelSummary {
    pub accelerator: String,
    pub link_bits_per_cycle: u32,
    pub link_latency: u32,
    /// Steps whose weights were checked against the array engine.
    pub steps_checked: usize,
    pub steps_per_epoch: usize,
    pub passes: Vec<PassCost>,
    pub step_interleaved: StepCost,
    /// `None` without the sequential baseline.
    pub step_sequential: Option<StepCost>,
    /// Interleaved training traffic per step, by kind.
    pub traffic: Vec<TrafficRow>,
    /// The programs kept in command memory after epoch 1, and its depth.
    pub programs: Option<(sysgrad_accel::KeptPrograms, usize)>,
}

/// The figures of `ledger` (the first epoch) for `model`.
pub fn summarize(
    model: &Model,
    ledger: &Ledger,
    (accelerator, link, depth): (String, sysgrad_accel::HostLink, usize),
    steps_per_epoch: usize,
    steps_checked: usize,
) -> AccelSummary {
    let steps = steps_per_epoch.max(1) as f64;
    let mut passes = Vec::new();
    let (mut il, mut seq) = (StepCost::default(), StepCost::default());
    let mut traffic = sysgrad_accel::HostCounters::default();
    let shapes = gemm_shapes(model, model.spec.training.batch_size);
    for (i, spec) in model.spec.layers.iter().enumerate() {
        if shapes[i].is_none() {
            continue;
        }
        let name = layer_name(i, spec);
        let fwd = ledger.accel_cost(i, Bucket::Forward);
        let bwd = ledger.accel_cost(i, Bucket::Backward);
        traffic += &fwd.host;
        traffic += &bwd.host;
        let f = PassCost::new(i, &name, "forward", &fwd);
        let b = PassCost::new(i, &name, "backward_interleaved", &bwd);
        il.add(&f, steps);
        il.add(&b, steps);
        seq.add(&f, steps);
        passes.push(f);
        passes.push(b);
        if let Some(s) = ledger.accel_sequential_backward.get(&i) {
            let s = PassCost::new(i, &name, "backward_sequential", s);
            seq.add(&s, steps);
            passes.push(s);
        }
    }
    let traffic = Traffic::ALL
        .iter()
        .map(|&t| {
            let f = traffic.flow(t);
            TrafficRow {
                traffic: t.name(),
                words: f.words as f64 / steps,
                beats: f.beats as f64 / steps,
                cycles: f.cycles as f64 / steps,
            }
        })
        .filter(|r| r.beats > 0.0)
        .collect();
    AccelSummary {
        accelerator,
        link_bits_per_cycle: link.bits_per_cycle,
        link_latency: link.latency,
        steps_checked,
        steps_per_epoch,
        passes,
        step_interleaved: il,
        step_sequential: (!ledger.accel_sequential_backward.is_empty()).then_some(seq),
        traffic,
        programs: ledger.programs.clone().map(|p| (p, depth)),
    }
}

pub const PASS_HEADER: [&str; 16] = [
    "layer",
    "name",
    "pass",
    "array_cycles",
    "controller_cycles",
    "link_cycles",
    "total_cycles",
    "outside_array",
    "buffer_words",
    "host_words_in",
    "host_words_out",
    "beats_in",
    "beats_out",
    "transfers",
    "runs",
    "steps",
];

pub fn pass_rows(s: &AccelSummary) -> Vec<Vec<String>> {
    s.passes
        .iter()
        .map(|p| {
            vec![
                p.layer.to_string(),
                p.name.clone(),
                p.pass.to_string(),
                p.array_cycles.to_string(),
                p.controller_cycles.to_string(),
                p.link_cycles.to_string(),
                p.total_cycles.to_string(),
                format!("{:.4}", p.outside_array()),
                p.buffer_words.to_string(),
                p.host_words_in.to_string(),
                p.host_words_out.to_string(),
                p.beats_in.to_string(),
                p.beats_out.to_string(),
                p.transfers.to_string(),
                p.runs.to_string(),
                s.steps_per_epoch.to_string(),
            ]
        })
        .collect()
}
