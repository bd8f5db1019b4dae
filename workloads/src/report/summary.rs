//! The one-row-per-run tables `sysgrad train` prints when it runs several
//! models or topologies: the tables the READMEs quote (each run's full
//! report is still written to its own folder).

use crate::report::accel::{AccelSummary, StepCost};
use crate::report::{ActivityRow, ScheduleComparison, TrainingSummary};
use crate::scalesim::report::{
    Reduction, TopologySummary, PUBLISHED_CNN_CYCLE_REDUCTION, PUBLISHED_FC_ACCESS_RATIO,
    PUBLISHED_FC_CYCLE_RATIO,
};
use std::fmt::Write;
use sysgrad_emulator::fast::EngineKind;

/// A trained model's summary and the seed it ran with.
pub struct ModelRun {
    pub summary: TrainingSummary,
    pub seed: u64,
    /// The array's PEs (for MAC-slot utilization).
    pub pes: usize,
}

/// A Markdown table; columns from `right_from` on are right-aligned.
fn table(header: &[&str], right_from: usize, rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut s = line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    let rule: Vec<&str> = (0..header.len())
        .map(|i| if i < right_from { "---" } else { "---:" })
        .collect();
    s.push_str(&format!("|{}|\n", rule.join("|")));
    for r in rows {
        s.push_str(&line(r));
    }
    s
}

fn percent(fraction: f64) -> String {
    format!("{:.1}%", 100.0 * fraction)
}

fn times(ratio: f64) -> String {
    format!("{ratio:.2}x")
}

/// `lo-hix`, or one value when both round the same.
fn range(lo: f64, hi: f64) -> String {
    let (a, b) = (format!("{lo:.2}"), format!("{hi:.2}"));
    if a == b {
        format!("{a}x")
    } else {
        format!("{a}-{b}x")
    }
}

/// Where the products ran: on the accelerator if the runs were (their
/// summaries say so), else on the array `engine` models.
fn engine_phrase(engine: EngineKind, accelerator: bool) -> &'static str {
    match (accelerator, engine) {
        (true, _) => {
            "on the emulated accelerator through its command stream and DMA: the array's bits, \
             checked every step"
        }
        (false, EngineKind::Cycle) => "clocked cycle by cycle",
        (false, EngineKind::Fast) => "in the fast exact mode: the cycle-accurate bits and counters",
    }
}

fn model_row(run: &ModelRun, wall: Option<f64>) -> Vec<String> {
    let s = &run.summary;
    let ratio = |f: fn(&ScheduleComparison) -> f64| {
        s.network.as_ref().map_or("-".to_string(), |n| times(f(n)))
    };
    let mut row = vec![
        format!("`{}`", s.model),
        s.array.clone(),
        format!("{} / {}", s.train_samples, s.test_samples),
        run.seed.to_string(),
        s.epochs.to_string(),
        percent(s.fixed.test_accuracy),
        percent(s.float.test_accuracy),
        ratio(|n| n.training_cycle_ratio),
        ratio(|n| n.backward_cycle_ratio),
        ratio(|n| n.training_access_ratio),
    ];
    if let Some(w) = wall {
        row.push(format!("{w:.1} s"));
    }
    row
}

/// Input zeros of the layers fed by spikes and spike rates of the LIF
/// layers, or `None` for a model without spikes.
fn spike_activity(s: &TrainingSummary) -> Option<String> {
    let spiking = |a: &&ActivityRow| a.spiking_input;
    let zeros: Vec<String> = s
        .activity
        .iter()
        .filter(spiking)
        .map(|a| format!("{} {}", a.name, percent(a.fixed_input_sparsity)))
        .collect();
    let rates: Vec<String> = s
        .activity
        .iter()
        .filter(|a| a.fixed.neuron_steps > 0)
        .map(|a| format!("{} {}", a.name, percent(a.fixed_spike_rate)))
        .collect();
    (!zeros.is_empty() || !rates.is_empty()).then(|| {
        format!(
            "`{}`, fixed point, all epochs: input zeros (spikes) {}; spike rates {}",
            s.model,
            zeros.join(", "),
            rates.join(", ")
        )
    })
}

