//! The cycle-accurate emulator and the fast mode against
//! the independent oracle (`sysgrad-oracle`, written from
//! `docs/ARCHITECTURE.md` alone, in i128, sharing no code with them).
//!
//! Random configurations up to 16 x 16 with either schedule, data widths
//! 4..=16, accumulators from the narrowest allowed (often, so that sums
//! saturate) to 48 bits, any fraction; layers up to 64 x 64 x 64 with a
//! varying share of the format's extremes. Where nothing can saturate, the
//! emulator and the oracle must also equal ndarray's exact integer product.
//!
//! The case counts keep the file to a few seconds in `--release` on two
//! cores (see the constants below).

mod common;

use common::cases::*;
use common::{oracle_config, to_oracle};
use ndarray::Array2;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use sysgrad_config::{Backward, NumberFormat};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{fast, Driver, Stats};
use sysgrad_oracle as oracle;
use sysgrad_oracle::Matrix;

// Case counts, and what each test took in `--release` on the 2-core
// development machine, run alone (the whole file: about 4.5 s on 2 threads).
// Cycle-accurate: 2.6 s; a 1 x 1 array on a 60^3 layer is 3600 tiles and
// 0.3 M cycles, and array sides of 1..=3 have extra weight.
const CYCLE_CASES: u32 = 512;
// Fast mode: 1.1 s, mostly generating data and running the oracle.
const FAST_CASES: u32 = 512;
// Accelerator: 0.4 s; no-saturation: 0.2 s; the generator check: 0.7 s.
const EXACT_CASES: u32 = 64;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CYCLE_CASES))]

    #[test]
    fn cycle_accurate_equals_oracle(c in case()) {
        let want = expected(&c);
        let (w, x, dy) = (c.w.view(), c.x.view(), c.dy.view());
        let mut drv = Driver::new(c.cfg);
        same("Y", &gemm::forward(&mut drv, w, x).unwrap(), &want.y)?;
        let drained = gemm::backward(&mut drv, c.schedule, w, x, dy, DwSink::Drain).unwrap();
        same("dX (drain)", &drained.dx, &want.dx)?;
        same("dW", &drained.dw.unwrap(), &want.dw)?;
        let updated = gemm::backward(&mut drv, c.schedule, w, x, dy, update(&c)).unwrap();
        same("dX (update)", &updated.dx, &want.dx)?;
        same("updated W", &updated.w.unwrap(), &want.w)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(FAST_CASES))]

    #[test]
    fn fast_mode_equals_oracle(c in case()) {
        let want = expected(&c);
        let (w, x, dy) = (c.w.view(), c.x.view(), c.dy.view());
        let (cfg, mut stats) = (&c.cfg, Stats::default());
        same("Y", &fast::forward(&mut stats, cfg, w, x).unwrap(), &want.y)?;
        let drained = fast::backward(&mut stats, cfg, c.schedule, w, x, dy, DwSink::Drain).unwrap();
        same("dX (drain)", &drained.dx, &want.dx)?;
        same("dW", &drained.dw.unwrap(), &want.dw)?;
        let updated = fast::backward(&mut stats, cfg, c.schedule, w, x, dy, update(&c)).unwrap();
        same("dX (update)", &updated.dx, &want.dx)?;
        same("updated W", &updated.w.unwrap(), &want.w)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(EXACT_CASES))]

    /// With 8-bit data and 32-bit accumulators, products are below 2^14 and
    /// sums of up to 64 of them below 2^20: nothing saturates, so the
    /// emulator, the fast mode and the oracle all equal ndarray's exact
    /// integer product (a check of the oracle too, by other means).
    #[test]
    fn all_equal_ndarray_dot_without_saturation(
        cfg in config_for(Backward::Sequential), m in 1..=MAX_LAYER, k in 1..=MAX_LAYER, n in 1..=MAX_LAYER,
        seed in any::<u64>(),
    ) {
        let cfg = cfg.with_format(NumberFormat { in_bits: 8, acc_bits: 32, frac_bits: 4 }).unwrap();
        let mut s = seed | 1;
        let mut rnd = |r, c| Array2::from_shape_simple_fn((r, c), || {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            (s % 256) as i64 - 128
        });
        let (w, x, dy) = (rnd(m, k), rnd(k, n), rnd(m, n));
        let (y, dx, dw) = (w.dot(&x), w.t().dot(&dy), dy.dot(&x.t()));
        let o = oracle_config(&cfg);
        let (ow, ox, ody) = (to_oracle(&w), to_oracle(&x), to_oracle(&dy));
        same("oracle Y", &y, &oracle::forward(&o, &ow, &ox))?;
        same("oracle dX", &dx, &oracle::dx(&o, &ow, &ody))?;
        same("oracle dW", &dw, &oracle::dw(&o, &ody, &ox))?;

        let mut drv = Driver::new(cfg);
        prop_assert_eq!(&gemm::forward(&mut drv, w.view(), x.view()).unwrap(), &y);
        let mut stats = Stats::default();
        prop_assert_eq!(&fast::forward(&mut stats, &cfg, w.view(), x.view()).unwrap(), &y);
        let (wv, xv, dyv) = (w.view(), x.view(), dy.view());
        let res = gemm::backward(&mut drv, Backward::Sequential, wv, xv, dyv, DwSink::Drain).unwrap();
        prop_assert_eq!((&res.dx, res.dw.as_ref().unwrap()), (&dx, &dw));
        let res = fast::backward(&mut stats, &cfg, Backward::Sequential, wv, xv, dyv, DwSink::Drain)
            .unwrap();
        prop_assert_eq!((&res.dx, res.dw.as_ref().unwrap()), (&dx, &dw));
    }
}

/// The cases are only as good as their data: a good share of them (at
/// least a third; 88 of these 200 at the time of writing) must drive some
/// accumulator to the clamp, or the order of the sums would go untested,
/// and some must not (the fast mode's exact float path).
#[test]
fn generated_cases_saturate_often_but_not_always() {
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let samples = 200;
    let saturated = (0..samples)
        .filter(|_| {
            let c = strategy.new_tree(&mut runner).unwrap().current();
            let aw = c.cfg.format().acc_bits;
            let clamped = |m: &Matrix| {
                m.values()
                    .any(|v| v == oracle::max_of(aw) || v == oracle::min_of(aw))
            };
            let e = expected(&c);
            clamped(&e.y) || clamped(&e.dx) || clamped(&e.dw)
        })
        .count();
    eprintln!("{saturated} of {samples} generated cases saturate");
    assert!(
        saturated >= samples / 3 && saturated <= samples * 9 / 10,
        "{saturated} of {samples} cases saturate"
    );
}
