//! Two's-complement fixed point (`docs/ARCHITECTURE.md`, Number format):
//! DW-bit data with FRAC fractional bits, AW-bit accumulators with 2*FRAC;
//! products exact in 2*DW bits, sums saturated to AW bits, the SGD step
//! rounded half up (or stochastically, with the PE's generator
//! `sr_state`) and the weight saturated to DW bits.

use super::{
    Arithmetic, DataLane, Deferred, DeferredIn, MulOperands, Products, Sgd, SgdNets, SgdShared,
    REQUANT_IN, REQUANT_MODULE, REQUANT_OUT,
};
use crate::ir::*;
use crate::params::{AW, DW, FRAC, INTERLEAVED, LR_FIXED, LR_SHIFT, MUL_REG};
use sysgrad_config::float::Rounding;
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::command::DataBuffer;

/// The fixed-point format (its widths are the modules' `DW`, `AW` and
/// `FRAC` parameters) and how its update rounds.
pub(crate) struct Fixed {
    pub rounding: Rounding,
}

impl Fixed {
    fn stochastic(&self) -> bool {
        self.rounding == Rounding::Stochastic
    }

    /// What the step adds before its shift: one half (`2^(shamt-1)`, 0
    /// for shamt 0: round half up), or with stochastic rounding the draw
    /// scaled to shamt bits, `floor(r * 2^shamt / 2^16)`
    /// (ARCHITECTURE.md, Stochastic rounding in fixed point). The first
    /// unit of a module declares `one`, which the others share.
    fn rounding_offset(
        &self,
        m: &mut Scope,
        prefix: &str,
        shamt: Net,
        one: &mut Option<Net>,
    ) -> Net {
        let n = |s: &str| format!("{prefix}{s}");
        if self.stochastic() {
            m.comment("Stochastic rounding: the draw scaled to shamt bits rounds up with the dropped fraction's probability.");
            // AW >= 16, so the draw fits AW+1 bits with a zero above it.
            let draw = m.add(
                wire(&n("sr_draw"), Width::of(AW + 1))
                    .init(cat([zeros(AW - 15), super::sr_draw()])),
            );
            let sixteen = || lit(7, 16);
            return m.add(wire(&n("sr_off"), Width::of(AW + 1)).init(cond(
                shamt.at_least(sixteen()),
                draw << (shamt - sixteen()),
                draw >> (sixteen() - shamt),
            )));
        }
        let one = *one.get_or_insert_with(|| {
            m.add(wire("one", Width::of(AW + 1)).init(cat([zeros(AW), lit(1, 1)])))
        });
        m.add(wire(&n("half"), Width::of(AW + 1)).init(cond(
            shamt.equals(lit(7, 0)),
            zeros(AW + 1),
            one << (shamt - lit(7, 1)),
        )))
    }
}

/// `{v[AW-1], v}`: an accumulator value sign-extended by one bit.
fn widen(v: impl Into<Expr>) -> Expr {
    let v = v.into();
    cat([v.at(AW - 1), v])
}

/// The exact 2*DW-bit product `m` sign-extended to AW bits. The sign is
/// repeated AW-2*DW+1 times over the low 2*DW-1 bits so that the
/// replication count is never 0 (AW may equal 2*DW).
fn extend_product(m: Net) -> Expr {
    let n = 2 * DW.e();
    cat([
        repeat(AW - n.clone() + 1, m.at(n.clone() - 1)),
        m.bits(n - 2, 0),
    ])
}

/// Whether the value whose `count` top bits are `high` fits the width
/// below them: all those bits agree (all zeros or all ones).
fn top_bits_agree(high: Expr, count: impl Into<Expr>) -> Expr {
    let count = count.into();
    high.clone()
        .equals(zeros(count.clone()))
        .or(high.equals(ones(count)))
}

/// `v` narrowed to `width` bits (`msb` = `width - 1`, given as the
/// generated Verilog writes it) as the signed wire `name`: taken as it is
/// where its `count` bits from `msb` up to its sign bit `top` agree (the
/// flag `fits`), else clamped to the end its sign names.
fn narrowed(
    m: &mut Scope,
    [fits, name]: [&str; 2],
    v: Net,
    top: Expr,
    [width, msb]: [Expr; 2],
    count: Expr,
) -> Net {
    let high = v.bits(top.clone(), msb.clone());
    let fits = m.flag(fits, top_bits_agree(high, count));
    m.signed_wire(
        name,
        width.clone(),
        cond(fits, v.bits(msb, 0), clamp_value(v.at(top), width)),
    )
}

