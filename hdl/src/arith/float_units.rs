//! The floating-point units as Verilog functions, generated from the
//! format tables (`sysgrad_config::float::Encoding`;
//! `docs/ARCHITECTURE.md`, Floating-point formats): unpack a data value,
//! widen it to fp32, multiply (exact significand product, rounded only
//! where the product leaves fp32's normal range), add (align with guard,
//! round and sticky bits, add, normalise by a leading-zero count), scale by
//! a power of two, and round fp32 to a narrower format to nearest even or
//! stochastically. One rounder ([`rounder`]) does every rounding: the
//! adder's, the multiplier's, the scale's and the narrowing ones.
//!
//! An unpacked data value is [`UNPACKED_BITS`] wide: `{nan, inf, zero,
//! sign, exp[9:0], sig[7:0]}`, with `exp` the unbiased exponent (two's
//! complement) of the significand's leading one, which `sig` holds at
//! bit 7 (subnormals are normalised as they are unpacked).

use crate::expr::intern;
use crate::ir::*;
use sysgrad_config::float::{Encoding, FloatKind, FP32, STOCHASTIC_BITS};

/// Width of an unpacked data value.
pub(crate) const UNPACKED_BITS: u32 = 22;
/// Width of the rounder's exponent input (two's complement, fp32 bias).
const EXP_BITS: u32 = 12;
/// Width of the rounder's significand input: leading one at the top,
/// then 23 fraction bits and 3 more (guard, round, sticky) below.
const SIG_BITS: u32 = 27;
/// Bits the rounder shifts out below the significand (as many as it
/// has, so that a value shifted entirely out is still seen as sticky).
const LOW_BITS: u32 = 28;

/// A function under construction: its locals and statements.
struct Body {
    locals: Vec<Decl>,
    stmts: Vec<Stmt>,
}

impl Body {
    fn new() -> Body {
        Body {
            locals: Vec::new(),
            stmts: Vec::new(),
        }
    }
    fn local(&mut self, name: &str, bits: u32) -> Net {
        let d = reg(name, width(bits));
        let n = d.net;
        self.locals.push(d);
        n
    }
    fn set(&mut self, n: impl Into<Expr>, e: impl Into<Expr>) {
        self.stmts.push(blocking(n, e));
    }
    fn comment(&mut self, text: &str) {
        self.stmts.push(Stmt::Comment(text.into()));
    }
    fn push(&mut self, s: Stmt) {
        self.stmts.push(s);
    }
    fn function(self, name: &str, bits: u32, inputs: Vec<(Net, Width, bool)>) -> Function {
        Function {
            name: intern(name),
            width: width(bits),
            signed: false,
            inputs,
            locals: self.locals,
            body: self.stmts,
        }
    }
}

fn width(bits: u32) -> Width {
    if bits == 1 {
        Width::bit()
    } else {
        Width::of(bits as i64)
    }
}

fn input(name: &str, bits: u32) -> (Net, Width, bool) {
    (Net::named(name), width(bits), false)
}

/// An `n`-bit constant of value `v` (two's complement for a negative one).
fn k(n: u32, v: i64) -> Expr {
    lit(n, (v as u64) & ((1u64 << n) - 1))
}

/// `{n{1'b0}}` where `n` may be 0: what to put beside it instead.
fn pad_low(e: Expr, zeros_below: u32) -> Expr {
    if zeros_below == 0 {
        e
    } else {
        cat([e, lit(zeros_below, 0)])
    }
}

/// `e` (of `from` bits) zero-extended to `to` bits.
fn zext(e: Expr, from: u32, to: u32) -> Expr {
    if to == from {
        e
    } else {
        cat([lit(to - from, 0), e])
    }
}

/// The function names, one per unit and format.
pub(crate) fn unpack_name(k: FloatKind) -> String {
    format!("unpack_{}", k.name())
}
pub(crate) fn round_name(k: FloatKind, stochastic: bool) -> String {
    if stochastic {
        format!("round_sr_{}", k.name())
    } else {
        format!("round_{}", k.name())
    }
}
pub(crate) fn widen_name(k: FloatKind) -> String {
    format!("widen_{}", k.name())
}
pub(crate) fn positive_name(k: FloatKind) -> String {
    format!("positive_{}", k.name())
}
pub(crate) const ROUND_FP32: &str = "round_fp32";
pub(crate) const ROUND_FP32_NORMAL: &str = "round_fp32_normal";
pub(crate) const FP_MUL: &str = "fp_mul";
pub(crate) const FP32_ADD: &str = "fp32_add";
pub(crate) const FP32_SUB: &str = "fp32_sub";
pub(crate) const FP32_SCALE: &str = "fp32_scale";
/// The canonical fp32 NaN.
fn nan32() -> Expr {
    hex(32, FP32.nan.into())
}

/// What a rounder's caller guarantees about the exponent it passes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Range {
    /// Any exponent: below the format's normal range the significand
    /// shifts right into a subnormal result (a shifter in the path).
    Any,
    /// At least 1 in the format's bias, its smallest normal exponent,
    /// where a significand without its leading one already is the
    /// subnormal result: no shifter (the adder's normalised sum, a
    /// narrowing to a format with fp32's exponent range).
    Normal,
}

