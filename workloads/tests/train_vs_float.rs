//! Training on the emulated array against the f32 reference, on small
//! models and a few hundred samples (the long runs belong to the CLI).

mod common;

use common::*;
use ndarray::{s, Array2};
use sysgrad_workloads::net::{Layer, Network};
use sysgrad_workloads::train::{self, TrainOptions};
use sysgrad_workloads::WorkloadError;

fn opts(train: usize, test: usize, sequential_epochs: usize) -> TrainOptions {
    TrainOptions {
        max_train: Some(train),
        max_test: Some(test),
        sequential_epochs,
        progress: false,
        ..TrainOptions::default()
    }
}

#[test]
fn mlp_learns_like_the_float_reference() {
    let m = model(&small_model((8, 8), "", MLP_LAYERS, SGD, 16));
    let split = split(&m);
    let run = train::train(&m, &split, &opts(320, 160, 1)).unwrap();
    let (first, last) = (&run.epochs[0], run.last());
    // Loss decreases in both number systems.
    assert!(
        last.fixed.train_loss < 0.7 * first.fixed.train_loss,
        "{first:?} -> {last:?}"
    );
    assert!(last.float.train_loss < 0.7 * first.float.train_loss);
    // Well above chance (10%), and within a few points of f32.
    assert!(last.fixed.test_accuracy > 0.6, "{last:?}");
    let gap = (last.fixed.test_accuracy - last.float.test_accuracy).abs();
    assert!(
        gap <= 0.06,
        "fixed {} vs f32 {}",
        last.fixed.test_accuracy,
        last.float.test_accuracy
    );
    // The sequential shadow ran in epoch 1 only, computed the same bits
    // (train() fails otherwise) and took more backward cycles.
    assert!(!run.ledgers[0].sequential_backward.is_empty());
    assert!(run.ledgers[1].sequential_backward.is_empty());
    for (layer, seq) in &run.ledgers[0].sequential_backward {
        let il = run.ledgers[0].get(*layer, sysgrad_workloads::arith::Bucket::Backward);
        assert!(seq.total().cycles > il.total().cycles);
        assert_eq!(seq.total().macs, il.total().macs);
    }
}

