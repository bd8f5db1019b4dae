//! The fast exact mode against the cycle-accurate driver: on random
//! configurations up to 16 x 16 and layers of up to three tiles in M and K
//! and up to 64 columns (data with a large share of extremes so that
//! saturation happens), every schedule and both dW sinks, the results, the
//! errors and every per-phase counter agree. (Both modes are checked
//! against the independent oracle on larger layers in `oracle.rs`.)

use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_config::{fixed, ArrayConfig, Backward, NumberFormat, Pipelining};
use sysgrad_emulator::fast::{self, Engine, EngineKind};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::Stats;

/// Largest array side and stream length N.
const MAX_ARRAY: usize = 16;
const MAX_N: usize = 64;

/// An array side: any up to 16, with extra weight on 16 (the largest
/// layers) and on 1..=3 (the most tiles per layer).
fn array_dim() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 1..=3usize, 2 => 1..=MAX_ARRAY, 1 => Just(MAX_ARRAY)]
}

fn config() -> impl Strategy<Value = ArrayConfig> {
    (
        array_dim(),
        array_dim(),
        any::<bool>(),
        4u32..=16,
        // 0: dense; 1: none; 2: none with a multiplier register; 3: none
        // with deferred saturation; 4: none with both.
        0u8..5,
    )
        .prop_flat_map(|(r, c, il, dw, kind)| {
            let narrowest = (2 * dw).max(16);
            // Narrow accumulators saturate often; wide ones take the float path.
            let aw = prop_oneof![2 => Just(narrowest), 3 => narrowest..=48u32];
            (Just((r, c, il, dw, kind)), aw, 0..dw)
        })
        .prop_map(|((r, c, il, dw, kind), aw, f)| {
            let b = if il {
                Backward::Interleaved
            } else {
                Backward::Sequential
            };
            let format = NumberFormat {
                in_bits: dw,
                acc_bits: aw,
                frac_bits: f,
            };
            let pipelining = if kind == 0 {
                Pipelining::Dense
            } else {
                Pipelining::None
            };
            ArrayConfig::new(r, c, b, format)
                .unwrap()
                .with_pipelining(pipelining)
                .unwrap()
                .with_multiplier_register(kind == 2 || kind == 4)
                .unwrap()
                .with_deferred_saturation(kind >= 3)
                .unwrap()
        })
}

/// Entries mostly random, with a good share of the extremes and zeros.
fn matrix(rows: usize, cols: usize, bits: u32) -> impl Strategy<Value = Array2<i64>> {
    let (lo, hi) = (fixed::min_of(bits), fixed::max_of(bits));
    let value = prop_oneof![3 => lo..=hi, 1 => Just(lo), 1 => Just(hi), 1 => Just(0i64)];
    proptest::collection::vec(value, rows * cols)
        .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
}

#[derive(Debug, Clone)]
struct Case {
    cfg: ArrayConfig,
    w: Array2<i64>,
    x: Array2<i64>,
    dy: Array2<i64>,
}

/// A layer of up to three tiles (partial ones included) in M and K, and
/// up to 64 columns.
fn case() -> impl Strategy<Value = Case> {
    config().prop_flat_map(|cfg| {
        let b = cfg.format().in_bits;
        (1..=3 * cfg.cols(), 1..=3 * cfg.rows(), 1..=MAX_N).prop_flat_map(move |(m, k, n)| {
            (matrix(m, k, b), matrix(k, n, b), matrix(m, n, b)).prop_map(move |(w, x, dy)| Case {
                cfg,
                w,
                x,
                dy,
            })
        })
    })
}

fn schedule() -> impl Strategy<Value = Backward> {
    prop_oneof![Just(Backward::Interleaved), Just(Backward::Sequential)]
}

/// Both sinks, with the odd invalid lr_shift (must fail the same way).
fn sink() -> impl Strategy<Value = DwSink> {
    prop_oneof![
        2 => Just(DwSink::Drain),
        3 => (0u32..=63).prop_map(|lr_shift| DwSink::Update { lr_shift }),
        1 => (64u32..80).prop_map(|lr_shift| DwSink::Update { lr_shift }),
    ]
}

