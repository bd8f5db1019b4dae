//! Shared helpers: small models written as TOML, parsed like a user's file.

#![allow(dead_code)]

use std::path::Path;
use sysgrad_workloads::data::{self, Split};
use sysgrad_workloads::model::{parse_model, Model};

/// A model from TOML text (the file name only appears in messages).
pub fn model(toml: &str) -> Model {
    parse_model(toml, false, Path::new("test.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// The error message a model text produces.
pub fn model_error(toml: &str) -> String {
    match parse_model(toml, false, Path::new("bad.toml")) {
        Ok(_) => panic!("expected an error for:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

/// The shipped digits split with the model's seed and test fraction.
pub fn split(m: &Model) -> Split {
    let samples = data::load(&m.data_path).unwrap();
    data::split(
        &samples,
        m.spec.training.test_fraction,
        m.spec.training.seed,
    )
    .unwrap()
}

/// A small model: `layers` is the TOML of the `[[layers]]` tables.
pub fn small_model(
    array: (usize, usize),
    input: &str,
    layers: &str,
    optimizer: &str,
    batch: usize,
) -> String {
    format!(
        r#"
name = "small"
[array]
rows = {}
cols = {}
[format]
in_bits = 16
acc_bits = 40
frac_bits = 10
{input}
{layers}
{optimizer}
[training]
epochs = 3
batch_size = {batch}
seed = 7
"#,
        array.0, array.1
    )
}

pub const MLP_LAYERS: &str = r#"
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 16
[[layers]]
type = "relu"
[[layers]]
type = "dense"
units = 10
"#;

pub const SGD: &str = r#"
[optimizer]
kind = "sgd"
lr_shift = 10
grad_scale_shift = 4
"#;
