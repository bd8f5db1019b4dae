//! `sa_pe` of a dense array (`docs/ARCHITECTURE.md`, A PE in every cycle).
//! Every cycle the PE takes the wave its west neighbour held (its control
//! `c` and the data beside it) and does what the wave says; the global
//! modes UPDATE and DRAIN only override `w` and `dw`. It holds an active
//! weight `w`, a shadow weight `ws` and a slot of the south-moving weight
//! stream `wp`. The arithmetic (accumulate, products, SGD step) is the
//! number format's ([`crate::arith`]), as the `none` PE's is.

use super::ctl;
use crate::arith::{Arithmetic, MulOperands, Sgd};
use crate::array::core::{mode_constants, pe_params, Flow, PePorts, PE_MODULE};
use crate::ir::*;
use crate::params::{AW, DW, INTERLEAVED, RB};
use sysgrad_isa::mode::{Mode, WAVE_OP_BITS};
use sysgrad_isa::wave::WaveField;

/// The global modes a PE acts on; STREAM and the bubbles (IDLE, reserved
/// codes) reach it as the control word, through the control skew.
const GLOBAL_MODES: [Mode; 2] = [Mode::Update, Mode::Drain];

/// The PE register holding `field` of the wave the PE took last.
pub fn control_reg_name(field: WaveField) -> &'static str {
    match field {
        WaveField::Op => "c_op",
        WaveField::Swap => "c_swap",
        WaveField::Update => "c_upd",
        WaveField::Lr => "c_lr",
        WaveField::Load => "c_ld",
        WaveField::LoadRow => "c_row",
    }
}

/// The PE's row port: the row of the mesh it sits in (a port, not a
/// parameter: every PE stays one module, one synthesis).
pub(crate) fn row_port() -> Net {
    Net::named("row")
}

/// The localparam of a wave operation, e.g. `OP_BWD_IL` (WAVE_OP_BITS wide,
/// unlike the 4-bit `M_*` mode codes).
fn op_name(m: Mode) -> String {
    format!("OP_{}", m.name())
}

/// The data registers with neighbour ports `<name>_in`/`<name>_out`:
/// flow, width, signed. `ws` and `w` have no port: nothing outside reads
/// them (weights leave through the stream `wp`).
pub(crate) fn data_state() -> [(Flow, Width, bool); 7] {
    [
        (Flow::X, Width::of(DW), true),
        (Flow::D, Width::of(DW), true),
        (Flow::Dv, Width::bit(), false),
        (Flow::Psv, Width::of(AW), true),
        (Flow::Psh, Width::of(AW), true),
        (Flow::Dw, Width::of(AW), true),
        (Flow::Wp, Width::of(DW), true),
    ]
}

/// The PE's flows: its data state, then the control word `c`.
pub(crate) fn flows() -> Vec<(Flow, Width, bool)> {
    let mut v = data_state().to_vec();
    v.push((Flow::C, Width::of(ctl::word_bits()), false));
    v
}

/// A net per wave field.
struct Fields([(WaveField, Net); 6]);

impl Fields {
    fn of(&self, f: WaveField) -> Net {
        self.0.iter().find(|(g, _)| *g == f).expect("every field").1
    }
}

/// A net per flow of the PE.
struct ByFlow(Vec<(Flow, Net)>);

impl ByFlow {
    fn of(&self, f: Flow) -> Net {
        self.0
            .iter()
            .find(|(g, _)| *g == f)
            .unwrap_or_else(|| panic!("no {f:?} here"))
            .1
    }
}

/// The PE's ports.
struct Io {
    rst: Net,
    mode: Net,
    lr_shift: Net,
    row: Net,
    inputs: ByFlow,
    outputs: ByFlow,
}

/// The registers: the active and shadow weights and the data state.
struct Regs {
    w: Net,
    ws: Net,
    data: ByFlow,
    control: Fields,
}

