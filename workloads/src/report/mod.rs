//! The output folder of a training run: CSV and JSON counters per layer and
//! phase (interleaved next to the sequential baseline), training curves,
//! operand sparsity, and SVG plots.

pub mod accel;
pub mod csv;
pub mod layers;
pub mod one_run;
pub mod plots;
pub mod summary;

use crate::arith::{Bucket, Ledger};
use crate::error::{Result, WorkloadError};
use crate::net::Activity;
use crate::train::{EpochRecord, Metrics, TrainRun};
use layers::{layer_counters, LayerCounters};
use serde::Serialize;
use std::path::{Path, PathBuf};
use sysgrad_emulator::Counters;

/// Interleaved vs sequential for a set of layers in one epoch.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ScheduleComparison {
    pub training_cycles_interleaved: u64,
    pub training_cycles_sequential: u64,
    /// sequential / interleaved.
    pub training_cycle_ratio: f64,
    pub backward_cycles_interleaved: u64,
    pub backward_cycles_sequential: u64,
    pub backward_cycle_ratio: f64,
    pub training_accesses_interleaved: u64,
    pub training_accesses_sequential: u64,
    pub training_access_ratio: f64,
    pub backward_accesses_interleaved: u64,
    pub backward_accesses_sequential: u64,
    pub backward_access_ratio: f64,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl ScheduleComparison {
    /// `forward`, interleaved backward and sequential backward counters.
    pub fn new(fwd: &Counters, bil: &Counters, bseq: &Counters) -> Self {
        let (mut til, mut tseq) = (*fwd, *fwd);
        til += *bil;
        tseq += *bseq;
        ScheduleComparison {
            training_cycles_interleaved: til.cycles,
            training_cycles_sequential: tseq.cycles,
            training_cycle_ratio: ratio(tseq.cycles, til.cycles),
            backward_cycles_interleaved: bil.cycles,
            backward_cycles_sequential: bseq.cycles,
            backward_cycle_ratio: ratio(bseq.cycles, bil.cycles),
            training_accesses_interleaved: til.accesses(),
            training_accesses_sequential: tseq.accesses(),
            training_access_ratio: ratio(tseq.accesses(), til.accesses()),
            backward_accesses_interleaved: bil.accesses(),
            backward_accesses_sequential: bseq.accesses(),
            backward_access_ratio: ratio(bseq.accesses(), bil.accesses()),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ActivityRow {
    pub layer: usize,
    pub name: String,
    pub fixed: Activity,
    pub float: Activity,
    pub fixed_input_sparsity: f64,
    pub fixed_gradient_sparsity: f64,
    pub float_gradient_sparsity: f64,
    pub fixed_spike_rate: f64,
    pub float_spike_rate: f64,
    pub spiking_input: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrainingSummary {
    pub model: String,
    pub array: String,
    pub train_samples: usize,
    pub test_samples: usize,
    pub epochs: usize,
    pub fixed: Metrics,
    pub float: Metrics,
    /// f32 test accuracy minus fixed-point test accuracy, in points.
    pub accuracy_gap_points: f64,
    pub fixed_seconds: f64,
    pub float_seconds: f64,
    /// Epoch (1-based) whose counters the per-layer figures are from.
    pub counters_epoch: usize,
    pub layers: Vec<LayerCounters>,
    /// The whole network in that epoch; `None` without the sequential run.
    pub network: Option<ScheduleComparison>,
    /// Interleaved training counters over all epochs (forward + backward),
    /// and the evaluation forward passes.
    pub all_epochs_training: Counters,
    pub all_epochs_eval: Counters,
    pub activity: Vec<ActivityRow>,
    pub curves: Vec<EpochRecord>,
    /// On the accelerator engine: its end-to-end figures and the
    /// compiled network.
    pub accel: Option<accel::AccelSummary>,
    pub plan: Option<crate::compile::NetworkPlan>,
    pub files: Vec<PathBuf>,
}

fn total(ledger: &Ledger, bucket: Bucket) -> Counters {
    let mut c = Counters::default();
    for ((_, b), s) in &ledger.interleaved {
        if *b == bucket {
            c += s.total();
        }
    }
    c
}

fn activity_rows(run: &TrainRun) -> Vec<ActivityRow> {
    let (fx, fl) = run.activity();
    run.model
        .spec
        .layers
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let (a, b) = (fx[i]?, fl[i]?);
            Some(ActivityRow {
                layer: i,
                name: layers::layer_name(i, l),
                fixed_input_sparsity: a.input_sparsity(),
                fixed_gradient_sparsity: a.gradient_sparsity(),
                float_gradient_sparsity: b.gradient_sparsity(),
                fixed_spike_rate: a.spike_rate(),
                float_spike_rate: b.spike_rate(),
                spiking_input: a.spiking_input(),
                fixed: a,
                float: b,
            })
        })
        .collect()
}

/// Builds the summary of a run (no files).
pub fn summarize(run: &TrainRun) -> TrainingSummary {
    let model = &run.model;
    let first = run.ledgers.first().cloned().unwrap_or_default();
    let layers = layer_counters(model, &first);
    let network = (!first.sequential_backward.is_empty()).then(|| {
        let f = layers::sum(layers.iter().map(|l| &l.forward));
        let bi = layers::sum(layers.iter().map(|l| &l.backward_interleaved));
        let bs = layers::sum(layers.iter().filter_map(|l| l.backward_sequential.as_ref()));
        ScheduleComparison::new(&f, &bi, &bs)
    });
    let mut all = Ledger::default();
    for l in &run.ledgers {
        all.add(l);
    }
    let mut training = total(&all, Bucket::Forward);
    training += total(&all, Bucket::Backward);
    let last = run.last();
    TrainingSummary {
        model: model.spec.name.clone(),
        array: model.cfg.tag(),
        train_samples: run.train_size,
        test_samples: run.test_size,
        epochs: run.epochs.len(),
        fixed: last.fixed,
        float: last.float,
        accuracy_gap_points: 100.0 * (last.float.test_accuracy - last.fixed.test_accuracy),
        fixed_seconds: run.epochs.iter().map(|e| e.fixed_seconds).sum(),
        float_seconds: run.epochs.iter().map(|e| e.float_seconds).sum(),
        counters_epoch: 1,
        layers,
        network,
        all_epochs_training: training,
        all_epochs_eval: total(&all, Bucket::Eval),
        activity: activity_rows(run),
        curves: run.epochs.clone(),
        accel: accel_summary(run, &first),
        plan: run.plan.clone(),
        files: Vec::new(),
    }
}

fn accel_summary(run: &TrainRun, first: &Ledger) -> Option<accel::AccelSummary> {
    let opts = run.accelerator?;
    let batch = run
        .model
        .spec
        .training
        .batch_size
        .min(run.train_size)
        .max(1);
    Some(accel::summarize(
        &run.model,
        first,
        (opts.cfg.tag(), opts.link, opts.cfg.buffers().commands),
        run.train_size.div_ceil(batch),
        run.steps_checked,
    ))
}

fn curve_rows(epochs: &[EpochRecord]) -> Vec<Vec<String>> {
    epochs
        .iter()
        .map(|e| {
            let m = |m: &Metrics| {
                vec![
                    format!("{:.5}", m.train_loss),
                    format!("{:.5}", m.train_accuracy),
                    format!("{:.5}", m.test_loss),
                    format!("{:.5}", m.test_accuracy),
                ]
            };
            let mut r = vec![e.epoch.to_string()];
            r.extend(m(&e.fixed));
            r.extend(m(&e.float));
            r.push(format!("{:.3}", e.fixed_seconds));
            r.push(format!("{:.3}", e.float_seconds));
            r
        })
        .collect()
}

fn summary_rows(layers: &[LayerCounters]) -> Vec<Vec<String>> {
    layers
        .iter()
        .map(|l| {
            let seq = l.backward_sequential;
            let cmp = seq.map(|s| ScheduleComparison::new(&l.forward, &l.backward_interleaved, &s));
            let opt = |v: Option<String>| v.unwrap_or_default();
            vec![
                l.layer.to_string(),
                l.name.clone(),
                format!("{}x{}x{}", l.gemm.m, l.gemm.k, l.gemm.n),
                l.forward.cycles.to_string(),
                l.backward_interleaved.cycles.to_string(),
                opt(seq.map(|s| s.cycles.to_string())),
                opt(cmp.map(|c| format!("{:.3}", c.backward_cycle_ratio))),
                opt(cmp.map(|c| format!("{:.3}", c.training_cycle_ratio))),
                l.training_interleaved().accesses().to_string(),
                opt(l.training_sequential().map(|s| s.accesses().to_string())),
                opt(cmp.map(|c| format!("{:.3}", c.training_access_ratio))),
                format!("{:.4}", l.utilization_forward),
                format!("{:.4}", l.utilization_backward_interleaved),
                opt(l.utilization_backward_sequential.map(|u| format!("{u:.4}"))),
            ]
        })
        .collect()
}

const SUMMARY_HEADER: [&str; 14] = [
    "layer",
    "name",
    "gemm_MxKxN",
    "forward_cycles",
    "backward_cycles_interleaved",
    "backward_cycles_sequential",
    "backward_cycle_ratio",
    "training_cycle_ratio",
    "training_accesses_interleaved",
    "training_accesses_sequential",
    "training_access_ratio",
    "utilization_forward",
    "utilization_backward_interleaved",
    "utilization_backward_sequential",
];

fn activity_csv(rows: &[ActivityRow]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            vec![
                r.layer.to_string(),
                r.name.clone(),
                r.spiking_input.to_string(),
                format!("{:.4}", r.fixed_input_sparsity),
                r.fixed.accumulate_only_macs.to_string(),
                r.fixed.zero_operand_macs.to_string(),
                r.fixed.macs.to_string(),
                format!("{:.4}", r.fixed_gradient_sparsity),
                format!("{:.4}", r.float_gradient_sparsity),
                format!("{:.4}", r.fixed_spike_rate),
                format!("{:.4}", r.float_spike_rate),
            ]
        })
        .collect()
}