/// The rounder of format `enc` (`name`): `(sign, e, sig, sticky[, r])`,
/// the value `sig / 2^26 * 2^(e - 127)` with `sticky` set if anything
/// nonzero lies below `sig`, rounded to `enc` to nearest even, or with
/// `stochastic` up with the probability of its top 16 dropped bits
/// (`r < phi`). Subnormal results are kept; a result beyond the largest
/// finite value is infinity, or the largest finite value in a format
/// without infinities. NaNs and infinities are the caller's. `range` is
/// what the caller guarantees of `e`.
pub(crate) fn rounder(name: &str, enc: Encoding, stochastic: bool, range: Range) -> Function {
    let (eb, mb) = (enc.exp_bits, enc.man_bits);
    // The packed magnitude {exponent, fraction}, with room above it to
    // see an overflow.
    let pw = EXP_BITS + mb + 1;
    let mut b = Body::new();
    let (sign, e, sig, sticky) = (
        Net::named("sign"),
        Net::named("e"),
        Net::named("sig"),
        Net::named("sticky"),
    );
    let r = Net::named("r");
    let ek = b.local("ek", EXP_BITS);
    let packed = b.local("kept", pw);
    let up = b.local("up", 1);
    let rounded = b.local("rounded", pw);
    b.set(ek, e + k(EXP_BITS, enc.bias as i64 - FP32.bias as i64));
    // The kept significand `t`, the exponent field it goes with less one
    // (a leading one carries into it), and what lies below `t`'s last
    // bit beyond `sig`'s own (`lost`; the stochastic rounder's `dropped`).
    let shifted = match range {
        Range::Normal => None,
        Range::Any => Some(denormalise(&mut b, ek, sig, stochastic)),
    };
    let (t, exp_base): (Expr, Expr) = match &shifted {
        None => (sig.e(), ek - k(EXP_BITS, 1)),
        Some(s) => (
            s.t.e(),
            cond(s.normal, ek - k(EXP_BITS, 1), lit(EXP_BITS, 0)),
        ),
    };
    b.comment("Truncated: {exponent - 1, 0} plus {hidden bit, fraction}; a hidden 1 carries into the exponent.");
    b.set(
        packed,
        pad_low(cat([lit(1, 0), exp_base]), mb)
            + zext(t.bits(SIG_BITS - 1, SIG_BITS - 1 - mb), mb + 1, pw),
    );
    let g = SIG_BITS - 2 - mb;
    if stochastic {
        let sb = STOCHASTIC_BITS;
        // r < phi, phi the top 16 of the n dropped bits D, is r * 2^(n-16)
        // + 2^(n-16) - 1 < D: one comparison that reads every dropped bit.
        b.comment(
            "Stochastic: up iff the draw is below the top 16 dropped bits (phi), that is iff",
        );
        b.comment("{r, all ones} is below all the dropped bits.");
        match shifted.as_ref().and_then(|s| s.wide) {
            Some(wide) => {
                let n_dropped = g + 1 + LOW_BITS;
                b.set(
                    up,
                    cat([r.e(), ones(int((n_dropped - sb).into()))])
                        .less(cat([t.bits(g, 0), wide.bits(LOW_BITS - 1, 0)])),
                );
            }
            // Nothing lies below `sig`: {r, ones} < {sig[g:0], zeros}
            // is {r, ones} < sig[g:0] on the top g + 1 bits.
            None => b.set(up, pad_ones(r.e(), g + 1 - sb).less(t.bits(g, 0))),
        }
    } else {
        b.comment(
            "Nearest, ties to even: up iff guard and (anything below it, or the kept bit odd).",
        );
        let mut rest = t.bits(g - 1, 0).any().or(sticky);
        if let Some(lost) = shifted.and_then(|s| s.lost) {
            rest = rest.or(lost);
        }
        b.set(up, t.at(g).and(rest.or(t.at(SIG_BITS - 1 - mb))));
    }
    b.set(rounded, packed + zext(up.e(), 1, pw));
    let result = Function::result(name);
    let inf_code = ((1u64 << eb) - 1) << mb;
    let overflow = if enc.has_infinity {
        b.comment("Past the largest finite value: infinity.");
        vec![blocking(
            result.clone(),
            cat([sign.e(), hex(eb + mb, inf_code)]),
        )]
    } else {
        b.comment("Past the largest finite value: saturate (no infinities).");
        vec![blocking(
            result.clone(),
            cat([sign.e(), hex(eb + mb, enc.max_finite.into())]),
        )]
    };
    let limit = if enc.has_infinity {
        // The infinity's fraction is zero: compare the exponent field and above.
        rounded
            .bits(pw - 1, mb)
            .at_least(lit(pw - mb, (1u64 << eb) - 1))
    } else {
        rounded.greater(lit(pw, enc.max_finite.into()))
    };
    b.push(if_else(
        limit,
        overflow,
        vec![blocking(
            result,
            cat([sign.e(), rounded.bits(eb + mb - 1, 0)]),
        )],
    ));
    let mut inputs = vec![
        input("sign", 1),
        input("e", EXP_BITS),
        input("sig", SIG_BITS),
        input("sticky", 1),
    ];
    if stochastic {
        inputs.push(input("r", STOCHASTIC_BITS));
    }
    let mut f = b.function(name, enc.bits(), inputs);
    if stochastic {
        // The stochastic rounder reads no sticky bit: phi is 16 bits.
        f.inputs.retain(|(n, ..)| *n != sticky);
    }
    f
}