fn declarations(m: &mut Scope) -> Regs {
    m.comment("Active and shadow weight; the weight stream wp moves south among the others.");
    let w = m.add(reg("w", Width::of(DW)).signed());
    let ws = m.add(reg("ws", Width::of(DW)).signed());
    let data = data_state()
        .into_iter()
        .map(|(f, width, signed)| {
            (
                f,
                m.add(Decl {
                    signed,
                    ..reg(f.name(), width)
                }),
            )
        })
        .collect();
    m.comment("The control of the wave this PE took last.");
    let control = WaveField::ALL.map(|f| (f, m.reg(control_reg_name(f), ctl::field_width(f))));
    Regs {
        w,
        ws,
        data: ByFlow(data),
        control: Fields(control),
    }
}

/// What the wave this PE takes asks of it.
struct Decoded {
    /// `<reg>_in`: the control this PE takes (its west neighbour's
    /// registers), unpacked.
    c_in: Fields,
    is_fwd: Net,
    is_dx: Net,
    is_dw: Net,
}

fn decode(m: &mut Scope, io: &Io, op: &dyn Fn(Mode) -> Const) -> Decoded {
    m.comment("The control this PE takes: its west neighbour's (column 0: the control skew's).");
    let c = io.inputs.of(Flow::C).e();
    let c_in = Fields(WaveField::ALL.map(|f| {
        let name = format!("{}_in", control_reg_name(f));
        (
            f,
            m.add(wire(&name, ctl::field_width(f)).init(ctl::field(&c, f))),
        )
    }));
    let op_is = |md: Mode| c_in.of(WaveField::Op).equals(op(md));
    m.comment("What the wave does here; a sequential PE (one multiplier) takes IL as a bubble.");
    let is_fwd = m.flag("is_fwd", op_is(Mode::Fwd));
    let is_il = m.flag("is_il", INTERLEAVED.differs(0).and(op_is(Mode::BwdIl)));
    let is_dx = m.flag("is_dx", op_is(Mode::BwdDx).or(is_il));
    let is_dw = m.flag("is_dw", op_is(Mode::BwdDw).or(is_il));
    Decoded {
        c_in,
        is_fwd,
        is_dx,
        is_dw,
    }
}

/// The weight exchange: which weight leaves, whether this PE's row takes
/// the slot, and where this wave's dW starts.
struct Exchange {
    leaving: Net,
    exch: Net,
    dw_base: Net,
}

fn exchange(m: &mut Scope, io: &Io, regs: &Regs, dec: &Decoded, lv_w_next: Net) -> Exchange {
    let swap = dec.c_in.of(WaveField::Swap);
    m.comment("The weight a slot sends south: the one switched out (SGD-updated with the wave's");
    m.comment("lr if it says so), or the one a previous swap left in the shadow register.");
    let leaving = m.signed_wire(
        "leaving",
        DW,
        cond(
            swap,
            cond(dec.c_in.of(WaveField::Update), lv_w_next, regs.w),
            regs.ws,
        ),
    );
    m.comment(
        "The slot is this row's: the shadow takes w_in's weight, the leaving one goes south.",
    );
    // Contract reading: a load_row >= R (R not a power of two) matches
    // no row, so that slot's weights just pass down wp to w_out.
    let exch = m.flag(
        "exch",
        dec.c_in
            .of(WaveField::Load)
            .and(dec.c_in.of(WaveField::LoadRow).equals(io.row)),
    );
    m.comment("A tile's dW starts from 0 at its first wave (the swap).");
    let dw_base = m.signed_wire("dw_base", AW, cond(swap, zeros(AW), regs.data.of(Flow::Dw)));
    Exchange {
        leaving,
        exch,
        dw_base,
    }
}

/// The PE's ports, registers and decoded wave, as its parts read them.
struct Pe {
    io: Io,
    regs: Regs,
    dec: Decoded,
}

/// The weight this wave computes with and UPDATE's next weight.
struct Weights {
    w_eff: Net,
    w_next: Net,
}

