//! The cycle-accurate emulator against (a) the loop reference of the same
//! fixed-point rules, over random configs and data including extremes, and
//! (b) a plain ndarray integer product where no saturation can occur.

use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_config::{fixed, ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{reference, Driver};

fn config() -> impl Strategy<Value = ArrayConfig> {
    (1usize..7, 1usize..7, any::<bool>(), 4u32..=16, 0u32..=16)
        .prop_flat_map(|(r, c, il, dw, extra)| {
            let aw = (2 * dw + extra).clamp(16, 48).max(2 * dw);
            (Just((r, c, il, dw, aw)), 0..dw)
        })
        .prop_map(|((r, c, il, dw, aw), f)| {
            let b = if il {
                Backward::Interleaved
            } else {
                Backward::Sequential
            };
            ArrayConfig::new(
                r,
                c,
                b,
                NumberFormat {
                    in_bits: dw,
                    acc_bits: aw,
                    frac_bits: f,
                },
            )
            .unwrap()
        })
}

/// Matrices whose entries are drawn mostly at random, with a good share of
/// the format's extremes so that saturation is exercised.
fn matrix(rows: usize, cols: usize, bits: u32) -> impl Strategy<Value = Array2<i64>> {
    let (lo, hi) = (fixed::min_of(bits), fixed::max_of(bits));
    let value = prop_oneof![3 => lo..=hi, 1 => Just(lo), 1 => Just(hi), 1 => Just(0i64)];
    proptest::collection::vec(value, rows * cols)
        .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
}

/// A config with a layer M x K x N up to three tiles in each dimension.
fn case() -> impl Strategy<Value = (ArrayConfig, Array2<i64>, Array2<i64>, Array2<i64>, u32)> {
    config().prop_flat_map(|cfg| {
        let b = cfg.format().in_bits;
        (1..=3 * cfg.cols(), 1..=3 * cfg.rows(), 1usize..12).prop_flat_map(move |(m, k, n)| {
            (
                Just(cfg),
                matrix(m, k, b),
                matrix(k, n, b),
                matrix(m, n, b),
                0u32..12,
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn forward_matches_reference((cfg, w, x, _dy, _) in case()) {
        let mut drv = Driver::new(cfg);
        let y = gemm::forward(&mut drv, w.view(), x.view()).unwrap();
        prop_assert_eq!(y, reference::forward(&cfg, w.view(), x.view()));
    }

    #[test]
    fn backward_matches_reference((cfg, w, x, dy, _) in case(), seq in any::<bool>()) {
        let schedule = if seq || !cfg.interleaved() { Backward::Sequential } else { Backward::Interleaved };
        let mut drv = Driver::new(cfg);
        let res = gemm::backward(&mut drv, schedule, w.view(), x.view(), dy.view(), DwSink::Drain).unwrap();
        prop_assert_eq!(res.dx, reference::dx(&cfg, w.view(), dy.view()));
        prop_assert_eq!(res.dw.unwrap(), reference::dw(&cfg, dy.view(), x.view()));
    }

    #[test]
    fn update_matches_reference((cfg, w, x, dy, lr) in case()) {
        let mut drv = Driver::new(cfg);
        let res = gemm::backward(&mut drv, cfg.backward(), w.view(), x.view(), dy.view(),
            DwSink::Update { lr_shift: lr }).unwrap();
        let dw = reference::dw(&cfg, dy.view(), x.view());
        prop_assert_eq!(res.w.unwrap(), reference::sgd(&cfg, w.view(), dw.view(), lr));
    }

    /// Interleaved and sequential schedules compute the same bits.
    #[test]
    fn schedules_agree((cfg, w, x, dy, _) in case()) {
        let mut cfg = cfg;
        cfg = cfg.with_backward(Backward::Interleaved);
        let run = |s| gemm::backward(&mut Driver::new(cfg), s, w.view(), x.view(), dy.view(), DwSink::Drain).unwrap();
        prop_assert_eq!(run(Backward::Interleaved), run(Backward::Sequential));
    }

    /// With small values nothing saturates, and the array equals an exact
    /// integer product from ndarray.
    #[test]
    fn equals_ndarray_dot_without_saturation(
        cfg in config(), m in 1usize..20, k in 1usize..20, n in 1usize..20, seed in any::<u64>()
    ) {
        let cfg = cfg
            .with_format(NumberFormat { in_bits: 8, acc_bits: 32, frac_bits: 4 })
            .unwrap();
        let mut s = seed | 1;
        let mut rnd = |r, c| Array2::from_shape_simple_fn((r, c), || {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            (s % 255) as i64 - 127
        });
        let (w, x, dy) = (rnd(m, k), rnd(k, n), rnd(m, n));
        let mut drv = Driver::new(cfg);
        prop_assert_eq!(gemm::forward(&mut drv, w.view(), x.view()).unwrap(), w.dot(&x));
        let res = gemm::backward(&mut drv, Backward::Sequential, w.view(), x.view(), dy.view(), DwSink::Drain).unwrap();
        prop_assert_eq!(res.dx, w.t().dot(&dy));
        prop_assert_eq!(res.dw.unwrap(), dy.dot(&x.t()));
    }
}

#[test]
fn interleaving_halves_the_backward_streaming_cycles() {
    let cfg = ArrayConfig::default_16x16();
    let (m, k, n) = (64, 64, 64);
    let w = Array2::<i64>::ones((m, k));
    let x = Array2::<i64>::ones((k, n));
    let dy = Array2::<i64>::ones((m, n));
    let cycles = |s| {
        let mut drv = Driver::new(cfg);
        gemm::backward(
            &mut drv,
            s,
            w.view(),
            x.view(),
            dy.view(),
            DwSink::Update { lr_shift: 4 },
        )
        .unwrap();
        drv.stats
    };
    let (il, seq) = (cycles(Backward::Interleaved), cycles(Backward::Sequential));
    let tiles = (m / 16 * (k / 16)) as u64;
    let pass = (n + 16 + 16 - 1) as u64;
    assert_eq!(il.backward().cycles, tiles * (pass + 1));
    assert_eq!(seq.backward().cycles, tiles * (2 * pass + 1));
    // The same useful work, dY read once instead of twice.
    assert_eq!(il.total().macs, seq.total().macs);
    assert_eq!(2 * il.total().dy_reads, seq.total().dy_reads);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let cfg = ArrayConfig::new(
        2,
        2,
        Backward::Sequential,
        NumberFormat {
            in_bits: 8,
            acc_bits: 16,
            frac_bits: 0,
        },
    )
    .unwrap();
    let mut drv = Driver::new(cfg);
    let w = Array2::from_elem((2, 2), 300i64);
    assert!(gemm::forward(&mut drv, w.view(), Array2::zeros((2, 1)).view()).is_err());
    let w = Array2::<i64>::zeros((2, 3));
    assert!(gemm::forward(&mut drv, w.view(), Array2::zeros((2, 1)).view()).is_err());
    let x = Array2::<i64>::zeros((2, 4));
    let dy = Array2::<i64>::zeros((2, 4));
    let w = Array2::<i64>::zeros((2, 2));
    let e = gemm::backward(
        &mut drv,
        Backward::Interleaved,
        w.view(),
        x.view(),
        dy.view(),
        DwSink::Drain,
    );
    assert!(e.is_err());
    let e = gemm::backward(
        &mut drv,
        Backward::Sequential,
        w.view(),
        x.view(),
        dy.view(),
        DwSink::Update { lr_shift: 64 },
    );
    assert!(e.is_err());
}