/// `v` (AW+1 bits) clamped to AW bits where its top two bits differ.
fn clamped(v: Net) -> Expr {
    let overflowed = v.at(AW).differs(v.at(AW - 1));
    cond(overflowed, clamp_value(v.at(AW), AW), v.bits(AW - 1, 0))
}

impl Arithmetic for Fixed {
    /// `sat_add(a, b)`: `a + b` formed in AW+1 bits, clamped to AW bits.
    fn accumulate(&self, m: &mut Scope) -> Function {
        let (a, b, s) = (Net::named("a"), Net::named("b"), Net::named("s"));
        let top = s.at(AW);
        let result = || Function::result("sat_add");
        m.function(Function {
            name: "sat_add",
            width: Width::of(AW),
            signed: true,
            inputs: vec![(a, Width::of(AW), true), (b, Width::of(AW), true)],
            locals: vec![reg("s", Width::of(AW + 1)).signed()],
            body: vec![
                blocking(s, widen(a) + widen(b)),
                Stmt::Comment("Overflowed iff the top two bits differ.".into()),
                if_else(
                    top.clone().differs(s.at(AW - 1)),
                    vec![blocking(result(), clamp_value(top, AW))],
                    vec![blocking(result(), s.bits(AW - 1, 0))],
                ),
            ],
        })
    }

    fn multipliers(&self, m: &mut Scope, ops: MulOperands) -> Products {
        let product = || 2 * DW.e();
        let (x, d) = (ops.x, ops.d);
        m.comment("Products are exact (2*DW bits); sign-extend them to the accumulator width.");
        let p_dx = m.add(wire("p_dx", Width::of(AW)).signed());
        let p_dw = m.add(wire("p_dw", Width::of(AW)).signed());
        let mut two = Scope::new();
        let dx_op = two.signed_wire("dx_op", DW, cond(ops.fwd, x, d));
        let m_dx = two.signed_wire("m_dx", product(), ops.weight.clone() * dx_op);
        let m_dw = two.signed_wire("m_dw", product(), d * x);
        two.assign(p_dx, extend_product(m_dx));
        two.assign(p_dw, extend_product(m_dw));
        let mut one = Scope::new();
        one.comment(format!(
            "One multiplier, its operands chosen by {}.",
            ops.chooser
        ));
        let op_a = one.signed_wire("op_a", DW, cond(ops.dw, d, ops.weight));
        let op_b = one.signed_wire("op_b", DW, cond(ops.dx, d, x));
        let m_one = one.signed_wire("m_one", product(), op_a * op_b);
        one.assign(p_dx, extend_product(m_one));
        one.assign(p_dw, extend_product(m_one));
        m.gen_if(INTERLEAVED.differs(0), "g_mul", two, one);
        Products { p_dx, p_dw }
    }

    /// `<prefix>w_next = sat(w - round_shift(dw, FRAC + lr), DW)`, or
    /// `sat(w - subtrahend, DW)`; without saturation it stops at the exact
    /// difference `<prefix>w_diff`. The first unit declares the constants
    /// (`FRAC7`, `AW7`, `LR_K`, `one`) that further units share.
    fn sgd_unit(&self, m: &mut Scope, unit: Sgd, shared: &mut Option<SgdShared>) -> SgdNets {
        let n = |s: &str| format!("{}{s}", unit.prefix);
        // Shift amounts reach FRAC + 63 < 128: 7 bits.
        let w7 = || Width::of(7);
        m.comment(unit.comment);
        let first = shared.is_none();
        let (frac7, aw7, lr_k) = match shared.as_ref().and_then(|s| s.fixed.map(|f| (f, s.lr_k))) {
            Some(((frac7, aw7, _), lr_k)) => (frac7, aw7, lr_k),
            None => (
                m.localparam("FRAC7", w7(), FRAC.bits(6, 0)),
                m.localparam("AW7", w7(), AW.bits(6, 0)),
                m.localparam(
                    "LR_K",
                    Width::of(LR_SHIFT_BITS),
                    LR_SHIFT.bits(LR_SHIFT_BITS as i64 - 1, 0),
                ),
            ),
        };
        // A constant shift makes shamt a constant: synthesis then removes
        // the barrel shifters below.
        let lr = cond(LR_FIXED.differs(0), lr_k, unit.lr);
        let shamt = m.add(wire(&n("shamt"), w7()).init(frac7 + cat([lit(1, 0), lr])));
        let mut one = shared
            .as_ref()
            .and_then(|s| s.fixed)
            .and_then(|(_, _, one)| one);
        let offset = self.rounding_offset(m, unit.prefix, shamt, &mut one);
        if first {
            *shared = Some(SgdShared {
                lr_k,
                fixed: Some((frac7, aw7, one)),
            });
        }
        m.comment("The rounding sum cannot overflow AW+1 bits.");
        let round = (call("$signed", [widen(unit.dw)]) + call("$signed", [offset.e()])).ashr(shamt);
        let dw_round = m.signed_wire(&n("dw_round"), AW + 1, round);
        let dw_step = m.signed_wire(
            &n("dw_step"),
            AW + 1,
            cond(shamt.at_least(aw7), zeros(AW + 1), dw_round),
        );
        let (sub_value, diff_w) = match unit.subtrahend {
            Some(s) => (s.value, s.width),
            None => (self.full_subtrahend(dw_step), AW + 2),
        };
        m.comment(
            "The difference is exact in its width; it fits DW bits iff its bits from DW-1 up agree.",
        );
        let w = unit.w;
        let w_diff = m.signed_wire(
            &n("w_diff"),
            diff_w.clone(),
            cat([repeat(diff_w.clone() - DW, w.at(DW - 1)), w]) - sub_value,
        );
        if !unit.saturate {
            return SgdNets {
                dw_step,
                w_diff,
                w_next: None,
            };
        }
        let w_next = narrowed(
            m,
            [&n("w_fits"), &n("w_next")],
            w_diff,
            diff_w.clone() - 1,
            [DW.e(), DW - 1],
            diff_w + 1 - DW,
        );
        SgdNets {
            dw_step,
            w_diff,
            w_next: Some(w_next),
        }
    }

