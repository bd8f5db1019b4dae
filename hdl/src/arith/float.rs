//! Floating point (`docs/ARCHITECTURE.md`, Floating-point formats):
//! bf16, E4M3 or E5M2 data in the low bits of DW-bit words, fp32
//! accumulators (AW = 32); products exact in fp32 (rounded only where
//! they leave its normal range), sums rounded to nearest even, the SGD
//! update `round_w(w - dw * 2^-lr)` rounded twice (to fp32, then to the
//! weight format, to nearest or stochastically with the PE's xorshift
//! generator `sr_state`). The units are Verilog functions built from the
//! format tables ([`super::float_units`]).

use super::float_units::{self as units, FP32_ADD, FP32_SCALE, FP32_SUB, FP_MUL};
use super::{
    Arithmetic, DataLane, Deferred, DeferredIn, MulOperands, Products, Sgd, SgdNets, SgdShared,
    REQUANT_IN, REQUANT_MODULE, REQUANT_OUT, REQUANT_TO_GRAD,
};
use crate::ir::*;
use crate::params::{AW, DW, INTERLEAVED, LR_FIXED, LR_SHIFT};
use sysgrad_config::float::{FloatFormat, FloatKind, Rounding, FP32};
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::command::DataBuffer;

/// The floating-point format of a configuration.
pub(crate) struct Float {
    pub format: FloatFormat,
}

impl Float {
    fn stochastic(&self) -> bool {
        self.format.rounding == Rounding::Stochastic
    }

    /// `v[bits-1:0]`: the low bits of a DW-bit word that hold format `k`.
    fn low(v: Expr, k: FloatKind) -> Expr {
        v.bits(k.encoding().bits() as i64 - 1, 0)
    }

    /// A value of format `k` as a DW-bit word: zeros above it.
    fn word(&self, v: Expr, k: FloatKind) -> Expr {
        let pad = self.format.data_bits() - k.encoding().bits();
        if pad == 0 {
            v
        } else {
            cat([lit(pad, 0), v])
        }
    }

    fn unpack(v: Expr, k: FloatKind) -> Expr {
        call(&units::unpack_name(k), [Self::low(v, k)])
    }

    /// The format of a data buffer's words (REQUANT's and ACT's
    /// destinations; the activation buffer holds relu_grad's mask).
    fn kind(&self, buffer: DataBuffer) -> FloatKind {
        match buffer {
            DataBuffer::Activations => self.format.activations,
            DataBuffer::Gradients => self.format.gradients,
        }
    }

    /// The data buffers' formats, each once (one if they are the same).
    fn buffer_kinds(&self) -> Vec<FloatKind> {
        let mut kinds: Vec<FloatKind> = DataBuffer::ALL.map(|b| self.kind(b)).into();
        kinds.dedup();
        kinds
    }

    /// Whether REQUANT's two destinations round alike (one format), so
    /// that `sa_requant` and ReLU need not know the destination.
    fn one_destination_format(&self) -> bool {
        self.buffer_kinds().len() == 1
    }

    /// `per(Gradients)` where `to_grad`, else `per(Activations)`; one of
    /// them if the buffers share a format.
    fn by_destination(&self, to_grad: Expr, per: impl Fn(DataBuffer) -> Expr) -> Expr {
        if self.one_destination_format() {
            return per(DataBuffer::Activations);
        }
        cond(
            to_grad,
            per(DataBuffer::Gradients),
            per(DataBuffer::Activations),
        )
    }
}

impl Arithmetic for Float {
    /// Declares every unit of the format (functions) and returns the
    /// accumulate, `fp32_add`.
    fn accumulate(&self, m: &mut Scope) -> Function {
        let f = &self.format;
        m.comment(
            "Floating-point units (ARCHITECTURE.md, Floating-point formats): fp32 accumulators,",
        );
        m.comment(format!(
            "weights {}, activations {}, gradients {}; the update rounds {}.",
            f.weights.name(),
            f.activations.name(),
            f.gradients.name(),
            match f.rounding {
                Rounding::Nearest => "to nearest even",
                Rounding::Stochastic => "stochastically (sr_state)",
            }
        ));
        let lib = units::library(
            &[f.weights, f.activations, f.gradients],
            &[(f.weights, self.stochastic())],
            LR_SHIFT_BITS,
        );
        let mut add = None;
        for func in lib {
            let is_add = func.name == FP32_ADD;
            let declared = m.function(func);
            if is_add {
                add = Some(declared);
            }
        }
        add.expect("the library has the adder")
    }