/// Test accuracies and schedule ratios of several trained models (their
/// products on the array `engine` models, or on the accelerator), with
/// the run times if `timings`.
pub fn models(runs: &[(ModelRun, f64)], engine: EngineKind, timings: bool) -> String {
    let epoch = runs.first().map_or(1, |(r, _)| r.summary.counters_epoch);
    let accelerator = runs.iter().any(|(r, _)| r.summary.accel.is_some());
    let mut out = format!(
        "**Test accuracy after the last epoch, fixed point (array products {}) vs f32; \
         cycles and buffer accesses of the whole network in epoch {epoch}, \
         sequential / interleaved**\n\n",
        engine_phrase(engine, accelerator)
    );
    let mut header = vec![
        "model",
        "array",
        "train / test",
        "seed",
        "epochs",
        "fixed point",
        "f32",
        "training cycles",
        "backward cycles",
        "buffer accesses",
    ];
    if timings {
        header.push("run time");
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(r, wall)| model_row(r, timings.then_some(*wall)))
        .collect();
    out.push_str(&table(&header, 3, &rows));
    for line in runs.iter().filter_map(|(r, _)| spike_activity(&r.summary)) {
        let _ = write!(out, "\n{line}\n");
    }
    out
}

/// MAC-slot utilization per phase over the whole network in the counted
/// epoch (two slots per PE in the interleaved pass, one otherwise): the
/// forward pass, each backward pass, and the whole interleaved step with
/// its loads, updates and waits.
pub fn utilization(runs: &[(ModelRun, f64)]) -> String {
    use sysgrad_emulator::{Phase, Stats};
    let epoch = runs.first().map_or(1, |(r, _)| r.summary.counters_epoch);
    let mut out = format!("**MAC-slot utilization per phase, whole network, epoch {epoch}**\n\n");
    let header = [
        "model",
        "array",
        "forward",
        "backward interleaved",
        "backward dX (sequential)",
        "backward dW (sequential)",
        "training step (interleaved)",
    ];
    let sum = |pick: &dyn Fn(&crate::report::layers::LayerCounters) -> Option<&Stats>,
               r: &ModelRun| {
        let mut total = Stats::default();
        for l in &r.summary.layers {
            if let Some(st) = pick(l) {
                total += st;
            }
        }
        total
    };
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(r, _)| {
            let fwd = sum(&|l| Some(&l.stats_forward), r);
            let il = sum(&|l| Some(&l.stats_backward_interleaved), r);
            let seq = sum(&|l| l.stats_backward_sequential.as_ref(), r);
            let pct = |st: &Stats, p: Option<Phase>| {
                format!("{:.1}%", 100.0 * st.phase_utilization(p, r.pes))
            };
            let mut step = fwd.clone();
            step += &il;
            vec![
                format!("`{}`", r.summary.model),
                r.summary.array.clone(),
                pct(&fwd, Some(Phase::Forward)),
                pct(&il, Some(Phase::BackwardInterleaved)),
                pct(&seq, Some(Phase::BackwardDx)),
                pct(&seq, Some(Phase::BackwardDw)),
                pct(&step, None),
            ]
        })
        .collect();
    out.push_str(&table(&header, 2, &rows));
    out
}

fn fc_cells(fc: Option<&Reduction>) -> [String; 4] {
    match fc {
        Some(f) => [
            f.layers.to_string(),
            range(
                f.min_layer_backward_cycle_ratio,
                f.max_layer_backward_cycle_ratio,
            ),
            range(f.min_layer_cycle_ratio, f.max_layer_cycle_ratio),
            times(f.training_access_ratio),
        ],
        None => ["0".into(), "-".into(), "-".into(), "-".into()],
    }
}

fn topology_row(s: &TopologySummary) -> Vec<String> {
    let mut row = vec![format!("`{}`", s.topology), s.array.clone()];
    row.extend(fc_cells(s.fully_connected.as_ref()));
    match &s.whole_network {
        Some(w) => {
            row.push(format!(
                "{} fewer ({})",
                percent(w.training_cycle_reduction),
                times(w.training_cycle_ratio)
            ));
            row.push(times(w.training_access_ratio));
        }
        None => row.extend(["-".to_string(), "-".to_string()]),
    }
    row
}

