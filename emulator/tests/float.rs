//! Floating-point configurations (`[format] kind = "float"`) against the
//! independent oracle (`sysgrad_oracle::float`: the CPU's IEEE fp32
//! arithmetic and the `half` and `float8` crates' conversions, sharing no
//! code with `sysgrad_config::float`).
//!
//! Random configurations: both pipelinings, both schedules, with and
//! without the multiplier register, a random one of the 27 format
//! combinations, both roundings, random seeds; layers up to 64 x 64 x 64
//! whose values include every format's edges (largest finite, smallest
//! normal, subnormals, both zeros, infinities, NaNs of every pattern,
//! values whose products and sums round into the next binade) at a
//! varying share. Y, dX, dW and the updated weights of the
//! cycle-accurate emulator and of the fast mode equal the oracle bit for
//! bit (every NaN is the format's one NaN, so bits compare NaNs too).
//!
//! Also: the soft-float operations (`sysgrad_config::float`) against the
//! oracle on edge values and random bits, and stochastic rounding's mean
//! over many draws against the exact value.

mod common;

use common::difference;
use common::float_cases::*;
use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_config::float::{self as sf, FloatFormat, FloatKind, Rounding, StochasticBits};
use sysgrad_config::Numbers;
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{fast, Driver, Stats};
use sysgrad_oracle::float as of;
use sysgrad_oracle::Matrix;
use sysgrad_rng::Rng;

// Case counts: soft-float in every PE is slower than fixed point, so the
// layers' sides are drawn mostly small (see `side`), up to 64. The whole
// file takes about 1.3 s in --release on the 2-core development machine.
const CYCLE_CASES: u32 = 256;
const FAST_CASES: u32 = 256;
fn same(what: &str, got: &Array2<i64>, want: &Matrix) -> Result<(), TestCaseError> {
    match difference(what, got, want) {
        Some(msg) => Err(TestCaseError::fail(msg)),
        None => Ok(()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CYCLE_CASES))]

    #[test]
    fn cycle_accurate_equals_oracle(seed in any::<u64>()) {
        let c = case_from(seed);
        let want = expected(&c);
        let (w, x, dy) = (c.w.view(), c.x.view(), c.dy.view());
        let tag = c.cfg.tag();
        let mut drv = Driver::new(c.cfg);
        same(&format!("Y {tag}"), &gemm::forward(&mut drv, w, x).unwrap(), &want.y)?;
        let drained = gemm::backward(&mut drv, c.schedule, w, x, dy, DwSink::Drain).unwrap();
        same(&format!("dX {tag}"), &drained.dx, &want.dx)?;
        same(&format!("dW {tag}"), &drained.dw.unwrap(), &want.dw)?;
        let sink = DwSink::Update { lr_shift: c.lr_shift };
        let updated = gemm::backward(&mut drv, c.schedule, w, x, dy, sink).unwrap();
        same(&format!("dX (update) {tag}"), &updated.dx, &want.dx)?;
        same(&format!("updated W {tag}"), &updated.w.unwrap(), &want.w)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(FAST_CASES))]

    #[test]
    fn fast_mode_equals_oracle(seed in any::<u64>()) {
        let c = case_from(seed);
        let want = expected(&c);
        let (w, x, dy) = (c.w.view(), c.x.view(), c.dy.view());
        let (cfg, mut stats) = (&c.cfg, Stats::default());
        let tag = cfg.tag();
        same(&format!("Y {tag}"), &fast::forward(&mut stats, cfg, w, x).unwrap(), &want.y)?;
        let drained = fast::backward(&mut stats, cfg, c.schedule, w, x, dy, DwSink::Drain).unwrap();
        same(&format!("dX {tag}"), &drained.dx, &want.dx)?;
        same(&format!("dW {tag}"), &drained.dw.unwrap(), &want.dw)?;
        let sink = DwSink::Update { lr_shift: c.lr_shift };
        let updated = fast::backward(&mut stats, cfg, c.schedule, w, x, dy, sink).unwrap();
        same(&format!("dX (update) {tag}"), &updated.dx, &want.dx)?;
        same(&format!("updated W {tag}"), &updated.w.unwrap(), &want.w)?;
    }
}

/// The fast mode counts what the cycle-accurate emulator counts, phase by
/// phase, on float configurations too.
#[test]
fn fast_mode_counts_as_the_cycle_accurate_one() {
    for seed in 0..24u64 {
        let c = case_from(seed * 7919);
        let (w, x, dy) = (c.w.view(), c.x.view(), c.dy.view());
        let mut drv = Driver::new(c.cfg);
        let mut stats = Stats::default();
        gemm::forward(&mut drv, w, x).unwrap();
        fast::forward(&mut stats, &c.cfg, w, x).unwrap();
        let sink = DwSink::Update {
            lr_shift: c.lr_shift,
        };
        gemm::backward(&mut drv, c.schedule, w, x, dy, sink).unwrap();
        fast::backward(&mut stats, &c.cfg, c.schedule, w, x, dy, sink).unwrap();
        assert_eq!(drv.stats, stats, "{}", c.cfg.tag());
    }
}