/// `{e, n ones}` (`e` itself for `n = 0`).
fn pad_ones(e: Expr, n: u32) -> Expr {
    if n == 0 {
        e
    } else {
        cat([e, ones(int(n.into()))])
    }
}

/// Which way [`shift_stages`] shifts.
#[derive(Clone, Copy)]
enum Towards {
    Left,
    Right,
}

/// `{n{1'b1}}`.
fn all_ones(n: u32) -> Expr {
    ones(int(n.into()))
}

/// `dst = src` shifted by `amount` (a net of `bits` bits) within `width`
/// bits, written as one stage per bit of the amount (a constant shift
/// each) and zero for an amount past the width. Not a shift operator:
/// Yosys's `share` pass merges the shifter cells of units never active in
/// the same mode (a product's rounder and the update's adder), which
/// joins their paths into one that no mode exercises but the timer
/// measures; stages of multiplexers are not merged.
fn shift_stages(
    b: &mut Body,
    dst: Net,
    src: Expr,
    (amount, bits): (Net, u32),
    width: u32,
    dir: Towards,
) {
    b.set(dst, src);
    let mut k = 0;
    while k < bits && (1u32 << k) < width {
        let step = 1u64 << k;
        let by = lit(64 - step.leading_zeros(), step);
        let moved = match dir {
            Towards::Left => dst << by,
            Towards::Right => dst >> by,
        };
        b.push(when(amount.at(k), vec![blocking(dst, moved)]));
        k += 1;
    }
    if k < bits {
        b.push(when(
            amount.bits(bits - 1, k).any(),
            vec![blocking(dst, lit(width, 0))],
        ));
    }
}

/// A [`Range::Any`] rounder's shift into the subnormal range.
struct Denormalised {
    /// The exponent is normal (no shift).
    normal: Net,
    /// The kept significand (`sig` shifted right).
    t: Net,
    /// Nearest: a nonzero bit of `sig` was shifted out of `t`.
    lost: Option<Expr>,
    /// Stochastic: `{sig, zeros} >> shift`, every dropped bit below `t`.
    wide: Option<Net>,
}

/// Below the normal range, `sig` shifts right by `1 - ek`. Rounding to
/// nearest needs only whether a nonzero bit was shifted out: the OR of
/// `sig` under a mask of the shift's low bits, beside the shifter (which
/// needs no clamp: a shift past `sig`'s width leaves zero). Both are
/// [`shift_stages`]. The
/// stochastic rounder reads every dropped bit, so it shifts `sig` into a
/// wide field (the shift clamped to that field's low bits).
fn denormalise(b: &mut Body, ek: Net, sig: Net, stochastic: bool) -> Denormalised {
    let normal = b.local("normal", 1);
    let shift = b.local("shift", EXP_BITS);
    let t = b.local("t", SIG_BITS);
    b.comment("Below the format's normal range (in its bias) the significand shifts right.");
    b.set(
        normal,
        (!ek.at(EXP_BITS - 1)).and(ek.differs(lit(EXP_BITS, 0))),
    );
    b.set(shift, cond(normal, lit(EXP_BITS, 0), k(EXP_BITS, 1) - ek));
    if stochastic {
        let wide = b.local("wide", SIG_BITS + LOW_BITS);
        b.push(when(
            shift.greater(lit(EXP_BITS, LOW_BITS.into())),
            vec![blocking(shift, lit(EXP_BITS, LOW_BITS.into()))],
        ));
        shift_stages(
            b,
            wide,
            cat([sig.e(), lit(LOW_BITS, 0)]),
            (shift, EXP_BITS),
            SIG_BITS + LOW_BITS,
            Towards::Right,
        );
        b.set(t, wide.bits(SIG_BITS + LOW_BITS - 1, LOW_BITS));
        return Denormalised {
            normal,
            t,
            lost: None,
            wide: Some(wide),
        };
    }
    let below = b.local("below", SIG_BITS);
    shift_stages(b, t, sig.e(), (shift, EXP_BITS), SIG_BITS, Towards::Right);
    b.comment("The bits shifted out: sig under a mask of the shift's width, beside the shifter.");
    shift_stages(
        b,
        below,
        all_ones(SIG_BITS),
        (shift, EXP_BITS),
        SIG_BITS,
        Towards::Left,
    );
    b.set(below, !below.e());
    Denormalised {
        normal,
        t,
        lost: Some(sig.e().bit_and(below).any()),
        wide: None,
    }
}

