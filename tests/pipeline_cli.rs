//! `sysgrad pipeline` refuses bad options with a message naming the
//! option and what is allowed, and writes its reports.

use std::process::Command;

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sysgrad"))
        .arg("pipeline")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
