//! The files of a pipeline run: the figures as JSON, one CSV row per
//! stage, one per task, and the Gantt chart; and the Markdown `sysgrad
//! pipeline` prints: the set-up, one run's stages, a comparison of
//! several runs, and training in each schedule's order.

use crate::error::{PipelineError, Result};
use crate::gantt;
use crate::metrics::StageFigures;
use crate::numerics::Trained;
use crate::plan::{Plan, Schedule};
use crate::setup::{Measured, Setup};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use sysgrad_config::Backward;
use sysgrad_emulator::fast::EngineKind;

/// A file-name stem for a run's label (`1f1b sequential M=8 stash` ->
/// `1f1b_sequential_M8_stash`), prefixed with the number of arrays.
pub fn stem(measured: &Measured) -> String {
    let label = measured.figures.label.replace('=', "").replace(' ', "_");
    format!("p{}_{label}", measured.figures.stages)
}

/// One row per stage: the per-array figures.
pub fn stages_csv(m: &Measured) -> String {
    let mut s = String::from(
        "stage,layers,busy_cycles,utilization,mac_utilization,peak_in_flight,weight_copies,weight_memory_words,activation_memory_words,sent_forward_words,sent_backward_words,max_delay,dw_array\n",
    );
    for (st, r) in m.figures.per_stage.iter().zip(&m.partition.stages) {
        let _ = writeln!(
            s,
            "{},{}..{},{},{:.6},{:.6},{},{},{},{},{},{},{},{}",
            st.stage,
            r.start,
            r.end,
            st.busy_cycles,
            st.utilization,
            st.mac_utilization,
            st.peak_in_flight,
            st.weight_copies,
            st.weight_memory_words,
            st.activation_memory_words,
            st.sent_forward_words,
            st.sent_backward_words,
            st.max_delay,
            st.dw_array
        );
    }
    s
}

/// One row per task, in the order they started, written row by row.
fn write_tasks_csv(s: &mut dyn Write, m: &Measured) -> std::fmt::Result {
    writeln!(s, "stage,array,kind,micro_batch,chunk,start,finish")?;
    for t in &m.timeline.tasks {
        writeln!(
            s,
            "{},{},{},{},{},{},{}",
            t.stage,
            t.array,
            t.kind.name(),
            t.micro,
            t.chunk,
            t.start,
            t.finish
        )?;
    }
    Ok(())
}

/// Writes `<stem>.json`, `<stem>_stages.csv`, `<stem>_tasks.csv` and
/// `<stem>.svg` into `dir`; the paths written. Each file is streamed to
/// its temporary and renamed: the per-task files grow with the timeline,
/// which is held once, not again as text.
pub fn write(dir: &Path, m: &Measured, title: &str) -> Result<Vec<PathBuf>> {
    let out_err = |p: &Path, e: &dyn std::fmt::Display| PipelineError::Output {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| out_err(dir, &e))?;
    let stem = stem(m);
    let label = format!("{title}: {}", m.figures.label);
    type Fill<'a> = Box<dyn Fn(&mut dyn std::io::Write) -> std::io::Result<()> + 'a>;
    let files: [(String, Fill); 4] = [
        (
            format!("{stem}.json"),
            Box::new(|out| Ok(serde_json::to_writer_pretty(out, m)?)),
        ),
        (
            format!("{stem}_stages.csv"),
            Box::new(|out| out.write_all(stages_csv(m).as_bytes())),
        ),
        (
            format!("{stem}_tasks.csv"),
            Box::new(|out| as_text(out, |s| write_tasks_csv(s, m))),
        ),
        (
            format!("{stem}.svg"),
            Box::new(|out| as_text(out, |s| gantt::write_svg(s, &m.timeline, &label, None))),
        ),
    ];
    let mut written = Vec::new();
    for (name, fill) in files {
        let path = dir.join(name);
        sysgrad_config::files::write_streamed(&path, fill).map_err(|e| out_err(&path, &e))?;
        written.push(path);
    }
    Ok(written)
}

/// Text written with `std::fmt` into a byte stream, keeping the stream's
/// error (`fmt::Error` carries none).
fn as_text(
    out: &mut dyn std::io::Write,
    text: impl FnOnce(&mut dyn std::fmt::Write) -> std::fmt::Result,
) -> std::io::Result<()> {
    struct Sink<'a> {
        out: &'a mut dyn std::io::Write,
        error: Option<std::io::Error>,
    }
    impl std::fmt::Write for Sink<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.out.write_all(s.as_bytes()).map_err(|e| {
                self.error = Some(e);
                std::fmt::Error
            })
        }
    }
    let mut sink = Sink { out, error: None };
    match (text(&mut sink), sink.error) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(e)) => Err(e),
        (Err(_), None) => Err(std::io::Error::other("formatting failed")),
    }
}