/// Round half up to `frac` bits and clamp to `bits`, in f64: an independent
/// statement of `requantize` for products that are exact in f64.
fn requantize_f64(v: f64, frac: u32, bits: u32) -> i64 {
    let scaled = (v * (1u64 << frac) as f64 + 0.5).floor() as i64;
    scaled.clamp(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
}

#[test]
fn trained_fixed_forward_equals_a_requantized_reference() {
    let m = model(&small_model((8, 8), "", MLP_LAYERS, SGD, 16));
    let split = split(&m);
    let mut run = train::train(&m, &split, &opts(160, 40, 0)).unwrap();
    let f = m.cfg.format();
    let samples: Vec<_> = split.test.iter().take(24).collect();
    let x = train::encode::encode(&samples, &m.spec.input, &mut sysgrad_rng::Rng::new(0));
    let net: &mut Network<_> = &mut run.fixed;
    let out = net.forward(net.input(&x), false).unwrap();

    // The reference: real-valued products of the trained integer weights,
    // exact in f64, rounded once per layer, ReLU between.
    let to_real = |v: i64| v as f64 / (1u64 << f.frac_bits) as f64;
    let mut act: Array2<f64> = x
        .view()
        .into_shape_with_order((1, samples.len(), 64))
        .unwrap()
        .index_axis(ndarray::Axis(0), 0)
        .t()
        .to_owned();
    for layer in &net.layers {
        match layer {
            Layer::Dense(d) => {
                let w = d.w.mapv(to_real);
                let k = w.ncols() - 1;
                let y = w.slice(s![.., ..k]).dot(&act) + w.slice(s![.., k..]);
                act = y.mapv(|v| to_real(requantize_f64(v, f.frac_bits, f.in_bits)));
            }
            Layer::Relu(_) => act.mapv_inplace(|v| v.max(0.0)),
            _ => {}
        }
    }
    let got = out
        .into_shape_with_order((10, samples.len()))
        .unwrap()
        .mapv(to_real);
    assert_eq!(got, act);

    // The f32 network with the same (dequantized) weights agrees to within
    // the rounding of two layers.
    let mut float = run.float;
    for (fl, fx) in float.layers.iter_mut().zip(&net.layers) {
        if let (Layer::Dense(a), Layer::Dense(b)) = (fl, fx) {
            a.w = b.w.mapv(|v| to_real(v) as f32);
        }
    }
    let fo = float.forward(float.input(&x), false).unwrap();
    let fo = fo.into_shape_with_order((10, samples.len())).unwrap();
    let lsb = to_real(1);
    for (a, b) in fo.iter().zip(got.iter()) {
        assert!((*a as f64 - b).abs() < 40.0 * lsb, "{a} vs {b}");
    }
}

#[test]
fn cnn_with_momentum_trains_close_to_float() {
    let layers = r#"
[[layers]]
type = "conv2d"
filters = 4
kernel = 3
padding = 1
[[layers]]
type = "relu"
[[layers]]
type = "max_pool"
size = 2
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 10
"#;
    let opt = r#"
[optimizer]
kind = "momentum"
lr_shift = 12
grad_scale_shift = 4
momentum = 0.75
"#;
    let m = model(&small_model((8, 8), "", layers, opt, 16));
    let split = split(&m);
    let mut o = opts(192, 96, 1);
    o.epochs = Some(2);
    let run = train::train(&m, &split, &o).unwrap();
    let (first, last) = (&run.epochs[0], run.last());
    assert!(
        last.fixed.train_loss < first.fixed.train_loss,
        "{first:?} -> {last:?}"
    );
    assert!(last.fixed.test_accuracy > 0.4, "{last:?}");
    assert!((last.fixed.test_accuracy - last.float.test_accuracy).abs() <= 0.08);
}

#[test]
fn snn_trains_and_counts_spike_sparsity() {
    let input = "[input]\nencoding = \"rate\"\ntime_steps = 8\n";
    let layers = r#"
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 16
[[layers]]
type = "lif"
beta = 0.9
threshold = 1.0
slope = 5.0
[[layers]]
type = "dense"
units = 10
[[layers]]
type = "lif"
beta = 0.9
threshold = 1.0
slope = 5.0
output = "membrane"
"#;
    let opt = "[optimizer]\nkind = \"sgd\"\nlr_shift = 12\ngrad_scale_shift = 3\n";
    let m = model(&small_model((8, 8), input, layers, opt, 16));
    let split = split(&m);
    let mut o = opts(400, 100, 0);
    o.epochs = Some(3);
    let run = train::train(&m, &split, &o).unwrap();
    let (first, last) = (&run.epochs[0], run.last());
    assert!(
        last.fixed.train_loss < first.fixed.train_loss,
        "{first:?} -> {last:?}"
    );
    assert!(last.fixed.test_accuracy > 0.5, "{last:?}");
    assert!((last.fixed.test_accuracy - last.float.test_accuracy).abs() <= 0.1);
    let (fx, _) = run.activity();
    // Both dense layers are fed spikes: every input is 0 or 1, and the
    // non-zero ones make accumulate-only MACs.
    for layer in [1, 3] {
        let a = fx[layer].unwrap();
        assert!(a.spiking_input(), "layer {layer}: {a:?}");
        assert_eq!(a.accumulate_only_macs + a.zero_operand_macs, a.macs);
        assert!(a.input_sparsity() > 0.3 && a.input_sparsity() < 1.0);
        assert!(a.gradients > 0);
    }
    assert!(fx[2].unwrap().neuron_steps > 0);
}

#[test]
fn backward_before_forward_is_an_error_not_a_panic() {
    let m = model(&small_model((4, 4), "", MLP_LAYERS, SGD, 4));
    let (mut fixed, _) = train::build(&m);
    let dy = ndarray::Array4::zeros((10, 4, 1, 1));
    assert!(matches!(
        fixed.backward(dy),
        Err(WorkloadError::Model { .. })
    ));
}

/// The fast exact engine trains the same network as the clocked array:
/// the same losses and accuracies every epoch, the same counters, both for
/// SGD in the PEs (dW applied in place) and momentum (dW drained).
#[test]
fn fast_engine_trains_exactly_like_the_clocked_array() {
    use sysgrad_emulator::fast::EngineKind;
    let momentum =
        "[optimizer]\nkind = \"momentum\"\nlr_shift = 12\ngrad_scale_shift = 4\nmomentum = 0.75\n";
    for opt in [SGD, momentum] {
        let m = model(&small_model((8, 8), "", MLP_LAYERS, opt, 16));
        let split = split(&m);
        let run = |engine| {
            let mut o = opts(96, 48, 1);
            o.epochs = Some(2);
            o.engine = engine;
            train::train(&m, &split, &o).unwrap()
        };
        let (cycle, fast) = (run(EngineKind::Cycle), run(EngineKind::Fast));
        for (c, f) in cycle.epochs.iter().zip(&fast.epochs) {
            assert_eq!((c.fixed, c.float), (f.fixed, f.float));
        }
        assert_eq!(cycle.ledgers, fast.ledgers);
    }
}
