//! The dense array (`pipelining = "dense"`) against the independent oracle:
//! the same bits as the `none` schedule, on random configurations and
//! layers, both schedules and both dW sinks; and the cycles of a layer as
//! `docs/ARCHITECTURE.md` (Scheduling a layer on a dense array) gives them.

mod common;

use common::cases::*;
use proptest::prelude::*;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, Pipelining};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{Driver, Phase};

/// The case's array made dense: the multiplier register and deferred
/// saturation it may have are `none`-only options, turned off first.
fn dense(c: &Case) -> ArrayConfig {
    c.cfg
        .with_multiplier_register(false)
        .and_then(|c| c.with_deferred_saturation(false))
        .and_then(|c| c.with_pipelining(Pipelining::Dense))
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn dense_array_equals_oracle(c in case()) {
        let want = expected_on(&c, &dense(&c));
        let (w, x, dy) = (c.w.view(), c.x.view(), c.dy.view());
        let mut drv = Driver::new(dense(&c));
        same("Y", &gemm::forward(&mut drv, w, x).unwrap(), &want.y)?;
        let drained = gemm::backward(&mut drv, c.schedule, w, x, dy, DwSink::Drain).unwrap();
        same("dX (drain)", &drained.dx, &want.dx)?;
        same("dW", &drained.dw.unwrap(), &want.dw)?;
        let updated = gemm::backward(&mut drv, c.schedule, w, x, dy, update(&c)).unwrap();
        same("dX (update)", &updated.dx, &want.dx)?;
        same("updated W", &updated.w.unwrap(), &want.w)?;
    }
}

/// The forward pass of a layer costs R for the first load, `max(R, N)` per
/// tile after the first, N for the last, and R + C + 2 to get its last
/// result out.
#[test]
fn forward_cycles_follow_the_schedule() {
    let fmt = NumberFormat {
        in_bits: 8,
        acc_bits: 24,
        frac_bits: 4,
    };
    for (r, c, m, k, n) in [
        (4, 4, 9, 7, 3),
        (4, 4, 8, 8, 10),
        (3, 5, 7, 9, 1),
        (8, 8, 100, 70, 16),
    ] {
        let cfg = ArrayConfig::new(r, c, Backward::Interleaved, fmt)
            .unwrap()
            .with_pipelining(Pipelining::Dense)
            .unwrap();
        let w = ndarray::Array2::<i64>::zeros((m, k));
        let x = ndarray::Array2::<i64>::zeros((k, n));
        let mut drv = Driver::new(cfg);
        gemm::forward(&mut drv, w.view(), x.view()).unwrap();
        let tiles = m.div_ceil(c) * k.div_ceil(r);
        let want = r + (tiles - 1) * r.max(n) + n + r + c + 1;
        assert_eq!(
            drv.stats.total().cycles as usize,
            want,
            "{r}x{c} layer {m}x{k}x{n}"
        );
        assert_eq!(drv.stats.phase(Phase::Forward).cycles as usize, tiles * n);
    }
}
