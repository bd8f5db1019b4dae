//! Issue 28, items 4 to 6, as regression tests of the `sysgrad` program:
//! whole runs (manifests, temporaries swept and removed on signals, `gen`
//! checking its targets first), paths and messages (every I/O error names
//! its path, model names stay names, range errors name file and line, long
//! values are cut) and consistent acceptance. Tool-free: every case fails
//! or finishes before an external tool would start.

use std::path::Path;
use std::process::{Command, Output};

const MLP: &str = "workloads/models/mlp.toml";
const CNN: &str = "workloads/models/cnn.toml";

fn sysgrad(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sysgrad"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// The exit code and stderr of a run that must fail.
fn fails(args: &[&str]) -> (i32, String) {
    let out = sysgrad(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn succeeds(args: &[&str]) -> String {
    let out = sysgrad(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `synth --out FILE`, `formal --out /proc/fo`, `cosim -o FILE` answered
/// "Not a directory (os error 20)" with no path.
#[test]
fn output_folder_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("FILE");
    std::fs::write(&file, "").unwrap();
    for cmd in ["synth", "cosim", "sweep", "gen"] {
        let (code, e) = fails(&[cmd, "-o", s(&file)]);
        assert_eq!(code, 1, "{cmd}");
        assert!(
            e.contains(&format!("{}: is a file, not a folder", file.display())),
            "{cmd}: {e}"
        );
    }
    let under = file.join("sub");
    let (_, e) = fails(&["synth", "--out", s(&under)]);
    assert!(e.contains(&format!("creating {}", under.display())), "{e}");
    let (_, e) = fails(&[
        "formal",
        "-c",
        "configs/formal/accel_1x1.toml",
        "--out",
        "/proc/fo",
    ]);
    assert!(e.contains("creating /proc/fo"), "{e}");
    let model = dir.path().join("m.toml");
    std::fs::write(&model, std::fs::read_to_string(MLP).unwrap()).unwrap();
    let (_, e) = fails(&["train", "--model", s(&model), "-o", s(&file), "--quiet"]);
    assert!(e.contains("is a file, not a folder"), "{e}");
}

/// `gen -o DIR` where `DIR/sa_top.v` is a folder wrote 3 of 9 files and
/// named the folder, not the file.
#[test]
fn gen_checks_every_target_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sa_top.v")).unwrap();
    let (_, e) = fails(&["gen", "-o", s(dir.path())]);
    assert!(
        e.contains(&format!(
            "{} is not a file",
            dir.path().join("sa_top.v").display()
        )),
        "{e}"
    );
    assert_eq!(names(dir.path()), ["sa_top.v"]);
}

/// Every output folder gets a manifest, written last; a run replaces the
/// older run it lists whole, and sweeps the temporaries of killed runs.
#[test]
fn runs_are_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    succeeds(&["gen", "-o", s(out)]);
    let text = std::fs::read_to_string(out.join("MANIFEST.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(m["completed"], true);
    assert_eq!(m["command"][0], "sysgrad");
    assert_eq!(m["command"][1], "gen");
    let files = m["files"].as_array().unwrap();
    for f in files {
        let path = out.join(f["path"].as_str().unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), f["bytes"]);
    }
    assert_eq!(files.len() + 1, names(out).len());
    // An older run's file the new run does not write, a killed run's
    // temporary (its process long gone) and a file of the user's.
    let mut old: serde_json::Value = m.clone();
    old["files"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"path": "old_report.csv", "bytes": 3}));
    std::fs::write(out.join("MANIFEST.json"), old.to_string()).unwrap();
    std::fs::write(out.join("old_report.csv"), "old").unwrap();
    std::fs::write(out.join(".sa_top.v.4294967294.0.tmp"), "half").unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    succeeds(&["gen", "-o", s(out)]);
    let left = names(out);
    assert!(!left.contains(&"old_report.csv".to_string()), "{left:?}");
    assert!(left.iter().all(|n| !n.ends_with(".tmp")), "{left:?}");
    assert!(left.contains(&"notes.txt".to_string()), "{left:?}");
}

/// SIGTERM and SIGINT end a run with 143 and 130 (128 + the signal),
/// leaving no temporary file behind.
#[cfg(unix)]
#[test]
fn signals_leave_no_temporaries() {
    for (signal, code) in [("TERM", 143), ("INT", 130)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let mut child = Command::new(env!("CARGO_BIN_EXE_sysgrad"))
            .args([
                "train", "--model", MLP, "--quiet", "--epochs", "10000", "-o",
            ])
            .arg(&dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .spawn()
            .unwrap();
        // The handler is installed before the output folder is made: wait
        // for the folder (a loaded machine may take a while to start).
        let start = std::time::Instant::now();
        while !dir.exists() && start.elapsed().as_secs() < 120 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        // The shell's built-in `kill`: no program beyond bash, which the
        // tool-free run (scripts/test-without-tools.sh) keeps on PATH.
        let killed = Command::new("bash")
            .args(["-c", &format!("kill -{signal} {}", child.id())])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "SIG{signal}: {status:?}");
        let left = names(&dir);
        assert!(left.iter().all(|n| !n.ends_with(".tmp")), "{left:?}");
        assert!(!left.contains(&"MANIFEST.json".to_string()), "{left:?}");
    }
}

/// A model `name = "../../../../tmp/x"` or an absolute name wrote outside
/// `target/train`.
#[test]
fn model_names_never_escape_the_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(MLP).unwrap();
    for name in ["../../../../tmp/x", "/tmp/x"] {
        let model = dir.path().join("m.toml");
        std::fs::write(
            &model,
            text.replace("name = \"mlp\"", &format!("name = \"{name}\"")),
        )
        .unwrap();
        for cmd in [&["train", "--quiet"][..], &["pipeline"]] {
            let mut args = cmd.to_vec();
            args.extend(["--model", s(&model)]);
            let (_, e) = fails(&args);
            assert!(
                e.contains(&format!("{}: line 2: name = ", model.display()))
                    && e.contains("not a path"),
                "{e}"
            );
        }
    }
}

