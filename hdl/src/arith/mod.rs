//! The number format's seam: every arithmetic unit the PEs and the
//! accelerator emit (the saturating accumulate, the multipliers, the SGD
//! update, deferred saturation's clamps and exact sums, REQUANT and the
//! activation unit's test of a positive word) goes through one trait,
//! [`Arithmetic`]. The PEs build the dataflow around
//! the units (which register takes which product in which mode); the
//! format decides what a product, a sum and an update are.
//!
//! Two formats implement it: [`fixed::Fixed`] (two's-complement fixed
//! point, `docs/ARCHITECTURE.md`, Number format) and [`float::Float`]
//! (bf16/E4M3/E5M2 data with fp32 accumulators, Floating-point formats;
//! its units are Verilog functions built from the format tables in
//! [`float_units`]). `crate::design::variant` chooses one from
//! `cfg.numbers()`; the PEs, the arrays and the controllers do not ask.
//! A further format is a third implementation in a file of its own (the
//! formats never import each other; what they share goes into this file),
//! whose units declare the outputs the PEs read ([`Products`],
//! [`SgdNets`], [`Deferred`]) and whose registers beside the PE's own
//! (the stochastic rounding's `sr_state`) come through
//! [`Arithmetic::pe_ports`] and [`Arithmetic::pe_state`], and whose
//! `sa_requant` has the ports the accelerator connects by name
//! ([`REQUANT_IN`], [`REQUANT_OUT`], [`REQUANT_TO_GRAD`]); the emulator
//! gets the same format as its own implementation, so the co-simulation
//! compares the two.

pub(crate) mod fixed;
pub(crate) mod float;
pub(crate) mod float_units;

use crate::ir::*;
use crate::params::{DW, L};
use sysgrad_config::float::STOCHASTIC_BITS;
use sysgrad_isa::command::DataBuffer;

/// The PE register of the stochastic rounding's generator.
pub const SR_STATE: &str = "sr_state";
/// The PE port that gives `sr_state` its reset value.
pub const SR_SEED: &str = "sr_seed";
/// The generator's next state, whose low bits are the draw.
const SR_NEXT: &str = "sr_next";

/// The draw an SGD unit that rounds stochastically reads: the low 16
/// bits of the generator's next state (the cycle's draw).
pub(crate) fn sr_draw() -> Expr {
    Net::named(SR_NEXT).bits(STOCHASTIC_BITS as i64 - 1, 0)
}

/// The PE port a format that rounds stochastically adds: `sr_seed`, its
/// generator's reset value; none for one that rounds to nearest.
pub(crate) fn sr_ports(stochastic: bool) -> Vec<Port> {
    if !stochastic {
        return vec![];
    }
    vec![Port {
        dir: Dir::Input,
        net: Net::named(SR_SEED),
        width: Width::of(32),
        signed: false,
    }]
}

/// `sr_state`: the PE's xorshift generator (shifts 13, 17, 5), reset to
/// `sr_seed`, stepped in each cycle the SGD unit writes `w`; the draw is
/// the low 16 bits of the new state `sr_next` (docs/ARCHITECTURE.md,
/// Random bits). Nothing for a format that rounds to nearest.
pub(crate) fn sr_generator(stochastic: bool, m: &mut Scope, rst: Net, w_written: Expr) {
    if !stochastic {
        return;
    }
    m.comment(
        "Stochastic rounding's xorshift generator (13, 17, 5); the draw is sr_next's low 16 bits.",
    );
    let state = m.reg(SR_STATE, Width::of(32));
    let s1 = m.add(wire("sr_s1", Width::of(32)).init(state.e().bit_xor(state << lit(5, 13))));
    let s2 = m.add(wire("sr_s2", Width::of(32)).init(s1.e().bit_xor(s1 >> lit(5, 17))));
    let next = m.add(wire(SR_NEXT, Width::of(32)).init(s2.e().bit_xor(s2 << lit(5, 5))));
    m.clocked(vec![if_else(
        rst,
        vec![set(state, Net::named(SR_SEED))],
        vec![when(w_written, vec![set(state, next)])],
    )]);
}

/// The requantizer's module name, whatever its format.
pub(crate) const REQUANT_MODULE: &str = "sa_requant";

/// `sa_requant`'s ports, which the accelerator connects by name: the
/// accumulator word in, the data word out, and the destination (1: the
/// gradient buffer), which only a format that rounds the two
/// destinations differently has ([`Arithmetic::requant`]).
pub(crate) const REQUANT_IN: &str = "a";
pub(crate) const REQUANT_OUT: &str = "q";
pub(crate) const REQUANT_TO_GRAD: &str = "to_grad";

