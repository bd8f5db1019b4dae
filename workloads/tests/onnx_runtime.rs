//! The independent check of ONNX in and out (issue 30 item 5): models built
//! by the `onnx` Python package and run by onnxruntime, code that shares
//! nothing with sysgrad. Needs the virtualenv of `scripts/setup-onnx.sh`
//! (`SYSGRAD_ONNX_VENV`, default `target/onnx-venv`); without it these
//! tests fail, saying so.
//!
//! * (a) sysgrad's f32 forward of an imported model equals onnxruntime's
//!   within 1e-5 of the sample's largest output (dense, convolution,
//!   max and average pooling, global average pooling, residual Add).
//! * (b) after a short training, the exported fixed-point model in
//!   onnxruntime gives sysgrad's fixed-point outputs within a bound
//!   computed from the weights (rounding only), so the same class wherever
//!   the margin exceeds it; the exported f32 reference gives the f32
//!   reference's outputs within 1e-5 and predicts its classes.
//! * (c) onnxruntime's test accuracy of the exported fixed-point model is
//!   printed beside sysgrad's own (`--nocapture`).

mod common;

use ndarray::Array2;
use std::path::{Path, PathBuf};
use std::process::Command;
use sysgrad_workloads::arith::Arith;
use sysgrad_workloads::data::{load_split, Sample};
use sysgrad_workloads::model::{self, load_model, LayerSpec, Model};
use sysgrad_workloads::net::{Network, Tensor};
use sysgrad_workloads::onnx::{self, default_model, float_network, network_weights, to_onnx};
use sysgrad_workloads::train::{self, encode, TrainOptions};

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
    let split = load_split(m).unwrap();
    let samples: Vec<Sample> = split.test.iter().take(n).cloned().collect();
    let refs: Vec<&Sample> = samples.iter().collect();
    let mut rng = sysgrad_rng::Rng::derive(1, "onnx-test");
    let x = encode::encode(&refs, &m.spec.input, &mut rng);
    (samples, x)
}

/// The input shape a model file declares (`[N, C*H*W]` or `[N, C, H, W]`
/// of the data set's samples).
fn input_shape(m: &Model, n: usize) -> Vec<usize> {
    let flat = m
        .onnx
        .as_ref()
        .is_some_and(|i| i.nodes.first().is_some_and(|n| n.ends_with("(flat)")));
    let s = m.dataset.input;
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
    for name in [
        "dense_gemm",
        "dense_matmul",
        "cnn",
        "cnn_reshape",
        "pools",
        "residual",
    ] {
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
/// per output, value by value through the graph: the input and every
/// dense/conv output are rounded to the data grid (at most half an LSB
/// each) and a layer multiplies an incoming error by at most its largest
/// absolute row sum; an average is rounded once (its mean error plus half
/// an LSB); a residual sum is exact, so its error is the sum of its
/// inputs'; ReLU, max pooling and flattening do not increase it.
fn rounding_bound(m: &Model, weights: &[Option<Array2<f64>>]) -> f64 {
    let half_lsb = 0.5 / (1u64 << m.cfg.format().frac_bits) as f64;
    let mut e = vec![half_lsb];
    for (i, (layer, w)) in m.spec.layers.iter().zip(weights).enumerate() {
        let ins = &m.graph.inputs[i];
        let e_in = e[ins[0]];
        let out = match (layer, w) {
            (LayerSpec::Dense { .. } | LayerSpec::Conv2d { .. }, Some(w)) => {
                let k = w.ncols() - 1;
                let row_sum = w
                    .outer_iter()
                    .map(|r| r.iter().take(k).map(|v| v.abs()).sum::<f64>())
                    .fold(0.0, f64::max);
                row_sum * e_in + half_lsb
            }
            (LayerSpec::AvgPool { .. } | LayerSpec::GlobalAvgPool, _) => e_in + half_lsb,
            (LayerSpec::Add, _) => ins.iter().map(|&v| e[v]).sum(),
            _ => e_in,
        };
        e.push(out);
    }
    *e.last().expect("the output's")
}

/// How many samples' classes `theirs` gives as `ours` does, and how many
/// were near ties (top two within `tie` of each other), where either
/// class may win; panics on a clear disagreement.
fn same_classes(label: &str, ours: &Array2<f64>, theirs: &[f32], tie: f64) -> (usize, usize) {
    let c = ours.ncols();
    let (mut agree, mut close) = (0, 0);
    for (b, row) in ours.outer_iter().enumerate() {
        let ort_row = &theirs[b * c..(b + 1) * c];
        let ours_class = argmax(row.iter().copied());
        let ort_class = argmax(ort_row.iter().map(|&v| v as f64));
        let mut sorted: Vec<f64> = row.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        if sorted[0] - sorted[1] <= tie {
            close += 1;
        } else {
            assert_eq!(ours_class, ort_class, "{label}: sample {b}");
        }
        agree += (ours_class == ort_class) as usize;
    }
    (agree, close)
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
    // Its predictions are the f32 reference's (but for near ties, within
    // the 1e-5 allowed of the largest output).
    let largest = ours.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let (agree_f32, _) = same_classes(label, &ours, &theirs, 2e-5 * largest);

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
    let worst = ours
        .iter()
        .zip(&theirs)
        .fold(0.0f64, |w, (v, t)| w.max((v - *t as f64).abs()));
    let (agree, close) = same_classes(label, &ours, &theirs, 2.0 * bound);
    let ort_right = (0..n)
        .filter(|&b| {
            argmax(theirs[b * c..(b + 1) * c].iter().map(|&v| v as f64))
                == samples[b].label as usize
        })
        .count();
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
         {bound:.2e}, {close} samples within twice the bound of a tie); \
         the exported f32 reference predicts its class on {agree_f32} of {n}",
        100.0 * ours_acc,
        100.0 * ort_acc
    );
    assert!(
        (ort_acc - ours_acc).abs() * n as f64 <= close as f64 + 0.5,
        "{label}: accuracies differ by more than the near-ties allow"
    );
}