/// Range errors name the file, the line and the field; over-long values
/// are cut (a 10 MB number was echoed whole).
#[test]
fn messages_name_file_line_and_field_and_stay_short() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("a.toml");
    let small = std::fs::read_to_string("configs/small_4x4.toml").unwrap();
    std::fs::write(&cfg, small.replace("rows = 4", "rows = 0")).unwrap();
    let (_, e) = fails(&["emulate", "-c", s(&cfg)]);
    assert!(
        e.contains(&format!(
            "{}: line 3: array.rows = 0 is out of range",
            cfg.display()
        )),
        "{e}"
    );
    std::fs::write(&cfg, format!("[array]\nrows = {}\n", "9".repeat(10 << 20))).unwrap();
    let (_, e) = fails(&["emulate", "-c", s(&cfg)]);
    assert!(
        e.len() < 4000 && e.contains("more characters"),
        "{}",
        e.len()
    );
    // An argument (the kernel caps one at 128 KiB).
    let long = "9".repeat(100_000);
    let (code, e) = fails(&["emulate", "--m", &long]);
    assert_eq!(code, 2);
    assert!(
        e.len() < 4000 && e.contains("more characters"),
        "{}",
        e.len()
    );
}

/// `cosim --runs 0` printed nothing and exited 0; an SNN with T = 1 was
/// accepted though the docs say T > 1; the `pipeline --help` example
/// (`--model`, default `--arrays 4`) failed on every shipped model.
#[test]
fn acceptance_is_consistent() {
    let (code, e) = fails(&["cosim", "--runs", "0"]);
    assert_eq!(code, 2);
    assert!(e.contains("--runs"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let snn = dir.path().join("snn.toml");
    let text = std::fs::read_to_string("workloads/models/snn.toml").unwrap();
    std::fs::write(&snn, text.replace("time_steps = 16", "time_steps = 1")).unwrap();
    let (_, e) = fails(&["train", "--model", s(&snn), "--quiet"]);
    assert!(e.contains("input.time_steps = 1"), "{e}");
    for model in [MLP, CNN] {
        let out = dir.path().join("p");
        let text = succeeds(&["pipeline", "--model", model, "-o", s(&out)]);
        assert!(text.contains("wrote"), "{text}");
    }
    // More arrays than layers, asked for, is still refused.
    let (_, e) = fails(&["pipeline", "--model", MLP, "--arrays", "4"]);
    assert!(e.contains("arrays = 4 is out of range"), "{e}");
}
