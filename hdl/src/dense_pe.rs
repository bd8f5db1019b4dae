//! `sa_pe` of a dense array (`docs/ARCHITECTURE.md`, A PE in every cycle).
//! Every cycle the PE takes the wave its west neighbour held (its control
//! `c` and the data beside it) and does what the wave says; the global
//! modes UPDATE and DRAIN only override `w` and `dw`. It holds an active
//! weight `w`, a shadow weight `ws` and a slot of the south-moving weight
//! stream `wp`. The arithmetic (saturating add, products, SGD step) is the
//! `none` PE's, from `pe.rs`.

use crate::ctl;
use crate::ir::*;
use crate::names::control_reg_name;
use crate::pe::{acc_w, data_w, multipliers, sat_add, sgd_unit, signed_wire, MulOperands};
use sysgrad_config::LR_SHIFT_BITS;
use sysgrad_isa::mode::{Mode, MODE_BITS, WAVE_OP_BITS};
use sysgrad_isa::wave::WaveField;

/// The global modes a PE acts on; STREAM and the bubbles (IDLE, reserved
/// codes) reach it as the control word, through the control skew.
const GLOBAL_MODES: [Mode; 2] = [Mode::Update, Mode::Drain];

/// The localparam of a wave operation, e.g. `OP_BWD_IL` (WAVE_OP_BITS wide,
/// unlike the 4-bit `M_*` mode codes).
fn op_name(m: Mode) -> String {
    format!("OP_{}", m.name())
}

/// `<reg>_in`: the wire carrying the west neighbour's control register.
fn ctl_in(field: WaveField) -> Expr {
    id(&format!("{}_in", control_reg_name(field)))
}

