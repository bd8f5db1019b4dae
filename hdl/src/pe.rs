//! `sa_pe`: one processing element. Holds a weight (`w`), forwards x east
//! and dy south, adds into the south-moving (`psv`, forward) or east-moving
//! (`psh`, dX) partial sum, accumulates its own dW (`dw`), and updates `w`
//! in place. INTERLEAVED selects two multipliers (dX and dW in one pass) or
//! one shared multiplier (the sequential baseline).

use crate::ir::*;

/// Mode codes, as in `docs/ARCHITECTURE.md` and `sysgrad_emulator::Mode`.
pub const MODES: [(&str, u8); 7] = [
    ("M_LOAD", 1),
    ("M_FWD", 2),
    ("M_BWD_DX", 3),
    ("M_BWD_DW", 4),
    ("M_BWD_IL", 5),
    ("M_UPDATE", 6),
    ("M_DRAIN", 7),
];

fn w(s: &str) -> Width {
    Width::of(s)
}

/// `sat_add(a, b)`: `a + b` formed in AW+1 bits, clamped to AW bits.
fn sat_add() -> Item {
    Item::Function(Function {
        name: "sat_add".into(),
        width: w("AW"),
        signed: true,
        inputs: vec![("a".into(), w("AW"), true), ("b".into(), w("AW"), true)],
        locals: vec![reg("s", w("AW+1")).signed()],
        body: vec![
            Stmt::Blocking("s".into(), "{a[AW-1], a} + {b[AW-1], b}".into()),
            Stmt::If {
                cond: "s[AW] != s[AW-1]".into(),
                then: vec![Stmt::Blocking(
                    "sat_add".into(),
                    "{s[AW], {(AW-1){~s[AW]}}}".into(),
                )],
                els: vec![Stmt::Blocking("sat_add".into(), "s[AW-1:0]".into())],
            },
        ],
    })
}

/// The multipliers: products sign-extended to AW bits for the dX/forward
/// sum (`p_dx`) and the dW accumulation (`p_dw`).
fn multipliers() -> Vec<Item> {
    let extend = |m: &str| format!("{{{{(AW-2*DW+1){{{m}[2*DW-1]}}}}, {m}[2*DW-2:0]}}");
    vec![
        Item::Comment(
            "Products are exact (2*DW bits); sign-extend them to the accumulator width.".into(),
        ),
        wire("p_dx", w("AW")).signed().item(),
        wire("p_dw", w("AW")).signed().item(),
        Item::GenIf {
            cond: "INTERLEAVED != 0".into(),
            label: "g_mul".into(),
            then: vec![
                wire("dx_op", w("DW"))
                    .signed()
                    .init("(mode == M_FWD) ? x_in : d_in")
                    .item(),
                wire("m_dx", w("2*DW")).signed().init("w * dx_op").item(),
                wire("m_dw", w("2*DW")).signed().init("d_in * x_in").item(),
                assign("p_dx", extend("m_dx")),
                assign("p_dw", extend("m_dw")),
            ],
            els: vec![
                Item::Comment("One multiplier, its operands chosen by mode.".into()),
                wire("op_a", w("DW"))
                    .signed()
                    .init("(mode == M_BWD_DW) ? d_in : w")
                    .item(),
                wire("op_b", w("DW"))
                    .signed()
                    .init("(mode == M_BWD_DX) ? d_in : x_in")
                    .item(),
                wire("m_one", w("2*DW")).signed().init("op_a * op_b").item(),
                assign("p_dx", extend("m_one")),
                assign("p_dw", extend("m_one")),
            ],
        },
    ]
}

/// The SGD step `w - round_shift(dw, FRAC + lr_shift)`, saturated to DW bits.
fn sgd_update() -> Vec<Item> {
    vec![
        Item::Comment("SGD: round half up at shift FRAC+lr_shift (0 for shifts >= AW), then saturate.".into()),
        Item::Localparam { name: "FRAC7".into(), width: w("7"), value: "FRAC[6:0]".into() },
        Item::Localparam { name: "AW7".into(), width: w("7"), value: "AW[6:0]".into() },
        wire("shamt", w("7")).init("FRAC7 + {1'b0, lr_shift}").item(),
        wire("one", w("AW+1")).init("{{AW{1'b0}}, 1'b1}").item(),
        wire("half", w("AW+1")).init("(shamt == 7'd0) ? {(AW+1){1'b0}} : (one << (shamt - 7'd1))").item(),
        wire("dw_round", w("AW+1")).signed().init("($signed({dw[AW-1], dw}) + $signed(half)) >>> shamt").item(),
        wire("dw_step", w("AW+1")).signed().init("(shamt >= AW7) ? {(AW+1){1'b0}} : dw_round").item(),
        wire("w_diff", w("AW+2")).signed().init("{{(AW+2-DW){w[DW-1]}}, w} - {dw_step[AW], dw_step}").item(),
        wire("w_fits", Width::bit())
            .init("(w_diff[AW+1:DW-1] == {(AW+3-DW){1'b0}}) || (w_diff[AW+1:DW-1] == {(AW+3-DW){1'b1}})")
            .item(),
        wire("w_next", w("DW")).signed().init("w_fits ? w_diff[DW-1:0] : {w_diff[AW+1], {(DW-1){~w_diff[AW+1]}}}").item(),
    ]
}

