//! Random floating-point cases (configuration, operands, learning rate)
//! and what the independent oracle (`sysgrad_oracle::float`) says they
//! give, shared by the emulator's float tests and the accelerator's.

use super::to_oracle;
use ndarray::Array2;
use sysgrad_config::float::{FloatFormat, FloatKind, Rounding};
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, Numbers, Pipelining};
use sysgrad_oracle::float as of;
use sysgrad_oracle::Matrix;
use sysgrad_rng::Rng;

/// The largest layer side a case draws.
pub const MAX_LAYER: usize = 64;

pub fn oracle_kind(k: FloatKind) -> of::Kind {
    match k {
        FloatKind::Bf16 => of::Kind::Bf16,
        FloatKind::E4M3 => of::Kind::E4M3,
        FloatKind::E5M2 => of::Kind::E5M2,
    }
}

/// One random case: a configuration, the operands and a learning rate.
#[derive(Debug, Clone)]
pub struct Case {
    pub cfg: ArrayConfig,
    pub format: FloatFormat,
    pub schedule: Backward,
    pub w: Array2<i64>,
    pub x: Array2<i64>,
    pub dy: Array2<i64>,
    pub lr_shift: u32,
}

/// The interesting values of a format: zeros, the smallest subnormal, the
/// largest subnormal, the smallest normal, one, the largest mantissa below
/// two (whose products and sums round into the next binade), the largest
/// finite value, infinity (where there is one) and every NaN pattern kind;
/// each with both signs.
pub fn edges(k: FloatKind) -> Vec<i64> {
    let e = k.encoding();
    let man = (1u32 << e.man_bits) - 1;
    let one = (e.bias as u32) << e.man_bits;
    let exp_all = ((1u32 << e.exp_bits) - 1) << e.man_bits;
    let mut v = vec![
        0,
        1,
        man,
        1 << e.man_bits,
        one,
        one | man,
        one | 1,
        e.max_finite,
        e.max_finite - 1,
        e.nan,
    ];
    if e.has_infinity {
        v.extend([exp_all, exp_all | 1, exp_all | man]);
    } else {
        v.push(exp_all | man);
    }
    v.iter()
        .flat_map(|&p| [p, p | e.sign_mask()])
        .map(i64::from)
        .collect()
}

/// An ordinary value of `k`: random sign and mantissa, an exponent within
/// a few binades of one (so that most sums stay finite).
pub fn ordinary(k: FloatKind, rng: &mut Rng) -> i64 {
    let e = k.encoding();
    let spread = (e.bias as usize).min(4);
    let exp = (e.bias as usize - spread + rng.below(2 * spread + 1)) as u32;
    let man = rng.below(1 << e.man_bits) as u32;
    let sign = if rng.below(2) == 0 { 0 } else { e.sign_mask() };
    i64::from(sign | exp << e.man_bits | man)
}

/// A matrix of `k` values, an edge value with probability `edge_share`
/// (in 1/1000), else a uniform bit pattern (one in eight) or an ordinary value.
pub fn matrix(
    k: FloatKind,
    rows: usize,
    cols: usize,
    edge_share: usize,
    rng: &mut Rng,
) -> Array2<i64> {
    let edges = edges(k);
    let bits = k.encoding().bits();
    Array2::from_shape_simple_fn((rows, cols), || {
        if rng.below(1000) < edge_share {
            edges[rng.below(edges.len())]
        } else if rng.below(8) == 0 {
            rng.below(1 << bits) as i64
        } else {
            ordinary(k, rng)
        }
    })
}

/// A layer side: mostly small, sometimes up to [`MAX_LAYER`].
pub fn side(rng: &mut Rng) -> usize {
    match rng.below(4) {
        0 => 1 + rng.below(MAX_LAYER),
        _ => 1 + rng.below(12),
    }
}

pub fn case_from(seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let kind = |rng: &mut Rng| FloatKind::ALL[rng.below(3)];
    let format = FloatFormat {
        weights: kind(&mut rng),
        activations: kind(&mut rng),
        gradients: kind(&mut rng),
        rounding: if rng.below(2) == 0 {
            Rounding::Nearest
        } else {
            Rounding::Stochastic
        },
        seed: rng.next_u64() as u32,
    };
    let backward = if rng.below(2) == 0 {
        Backward::Interleaved
    } else {
        Backward::Sequential
    };
    let (rows, cols) = (1 + rng.below(6), 1 + rng.below(6));
    let fixed = NumberFormat {
        in_bits: 8,
        acc_bits: 32,
        frac_bits: 0,
    };
    let mut cfg = ArrayConfig::new(rows, cols, backward, fixed)
        .unwrap()
        .with_numbers(Numbers::Float(format))
        .unwrap();
    cfg = match rng.below(3) {
        0 => cfg.with_pipelining(Pipelining::Dense).unwrap(),
        1 => cfg.with_multiplier_register(true).unwrap(),
        _ => cfg,
    };
    let (m, k, n) = (side(&mut rng), side(&mut rng), side(&mut rng));
    // From no edge value at all to nearly all of them.
    let share = [0, 5, 50, 300, 900][rng.below(5)];
    let w = matrix(format.weights, m, k, share, &mut rng);
    let x = matrix(format.activations, k, n, share, &mut rng);
    let dy = matrix(format.gradients, m, n, share, &mut rng);
    Case {
        cfg,
        format,
        schedule: if rng.below(2) == 0 {
            backward
        } else {
            Backward::Sequential
        },
        w,
        x,
        dy,
        lr_shift: rng.below(64) as u32,
    }
}

pub struct Expected {
    pub y: Matrix,
    pub dx: Matrix,
    pub dw: Matrix,
    pub w: Matrix,
}

pub fn expected(c: &Case) -> Expected {
    let f = &c.format;
    let cfg = of::FloatConfig {
        rows: c.cfg.rows(),
        cols: c.cfg.cols(),
        weights: oracle_kind(f.weights),
        activations: oracle_kind(f.activations),
        gradients: oracle_kind(f.gradients),
        stochastic: (f.rounding == Rounding::Stochastic).then_some(f.seed),
    };
    let (w, x, dy) = (to_oracle(&c.w), to_oracle(&c.x), to_oracle(&c.dy));
    let dw = of::dw(&cfg, &dy, &x);
    // The multiplier register's UPDATE takes two cycles, each stepping
    // every generator (ARCHITECTURE.md, Random bits).
    let steps = if c.cfg.multiplier_register() { 2 } else { 1 };
    Expected {
        y: of::forward(&cfg, &w, &x),
        dx: of::dx(&cfg, &w, &dy),
        w: of::update(&cfg, &w, &dw, c.lr_shift, steps),
        dw,
    }
}