/// The data registers with neighbour ports `<name>_in`/`<name>_out`:
/// name, width, signed. `ws` and `w` have no port: nothing outside reads
/// them (weights leave through the stream `wp`).
pub(crate) fn data_state() -> [(&'static str, Width, bool); 7] {
    [
        ("x", Width::of(data_w()), true),
        ("d", Width::of(data_w()), true),
        ("dv", Width::bit(), false),
        ("psv", Width::of(acc_w()), true),
        ("psh", Width::of(acc_w()), true),
        ("dw", Width::of(acc_w()), true),
        ("wp", Width::of(data_w()), true),
    ]
}

fn constants() -> Vec<Item> {
    let mut items: Vec<Item> = Mode::WAVE_OPS
        .iter()
        .map(|m| {
            localparam(
                &op_name(*m),
                Width::of(WAVE_OP_BITS),
                lit(WAVE_OP_BITS, m.code().into()),
            )
        })
        .collect();
    items.extend(GLOBAL_MODES.iter().map(|m| {
        localparam(
            &m.verilog_name(),
            Width::of(MODE_BITS),
            lit(MODE_BITS, m.code().into()),
        )
    }));
    items
}

fn declarations() -> Vec<Item> {
    let mut items = vec![
        Item::Comment(
            "Active and shadow weight; the weight stream wp moves south among the others.".into(),
        ),
        reg("w", Width::of(data_w())).signed().item(),
        reg("ws", Width::of(data_w())).signed().item(),
    ];
    for (r, width, signed) in data_state() {
        items.push(
            Net {
                signed,
                ..reg(r, width)
            }
            .item(),
        );
    }
    items.push(Item::Comment(
        "The control of the wave this PE took last.".into(),
    ));
    for f in WaveField::ALL {
        items.push(reg(control_reg_name(f), ctl::field_width(f)).item());
    }
    items
}

/// The control `c` this PE takes (`c_in`, its west neighbour's registers),
/// unpacked, and what its operation asks of this PE.
fn decode() -> Vec<Item> {
    let mut items = vec![Item::Comment(
        "The control this PE takes: its west neighbour's (column 0: the control skew's).".into(),
    )];
    for f in WaveField::ALL {
        let name = format!("{}_in", control_reg_name(f));
        items.push(
            wire(&name, ctl::field_width(f))
                .init(ctl::field(&id("c_in"), f))
                .item(),
        );
    }
    let op_is = |m: Mode| ctl_in(WaveField::Op).equals(id(&op_name(m)));
    items.extend([
        Item::Comment(
            "What the wave does here; a sequential PE (one multiplier) takes IL as a bubble."
                .into(),
        ),
        wire("is_fwd", Width::bit()).init(op_is(Mode::Fwd)).item(),
        wire("is_il", Width::bit())
            .init(id("INTERLEAVED").differs(0).and(op_is(Mode::BwdIl)))
            .item(),
        wire("is_dx", Width::bit())
            .init(op_is(Mode::BwdDx).or("is_il"))
            .item(),
        wire("is_dw", Width::bit())
            .init(op_is(Mode::BwdDw).or("is_il"))
            .item(),
    ]);
    items
}

/// The weight this wave computes with (and the active one after it).
fn w_eff() -> Vec<Item> {
    vec![
        Item::Comment(
            "A swap makes the shadow weight active as the wave arrives, so the wave computes with it."
                .into(),
        ),
        signed_wire("w_eff", data_w(), cond(ctl_in(WaveField::Swap), "ws", "w")),
    ]
}

/// The weight exchange: which weight leaves, whether this PE's row takes
/// the slot, and where this wave's dW starts.
fn exchange() -> Vec<Item> {
    let swap = || ctl_in(WaveField::Swap);
    vec![
        Item::Comment(
            "The weight a slot sends south: the one switched out (SGD-updated with the wave's"
                .into(),
        ),
        Item::Comment(
            "lr if it says so), or the one a previous swap left in the shadow register.".into(),
        ),
        signed_wire(
            "leaving",
            data_w(),
            cond(
                swap(),
                cond(ctl_in(WaveField::Update), "lv_w_next", "w"),
                "ws",
            ),
        ),
        Item::Comment(
            "The slot is this row's: the shadow takes w_in's weight, the leaving one goes south."
                .into(),
        ),
        // Contract reading: a load_row >= R (R not a power of two) matches
        // no row, so that slot's weights just pass down wp to w_out.
        wire("exch", Width::bit())
            .init(ctl_in(WaveField::Load).and(ctl_in(WaveField::LoadRow).equals("row")))
            .item(),
        Item::Comment("A tile's dW starts from 0 at its first wave (the swap).".into()),
        signed_wire("dw_base", acc_w(), cond(swap(), zeros(acc_w()), "dw")),
    ]
}

/// Two SGD units: UPDATE's (`w_next`, with the `lr_shift` port) and the
/// leaving weight's (`lv_w_next`, with the wave's lr). A wave may carry an
/// update in an UPDATE cycle (the contract forbids nothing there: only the
/// driver keeps them apart), so they are not shared.
fn sgd_units() -> Vec<Item> {
    let mut items = sgd_unit(
        "",
        (id("w"), id("dw")),
        id("lr_shift"),
        "UPDATE's SGD step: round half up at shift FRAC+lr_shift (0 for shifts >= AW), then saturate.",
        None,
        true,
    );
    items.extend(sgd_unit(
        "lv_",
        (id("w"), id("dw")),
        ctl_in(WaveField::Lr),
        "The same step for the weight a swap switches out, with the wave's lr (c_lr_in).",
        None,
        true,
    ));
    items
}

fn registers() -> Item {
    let mut reset: Vec<Stmt> = ["w", "ws", "wp", "x", "d"]
        .iter()
        .map(|r| set(*r, zeros(data_w())))
        .collect();
    reset.extend(["psv", "psh", "dw"].iter().map(|r| set(*r, zeros(acc_w()))));
    reset.push(set("dv", lit(1, 0)));
    for f in WaveField::ALL {
        let zero = match f.fixed_bits() {
            Some(bits) => lit(bits, 0),
            None => zeros(ctl::field_bits(f)),
        };
        reset.push(set(control_reg_name(f), zero));
    }
    let acc = |r: &str, p: &str| call("sat_add", [id(&format!("{r}_in")), id(p)]);
    let swap = || ctl_in(WaveField::Swap);
    let mut wave = vec![
        Stmt::Comment("The wave, every cycle whatever the mode.".into()),
        set("w", "w_eff"),
        set("ws", cond("exch", "wp_in", cond(swap(), "leaving", "ws"))),
        set("wp", cond("exch", "leaving", "wp_in")),
        set("x", "x_in"),
        set("d", "d_in"),
        set("dv", "dv_in"),
    ];
    // `{c_op..c_row}' = c` as taken: c_op keeps the raw code (5 on a
    // sequential PE, 1/6/7 too); only the decoding above treats them as 0.
    for f in WaveField::ALL {
        wave.push(set(control_reg_name(f), ctl_in(f)));
    }
    wave.extend([
        set("psv", cond("is_fwd", acc("psv", "p_dx"), zeros(acc_w()))),
        set("psh", cond("is_dx", acc("psh", "p_dx"), zeros(acc_w()))),
        set(
            "dw",
            cond(
                id("is_dw").and("dv_in"),
                call("sat_add", [id("dw_base"), id("p_dw")]),
                "dw_base",
            ),
        ),
        // Contract reading: UPDATE updates the register w (not w_eff) with
        // the register dw, even if a swap wave arrives in the same cycle;
        // ws and wp still do what that wave says.
        Stmt::Comment("UPDATE and DRAIN override w and dw (the later assignment wins).".into()),
        if_else(
            id("mode").equals(id(&Mode::Update.verilog_name())),
            vec![set("w", "w_next"), set("dw", zeros(acc_w()))],
            vec![],
        ),
        if_else(
            id("mode").equals(id(&Mode::Drain.verilog_name())),
            vec![set("dw", "dw_in")],
            vec![],
        ),
    ]);
    Item::Clocked(vec![if_else("rst", reset, wave)])
}

fn ports() -> Vec<Port> {
    let mut ports = vec![
        input("clk", Width::bit()),
        input("rst", Width::bit()),
        input("mode", Width::of(MODE_BITS)),
        input("lr_shift", Width::of(LR_SHIFT_BITS)),
        // A port, not a parameter: every PE stays one module (one synthesis).
        input("row", Width::of(ctl::RB)),
    ];
    for (dir, suffix) in [(input as fn(&str, Width) -> Port, "_in"), (output, "_out")] {
        for (r, width, signed) in data_state() {
            ports.push(Port {
                signed,
                ..dir(&format!("{r}{suffix}"), width)
            });
        }
        ports.push(dir(&format!("c{suffix}"), Width::of(ctl::word_bits())));
    }
    ports
}

pub fn module() -> Module {
    let mut items = constants();
    items.extend(declarations());
    items.extend(decode());
    items.extend(w_eff());
    items.push(sat_add());
    items.extend(multipliers(MulOperands {
        chooser: "the wave's op",
        weight: id("w_eff"),
        fwd: id("is_fwd"),
        dx: id("is_dx"),
        dw: id("is_dw"),
    }));
    items.extend(sgd_units());
    items.extend(exchange());
    items.push(registers());
    for (r, ..) in data_state() {
        items.push(assign(id(&format!("{r}_out")), id(r)));
    }
    items.push(assign("c_out", ctl::pack(|f| id(control_reg_name(f)))));
    Module {
        name: "sa_pe".into(),
        doc: vec![
            "sa_pe (dense): one processing element of the dense training array; each cycle it"
                .into(),
            "does what the wave it takes says (ARCHITECTURE.md, A PE in every cycle).".into(),
            "Active and shadow weights, exchange slots on the weight stream wp, SGD on the way out."
                .into(),
        ],
        params: [
            param("DW", 16, "data width (signed)"),
            param("AW", 40, "accumulator width (signed, >= 2*DW)"),
            param("FRAC", 8, "fractional bits of data"),
            param(
                "INTERLEAVED",
                1,
                "1: two multipliers (dX and dW in one wave); 0: one",
            ),
        ]
        .into_iter()
        .chain(crate::top::lr_params(None))
        .chain([param(
            ctl::RB,
            4,
            "bits of a load row: max(1, ceil(log2 R))",
        )])
        .collect(),
        ports: ports(),
        genvars: vec![],
        items,
    }
}