fn registers(
    m: &mut Scope,
    pe: &Pe,
    acc: &Function,
    p: &crate::arith::Products,
    x: &Exchange,
    w: Weights,
    mode: &dyn Fn(Mode) -> Const,
) {
    let (io, regs, dec) = (&pe.io, &pe.regs, &pe.dec);
    let Weights { w_eff, w_next } = w;
    let d = |f: Flow| regs.data.of(f);
    let i = |f: Flow| io.inputs.of(f);
    let mut reset: Vec<Stmt> = [regs.w, regs.ws, d(Flow::Wp), d(Flow::X), d(Flow::D)]
        .iter()
        .map(|r| set(*r, zeros(DW)))
        .collect();
    reset.extend([Flow::Psv, Flow::Psh, Flow::Dw].map(|f| set(d(f), zeros(AW))));
    reset.push(set(d(Flow::Dv), lit(1, 0)));
    for f in WaveField::ALL {
        let zero = match f.fixed_bits() {
            Some(bits) => lit(bits, 0),
            None => zeros(ctl::field_bits(f)),
        };
        reset.push(set(regs.control.of(f), zero));
    }
    let add = |f: Flow, p: Net| acc.call([i(f).e(), p.e()]);
    let swap = dec.c_in.of(WaveField::Swap);
    let mut wave = vec![
        Stmt::Comment("The wave, every cycle whatever the mode.".into()),
        set(regs.w, w_eff),
        set(
            regs.ws,
            cond(x.exch, i(Flow::Wp), cond(swap, x.leaving, regs.ws)),
        ),
        set(d(Flow::Wp), cond(x.exch, x.leaving, i(Flow::Wp))),
        set(d(Flow::X), i(Flow::X)),
        set(d(Flow::D), i(Flow::D)),
        set(d(Flow::Dv), i(Flow::Dv)),
    ];
    // `{c_op..c_row}' = c` as taken: c_op keeps the raw code (5 on a
    // sequential PE, 1/6/7 too); only the decoding above treats them as 0.
    for f in WaveField::ALL {
        wave.push(set(regs.control.of(f), dec.c_in.of(f)));
    }
    wave.extend([
        set(
            d(Flow::Psv),
            cond(dec.is_fwd, add(Flow::Psv, p.p_dx), zeros(AW)),
        ),
        set(
            d(Flow::Psh),
            cond(dec.is_dx, add(Flow::Psh, p.p_dx), zeros(AW)),
        ),
        set(
            d(Flow::Dw),
            cond(
                dec.is_dw.and(i(Flow::Dv)),
                acc.call([x.dw_base.e(), p.p_dw.e()]),
                x.dw_base,
            ),
        ),
        // Contract reading: UPDATE updates the register w (not w_eff) with
        // the register dw, even if a swap wave arrives in the same cycle;
        // ws and wp still do what that wave says.
        Stmt::Comment("UPDATE and DRAIN override w and dw (the later assignment wins).".into()),
        when(
            io.mode.equals(mode(Mode::Update)),
            vec![set(regs.w, w_next), set(d(Flow::Dw), zeros(AW))],
        ),
        when(
            io.mode.equals(mode(Mode::Drain)),
            vec![set(d(Flow::Dw), i(Flow::Dw))],
        ),
    ]);
    m.clocked(vec![if_else(io.rst, reset, wave)]);
}

