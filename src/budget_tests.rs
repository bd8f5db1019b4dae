//! The runs of issue 28 that needed more memory or time than a machine
//! has: each is refused by its estimate, before anything is allocated (so
//! each test takes milliseconds), with the estimate and the knob.

use crate::cli::{Cli, Cmd};
use crate::run;
use clap::Parser;
use std::path::Path;

/// Runs a command line; its error with every cause.
fn refusal(args: &[&str]) -> String {
    let cmd: Cmd = Cli::try_parse_from(std::iter::once("sysgrad").chain(args.iter().copied()))
        .map(|c| c.cmd)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let start = std::time::Instant::now();
    let e = format!("{:#}", run(cmd).expect_err("refused"));
    // Refused before allocating: nothing near the estimate was computed.
    assert!(
        start.elapsed().as_secs() < 30,
        "{args:?} took {:?}",
        start.elapsed()
    );
    e
}

/// The refusal names the memory estimate and the flag that raises it.
fn over_memory(args: &[&str]) -> String {
    let e = refusal(args);
    assert!(
        e.contains("would need about") && e.contains("--max-memory"),
        "{args:?}: {e}"
    );
    e
}

/// The refusal names the time estimate and the flag that raises it.
fn over_time(args: &[&str]) -> String {
    let e = refusal(args);
    assert!(
        e.contains("would take about") && e.contains("--max-time"),
        "{args:?}: {e}"
    );
    e
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

const CFG: &str = "workloads/topologies/sysgrad_16x16.cfg";

#[test]
fn emulate_of_a_layer_larger_than_memory_is_refused() {
    // Tried to allocate 80 GB and aborted.
    let e = over_memory(&["emulate", "--m", "100000", "--k", "100000", "--n", "1"]);
    assert!(e.contains("M=100000 K=100000 N=1"), "{e}");
    // Passed 4 GB in 13 s.
    over_memory(&["emulate", "--m", "30000", "--k", "30000", "--n", "1"]);
    // Panicked in ndarray ("Shape too large").
    let huge = "4294967296";
    over_memory(&["emulate", "--m", huge, "--k", huge, "--n", huge]);
}

#[test]
fn the_budget_is_a_knob() {
    let args = ["emulate", "--m", "30000", "--k", "30000", "--n", "1"];
    let mut more = args.to_vec();
    more.extend(["--max-memory", "100G", "--max-time", "1s"]);
    // Enough memory now; the time is the limit.
    over_time(&more);
    let mut less = vec!["emulate", "--max-memory", "1M"];
    less.extend(["--m", "1024", "--k", "1024", "--n", "1"]);
    over_memory(&less);
}

#[test]
fn a_spikepipe_timeline_of_billions_of_steps_is_refused() {
    // Allocated 96 GB.
    over_memory(&[
        "pipeline",
        "--topology",
        "workloads/topologies/resnet18.csv",
        "--scalesim-config",
        CFG,
        "--time-steps",
        "4000000000",
        "--schedule",
        "spikepipe",
        "--quiet",
    ]);
}

#[test]
fn topologies_too_large_to_count_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let head = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n";
    // A depthwise row of 1,000,000 channels (a million layers; 100,000
    // channels took 2.3 GB of memory) is refused where the file is read,
    // past the channel bound; below it, the row's layers count against the
    // memory budget.
    let row = |c: usize| format!("{head}DP1, 16, 16, 3, 3, {c}, 1, 1,\n");
    let dw = write(dir.path(), "dw.csv", &row(1_000_000));
    let e = refusal(&[
        "train",
        "--topology",
        &dw,
        "--scalesim-config",
        CFG,
        "-o",
        out,
    ]);
    assert!(e.contains("line 2") && e.contains("at most 65536"), "{e}");
    let dw = write(dir.path(), "dw_max.csv", &row(65_536));
    let e = over_memory(&[
        "train",
        "--topology",
        &dw,
        "--scalesim-config",
        CFG,
        "--max-memory",
        "10M",
        "-o",
        out,
    ]);
    assert!(e.contains("65536 layers"), "{e}");
    // A GEMM row of 10^8 cubed printed nothing for minutes.
    let fc = write(
        dir.path(),
        "fc.csv",
        "Layer, M, N, K,\nFC, 100000000, 100000000, 100000000,\n",
    );
    over_time(&[
        "train",
        "--topology",
        &fc,
        "--scalesim-config",
        CFG,
        "-o",
        out,
    ]);
    over_time(&[
        "pipeline",
        "--topology",
        &fc,
        "--scalesim-config",
        CFG,
        "--quiet",
        "-o",
        out,
    ]);
    // A huge batch stepped cycle by cycle (the ledger's counts do not grow
    // with the batch; their arithmetic is checked where they are counted).
    let big_batch = [
        "train",
        "--topology",
        "workloads/topologies/resnet18.csv",
        "--scalesim-config",
        CFG,
        "--exact",
        "--batch",
        "1000000000",
        "-o",
        out,
    ];
    over_memory(&big_batch);
}

