//! The independent check of ONNX in and out (issue 30 item 5): models built
//! by the `onnx` Python package and run by onnxruntime, code that shares
//! nothing with sysgrad. Needs the virtualenv of `scripts/setup-onnx.sh`
//! (`SYSGRAD_ONNX_VENV`, default `target/onnx-venv`); without it these
//! tests fail, saying so.
//!
//! * (a) sysgrad's f32 forward of an imported model equals onnxruntime's
//!   within 1e-5 of the sample's largest output.
//! * (b) after a short training, the exported fixed-point model in
//!   onnxruntime gives sysgrad's fixed-point outputs within a bound
//!   computed from the weights (rounding only), so the same class wherever
//!   the margin exceeds it; the exported f32 reference gives the f32
//!   reference's outputs within 1e-5.
//! * (c) onnxruntime's test accuracy of the exported fixed-point model is
//!   printed beside sysgrad's own (`--nocapture`).

mod common;

use ndarray::Array2;
use std::path::{Path, PathBuf};
use std::process::Command;
use sysgrad_workloads::arith::Arith;
use sysgrad_workloads::data::Sample;
use sysgrad_workloads::model::{load_model, LayerSpec, Model};
use sysgrad_workloads::net::{Network, Tensor};
use sysgrad_workloads::onnx::{self, default_model, float_network, network_weights, to_onnx};
use sysgrad_workloads::train::{self, encode, TrainOptions};
use sysgrad_workloads::DIGITS;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> PathBuf {
    let venv = std::env::var_os("SYSGRAD_ONNX_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/onnx-venv"));
    let py = venv.join("bin/python");
    assert!(
        py.is_file(),
        "{} not found: these tests run onnxruntime from the ONNX virtualenv; \
         run scripts/setup-onnx.sh (or set SYSGRAD_ONNX_VENV to one)",
        py.display()
    );
    py
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/onnx")
        .join(name)
}

fn run_python(args: &[&Path]) {
    let out = Command::new(python())
        .args(args)
        .output()
        .expect("start python");
    assert!(
        out.status.success(),
        "{:?} failed:\n{}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx_runtime");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// onnxruntime's output (`N x classes`, row-major) on `x` of `shape`.
fn onnxruntime(model: &Path, shape: &[usize], x: &[f32]) -> Vec<f32> {
    let stem = model.file_stem().unwrap().to_string_lossy().to_string();
    let (inp, outp) = (
        tmp(&format!("{stem}.in.json")),
        tmp(&format!("{stem}.out.json")),
    );
    let json = serde_json::json!({ "shape": shape, "data": x });
    std::fs::write(&inp, json.to_string()).unwrap();
    run_python(&[&script("run.py"), model, &inp, &outp]);
    let y: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&outp).unwrap()).unwrap();
    y["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect()
}

/// The samples as onnxruntime takes them: `[N, C, H, W]` row-major.
fn nchw(x: &ndarray::Array4<f64>) -> Vec<f32> {
    x.view()
        .permuted_axes([1, 0, 2, 3])
        .iter()
        .map(|&v| v as f32)
        .collect()
}

/// `out` (classes, N, 1, 1) as real values, row `b` per sample.
fn logits<A: Arith>(net: &Network<A>, out: &Tensor<A::V>) -> Array2<f64> {
    let (c, n, _, _) = out.dim();
    Array2::from_shape_fn((n, c), |(b, j)| net.arith.real(out[[j, b, 0, 0]]))
}

/// The largest difference between sysgrad's and onnxruntime's outputs,
/// relative to each sample's largest output magnitude (elementwise
/// relative error means nothing for outputs near zero).
fn max_relative(ours: &Array2<f64>, theirs: &[f32]) -> f64 {
    let c = ours.ncols();
    ours.outer_iter()
        .enumerate()
        .map(|(b, row)| {
            let scale = row.iter().fold(1e-30f64, |m, v| m.max(v.abs()));
            row.iter()
                .enumerate()
                .map(|(j, v)| (v - theirs[b * c + j] as f64).abs() / scale)
                .fold(0.0, f64::max)
        })
        .fold(0.0, f64::max)
}

fn argmax(v: impl Iterator<Item = f64>) -> usize {
    v.enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (i, x)| {
            if x > best.1 {
                (i, x)
            } else {
                best
            }
        })
        .0
}

