//! The graph form and the layers it brought (average pooling, global
//! average pooling, residual addition): fixed point against f32 on small
//! inputs, every backward against finite differences in f32, and a
//! residual network's whole backward pass against finite differences of
//! its loss.

mod common;

use common::*;
use ndarray::Array4;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_rng::Rng;
use sysgrad_workloads::arith::{mean_fixed, Arith, FixedArith, FloatArith, Step};
use sysgrad_workloads::net::{self, AvgPool, Layer, Network, Tensor};
use sysgrad_workloads::train;

const STEP: Step = Step {
    lr_shift: 0,
    momentum: None,
};

fn arith_pair() -> (FixedArith, FloatArith) {
    let m = model(&small_model((4, 4), "", MLP_LAYERS, SGD, 4));
    (
        FixedArith::on(EngineKind::Fast, m.cfg, STEP),
        FloatArith::new(STEP),
    )
}

fn random(dims: (usize, usize, usize, usize), seed: u64) -> Array4<f64> {
    let mut rng = Rng::new(seed);
    Array4::from_shape_simple_fn(dims, || rng.symmetric(2.0))
}

/// A pooling layer under test, named, and how to build it fresh.
type NamedPool = (&'static str, fn() -> AvgPool);

/// The pooling layers under test, each built fresh.
fn pools() -> Vec<NamedPool> {
    vec![
        ("avg_pool 2", || AvgPool::new(2, 2)),
        ("avg_pool 3 stride 1", || AvgPool::new(3, 1)),
        ("avg_pool 3 stride 2", || AvgPool::new(3, 2)),
        ("global_avg_pool", AvgPool::global),
    ]
}

#[test]
fn the_fixed_point_mean_rounds_half_up_and_saturates() {
    // 3 / 2 = 1.5 -> 2; -3 / 2 = -1.5 -> -1 (ties toward +infinity).
    assert_eq!(mean_fixed(&[1, 2], 2, 16), 2);
    assert_eq!(mean_fixed(&[-1, -2], 2, 16), -1);
    assert_eq!(mean_fixed(&[5, 0, 0, 0], 4, 16), 1); // 1.25 -> 1
    assert_eq!(mean_fixed(&[7, 0, 0, 0], 4, 16), 2); // 1.75 -> 2
                                                     // A window of maxima is the maximum: the sum is exact, not saturated.
    assert_eq!(mean_fixed(&[32767; 9], 9, 16), 32767);
    assert_eq!(mean_fixed(&[-32768; 4], 4, 16), -32768);
    // One value divided by the window: the gradient's share.
    assert_eq!(mean_fixed(&[9], 4, 16), 2); // 2.25 -> 2
}

#[test]
fn pooling_in_fixed_point_is_the_f32_mean_within_half_an_lsb() {
    let (fx, fl) = arith_pair();
    let lsb = fx.real(1);
    for (name, make) in pools() {
        let x = random((2, 3, 6, 7), 1);
        let xf = x.mapv(|v| fl.quantize(fx.real(fx.quantize(v))));
        let xi = x.mapv(|v| fx.quantize(v));
        let yf = make().forward(&fl, &xf, false);
        let yi = make().forward(&fx, &xi, false);
        assert_eq!(yf.dim(), yi.dim(), "{name}");
        for (a, b) in yi.iter().zip(&yf) {
            let d = (fx.real(*a) - *b as f64).abs();
            assert!(d <= lsb / 2.0 + 1e-6, "{name}: {} vs {b}", fx.real(*a));
        }
        // The gradient: each share within half an lsb, summed over the
        // windows that overlap (at most 4 here).
        let mut p = make();
        p.forward(&fx, &xi, true);
        let mut q = make();
        q.forward(&fl, &xf, true);
        let g = random(yi.dim(), 2);
        let dxi = p.backward(&fx, &g.mapv(|v| fx.quantize(v))).unwrap();
        let dxf = q
            .backward(&fl, &g.mapv(|v| fx.real(fx.quantize(v)) as f32))
            .unwrap();
        for (a, b) in dxi.iter().zip(&dxf) {
            let d = (fx.real(*a) - *b as f64).abs();
            assert!(
                d <= 4.0 * lsb / 2.0 + 1e-6,
                "{name} backward: {} vs {b}",
                fx.real(*a)
            );
        }
    }
}

/// `sum(r * f(x))` and the numerical gradient of it at `x`.
fn numeric_grad(
    x: &Tensor<f32>,
    r: &Tensor<f32>,
    f: impl Fn(&Tensor<f32>) -> Tensor<f32>,
) -> Tensor<f32> {
    let loss =
        |x: &Tensor<f32>| -> f64 { f(x).iter().zip(r).map(|(a, b)| *a as f64 * *b as f64).sum() };
    let h = 1e-2f32;
    let mut g = x.clone();
    for idx in ndarray::indices(x.dim()) {
        let mut xp = x.clone();
        xp[idx] += h;
        let mut xm = x.clone();
        xm[idx] -= h;
        g[idx] = ((loss(&xp) - loss(&xm)) / (2.0 * h as f64)) as f32;
    }
    g
}

fn assert_close(got: &Tensor<f32>, want: &Tensor<f32>, what: &str) {
    assert_eq!(got.dim(), want.dim(), "{what}");
    for (a, b) in got.iter().zip(want) {
        assert!(
            (a - b).abs() <= 1e-3 * (1.0 + b.abs()),
            "{what}: {a} vs {b}"
        );
    }
}

#[test]
fn every_new_backward_is_the_finite_difference_in_f32() {
    let (_, fl) = arith_pair();
    for (name, make) in pools() {
        let x = random((2, 2, 6, 7), 3).mapv(|v| v as f32);
        let mut p = make();
        let y = p.forward(&fl, &x, true);
        let r = random(y.dim(), 4).mapv(|v| v as f32);
        let dx = p.backward(&fl, &r).unwrap();
        let num = numeric_grad(&x, &r, |x| make().forward(&fl, x, false));
        assert_close(&dx, &num, name);
    }
    // Residual addition: the gradient of a + b reaches both unchanged.
    let a = random((2, 2, 3, 3), 5).mapv(|v| v as f32);
    let b = random((2, 2, 3, 3), 6).mapv(|v| v as f32);
    let r = random((2, 2, 3, 3), 7).mapv(|v| v as f32);
    let mut add: Layer<f32> = Layer::Add;
    let mut fl2 = fl.clone();
    let site = sysgrad_workloads::arith::Site {
        layer: 0,
        training: true,
    };
    add.forward(&mut fl2, site, &a, 1).unwrap();
    let g = add.backward(&mut fl2, (0, true), &r, 1).unwrap().unwrap();
    assert_close(
        &g,
        &numeric_grad(&a, &r, |a| net::add(&fl, a, &b)),
        "add (a)",
    );
    assert_close(
        &g,
        &numeric_grad(&b, &r, |b| net::add(&fl, &a, b)),
        "add (b)",
    );
}

#[test]
fn residual_addition_saturates_in_fixed_point() {
    let (fx, _) = arith_pair();
    let a = Array4::from_elem((1, 1, 1, 2), 32000i64);
    let b = Array4::from_shape_vec((1, 1, 1, 2), vec![1000i64, -1000]).unwrap();
    let y = net::add(&fx, &a, &b);
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), [32767, 31000]);
}

