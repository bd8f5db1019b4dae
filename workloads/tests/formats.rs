//! Training in the array's floating-point formats (`sysgrad formats`):
//! the clocked array and the fast exact mode train the same bits, and a
//! short all-bf16 run learns like its f32 reference.

mod common;

use common::*;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_workloads::train::formats::{train_formats, FormatChoice};
use sysgrad_workloads::train::TrainOptions;

fn opts(train: usize, test: usize, engine: EngineKind) -> TrainOptions {
    TrainOptions {
        epochs: Some(1),
        max_train: Some(train),
        max_test: Some(test),
        progress: false,
        engine,
        ..TrainOptions::default()
    }
}

fn formats(tags: &[&str]) -> Vec<FormatChoice> {
    tags.iter().map(|t| t.parse().unwrap()).collect()
}

const MOMENTUM: &str = r#"
[optimizer]
kind = "momentum"
lr_shift = 10
grad_scale_shift = 4
momentum = 0.875
"#;

/// Every step's products on the clocked float array and in the fast mode
/// give the same network: the test losses agree to the last bit, for the
/// in-PE update (SGD) and the host's (momentum), nearest and stochastic,
/// the fixed-point format's stochastic update too.
#[test]
fn the_clocked_array_and_the_fast_mode_train_the_same_bits() {
    let fs = formats(&["bf16-sr", "bf16-e4m3-e5m2", "fixed-sr"]);
    for optimizer in [SGD, MOMENTUM] {
        let m = model(&small_model((4, 4), "", MLP_LAYERS, optimizer, 8));
        let split = split(&m);
        let cycle = train_formats(&m, &split, &fs, &opts(32, 24, EngineKind::Cycle)).unwrap();
        let fast = train_formats(&m, &split, &fs, &opts(32, 24, EngineKind::Fast)).unwrap();
        for (c, f) in cycle.iter().zip(&fast) {
            assert_eq!(c.name, f.name);
            assert_eq!(c.test_loss, f.test_loss, "{}", c.name);
            assert_eq!(c.test_accuracy, f.test_accuracy, "{}", c.name);
        }
    }
}

/// A few hundred samples: all-bf16 with stochastic rounding learns, and
/// lands within a band of f32 computed from the test set's size (five
/// standard errors of a proportion at f32's accuracy).
#[test]
fn all_bf16_learns_like_f32() {
    let m = model(&small_model((8, 8), "", MLP_LAYERS, SGD, 16));
    let split = split(&m);
    let mut o = opts(320, 160, EngineKind::Fast);
    o.epochs = Some(3);
    let runs = train_formats(&m, &split, &formats(&["bf16-sr"]), &o).unwrap();
    let (f32_run, bf16) = (&runs[0], &runs[2]);
    assert_eq!(
        (f32_run.name.as_str(), bf16.name.as_str()),
        ("f32", "bf16-bf16-bf16-sr")
    );
    let (p, q) = (f32_run.test_accuracy[2], bf16.test_accuracy[2]);
    assert!(q > 0.6, "bf16 {q}");
    let band = 5.0 * (p * (1.0 - p) / 160.0).sqrt();
    assert!((p - q).abs() <= band, "f32 {p}, bf16 {q}, band {band}");
    assert!(
        bf16.test_loss[2] < bf16.test_loss[0],
        "{:?}",
        bf16.test_loss
    );
}

/// The model's own configuration must be fixed point (a model file has
/// no float formats: they are chosen per run); a float one is refused
/// naming the field.
#[test]
fn a_float_model_configuration_is_refused() {
    let m = model(&small_model((4, 4), "", MLP_LAYERS, SGD, 8));
    let bf16: sysgrad_config::float::FloatFormat = "bf16".parse().unwrap();
    let cfg = m
        .cfg
        .with_numbers(sysgrad_config::Numbers::Float(bf16))
        .unwrap();
    let float_model = sysgrad_workloads::model::Model { cfg, ..m.clone() };
    let e = train_formats(&float_model, &split(&m), &[], &opts(8, 8, EngineKind::Fast))
        .unwrap_err()
        .to_string();
    assert!(e.contains("format.kind"), "{e}");
}
