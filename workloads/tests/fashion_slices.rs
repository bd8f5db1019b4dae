//! CI slices of the Fashion-MNIST ResNet-8 and spiking CNN
//! (`workloads/models/fashion/`): one epoch over the first few thousand
//! training images in the fast exact mode, the f32 reference trained
//! beside it from the same initial weights. Each asserts that both
//! networks beat chance by three standard errors of the test slice; the
//! spiking CNN's also that the fixed-point accuracy is within three
//! standard errors (of the difference of two accuracies measured on the
//! slice) of the f32 reference's.
//!
//! ResNet-8's band is printed, not asserted: without batch normalization
//! both of its networks sit on a plateau near chance for the first
//! thousands of images and leave it at steps that depend on the smallest
//! differences, so which one leads after a slice is chance, not
//! arithmetic (measured on 4,000 images, 1,000 test: lr 2^-13, fixed
//! point 53.3% and f32 31.8%; lr 2^-14, 31.8% and 57.6%). The full-set
//! figures are in the notes (a test is not a benchmark).

use std::path::Path;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_workloads::data::load_split;
use sysgrad_workloads::model::load_model;
use sysgrad_workloads::train::{self, TrainOptions};

/// Whether to assert the band between fixed point and f32.
#[derive(PartialEq)]
enum Band {
    Asserted,
    Printed,
}

fn slice(name: &str, max_train: usize, max_test: usize, band_check: Band) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("models/fashion/{name}.toml"));
    let m = load_model(&path).unwrap_or_else(|e| panic!("{e}"));
    let split = load_split(&m).unwrap_or_else(|e| panic!("{e}"));
    let opts = TrainOptions {
        epochs: Some(1),
        sequential_epochs: 0,
        max_train: Some(max_train),
        max_test: Some(max_test),
        progress: false,
        engine: EngineKind::Fast,
        ..TrainOptions::default()
    };
    let run = train::train(&m, &split, &opts).unwrap_or_else(|e| panic!("{e}"));
    let last = run.last();
    let (fixed, float) = (last.fixed.test_accuracy, last.float.test_accuracy);
    let n = run.test_size as f64;
    let chance = 1.0 / m.dataset.classes as f64;
    let above = chance + 3.0 * (chance * (1.0 - chance) / n).sqrt();
    let band = 3.0 * ((fixed * (1.0 - fixed) + float * (1.0 - float)) / n).sqrt();
    println!(
        "{name}: one epoch of {} training images, {} test images: fixed point {:.1}%, \
         f32 {:.1}% (chance {:.1}%, 3 standard errors above it {:.1}%; band {:.1} points); \
         {:.1} s fixed, {:.1} s f32",
        run.train_size,
        run.test_size,
        100.0 * fixed,
        100.0 * float,
        100.0 * chance,
        100.0 * above,
        100.0 * band,
        last.fixed_seconds,
        last.float_seconds,
    );
    assert!(
        fixed > above,
        "{name}: fixed point {fixed} not above chance"
    );
    assert!(float > above, "{name}: f32 {float} not above chance");
    assert!(
        band_check == Band::Printed || (fixed - float).abs() <= band,
        "{name}: fixed point {fixed} and f32 {float} differ by more than {band}"
    );
}

#[test]
#[ignore = "needs dataset-fashion-mnist"]
fn resnet8_on_a_slice_of_fashion_mnist() {
    slice("resnet8", 4000, 1000, Band::Printed);
}

#[test]
#[ignore = "needs dataset-fashion-mnist"]
fn spiking_cnn_on_a_slice_of_fashion_mnist() {
    slice("snn-cnn", 1000, 500, Band::Asserted);
}
