//! The cycle-accurate emulator, the fast mode and the accelerator against
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

use common::{difference, oracle_config, to_oracle};
use ndarray::Array2;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, MAX_BUFFER_DEPTH};
use sysgrad_emulator::accel::{
    compile_layer, encode_program, Accelerator, Blocked, BufferId, Command, DataBuffer, FcLayer,
};
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
const ACCEL_CASES: u32 = 32;
const EXACT_CASES: u32 = 64;

/// Largest M, K and N of a layer.
const MAX_LAYER: usize = 64;
/// Largest rows and columns of an array.
const MAX_ARRAY: usize = 16;

/// Array rows or columns: any up to 16, with extra weight on the smallest
/// (many tiles per layer) and the largest.
fn array_dim() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 1..=3usize, 2 => 1..=MAX_ARRAY, 1 => Just(MAX_ARRAY)]
}

/// A configuration whose array supports `schedule`.
fn config_for(schedule: Backward) -> impl Strategy<Value = ArrayConfig> {
    // Only an interleaved array runs the interleaved schedule; a
    // sequential schedule runs on either.
    let backward = match schedule {
        Backward::Interleaved => Just(Backward::Interleaved).boxed(),
        Backward::Sequential => {
            prop_oneof![Just(Backward::Interleaved), Just(Backward::Sequential)].boxed()
        }
    };
    (array_dim(), array_dim(), backward, 4u32..=16)
        .prop_flat_map(|(r, c, backward, dw)| {
            // The narrowest legal accumulator saturates on a few products at
            // the extremes, a few bits more on longer sums; wide ones rarely
            // saturate (and take the fast mode's float path).
            let narrowest = (2 * dw).max(16);
            let near = narrowest..=(narrowest + 6).min(48);
            let aw = prop_oneof![2 => Just(narrowest), 1 => near, 2 => narrowest..=48u32];
            (Just((r, c, backward, dw)), aw, 0..dw)
        })
        .prop_map(|((r, c, backward, dw), aw, f)| {
            let format = NumberFormat {
                in_bits: dw,
                acc_bits: aw,
                frac_bits: f,
            };
            ArrayConfig::new(r, c, backward, format)
        })
}

/// A schedule, half of each, and a configuration that runs it.
fn config_and_schedule() -> impl Strategy<Value = (ArrayConfig, Backward)> {
    prop_oneof![Just(Backward::Interleaved), Just(Backward::Sequential)]
        .prop_flat_map(|schedule| (config_for(schedule), Just(schedule)))
}

/// Entries drawn uniformly, with `extremes` times as many min, max and 0
/// each as one uniform draw in three (0: uniform only, which lets wide
/// accumulators take the fast mode's non-saturating float path).
fn matrix(rows: usize, cols: usize, bits: u32, extremes: u32) -> BoxedStrategy<Array2<i64>> {
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
struct Case {
    cfg: ArrayConfig,
    schedule: Backward,
    w: Array2<i64>,
    x: Array2<i64>,
    dy: Array2<i64>,
    lr_shift: u32,
}

/// A layer up to 64 in M, K and N on a random configuration.
fn case() -> impl Strategy<Value = Case> {
    let max = MAX_LAYER;
    config_and_schedule().prop_flat_map(move |(cfg, schedule)| {
        let b = cfg.format.in_bits;
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
struct Expected {
    y: Matrix,
    dx: Matrix,
    dw: Matrix,
    w: Matrix,
}

fn expected(c: &Case) -> Expected {
    let cfg = oracle_config(&c.cfg);
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
fn same(what: &str, got: &Array2<i64>, want: &Matrix) -> Result<(), TestCaseError> {
    match difference(what, got, want) {
        Some(msg) => Err(TestCaseError::fail(msg)),
        None => Ok(()),
    }
}

fn update(c: &Case) -> DwSink {
    DwSink::Update {
        lr_shift: c.lr_shift,
    }
}

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

/// Buffers deep enough for any layer of the cases (at most 3 * 64 * 64
/// accumulator lines on a 1 x 1 array).
fn with_deep_buffers(mut cfg: ArrayConfig) -> ArrayConfig {
    let b = &mut cfg.buffers;
    for depth in [
        &mut b.weights,
        &mut b.activations,
        &mut b.gradients,
        &mut b.accumulators,
    ] {
        *depth = MAX_BUFFER_DEPTH;
    }
    cfg
}

/// What the accelerator's buffers hold after the program of
/// [`run_on_accelerator`].
struct AccelResults {
    y: Array2<i64>,
    dx: Array2<i64>,
    w: Array2<i64>,
    y_requantized: Array2<i64>,
}

/// One training step of an FC layer as a command program on the
/// accelerator, then a REQUANT of Y, read back from its buffers.
fn run_on_accelerator(c: &Case) -> AccelResults {
    let cfg = with_deep_buffers(c.cfg);
    let (m, k) = c.w.dim();
    let l = FcLayer::new(&cfg, m, k, c.x.ncols());
    let mut acc = Accelerator::new(cfg);
    l.w.store(acc.buffer_mut(BufferId::Weights), c.w.view())
        .unwrap();
    l.x.store(acc.buffer_mut(BufferId::Activations), c.x.view())
        .unwrap();
    l.dy.store(acc.buffer_mut(BufferId::Gradients), c.dy.view())
        .unwrap();
    // REQUANT moves whole lines, so Y (blocks of `cols` rows) goes to the
    // gradient buffer, whose lines have `cols` lanes too, after dY.
    let y_q = Blocked {
        base: l.dy.end(),
        ..l.y
    };
    let mut prog = compile_layer(&cfg, &l, c.schedule, update(c)).unwrap();
    let halt = prog.pop();
    assert_eq!(halt, Some(Command::Halt));
    prog.extend([
        Command::Requant {
            src: l.y.base as u16,
            dst: DataBuffer::Gradients,
            dst_addr: y_q.base as u16,
            count: l.y.lines() as u16,
        },
        Command::Halt,
    ]);
    acc.run(&encode_program(&prog)).unwrap();
    let results = acc.buffer(BufferId::Accumulators);
    AccelResults {
        y: l.y.load(results).unwrap(),
        dx: l.dx.load(results).unwrap(),
        w: l.w.load(acc.buffer(BufferId::Weights)).unwrap(),
        y_requantized: y_q.load(acc.buffer(BufferId::Gradients)).unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ACCEL_CASES))]

    #[test]
    fn accelerator_program_equals_oracle(c in case()) {
        let want = expected(&c);
        let got = run_on_accelerator(&c);
        same("Y", &got.y, &want.y)?;
        same("dX", &got.dx, &want.dx)?;
        same("updated W", &got.w, &want.w)?;
        let y_q = oracle::requantize_matrix(&oracle_config(&c.cfg), &want.y);
        same("requantized Y", &got.y_requantized, &y_q)?;
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
        let mut cfg = cfg;
        cfg.format = NumberFormat { in_bits: 8, acc_bits: 32, frac_bits: 4 };
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
            let aw = c.cfg.format.acc_bits;
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