#[test]
fn a_sweep_over_a_layer_of_years_is_refused() {
    // Printed nothing for minutes.
    let e = over_time(&[
        "sweep",
        "--sizes",
        "4x4",
        "--layers",
        "fc1:100000000x100000000x100000000",
        "-o",
        "target/unused",
    ]);
    assert!(e.contains("years"), "{e}");
}

#[test]
fn a_model_of_thousands_of_wide_layers_is_refused() {
    // 2,000 dense layers of 4,096 units, every field in range: passed 4 GB.
    let mlp = std::fs::read_to_string("workloads/models/mlp.toml").unwrap();
    let (head, rest) = mlp.split_once("[[layers]]").unwrap();
    let optimizer = &rest[rest.find("[optimizer]").unwrap()..];
    let wide = "[[layers]]\ntype = \"dense\"\nunits = 4096\n\n".repeat(2000);
    let text = format!(
        "{head}[[layers]]\ntype = \"flatten\"\n\n{wide}[[layers]]\ntype = \"dense\"\nunits = 10\n\n{optimizer}"
    )
    .replace("name = \"mlp\"", "name = \"deep\"");
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "deep.toml", &text);
    let out = dir.path().join("out");
    let e = over_memory(&[
        "train",
        "--model",
        &model,
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(e.contains("2002 layers"), "{e}");
}

#[test]
fn a_formal_depth_beyond_the_budget_is_refused_with_the_deepest_within() {
    // Ran without end.
    let e = over_time(&[
        "formal",
        "-c",
        "configs/formal/accel_1x1.toml",
        "--depth",
        "4294967295",
        "-o",
        "target/unused",
    ]);
    let deepest = sysgrad_synth::formal::max_depth(3600.0);
    assert!(
        e.contains(&format!(
            "deepest check within --max-time is about {deepest}"
        )),
        "{e}"
    );
}

/// Issue 28's remainder: the co-simulation, the accelerator's programs
/// and the RTL training replay are estimated too.
#[test]
fn cosim_of_the_largest_array_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = std::fs::read_to_string("configs/default.toml")
        .unwrap()
        .replace("rows = 16", "rows = 256")
        .replace("cols = 16", "cols = 256");
    let cfg = write(dir.path(), "big.toml", &big);
    let work = dir.path().join("work");
    let e = over_memory(&["cosim", "-c", &cfg, "-o", work.to_str().unwrap()]);
    assert!(e.contains("sa_256x256"), "{e}");
    // Refused before the working folder was made.
    assert!(!work.exists());
    let e = over_time(&[
        "cosim",
        "-c",
        "configs/small_4x4.toml",
        "--runs",
        "100000000",
        "-o",
        work.to_str().unwrap(),
    ]);
    assert!(e.contains("100000000 co-simulation run(s)"), "{e}");
}

#[test]
fn a_program_of_long_passes_on_a_large_array_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = std::fs::read_to_string("configs/default.toml")
        .unwrap()
        .replace("rows = 16", "rows = 256")
        .replace("cols = 16", "cols = 256")
        + "\n[buffers]\nactivations = 65536\naccumulators = 65536\n";
    let cfg = write(dir.path(), "big.toml", &big);
    let text = "FORWARD x=0 y=0 n=65535 acc=0\n".repeat(1000) + "HALT\n";
    let program = write(dir.path(), "long.s", &text);
    let e = over_time(&["program", "-c", &cfg, "--program", &program]);
    assert!(e.contains("the program of 1001 words"), "{e}");
}

#[test]
fn an_rtl_training_replay_is_estimated_with_its_recording() {
    let e = over_memory(&[
        "train",
        "--model",
        "workloads/models/cnn.toml",
        "--engine",
        "rtl",
        "--steps",
        "40",
        "--max-memory",
        "100M",
    ]);
    assert!(e.contains("40 recorded training step(s) of cnn"), "{e}");
}

#[test]
fn pipeline_training_is_estimated() {
    let dir = tempfile::tempdir().unwrap();
    let e = over_time(&[
        "pipeline",
        "--model",
        "workloads/models/mlp.toml",
        "--train",
        "--epochs",
        "10000",
        "--max-time",
        "30s",
        "--quiet",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert!(e.contains("training mlp in the order of"), "{e}");
}
