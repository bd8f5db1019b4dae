//! Training on all cores gives the bits of training on one, and slices of
//! the Fashion-MNIST examples learn: a few thousand training samples, one
//! epoch, the fixed-point network well above chance and within a computed
//! band of its f32 reference (same initial weights, same batches).

use std::path::Path;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_workloads::data::load_split;
use sysgrad_workloads::model::load_model;
use sysgrad_workloads::train::{self, compare_weights, TrainOptions};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The first `steps` training steps of `model_file` (fast exact mode) on a
/// pool of `threads` threads: the fixed-point network and its ledger.
fn trained_on(
    threads: usize,
    model_file: &str,
    steps: usize,
) -> (
    sysgrad_workloads::net::Network<sysgrad_workloads::arith::FixedArith>,
    sysgrad_workloads::arith::Ledger,
) {
    let model = load_model(&root().join(model_file)).unwrap();
    let split = load_split(&model).unwrap();
    let batch = model.spec.training.batch_size;
    let opts = TrainOptions {
        epochs: Some(1),
        sequential_epochs: 1,
        max_train: Some(steps * batch),
        max_test: Some(64),
        progress: false,
        engine: EngineKind::Fast,
        ..TrainOptions::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut run = pool
        .install(|| train::train(&model, &split, &opts))
        .unwrap();
    (run.fixed, run.ledgers.remove(0))
}

#[test]
fn threads_do_not_change_a_bit() {
    // The digits CNN: convolutions (im2col, col2im on threads), dense
    // layers, and products wide and tall enough to be cut into blocks.
    for file in ["workloads/models/cnn.toml", "workloads/models/mlp.toml"] {
        let (one, one_ledger) = trained_on(1, file, 6);
        let (many, many_ledger) = trained_on(4, file, 6);
        compare_weights(6, "4 threads", &many, &one).unwrap();
        assert_eq!(many_ledger, one_ledger, "{file}: the counters");
    }
}

/// A slice of a Fashion-MNIST example: `train` samples, one epoch, tested
/// on the first `test` test images. The fixed-point accuracy must be far
/// above chance and within five standard errors of a proportion measured
/// on `test` samples (at the f32 accuracy) of the f32 reference's.
fn fashion_slice(model_file: &str, train: usize, test: usize, floor: f64) {
    let model = load_model(&root().join(model_file)).unwrap();
    let split = load_split(&model).unwrap();
    let opts = TrainOptions {
        epochs: Some(1),
        sequential_epochs: 0,
        max_train: Some(train),
        max_test: Some(test),
        progress: false,
        engine: EngineKind::Fast,
        ..TrainOptions::default()
    };
    let run = train::train(&model, &split, &opts).unwrap();
    let (fixed, float) = (
        run.last().fixed.test_accuracy,
        run.last().float.test_accuracy,
    );
    let band = 5.0 * (float * (1.0 - float) / test as f64).sqrt();
    assert!(
        fixed > floor,
        "{model_file}: fixed {fixed:.4} (chance 0.1, floor {floor})"
    );
    assert!(
        (fixed - float).abs() <= band,
        "{model_file}: fixed {fixed:.4}, f32 {float:.4}, band {band:.4}"
    );
}

#[test]
#[ignore = "needs dataset-fashion-mnist"]
fn a_fashion_mlp_slice_learns() {
    fashion_slice("workloads/models/fashion/mlp.toml", 4000, 1000, 0.6);
}

#[test]
#[ignore = "needs dataset-fashion-mnist"]
fn a_fashion_cnn_slice_learns() {
    fashion_slice("workloads/models/fashion/cnn.toml", 3000, 1000, 0.6);
}