    fn multipliers(&self, m: &mut Scope, ops: MulOperands) -> Products {
        let f = &self.format;
        m.comment("Unpacked operands: {nan, inf, zero, sign, exp, sig}; products in fp32.");
        let u = || Width::of(units::UNPACKED_BITS as i64);
        let uw = m.add(wire("u_w", u()).init(Self::unpack(ops.weight.clone(), f.weights)));
        let ux = m.add(wire("u_x", u()).init(Self::unpack(ops.x.e(), f.activations)));
        let ud = m.add(wire("u_d", u()).init(Self::unpack(ops.d.e(), f.gradients)));
        let p_dx = m.add(wire("p_dx", Width::of(AW)));
        let p_dw = m.add(wire("p_dw", Width::of(AW)));
        let mut two = Scope::new();
        let dx_op = two.add(wire("dx_op", u()).init(cond(ops.fwd, ux, ud)));
        two.assign(p_dx, call(FP_MUL, [uw.e(), dx_op.e()]));
        two.assign(p_dw, call(FP_MUL, [ud.e(), ux.e()]));
        let mut one = Scope::new();
        one.comment(format!(
            "One multiplier, its operands chosen by {}.",
            ops.chooser
        ));
        let op_a = one.add(wire("op_a", u()).init(cond(ops.dw, ud, uw)));
        let op_b = one.add(wire("op_b", u()).init(cond(ops.dx, ud, ux)));
        let m_one = one.add(wire("m_one", Width::of(AW)).init(call(FP_MUL, [op_a.e(), op_b.e()])));
        one.assign(p_dx, m_one);
        one.assign(p_dw, m_one);
        m.gen_if(INTERLEAVED.differs(0), "g_mul", two, one);
        Products { p_dx, p_dw }
    }

    /// `<prefix>dw_step = dw * 2^-lr` (fp32), `<prefix>w_diff = widen(w)
    /// - step` (fp32), `<prefix>w_next` that rounded to the weight format.
    fn sgd_unit(&self, m: &mut Scope, unit: Sgd, shared: &mut Option<SgdShared>) -> SgdNets {
        let f = &self.format;
        let n = |s: &str| format!("{}{s}", unit.prefix);
        m.comment(unit.comment);
        let lr_k = match shared {
            Some(s) => s.lr_k,
            None => {
                let lr_k = m.localparam(
                    "LR_K",
                    Width::of(LR_SHIFT_BITS),
                    LR_SHIFT.bits(LR_SHIFT_BITS as i64 - 1, 0),
                );
                *shared = Some(SgdShared::lr_only(lr_k));
                lr_k
            }
        };
        let lr = cond(LR_FIXED.differs(0), lr_k, unit.lr);
        let dw_step =
            m.add(wire(&n("dw_step"), Width::of(AW)).init(call(FP32_SCALE, [unit.dw, lr])));
        let sub = match unit.subtrahend {
            Some(s) => s.value,
            None => dw_step.e(),
        };
        let wide = call(
            &units::widen_name(f.weights),
            [Self::low(unit.w, f.weights)],
        );
        let w_diff = m.add(wire(&n("w_diff"), Width::of(AW)).init(call(FP32_SUB, [wide, sub])));
        let rounded = if self.stochastic() {
            call(
                &units::round_name(f.weights, true),
                [w_diff.e(), super::sr_draw()],
            )
        } else {
            call(&units::round_name(f.weights, false), [w_diff.e()])
        };
        let w_next = m.add(wire(&n("w_next"), Width::of(DW)).init(self.word(rounded, f.weights)));
        SgdNets {
            dw_step,
            w_diff,
            w_next: Some(w_next),
        }
    }

