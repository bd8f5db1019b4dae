//! `sa_pe`: one processing element. Holds a weight (`w`), forwards x east
//! and dy south, adds into the south-moving (`psv`, forward) or east-moving
//! (`psh`, dX) partial sum, accumulates its own dW (`dw`), and updates `w`
//! in place. INTERLEAVED selects two multipliers (dX and dW in one pass) or
//! one shared multiplier (the sequential baseline); MUL_REG a register
//! after them. The saturating add,
//! the multipliers and the SGD unit are shared with the dense PE
//! (`dense_pe.rs`).

use crate::ir::*;
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::mode::{Mode, MODE_BITS};

pub(crate) fn acc_w() -> Expr {
    id("AW")
}

pub(crate) fn data_w() -> Expr {
    id("DW")
}

/// `{v[AW-1], v}`: an accumulator value sign-extended by one bit.
pub(crate) fn widen(v: &Expr) -> Expr {
    cat([v.at(acc_w() - 1), v.clone()])
}

/// `sat_add(a, b)`: `a + b` formed in AW+1 bits, clamped to AW bits.
/// The accelerator's accumulating writes use the same function.
pub(crate) fn sat_add() -> Item {
    let (a, b, s) = (id("a"), id("b"), id("s"));
    let top = s.at(acc_w());
    Item::Function(Function {
        name: "sat_add".into(),
        width: Width::of(acc_w()),
        signed: true,
        inputs: vec![
            ("a".into(), Width::of(acc_w()), true),
            ("b".into(), Width::of(acc_w()), true),
        ],
        locals: vec![reg("s", Width::of(acc_w() + 1)).signed()],
        body: vec![
            blocking(s.clone(), widen(&a) + widen(&b)),
            Stmt::Comment("Overflowed iff the top two bits differ.".into()),
            if_else(
                top.clone().differs(s.at(acc_w() - 1)),
                vec![blocking("sat_add", clamp_value(top, acc_w()))],
                vec![blocking("sat_add", s.bits(acc_w() - 1, 0))],
            ),
        ],
    })
}