const ACTIVITY_HEADER: [&str; 11] = [
    "layer",
    "name",
    "spiking_input",
    "input_sparsity",
    "accumulate_only_macs",
    "zero_operand_macs",
    "forward_macs",
    "gradient_sparsity_fixed",
    "gradient_sparsity_f32",
    "spike_rate_fixed",
    "spike_rate_f32",
];

const CLAMPS_HEADER: [&str; 6] = ["epoch", "layer", "quantity", "values", "clamped", "peak"];

/// Every epoch's clamp counts (fixed point; see `arith::tally`): what
/// saturated, where, how often, and the largest magnitude before the clamp.
fn clamp_rows(ledgers: &[Ledger]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (e, l) in ledgers.iter().enumerate() {
        for ((layer, q), c) in &l.clamps {
            rows.push(vec![
                (e + 1).to_string(),
                layer.to_string(),
                q.name().to_string(),
                c.values.to_string(),
                c.clamped.to_string(),
                format!("{:.4}", c.peak),
            ]);
        }
    }
    rows
}

/// Draws a plot into a temporary file and renames it into place, so an
/// interrupted run never leaves a half-written SVG.
fn plot(
    path: &Path,
    draw: impl FnOnce(&Path) -> std::result::Result<(), Box<dyn std::error::Error>>,
) -> Result<()> {
    let tmp = sysgrad_config::files::temp_path_for(path);
    draw(&tmp).map_err(|e| WorkloadError::output(path, e))?;
    sysgrad_config::files::commit_temp(&tmp, path).map_err(|e| WorkloadError::output(path, e))
}