/// Lane `L` (the generate loop's variable) of a bus of DW-bit data
/// words, as the activation unit tests it.
#[derive(Clone, Copy)]
pub(crate) struct DataLane(pub Net);

impl DataLane {
    /// The lane's word: `bus[L*DW +: DW]`.
    pub fn word(self) -> Expr {
        self.0.lane(L, DW)
    }
    /// The lane's low `bits` bits (a pattern): `bus[L*DW +: bits]`.
    pub fn low(self, bits: u32) -> Expr {
        self.0.part(L * DW, int(i64::from(bits)))
    }
    /// The lane's top bit (a fixed-point word's sign).
    pub fn top(self) -> Expr {
        self.0.at(L * DW + (DW - 1))
    }
}

/// What the multipliers compute with: the weight, the data inputs and
/// the conditions that choose the operands (FWD, dX or dW work in this
/// cycle). The `none` PE decodes them from the global mode, the dense PE
/// from the wave it takes.
pub(crate) struct MulOperands {
    /// What chooses the one multiplier's operands, for its comment.
    pub chooser: &'static str,
    pub weight: Expr,
    /// The x input (`x_in`) and the dy input (`d_in`).
    pub x: Net,
    pub d: Net,
    pub fwd: Expr,
    pub dx: Expr,
    pub dw: Expr,
}

/// The products in the accumulators' format: for the dX/forward sum
/// (`p_dx`) and the dW accumulation (`p_dw`).
pub(crate) struct Products {
    pub p_dx: Net,
    pub p_dw: Net,
}

/// What an SGD unit subtracts from `w` instead of its own step: a signed
/// value and its width (at least DW+2 bits, so that the difference is
/// exact).
pub(crate) struct Subtrahend {
    pub value: Expr,
    pub width: Expr,
}

/// One SGD unit: `w - round_shift(dw, FRAC + lr)`, its nets named
/// `<prefix>...`.
pub(crate) struct Sgd<'a> {
    pub prefix: &'a str,
    pub w: Expr,
    pub dw: Expr,
    pub lr: Expr,
    pub comment: &'a str,
    /// Subtract this instead of the unit's own step (the second cycle of
    /// a split update).
    pub subtrahend: Option<Subtrahend>,
    /// Saturate the difference to the data width (`w_next`); without,
    /// stop at the exact difference (`w_diff`), which a
    /// deferred-saturation `w` keeps.
    pub saturate: bool,
}

/// The nets an SGD unit declares that its PE reads.
pub(crate) struct SgdNets {
    /// The rounded step.
    pub dw_step: Net,
    /// The exact difference.
    pub w_diff: Net,
    /// The difference saturated to the data width, if asked for.
    pub w_next: Option<Net>,
}

/// The constants the first SGD unit of a module declares and the others
/// share.
pub(crate) struct SgdShared {
    pub(crate) lr_k: Const,
    /// The fixed-point unit's: `FRAC7`, `AW7` and `one` (rounding to
    /// nearest only).
    pub(crate) fixed: Option<(Const, Const, Option<Net>)>,
}

impl SgdShared {
    /// Only the learning-rate constant (a format whose step needs no
    /// rounding constants).
    pub(crate) fn lr_only(lr_k: Const) -> SgdShared {
        SgdShared { lr_k, fixed: None }
    }
}

/// The PE nets deferred saturation reads and writes.
pub(crate) struct DeferredIn {
    /// The accumulator registers `psv`, `psh`, `dw` and the weight `w`.
    pub psv: Net,
    pub psh: Net,
    pub dw: Net,
    pub w: Net,
    /// The neighbour inputs.
    pub w_in: Net,
    pub psv_in: Net,
    pub psh_in: Net,
    pub dw_in: Net,
    /// What the adders take (products or product registers).
    pub add_sum: Net,
    pub add_dw: Net,
}

/// Deferred saturation's nets: each wide register as its readers take it
/// (`<r>_sat`), and the exact values the registers load. The PE reads
/// `w_sat` before the unit is built (its multipliers come first), so the
/// handles exist before their declarations ([`Deferred::named`]).
pub(crate) struct Deferred {
    pub psv_sat: Net,
    pub psh_sat: Net,
    pub dw_sat: Net,
    pub w_sat: Net,
    /// `w_in` widened to the register.
    pub w_north: Net,
    pub psv_sum: Net,
    pub psh_sum: Net,
    pub dw_sum: Net,
    /// `dw_in` widened to the register (DRAIN).
    pub dw_west: Net,
}

