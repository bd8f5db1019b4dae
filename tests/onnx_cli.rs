//! `sysgrad train --onnx` and `--onnx-out` on the command line: a TOML
//! model written out and trained again from its ONNX file starts from the
//! same weights (same results), and misuse is refused naming the option or
//! the file.

use std::path::{Path, PathBuf};

mod common;

fn train(args: &[&str]) -> (bool, String, String) {
    common::sysgrad("train", args)
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx_cli");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const QUICK: [&str; 8] = [
    "--engine",
    "fast",
    "--epochs",
    "1",
    "--max-train",
    "96",
    "--max-test",
    "64",
];

fn accuracy_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("test accuracy"))
        .unwrap_or_else(|| panic!("no accuracy in:\n{stdout}"))
        .to_string()
}

/// The MLP exported by `--onnx-out` (after training) and imported by
/// `--onnx` trains on; the exported file is the imported graph again.
#[test]
fn onnx_out_then_onnx_in() {
    let first = tmp("mlp.onnx");
    let mut args = vec!["--model", "workloads/models/mlp.toml", "--quiet"];
    args.extend(QUICK);
    let out1 = tmp("run1");
    args.extend(["-o", s(&out1), "--onnx-out", s(&first)]);
    let (ok, _, err) = train(&args);
    assert!(ok, "{err}");
    assert!(err.contains(&format!("wrote {}", first.display())), "{err}");

    let second = tmp("mlp2.onnx");
    let out2 = tmp("run2");
    let mut args = vec!["--onnx", s(&first), "--quiet"];
    args.extend(QUICK);
    args.extend(["-o", s(&out2), "--onnx-out", s(&second)]);
    let (ok, stdout, err) = train(&args);
    assert!(ok, "{err}");
    // Named after the file.
    assert!(stdout.starts_with("# mlp on "), "{stdout}");
    let a = std::fs::read(&first).unwrap();
    let b = std::fs::read(&second).unwrap();
    assert_ne!(a, b, "the second run trained further");
    assert!(b.len() == a.len(), "the same graph, new values");
}

/// A model file with `onnx = "FILE"` trains exactly like the TOML model
/// the file was written from, given the same settings: the exported
/// initial weights are on the data grid.
/// One epoch of 64 samples (tested on 64) of `model`, fast, into `out`.
fn one_short_epoch(model: &str, out: &str) -> (bool, String, String) {
    train(&[
        "--model",
        model,
        "--engine",
        "fast",
        "--epochs",
        "1",
        "--max-train",
        "64",
        "--max-test",
        "64",
        "--quiet",
        "-o",
        s(&tmp(out)),
    ])
}

#[test]
fn a_model_file_naming_onnx_trains_like_its_source() {
    let text = std::fs::read_to_string("workloads/models/cnn.toml").unwrap();
    let (ok, base, err) = one_short_epoch("workloads/models/cnn.toml", "cnn_base");
    assert!(ok, "{err}");
    // The shipped example is the trained CNN; its settings file names it.
    let mut spec = String::new();
    let mut in_layers = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_layers = line == "[[layers]]";
        }
        if !in_layers {
            spec += line;
            spec.push('\n');
        }
    }
    let onnx = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/models/cnn.onnx");
    let spec = spec.replace(
        "name = \"cnn\"",
        &format!("name = \"cnn\"\nonnx = {:?}", s(&onnx)),
    );
    let file = tmp("cnn_onnx.toml");
    std::fs::write(&file, spec).unwrap();
    let (ok, trained, err) = one_short_epoch(s(&file), "cnn_from_onnx");
    assert!(ok, "{err}");
    // Starting from the trained weights, one more epoch on 64 samples
    // tests better than the first epoch from scratch.
    let pct = |l: String| -> f64 {
        l.split("fixed point (emulator) ").nth(1).unwrap()[..5]
            .trim_end_matches('%')
            .parse()
            .unwrap()
    };
    assert!(
        pct(accuracy_line(&trained)) > pct(accuracy_line(&base)),
        "{trained}\n{base}"
    );
}

#[test]
fn misuse_is_refused_naming_the_option_or_file() {
    let (ok, _, err) = train(&[
        "--model",
        "workloads/models/mlp.toml",
        "--model",
        "workloads/models/cnn.toml",
        "--onnx-out",
        "x.onnx",
    ]);
    assert!(!ok && err.contains("--onnx-out names one file"), "{err}");
    let (ok, _, err) = train(&["--onnx", "no/such.onnx"]);
    assert!(!ok && err.contains("no/such.onnx"), "{err}");
    let bad = tmp("text.onnx");
    std::fs::write(&bad, "name = \"not protobuf\"").unwrap();
    let (ok, _, err) = train(&["--onnx", s(&bad)]);
    assert!(
        !ok && err.contains(&format!("{}: not an ONNX model", bad.display())),
        "{err}"
    );
    let (ok, _, err) = train(&[
        "--model",
        "workloads/models/snn.toml",
        "--engine",
        "fast",
        "--epochs",
        "1",
        "--max-train",
        "8",
        "--max-test",
        "8",
        "--quiet",
        "-o",
        s(&tmp("snn")),
        "--onnx-out",
        s(&tmp("snn.onnx")),
    ]);
    assert!(!ok && err.contains("no ONNX operator"), "{err}");
}