/// Random fp32 patterns biased to every format's range and edges.
fn fp32_samples(rng: &mut Rng, n: usize) -> Vec<u32> {
    let specials = [
        0u32,
        0x8000_0000,
        1,
        0x8000_0001,
        0x007F_FFFF,
        0x0080_0000,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC0_0001,
        0x7F80_0001,
        0x3F80_0000,
        0x43E0_0000, // 448
        0x43E8_0000, // 464
        0x4760_0000, // 57344
        0x4770_0000, // 61440
    ];
    let mut v: Vec<u32> = specials.to_vec();
    for _ in 0..n {
        let r = rng.next_u64() as u32;
        let pick = match rng.below(4) {
            0 => r,
            // Exponents from below E4M3's subnormals to beyond E5M2's range.
            _ => (r & 0x807F_FFFF) | ((127 - 24 + rng.below(44) as u32) << 23),
        };
        v.push(pick);
    }
    v
}

/// The soft-float operations equal the oracle's on edge values and random
/// bits: widen of every pattern of every format, round_to, the products
/// of every pair of bf16 pattern classes, sums with cancellation,
/// subnormal results and overflow, scale, and the update.
#[test]
fn soft_float_operations_equal_the_oracle() {
    let mut rng = Rng::new(0x5f);
    for k in FloatKind::ALL {
        let ok = oracle_kind(k);
        for p in 0..1u32 << k.encoding().bits() {
            assert_eq!(sf::widen(k, p), of::widen(ok, p), "widen {k:?} {p:#x}");
        }
        for v in fp32_samples(&mut rng, 20_000) {
            assert_eq!(
                sf::round_to(k, v),
                of::round_to(ok, v),
                "round_to {k:?} {v:#x}"
            );
            let r = rng.below(1 << 16) as u32;
            assert_eq!(
                sf::round_stochastic(k, v, r),
                of::round_stochastic(ok, v, r),
                "round_stochastic {k:?} {v:#x} r {r}"
            );
        }
    }
    // Every bf16 class against every other: products of edge values (zero
    // by infinity, subnormal by subnormal, largest by largest, ...).
    let bf = edges(FloatKind::Bf16);
    for &a in &bf {
        for &b in &bf {
            let (wa, wb) = (
                sf::widen(FloatKind::Bf16, a as u32),
                sf::widen(FloatKind::Bf16, b as u32),
            );
            assert_eq!(sf::mul32(wa, wb), of::mul32(wa, wb), "mul {a:#x} {b:#x}");
            assert_eq!(sf::add32(wa, wb), of::add32(wa, wb), "add {a:#x} {b:#x}");
        }
    }
    let samples = fp32_samples(&mut rng, 100_000);
    for pair in samples.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert_eq!(sf::mul32(a, b), of::mul32(a, b), "mul32 {a:#x} {b:#x}");
        assert_eq!(sf::add32(a, b), of::add32(a, b), "add32 {a:#x} {b:#x}");
        // Cancellation: a value and a neighbour of its negation.
        let near = (a ^ 0x8000_0000).wrapping_add(rng.below(3) as u32);
        assert_eq!(
            sf::add32(a, near),
            of::add32(a, near),
            "add32 {a:#x} {near:#x}"
        );
        let lr = rng.below(64) as u32;
        assert_eq!(sf::scale32(a, lr), of::scale(a, lr), "scale32 {a:#x} {lr}");
    }
}

/// Stochastic rounding is unbiased: over many draws of one PE's generator
/// the mean of the rounded values is the exact value, within a band of
/// five standard errors computed from the draws' count (the rounded value
/// is `lo` or `lo + ulp`, a Bernoulli variable of variance at most ulp^2/4),
/// plus the 2^-16 ulp the 16-bit fraction drops.
#[test]
fn stochastic_rounding_is_unbiased() {
    let mut rng = Rng::new(0x5eed);
    let draws = 20_000;
    for k in FloatKind::ALL {
        let ok = oracle_kind(k);
        for _ in 0..20 {
            let v = ordinary(k, &mut rng) as u32;
            // A value between v and its neighbour: random fp32 bits below
            // the format's mantissa.
            let wide = sf::widen(k, v)
                | (rng.next_u64() as u32 & ((1 << (23 - k.encoding().man_bits)) - 1));
            let exact = f64::from(f32::from_bits(wide));
            let mut g = StochasticBits::new(rng.next_u64() as u32, 3, 5);
            let mean = (0..draws)
                .map(|_| f64::from(of::to_f32(ok, sf::round_stochastic(k, wide, g.draw()))))
                .sum::<f64>()
                / draws as f64;
            let e = k.encoding();
            let exp_field = (v >> e.man_bits) & ((1 << e.exp_bits) - 1);
            let ulp = 2f64.powi(exp_field as i32 - e.bias - e.man_bits as i32);
            let band = 5.0 * ulp / 2.0 / (draws as f64).sqrt() + ulp / 65536.0;
            assert!(
                (mean - exact).abs() <= band,
                "{k:?}: mean {mean} of {draws} draws, exact {exact}, band {band}"
            );
        }
    }
}

