//! The files of a pipeline run: the figures as JSON, one CSV row per
//! stage, one per task, and the Gantt chart.

use crate::error::{PipelineError, Result};
use crate::gantt;
use crate::setup::Measured;
use std::fmt::Write;
use std::path::{Path, PathBuf};

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

/// One row per task, in the order they started.
pub fn tasks_csv(m: &Measured) -> String {
    let mut s = String::from("stage,array,kind,micro_batch,chunk,start,finish\n");
    for t in &m.timeline.tasks {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{}",
            t.stage,
            t.array,
            t.kind.name(),
            t.micro,
            t.chunk,
            t.start,
            t.finish
        );
    }
    s
}

/// Writes `<stem>.json`, `<stem>_stages.csv`, `<stem>_tasks.csv` and
/// `<stem>.svg` into `dir`; the paths written.
pub fn write(dir: &Path, m: &Measured, title: &str) -> Result<Vec<PathBuf>> {
    let out_err = |p: &Path, e: &dyn std::fmt::Display| PipelineError::Output {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| out_err(dir, &e))?;
    let stem = stem(m);
    let json = serde_json::to_string_pretty(m).map_err(|e| out_err(dir, &e))?;
    let svg = gantt::svg(&m.timeline, &format!("{title}: {}", m.figures.label), None);
    let files = [
        (format!("{stem}.json"), json),
        (format!("{stem}_stages.csv"), stages_csv(m)),
        (format!("{stem}_tasks.csv"), tasks_csv(m)),
        (format!("{stem}.svg"), svg),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        sysgrad_config::files::write_atomically(&path, text).map_err(|e| out_err(&path, &e))?;
        written.push(path);
    }
    Ok(written)
}