fn test_inputs(m: &Model, n: usize) -> (Vec<Sample>, ndarray::Array4<f64>) {
    let split = common::split(m);
    let samples: Vec<Sample> = split.test.iter().take(n).cloned().collect();
    let refs: Vec<&Sample> = samples.iter().collect();
    let mut rng = sysgrad_rng::Rng::derive(1, "onnx-test");
    let x = encode::encode(&refs, &m.spec.input, &mut rng);
    (samples, x)
}

/// The input shape a model file declares (`[N, 64]` or `[N, 1, 8, 8]`).
fn input_shape(m: &Model, n: usize) -> Vec<usize> {
    let flat = m
        .onnx
        .as_ref()
        .is_some_and(|i| i.nodes.first().is_some_and(|n| n.ends_with("(flat)")));
    let s = DIGITS.input;
    match flat {
        true => vec![n, s.size()],
        false => vec![n, s.c, s.h, s.w],
    }
}

#[test]
#[ignore = "needs onnxruntime (scripts/setup-onnx.sh)"]
fn imported_models_forward_like_onnxruntime() {
    let dir = tmp("built");
    run_python(&[&script("build.py"), &dir]);
    for name in ["dense_gemm", "dense_matmul", "cnn", "cnn_reshape"] {
        let path = dir.join(format!("{name}.onnx"));
        let m = default_model(&path).unwrap_or_else(|e| panic!("{e}"));
        let (_, x) = test_inputs(&m, 64);
        let mut net = float_network(&m).unwrap();
        let out = net.forward(net.input(&x), false).unwrap();
        let ours = logits(&net, &out);
        let theirs = onnxruntime(&path, &input_shape(&m, 64), &nchw(&x));
        let err = max_relative(&ours, &theirs);
        println!("{name}: sysgrad f32 vs onnxruntime, max relative difference {err:.2e}");
        assert!(err <= 1e-5, "{name}: {err}");
    }
}

/// A bound on |fixed-point forward - exact forward of the same weights|
/// per output: the input and every dense/conv output are rounded to the
/// data grid (at most half an LSB each), a layer multiplies an incoming
/// error by at most its largest absolute row sum, and ReLU, max pooling
/// and flattening do not increase it.
fn rounding_bound(m: &Model, weights: &[Option<Array2<f64>>]) -> f64 {
    let half_lsb = 0.5 / (1u64 << m.cfg.format().frac_bits) as f64;
    let mut e = half_lsb;
    for (layer, w) in m.spec.layers.iter().zip(weights) {
        if let (LayerSpec::Dense { .. } | LayerSpec::Conv2d { .. }, Some(w)) = (layer, w) {
            let k = w.ncols() - 1;
            let row_sum = w
                .outer_iter()
                .map(|r| r.iter().take(k).map(|v| v.abs()).sum::<f64>())
                .fold(0.0, f64::max);
            e = row_sum * e + half_lsb;
        }
    }
    e
}

