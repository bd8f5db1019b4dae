//! `sa_pe` of the `none` array: one processing element. Holds a weight
//! (`w`), forwards x east and dy south, adds into the south-moving
//! (`psv`, forward) or east-moving (`psh`, dX) partial sum, accumulates
//! its own dW (`dw`), and updates `w` in place. INTERLEAVED selects two
//! multipliers (dX and dW in one pass) or one shared multiplier (the
//! sequential baseline); MUL_REG a register after them. The arithmetic
//! (accumulate, multipliers, SGD unit, deferred saturation) is the number
//! format's ([`crate::arith`]).

use crate::arith::{Arithmetic, Deferred, DeferredIn, MulOperands, Sgd, Subtrahend};
use crate::array::core::{mode_constants, mul_reg_param, pe_params, Flow, Modes, PePorts};
use crate::ir::*;
use crate::params::{AW, DW, INTERLEAVED, MUL_REG};
use sysgrad_isa::mode::Mode;

/// The product registers of a PE with `MUL_REG = 1`, below the PE (they
/// live in its `g_prod` generate block): where the builder takes their
/// names from.
pub const PROD_SUM: &str = "g_prod.prod_sum";
pub const PROD_DW: &str = "g_prod.prod_dw";

/// The PE's state, also its outputs (`<name>_out`) and neighbour inputs
/// (`<name>_in`): flow, width, signed. Only the valid bit is unsigned.
pub(crate) fn state() -> [(Flow, Width, bool); 7] {
    [
        (Flow::W, Width::of(DW), true),
        (Flow::X, Width::of(DW), true),
        (Flow::D, Width::of(DW), true),
        (Flow::Dv, Width::bit(), false),
        (Flow::Psv, Width::of(AW), true),
        (Flow::Psh, Width::of(AW), true),
        (Flow::Dw, Width::of(AW), true),
    ]
}

/// The ports the PE's logic reads and drives.
struct Io {
    mode: Net,
    lr_shift: Net,
    rst: Net,
    w_in: Net,
    x_in: Net,
    d_in: Net,
    dv_in: Net,
    psv_in: Net,
    psh_in: Net,
    dw_in: Net,
}

/// The PE's ports, registers and mode constants, as its parts read them.
struct Pe {
    io: Io,
    regs: Regs,
    modes: Modes,
}

/// The PE's registers.
struct Regs {
    w: Net,
    x: Net,
    d: Net,
    dv: Net,
    psv: Net,
    psh: Net,
    dw: Net,
}

impl Regs {
    fn of(&self, flow: Flow) -> Net {
        match flow {
            Flow::W => self.w,
            Flow::X => self.x,
            Flow::D => self.d,
            Flow::Dv => self.dv,
            Flow::Psv => self.psv,
            Flow::Psh => self.psh,
            Flow::Dw => self.dw,
            Flow::Wp | Flow::C => unreachable!("not a register of the none PE"),
        }
    }
}

/// The nets between the multipliers and SGD unit and the adders and the
/// weight register (driven by [`product_stage`]).
struct ProductNets {
    add_sum: Net,
    add_dw: Net,
    dw_en: Net,
    sgd_w: Const,
    sgd_sub: Net,
}

/// How the registers are read and loaded: as they are, or (deferred
/// saturation) clamped where read and loaded with exact values.
enum Held {
    Saturated,
    Deferred(Deferred),
}

impl Held {
    /// Register `r` as its readers take it.
    fn read(&self, regs: &Regs, r: Net) -> Net {
        match self {
            Held::Saturated => r,
            Held::Deferred(d) => {
                if r == regs.w {
                    d.w_sat
                } else if r == regs.psv {
                    d.psv_sat
                } else if r == regs.psh {
                    d.psh_sat
                } else if r == regs.dw {
                    d.dw_sat
                } else {
                    r
                }
            }
        }
    }
}