/// A residual block on the digits: `r1` feeds both the second convolution
/// and the addition, so its gradient is the sum of two.
const RESIDUAL: &str = r#"
[[layers]]
name = "c1"
type = "conv2d"
filters = 3
kernel = 3
padding = 1
[[layers]]
name = "r1"
type = "relu"
[[layers]]
name = "c2"
type = "conv2d"
filters = 3
kernel = 3
padding = 1
[[layers]]
name = "sum"
type = "add"
inputs = ["c2", "r1"]
[[layers]]
name = "pool"
type = "avg_pool"
size = 2
[[layers]]
name = "gap"
type = "global_avg_pool"
[[layers]]
name = "both"
type = "add"
inputs = ["gap", "gap"]
[[layers]]
name = "stray"
type = "flatten"
inputs = ["pool"]
[[layers]]
name = "flat"
type = "flatten"
inputs = ["both"]
[[layers]]
name = "out"
type = "dense"
units = 10
"#;

const STRAY: &str = "[[layers]]\nname = \"stray\"\ntype = \"flatten\"\ninputs = [\"pool\"]\n";

#[test]
fn a_residual_graph_parses_and_its_errors_name_the_layer() {
    // `stray` is not read by anyone: refused.
    let e = model_error(&small_model((4, 4), "", RESIDUAL, SGD, 4));
    assert!(
        e.contains("layers[7] (flatten)") && e.contains("\"stray\" is not used"),
        "{e}"
    );
    let ok = RESIDUAL.replace(STRAY, "");
    let m = model(&small_model((4, 4), "", &ok, SGD, 4));
    assert!(!m.graph.is_chain());
    assert_eq!(m.graph.inputs[3], vec![3, 2]);
    assert_eq!(m.input_shape(7).size(), 3);
    assert_eq!(m.input_shape(5).size(), 3 * 4 * 4);
    for (from, to, want) in [
        (
            "inputs = [\"c2\", \"r1\"]",
            "inputs = [\"c2\", \"nope\"]",
            "\"nope\" is not `input` or the name of an earlier layer",
        ),
        (
            "inputs = [\"c2\", \"r1\"]",
            "inputs = [\"c2\"]",
            "1 inputs; a add layer takes 2",
        ),
        (
            "name = \"r1\"",
            "name = \"c1\"",
            "must be a name no other layer has",
        ),
        (
            "inputs = [\"gap\", \"gap\"]",
            "inputs = [\"gap\", \"pool\"]",
            "adds inputs of different shapes (3x1x1 and 3x4x4)",
        ),
        (
            "type = \"relu\"",
            "type = \"batch_norm\"",
            "batch normalization is not supported",
        ),
        ("name = \"pool\"\n", "", "layers[4]: needs a `name`"),
    ] {
        let e = model_error(&small_model((4, 4), "", &ok.replacen(from, to, 1), SGD, 4));
        assert!(e.contains(want), "{to}: {e}");
    }
    // The list form cannot add.
    let e = model_error(&small_model(
        (4, 4),
        "",
        &format!("{MLP_LAYERS}[[layers]]\ntype = \"add\"\n"),
        SGD,
        4,
    ));
    assert!(
        e.contains("takes 2 inputs: give every layer a `name`"),
        "{e}"
    );
}

