//! The activation unit (`docs/COMMANDS.md`, ACT): on the accumulators'
//! way out, after the requantizer, each lane's word passes or becomes 0
//! as the command's function says (`sysgrad_isa::ActFunction`): always
//! (identity), where it is positive (relu), or where the lane of the
//! mask line, the ReLU's output read from the activation buffer, is
//! positive (relu_grad). REQUANT is its identity on every lane of the
//! destination, so both controllers write REQUANT's and ACT's lines
//! through it. What "positive" is on a word is the number format's
//! ([`Arithmetic::positive`], [`Arithmetic::relu_keeps`]).
//!
//! A new function is a variant of `ActFunction` and its arm in [`keeps`]
//! (what it reads beside the word, e.g. a second line, is a new input).

use super::commands::func_is;
use crate::arith::{Arithmetic, DataLane};
use crate::ir::*;
use crate::params::{DW, L, R};
use sysgrad_isa::command::{ActFunction, DataBuffer};

/// Whether `f` keeps a word, from whether ReLU keeps it (`relu`) and
/// whether the mask's lane is positive (`mask_positive`).
fn keeps(f: ActFunction, relu: Expr, mask_positive: Expr) -> Expr {
    match f {
        ActFunction::Identity => lit(1, 1),
        ActFunction::Relu => relu,
        ActFunction::ReluGrad => mask_positive,
    }
}

/// What the unit reads beside the requantized words.
pub(super) struct ActIn {
    /// ACT's function field (`sysgrad_isa::command::field::ACT_FUNC`) of
    /// the line being written (REQUANT's reserved bits there are 0:
    /// identity).
    pub func: Net,
    /// The line goes to the gradient buffer (the command's `dst` flag,
    /// `sysgrad_isa::command::DataBuffer`'s code), else to the
    /// activation buffer: the format REQUANT rounds to and ReLU reads.
    pub to_grad: Net,
    /// The mask line: the activation buffer's read data, R lanes (a lane
    /// past R reads as not positive).
    pub mask: Net,
}

/// `act_out` (LA lanes of DW, defined on that handle) from the
/// requantized lanes `rq_out` and `input`, with the number format
/// `arith`'s tests of a word's sign.
pub(super) fn build(
    m: &mut Scope,
    la: Const,
    rq_out: Net,
    input: &ActIn,
    arith: &dyn Arithmetic,
    act_out: Net,
) {
    let (func, mask) = (input.func, input.mask);
    arith.sign_tests(m);
    m.comment("Activation unit: each requantized lane passes or becomes 0 (ACT's function).");
    let act_mask_pos = m.wire("act_mask_pos", Width::of(la));
    let mut inside = Scope::new();
    inside.assign(
        act_mask_pos.at(L),
        arith.positive(DataLane(mask), DataBuffer::Activations),
    );
    let mut above = Scope::new();
    above.assign(act_mask_pos.at(L), lit(1, 0));
    let mut mask_lanes = Scope::new();
    mask_lanes.gen_if(L.less(R), "g_in", inside, above);
    m.gen_for(L.name(), la, "g_act_mask_pos", mask_lanes);
    let act_keep = m.wire("act_keep", Width::of(la));
    m.define(wire_for(act_out, Width::of(la * DW)));
    let mut lane = Scope::new();
    let relu = || arith.relu_keeps(DataLane(rq_out), input.to_grad);
    let mut keep = lit(1, 0);
    for f in ActFunction::ALL.iter().rev() {
        keep = cond(
            func_is(func, *f),
            keeps(*f, relu(), act_mask_pos.at(L)),
            keep,
        );
    }
    lane.assign(act_keep.at(L), keep);
    lane.assign(
        act_out.lane(L, DW),
        cond(act_keep.at(L), rq_out.lane(L, DW), zeros(DW)),
    );
    m.gen_for(L.name(), la, "g_act_out", lane);
}
