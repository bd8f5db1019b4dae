//! Random layers for the property tests against the oracle, shared by the
//! emulator's and the accelerator's test files.

use super::{difference, oracle_config, to_oracle};
use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_config::float::Rounding;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_oracle as oracle;
use sysgrad_oracle::Matrix;

/// Largest M, K and N of a layer.
pub const MAX_LAYER: usize = 64;
/// Largest rows and columns of an array.
pub const MAX_ARRAY: usize = 16;

/// Array rows or columns: any up to 16, with extra weight on the smallest
/// (many tiles per layer) and the largest.
pub fn array_dim() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 1..=3usize, 2 => 1..=MAX_ARRAY, 1 => Just(MAX_ARRAY)]
}

/// A configuration whose array supports `schedule`, with or without a
/// multiplier register (which a dense copy must turn off first).
pub fn config_for(schedule: Backward) -> impl Strategy<Value = ArrayConfig> {
    // Only an interleaved array runs the interleaved schedule; a
    // sequential schedule runs on either.
    let backward = match schedule {
        Backward::Interleaved => Just(Backward::Interleaved).boxed(),
        Backward::Sequential => {
            prop_oneof![Just(Backward::Interleaved), Just(Backward::Sequential)].boxed()
        }
    };
    // A multiplier register, deferred saturation and stochastic rounding
    // (with its seed) each on half the configurations.
    let registers = (any::<bool>(), any::<bool>(), any::<bool>(), any::<u32>());
    (array_dim(), array_dim(), backward, 4u32..=16, registers)
        .prop_flat_map(|(r, c, backward, dw, registers)| {
            // The narrowest legal accumulator saturates on a few products at
            // the extremes, a few bits more on longer sums; wide ones rarely
            // saturate (and take the fast mode's float path).
            let narrowest = (2 * dw).max(16);
            let near = narrowest..=(narrowest + 6).min(48);
            let aw = prop_oneof![2 => Just(narrowest), 1 => near, 2 => narrowest..=48u32];
            (Just((r, c, backward, dw, registers)), aw, 0..dw)
        })
        .prop_map(
            |((r, c, backward, dw, (mul_reg, deferred, sr, seed)), aw, f)| {
                let format = NumberFormat {
                    in_bits: dw,
                    acc_bits: aw,
                    frac_bits: f,
                };
                let rounding = if sr {
                    Rounding::Stochastic
                } else {
                    Rounding::Nearest
                };
                ArrayConfig::new(r, c, backward, format)
                    .unwrap()
                    .with_update_rounding((rounding, seed))
                    .unwrap()
                    .with_multiplier_register(mul_reg)
                    .unwrap()
                    .with_deferred_saturation(deferred)
                    .unwrap()
            },
        )
}

/// A schedule, half of each, and a configuration that runs it.
pub fn config_and_schedule() -> impl Strategy<Value = (ArrayConfig, Backward)> {
    prop_oneof![Just(Backward::Interleaved), Just(Backward::Sequential)]
        .prop_flat_map(|schedule| (config_for(schedule), Just(schedule)))
}

/// Entries drawn uniformly, with `extremes` times as many min, max and 0
/// each as one uniform draw in three (0: uniform only, which lets wide
/// accumulators take the fast mode's non-saturating float path).
pub fn matrix(rows: usize, cols: usize, bits: u32, extremes: u32) -> BoxedStrategy<Array2<i64>> {
    let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
    let value = if extremes == 0 {
        (lo..=hi).boxed()
    } else {
        prop_oneof![3 => lo..=hi, extremes => Just(lo), extremes => Just(hi), extremes => Just(0i64)]
            .boxed()
    };
    proptest::collection::vec(value, rows * cols)
        .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
        .boxed()
}

#[derive(Debug, Clone)]
pub struct Case {
    pub cfg: ArrayConfig,
    pub schedule: Backward,
    pub w: Array2<i64>,
    pub x: Array2<i64>,
    pub dy: Array2<i64>,
    pub lr_shift: u32,
}

/// A layer up to 64 in M, K and N on a random configuration.
pub fn case() -> impl Strategy<Value = Case> {
    let max = MAX_LAYER;
    config_and_schedule().prop_flat_map(move |(cfg, schedule)| {
        let b = cfg.format().in_bits;
        let dims = (
            1..=max,
            1..=max,
            1..=max,
            prop_oneof![Just(0u32), Just(1), Just(3)],
        );
        (Just(cfg), Just(schedule), dims, 0u32..=63).prop_flat_map(
            move |(cfg, schedule, (m, k, n, e), lr_shift)| {
                let ops = (matrix(m, k, b, e), matrix(k, n, b, e), matrix(m, n, b, e));
                ops.prop_map(move |(w, x, dy)| Case {
                    cfg,
                    schedule,
                    w,
                    x,
                    dy,
                    lr_shift,
                })
            },
        )
    })
}

/// What the oracle says a training step of the case's layer returns.
pub struct Expected {
    pub y: Matrix,
    pub dx: Matrix,
    pub dw: Matrix,
    pub w: Matrix,
}

pub fn expected(c: &Case) -> Expected {
    expected_on(c, &c.cfg)
}

/// [`expected`] of the case's layer run on `on` (the case's array made
/// dense, say: its update draws differently).
pub fn expected_on(c: &Case, on: &ArrayConfig) -> Expected {
    let cfg = oracle_config(on);
    let (w, x, dy) = (to_oracle(&c.w), to_oracle(&c.x), to_oracle(&c.dy));
    let dw = oracle::dw(&cfg, &dy, &x);
    Expected {
        y: oracle::forward(&cfg, &w, &x),
        dx: oracle::dx(&cfg, &w, &dy),
        w: oracle::update(&cfg, &w, &dw, c.lr_shift),
        dw,
    }
}

/// `got` equals the oracle's `want` (the failure names the first
/// differing entry).
pub fn same(what: &str, got: &Array2<i64>, want: &Matrix) -> Result<(), TestCaseError> {
    match difference(what, got, want) {
        Some(msg) => Err(TestCaseError::fail(msg)),
        None => Ok(()),
    }
}

pub fn update(c: &Case) -> DwSink {
    DwSink::Update {
        lr_shift: c.lr_shift,
    }
}