/// `unpack_<k>(v)`: a data value of format `k` unpacked (module docs).
pub(crate) fn unpack(kind: FloatKind) -> Function {
    let enc = kind.encoding();
    let (eb, mb) = (enc.exp_bits, enc.man_bits);
    let name = unpack_name(kind);
    let mut b = Body::new();
    let v = Net::named("v");
    let e = b.local("e", eb);
    let m = b.local("m", mb);
    let s = v.at(eb + mb);
    b.set(e, v.bits(eb + mb - 1, mb));
    b.set(m, v.bits(mb - 1, 0));
    let result = || Function::result(&name);
    // {nan, inf, zero, sign, exp, sig}
    let out = |nan: u64, inf: u64, zero: u64, exp: Expr, sig: Expr| {
        blocking(
            result(),
            cat([lit(1, nan), lit(1, inf), lit(1, zero), s.clone(), exp, sig]),
        )
    };
    let all_ones = e.equals(hex(eb, (1 << eb) - 1));
    let zero_exp = e.equals(lit(eb, 0));
    let zero_man = m.equals(lit(mb, 0));
    // Subnormals: the leading one of m at bit p gives exponent
    // p + 1 - bias - mb and the significand m[p:0] moved to the top.
    let mut subnormal = vec![out(0, 0, 1, lit(10, 0), lit(8, 0))];
    for p in 0..mb {
        let exp = k(10, p as i64 + 1 - enc.bias as i64 - mb as i64);
        let sig = pad_low(m.bits(p, 0), 7 - p);
        subnormal = vec![if_else(m.at(p), vec![out(0, 0, 0, exp, sig)], subnormal)];
    }
    let normal = out(
        0,
        0,
        0,
        zext(e.e(), eb, 10) - lit(10, enc.bias as u64),
        pad_low(cat([lit(1, 1), m.e()]), 7 - mb),
    );
    let nan = out(1, 0, 0, lit(10, 0), lit(8, 0));
    b.comment("Normal by default; then the specials, then zeros and subnormals (normalised).");
    let special = if enc.has_infinity {
        if_else(
            all_ones.clone().and(zero_man.clone()),
            vec![out(0, 1, 0, lit(10, 0), lit(8, 0))],
            vec![if_else(all_ones, vec![nan], vec![])],
        )
    } else {
        if_else(
            all_ones.and(m.equals(hex(mb, (1 << mb) - 1))),
            vec![nan],
            vec![],
        )
    };
    b.push(normal);
    b.push(special);
    b.push(if_else(
        zero_exp.clone().and(zero_man),
        vec![out(0, 0, 1, lit(10, 0), lit(8, 0))],
        vec![if_else(zero_exp, subnormal, vec![])],
    ));
    b.function(&name, UNPACKED_BITS, vec![input("v", enc.bits())])
}

/// `positive_<k>(v)`: whether a value of format `k` is greater than 0
/// (`docs/COMMANDS.md`, Floating point): its sign clear and neither a
/// zero nor a NaN (`+inf` is positive). It reads [`unpack`]'s flags, so
/// the NaN and zero encodings are the format table's, read once (under a
/// mask: a local holding the whole unpacked value would leave its other
/// bits unread); the module that declares it declares `unpack_<k>` too.
pub(crate) fn positive(kind: FloatKind) -> Function {
    let name = positive_name(kind);
    let mut b = Body::new();
    let flags = [U_NAN, U_ZERO, U_SIGN]
        .iter()
        .fold(0u64, |m, bit| m | 1 << bit);
    b.comment("Positive: none of nan, zero and sign set.");
    b.set(
        Function::result(&name),
        call(&unpack_name(kind), [Net::named("v").e()])
            .bit_and(hex(UNPACKED_BITS, flags))
            .equals(lit(UNPACKED_BITS, 0)),
    );
    b.function(&name, 1, vec![input("v", kind.encoding().bits())])
}

/// Bits of an unpacked value: the flags, then the sign.
const U_NAN: u32 = 21;
const U_INF: u32 = 20;
const U_ZERO: u32 = 19;
const U_SIGN: u32 = 18;
fn u_nan(u: Net) -> Expr {
    u.at(U_NAN)
}
fn u_inf(u: Net) -> Expr {
    u.at(U_INF)
}
fn u_zero(u: Net) -> Expr {
    u.at(U_ZERO)
}
fn u_sign(u: Net) -> Expr {
    u.at(U_SIGN)
}
/// The exponent sign-extended to the rounder's width.
fn u_exp(u: Net) -> Expr {
    cat([u.at(17), u.at(17), u.bits(17, 8)])
}
fn u_sig(u: Net) -> Expr {
    u.bits(7, 0)
}