fn registers() -> Item {
    let dx = || {
        vec![
            nb("d", "d_in"),
            nb("dv", "dv_in"),
            nb("psh", "sat_add(psh_in, p_dx)"),
        ]
    };
    let dw = || {
        vec![
            nb("d", "d_in"),
            nb("dv", "dv_in"),
            nb("x", "x_in"),
            Stmt::If {
                cond: "dv_in".into(),
                then: vec![nb("dw", "sat_add(dw, p_dw)")],
                els: vec![],
            },
        ]
    };
    let mut il = dx();
    il.extend(dw().into_iter().skip(2));
    let reset = ["w", "x", "d", "psv", "psh", "dw"]
        .iter()
        .map(|r| {
            nb(
                r,
                Expr::zeros(if matches!(*r, "w" | "x" | "d") {
                    "DW"
                } else {
                    "AW"
                }),
            )
        })
        .chain([nb("dv", "1'b0")])
        .collect();
    Item::Clocked(vec![Stmt::If {
        cond: "rst".into(),
        then: reset,
        els: vec![Stmt::Case {
            sel: "mode".into(),
            arms: vec![
                (vec!["M_LOAD".into()], vec![nb("w", "w_in")]),
                (
                    vec!["M_FWD".into()],
                    vec![nb("x", "x_in"), nb("psv", "sat_add(psv_in, p_dx)")],
                ),
                (vec!["M_BWD_DX".into()], dx()),
                (vec!["M_BWD_DW".into()], dw()),
                (
                    vec!["M_BWD_IL".into()],
                    vec![Stmt::If {
                        cond: "INTERLEAVED != 0".into(),
                        then: il,
                        els: vec![],
                    }],
                ),
                (
                    vec!["M_UPDATE".into()],
                    vec![nb("w", "w_next"), nb("dw", Expr::zeros("AW"))],
                ),
                (vec!["M_DRAIN".into()], vec![nb("dw", "dw_in")]),
            ],
            default: vec![],
        }],
    }])
}

pub fn module() -> Module {
    let dw = || w("DW");
    let aw = || w("AW");
    let mut items: Vec<Item> = MODES
        .iter()
        .map(|(n, c)| Item::Localparam {
            name: n.to_string(),
            width: w("4"),
            value: format!("4'd{c}").into(),
        })
        .collect();
    items.push(reg("w", dw()).signed().item());
    items.push(reg("x", dw()).signed().item());
    items.push(reg("d", dw()).signed().item());
    items.push(reg("dv", Width::bit()).item());
    items.push(reg("psv", aw()).signed().item());
    items.push(reg("psh", aw()).signed().item());
    items.push(reg("dw", aw()).signed().item());
    items.push(sat_add());
    items.extend(multipliers());
    items.extend(sgd_update());
    items.push(registers());
    for (o, r) in [
        ("w_out", "w"),
        ("x_out", "x"),
        ("d_out", "d"),
        ("dv_out", "dv"),
        ("psv_out", "psv"),
        ("psh_out", "psh"),
        ("dw_out", "dw"),
    ] {
        items.push(assign(o, r));
    }
    Module {
        name: "sa_pe".into(),
        doc: vec![
            "sa_pe: one processing element of the training array.".into(),
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
        ],
        ports: vec![
            input("clk", Width::bit()),
            input("rst", Width::bit()),
            input("mode", w("4")),
            input("lr_shift", w("6")),
            input("w_in", dw()).signed(),
            input("x_in", dw()).signed(),
            input("d_in", dw()).signed(),
            input("dv_in", Width::bit()),
            input("psv_in", aw()).signed(),
            input("psh_in", aw()).signed(),
            input("dw_in", aw()).signed(),
            output("w_out", dw()).signed(),
            output("x_out", dw()).signed(),
            output("d_out", dw()).signed(),
            output("dv_out", Width::bit()),
            output("psv_out", aw()).signed(),
            output("psh_out", aw()).signed(),
            output("dw_out", aw()).signed(),
        ],
        genvars: vec![],
        items,
    }
}