fn check_trained(label: &str, m: &Model) {
    let split = common::split(m);
    let opts = TrainOptions {
        epochs: Some(1),
        max_train: Some(512),
        progress: false,
        engine: sysgrad_emulator::fast::EngineKind::Fast,
        ..TrainOptions::default()
    };
    let mut run = train::train(m, &split, &opts).unwrap();
    let n = split.test.len();
    let (samples, x) = test_inputs(m, n);
    let shape = input_shape(m, n);

    // (b) The exported f32 reference: onnxruntime gives its outputs.
    let float_w = network_weights(&run.float);
    let float_path = tmp(&format!("{label}_f32.onnx"));
    std::fs::write(
        &float_path,
        prost::Message::encode_to_vec(&to_onnx(m, &float_w).unwrap()),
    )
    .unwrap();
    let out = run.float.forward(run.float.input(&x), false).unwrap();
    let ours = logits(&run.float, &out);
    let theirs = onnxruntime(&float_path, &shape, &nchw(&x));
    let err = max_relative(&ours, &theirs);
    assert!(err <= 1e-5, "{label}: f32 export: {err}");

    // (b) The exported fixed-point model: onnxruntime gives the array's
    // outputs within the rounding bound.
    let fixed_w = network_weights(&run.fixed);
    let fixed_path = tmp(&format!("{label}_fixed.onnx"));
    onnx::write(&fixed_path, m, &fixed_w).unwrap();
    let out = run.fixed.forward(run.fixed.input(&x), false).unwrap();
    let ours = logits(&run.fixed, &out);
    let theirs = onnxruntime(&fixed_path, &shape, &nchw(&x));
    let bound = rounding_bound(m, &fixed_w);
    let c = ours.ncols();
    let (mut worst, mut close, mut ort_right, mut agree) = (0.0f64, 0, 0, 0);
    for (b, row) in ours.outer_iter().enumerate() {
        let ort_row = &theirs[b * c..(b + 1) * c];
        for (v, t) in row.iter().zip(ort_row) {
            worst = worst.max((v - *t as f64).abs());
        }
        let ours_class = argmax(row.iter().copied());
        let ort_class = argmax(ort_row.iter().map(|&v| v as f64));
        let mut sorted: Vec<f64> = row.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        if sorted[0] - sorted[1] <= 2.0 * bound {
            close += 1;
        } else {
            assert_eq!(ours_class, ort_class, "{label}: sample {b}");
        }
        ort_right += (ort_class == samples[b].label as usize) as usize;
        agree += (ours_class == ort_class) as usize;
    }
    assert!(
        worst <= bound + 1e-5,
        "{label}: fixed export differs by {worst} > bound {bound}"
    );
    // (c) Accuracy, onnxruntime beside sysgrad.
    let ort_acc = ort_right as f64 / n as f64;
    let ours_acc = run.last().fixed.test_accuracy;
    println!(
        "{label}: test accuracy on {n} samples after 1 epoch of 512 samples: \
         sysgrad fixed point {:.2}%, onnxruntime on the exported model {:.2}% \
         (same class on {agree}; max output difference {worst:.2e}, rounding bound \
         {bound:.2e}, {close} samples within twice the bound of a tie)",
        100.0 * ours_acc,
        100.0 * ort_acc
    );
    assert!(
        (ort_acc - ours_acc).abs() * n as f64 <= close as f64 + 0.5,
        "{label}: accuracies differ by more than the near-ties allow"
    );
}

#[test]
#[ignore = "needs onnxruntime (scripts/setup-onnx.sh)"]
fn trained_models_exported_run_in_onnxruntime() {
    let models = root().join("workloads/models");
    for name in ["mlp", "cnn"] {
        let m = load_model(&models.join(format!("{name}.toml"))).unwrap();
        check_trained(name, &m);
    }
    // A model that came from ONNX goes back as its own graph.
    let dir = tmp("built_for_training");
    run_python(&[&script("build.py"), &dir]);
    for name in ["dense_matmul", "cnn_reshape"] {
        let m = default_model(&dir.join(format!("{name}.onnx"))).unwrap();
        check_trained(&format!("{name} (imported)"), &m);
    }
}

/// The shipped examples (scripts/export-examples.sh): onnxruntime's test
/// accuracy beside sysgrad's fixed-point accuracy of the same model
/// imported (its weights are on the data grid, so the import is the
/// trained network itself).
#[test]
#[ignore = "needs onnxruntime (scripts/setup-onnx.sh)"]
fn shipped_examples_in_onnxruntime() {
    let models = root().join("workloads/models");
    for name in ["mlp", "cnn"] {
        let path = models.join(format!("{name}.onnx"));
        let settings = load_model(&models.join(format!("{name}.toml"))).unwrap();
        let m = default_model(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.spec.layers, settings.spec.layers, "{name}");
        let split = common::split(&settings);
        let n = split.test.len();
        let (samples, x) = test_inputs(&settings, n);
        let (mut fixed, _) = train::build_on(&m, sysgrad_emulator::fast::EngineKind::Fast);
        let out = fixed.forward(fixed.input(&x), false).unwrap();
        let ours = logits(&fixed, &out);
        let theirs = onnxruntime(&path, &input_shape(&m, n), &nchw(&x));
        let right = |class: &dyn Fn(usize) -> usize| {
            (0..n)
                .filter(|&b| class(b) == samples[b].label as usize)
                .count() as f64
                / n as f64
        };
        let ours_acc = right(&|b| argmax(ours.row(b).iter().copied()));
        let ort_acc = right(&|b| argmax(theirs[b * 10..(b + 1) * 10].iter().map(|&v| v as f64)));
        println!(
            "workloads/models/{name}.onnx on the {n} test samples: sysgrad fixed point {:.2}%, \
             onnxruntime {:.2}%",
            100.0 * ours_acc,
            100.0 * ort_acc
        );
        assert!((ours_acc - ort_acc).abs() <= 2.0 / n as f64, "{name}");
    }
}