/// `widen_<k>(v)`: a data value of format `k` as fp32 (exact: every data
/// value is an fp32 value). A format with fp32's exponent field (bf16)
/// is fp32's top bits; the others' values, subnormals included, are
/// normal in fp32: their unpacked exponent and significand go through
/// fp32's rounder without its subnormal shifter (they round exactly).
pub(crate) fn widen(kind: FloatKind) -> Function {
    let enc = kind.encoding();
    let name = widen_name(kind);
    let mut b = Body::new();
    let v = Net::named("v");
    let result = || Function::result(&name);
    if enc.exp_bits == FP32.exp_bits && enc.bias == FP32.bias {
        let bits = enc.bits();
        let nan = v
            .bits(bits - 2, enc.man_bits)
            .equals(hex(enc.exp_bits, (1 << enc.exp_bits) - 1))
            .and(v.bits(enc.man_bits - 1, 0).any());
        b.comment("fp32's top bits; a NaN becomes the canonical one.");
        b.push(if_else(
            nan,
            vec![blocking(result(), nan32())],
            vec![blocking(result(), pad_low(v.e(), 32 - bits))],
        ));
        return b.function(&name, 32, vec![input("v", bits)]);
    }
    let smallest = 1 - enc.bias as i64 - enc.man_bits as i64;
    assert!(
        smallest > -(FP32.bias as i64),
        "{}: its smallest subnormal must be an fp32 normal",
        kind.name()
    );
    let u = b.local("u", UNPACKED_BITS);
    b.set(u, call(&unpack_name(kind), [v.e()]));
    b.push(if_else(
        u_nan(u),
        vec![blocking(result(), nan32())],
        vec![if_else(
            u_inf(u),
            vec![blocking(result(), cat([u_sign(u), hex(31, 0x7F80_0000)]))],
            vec![if_else(
                u_zero(u),
                vec![blocking(result(), cat([u_sign(u), lit(31, 0)]))],
                vec![blocking(
                    result(),
                    call(
                        ROUND_FP32_NORMAL,
                        [
                            u_sign(u),
                            u_exp(u) + lit(EXP_BITS, FP32.bias as u64),
                            cat([u_sig(u), lit(SIG_BITS - 8, 0)]),
                            lit(1, 0),
                        ],
                    ),
                )],
            )],
        )],
    ));
    b.function(&name, 32, vec![input("v", enc.bits())])
}

/// `fp_mul(a, b)`: the product of two unpacked data values in fp32. The
/// 8x8-bit significand product is exact; it is rounded only where it
/// leaves fp32's normal range.
pub(crate) fn mul() -> Function {
    let mut b = Body::new();
    let (a, c) = (Net::named("a"), Net::named("b"));
    let sign = b.local("sign", 1);
    let prod = b.local("prod", 16);
    let e0 = b.local("e0", EXP_BITS);
    let e = b.local("e", EXP_BITS);
    let sig = b.local("sig", SIG_BITS);
    let result = || Function::result(FP_MUL);
    b.set(sign, u_sign(a).bit_xor(u_sign(c)));
    b.comment("Exact significand product: its leading one at bit 15 or 14; the exponent for");
    b.comment("either is formed beside the multiplier, the product's top bit picks one.");
    b.set(prod, u_sig(a) * u_sig(c));
    b.set(e0, u_exp(a) + u_exp(c) + lit(EXP_BITS, FP32.bias as u64));
    b.set(e, cond(prod.at(15), e0 + lit(EXP_BITS, 1), e0));
    b.set(
        sig,
        cond(
            prod.at(15),
            cat([prod.e(), lit(SIG_BITS - 16, 0)]),
            cat([prod.bits(14, 0), lit(SIG_BITS - 15, 0)]),
        ),
    );
    let invalid = u_nan(a)
        .or(u_nan(c))
        .or(u_inf(a).and(u_zero(c)))
        .or(u_zero(a).and(u_inf(c)));
    b.comment("NaN for a NaN or 0 * inf; then infinities, zeros, and the rounded product.");
    b.push(if_else(
        invalid,
        vec![blocking(result(), nan32())],
        vec![if_else(
            u_inf(a).or(u_inf(c)),
            vec![blocking(result(), cat([sign.e(), hex(31, 0x7F80_0000)]))],
            vec![if_else(
                u_zero(a).or(u_zero(c)),
                vec![blocking(result(), cat([sign.e(), lit(31, 0)]))],
                vec![blocking(
                    result(),
                    call(ROUND_FP32, [sign.e(), e.e(), sig.e(), lit(1, 0)]),
                )],
            )],
        )],
    ));
    b.function(
        FP_MUL,
        32,
        vec![input("a", UNPACKED_BITS), input("b", UNPACKED_BITS)],
    )
}

/// The stages of the adder's leading-zero count, largest first: each
/// shifts left by its amount if that many top bits of the probe (the sum
/// with a marker bit where the exponent would leave the normal range)
/// are zero.
const LZC_STAGES: [u32; 5] = [16, 8, 4, 2, 1];

