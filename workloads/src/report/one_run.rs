//! What `sysgrad train` prints for one run: a trained model's accuracy,
//! cycles and per-layer table, or a SCALE-Sim topology's per-layer cycles.
//! Each report is a head, then the run time (which the caller prints on
//! stdout or stderr), then the tables.

use crate::report::summary::accel_passes;
use crate::report::TrainingSummary;
use crate::scalesim::report::{comparison_markdown, TopologySummary};
use std::fmt::Write;

/// The title, accuracies, losses and cycle totals of a trained model.
pub fn training_head(s: &TrainingSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} on {} ({} train / {} test samples, {} epochs)\n",
        s.model, s.array, s.train_samples, s.test_samples, s.epochs
    );
    let _ = writeln!(
        out,
        "test accuracy: fixed point (emulator) {:.2}%, f32 reference {:.2}% (gap {:+.2} points)",
        100.0 * s.fixed.test_accuracy,
        100.0 * s.float.test_accuracy,
        s.accuracy_gap_points
    );
    let _ = writeln!(
        out,
        "final train loss: fixed {:.4}, f32 {:.4}",
        s.fixed.train_loss, s.float.train_loss
    );
    let _ = writeln!(
        out,
        "array cycles: {} in training, {} in evaluation\n",
        s.all_epochs_training.cycles, s.all_epochs_eval.cycles
    );
    out
}

/// The run times of a trained model (`wall`: the whole run, seconds).
pub fn training_time(s: &TrainingSummary, wall: f64) -> String {
    format!(
        "time: {:.1} s fixed point, {:.2} s f32, {:.1} s wall\n",
        s.fixed_seconds, s.float_seconds, wall
    )
}

/// `a / b`, 0 when `b` is.
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The per-layer table, the whole network, the sparsity, the accelerator's
/// passes and the files written.
pub fn training_tables(s: &TrainingSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "per layer, epoch {} (cycles; ratio = sequential / interleaved):\n",
        s.counters_epoch
    );
    out.push_str("| layer | GEMM MxKxN | forward | backward IL | backward SEQ | bwd ratio | train ratio | accesses ratio | util fwd | util bwd IL | util bwd SEQ |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for l in &s.layers {
        let seq = l.backward_sequential;
        let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "| {} | {}x{}x{} | {} | {} | {} | {} | {} | {} | {:.1}% | {:.1}% | {} |",
            l.name,
            l.gemm.m,
            l.gemm.k,
            l.gemm.n,
            l.forward.cycles,
            l.backward_interleaved.cycles,
            cell(seq.map(|b| b.cycles.to_string())),
            cell(seq.map(|b| format!("{:.2}x", ratio(b.cycles, l.backward_interleaved.cycles)))),
            cell(
                l.training_sequential()
                    .map(|t| format!("{:.2}x", ratio(t.cycles, l.training_interleaved().cycles)))
            ),
            cell(l.training_sequential().map(|t| format!(
                "{:.2}x",
                ratio(t.accesses(), l.training_interleaved().accesses())
            ))),
            100.0 * l.utilization_forward,
            100.0 * l.utilization_backward_interleaved,
            cell(
                l.utilization_backward_sequential
                    .map(|u| format!("{:.1}%", 100.0 * u))
            ),
        );
    }
    if let Some(n) = &s.network {
        let _ = writeln!(
            out,
            "\nwhole network, one epoch: training {} cycles interleaved vs {} sequential ({:.2}x, {:.1}% fewer); backward {:.2}x; buffer accesses {:.2}x fewer",
            n.training_cycles_interleaved,
            n.training_cycles_sequential,
            n.training_cycle_ratio,
            100.0 * (1.0 - 1.0 / n.training_cycle_ratio.max(f64::MIN_POSITIVE)),
            n.backward_cycle_ratio,
            n.training_access_ratio
        );
    }
    out.push_str(&sparsity(s));
    if let Some(acc) = &s.accel {
        let _ = writeln!(out, "\n{}", accel_passes(acc));
    }
    out.push_str(&files(&s.files));
    out
}

/// Spike rates of the LIF layers and operand zeros of the others, if the
/// model has spikes or counted any neuron.
fn sparsity(s: &TrainingSummary) -> String {
    let mut out = String::new();
    if !s
        .activity
        .iter()
        .any(|a| a.spiking_input || a.fixed.neuron_steps > 0)
    {
        return out;
    }
    out.push_str("\nsparsity (fixed point, all epochs):\n");
    for a in &s.activity {
        if a.fixed.neuron_steps > 0 {
            let _ = writeln!(
                out,
                "  {}: spike rate {:.1}% (f32 {:.1}%)",
                a.name,
                100.0 * a.fixed_spike_rate,
                100.0 * a.float_spike_rate
            );
        } else {
            let _ = writeln!(
                out,
                "  {}: input {:.1}% zeros{}, {} of {} forward MACs accumulate-only; dY {:.1}% zeros (f32 {:.1}%)",
                a.name,
                100.0 * a.fixed_input_sparsity,
                if a.spiking_input { " (spikes)" } else { "" },
                a.fixed.accumulate_only_macs,
                a.fixed.macs,
                100.0 * a.fixed_gradient_sparsity,
                100.0 * a.float_gradient_sparsity
            );
        }
    }
    out
}

/// `wrote:` and the files, one a line.
fn files(files: &[std::path::PathBuf]) -> String {
    let mut out = String::from("\nwrote:\n");
    for f in files {
        let _ = writeln!(out, "  {}", f.display());
    }
    out
}

/// The title of a topology run.
pub fn topology_head(s: &TopologySummary) -> String {
    format!(
        "# {} on {} (config {}, dataflow in config: {}), batch {}, dW {}\n\n",
        s.topology, s.array, s.run_name, s.dataflow_in_config, s.batch, s.dw_sink
    )
}

/// The run time of a topology run (`wall`: seconds).
pub fn topology_time(wall: f64) -> String {
    format!("time: {wall:.2} s\n")
}

/// The per-layer cycles of a topology run, the comparison with the
/// sequential baseline and the files written.
pub fn topology_tables(s: &TopologySummary) -> String {
    let mut out = String::new();
    out.push_str("| layer | FC | GEMM MxKxN | forward cycles | training IL | training SEQ | ratio | reduction | util fwd | mapping eff |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for l in &s.layers {
        let (i, q) = (
            l.training_interleaved.total_cycles,
            l.training_sequential.total_cycles,
        );
        let _ = writeln!(
            out,
            "| {} | {} | {}x{}x{} | {} | {} | {} | {:.2}x | {:.1}% | {:.1}% | {:.1}% |",
            l.name,
            if l.fully_connected { "yes" } else { "" },
            l.m,
            l.k,
            l.n,
            l.forward.total_cycles,
            i,
            q,
            q as f64 / i as f64,
            100.0 * (1.0 - i as f64 / q as f64),
            l.forward.overall_util,
            l.forward.mapping_efficiency
        );
    }
    out.push('\n');
    out.push_str(&comparison_markdown(s));
    out.push_str(&files(&s.files));
    out
}