/// Runs forward then backward on one engine of each kind, checking results
/// and counters after each call (counters accumulate across calls).
fn run_both(c: &Case, schedule: Backward, sink: DwSink) -> Result<(), TestCaseError> {
    let mut cycle = EngineKind::Cycle.engine(c.cfg);
    let mut fast = EngineKind::Fast.engine(c.cfg);
    let y = fast.forward(c.w.view(), c.x.view());
    prop_assert_eq!(&y, &cycle.forward(c.w.view(), c.x.view()));
    prop_assert_eq!(fast.stats(), cycle.stats());
    let back =
        |e: &mut Box<dyn Engine>| e.backward(schedule, c.w.view(), c.x.view(), c.dy.view(), sink);
    prop_assert_eq!(back(&mut fast), back(&mut cycle));
    prop_assert_eq!(fast.stats(), cycle.stats());
    Ok(())
}

/// Where an out-of-range value is planted.
#[derive(Debug, Clone, Copy)]
enum Operand {
    W,
    X,
    Dy,
}

proptest! {
    // 512 cases each: about 0.4 s for the file in --release on 2 cores.
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn fast_equals_cycle_accurate(c in case(), schedule in schedule(), sink in sink()) {
        run_both(&c, schedule, sink)?;
    }

    /// An out-of-range value gives the same error, found at the same tile
    /// (so the same partial counters), as the driver.
    #[test]
    fn bad_values_fail_alike(
        c in case(), schedule in schedule(), sink in sink(),
        operand in prop_oneof![Just(Operand::W), Just(Operand::X), Just(Operand::Dy)],
        at in any::<prop::sample::Index>(), high in any::<bool>(), far in 1i64..1000,
    ) {
        let mut c = c;
        let bits = c.cfg.format().in_bits;
        let bad = if high { fixed::max_of(bits) + far } else { fixed::min_of(bits) - far };
        let m = match operand { Operand::W => &mut c.w, Operand::X => &mut c.x, Operand::Dy => &mut c.dy };
        let i = at.index(m.len());
        *m.iter_mut().nth(i).unwrap() = bad;
        run_both(&c, schedule, sink)?;
    }

    /// Inner dimensions that do not agree fail alike (and charge nothing).
    #[test]
    fn shape_errors_fail_alike(
        cfg in config(), m in 0usize..6, k in 0usize..6, n in 0usize..6,
        dk in 0usize..2, dm in 0usize..2, dn in 0usize..2, schedule in schedule(), sink in sink(),
    ) {
        let c = Case {
            cfg,
            w: Array2::ones((m, k)),
            x: Array2::ones((k + dk, n)),
            dy: Array2::ones((m + dm, n + dn)),
        };
        run_both(&c, schedule, sink)?;
    }
}

/// Counting without data gives the counters of the run with data.
#[test]
fn counting_without_data_matches() {
    for cfg in [
        ArrayConfig::default_16x16(),
        ArrayConfig::default_16x16()
            .with_pipelining(Pipelining::Dense)
            .unwrap(),
    ] {
        counting_without_data_matches_on(cfg);
    }
}

fn counting_without_data_matches_on(cfg: ArrayConfig) {
    let (m, k, n) = (40, 70, 9);
    let (w, x, dy) = (
        Array2::ones((m, k)),
        Array2::ones((k, n)),
        Array2::ones((m, n)),
    );
    for sink in [DwSink::Drain, DwSink::Update { lr_shift: 3 }] {
        for schedule in [Backward::Interleaved, Backward::Sequential] {
            let mut with_data = Stats::default();
            fast::forward(&mut with_data, &cfg, w.view(), x.view()).unwrap();
            fast::backward(
                &mut with_data,
                &cfg,
                schedule,
                w.view(),
                x.view(),
                dy.view(),
                sink,
            )
            .unwrap();
            let mut counted = Stats::default();
            fast::count_forward(&mut counted, &cfg, (m, k, n)).unwrap();
            fast::count_backward(&mut counted, &cfg, schedule, (m, k, n), sink).unwrap();
            assert_eq!(with_data, counted);
        }
    }
}

#[test]
fn engine_kind_parses() {
    assert_eq!("fast".parse::<EngineKind>(), Ok(EngineKind::Fast));
    assert_eq!("cycle".parse::<EngineKind>(), Ok(EngineKind::Cycle));
    assert!("gpu".parse::<EngineKind>().is_err());
}