/// `fp32_add(a, b)`: IEEE binary32 addition, round to nearest even,
/// subnormals kept, one NaN, `x + (-x) = +0`.
///
/// The path is kept short where that costs no bits: the operands are
/// ordered by exponent alone (an 8-bit comparison; both exponent
/// differences are formed beside it), and with equal exponents, where
/// nothing is shifted, the difference is formed both ways and the
/// nonnegative one kept, with its sign; the second significand shifts
/// in a field of its own width, the sticky bit the OR of its bits under
/// a mask beside the shifter; the
/// normalisation's stages test only a probe, the sum with a marker bit
/// at the shift that reaches the smallest normal exponent, so that they
/// stop there with no comparison (the shift is `min(leading zeros,
/// exponent - 1)`), and the exponent is corrected once after them; the
/// rounder has no subnormal shifter (the normalised exponent is at
/// least 1).
pub(crate) fn add() -> Function {
    let mut b = Body::new();
    let (a, c) = (Net::named("a"), Net::named("b"));
    let nan_a = a.bits(30, 23).equals(hex(8, 0xFF)).and(a.bits(22, 0).any());
    let nan_b = c.bits(30, 23).equals(hex(8, 0xFF)).and(c.bits(22, 0).any());
    let inf = |v: Net| v.bits(30, 0).equals(hex(31, 0x7F80_0000));
    let a_big = b.local("a_first", 1);
    let big = b.local("first", 32);
    let small = b.local("second", 32);
    let x_a = b.local("x_a", 8);
    let x_b = b.local("x_b", 8);
    let x_big = b.local("x_larger", 8);
    let dist = b.local("gap", 8);
    let field = b.local("field", SIG_BITS);
    let below = b.local("below", SIG_BITS);
    let shifted = b.local("shifted", SIG_BITS);
    let aligned = b.local("aligned", SIG_BITS);
    let sum = b.local("sum", SIG_BITS + 1);
    let diff = b.local("diff", SIG_BITS + 1);
    let negative = b.local("negative", 1);
    let room = b.local("room", 8);
    let mark = b.local("mark", SIG_BITS);
    let probe = b.local("probe", SIG_BITS);
    let norm = b.local("norm", SIG_BITS);
    let amount = b.local("amount", 5);
    let e = b.local("e", 8);
    let carry_sticky = b.local("carry_sticky", 1);
    let result = || Function::result(FP32_ADD);
    // The significand of an fp32 value with its hidden bit; its
    // exponent, subnormals at 1.
    let significand = |v: Net| cat([v.bits(30, 23).any(), v.bits(22, 0)]);
    let exponent = |v: Net| cond(v.bits(30, 23).any(), v.bits(30, 23), lit(8, 1));
    b.comment("Order by exponent (first the larger), both differences formed beside the");
    b.comment("comparison; with equal exponents the difference may come out negative (see below).");
    b.set(x_a, exponent(a));
    b.set(x_b, exponent(c));
    b.set(a_big, x_a.e().at_least(x_b));
    b.set(big, cond(a_big, a, c));
    b.set(small, cond(a_big, c, a));
    b.set(x_big, cond(a_big, x_a, x_b));
    b.set(dist, cond(a_big, x_a - x_b, x_b - x_a));
    b.comment(
        "Align: the second significand (with guard, round and sticky places) shifts right by",
    );
    b.comment(
        "the exponent difference; the sticky bit is the OR of the bits shifted out, read under",
    );
    b.comment("a mask beside the shifter. A difference past the field leaves only the sticky bit.");
    b.set(field, cat([significand(small), lit(3, 0)]));
    shift_stages(
        &mut b,
        shifted,
        field.e(),
        (dist, 8),
        SIG_BITS,
        Towards::Right,
    );
    shift_stages(
        &mut b,
        below,
        all_ones(SIG_BITS),
        (dist, 8),
        SIG_BITS,
        Towards::Left,
    );
    b.set(below, !below.e());
    b.set(
        aligned,
        cat([
            shifted.bits(SIG_BITS - 1, 1),
            shifted.at(0).or(field.e().bit_and(below).any()),
        ]),
    );
    b.comment("Add, or subtract (signs differ) both ways: the sum is 28 bits, a carry at the");
    b.comment(
        "top; the difference is negative only for equal exponents (then nothing was shifted).",
    );
    let big_ext = cat([lit(1, 0), significand(big), lit(3, 0)]);
    let small_ext = cat([lit(1, 0), aligned.e()]);
    let same_sign = big.at(31).equals(small.at(31));
    b.set(diff, big_ext.clone() - small_ext.clone());
    b.set(negative, (!same_sign.clone()).and(diff.at(SIG_BITS)));
    b.set(
        sum,
        cond(
            same_sign,
            big_ext.clone() + small_ext.clone(),
            cond(negative, small_ext - big_ext, diff),
        ),
    );
    b.comment("Normalise: a carry shifts right by one (its bit joins the sticky one); else the");
    b.comment("leading zeros shift out, at most exponent - 1 of them (to the smallest normal");
    b.comment("exponent): the stages count the probe's, the sum with a one at that place.");
    b.set(room, x_big - lit(8, 1));
    shift_stages(
        &mut b,
        mark,
        cat([lit(1, 1), lit(SIG_BITS - 1, 0)]),
        (room, 8),
        SIG_BITS,
        Towards::Right,
    );
    b.set(probe, sum.bits(SIG_BITS - 1, 0).bit_or(mark));
    b.set(carry_sticky, lit(1, 0));
    b.set(norm, sum.bits(SIG_BITS - 1, 0));
    b.set(amount, lit(5, 0));
    let mut lzc = Vec::new();
    for s in LZC_STAGES {
        let top = probe.bits(SIG_BITS - 1, SIG_BITS - s);
        lzc.push(when(
            top.equals(lit(s, 0)),
            vec![
                blocking(probe, probe << lit(5, s.into())),
                blocking(norm, norm << lit(5, s.into())),
                blocking(amount, amount.e().bit_or(lit(5, s.into()))),
            ],
        ));
    }
    lzc.push(blocking(e, x_big - zext(amount.e(), 5, 8)));
    b.push(if_else(
        sum.at(SIG_BITS),
        vec![
            blocking(norm, sum.bits(SIG_BITS, 1)),
            blocking(carry_sticky, sum.at(0)),
            blocking(e, x_big + lit(8, 1)),
        ],
        lzc,
    ));
    b.comment(
        "NaN for a NaN or inf - inf; then infinities; an exact zero is +0 unless both are -0.",
    );
    let plain = vec![if_else(
        sum.equals(lit(SIG_BITS + 1, 0)),
        vec![blocking(
            result(),
            cat([a.at(31).bit_and(c.at(31)), lit(31, 0)]),
        )],
        vec![blocking(
            result(),
            call(
                ROUND_FP32_NORMAL,
                [
                    cond(negative, small.at(31), big.at(31)),
                    zext(e.e(), 8, EXP_BITS),
                    norm.e(),
                    carry_sticky.e(),
                ],
            ),
        )],
    )];
    b.push(if_else(
        nan_a
            .or(nan_b)
            .or(inf(a).and(inf(c)).and(a.at(31).differs(c.at(31)))),
        vec![blocking(result(), nan32())],
        vec![if_else(
            inf(a),
            vec![blocking(result(), a)],
            vec![if_else(inf(c), vec![blocking(result(), c)], plain)],
        )],
    ));
    b.function(FP32_ADD, 32, vec![input("a", 32), input("b", 32)])
}

