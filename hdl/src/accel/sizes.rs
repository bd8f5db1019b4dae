//! The widths of the controller's nets, each derived from the field it
//! holds (`sysgrad_isa::command::field`) or from what it counts, and the
//! small expression helpers that work in those widths.

use crate::ir::*;
use sysgrad_config::MAX_DIM;
use sysgrad_isa::command::{field, Field, WORD_BITS};

/// A command word.
pub(super) const WORD: u32 = WORD_BITS;
/// The opcode byte.
pub(super) const OP_BITS: u32 = field::OPCODE.bits;
/// A line address field.
pub(super) const ADDR_BITS: u32 = field::ADDR_A.bits;
/// A stream length field (n, count).
pub(super) const LEN_BITS: u32 = field::LENGTH.bits;
/// A tile size field (m, k).
pub(super) const TILE_BITS: u32 = field::TILE_M.bits;
/// `m * k` of a tile.
pub(super) const TILE_AREA_BITS: u32 = field::TILE_M.bits + field::TILE_K.bits;
/// BACKWARD's mode field.
pub(super) const MODE_FIELD_BITS: u32 = field::BACKWARD_MODE.bits;
/// UPDATE's learning-rate field.
pub(super) const LR_FIELD_BITS: u32 = field::LR_SHIFT.bits;
/// The execute step counter: it reaches `n + R + C - 2` for the largest
/// `n`, one bit more than a length field.
pub(super) const STEP_BITS: u32 = LEN_BITS + 1;
/// A command word index: the command memory holds up to `2^ADDR_BITS`
/// words, so the index after the last one needs one bit more.
pub(super) const PC_BITS: u32 = ADDR_BITS + 1;
/// A line range's end `addr + len`, compared with a buffer's depth: the sum
/// of two 16-bit fields needs 17 bits; one more keeps both sides of the
/// comparison unsigned with room (the RTL has always compared in 18).
pub(super) const SPAN_BITS: u32 = ADDR_BITS + 2;
/// The write-back's wait counter: holds `R + C` for the largest array.
pub(super) const WAIT_BITS: u32 = (2 * MAX_DIM).ilog2() + 1;
/// An error code.
pub(super) const ERROR_BITS: u32 = sysgrad_isa::error::CODE_BITS;

/// `word[f]`: the field `f` of a command word.
pub(super) fn slice(word: &str, f: Field) -> Expr {
    id(word).bits(f.hi(), f.lo)
}

/// `{pad'b0, e}`: `e` zero-extended by `pad` bits.
pub(super) fn zext(pad: u32, e: Expr) -> Expr {
    cat([zeros(pad as i64), e])
}

/// The first `n` lanes set: `~({lanes{1'b1}} << n)`.
pub(super) fn lane_mask(lanes: &str, n: &str) -> Expr {
    !(ones(lanes) << id(n))
}

/// The low `abits` bits of `e` (a buffer address from a wider field).
pub(super) fn low(abits: &str, e: &str) -> Expr {
    id(e).bits(id(abits) - 1, 0)
}

/// `a + b` in `abits` address bits.
pub(super) fn sum(abits: &str, a: &str, b: &str) -> Expr {
    low(abits, a) + low(abits, b)
}

/// 1 in `abits` bits: `{{(abits-1){1'b0}}, 1'b1}` would need abits > 1.
pub(super) fn one(abits: &str) -> Expr {
    !(ones(abits) << 1)
}

/// The logical OR of `es`.
pub(super) fn any_of(es: Vec<Expr>) -> Expr {
    es.into_iter().reduce(|a, b| a.or(b)).expect("at least one")
}

// The widths hold what they count: R + C for the largest array, and
// n + R + C - 2 for the largest n.
const _: () = assert!(1usize << WAIT_BITS > 2 * MAX_DIM);
const _: () = assert!(1u64 << STEP_BITS > field::LENGTH.max() + 2 * MAX_DIM as u64);