/// The work, the arrays, the link, the clock, the micro-batches and the
/// engine of a set of runs (of `setup`, the first).
pub fn header(setup: &Setup) -> String {
    let system = &setup.system;
    let link = match system.link.width {
        Some(w) => format!("{w} words/cycle, {} cycles latency", system.link.latency),
        None => format!("ideal width, {} cycles latency", system.link.latency),
    };
    let engine = match setup.engine {
        EngineKind::Fast => "fast exact",
        EngineKind::Cycle => "cycle-accurate",
    };
    format!(
        "# {} ({} compute layers, {} time steps) on {}x{} arrays, link {link}, {} MHz\n\n\
         micro-batch: {} samples, {} per mini-batch; task costs counted by the {engine} engine\n\n",
        setup.work.name,
        setup.work.layers.len(),
        setup.work.time_steps,
        system.arrays[0].rows(),
        system.arrays[0].cols(),
        system.clock_mhz,
        setup.micro_batch_size,
        setup.plan.micro_batches,
    )
}

/// One run: its iteration and a row per array.
pub fn one_run(m: &Measured) -> String {
    let f = &m.figures;
    let mut out = format!(
        "{} on {} arrays, partition {:?}\n\n",
        f.label,
        f.stages,
        m.partition.counts()
    );
    let _ = writeln!(
        out,
        "iteration: {:.0} cycles = {:.3} ms at {} MHz, {:.1} samples/s, bubble {:.1}%\n",
        f.iteration_cycles,
        1e3 * f.iteration_seconds,
        f.clock_mhz,
        f.samples_per_second,
        100.0 * f.bubble_fraction
    );
    out.push_str("| array | layers | dW on | busy cycles | utilization | MAC util | in flight | weight copies | weight words | activation words | sent fwd | sent bwd | max delay |\n");
    out.push_str("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (s, r) in f.per_stage.iter().zip(&m.partition.stages) {
        let _ = writeln!(
            out,
            "| {} | {}..{} | {} | {} | {:.1}% | {:.1}% | {} | {} | {} | {} | {} | {} | {} |",
            s.stage,
            r.start,
            r.end,
            s.dw_array,
            s.busy_cycles,
            100.0 * s.utilization,
            100.0 * s.mac_utilization,
            s.peak_in_flight,
            s.weight_copies,
            s.weight_memory_words,
            s.activation_memory_words,
            s.sent_forward_words,
            s.sent_backward_words,
            s.max_delay
        );
    }
    out
}

/// One run's line of the comparison table: what [`comparison`] needs of
/// a run, apart from the run (its timeline and loads), so that `sysgrad
/// merge` can rebuild the table from the rows stored in shard files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub arrays: usize,
    pub schedule: Schedule,
    pub backward: Backward,
    pub label: String,
    pub partition: Vec<usize>,
    pub iteration_cycles: f64,
    pub samples_per_second: f64,
    pub bubble_fraction: f64,
    /// The lowest and highest utilisation of an array.
    pub utilization: (f64, f64),
    pub weight_words_max: u64,
    pub activation_words_max: u64,
    /// Words over every link per iteration.
    pub link_words: u64,
}

impl Row {
    pub fn of(setup: &Setup, m: &Measured) -> Row {
        let f = &m.figures;
        let util = |pick: fn(f64, f64) -> f64, init| {
            f.per_stage.iter().map(|s| s.utilization).fold(init, pick)
        };
        let max = |g: fn(&StageFigures) -> u64| f.per_stage.iter().map(g).max().unwrap_or(0);
        Row {
            arrays: setup.system.arrays.len(),
            schedule: setup.plan.schedule,
            backward: setup.plan.backward,
            label: f.label.clone(),
            partition: m.partition.counts(),
            iteration_cycles: f.iteration_cycles,
            samples_per_second: f.samples_per_second,
            bubble_fraction: f.bubble_fraction,
            utilization: (util(f64::min, f64::INFINITY), util(f64::max, 0.0)),
            weight_words_max: max(|s| s.weight_memory_words),
            activation_words_max: max(|s| s.activation_memory_words),
            link_words: f
                .per_stage
                .iter()
                .map(|s| s.sent_forward_words + s.sent_backward_words)
                .sum(),
        }
    }
}

/// The iteration cycles of the row of `rows` on as many arrays as `of`
/// with `schedule` and `backward`.
fn twin(rows: &[Row], of: &Row, schedule: Schedule, backward: Backward) -> Option<f64> {
    rows.iter()
        .find(|r| r.arrays == of.arrays && r.schedule == schedule && r.backward == backward)
        .map(|r| r.iteration_cycles)
}