/// The fast engine keeps its PEs' generators between layers as the array
/// does: two stochastic updates in a row on one engine of each mode give
/// the same weights and counters.
#[test]
fn engines_draw_alike_over_successive_updates() {
    use sysgrad_emulator::fast::EngineKind;
    for seed in 0..16u64 {
        let mut c = case_from(seed * 104_729 + 1);
        c.format.rounding = Rounding::Stochastic;
        c.cfg = c.cfg.with_numbers(Numbers::Float(c.format)).unwrap();
        let mut cycle = EngineKind::Cycle.engine(c.cfg);
        let mut fast = EngineKind::Fast.engine(c.cfg);
        let sink = DwSink::Update {
            lr_shift: c.lr_shift % 4,
        };
        let (mut wc, mut wf) = (c.w.clone(), c.w.clone());
        for _ in 0..3 {
            let a = cycle
                .backward(c.schedule, wc.view(), c.x.view(), c.dy.view(), sink)
                .unwrap();
            let b = fast
                .backward(c.schedule, wf.view(), c.x.view(), c.dy.view(), sink)
                .unwrap();
            (wc, wf) = (a.w.unwrap(), b.w.unwrap());
            assert_eq!(wc, wf, "{}", c.cfg.tag());
        }
        assert_eq!(cycle.stats(), fast.stats(), "{}", c.cfg.tag());
    }
}

/// A word that is not a pattern of its operand's format (a 9-bit word for
/// E4M3 weights, a negative one) is refused alike by both modes, naming
/// the operand and the `[format]` field.
#[test]
fn words_outside_their_format_are_refused() {
    let mut c = case_from(3);
    c.format.weights = FloatKind::E4M3;
    c.cfg = c.cfg.with_numbers(Numbers::Float(c.format)).unwrap();
    for bad in [0x100, -1] {
        let mut w = c.w.mapv(|v| v & 0xFF);
        w[[0, 0]] = bad;
        let mut drv = Driver::new(c.cfg);
        let cycle = gemm::forward(&mut drv, w.view(), c.x.view()).unwrap_err();
        let fast = fast::forward(&mut Stats::default(), &c.cfg, w.view(), c.x.view()).unwrap_err();
        assert_eq!(cycle, fast);
        let msg = cycle.to_string();
        assert!(
            msg.contains("W holds") && msg.contains("weights = \"e4m3\""),
            "{msg}"
        );
    }
}

/// The cases are only as good as their data: among 200 generated ones,
/// some results are NaN, some infinite, some subnormal, and many cases
/// have none of these (ordinary arithmetic); some updates round
/// stochastically to a value nearest rounding does not give.
#[test]
fn generated_cases_reach_every_kind_of_result() {
    let (mut nan, mut inf, mut sub, mut ordinary, mut stochastic) = (0, 0, 0, 0, 0);
    for seed in 0..200u64 {
        let c = case_from(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let e = expected(&c);
        let fp32 = |m: &Matrix| {
            m.values()
                .map(|v| f32::from_bits(v as u32))
                .collect::<Vec<_>>()
        };
        let all: Vec<f32> = [&e.y, &e.dx, &e.dw].into_iter().flat_map(fp32).collect();
        let (n, i, s) = (
            all.iter().any(|v| v.is_nan()),
            all.iter().any(|v| v.is_infinite()),
            all.iter().any(|v| v.is_subnormal()),
        );
        (nan, inf, sub) = (
            nan + usize::from(n),
            inf + usize::from(i),
            sub + usize::from(s),
        );
        ordinary += usize::from(!(n || i || s));
        if c.format.rounding == Rounding::Stochastic {
            let nearest = FloatFormat {
                rounding: Rounding::Nearest,
                ..c.format
            };
            let near = expected(&Case {
                cfg: c.cfg.with_numbers(Numbers::Float(nearest)).unwrap(),
                format: nearest,
                ..c.clone()
            });
            stochastic += usize::from(near.w != e.w);
        }
    }
    eprintln!("of 200 cases: NaN {nan}, inf {inf}, subnormal {sub}, none {ordinary}, SR differs {stochastic}");
    for (what, n) in [
        ("NaN", nan),
        ("infinite", inf),
        ("subnormal", sub),
        ("ordinary", ordinary),
        ("stochastic", stochastic),
    ] {
        assert!(
            (10..=190).contains(&n),
            "{n} of 200 cases with {what} results"
        );
    }
}
