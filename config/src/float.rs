//! The floating-point number formats (`[format] kind = "float"`): the
//! three data formats a PE multiplies (bf16, OCP E4M3 and E5M2), the fp32
//! accumulator, the update's rounding and the stochastic-rounding random
//! bits. Every fact about a format is a field of its [`Encoding`] here,
//! and the generator, the emulator and the trainers read it from here
//! (`docs/ARCHITECTURE.md`, Floating-point formats).
//!
//! The operations ([`widen`], [`mul32`], [`add32`], [`scale32`],
//! [`round_to`], [`round_stochastic`], [`sgd`]) work on bit patterns with
//! integers only, one rounding routine for every format, so that they are
//! the same on every host and read like the hardware that computes them;
//! the tests check them against the CPU's own IEEE arithmetic and against
//! a brute-force nearest value.

use serde::{Deserialize, Serialize};

/// A data format of the float PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FloatKind {
    /// bfloat16: 1 sign, 8 exponent, 7 fraction bits; fp32's range.
    #[serde(rename = "bf16")]
    Bf16,
    /// OCP FP8 E4M3 ("E4M3FN"): 1 sign, 4 exponent, 3 fraction bits, no
    /// infinities, one NaN per sign (S.1111.111), largest finite 448.
    #[serde(rename = "e4m3")]
    E4M3,
    /// OCP FP8 E5M2: IEEE 754-like (infinities, NaNs), largest finite 57344.
    #[serde(rename = "e5m2")]
    E5M2,
}

/// The names a `[format]` field of a [`FloatKind`] accepts.
pub const FLOAT_KIND_NAMES: &str = "\"bf16\", \"e4m3\", \"e5m2\"";

/// The bit layout of a binary floating-point format and what it does at
/// its edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Encoding {
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    /// IEEE 754 infinities (all-ones exponent, zero fraction). Without
    /// them (E4M3) an overflow saturates to the largest finite value.
    pub has_infinity: bool,
    /// The NaN every operation that makes a NaN returns (sign 0).
    pub nan: u32,
    /// The largest finite value's bit pattern (sign 0).
    pub max_finite: u32,
}

impl Encoding {
    /// Total width: sign, exponent and fraction.
    pub const fn bits(&self) -> u32 {
        1 + self.exp_bits + self.man_bits
    }
    /// The sign bit's mask.
    pub const fn sign_mask(&self) -> u32 {
        1 << (self.exp_bits + self.man_bits)
    }
}

/// IEEE 754 binary32, the accumulators' format.
pub const FP32: Encoding = Encoding {
    exp_bits: 8,
    man_bits: 23,
    bias: 127,
    has_infinity: true,
    nan: 0x7FC0_0000,
    max_finite: 0x7F7F_FFFF,
};

impl FloatKind {
    /// Every data format, in a fixed order.
    pub const ALL: [FloatKind; 3] = [FloatKind::Bf16, FloatKind::E4M3, FloatKind::E5M2];

    /// The format's layout.
    pub const fn encoding(self) -> Encoding {
        match self {
            FloatKind::Bf16 => Encoding {
                exp_bits: 8,
                man_bits: 7,
                bias: 127,
                has_infinity: true,
                nan: 0x7FC0,
                max_finite: 0x7F7F,
            },
            FloatKind::E4M3 => Encoding {
                exp_bits: 4,
                man_bits: 3,
                bias: 7,
                has_infinity: false,
                nan: 0x7F,
                max_finite: 0x7E,
            },
            FloatKind::E5M2 => Encoding {
                exp_bits: 5,
                man_bits: 2,
                bias: 15,
                has_infinity: true,
                nan: 0x7E,
                max_finite: 0x7B,
            },
        }
    }

    /// The name the configuration uses.
    pub const fn name(self) -> &'static str {
        match self {
            FloatKind::Bf16 => "bf16",
            FloatKind::E4M3 => "e4m3",
            FloatKind::E5M2 => "e5m2",
        }
    }
}

/// How a value is rounded to a narrower format where the contract lets
/// the configuration choose (the SGD update's result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rounding {
    /// Round to nearest, ties to even.
    #[default]
    Nearest,
    /// Round away from zero with the probability of the dropped fraction
    /// (`docs/ARCHITECTURE.md`, Stochastic rounding), with random bits
    /// from [`StochasticBits`].
    Stochastic,
}