fn product_nets(m: &mut Scope, arith: &dyn Arithmetic, deferred: bool) -> ProductNets {
    let add_sum = m.add(wire("add_sum", Width::of(AW)).signed());
    let add_dw = m.add(wire("add_dw", Width::of(AW)).signed());
    let dw_en = m.wire("dw_en", Width::bit());
    let (comment, sgd_w) = arith.subtrahend_width(deferred);
    m.comment(comment);
    let sgd_w = m.localparam("SGD_W", Width::bit(), sgd_w);
    let sgd_sub = m.add(wire("sgd_sub", Width::of(sgd_w)).signed());
    ProductNets {
        add_sum,
        add_dw,
        dw_en,
        sgd_w,
        sgd_sub,
    }
}

/// What the adders take: the products themselves, or with `MUL_REG` the
/// product registers `prod_sum` and `prod_dw` (`docs/ARCHITECTURE.md`,
/// Multiplier register), which hold each product for one cycle so that a
/// cycle holds either the multiply or the add. `add_sum` enters `psv` and
/// `psh`, `add_dw` enters `dw` whenever `dw_en`. In UPDATE `prod_dw` holds
/// the rounded SGD step for the cycle after, which subtracts it
/// (`sgd_sub`): the update is cut in two the same way. With deferred
/// saturation `step_q` is the module's (`step_q`; the UPDATE without
/// MUL_REG subtracts it too), else the product stage's own.
fn product_stage(
    m: &mut Scope,
    arith: &dyn Arithmetic,
    pe: &Pe,
    p: &crate::arith::Products,
    nets: &ProductNets,
    dw_step: Net,
    step_q: Option<Net>,
) {
    let (io, modes) = (&pe.io, &pe.modes);
    let (block, _) = PROD_SUM.split_once('.').expect("a generate block");
    let [prod_sum, prod_dw] = [PROD_SUM, PROD_DW].map(|path| {
        let (_, name) = path.split_once('.').expect("a register");
        name
    });
    let mode = |md: Mode| modes.of(md).e();
    let mut on = Scope::new();
    on.comment("Product registers: the adders take the products of the cycle before.");
    let prod_sum = on.add(reg(prod_sum, Width::of(AW)).signed());
    let prod_dw = on.add(reg(prod_dw, Width::of(AW)).signed());
    let step_q_here = match step_q {
        Some(q) => q,
        None => arith.step_clamp(&mut on, dw_step),
    };
    let dw_product = || arith.product_or_zero(io.dv_in, p.p_dw);
    let sum_and_dw = || vec![set(prod_sum, p.p_dx), set(prod_dw, dw_product())];
    let arm = |modes: &[Mode], body: Vec<Stmt>| (modes.iter().map(|md| mode(*md)).collect(), body);
    on.clocked(vec![if_else(
        io.rst,
        vec![set(prod_sum, zeros(AW)), set(prod_dw, zeros(AW))],
        vec![Stmt::Case {
            sel: io.mode.e(),
            arms: vec![
                arm(&[Mode::Fwd, Mode::BwdDx], vec![set(prod_sum, p.p_dx)]),
                arm(&[Mode::BwdDw], vec![set(prod_dw, dw_product())]),
                arm(
                    &[Mode::Update],
                    vec![set(prod_dw, arith.step_to_accumulator(step_q_here))],
                ),
                arm(
                    &[Mode::BwdIl],
                    vec![if_else(INTERLEAVED.differs(0), sum_and_dw(), vec![])],
                ),
            ],
            default: vec![],
        }],
    )]);
    on.assign(nets.add_sum, prod_sum);
    on.assign(nets.add_dw, prod_dw);
    on.comment("An invalid column's product was registered as 0.");
    on.assign(nets.dw_en, lit(1, 1));
    let carried = arith.carried_subtrahend(&mut on, prod_dw);
    on.assign(nets.sgd_sub, carried);
    let mut off = Scope::new();
    off.assign(nets.add_sum, p.p_dx);
    off.assign(nets.add_dw, p.p_dw);
    off.assign(nets.dw_en, io.dv_in);
    off.assign(
        nets.sgd_sub,
        match step_q {
            Some(q) => arith.narrow_subtrahend(q),
            None => arith.full_subtrahend(dw_step),
        },
    );
    m.gen_if(MUL_REG.differs(0), block, on, off);
}