/// The exact 2*DW-bit product `m` sign-extended to AW bits. The sign is
/// repeated AW-2*DW+1 times over the low 2*DW-1 bits so that the
/// replication count is never 0 (AW may equal 2*DW).
pub(crate) fn extend_product(m: &str) -> Expr {
    let m = id(m);
    let n = 2 * data_w();
    cat([
        repeat(acc_w() - n.clone() + 1, m.at(n.clone() - 1)),
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

/// A signed wire of `width` bits driven by `e`.
pub(crate) fn signed_wire(name: &str, width: Expr, e: Expr) -> Item {
    wire(name, Width::of(width)).signed().init(e).item()
}

/// What the multipliers compute with: the weight, and the conditions that
/// choose the operands (FWD, dX or dW work in this cycle). The `none` PE
/// decodes them from the global mode, the dense PE from the wave it takes.
pub(crate) struct MulOperands {
    /// What chooses the one multiplier's operands, for its comment.
    pub chooser: &'static str,
    pub weight: Expr,
    pub fwd: Expr,
    pub dx: Expr,
    pub dw: Expr,
}

/// The multipliers: products sign-extended to AW bits for the dX/forward
/// sum (`p_dx`) and the dW accumulation (`p_dw`).
pub(crate) fn multipliers(ops: MulOperands) -> Vec<Item> {
    let product = || 2 * data_w();
    vec![
        Item::Comment(
            "Products are exact (2*DW bits); sign-extend them to the accumulator width.".into(),
        ),
        wire("p_dx", Width::of(acc_w())).signed().item(),
        wire("p_dw", Width::of(acc_w())).signed().item(),
        gen_if(
            id("INTERLEAVED").differs(0),
            "g_mul",
            vec![
                signed_wire("dx_op", data_w(), cond(ops.fwd, "x_in", "d_in")),
                signed_wire("m_dx", product(), ops.weight.clone() * "dx_op"),
                signed_wire("m_dw", product(), id("d_in") * "x_in"),
                assign("p_dx", extend_product("m_dx")),
                assign("p_dw", extend_product("m_dw")),
            ],
            vec![
                Item::Comment(format!(
                    "One multiplier, its operands chosen by {}.",
                    ops.chooser
                )),
                signed_wire("op_a", data_w(), cond(ops.dw, "d_in", ops.weight)),
                signed_wire("op_b", data_w(), cond(ops.dx, "d_in", "x_in")),
                signed_wire("m_one", product(), id("op_a") * "op_b"),
                assign("p_dx", extend_product("m_one")),
                assign("p_dw", extend_product("m_one")),
            ],
        ),
    ]
}

/// The SGD step `w - round_shift(dw, FRAC + lr_shift)`, saturated to DW
/// bits, as `w_next` (the UPDATE mode's). It subtracts `sgd_sub`: the
/// rounded step itself, or with `MUL_REG` the step registered in `prod_dw`
/// the cycle before (`product_stage`).
fn sgd_update(deferred: bool) -> Vec<Item> {
    sgd_unit(
        "",
        (read_of("w", deferred), read_of("dw", deferred)),
        id("lr_shift"),
        "SGD: round half up at shift FRAC+lr_shift (0 for shifts >= AW), then saturate.",
        Some(Subtrahend {
            value: id("sgd_sub"),
            width: id("SGD_W"),
        }),
        !deferred,
    )
}

/// What an SGD unit subtracts from `w`: a signed value and its width
/// (at least DW+2 bits, so that the difference is exact).
pub(crate) struct Subtrahend {
    pub value: Expr,
    pub width: Expr,
}

/// One SGD unit: `<prefix>w_next = sat(w - round_shift(dw, FRAC + lr), DW)`
/// for the weight and dW values `(w, dw)`, with its wires named
/// `<prefix>...`, or `sat(w - subtrahend, DW)` where a subtrahend is
/// given. Without `saturate` it stops at the exact difference
/// `<prefix>w_diff`, which a deferred-saturation `w` register keeps. The unit without a prefix also declares the
/// constants (`FRAC7`, `AW7`, `one`) that further units share.
pub(crate) fn sgd_unit(
    prefix: &str,
    (w, dw): (Expr, Expr),
    lr: Expr,
    comment: &str,
    subtrahend: Option<Subtrahend>,
    saturate: bool,
) -> Vec<Item> {
    let n = |s: &str| format!("{prefix}{s}");
    let first = prefix.is_empty();
    let shamt = id(&n("shamt"));
    let (dw_step, w_diff) = (id(&n("dw_step")), id(&n("w_diff")));
    // Shift amounts reach FRAC + 63 < 128: 7 bits.
    let w7 = || Width::of(7);
    let round =
        (call("$signed", [widen(&dw)]) + call("$signed", [id(&n("half"))])).ashr(shamt.clone());
    let own_step = || cat([dw_step.at(acc_w()), dw_step.clone()]);
    let (sub_value, diff_w) = match subtrahend {
        Some(s) => (s.value, s.width),
        None => (own_step(), acc_w() + 2),
    };
    let high = w_diff.bits(diff_w.clone() - 1, data_w() - 1);
    let high_bits = diff_w.clone() + 1 - data_w();
    let mut items = vec![Item::Comment(comment.into())];
    if first {
        items.push(localparam("FRAC7", w7(), id("FRAC").bits(6, 0)));
        items.push(localparam("AW7", w7(), acc_w().bits(6, 0)));
        items.push(localparam(
            "LR_K",
            Width::of(LR_SHIFT_BITS),
            id("LR_SHIFT").bits(LR_SHIFT_BITS as i64 - 1, 0),
        ));
    }
    // A constant shift makes shamt a constant: synthesis then removes the
    // barrel shifters below.
    let lr = cond(id("LR_FIXED").differs(0), "LR_K", lr);
    items.push(
        wire(&n("shamt"), w7())
            .init(id("FRAC7") + cat([lit(1, 0), lr]))
            .item(),
    );
    if first {
        items.push(
            wire("one", Width::of(acc_w() + 1))
                .init(cat([zeros(acc_w()), lit(1, 1)]))
                .item(),
        );
    }
    items.extend([
        wire(&n("half"), Width::of(acc_w() + 1))
            .init(cond(
                shamt.clone().equals(lit(7, 0)),
                zeros(acc_w() + 1),
                id("one") << (shamt.clone() - lit(7, 1)),
            ))
            .item(),
        Item::Comment("The rounding sum cannot overflow AW+1 bits.".into()),
        signed_wire(&n("dw_round"), acc_w() + 1, round),
        signed_wire(
            &n("dw_step"),
            acc_w() + 1,
            cond(
                shamt.at_least("AW7"),
                zeros(acc_w() + 1),
                id(&n("dw_round")),
            ),
        ),
        Item::Comment(
            "The difference is exact in its width; it fits DW bits iff its bits from DW-1 up agree."
                .into(),
        ),
        signed_wire(
            &n("w_diff"),
            diff_w.clone(),
            cat([repeat(diff_w.clone() - data_w(), w.at(data_w() - 1)), w]) - sub_value,
        ),
    ]);
    if !saturate {
        return items;
    }
    items.extend([
        wire(&n("w_fits"), Width::bit())
            .init(top_bits_agree(high, high_bits))
            .item(),
        signed_wire(
            &n("w_next"),
            data_w(),
            cond(
                id(&n("w_fits")),
                w_diff.bits(data_w() - 1, 0),
                clamp_value(w_diff.at(diff_w - 1), data_w()),
            ),
        ),
    ]);
    items
}

/// The nets between the multipliers and SGD unit and the adders and
/// weight register (driven by [`product_stage`]).
fn product_nets(deferred: bool) -> Vec<Item> {
    let (comment, sgd_w) = if deferred {
        (
            "The SGD step arrives clamped to DW+1 bits: a DW+2-bit subtract, which w keeps.",
            data_w() + 2,
        )
    } else {
        (
            "With MUL_REG the SGD step arrives clamped to DW+1 bits: a DW+2-bit subtract.",
            cond(id("MUL_REG").differs(0), data_w() + 2, acc_w() + 2),
        )
    };
    vec![
        wire("add_sum", Width::of(acc_w())).signed().item(),
        wire("add_dw", Width::of(acc_w())).signed().item(),
        wire("dw_en", Width::bit()).item(),
        Item::Comment(comment.into()),
        localparam("SGD_W", Width::bit(), sgd_w),
        wire("sgd_sub", Width::of(id("SGD_W"))).signed().item(),
    ]
}

/// `step_q`: the rounded SGD step `dw_step` clamped to DW+1 bits, which
/// the second UPDATE cycle (`MUL_REG`) or a deferred-saturation `w`
/// subtracts: |w| < 2^(DW-1), so a larger step saturates w alike.
fn step_clamp() -> Vec<Item> {
    let step_high = id("dw_step").bits(acc_w(), data_w());
    vec![
        Item::Comment(
            "The SGD step clamped to DW+1 bits: |w| < 2^(DW-1), so a larger step saturates w alike,"
                .into(),
        ),
        Item::Comment("and the subtract in the second UPDATE cycle is DW+2 bits wide.".into()),
        wire("step_fits", Width::bit())
            .init(top_bits_agree(step_high, acc_w() + 1 - data_w()))
            .item(),
        signed_wire(
            "step_q",
            data_w() + 1,
            cond(
                id("step_fits"),
                id("dw_step").bits(data_w(), 0),
                clamp_value(id("dw_step").at(acc_w()), data_w() + 1),
            ),
        ),
    ]
}

/// What the adders take: the products themselves, or with `MUL_REG` the
/// product registers `prod_sum` and `prod_dw` (`docs/ARCHITECTURE.md`,
/// Multiplier register), which hold each product for one cycle so that a
/// cycle holds either the multiply or the add. `add_sum` enters `psv` and
/// `psh`, `add_dw` enters `dw` whenever `dw_en`. In UPDATE `prod_dw` holds
/// the rounded SGD step for the cycle after, which subtracts it
/// (`sgd_sub`): the update is cut in two the same way.
fn product_stage(deferred: bool) -> Vec<Item> {
    let acc = || Width::of(acc_w());
    let dw_product = || cond(id("dv_in"), id("p_dw"), zeros(acc_w()));
    let sum_and_dw = || vec![set("prod_sum", "p_dx"), set("prod_dw", dw_product())];
    let arm = |modes: &[&str], body: Vec<Stmt>| (modes.iter().map(|m| id(m)).collect(), body);
    let stage = Item::Clocked(vec![if_else(
        "rst",
        vec![
            set("prod_sum", zeros(acc_w())),
            set("prod_dw", zeros(acc_w())),
        ],
        vec![Stmt::Case {
            sel: id("mode"),
            arms: vec![
                arm(&["M_FWD", "M_BWD_DX"], vec![set("prod_sum", "p_dx")]),
                arm(&["M_BWD_DW"], vec![set("prod_dw", dw_product())]),
                arm(
                    &["M_UPDATE"],
                    vec![set(
                        "prod_dw",
                        cat([
                            repeat(acc_w() - data_w() - 1, id("step_q").at(data_w())),
                            id("step_q"),
                        ]),
                    )],
                ),
                arm(
                    &["M_BWD_IL"],
                    vec![if_else(id("INTERLEAVED").differs(0), sum_and_dw(), vec![])],
                ),
            ],
            default: vec![],
        }],
    )]);
    vec![gen_if(
        id("MUL_REG").differs(0),
        "g_prod",
        [
            Item::Comment(
                "Product registers: the adders take the products of the cycle before.".into(),
            ),
            reg("prod_sum", acc()).signed().item(),
            reg("prod_dw", acc()).signed().item(),
        ]
        .into_iter()
        // With deferred saturation step_q is the module's (the UPDATE
        // without MUL_REG subtracts it too).
        .chain(if deferred { vec![] } else { step_clamp() })
        .chain([
            stage,
            assign("add_sum", "prod_sum"),
            assign("add_dw", "prod_dw"),
            Item::Comment("An invalid column's product was registered as 0.".into()),
            assign("dw_en", lit(1, 1)),
            assign(
                "sgd_sub",
                cat([id("prod_dw").at(data_w()), id("prod_dw").bits(data_w(), 0)]),
            ),
        ])
        .collect(),
        vec![
            assign("add_sum", "p_dx"),
            assign("add_dw", "p_dw"),
            assign("dw_en", "dv_in"),
            if deferred {
                assign("sgd_sub", cat([id("step_q").at(data_w()), id("step_q")]))
            } else {
                assign("sgd_sub", cat([id("dw_step").at(acc_w()), id("dw_step")]))
            },
        ],
    )]
}

/// The accumulator registers, which deferred saturation widens.
const SUMS: [&str; 3] = ["psv", "psh", "dw"];

/// Register `r` as its readers take it: with deferred saturation the
/// weight and the accumulators are held wider and read clamped
/// (`<r>_sat`), every other register as it is.
fn read_of(r: &str, deferred: bool) -> Expr {
    if deferred && (r == "w" || SUMS.contains(&r)) {
        id(&format!("{r}_sat"))
    } else {
        id(r)
    }
}

/// Deferred saturation (`array.deferred_saturation`,
/// `docs/ARCHITECTURE.md`): `psv`, `psh` and `dw` hold the exact
/// AW+1-bit sum of two AW-bit values and `w` the exact DW+2-bit
/// difference of its last update, and everything that reads them (the
/// multipliers, the outputs, the next add, the SGD unit) takes
/// `<reg>_sat` ([`read_of`]), the value clamped to AW or DW bits. The clamp moves from after the add's carry chain
/// to the start of the next cycle, where its inputs come straight from
/// the register; the clamped values are the same in every cycle, so
/// results and timing are too. Without it each add saturates
/// (`sat_add`) before its register, and the PE's text is as before the
/// option existed.
fn deferred_saturation() -> Vec<Item> {
    let clamped = |r: &str| {
        let v = id(r);
        let overflowed = v.at(acc_w()).differs(v.at(acc_w() - 1));
        cond(
            overflowed,
            clamp_value(v.at(acc_w()), acc_w()),
            v.bits(acc_w() - 1, 0),
        )
    };
    let exact_sum = |a: &str, b: &str| widen(&id(a)) + widen(&id(b));
    let mut items = vec![Item::Comment(
        "Deferred saturation: the registers hold exact sums (AW+1 bits) and differences (w, DW+2),"
            .into(),
    ), Item::Comment("clamped as they are read.".into())];
    for r in SUMS {
        let value = clamped(r);
        items.push(signed_wire(&format!("{r}_sat"), acc_w(), value));
    }
    // w holds the exact DW+2-bit difference an UPDATE left: it fits DW
    // bits iff its top three bits agree.
    let w_fits = top_bits_agree(id("w").bits(data_w() + 1, data_w() - 1), 3);
    items.push(signed_wire(
        "w_sat",
        data_w(),
        cond(
            w_fits,
            id("w").bits(data_w() - 1, 0),
            clamp_value(id("w").at(data_w() + 1), data_w()),
        ),
    ));
    items.push(signed_wire(
        "w_north",
        data_w() + 2,
        cat([repeat(2, id("w_in").at(data_w() - 1)), id("w_in")]),
    ));
    for (sum, value) in [
        ("psv_sum", exact_sum("psv_in", "add_sum")),
        ("psh_sum", exact_sum("psh_in", "add_sum")),
        ("dw_sum", exact_sum("dw_sat", "add_dw")),
        ("dw_west", widen(&id("dw_in"))),
    ] {
        items.push(signed_wire(sum, acc_w() + 1, value));
    }
    items
}

/// The `always` block of the PE's registers; with `deferred` the
/// accumulators load the sums of [`deferred_saturation`].
fn registers(deferred: bool) -> Item {
    // What accumulator `r` loads when `p` is added to `base`.
    let acc = |r: &str, base: &str, p: &str| {
        let value = if deferred {
            id(&format!("{r}_sum"))
        } else {
            call("sat_add", [id(base), id(p)])
        };
        set(r, value)
    };
    let sum_w = || if deferred { acc_w() + 1 } else { acc_w() };
    let (w_load, w_update, w_w) = if deferred {
        ("w_north", "w_diff", data_w() + 2)
    } else {
        ("w_in", "w_next", data_w())
    };
    let dx = || {
        vec![
            set("d", "d_in"),
            set("dv", "dv_in"),
            acc("psh", "psh_in", "add_sum"),
        ]
    };
    let dw = || {
        vec![
            set("d", "d_in"),
            set("dv", "dv_in"),
            set("x", "x_in"),
            if_else("dw_en", vec![acc("dw", "dw", "add_dw")], vec![]),
        ]
    };
    let mut il = dx();
    il.extend(dw().into_iter().skip(2));
    let mut reset: Vec<Stmt> = vec![set("w", zeros(w_w))];
    reset.extend(["x", "d"].iter().map(|r| set(*r, zeros(data_w()))));
    reset.extend(SUMS.iter().map(|r| set(*r, zeros(sum_w()))));
    reset.push(set("dv", lit(1, 0)));
    let arm = |m: &str, body: Vec<Stmt>| (vec![id(m)], body);
    Item::Clocked(vec![if_else(
        "rst",
        reset,
        vec![Stmt::Case {
            sel: id("mode"),
            arms: vec![
                arm("M_LOAD", vec![set("w", w_load)]),
                arm(
                    "M_FWD",
                    vec![set("x", "x_in"), acc("psv", "psv_in", "add_sum")],
                ),
                arm("M_BWD_DX", dx()),
                arm("M_BWD_DW", dw()),
                arm(
                    "M_BWD_IL",
                    vec![if_else(id("INTERLEAVED").differs(0), il, vec![])],
                ),
                arm(
                    "M_UPDATE",
                    vec![set("w", w_update), set("dw", zeros(sum_w()))],
                ),
                arm(
                    "M_DRAIN",
                    vec![set("dw", if deferred { "dw_west" } else { "dw_in" })],
                ),
            ],
            default: vec![],
        }],
    )])
}

/// The PE's state, also its outputs (`<name>_out`) and neighbour inputs
/// (`<name>_in`): name, width, signed. Only the valid bit is unsigned.
fn state() -> [(&'static str, Width, bool); 7] {
    [
        ("w", Width::of(data_w()), true),
        ("x", Width::of(data_w()), true),
        ("d", Width::of(data_w()), true),
        ("dv", Width::bit(), false),
        ("psv", Width::of(acc_w()), true),
        ("psh", Width::of(acc_w()), true),
        ("dw", Width::of(acc_w()), true),
    ]
}

/// The PE; with `deferred` (the config's `array.deferred_saturation`)
/// its accumulators saturate where they are read
/// ([`deferred_saturation`]).
pub fn module(deferred: bool) -> Module {
    // IDLE and the reserved codes hold every register: the case has no arm for them.
    let mut items: Vec<Item> = Mode::ALL
        .iter()
        .filter(|m| **m != Mode::Idle)
        .map(|m| {
            localparam(
                &m.verilog_name(),
                Width::of(MODE_BITS),
                lit(MODE_BITS, m.code().into()),
            )
        })
        .collect();
    for (r, width, signed) in state() {
        let width = match r {
            "w" if deferred => Width::of(data_w() + 2),
            r if deferred && SUMS.contains(&r) => Width::of(acc_w() + 1),
            _ => width,
        };
        items.push(
            Net {
                signed,
                ..reg(r, width)
            }
            .item(),
        );
    }
    items.push(sat_add());
    let mode_is = |m: &str| id("mode").equals(m);
    items.extend(multipliers(MulOperands {
        chooser: "mode",
        weight: read_of("w", deferred),
        fwd: mode_is("M_FWD"),
        dx: mode_is("M_BWD_DX"),
        dw: mode_is("M_BWD_DW"),
    }));
    items.extend(product_nets(deferred));
    if deferred {
        items.extend(deferred_saturation());
    }
    items.extend(sgd_update(deferred));
    if deferred {
        items.extend(step_clamp());
    }
    items.extend(product_stage(deferred));
    items.push(registers(deferred));
    for (r, ..) in state() {
        items.push(assign(id(&format!("{r}_out")), read_of(r, deferred)));
    }
    let mut ports = vec![
        input("clk", Width::bit()),
        input("rst", Width::bit()),
        input("mode", Width::of(MODE_BITS)),
        input("lr_shift", Width::of(LR_SHIFT_BITS)),
    ];
    for (dir, suffix) in [(input as fn(&str, Width) -> Port, "_in"), (output, "_out")] {
        for (r, width, signed) in state() {
            ports.push(Port {
                signed,
                ..dir(&format!("{r}{suffix}"), width)
            });
        }
    }
    Module {
        name: "sa_pe".into(),
        doc: vec![
            "sa_pe: one processing element of the training array; it implements the mode table."
                .into(),
            "Weight-stationary forward and dX, output-stationary dW, in-place SGD update.".into(),
        ],
        params: vec![
            param("DW", 16, "data width (signed)"),
            param("AW", 40, "accumulator width (signed, >= 2*DW)"),
            param("FRAC", 8, "fractional bits of data"),
            param(
                "INTERLEAVED",
                1,
                "1: two multipliers (dX and dW in one pass); 0: one",
            ),
        ]
        .into_iter()
        .chain(crate::top::lr_params(None))
        .chain([crate::top::mul_reg_param(false)])
        .collect(),
        ports,
        genvars: vec![],
        items,
    }
}
