//! `sysgrad pipeline` refuses bad options with a message naming the
//! option and what is allowed, and writes its reports.

use std::process::Command;

mod common;

fn run(args: &[&str]) -> (bool, String, String) {
    common::sysgrad("pipeline", args)
}

const MLP: &str = "workloads/models/mlp.toml";
const SMALL: &str = "configs/small_4x4.toml";

/// The exit codes of docs/CLI.md: 2 for a command line clap refuses, 1
/// for a run that fails.
#[test]
fn exit_codes_tell_usage_from_failure() {
    let code = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sysgrad"))
            .arg("pipeline")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(&["--model", MLP, "--schedule", "pipedream"]), Some(2));
    assert_eq!(code(&["--model", MLP, "--arrays", "3"]), Some(1));
    assert_eq!(code(&["--help"]), Some(0));
}

#[test]
fn bad_options_are_named() {
    for (args, expect) in [
        (
            vec!["--model", MLP, "--schedule", "pipedream"],
            "invalid value 'pipedream' for '--schedule",
        ),
        (vec!["--model", MLP, "--arrays", "3"], "1..=2"),
        (vec!["--model", MLP, "--arrays", "9-2"], "--arrays"),
        (vec!["--model", MLP, "--arrays", "65"], "1..=64"),
        (
            vec!["--model", MLP, "--microbatches", "5"],
            "divisor of the model's batch size 32",
        ),
        (
            vec!["--model", MLP, "--arrays", "2", "--partition", "1,2"],
            "exactly the 2 compute layers",
        ),
        (
            vec!["--model", MLP, "--arrays", "2", "--partition", "2"],
            "one count per array",
        ),
        (
            vec!["--model", MLP, "--backward", "both-ways"],
            "--backward",
        ),
        (
            vec!["--model", MLP, "--schedule", "1f1b", "--weights", "old"],
            "[possible values: stash, latest, ema]",
        ),
        (
            vec![
                "--model",
                MLP,
                "--link-width",
                "0",
                "--schedule",
                "spikepipe",
                "--chunks",
                "3",
            ],
            "time chunks",
        ),
        (vec!["--model", MLP, "--time-steps", "4"], "--topology"),
        (vec!["--model", "/nonexistent.toml"], "nonexistent"),
        (
            vec!["--model", MLP, "-c", SMALL, "-c", SMALL, "-c", SMALL],
            "-c/--config given 3 times",
        ),
    ] {
        let (ok, _, err) = run(&args);
        assert!(!ok, "{args:?} succeeded");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}

#[test]
fn writes_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let (ok, stdout, err) = run(&[
        "--model",
        MLP,
        "--arrays",
        "2",
        "--schedule",
        "gpipe",
        "--backward",
        "sequential",
        "--quiet",
        "-o",
        out,
    ]);
    assert!(ok, "{err}");
    assert!(stdout.contains("bubble"), "{stdout}");
    for f in [
        "p2_gpipe_sequential_M4.json",
        "p2_gpipe_sequential_M4.svg",
        "p2_gpipe_sequential_M4_stages.csv",
        "p2_gpipe_sequential_M4_tasks.csv",
    ] {
        assert!(dir.path().join(f).exists(), "{f}");
    }
    let svg = std::fs::read_to_string(dir.path().join("p2_gpipe_sequential_M4.svg")).unwrap();
    assert_eq!(
        svg.matches("<rect").count() - 4,
        2 * 2 * 3 * 4,
        "one bar per task (2 arrays, F and backward, 3 mini-batches of 4)"
    );
}

/// Issue 29: an option that does not apply to the run is a usage error
/// (exit 2) naming the option and what it needs, before anything is
/// written; out-of-range numbers say their range.
#[test]
fn options_that_do_not_apply_are_refused_before_any_file() {
    for (args, expect) in [
        (
            vec!["--schedule", "spikepipe"],
            "--schedule spikepipe needs a spiking network",
        ),
        (
            vec!["--schedule", "gpipe", "--weights", "ema"],
            "--weights ema is for the asynchronous schedules",
        ),
        (
            vec!["--schedule", "zb,1f1b-flush", "--weights", "stash"],
            "is synchronous",
        ),
        (
            vec!["--schedule", "1f1b", "--chunks", "4"],
            "--chunks (time chunks per micro-batch) is for --schedule spikepipe",
        ),
        (
            vec!["--train", "--epochs", "0"],
            "--epochs 0 is out of range (allowed: 1 or more)",
        ),
        (
            vec!["--train", "--max-train", "0"],
            "--max-train 0 is out of range (allowed: 1 or more)",
        ),
        (
            vec!["--train", "--max-test", "0"],
            "--max-test 0 is out of range",
        ),
        (vec!["--epochs", "2"], "--epochs is for --train"),
        (vec!["--ema-shift", "64"], "64 is not in 0..=61"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut all = vec!["--model", MLP, "--quiet", "-o", out.to_str().unwrap()];
        all.extend(&args);
        let o = Command::new(env!("CARGO_BIN_EXE_sysgrad"))
            .arg("pipeline")
            .args(&all)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
        assert!(o.stdout.is_empty(), "{args:?} printed a table");
    }
}

/// The largest link latency is refused as an overflow (checked
/// arithmetic), never wrapped to a zero-latency result.
#[test]
fn the_largest_link_latency_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (ok, stdout, err) = run(&[
        "--model",
        MLP,
        "--link-latency",
        "18446744073709551615",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(err.contains("exceed 2^64 - 1"), "{err}");
    assert!(stdout.is_empty() && !out.exists(), "{stdout}");
}

/// `--schedule all` on a network that does not spike runs every schedule
/// but the two SpikePipes (1f1b-flush among them).
#[test]
fn all_schedules_of_a_non_spiking_model() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let (ok, stdout, err) = run(&[
        "--model",
        MLP,
        "--arrays",
        "2",
        "--schedule",
        "all",
        "--backward",
        "sequential",
        "--quiet",
        "-o",
        out,
    ]);
    assert!(ok, "{err}");
    assert!(stdout.contains("| 1f1b-flush sequential M=4 |"), "{stdout}");
    assert!(!stdout.contains("spikepipe"), "{stdout}");
}