/// The published figures for gradient interleaving, in the columns of
/// [`topologies`], so that a reader can compare.
fn published_row() -> Vec<String> {
    let (lo, hi) = PUBLISHED_FC_CYCLE_RATIO;
    let cycles = format!("{lo:.1}-{hi:.1}x");
    vec![
        "published".into(),
        String::new(),
        String::new(),
        cycles.clone(),
        cycles,
        format!("{PUBLISHED_FC_ACCESS_RATIO:.1}x"),
        format!("up to {:.0}% fewer", 100.0 * PUBLISHED_CNN_CYCLE_REDUCTION),
        "-".into(),
    ]
}

/// Interleaved vs sequential for several topology runs, one row each, and
/// the published figures.
pub fn topologies(runs: &[TopologySummary]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let mut out = format!(
        "**SCALE-Sim topologies, batch {}, dW {}: sequential / interleaved (FC cycles: \
         smallest-largest over the FC layers; accesses: all FC layers)**\n\n",
        first.batch, first.dw_sink
    );
    let header = [
        "topology",
        "array",
        "FC layers",
        "FC backward cycles",
        "FC training cycles",
        "FC accesses",
        "whole network: training cycles",
        "whole network: accesses",
    ];
    let mut rows: Vec<Vec<String>> = runs.iter().map(topology_row).collect();
    rows.push(published_row());
    out.push_str(&table(&header, 2, &rows));
    out
}

fn thousands(v: f64) -> String {
    format!("{:.0}", v)
}

fn step_cells(c: &StepCost) -> Vec<String> {
    vec![
        thousands(c.array_cycles),
        thousands(c.controller_cycles),
        thousands(c.link_cycles),
        thousands(c.total_cycles),
        percent(c.outside_array()),
    ]
}

/// One training step of each model on the accelerator, end to end.
pub fn accel_models(runs: &[(ModelRun, f64)]) -> String {
    let Some(a) = runs.iter().find_map(|(r, _)| r.summary.accel.as_ref()) else {
        return String::new();
    };
    let mut out = format!(
        "**One training step on the accelerator (epoch 1 mean), host link {} bits/cycle, \
         latency {}: cycles of the array, of the controller (decode, REQUANT, ACT), of the host \
         link (DMA and registers), and the share outside the array; sequential / \
         interleaved whole step**\n\n",
        a.link_bits_per_cycle, a.link_latency
    );
    let header = [
        "model",
        "accelerator",
        "steps checked",
        "array",
        "controller",
        "host link",
        "step cycles",
        "outside the array",
        "DMA beats in / out",
        "sequential / interleaved",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|(r, _)| {
            let a = r.summary.accel.as_ref()?;
            let il = &a.step_interleaved;
            let mut row = vec![
                format!("`{}`", r.summary.model),
                a.accelerator.clone(),
                a.steps_checked.to_string(),
            ];
            row.extend(step_cells(il));
            row.push(format!(
                "{} / {}",
                thousands(il.beats_in),
                thousands(il.beats_out)
            ));
            row.push(a.step_sequential.map_or("-".into(), |s| {
                times(s.total_cycles / il.total_cycles.max(1.0))
            }));
            Some(row)
        })
        .collect();
    out.push_str(&table(&header, 2, &rows));
    for (r, _) in runs {
        if let Some(a) = &r.summary.accel {
            let kinds: Vec<String> = a
                .traffic
                .iter()
                .map(|t| format!("{} {}", t.traffic, thousands(t.beats)))
                .collect();
            let _ = write!(
                out,
                "\n`{}`, DMA beats per step: {}\n",
                r.summary.model,
                kinds.join(", ")
            );
            let il = &a.step_interleaved;
            let _ = write!(
                out,
                "\n`{}`, controller cycles per step: {} decode, {} REQUANT, {} ACT\n",
                r.summary.model,
                thousands(il.decode_cycles),
                thousands(il.requant_cycles),
                thousands(il.act_cycles)
            );
            if let Some((p, depth)) = &a.programs {
                out.push_str(&command_memory(&r.summary.model, p, *depth));
            }
        }
        if let Some(plan) = &r.summary.plan {
            out.push_str(&residency(&r.summary.model, plan));
            out.push_str(&conv_lowering(&r.summary.model, plan));
        }
    }
    out
}