/// `fp32_sub(a, b) = fp32_add(a, -b)`.
pub(crate) fn sub() -> Function {
    let (a, c) = (Net::named("a"), Net::named("b"));
    let mut b = Body::new();
    b.set(
        Function::result(FP32_SUB),
        call(FP32_ADD, [a.e(), cat([!c.at(31), c.bits(30, 0)])]),
    );
    b.function(FP32_SUB, 32, vec![input("a", 32), input("b", 32)])
}

/// `fp32_scale(v, lr)`: `v * 2^-lr`, rounded to nearest even (exact
/// unless subnormal).
pub(crate) fn scale(lr_bits: u32) -> Function {
    let (v, lr) = (Net::named("v"), Net::named("lr"));
    let mut b = Body::new();
    let result = || Function::result(FP32_SCALE);
    let special = v.bits(30, 23).equals(hex(8, 0xFF));
    let zero = v.bits(30, 0).equals(lit(31, 0));
    let exp = cond(v.bits(30, 23).any(), v.bits(30, 23), lit(8, 1));
    b.comment(
        "NaN canonical, infinities and zeros as they are; else the exponent less lr, rounded.",
    );
    b.push(if_else(
        special.clone().and(v.bits(22, 0).any()),
        vec![blocking(result(), nan32())],
        vec![if_else(
            special.or(zero),
            vec![blocking(result(), v)],
            vec![blocking(
                result(),
                call(
                    ROUND_FP32,
                    [
                        v.at(31),
                        zext(exp, 8, EXP_BITS) - zext(lr.e(), lr_bits, EXP_BITS),
                        cat([v.bits(30, 23).any(), v.bits(22, 0), lit(3, 0)]),
                        lit(1, 0),
                    ],
                ),
            )],
        )],
    ));
    b.function(FP32_SCALE, 32, vec![input("v", 32), input("lr", lr_bits)])
}

/// `round_<k>(v)` (or `round_sr_<k>(v, r)`): fp32 to format `k`, NaN to
/// `k`'s NaN, everything else through `k`'s rounder (`rounder_<k>`).
pub(crate) fn narrow(kind: FloatKind, stochastic: bool) -> Function {
    let enc = kind.encoding();
    let name = round_name(kind, stochastic);
    let inner = format!("{name}_core");
    let (v, r) = (Net::named("v"), Net::named("r"));
    let mut b = Body::new();
    let result = || Function::result(&name);
    let nan = v.bits(30, 23).equals(hex(8, 0xFF)).and(v.bits(22, 0).any());
    let exp = cond(v.bits(30, 23).any(), v.bits(30, 23), lit(8, 1));
    let mut args = vec![
        v.at(31),
        zext(exp, 8, EXP_BITS),
        cat([v.bits(30, 23).any(), v.bits(22, 0), lit(3, 0)]),
    ];
    if stochastic {
        args.push(r.e());
    } else {
        args.push(lit(1, 0));
    }
    b.comment("NaN becomes this format's NaN; infinities overflow in the rounder.");
    b.push(if_else(
        nan,
        vec![blocking(result(), hex(enc.bits(), enc.nan.into()))],
        vec![blocking(result(), Expr::Call(inner.clone(), args))],
    ));
    let mut inputs = vec![input("v", 32)];
    if stochastic {
        inputs.push(input("r", STOCHASTIC_BITS));
    }
    b.function(&name, enc.bits(), inputs)
}