impl Deferred {
    pub fn named() -> Deferred {
        Deferred {
            psv_sat: Net::named("psv_sat"),
            psh_sat: Net::named("psh_sat"),
            dw_sat: Net::named("dw_sat"),
            w_sat: Net::named("w_sat"),
            w_north: Net::named("w_north"),
            psv_sum: Net::named("psv_sum"),
            psh_sum: Net::named("psh_sum"),
            dw_sum: Net::named("dw_sum"),
            dw_west: Net::named("dw_west"),
        }
    }
}

/// The arithmetic of one number format (see the module documentation).
pub(crate) trait Arithmetic {
    /// Declares the accumulate function (`a + b` in the accumulator
    /// format) in `m` and returns it for its calls.
    fn accumulate(&self, m: &mut Scope) -> Function;
    /// The multipliers of a PE.
    fn multipliers(&self, m: &mut Scope, ops: MulOperands) -> Products;
    /// One SGD unit; the first of a module (`shared` empty) declares the
    /// constants the others share.
    fn sgd_unit(&self, m: &mut Scope, unit: Sgd, shared: &mut Option<SgdShared>) -> SgdNets;
    /// The SGD step `dw_step` narrowed to the width an update's second
    /// cycle subtracts (`step_q`): a larger step saturates the weight
    /// alike.
    fn step_clamp(&self, m: &mut Scope, dw_step: Net) -> Net;
    /// `step_q` widened to an accumulator (the product register that
    /// carries it to the update's second cycle).
    fn step_to_accumulator(&self, step_q: Net) -> Expr;
    /// The subtrahend of an update's second cycle from the product
    /// register `prod_dw` that carried `step_q`: its step bits with one
    /// more sign bit.
    fn carried_subtrahend(&self, m: &mut Scope, prod_dw: Net) -> Expr;
    /// The subtrahend of a one-cycle update of a deferred-saturation PE:
    /// `step_q` with one more sign bit.
    fn narrow_subtrahend(&self, step_q: Net) -> Expr;
    /// The subtrahend of a one-cycle update: the full step `dw_step`.
    fn full_subtrahend(&self, dw_step: Net) -> Expr;
    /// The product `p` a valid dW stream adds, else nothing.
    fn product_or_zero(&self, valid: Net, p: Net) -> Expr;
    /// Deferred saturation (`array.deferred_saturation`): registers hold
    /// exact values, clamped where read.
    fn deferred(&self, m: &mut Scope, regs: DeferredIn, out: &Deferred);
    /// The widths of a deferred-saturation PE's accumulators and weight.
    fn deferred_widths(&self) -> (Expr, Expr);
    /// `sa_requant`: one lane of REQUANT, accumulator to data. Its ports
    /// are [`REQUANT_IN`], [`REQUANT_OUT`] and, if the destinations'
    /// formats differ, [`REQUANT_TO_GRAD`].
    fn requant(&self) -> Module;
    /// Declares what [`Arithmetic::positive`] and
    /// [`Arithmetic::relu_keeps`] call, in the activation unit's module
    /// (nothing where they are plain expressions).
    fn sign_tests(&self, _m: &mut Scope) {}
    /// Whether `word`, a word of `buffer`, stands for a value greater than
    /// 0: relu_grad's mask passes its lane (`docs/COMMANDS.md`, ACT).
    fn positive(&self, word: DataLane, buffer: DataBuffer) -> Expr;
    /// Whether ReLU keeps `word`, REQUANT's result for the gradient buffer
    /// where `to_grad` (else the activation buffer): where it is positive
    /// (a format may keep a word that dropping would write alike, its 0).
    /// A word ReLU drops becomes 0.
    fn relu_keeps(&self, word: DataLane, to_grad: Net) -> Expr;
    /// The width of the subtrahend an SGD unit takes from the product
    /// stage (`SGD_W`), with or without deferred saturation, and the
    /// comment that says why.
    fn subtrahend_width(&self, deferred: bool) -> (&'static str, Expr);
    /// Whether the modules take `FRAC` (fixed point's fractional bits);
    /// a format without it has no such parameter.
    fn has_frac(&self) -> bool {
        true
    }
    /// The PE ports the format adds (a float PE with stochastic rounding:
    /// `sr_seed`, its generator's reset value).
    fn pe_ports(&self) -> Vec<Port> {
        vec![]
    }
    /// The PE registers the format adds (`sr_state`), stepped in a cycle
    /// in which `w_written` holds.
    fn pe_state(&self, _m: &mut Scope, _rst: Net, _w_written: Expr) {}
}
