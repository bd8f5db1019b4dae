//! Bridging the emulator's types to the independent oracle's, shared by
//! the test files that check against it.
// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

pub mod cases;
pub mod float_cases;

use ndarray::Array2;
use sysgrad_config::{ArrayConfig, BufferDepths, Pipelining, MAX_BUFFER_DEPTH};
use sysgrad_oracle::{self as oracle, Matrix};

/// `cfg` with every buffer as deep as allowed, so that any layer of the
/// cases fits (at most 3 * 64 * 64 accumulator lines on a 1 x 1 array).
pub fn with_deep_buffers(cfg: ArrayConfig) -> ArrayConfig {
    cfg.with_buffers(BufferDepths {
        weights: MAX_BUFFER_DEPTH,
        activations: MAX_BUFFER_DEPTH,
        gradients: MAX_BUFFER_DEPTH,
        accumulators: MAX_BUFFER_DEPTH,
        ..cfg.buffers()
    })
    .expect("the deepest buffers are allowed")
}

/// `cfg` with `pipelining`: the multiplier register and deferred
/// saturation it may have are `none`-only options, turned off for the
/// dense controller.
pub fn with_pipelining(cfg: &ArrayConfig, pipelining: Pipelining) -> ArrayConfig {
    let none_only = pipelining == Pipelining::None;
    cfg.with_multiplier_register(none_only && cfg.multiplier_register())
        .and_then(|c| c.with_deferred_saturation(none_only && c.deferred_saturation()))
        .and_then(|c| c.with_pipelining(pipelining))
        .unwrap()
}

/// The oracle's view of a configuration: array shape and number format.
pub fn oracle_config(cfg: &ArrayConfig) -> oracle::Config {
    oracle::Config {
        rows: cfg.rows(),
        cols: cfg.cols(),
        format: oracle::Format {
            in_bits: cfg.format().in_bits,
            acc_bits: cfg.format().acc_bits,
            frac_bits: cfg.format().frac_bits,
        },
        stochastic: cfg
            .numbers()
            .stochastic_seed()
            .map(|seed| oracle::Stochastic {
                seed,
                cycles_per_update: if cfg.multiplier_register() { 2 } else { 1 },
            }),
    }
}

pub fn to_oracle(a: &Array2<i64>) -> Matrix {
    Matrix::from_fn(a.nrows(), a.ncols(), |r, c| a[[r, c]] as i128)
}

/// The first entry where `got` and `want` differ, and how many do, as a
/// message (a whole 64 x 64 matrix in an assertion would hide it); `None`
/// if they are equal.
pub fn difference(what: &str, got: &Array2<i64>, want: &Matrix) -> Option<String> {
    let got = to_oracle(got);
    if got.dim() != want.dim() {
        return Some(format!(
            "{what}: emulator {:?}, oracle {:?}",
            got.dim(),
            want.dim()
        ));
    }
    let (rows, cols) = want.dim();
    let diffs: Vec<(usize, usize)> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| (r, c)))
        .filter(|&ix| got[ix] != want[ix])
        .collect();
    let &ix = diffs.first()?;
    Some(format!(
        "{what}: {} of {} entries differ; first at {ix:?}: emulator {}, oracle {}",
        diffs.len(),
        rows * cols,
        got[ix],
        want[ix]
    ))
}

/// Panics with [`difference`]'s message unless `got` equals `want`.
pub fn assert_same(what: &str, got: &Array2<i64>, want: &Matrix) {
    if let Some(msg) = difference(what, got, want) {
        panic!("{msg}");
    }
}