/// Whether the step's programs stay in command memory or are sent again.
fn command_memory(model: &str, p: &sysgrad_accel::KeptPrograms, depth: usize) -> String {
    if p.overflows == 0 {
        format!(
            "\n`{model}` command memory: its {} programs kept ({} of {depth} words), each sent once\n",
            p.programs, p.words
        )
    } else {
        format!(
            "\n`{model}` command memory: the programs of a step do not fit its {depth} words \
             together, so they are sent again ({} times command memory was emptied in epoch 1)\n",
            p.overflows
        )
    }
}

/// Which layers keep X and dY on chip for the step, and why the others not.
fn residency(model: &str, plan: &crate::compile::NetworkPlan) -> String {
    let layers: Vec<String> = plan
        .layers
        .iter()
        .filter_map(|l| {
            let g = l.gemm.as_ref()?;
            Some(format!("{} {}", l.name, g.residency.why))
        })
        .collect();
    format!("\n`{model}` on chip: {}\n", layers.join("; "))
}

/// The convolutions' DMA traffic as lowered (on the address generator, or
/// im2col by the host) next to what the other lowering would move.
fn conv_lowering(model: &str, plan: &crate::compile::NetworkPlan) -> String {
    let mut out = String::new();
    for l in &plan.layers {
        let Some(g) = l.gemm.as_ref() else {
            continue;
        };
        let Some(c) = g.conv else {
            continue;
        };
        let (host, generator) = (c.host_im2col_beats, c.controller_im2col_beats);
        let ratio = times(host as f64 / generator.max(1) as f64);
        let _ = if g.residency.window.is_some() {
            write!(
                out,
                "\n`{model}` {}: on the address generator its image and image dX move {generator} \
                 beats per step; im2col on the host would move {host} beats of patches and patch \
                 dX ({ratio} more)\n",
                l.name
            )
        } else {
            write!(
                out,
                "\n`{model}` {}: im2col on the host moves {host} beats of patches and patch dX per \
                 step; on the address generator its image and image dX would move {generator} \
                 ({ratio} fewer)\n",
                l.name
            )
        };
    }
    out
}

/// Per layer and pass on the accelerator (one model's report).
pub fn accel_passes(a: &AccelSummary) -> String {
    let mut out = format!(
        "on the accelerator {} ({} steps checked against the array engine), epoch 1, per layer \
         and pass:\n\n",
        a.accelerator, a.steps_checked
    );
    let header = [
        "layer",
        "pass",
        "array",
        "controller",
        "host link",
        "total",
        "outside the array",
        "buffer words",
        "host words in / out",
        "DMA beats in / out",
    ];
    let rows: Vec<Vec<String>> = a
        .passes
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.pass.to_string(),
                p.array_cycles.to_string(),
                p.controller_cycles.to_string(),
                p.link_cycles.to_string(),
                p.total_cycles.to_string(),
                percent(p.outside_array()),
                p.buffer_words.to_string(),
                format!("{} / {}", p.host_words_in, p.host_words_out),
                format!("{} / {}", p.beats_in, p.beats_out),
            ]
        })
        .collect();
    out.push_str(&table(&header, 2, &rows));
    let step = |c: &StepCost| {
        format!(
            "{} cycles ({} array, {} controller, {} host link; {} outside the array)",
            thousands(c.total_cycles),
            thousands(c.array_cycles),
            thousands(c.controller_cycles),
            thousands(c.link_cycles),
            percent(c.outside_array())
        )
    };
    let _ = write!(
        out,
        "\none step, interleaved: {}",
        step(&a.step_interleaved)
    );
    if let Some(s) = &a.step_sequential {
        let _ = write!(
            out,
            "\n\none step, sequential: {} ({} the interleaved step)",
            step(s),
            times(s.total_cycles / a.step_interleaved.total_cycles.max(1.0))
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_collapse_when_both_ends_round_alike() {
        assert_eq!(range(1.331, 1.334), "1.33x");
        assert_eq!(range(1.60, 1.654), "1.60-1.65x");
    }

    #[test]
    fn tables_align_numbers_right() {
        let t = table(&["a", "b"], 1, &[vec!["x".into(), "1".into()]]);
        assert_eq!(t, "| a | b |\n|---|---:|\n| x | 1 |\n");
    }
}