impl Rounding {
    pub fn is_nearest(&self) -> bool {
        *self == Rounding::Nearest
    }
}

/// The floating-point format of a configuration: a data format per
/// operand, fp32 accumulators, and the update's rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FloatFormat {
    /// The weights (`w`, the weight buffer).
    pub weights: FloatKind,
    /// The activations (`x`, the activation buffer, Y after REQUANT).
    pub activations: FloatKind,
    /// The gradients (`dy`, the gradient buffer, dX after REQUANT).
    pub gradients: FloatKind,
    /// The rounding of the in-PE SGD update's result.
    pub rounding: Rounding,
    /// The seed of the stochastic-rounding generators.
    pub seed: u32,
}

impl FloatFormat {
    /// Width of a data word on the array's ports and in the data buffers:
    /// the widest of the three formats (a narrower value sits in the low
    /// bits, the rest zero).
    pub fn data_bits(&self) -> u32 {
        [self.weights, self.activations, self.gradients]
            .iter()
            .map(|k| k.encoding().bits())
            .max()
            .expect("three formats")
    }

    /// A short name for file names, e.g. `bf16-e4m3-e5m2-sr`.
    pub fn tag(&self) -> String {
        let sr = match self.rounding {
            Rounding::Nearest => "",
            Rounding::Stochastic => "-sr",
        };
        format!(
            "{}-{}-{}{sr}",
            self.weights.name(),
            self.activations.name(),
            self.gradients.name()
        )
    }
}

/// The width of a stochastic-rounding draw: a rounding compares this
/// many bits of the dropped fraction with as many random bits.
pub const STOCHASTIC_BITS: u32 = 16;

/// The random bits of one PE's stochastic rounding: a 32-bit xorshift
/// generator (Marsaglia 2003, shifts 13, 17, 5), one per PE, seeded from
/// the configuration's seed and the PE's place, stepped once per
/// stochastically rounded update of that PE; a draw is the low
/// [`STOCHASTIC_BITS`] bits of the new state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StochasticBits {
    pub state: u32,
}

impl StochasticBits {
    /// The generator of the PE at `row`, `col` after reset: the seed
    /// mixed with the PE's index (never 0, which xorshift never leaves).
    pub fn new(seed: u32, row: usize, col: usize) -> Self {
        let index = (row as u32) << 16 | col as u32;
        let mixed = (seed ^ index.wrapping_mul(0x9E37_79B9)).wrapping_mul(0x85EB_CA6B);
        StochasticBits {
            state: if mixed == 0 { 1 } else { mixed },
        }
    }

    /// One step of the generator.
    pub const fn next_state(x: u32) -> u32 {
        let x = x ^ (x << 13);
        let x = x ^ (x >> 17);
        x ^ (x << 5)
    }

    /// Steps the generator and returns the draw.
    pub fn draw(&mut self) -> u32 {
        self.state = Self::next_state(self.state);
        self.state & ((1 << STOCHASTIC_BITS) - 1)
    }
}

/// A value of some format taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unpacked {
    Nan,
    Inf {
        negative: bool,
    },
    Zero {
        negative: bool,
    },
    /// `(-1)^negative * m * 2^e`, `m > 0`.
    Finite {
        negative: bool,
        m: u128,
        e: i32,
    },
}

impl Encoding {
    /// The smallest normal exponent (unbiased).
    const fn emin(&self) -> i32 {
        1 - self.bias
    }
    const fn exp_ones(&self) -> u32 {
        (1 << self.exp_bits) - 1
    }
    const fn man_mask(&self) -> u32 {
        (1 << self.man_bits) - 1
    }
    /// The pattern of an infinity (sign 0): the all-ones exponent.
    const fn infinity(&self) -> u32 {
        self.exp_ones() << self.man_bits
    }

    /// The low `bits()` bits of `bits` taken apart (higher bits ignored).
    fn unpack(&self, bits: u32) -> Unpacked {
        let negative = bits & self.sign_mask() != 0;
        let exp = (bits >> self.man_bits) & self.exp_ones();
        let frac = bits & self.man_mask();
        let nan = if self.has_infinity {
            exp == self.exp_ones() && frac != 0
        } else {
            exp == self.exp_ones() && frac == self.man_mask()
        };
        if nan {
            Unpacked::Nan
        } else if self.has_infinity && exp == self.exp_ones() {
            Unpacked::Inf { negative }
        } else if exp == 0 && frac == 0 {
            Unpacked::Zero { negative }
        } else if exp == 0 {
            Unpacked::Finite {
                negative,
                m: frac.into(),
                e: self.emin() - self.man_bits as i32,
            }
        } else {
            Unpacked::Finite {
                negative,
                m: (frac | 1 << self.man_bits).into(),
                e: exp as i32 - self.bias - self.man_bits as i32,
            }
        }
    }