/// Several runs, a row each, with each one's speed-up over the first
/// schedule and the gain of interleaving (same schedule and arrays); over
/// several numbers of arrays, each run's mean and largest speed-up.
pub fn comparison(rows: &[Row]) -> String {
    let Some(first) = rows.first() else {
        return String::new();
    };
    let first = first.schedule;
    let mut out = format!(
        "speed-up = iteration cycles of {} (same arrays, same backward) / this run's; IL gain = sequential / interleaved iteration (same schedule and arrays)\n\n",
        first.name()
    );
    out.push_str("| arrays | schedule | partition | iteration cycles | samples/s | bubble | util min..max | weight words max | activation words max | link words/iter | speed-up | IL gain |\n");
    out.push_str("|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let gain = |t: f64| format!("{:.3}x", t / r.iteration_cycles);
        let speedup = twin(rows, r, first, r.backward).map_or("-".into(), gain);
        let il = match r.backward {
            Backward::Interleaved => {
                twin(rows, r, r.schedule, Backward::Sequential).map_or("-".into(), gain)
            }
            Backward::Sequential => "-".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:?} | {:.0} | {:.1} | {:.1}% | {:.0}%..{:.0}% | {} | {} | {} | {} | {} |",
            r.arrays,
            r.label,
            r.partition,
            r.iteration_cycles,
            r.samples_per_second,
            100.0 * r.bubble_fraction,
            100.0 * r.utilization.0,
            100.0 * r.utilization.1,
            r.weight_words_max,
            r.activation_words_max,
            r.link_words,
            speedup,
            il
        );
    }
    out.push_str(&mean_speedups(rows, first));
    out
}

/// Over two or more numbers of arrays: each run's speed-up over `first`
/// (the arithmetic mean over the numbers of arrays, as the papers
/// average, and the largest), one line per run label.
fn mean_speedups(rows: &[Row], first: Schedule) -> String {
    let mut arrays: Vec<usize> = rows.iter().map(|r| r.arrays).collect();
    arrays.sort_unstable();
    arrays.dedup();
    if arrays.len() < 2 {
        return String::new();
    }
    let mut labels: Vec<&str> = Vec::new();
    for r in rows {
        if r.schedule != first && !labels.contains(&r.label.as_str()) {
            labels.push(&r.label);
        }
    }
    if labels.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nspeed-up over {} on {} arrays (mean over the numbers of arrays):\n\n| schedule | mean speed-up | largest | on arrays |\n|---|---:|---:|---:|\n",
        first.name(),
        arrays
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    for label in labels {
        let gains: Vec<(f64, usize)> = rows
            .iter()
            .filter(|r| r.label == label)
            .filter_map(|r| {
                twin(rows, r, first, r.backward).map(|t| (t / r.iteration_cycles, r.arrays))
            })
            .collect();
        // The largest, on the fewest arrays among equals.
        let best = gains
            .iter()
            .copied()
            .reduce(|b, g| if g.0 > b.0 { g } else { b });
        let Some((best, at)) = best else {
            continue;
        };
        let mean = gains.iter().map(|g| g.0).sum::<f64>() / gains.len() as f64;
        let _ = writeln!(out, "| {label} | {mean:.3}x | {best:.3}x | {at} |");
    }
    out
}

/// The heading and header of the table of [`training_row`]s.
pub const TRAINING_HEAD: &str = "\ntraining in each schedule's order (fixed point, fast exact arrays), against synchronous training with the same seed and samples per weight step:\n\n\
    | arrays | schedule | samples per step | epochs | test accuracy | synchronous | difference (points) | bit-identical |\n\
    |---:|---|---:|---:|---:|---:|---:|---|\n";

/// A model trained in `plan`'s order on `arrays` arrays, next to
/// synchronous training.
pub fn training_row(arrays: usize, plan: &Plan, res: &Trained) -> String {
    let Some(last) = res.epochs.last() else {
        return format!("| {arrays} | {} | - | 0 | - | - | - | - |\n", plan.label());
    };
    let sync = last.reference_test_accuracy.unwrap_or(f64::NAN);
    let same = res.reference_layers.as_ref().is_some_and(|l| {
        l.iter()
            .filter_map(|x| x.weights())
            .eq(res.layers.iter().filter_map(|x| x.weights()))
    });
    format!(
        "| {arrays} | {} | {} | {} | {:.2}% | {:.2}% | {:+.2} | {} |\n",
        plan.label(),
        res.update_batch,
        res.epochs.len(),
        100.0 * last.test_accuracy,
        100.0 * sync,
        100.0 * (last.test_accuracy - sync),
        if same { "yes" } else { "no" }
    )
}
