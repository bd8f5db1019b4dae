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
pub(super) fn slice(word: Net, f: Field) -> Expr {
    word.bits(f.hi(), f.lo)
}

/// `{pad'b0, e}`: `e` zero-extended by `pad` bits.
pub(super) fn zext(pad: u32, e: impl Into<Expr>) -> Expr {
    cat([zeros(pad as i64), e.into()])
}

/// The first `n` lanes set: `~({lanes{1'b1}} << n)`.
pub(super) fn lane_mask(lanes: impl Into<Expr>, n: impl Into<Expr>) -> Expr {
    !(ones(lanes) << n.into())
}

/// The low `abits` bits of `e` (a buffer address from a wider field).
pub(super) fn low(abits: Const, e: Net) -> Expr {
    e.bits(abits - 1, 0)
}

/// `a + b` in `abits` address bits.
pub(super) fn sum(abits: Const, a: Net, b: Net) -> Expr {
    low(abits, a) + low(abits, b)
}

/// 1 in `abits` bits: `{{(abits-1){1'b0}}, 1'b1}` would need abits > 1.
pub(super) fn one(abits: Const) -> Expr {
    !(ones(abits) << 1)
}

/// A localparam integer `name_I = value` and its `bits`-bit slice `name`,
/// so that comparisons with sized nets have matching widths: both handles.
pub(super) fn sized_const(m: &mut Scope, name: &str, bits: u32, value: Expr) -> (Const, Const) {
    let int_name = m.localparam(&format!("{name}_I"), Width::bit(), value);
    let sized = m.localparam(
        name,
        Width::of(bits as i64),
        int_name.bits(bits as i64 - 1, 0),
    );
    (int_name, sized)
}

// The widths hold what they count: R + C for the largest array, and
// n + R + C - 2 for the largest n.
const _: () = assert!(1usize << WAIT_BITS > 2 * MAX_DIM);
const _: () = assert!(1u64 << STEP_BITS > field::LENGTH.max() + 2 * MAX_DIM as u64);