    fn signed(&self, negative: bool, magnitude: u32) -> u32 {
        if negative {
            magnitude | self.sign_mask()
        } else {
            magnitude
        }
    }

    /// An infinity, or where the format has none, its largest finite value.
    fn overflow(&self, negative: bool) -> u32 {
        let magnitude = if self.has_infinity {
            self.infinity()
        } else {
            self.max_finite
        };
        self.signed(negative, magnitude)
    }

    /// `(-1)^negative * kept * 2^q`, where `q` is the format's quantum at
    /// this magnitude (`kept` has the format's precision, one bit more
    /// after a rounding carried into the next binade, or fewer for a
    /// subnormal).
    fn pack(&self, negative: bool, kept: u128, q: i32) -> u32 {
        if kept == 0 {
            return self.signed(negative, 0);
        }
        let (mut kept, mut q) = (kept, q);
        let precision = self.man_bits + 1;
        let len = 128 - kept.leading_zeros();
        if len > precision {
            // A carry into the next binade: the dropped bit is 0.
            kept >>= len - precision;
            q += (len - precision) as i32;
        }
        let top = q + (128 - kept.leading_zeros()) as i32 - 1;
        if top < self.emin() {
            return self.signed(negative, kept as u32);
        }
        let biased = (top + self.bias) as u64;
        let magnitude = biased << self.man_bits | (kept as u64 & u64::from(self.man_mask()));
        if magnitude > u64::from(self.max_finite) {
            return self.overflow(negative);
        }
        self.signed(negative, magnitude as u32)
    }

    /// `(-1)^negative * m * 2^e` (`m > 0`, exact) rounded to this format.
    fn round(&self, negative: bool, m: u128, e: i32, mode: Mode) -> u32 {
        let top = e + (128 - m.leading_zeros()) as i32 - 1;
        let q = top.max(self.emin()) - self.man_bits as i32;
        let shift = q - e;
        if shift <= 0 {
            return self.pack(negative, m << -shift, q);
        }
        if shift > 127 {
            // Every value the operations make is below 2^126: less than
            // half a quantum, and below 2^-16 of one.
            return self.pack(negative, 0, q);
        }
        let kept = m >> shift;
        let rest = m & ((1u128 << shift) - 1);
        let up = match mode {
            Mode::Nearest => {
                let half = 1u128 << (shift - 1);
                rest > half || (rest == half && kept & 1 == 1)
            }
            Mode::Stochastic(r) => {
                let phi = if shift >= STOCHASTIC_BITS as i32 {
                    rest >> (shift - STOCHASTIC_BITS as i32)
                } else {
                    rest << (STOCHASTIC_BITS as i32 - shift)
                };
                u128::from(r) < phi
            }
        };
        self.pack(negative, kept + u128::from(up), q)
    }

    /// An unpacked value in this format (`Finite` rounded by `mode`).
    fn repack(&self, v: Unpacked, mode: Mode) -> u32 {
        match v {
            Unpacked::Nan => self.nan,
            Unpacked::Inf { negative } => self.overflow(negative),
            Unpacked::Zero { negative } => self.signed(negative, 0),
            Unpacked::Finite { negative, m, e } => self.round(negative, m, e, mode),
        }
    }
}

/// How a rounding picks between the two neighbours.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Nearest,
    /// With this 16-bit draw.
    Stochastic(u32),
}

/// The exact fp32 pattern of a value of format `k` (its low bits of `bits`).
pub fn widen(k: FloatKind, bits: u32) -> u32 {
    FP32.repack(k.encoding().unpack(bits), Mode::Nearest)
}