pub(crate) fn module(arith: &dyn Arithmetic) -> Module {
    let row = Port {
        dir: Dir::Input,
        net: row_port(),
        width: Width::of(RB),
        signed: false,
    };
    let flows = flows();
    let mut extra = vec![row.clone()];
    extra.extend(arith.pe_ports());
    let ports = PePorts::new(&flows, extra);
    let io = Io {
        rst: ports.rst,
        mode: ports.mode,
        lr_shift: ports.lr_shift,
        row: row.net,
        inputs: ByFlow(flows.iter().map(|(f, ..)| (*f, ports.input(*f))).collect()),
        outputs: ByFlow(flows.iter().map(|(f, ..)| (*f, ports.output(*f))).collect()),
    };
    let mut m = Scope::new();
    let ops: Vec<(Mode, Const)> = Mode::WAVE_OPS
        .iter()
        .map(|md| {
            let c = m.localparam(
                &op_name(*md),
                Width::of(WAVE_OP_BITS),
                lit(WAVE_OP_BITS, md.code().into()),
            );
            (*md, c)
        })
        .collect();
    let op = |md: Mode| ops.iter().find(|(o, _)| *o == md).expect("a wave op").1;
    let globals = mode_constants(&mut m, &GLOBAL_MODES);
    let regs = declarations(&mut m);
    let dec = decode(&mut m, &io, &op);
    m.comment(
        "A swap makes the shadow weight active as the wave arrives, so the wave computes with it.",
    );
    let w_eff = m.signed_wire(
        "w_eff",
        DW,
        cond(dec.c_in.of(WaveField::Swap), regs.ws, regs.w),
    );
    let acc = arith.accumulate(&mut m);
    let products = arith.multipliers(
        &mut m,
        MulOperands {
            chooser: "the wave's op",
            weight: w_eff.e(),
            x: io.inputs.of(Flow::X),
            d: io.inputs.of(Flow::D),
            fwd: dec.is_fwd.e(),
            dx: dec.is_dx.e(),
            dw: dec.is_dw.e(),
        },
    );
    // Two SGD units: UPDATE's (`w_next`, with the `lr_shift` port) and
    // the leaving weight's (`lv_w_next`, with the wave's lr). A wave may
    // carry an update in an UPDATE cycle (the contract forbids nothing
    // there: only the driver keeps them apart), so they are not shared.
    let mut shared = None;
    let dw = regs.data.of(Flow::Dw);
    // The SGD units write a weight in UPDATE and when a swap wave updates
    // the leaving one; the format's state (the stochastic rounding's
    // generator, whose draw they read) is declared before them.
    let updates = io.mode.equals(globals.of(Mode::Update)).or(dec
        .c_in
        .of(WaveField::Swap)
        .and(dec.c_in.of(WaveField::Update)));
    arith.pe_state(&mut m, io.rst, updates);
    let update = arith.sgd_unit(
        &mut m,
        Sgd {
            prefix: "",
            w: regs.w.e(),
            dw: dw.e(),
            lr: io.lr_shift.e(),
            comment: "UPDATE's SGD step: round half up at shift FRAC+lr_shift (0 for shifts >= AW), then saturate.",
            subtrahend: None,
            saturate: true,
        },
        &mut shared,
    );
    let leaving = arith.sgd_unit(
        &mut m,
        Sgd {
            prefix: "lv_",
            w: regs.w.e(),
            dw: dw.e(),
            lr: dec.c_in.of(WaveField::Lr).e(),
            comment:
                "The same step for the weight a swap switches out, with the wave's lr (c_lr_in).",
            subtrahend: None,
            saturate: true,
        },
        &mut shared,
    );
    let saturated = |n: Option<Net>| n.expect("a saturating unit");
    let x = exchange(&mut m, &io, &regs, &dec, saturated(leaving.w_next));
    let mode = |md: Mode| globals.of(md);
    let weights = Weights {
        w_eff,
        w_next: saturated(update.w_next),
    };
    let pe = Pe { io, regs, dec };
    registers(&mut m, &pe, &acc, &products, &x, weights, &mode);
    let (io, regs) = (&pe.io, &pe.regs);
    for (f, ..) in data_state() {
        m.assign(io.outputs.of(f), regs.data.of(f));
    }
    m.assign(
        io.outputs.of(Flow::C),
        ctl::pack(|f| regs.control.of(f).e()),
    );
    Module {
        name: PE_MODULE.into(),
        doc: vec![
            "sa_pe (dense): one processing element of the dense training array; each cycle it"
                .into(),
            "does what the wave it takes says (ARCHITECTURE.md, A PE in every cycle).".into(),
            "Active and shadow weights, exchange slots on the weight stream wp, SGD on the way out."
                .into(),
        ],
        params: pe_params("wave", arith)
            .into_iter()
            .chain([param(
                RB.name(),
                4,
                "bits of a load row: max(1, ceil(log2 R))",
            )])
            .collect(),
        ports: ports.list,
        genvars: vec![],
        items: m.into_items(),
    }
}