    /// `step_q`: `dw_step` clamped to DW+1 bits: |w| < 2^(DW-1), so a
    /// larger step saturates w alike, and the subtract in the second
    /// UPDATE cycle is DW+2 bits wide.
    fn step_clamp(&self, m: &mut Scope, dw_step: Net) -> Net {
        m.comment(
            "The SGD step clamped to DW+1 bits: |w| < 2^(DW-1), so a larger step saturates w alike,",
        );
        m.comment("and the subtract in the second UPDATE cycle is DW+2 bits wide.");
        narrowed(
            m,
            ["step_fits", "step_q"],
            dw_step,
            AW.e(),
            [DW + 1, DW.e()],
            AW + 1 - DW.e(),
        )
    }

    fn step_to_accumulator(&self, step_q: Net) -> Expr {
        cat([repeat(AW - DW.e() - 1, step_q.at(DW)), step_q.e()])
    }

    /// `prod_dw` clamped to DW+1 bits, with one more sign bit: it holds
    /// a step (within them) in every UPDATE but one right after a pass cut
    /// short, which finds a raw product there; clamped, it saturates `w`
    /// alike (ARCHITECTURE.md, Multiplier register).
    fn carried_subtrahend(&self, m: &mut Scope, prod_dw: Net) -> Expr {
        m.comment("prod_dw clamped to DW+1 bits: a step is within them; a raw product left by a pass cut short is not.");
        let carried = narrowed(
            m,
            ["prod_fits", "prod_step"],
            prod_dw,
            AW - 1,
            [DW + 1, DW.e()],
            AW - DW.e(),
        );
        cat([carried.at(DW), carried.e()])
    }

    fn narrow_subtrahend(&self, step_q: Net) -> Expr {
        cat([step_q.at(DW), step_q.e()])
    }

    fn full_subtrahend(&self, dw_step: Net) -> Expr {
        cat([dw_step.at(AW), dw_step.e()])
    }

    fn product_or_zero(&self, valid: Net, p: Net) -> Expr {
        cond(valid, p, zeros(AW))
    }

    /// Deferred: the step arrives clamped to DW+1 bits (a DW+2-bit
    /// subtract); else with MUL_REG so, without the full AW+2 bits.
    fn subtrahend_width(&self, deferred: bool) -> (&'static str, Expr) {
        if deferred {
            (
                "The SGD step arrives clamped to DW+1 bits: a DW+2-bit subtract, which w keeps.",
                DW + 2,
            )
        } else {
            (
                "With MUL_REG the SGD step arrives clamped to DW+1 bits: a DW+2-bit subtract.",
                cond(MUL_REG.differs(0), DW + 2, AW + 2),
            )
        }
    }