    /// The float step is an fp32 value: it is carried as it is.
    fn step_clamp(&self, _m: &mut Scope, dw_step: Net) -> Net {
        dw_step
    }

    fn step_to_accumulator(&self, step_q: Net) -> Expr {
        step_q.e()
    }

    fn carried_subtrahend(&self, _m: &mut Scope, prod_dw: Net) -> Expr {
        prod_dw.e()
    }

    fn narrow_subtrahend(&self, step_q: Net) -> Expr {
        step_q.e()
    }

    fn full_subtrahend(&self, dw_step: Net) -> Expr {
        dw_step.e()
    }

    fn subtrahend_width(&self, _deferred: bool) -> (&'static str, Expr) {
        (
            "The SGD step is an fp32 value, carried whole (with MUL_REG in prod_dw).",
            AW.e(),
        )
    }

    /// With MUL_REG an invalid dy's product register holds +0.0, which the
    /// next cycle adds, as the emulator does (so a -0.0 `dw` becomes +0.0
    /// there: the contract's "dw keeps its bits" holds without MUL_REG,
    /// where `dw_en` skips the add).
    fn product_or_zero(&self, valid: Net, p: Net) -> Expr {
        cond(valid, p, zeros(AW))
    }

    fn deferred(&self, _m: &mut Scope, _regs: DeferredIn, _out: &Deferred) {
        unreachable!("the configuration refuses deferred saturation with a float format")
    }

    fn deferred_widths(&self) -> (Expr, Expr) {
        (AW.e(), DW.e())
    }

    /// REQUANT and ACT round the fp32 accumulator to the destination
    /// buffer's format, to nearest even (`round_<k>`; `docs/COMMANDS.md`,
    /// Floating point), the pattern in the low bits of a DW-bit word.
    /// The destination is the port `to_grad` where the two buffers'
    /// formats differ; with one format it is not needed.
    fn requant(&self) -> Module {
        let a = input(REQUANT_IN, Width::of(AW));
        let q = output(REQUANT_OUT, Width::of(DW));
        let to_grad = input(REQUANT_TO_GRAD, Width::bit());
        let mut m = Scope::new();
        for k in self.buffer_kinds() {
            m.function(units::narrow_core(k, false));
            m.function(units::narrow(k, false));
        }
        let rounded = |b: DataBuffer| {
            let k = self.kind(b);
            self.word(call(&units::round_name(k, false), [a.net.e()]), k)
        };
        m.assign(q.net, self.by_destination(to_grad.net.e(), rounded));
        let mut ports = vec![a];
        if !self.one_destination_format() {
            ports.push(to_grad);
        }
        ports.push(q);
        Module {
            name: REQUANT_MODULE.into(),
            doc: vec![
                "sa_requant: fp32 accumulator to the destination's format, nearest even (REQUANT)."
                    .into(),
            ],
            params: vec![
                param(DW.name(), self.format.data_bits().into(), "data width"),
                param(AW.name(), FP32.bits().into(), "accumulator width (fp32)"),
            ],
            ports,
            genvars: vec![],
            items: m.into_items(),
        }
    }

    /// `positive_<k>` of each data buffer's format.
    fn sign_tests(&self, m: &mut Scope) {
        for k in self.buffer_kinds() {
            m.function(units::positive(k));
        }
    }

    /// The pattern in the word's low bits is positive in its buffer's
    /// format: sign clear, not a zero, not a NaN.
    fn positive(&self, word: DataLane, buffer: DataBuffer) -> Expr {
        let k = self.kind(buffer);
        call(&units::positive_name(k), [word.low(k.encoding().bits())])
    }

    /// Positive in the destination's format: `-0` and a NaN become `+0`.
    fn relu_keeps(&self, word: DataLane, to_grad: Net) -> Expr {
        self.by_destination(to_grad.e(), |b| self.positive(word, b))
    }

    fn has_frac(&self) -> bool {
        false
    }

    fn pe_ports(&self) -> Vec<Port> {
        super::sr_ports(self.stochastic())
    }

    fn pe_state(&self, m: &mut Scope, rst: Net, w_written: Expr) {
        super::sr_generator(self.stochastic(), m, rst, w_written)
    }
}