/// What the SGD unit's update leaves in `w` and what UPDATE loads.
struct Update {
    w_next: Net,
}

/// The `always` block of the PE's registers.
fn registers(
    m: &mut Scope,
    acc: &Function,
    pe: &Pe,
    nets: &ProductNets,
    held: &Held,
    update: Update,
) {
    let (io, regs, modes) = (&pe.io, &pe.regs, &pe.modes);
    let deferred = match held {
        Held::Saturated => None,
        Held::Deferred(d) => Some(d),
    };
    // What accumulator `r` loads when `p` is added to `base`.
    let add = |r: Net, base: Net, p: Net, exact: fn(&Deferred) -> Net| {
        let value = match deferred {
            Some(d) => exact(d).e(),
            None => acc.call([base.e(), p.e()]),
        };
        set(r, value)
    };
    let (sum_w, w_w) = match deferred {
        Some(_) => (AW + 1, DW + 2),
        None => (AW.e(), DW.e()),
    };
    let w_load = deferred.map_or(io.w_in, |d| d.w_north);
    let dx = || {
        vec![
            set(regs.d, io.d_in),
            set(regs.dv, io.dv_in),
            add(regs.psh, io.psh_in, nets.add_sum, |d| d.psh_sum),
        ]
    };
    let dw = || {
        vec![
            set(regs.d, io.d_in),
            set(regs.dv, io.dv_in),
            set(regs.x, io.x_in),
            if_else(
                nets.dw_en,
                vec![add(regs.dw, regs.dw, nets.add_dw, |d| d.dw_sum)],
                vec![],
            ),
        ]
    };
    let mut il = dx();
    il.extend(dw().into_iter().skip(2));
    let mut reset: Vec<Stmt> = vec![set(regs.w, zeros(w_w))];
    reset.extend([regs.x, regs.d].map(|r| set(r, zeros(DW))));
    reset.extend([regs.psv, regs.psh, regs.dw].map(|r| set(r, zeros(sum_w.clone()))));
    reset.push(set(regs.dv, lit(1, 0)));
    let arm = |md: Mode, body: Vec<Stmt>| (vec![modes.of(md).e()], body);
    m.clocked(vec![if_else(
        io.rst,
        reset,
        vec![Stmt::Case {
            sel: io.mode.e(),
            arms: vec![
                arm(Mode::Load, vec![set(regs.w, w_load)]),
                arm(
                    Mode::Fwd,
                    vec![
                        set(regs.x, io.x_in),
                        add(regs.psv, io.psv_in, nets.add_sum, |d| d.psv_sum),
                    ],
                ),
                arm(Mode::BwdDx, dx()),
                arm(Mode::BwdDw, dw()),
                arm(
                    Mode::BwdIl,
                    vec![if_else(INTERLEAVED.differs(0), il, vec![])],
                ),
                arm(
                    Mode::Update,
                    vec![set(regs.w, update.w_next), set(regs.dw, zeros(sum_w))],
                ),
                arm(
                    Mode::Drain,
                    vec![set(regs.dw, deferred.map_or(io.dw_in, |d| d.dw_west))],
                ),
            ],
            default: vec![],
        }],
    )]);
}