    /// `psv`, `psh` and `dw` hold the exact AW+1-bit sum of two AW-bit
    /// values and `w` the exact DW+2-bit difference of its last update;
    /// `<reg>_sat` is the value clamped to AW or DW bits. The clamp moves
    /// from after the add's carry chain to the start of the next cycle,
    /// where its inputs come straight from the register; the clamped
    /// values are the same in every cycle, so results and timing are too.
    fn deferred(&self, m: &mut Scope, r: DeferredIn, out: &Deferred) {
        m.comment(
            "Deferred saturation: the registers hold exact sums (AW+1 bits) and differences (w, DW+2),",
        );
        m.comment("clamped as they are read.");
        let mut signed = |net: Net, width: Expr, e: Expr| {
            m.define(wire_for(net, Width::of(width)).signed().init(e));
        };
        for (sat, reg) in [
            (out.psv_sat, r.psv),
            (out.psh_sat, r.psh),
            (out.dw_sat, r.dw),
        ] {
            signed(sat, AW.e(), clamped(reg));
        }
        // w holds the exact DW+2-bit difference an UPDATE left: it fits DW
        // bits iff its top three bits agree.
        let w = r.w;
        let w_fits = top_bits_agree(w.bits(DW + 1, DW - 1), 3);
        signed(
            out.w_sat,
            DW.e(),
            cond(w_fits, w.bits(DW - 1, 0), clamp_value(w.at(DW + 1), DW)),
        );
        signed(
            out.w_north,
            DW + 2,
            cat([repeat(2, r.w_in.at(DW - 1)), r.w_in.e()]),
        );
        let exact_sum = |a: Net, b: Net| widen(a) + widen(b);
        signed(out.psv_sum, AW + 1, exact_sum(r.psv_in, r.add_sum));
        signed(out.psh_sum, AW + 1, exact_sum(r.psh_in, r.add_sum));
        signed(out.dw_sum, AW + 1, exact_sum(out.dw_sat, r.add_dw));
        signed(out.dw_west, AW + 1, widen(r.dw_in));
    }

    fn deferred_widths(&self) -> (Expr, Expr) {
        (AW + 1, DW + 2)
    }

    fn pe_ports(&self) -> Vec<Port> {
        super::sr_ports(self.stochastic())
    }

    fn pe_state(&self, m: &mut Scope, rst: Net, w_written: Expr) {
        super::sr_generator(self.stochastic(), m, rst, w_written)
    }

    /// A two's-complement word is positive where its sign is clear and
    /// some bit is set; both data buffers hold such words.
    fn positive(&self, word: DataLane, _buffer: DataBuffer) -> Expr {
        (!word.top()).and(word.word().any())
    }

    /// Where the sign is clear: a zero, which is not positive, is kept as
    /// the 0 that dropping it would write, so the sign alone decides.
    fn relu_keeps(&self, word: DataLane, _to_grad: Net) -> Expr {
        !word.top()
    }

    /// An accumulator value (2F fractional bits) to data (F fractional
    /// bits): round half up at shift FRAC, then saturate to DW bits.
    /// `fixed::requantize` is the same rule in Rust.
    fn requant(&self) -> Module {
        let a = input(REQUANT_IN, Width::of(AW)).signed();
        let q = output(REQUANT_OUT, Width::of(DW)).signed();
        let (an, qn) = (a.net, q.net);
        let mut m = Scope::new();
        let one = m.localparam("ONE", Width::of(AW + 1), int(1));
        m.comment("2^(FRAC-1), or 0 for FRAC = 0.");
        let half = m.localparam("HALF", Width::of(AW + 1), (one << FRAC).ashr(1));
        m.comment("FRAC < DW <= AW/2, so the rounding sum cannot overflow AW+1 bits.");
        let r = m.add(
            wire("r", Width::of(AW + 1))
                .signed()
                .init((call("$signed", [widen(an)]) + call("$signed", [half.e()])).ashr(FRAC)),
        );
        let high = r.bits(AW, DW - 1);
        let fits = m.flag("fits", top_bits_agree(high, AW + 2 - DW.e()));
        m.assign(qn, cond(fits, r.bits(DW - 1, 0), clamp_value(r.at(AW), DW)));
        Module {
            name: REQUANT_MODULE.into(),
            doc: vec![
                "sa_requant: accumulator to data, round half up at FRAC, saturate (REQUANT)."
                    .into(),
            ],
            params: vec![
                param(DW.name(), 16, "data width"),
                param(AW.name(), 40, "accumulator width"),
                param(FRAC.name(), 8, "fractional bits of data (< DW)"),
            ],
            ports: vec![a, q],
            genvars: vec![],
            items: m.into_items(),
        }
    }
}