/// A residual block that halves the map (a stride-2 convolution, and a
/// stride-2 1x1 projection of its input beside it), average pooling,
/// global average pooling and a dense readout.
const RESIDUAL_LAYERS: &str = r#"
[[layers]]
name = "c1"
type = "conv2d"
filters = 4
kernel = 3
padding = 1
[[layers]]
name = "r1"
type = "relu"
[[layers]]
name = "c2"
type = "conv2d"
filters = 8
kernel = 3
stride = 2
padding = 1
[[layers]]
name = "proj"
type = "conv2d"
filters = 8
kernel = 1
stride = 2
inputs = ["r1"]
[[layers]]
name = "sum"
type = "add"
inputs = ["c2", "proj"]
[[layers]]
name = "r2"
type = "relu"
[[layers]]
name = "pool"
type = "avg_pool"
size = 2
[[layers]]
name = "gap"
type = "global_avg_pool"
[[layers]]
name = "flat"
type = "flatten"
[[layers]]
name = "out"
type = "dense"
units = 10
"#;

#[test]
#[ignore = "needs onnxruntime (scripts/setup-onnx.sh)"]
fn trained_models_exported_run_in_onnxruntime() {
    let models = root().join("workloads/models");
    for name in ["mlp", "cnn"] {
        let m = load_model(&models.join(format!("{name}.toml"))).unwrap();
        check_trained(name, &m);
    }
    // A residual network from a TOML file: its graph built from the layers.
    let residual = common::small_model((16, 16), "", RESIDUAL_LAYERS, common::SGD, 32);
    check_trained("residual (TOML)", &common::model(&residual));
    // A model that came from ONNX goes back as its own graph.
    let dir = tmp("built_for_training");
    run_python(&[&script("build.py"), &dir]);
    for name in ["dense_matmul", "cnn_reshape", "pools", "residual"] {
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
        check_shipped(&models, name, None);
    }
}

/// The Fashion-MNIST examples (scripts/export-fashion-examples.sh), on the
/// first 2,000 test images.
#[test]
#[ignore = "needs onnxruntime (scripts/setup-onnx.sh) and dataset-fashion-mnist"]
fn shipped_fashion_examples_in_onnxruntime() {
    let models = root().join("workloads/models/fashion");
    for name in ["mlp", "cnn", "resnet8"] {
        check_shipped(&models, name, Some(2000));
    }
}

/// `dir/name.onnx` imported with the settings of `dir/name.toml` (so with
/// its data set): the same layers and graph, and onnxruntime's accuracy
/// on the first `n` test samples (all by default) within a sample of
/// sysgrad's.
fn check_shipped(dir: &Path, name: &str, n: Option<usize>) {
    let settings = load_model(&dir.join(format!("{name}.toml"))).unwrap();
    let mut spec = settings.spec.clone();
    spec.layers.clear();
    spec.graph = None;
    spec.onnx = Some(dir.join(format!("{name}.onnx")));
    let m = model::from_spec(spec, Some(dir)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.spec.layers, settings.spec.layers, "{name}");
    assert_eq!(m.graph, settings.graph, "{name}");
    let all = load_split(&settings).unwrap().test.len();
    let n = n.unwrap_or(all).min(all);
    let (samples, x) = test_inputs(&settings, n);
    let (mut fixed, _) = train::build_on(&m, sysgrad_emulator::fast::EngineKind::Fast);
    let out = fixed.forward(fixed.input(&x), false).unwrap();
    let ours = logits(&fixed, &out);
    let theirs = onnxruntime(
        &dir.join(format!("{name}.onnx")),
        &input_shape(&m, n),
        &nchw(&x),
    );
    let c = ours.ncols();
    let right = |class: &dyn Fn(usize) -> usize| {
        (0..n)
            .filter(|&b| class(b) == samples[b].label as usize)
            .count() as f64
            / n as f64
    };
    let ours_acc = right(&|b| argmax(ours.row(b).iter().copied()));
    let ort_acc = right(&|b| argmax(theirs[b * c..(b + 1) * c].iter().map(|&v| v as f64)));
    println!(
        "{}/{name}.onnx on {n} test samples: sysgrad fixed point {:.2}%, onnxruntime {:.2}%",
        dir.strip_prefix(root()).unwrap_or(dir).display(),
        100.0 * ours_acc,
        100.0 * ort_acc
    );
    assert!((ours_acc - ort_acc).abs() <= 2.0 / n as f64, "{name}");
}