#[test]
fn a_residual_networks_backward_is_the_finite_difference_of_its_loss() {
    let ok = RESIDUAL.replace(STRAY, "");
    // lr_shift 0 and no gradient scale: the step is W -= dL/dW, with L the
    // loss summed over the batch.
    let sgd0 = "[optimizer]\nkind = \"sgd\"\nlr_shift = 0\ngrad_scale_shift = 0\n";
    let m = model(&small_model((4, 4), "", &ok, sgd0, 4));
    let split = split(&m);
    let samples: Vec<_> = split.train.iter().take(4).collect();
    let x = train::encode::encode(&samples, &m.spec.input, &mut Rng::new(0));
    let labels = train::encode::labels(&samples);
    // Biases off zero, so that no background pixel (zero input, zero
    // bias) sits on a ReLU's kink, where a finite difference averages the
    // two sides.
    let build = || {
        let mut net = train::build_on(&m, EngineKind::Fast).1;
        for l in &mut net.layers {
            if let Some((w, _)) = l.weights_mut() {
                let k = w.ncols() - 1;
                w.column_mut(k).fill(0.1);
            }
        }
        net
    };
    let mut fl = build();
    let loss = |net: &mut Network<FloatArith>| -> f64 {
        net.evaluate(net.input(&x), &labels).unwrap().loss_sum
    };
    let w_of = |net: &Network<FloatArith>, l: usize| net.layers[l].weights().unwrap().clone();
    let h = 1e-2f32;
    // Numerical gradients of a few weights of both convolutions.
    let mut want = Vec::new();
    for (l, at) in [
        (0, (0, 0)),
        (0, (2, 5)),
        (0, (1, 9)),
        (2, (1, 4)),
        (2, (0, 27)),
    ] {
        let mut net = build();
        let base = w_of(&net, l)[at];
        net.layers[l].weights_mut().unwrap().0[at] = base + h;
        let up = loss(&mut net);
        net.layers[l].weights_mut().unwrap().0[at] = base - h;
        let down = loss(&mut net);
        want.push((l, at, (up - down) / (2.0 * h as f64)));
    }
    let before: Vec<_> = [0, 2].iter().map(|&l| w_of(&fl, l)).collect();
    fl.train_step(fl.input(&x), &labels).unwrap();
    for (l, at, num) in want {
        let b = if l == 0 { &before[0] } else { &before[1] };
        let got = (b[at] - w_of(&fl, l)[at]) as f64;
        assert!(
            (got - num).abs() <= 2e-2 * (1.0 + num.abs()),
            "layer {l} {at:?}: backward {got} vs finite difference {num}"
        );
    }
}