/// IEEE 754 binary32 multiplication, rounded to nearest even, subnormals
/// kept, every NaN result [`FP32`]'s NaN.
pub fn mul32(a: u32, b: u32) -> u32 {
    use Unpacked::*;
    let negative = (a ^ b) & FP32.sign_mask() != 0;
    match (FP32.unpack(a), FP32.unpack(b)) {
        (Nan, _) | (_, Nan) => FP32.nan,
        (Inf { .. }, Zero { .. }) | (Zero { .. }, Inf { .. }) => FP32.nan,
        (Inf { .. }, _) | (_, Inf { .. }) => FP32.overflow(negative),
        (Zero { .. }, _) | (_, Zero { .. }) => FP32.signed(negative, 0),
        (Finite { m: ma, e: ea, .. }, Finite { m: mb, e: eb, .. }) => {
            FP32.round(negative, ma * mb, ea + eb, Mode::Nearest)
        }
    }
}

/// IEEE 754 binary32 addition, rounded to nearest even, subnormals kept,
/// `x + (-x) = +0`, every NaN result [`FP32`]'s NaN.
pub fn add32(a: u32, b: u32) -> u32 {
    use Unpacked::*;
    match (FP32.unpack(a), FP32.unpack(b)) {
        (Nan, _) | (_, Nan) => FP32.nan,
        (Inf { negative: x }, Inf { negative: y }) if x != y => FP32.nan,
        (Inf { negative }, _) | (_, Inf { negative }) => FP32.overflow(negative),
        (Zero { negative: x }, Zero { negative: y }) => FP32.signed(x && y, 0),
        (Zero { .. }, _) => b,
        (_, Zero { .. }) => a,
        (
            Finite {
                negative: sa,
                m: ma,
                e: ea,
            },
            Finite {
                negative: sb,
                m: mb,
                e: eb,
            },
        ) => add_finite((sa, ma, ea), (sb, mb, eb)),
    }
}

/// The sum of two nonzero finite fp32 values, rounded.
fn add_finite(a: (bool, u128, i32), b: (bool, u128, i32)) -> u32 {
    // The operand with the larger exponent first.
    let (big, small) = if a.2 >= b.2 { (a, b) } else { (b, a) };
    let gap = big.2 - small.2;
    // Significands have 24 bits: aligned exactly up to a gap of 100 the
    // sum fits 128 bits. Past that the smaller operand is below an
    // eighth of the larger's last place (which is a normal's: a gap of
    // 100 leaves no subnormal) and only its sign matters: it is kept as
    // a sticky eighth.
    let (m_big, m_small, e) = if gap <= 100 {
        (big.1 << gap, small.1, small.2)
    } else {
        (big.1 << 3, 1, big.2 - 3)
    };
    if big.0 == small.0 {
        return FP32.round(big.0, m_big + m_small, e, Mode::Nearest);
    }
    match m_big.cmp(&m_small) {
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => FP32.round(big.0, m_big - m_small, e, Mode::Nearest),
        std::cmp::Ordering::Less => FP32.round(small.0, m_small - m_big, e, Mode::Nearest),
    }
}

/// `a - b`: [`add32`] with `b`'s sign flipped.
pub fn sub32(a: u32, b: u32) -> u32 {
    add32(a, b ^ FP32.sign_mask())
}

/// `v * 2^-lr` in fp32, rounded to nearest even (exact unless subnormal).
pub fn scale32(v: u32, lr: u32) -> u32 {
    match FP32.unpack(v) {
        Unpacked::Finite { negative, m, e } => {
            FP32.round(negative, m, e - lr as i32, Mode::Nearest)
        }
        other => FP32.repack(other, Mode::Nearest),
    }
}

/// An fp32 value rounded to format `k`, to nearest even (E4M3 saturates).
pub fn round_to(k: FloatKind, v: u32) -> u32 {
    k.encoding().repack(FP32.unpack(v), Mode::Nearest)
}

/// An fp32 value rounded to format `k` stochastically with the 16-bit
/// draw `r` (`docs/ARCHITECTURE.md`, Stochastic rounding).
pub fn round_stochastic(k: FloatKind, v: u32, r: u32) -> u32 {
    k.encoding().repack(FP32.unpack(v), Mode::Stochastic(r))
}

/// An fp32 value rounded to the weight format as the update rounds it.
pub fn round_update(f: &FloatFormat, v: u32, r: u32) -> u32 {
    match f.rounding {
        Rounding::Nearest => round_to(f.weights, v),
        Rounding::Stochastic => round_stochastic(f.weights, v, r),
    }
}