/// The rounder a [`narrow`] function calls. An fp32 value's exponent
/// (1 for a subnormal) is normal in a format whose bias is at least
/// fp32's (bf16): that rounder has no shifter.
pub(crate) fn narrow_core(kind: FloatKind, stochastic: bool) -> Function {
    let enc = kind.encoding();
    let range = if enc.bias >= FP32.bias {
        Range::Normal
    } else {
        Range::Any
    };
    rounder(
        &format!("{}_core", round_name(kind, stochastic)),
        enc,
        stochastic,
        range,
    )
}

/// fp32's own rounders: the multiplier's and the scale's, whose exponent
/// may fall below the normal range, and the adder's, whose does not.
pub(crate) fn round_fp32() -> [Function; 2] {
    [
        rounder(ROUND_FP32, FP32, false, Range::Any),
        rounder(ROUND_FP32_NORMAL, FP32, false, Range::Normal),
    ]
}

/// Every function a unit test or a PE of formats `kinds` with rounding
/// `stochastic` needs, leaves first.
pub(crate) fn library(
    kinds: &[FloatKind],
    narrow_kinds: &[(FloatKind, bool)],
    lr_bits: u32,
) -> Vec<Function> {
    let mut v = Vec::from(round_fp32());
    let mut seen = Vec::new();
    for kind in kinds {
        if !seen.contains(kind) {
            seen.push(*kind);
            v.push(unpack(*kind));
            v.push(widen(*kind));
        }
    }
    v.extend([mul(), add(), sub(), scale(lr_bits)]);
    for (kind, sr) in narrow_kinds {
        v.push(narrow_core(*kind, *sr));
        v.push(narrow(*kind, *sr));
    }
    v
}

/// The name of [`test_module`].
pub(crate) const TEST_MODULE: &str = "sa_fp_units";

/// `sa_fp_units`: every unit of every format side by side, combinational,
/// for the unit tests: inputs `in_a`, `in_b` (fp32 or a data value in the low
/// bits), `in_r` (a draw) and `in_lr`; outputs `o_add = fp32_add(a, b)`,
/// `o_sub`, `o_scale = fp32_scale(a, lr)`, per format `k` `o_widen_k`
/// (of `a`), `o_round_k` and `o_sr_k` (of `a`, with `r`), `o_positive_k`
/// (of `a`), and per pair `o_mul_ka_kb` (of `a` in `ka` and `b` in `kb`).
pub(crate) fn test_module(lr_bits: u32) -> Module {
    let all = FloatKind::ALL;
    let narrow: Vec<(FloatKind, bool)> =
        all.iter().flat_map(|k| [(*k, false), (*k, true)]).collect();
    let mut m = Scope::new();
    for f in library(&all, &narrow, lr_bits) {
        m.function(f);
    }
    for k in all {
        m.function(positive(k));
    }
    let port = |dir, name: &str, bits: u32| Port {
        dir,
        net: Net::named(name),
        width: width(bits),
        signed: false,
    };
    let (a, b, r, lr) = (
        Net::named("in_a"),
        Net::named("in_b"),
        Net::named("in_r"),
        Net::named("in_lr"),
    );
    let mut ports = vec![
        port(Dir::Input, "in_a", 32),
        port(Dir::Input, "in_b", 32),
        port(Dir::Input, "in_r", STOCHASTIC_BITS),
        port(Dir::Input, "in_lr", lr_bits),
    ];
    let mut out = |name: String, bits: u32, e: Expr| {
        let p = port(Dir::Output, &name, bits);
        m.assign(p.net, e);
        ports.push(p);
    };
    out("o_add".into(), 32, call(FP32_ADD, [a.e(), b.e()]));
    out("o_sub".into(), 32, call(FP32_SUB, [a.e(), b.e()]));
    out("o_scale".into(), 32, call(FP32_SCALE, [a.e(), lr.e()]));
    let low = |v: Net, k: FloatKind| v.bits(k.encoding().bits() as i64 - 1, 0);
    let unpacked = |v: Net, k: FloatKind| call(&unpack_name(k), [low(v, k)]);
    for k in all {
        let bits = k.encoding().bits();
        out(
            format!("o_widen_{}", k.name()),
            32,
            call(&widen_name(k), [low(a, k)]),
        );
        out(
            format!("o_round_{}", k.name()),
            bits,
            call(&round_name(k, false), [a.e()]),
        );
        out(
            format!("o_sr_{}", k.name()),
            bits,
            call(&round_name(k, true), [a.e(), r.e()]),
        );
        out(
            format!("o_positive_{}", k.name()),
            1,
            call(&positive_name(k), [low(a, k)]),
        );
    }
    for ka in all {
        for kb in all {
            out(
                format!("o_mul_{}_{}", ka.name(), kb.name()),
                32,
                call(FP_MUL, [unpacked(a, ka), unpacked(b, kb)]),
            );
        }
    }
    Module {
        name: TEST_MODULE.into(),
        doc: vec![
            "sa_fp_units: the floating-point units side by side, for their unit tests.".into(),
        ],
        params: vec![],
        ports,
        genvars: vec![],
        items: m.into_items(),
    }
}