/// Writes every report file into `out` (created if needed).
pub fn write_training_report(run: &TrainRun, out: &Path) -> Result<TrainingSummary> {
    std::fs::create_dir_all(out).map_err(|e| WorkloadError::output(out, e))?;
    let mut s = summarize(run);
    let pes = run.model.cfg.rows() * run.model.cfg.cols();
    let mut files = Vec::new();
    let mut file = |name: &str| {
        let p = out.join(name);
        files.push(p.clone());
        p
    };

    let curves_header = [
        "epoch",
        "fixed_train_loss",
        "fixed_train_accuracy",
        "fixed_test_loss",
        "fixed_test_accuracy",
        "f32_train_loss",
        "f32_train_accuracy",
        "f32_test_loss",
        "f32_test_accuracy",
        "fixed_seconds",
        "f32_seconds",
    ];
    csv::write(
        &file("curves.csv"),
        &curves_header,
        &curve_rows(&run.epochs),
    )?;
    csv::write(
        &file("layer_phases.csv"),
        &layers::PHASE_HEADER,
        &layers::phase_rows(&s.layers, pes),
    )?;
    csv::write(
        &file("layers.csv"),
        &SUMMARY_HEADER,
        &summary_rows(&s.layers),
    )?;
    csv::write(
        &file("activity.csv"),
        &ACTIVITY_HEADER,
        &activity_csv(&s.activity),
    )?;
    csv::write(
        &file("clamps.csv"),
        &CLAMPS_HEADER,
        &clamp_rows(&run.ledgers),
    )?;

    let p = file("curves.svg");
    plot(&p, |t| plots::training_curves(t, &s.model, &run.epochs))?;
    let groups: Vec<plots::BarGroup> = s
        .layers
        .iter()
        .map(|l| plots::BarGroup {
            name: l.name.clone(),
            values: vec![
                Some(l.forward.cycles as f64),
                Some(l.backward_interleaved.cycles as f64),
                l.backward_sequential.map(|b| b.cycles as f64),
            ],
        })
        .collect();
    let series = ["forward", "backward interleaved", "backward sequential"];
    let p = file("layer_cycles.svg");
    plot(&p, |t| {
        plots::grouped_bars(
            t,
            &format!("{}: cycles per layer (epoch 1)", s.model),
            "cycles",
            &series,
            &groups,
        )
    })?;
    let groups: Vec<plots::BarGroup> = s
        .layers
        .iter()
        .map(|l| plots::BarGroup {
            name: l.name.clone(),
            values: vec![
                Some(100.0 * l.utilization_forward),
                Some(100.0 * l.utilization_backward_interleaved),
                l.utilization_backward_sequential.map(|u| 100.0 * u),
            ],
        })
        .collect();
    let p = file("utilization.svg");
    plot(&p, |t| {
        plots::grouped_bars(
            t,
            &format!("{}: utilization (MACs per PE per cycle, epoch 1)", s.model),
            "utilization %",
            &series,
            &groups,
        )
    })?;
    if let Some(a) = &s.accel {
        write_accel_files(a, &mut file)?;
    }
    file("summary.json");
    s.files = files;
    csv::write_json(&out.join("summary.json"), &s)?;
    Ok(s)
}

/// `accel_passes.csv` and `accel_cycles.svg`: per layer and pass, where
/// the cycles of the accelerator went.
fn write_accel_files(
    a: &accel::AccelSummary,
    file: &mut impl FnMut(&str) -> PathBuf,
) -> Result<()> {
    csv::write(
        &file("accel_passes.csv"),
        &accel::PASS_HEADER,
        &accel::pass_rows(a),
    )?;
    let groups: Vec<plots::BarGroup> = a
        .passes
        .iter()
        .map(|p| plots::BarGroup {
            name: format!(
                "{} {}",
                p.name,
                p.pass
                    .replace("backward_interleaved", "bwd IL")
                    .replace("backward_sequential", "bwd SEQ")
                    .replace("forward", "fwd")
            ),
            values: vec![
                Some(p.array_cycles as f64),
                Some(p.controller_cycles as f64),
                Some(p.link_cycles as f64),
            ],
        })
        .collect();
    let p = file("accel_cycles.svg");
    plot(&p, |t| {
        plots::grouped_bars(
            t,
            &format!(
                "{}: accelerator cycles per layer and pass (epoch 1)",
                a.accelerator
            ),
            "cycles",
            &["array", "controller", "host link (DMA)"],
            &groups,
        )
    })
}