/// The in-PE SGD update of weight `w` (weight format) by the fp32
/// gradient `dw` at learning-rate shift `lr`, with the draw `r` if the
/// rounding is stochastic: `round_w(sub32(widen(w), scale32(dw, lr)))`.
pub fn sgd(f: &FloatFormat, w: u32, dw: u32, lr: u32, r: u32) -> u32 {
    round_update(f, sub32(widen(f.weights, w), scale32(dw, lr)), r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_match_the_formats_largest_values() {
        // 448 = 1.75 * 2^8, 57344 = 1.75 * 2^15 (OCP FP8 spec, table 1).
        let value = |k: FloatKind| {
            let e = k.encoding();
            let m = e.max_finite & ((1 << e.man_bits) - 1);
            let x = (e.max_finite >> e.man_bits) as i32 - e.bias;
            (1.0 + m as f64 / (1u64 << e.man_bits) as f64) * 2f64.powi(x)
        };
        assert_eq!(value(FloatKind::E4M3), 448.0);
        assert_eq!(value(FloatKind::E5M2), 57344.0);
        assert_eq!(value(FloatKind::Bf16), f32::from_bits(0x7F7F_0000) as f64);
        assert_eq!(f32::from_bits(FP32.max_finite), f32::MAX);
        assert!(f32::from_bits(FP32.nan).is_nan());
    }

    #[test]
    fn every_pe_generator_starts_nonzero_and_differs_from_its_neighbours() {
        let g = |r, c| StochasticBits::new(7, r, c).state;
        assert!((0..16).all(|r| (0..16).all(|c| g(r, c) != 0)));
        assert_ne!(g(0, 0), g(0, 1));
        assert_ne!(g(0, 1), g(1, 0));
        assert_eq!(StochasticBits::next_state(1), 270_369);
    }

    /// Random fp32 patterns biased to the edges: zeros, subnormals, the
    /// largest finite values, infinities, NaNs, and ordinary values.
    fn edgy(seed: u32) -> impl FnMut() -> u32 {
        let mut g = StochasticBits::new(seed, 3, 5);
        move || {
            let mut next = || {
                g.state = StochasticBits::next_state(g.state);
                g.state
            };
            let (class, bits) = (next() % 8, next());
            let sign = bits & 0x8000_0000;
            match class {
                0 => sign,
                1 => sign | (bits & 0x007F_FFFF),
                2 => sign | (0x7F7F_FFFF - (bits & 0xFF)),
                3 => sign | 0x7F80_0000 | (bits & 1) << 22 | (bits & 3),
                4 => sign | (0x0080_0000 + (bits & 0xFF)),
                _ => bits,
            }
        }
    }

    fn same(ours: u32, cpu: f32) -> bool {
        if cpu.is_nan() {
            ours == FP32.nan
        } else {
            ours == cpu.to_bits()
        }
    }

    #[test]
    fn mul32_add32_and_scale32_are_the_cpus_ieee_arithmetic() {
        let mut draw = edgy(11);
        for _ in 0..400_000 {
            let (a, b) = (draw(), draw());
            let (x, y) = (f32::from_bits(a), f32::from_bits(b));
            assert!(same(mul32(a, b), x * y), "{a:08x} * {b:08x}");
            assert!(same(add32(a, b), x + y), "{a:08x} + {b:08x}");
            assert!(same(sub32(a, b), x - y), "{a:08x} - {b:08x}");
            let lr = b % 64;
            assert!(
                same(scale32(a, lr), x * 2f32.powi(-(lr as i32))),
                "{a:08x} >> {lr}"
            );
        }
    }

    /// Every finite value of `k`, as f64, by pattern.
    fn finite_values(k: FloatKind) -> Vec<(u32, f64)> {
        let e = k.encoding();
        (0..1u32 << e.bits())
            .filter_map(|p| {
                let v = f64::from(f32::from_bits(widen(k, p)));
                v.is_finite().then_some((p, v))
            })
            .collect()
    }

    #[test]
    fn widen_gives_each_patterns_value_from_its_fields() {
        for k in FloatKind::ALL {
            let e = k.encoding();
            for p in 0..1u32 << e.bits().min(16) {
                let exp = (p >> e.man_bits) & ((1 << e.exp_bits) - 1);
                let frac = f64::from(p & ((1 << e.man_bits) - 1));
                let scale = 2f64.powi(e.man_bits as i32);
                let magnitude = if exp == 0 {
                    frac / scale * 2f64.powi(1 - e.bias)
                } else {
                    (1.0 + frac / scale) * 2f64.powi(exp as i32 - e.bias)
                };
                let v = f32::from_bits(widen(k, p));
                // Infinities and NaNs (E4M3's only special is its NaN).
                let special =
                    exp == (1 << e.exp_bits) - 1 && (e.has_infinity || p & !e.sign_mask() == e.nan);
                if special {
                    assert!(v.is_nan() || v.is_infinite(), "{k:?} {p:x}");
                    continue;
                }
                let signed = if p & e.sign_mask() != 0 {
                    -magnitude
                } else {
                    magnitude
                };
                assert_eq!(f64::from(v), signed, "{k:?} {p:x}");
            }
        }
    }

    #[test]
    fn round_to_picks_the_nearest_value_ties_to_the_even_pattern() {
        let mut draw = edgy(5);
        for k in FloatKind::ALL {
            let e = k.encoding();
            let mut values = finite_values(k);
            values.retain(|&(p, _)| p & e.sign_mask() == 0);
            let max = values.iter().map(|v| v.1).fold(0.0, f64::max);
            for _ in 0..20_000 {
                let v = draw();
                let x = f64::from(f32::from_bits(v));
                let got = round_to(k, v);
                if x.is_nan() {
                    assert_eq!(got, e.nan);
                    continue;
                }
                let negative = x.is_sign_negative();
                let a = x.abs();
                let ulp_top = max - values[values.len() - 2].1;
                let beyond = a >= max + ulp_top / 2.0 && e.has_infinity;
                let expect = if a > max && !e.has_infinity {
                    e.max_finite
                } else if beyond || a.is_infinite() {
                    e.infinity()
                } else {
                    // Nearest by value, the even pattern on a tie.
                    let mut best = values[0];
                    for &c in &values {
                        let (dc, db) = ((c.1 - a).abs(), (best.1 - a).abs());
                        if dc < db || (dc == db && c.0 % 2 == 0) {
                            best = c;
                        }
                    }
                    best.0
                };
                let expect = if negative {
                    expect | e.sign_mask()
                } else {
                    expect
                };
                assert_eq!(got, expect, "{k:?} of {v:08x} ({x})");
            }
        }
    }

    #[test]
    fn bf16_nearest_is_the_usual_bit_trick() {
        let mut draw = edgy(8);
        for _ in 0..200_000 {
            let v = draw();
            if f32::from_bits(v).is_nan() {
                continue;
            }
            let trick = (v + 0x7FFF + ((v >> 16) & 1)) >> 16;
            assert_eq!(round_to(FloatKind::Bf16, v), trick, "{v:08x}");
        }
    }

    #[test]
    fn stochastic_rounding_picks_a_neighbour_with_the_dropped_fraction() {
        let mut draw = edgy(9);
        for k in FloatKind::ALL {
            for _ in 0..5_000 {
                let v = draw();
                let x = f64::from(f32::from_bits(v));
                if !x.is_finite() {
                    assert_eq!(round_stochastic(k, v, 0), round_to(k, v));
                    continue;
                }
                // r = 0xFFFF never rounds away (phi <= 0xFFFF); r = 0
                // does whenever anything was dropped to 16 bits.
                let low = round_stochastic(k, v, 0xFFFF);
                let high = round_stochastic(k, v, 0);
                let (lo, hi) = (
                    f64::from(f32::from_bits(widen(k, low))),
                    f64::from(f32::from_bits(widen(k, high))),
                );
                // Beyond the largest finite value both neighbours are the
                // overflow's result.
                let max = f64::from(f32::from_bits(widen(k, k.encoding().max_finite)));
                assert!(lo.abs() <= x.abs() || x.abs() > max, "{k:?} {v:08x}");
                assert!(hi.abs() >= lo.abs());
                let nearest = round_to(k, v);
                assert!(nearest == low || nearest == high, "{k:?} {v:08x}");
            }
        }
    }

    #[test]
    fn stochastic_rounding_is_unbiased_to_16_bits() {
        // 1 + 2^-9 + 2^-12 in bf16 (7 fraction bits): the dropped fraction
        // is 2^-2 + 2^-5 of an ulp = 0.28125, exactly 18432 / 65536.
        let v = (1.0f32 + 2f32.powi(-9) + 2f32.powi(-12)).to_bits();
        let ups = (0..65536)
            .filter(|&r| {
                round_stochastic(FloatKind::Bf16, v, r)
                    != round_to(FloatKind::Bf16, 1.0f32.to_bits())
            })
            .count();
        assert_eq!(ups, 18432);
    }
}