/// The PE; with `deferred` (the config's `array.deferred_saturation`)
/// its accumulators and weight are held exact and saturated where they
/// are read ([`Arithmetic::deferred`]).
pub(crate) fn module(arith: &dyn Arithmetic, deferred: bool) -> Module {
    let ports = PePorts::new(&state(), arith.pe_ports());
    let io = Io {
        mode: ports.mode,
        lr_shift: ports.lr_shift,
        rst: ports.rst,
        w_in: ports.input(Flow::W),
        x_in: ports.input(Flow::X),
        d_in: ports.input(Flow::D),
        dv_in: ports.input(Flow::Dv),
        psv_in: ports.input(Flow::Psv),
        psh_in: ports.input(Flow::Psh),
        dw_in: ports.input(Flow::Dw),
    };
    let mut m = Scope::new();
    // IDLE and the reserved codes hold every register: the case has no arm for them.
    let active: Vec<Mode> = Mode::ALL
        .into_iter()
        .filter(|md| *md != Mode::Idle)
        .collect();
    let modes = mode_constants(&mut m, &active);
    let (sum_w, w_w) = arith.deferred_widths();
    let mut state_reg = |flow: Flow, width: Width, signed: bool| {
        let width = match flow {
            Flow::W if deferred => Width::of(w_w.clone()),
            Flow::Psv | Flow::Psh | Flow::Dw if deferred => Width::of(sum_w.clone()),
            _ => width,
        };
        m.add(Decl {
            signed,
            ..reg(flow.name(), width)
        })
    };
    let [w, x, d, dv, psv, psh, dw] = state().map(|(f, wd, s)| state_reg(f, wd, s));
    let regs = Regs {
        w,
        x,
        d,
        dv,
        psv,
        psh,
        dw,
    };
    let held = if deferred {
        Held::Deferred(Deferred::named())
    } else {
        Held::Saturated
    };
    let acc = arith.accumulate(&mut m);
    let mode_is = |md: Mode| io.mode.equals(modes.of(md));
    let products = arith.multipliers(
        &mut m,
        MulOperands {
            chooser: "mode",
            weight: held.read(&regs, regs.w).e(),
            x: io.x_in,
            d: io.d_in,
            fwd: mode_is(Mode::Fwd),
            dx: mode_is(Mode::BwdDx),
            dw: mode_is(Mode::BwdDw),
        },
    );
    let nets = product_nets(&mut m, arith, deferred);
    if let Held::Deferred(out) = &held {
        let r = DeferredIn {
            psv,
            psh,
            dw,
            w,
            w_in: io.w_in,
            psv_in: io.psv_in,
            psh_in: io.psh_in,
            dw_in: io.dw_in,
            add_sum: nets.add_sum,
            add_dw: nets.add_dw,
        };
        arith.deferred(&mut m, r, out);
    }
    // The format's state (the stochastic rounding's generator, whose draw
    // the SGD unit reads) is declared before the unit; it steps in UPDATE.
    arith.pe_state(&mut m, io.rst, io.mode.equals(modes.of(Mode::Update)));
    let sgd = arith.sgd_unit(
        &mut m,
        Sgd {
            prefix: "",
            w: held.read(&regs, regs.w).e(),
            dw: held.read(&regs, regs.dw).e(),
            lr: io.lr_shift.e(),
            comment:
                "SGD: round half up at shift FRAC+lr_shift (0 for shifts >= AW), then saturate.",
            subtrahend: Some(Subtrahend {
                value: nets.sgd_sub.e(),
                width: nets.sgd_w.e(),
            }),
            saturate: !deferred,
        },
        &mut None,
    );
    let step_q = deferred.then(|| arith.step_clamp(&mut m, sgd.dw_step));
    let pe = Pe { io, regs, modes };
    product_stage(&mut m, arith, &pe, &products, &nets, sgd.dw_step, step_q);
    let update = Update {
        w_next: sgd.w_next.unwrap_or(sgd.w_diff),
    };
    registers(&mut m, &acc, &pe, &nets, &held, update);
    for (flow, ..) in state() {
        m.assign(ports.output(flow), held.read(&pe.regs, pe.regs.of(flow)));
    }
    Module {
        name: crate::array::core::PE_MODULE.into(),
        doc: vec![
            "sa_pe: one processing element of the training array; it implements the mode table."
                .into(),
            "Weight-stationary forward and dX, output-stationary dW, in-place SGD update.".into(),
        ],
        params: pe_params("pass", arith)
            .into_iter()
            .chain([mul_reg_param(false)])
            .collect(),
        ports: ports.list,
        genvars: vec![],
        items: m.into_items(),
    }
}
