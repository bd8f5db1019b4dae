//! What the `none` and the dense array share: `sa_top`'s parameters and
//! ports, the mesh of PEs with its edge rules, the skew and deskew banks,
//! the output registers and the mode localparams. Neighbour nets are
//! arrays indexed `i*C+j` by the PE that drives them; the edges of the
//! mesh are wired by generate-if.

use crate::arith::SR_SEED;
use crate::expr::intern;
use crate::ir::*;
use crate::params::{AW, C, DW, FRAC, I, INTERLEAVED, J, LR_FIXED, LR_SHIFT, MUL_REG, R, SEED};
use crate::skew::SKEW_MODULE;
use sysgrad_config::{ArrayConfig, LR_SHIFT_BITS};
use sysgrad_isa::mode::{Mode, MODE_BITS};

/// The array's module name.
pub(crate) const TOP_MODULE: &str = "sa_top";
/// The PE module's name.
pub(crate) const PE_MODULE: &str = "sa_pe";
/// The generate loops of the mesh and the PE instance in them: PE(i,j)
/// is `g_row[i].g_col[j].u_pe`.
pub(crate) const ROW_LOOP: &str = "g_row";
pub(crate) const COL_LOOP: &str = "g_col";
pub(crate) const PE_INSTANCE: &str = "u_pe";

/// `PE(i,j) is g_row[i].g_col[j].u_pe`, for a module header.
pub(crate) fn pe_path_doc() -> String {
    format!("PE(i,j) is {ROW_LOOP}[i].{COL_LOOP}[j].{PE_INSTANCE}.")
}

/// The ports both arrays have (a dense one adds the wave inputs after
/// `dy_valid`).
pub(crate) struct TopPorts {
    pub clk: Net,
    pub rst: Net,
    pub mode: Net,
    pub lr_shift: Net,
    pub x_in: Net,
    pub w_in: Net,
    pub dy_in: Net,
    pub dy_valid: Net,
    pub y_out: Net,
    pub dx_out: Net,
    pub dw_out: Net,
    pub w_out: Net,
}

impl TopPorts {
    pub fn new() -> TopPorts {
        TopPorts {
            clk: Net::named("clk"),
            rst: Net::named("rst"),
            mode: Net::named("mode"),
            lr_shift: Net::named("lr_shift"),
            x_in: Net::named("x_in"),
            w_in: Net::named("w_in"),
            dy_in: Net::named("dy_in"),
            dy_valid: Net::named("dy_valid"),
            y_out: Net::named("y_out"),
            dx_out: Net::named("dx_out"),
            dw_out: Net::named("dw_out"),
            w_out: Net::named("w_out"),
        }
    }

    /// The port list, with `extra` inputs after `dy_valid`.
    pub fn ports(&self, extra: Vec<Port>) -> Vec<Port> {
        let port = |dir, net, width| Port {
            dir,
            net,
            width,
            signed: false,
        };
        let (i, o) = (Dir::Input, Dir::Output);
        let mut v = vec![
            port(i, self.clk, Width::bit()),
            port(i, self.rst, Width::bit()),
            port(i, self.mode, Width::of(MODE_BITS)),
            port(i, self.lr_shift, Width::of(LR_SHIFT_BITS)),
            port(i, self.x_in, Width::of(R * DW)),
            port(i, self.w_in, Width::of(C * DW)),
            port(i, self.dy_in, Width::of(C * DW)),
            port(i, self.dy_valid, Width::bit()),
        ];
        v.extend(extra);
        v.extend([
            port(o, self.y_out, Width::of(C * AW)),
            port(o, self.dx_out, Width::of(R * AW)),
            port(o, self.dw_out, Width::of(R * AW)),
            port(o, self.w_out, Width::of(C * DW)),
        ]);
        v
    }
}

/// The state a PE passes to its neighbours: its port `<name>_in` takes
/// the neighbour's, `<name>_out` gives its own. `C` is the dense array's
/// control word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    W,
    X,
    D,
    Dv,
    Psv,
    Psh,
    Dw,
    Wp,
    C,
}

impl Flow {
    pub fn name(self) -> &'static str {
        match self {
            Flow::W => "w",
            Flow::X => "x",
            Flow::D => "d",
            Flow::Dv => "dv",
            Flow::Psv => "psv",
            Flow::Psh => "psh",
            Flow::Dw => "dw",
            Flow::Wp => "wp",
            Flow::C => "c",
        }
    }
    /// The PE's input port.
    pub fn input(self) -> String {
        format!("{}_in", self.name())
    }
    /// The PE's output port.
    pub fn output(self) -> String {
        format!("{}_out", self.name())
    }
}

/// A PE's ports: clock, reset, the global mode and learning-rate shift
/// (the array's own, passed to every PE: the same handles as
/// [`TopPorts`]'), the variant's `extra` ports, then `<flow>_in` and
/// `<flow>_out` of each flow.
pub(crate) struct PePorts {
    pub rst: Net,
    pub mode: Net,
    pub lr_shift: Net,
    inputs: Vec<(Flow, Net)>,
    outputs: Vec<(Flow, Net)>,
    /// The port list, in order.
    pub list: Vec<Port>,
}

impl PePorts {
    /// The ports of a PE whose flows are `flows` (flow, width, signed).
    pub fn new(flows: &[(Flow, Width, bool)], extra: Vec<Port>) -> PePorts {
        let top = TopPorts::new();
        let port = |dir, net, width, signed| Port {
            dir,
            net,
            width,
            signed,
        };
        let mut list = vec![
            port(Dir::Input, top.clk, Width::bit(), false),
            port(Dir::Input, top.rst, Width::bit(), false),
            port(Dir::Input, top.mode, Width::of(MODE_BITS), false),
            port(Dir::Input, top.lr_shift, Width::of(LR_SHIFT_BITS), false),
        ];
        list.extend(extra);
        let mut side = |dir: Dir, name: fn(Flow) -> String| -> Vec<(Flow, Net)> {
            flows
                .iter()
                .map(|(flow, width, signed)| {
                    let net = Net::named(&name(*flow));
                    list.push(port(dir, net, width.clone(), *signed));
                    (*flow, net)
                })
                .collect()
        };
        let inputs = side(Dir::Input, Flow::input);
        let outputs = side(Dir::Output, Flow::output);
        PePorts {
            rst: top.rst,
            mode: top.mode,
            lr_shift: top.lr_shift,
            inputs,
            outputs,
            list,
        }
    }
    /// The input port of `flow` (`<flow>_in`).
    pub fn input(&self, flow: Flow) -> Net {
        by_flow(&self.inputs, flow)
    }
    /// The output port of `flow` (`<flow>_out`).
    pub fn output(&self, flow: Flow) -> Net {
        by_flow(&self.outputs, flow)
    }
}

fn by_flow(nets: &[(Flow, Net)], flow: Flow) -> Net {
    nets.iter()
        .find(|(f, _)| *f == flow)
        .unwrap_or_else(|| panic!("no net of {flow:?}"))
        .1
}

/// The mesh nets `<flow>_o`, driven by PE(i,j) at index i*C+j.
pub(crate) struct Mesh {
    nets: Vec<(Flow, Net)>,
}

impl Mesh {
    /// Declares `<flow>_o` for each flow of `flows` (name, width).
    pub fn declare(m: &mut Scope, flows: &[(Flow, Width)]) -> Mesh {
        let nets = flows
            .iter()
            .map(|(f, w)| {
                let net = m.add(wire(&format!("{}_o", f.name()), w.clone()).array(R * C));
                (*f, net)
            })
            .collect();
        Mesh { nets }
    }
    pub fn out(&self, flow: Flow) -> Net {
        self.nets
            .iter()
            .find(|(f, _)| *f == flow)
            .unwrap_or_else(|| panic!("no mesh net for {flow:?}"))
            .1
    }
}

/// PE(i,j) inside the mesh's loops: its inputs `<flow>_i`, the edge
/// rules that drive them, and the PE instance.
pub(crate) struct Cell<'a> {
    m: Scope,
    inputs: Vec<(Flow, Net)>,
    mesh: &'a Mesh,
}

impl<'a> Cell<'a> {
    /// The cell with an input per flow of `flows`, declared in order.
    pub fn new(mesh: &'a Mesh, flows: &[(Flow, Width)]) -> Cell<'a> {
        let mut m = Scope::new();
        let inputs = flows
            .iter()
            .map(|(f, w)| (*f, m.wire(&format!("{}_i", f.name()), w.clone())))
            .collect();
        Cell { m, inputs, mesh }
    }

    fn input(&self, flow: Flow) -> Net {
        self.inputs
            .iter()
            .find(|(f, _)| *f == flow)
            .unwrap_or_else(|| panic!("no cell input for {flow:?}"))
            .1
    }

    /// PE(i,j)'s input of `flow`: `edge` in column 0, else the west
    /// neighbour's output.
    pub fn west(&mut self, flow: Flow, edge: Expr) {
        self.edge_rule("w", J, cell(0, -1), flow, edge);
    }

    /// PE(i,j)'s input of `flow`: `edge` in row 0, else the north
    /// neighbour's output.
    pub fn north(&mut self, flow: Flow, edge: Expr) {
        self.edge_rule("n", I, cell(-1, 0), flow, edge);
    }

    fn edge_rule(&mut self, side: &str, var: P, neighbour: Expr, flow: Flow, edge: Expr) {
        let (input, out) = (self.input(flow), self.mesh.out(flow));
        let mut at_edge = Scope::new();
        at_edge.assign(input, edge);
        let mut inside = Scope::new();
        inside.assign(input, out.at(neighbour));
        self.m.gen_if(
            var.equals(0),
            &format!("g_{side}_{}", flow.name()),
            at_edge,
            inside,
        );
    }

    /// The west edge of the data both arrays stream alike: row i of the
    /// x skew, and zero dX and dW partial sums.
    pub fn data_west(&mut self, x_sk: Net) {
        self.west(Flow::X, x_sk.lane(I, DW));
        self.west(Flow::Psh, zeros(AW));
        self.west(Flow::Dw, zeros(AW));
    }

    /// The north edge of the data both arrays stream alike: column j of
    /// the dy skew (`{valid, dy}` lanes of DW+1 bits), and a zero forward
    /// partial sum.
    pub fn data_north(&mut self, dy_sk: Net) {
        let dy_lane = || DW + 1;
        self.north(Flow::D, dy_sk.part(J * dy_lane(), DW));
        self.north(Flow::Dv, dy_sk.at(J * dy_lane() + DW));
        self.north(Flow::Psv, zeros(AW));
    }

    pub fn scope(&mut self) -> &mut Scope {
        &mut self.m
    }

    /// `sr_seed` of PE(i,j): `StochasticBits::new(SEED, i, j).state` as a
    /// constant of the genvars, `((SEED ^ ((i << 16 | j) * 0x9E3779B9)) *
    /// 0x85EBCA6B) mod 2^32`, or 1 if that is 0.
    fn sr_seed(&mut self) -> (Net, Expr) {
        let index = I * 65536 + J;
        let mixed = (SEED.e().bit_xor(index * hex(32, 0x9E37_79B9))) * hex(32, 0x85EB_CA6B);
        let mix = self.m.localparam("SR_MIX", Width::of(32), mixed);
        (
            Net::named(SR_SEED),
            cond(mix.equals(lit(32, 0)), lit(32, 1), mix),
        )
    }

    /// The PE instance, and the cell's body: every port of `pe` connected,
    /// by its flow, to the cell's input or the mesh net; clock, reset,
    /// mode and learning rate to the array's ports; `extra` (port, value)
    /// as given. The parameters are `pe`'s, passed down by name.
    pub fn pe(mut self, pe: &Module, ports: &TopPorts, extra: &[(Net, Expr)]) -> Scope {
        // Every PE takes the array's clock, reset, mode and learning rate.
        let common = [ports.clk, ports.rst, ports.mode, ports.lr_shift];
        let mut extra = extra.to_vec();
        if pe.port(SR_SEED).is_some() {
            extra.push(self.sr_seed());
        }
        let mut conns = Vec::new();
        for p in &pe.ports {
            let name = p.name();
            let given = match extra.iter().find(|(n, _)| *n == p.net) {
                Some((_, e)) => Some(e.clone()),
                None => common.contains(&p.net).then(|| p.net.e()),
            };
            let value = match given {
                Some(e) => e,
                None => {
                    let (flow, _) = self
                        .inputs
                        .iter()
                        .find(|(f, _)| name == f.input() || name == f.output())
                        .unwrap_or_else(|| {
                            panic!("{}'s port {name} is connected to nothing", pe.name)
                        });
                    if p.dir == Dir::Input {
                        self.input(*flow).e()
                    } else {
                        self.mesh.out(*flow).at(cell(0, 0))
                    }
                }
            };
            conns.push((name.to_string(), value));
        }
        self.m.instance(Instance {
            module: pe.name.clone(),
            name: PE_INSTANCE.into(),
            params: pe
                .params
                .iter()
                .map(|p| (p.name.clone(), id(&p.name)))
                .collect(),
            conns,
        });
        self.m
    }
}

/// `e + k` for any sign of `k`, printing `e-1` rather than `e+-1`.
fn offset(e: Expr, k: i64) -> Expr {
    match k {
        0 => e,
        k if k > 0 => e + k,
        k => e - (-k),
    }
}

/// Index of PE(i+di, j+dj) in the mesh net arrays: `(i+di)*C + j+dj`.
pub(crate) fn cell(di: i64, dj: i64) -> Expr {
    offset(offset(I.e(), di) * C + J, dj)
}

/// The mesh: `cell` builds PE(i,j) in the two generate loops.
pub(crate) fn mesh_loops(m: &mut Scope, cell: Scope) {
    let mut row = Scope::new();
    row.gen_for(J.name(), C, COL_LOOP, cell);
    m.gen_for(I.name(), R, ROW_LOOP, row);
}

/// A bank of delay lines of the array (an `sa_skew` instance), named
/// once: its generate block `g_<stem>` and instance `u_<stem>`.
pub trait Bank: Copy {
    fn stem(self) -> &'static str;
    /// The edge whose lanes it delays: a lane per row or per column.
    fn edge(self) -> Edge;
    /// A deskew (lane k has LANES-1-k registers) or a skew (k).
    fn deskew(self) -> bool;
    /// The instance path below `sa_top`; every bank sits in a
    /// generate-if, since a one-lane bank is a wire.
    fn instance(self) -> &'static str {
        intern(&format!("g_{0}.u_{0}", self.stem()))
    }
}

/// A skew or deskew bank of a lane per row or column, `width` bits each,
/// from `d` to `q`. With one lane it has no registers (and would leave
/// clk/rst unused), so it is a wire instead.
pub(crate) fn bank(m: &mut Scope, ports: &TopPorts, bank: impl Bank, width: Expr, d: Net, q: Net) {
    let stem = bank.stem();
    let (_, lanes) = bank.edge().var_and_lanes();
    let deskew = bank.deskew();
    let mut one = Scope::new();
    one.instance(Instance {
        module: SKEW_MODULE.into(),
        name: format!("u_{stem}"),
        params: vec![
            ("LANES".into(), lanes.e()),
            ("W".into(), width),
            ("DESKEW".into(), int(deskew as i64)),
        ],
        conns: vec![
            conn("clk", ports.clk),
            conn("rst", ports.rst),
            conn("d", d),
            conn("q", q),
        ],
    });
    let mut wire_only = Scope::new();
    wire_only.assign(q, d);
    m.gen_if(lanes.greater(1), &format!("g_{stem}"), one, wire_only);
}

/// An edge of the mesh whose lanes leave it: one per column (south) or
/// per row (east), indexed by the column or row genvar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Cols,
    Rows,
}

impl Edge {
    fn var_and_lanes(self) -> (P, P) {
        match self {
            Edge::Cols => (J, C),
            Edge::Rows => (I, R),
        }
    }
}

/// Output registers `<stem>_q` of `width` bits in `g_<stem>_out[k]`, one
/// per lane of `edge`, loading lane k of `src` every cycle and driving
/// lane k of the output port `out`.
pub(crate) fn output_registers(
    m: &mut Scope,
    rst: Net,
    edge: Edge,
    stem: &str,
    width: P,
    src: Net,
    out: Net,
) {
    let (var, lanes) = edge.var_and_lanes();
    let mut body = Scope::new();
    let q = body.plain_register(
        &format!("{stem}_q"),
        Width::of(width),
        src.lane(var, width),
        rst,
    );
    body.assign(out.lane(var, width), q);
    m.gen_for(var.name(), lanes, &format!("g_{stem}_out"), body);
}

/// The x and dy input skews, into `x_sk` and `dy_sk` (`{dy_valid, dy}`
/// lanes of DW+1 bits).
pub(crate) fn input_skews(m: &mut Scope, ports: &TopPorts) -> (Net, Net) {
    m.comment(
        "Input skews: row i of x and column j of {dy_valid, dy} are delayed by i and j cycles.",
    );
    let x_sk = m.wire("x_sk", Width::of(R * DW));
    let dy_cat = m.wire("dy_cat", Width::of(C * (DW + 1)));
    let dy_sk = m.wire("dy_sk", Width::of(C * (DW + 1)));
    let mut lanes = Scope::new();
    lanes.assign(
        dy_cat.lane(J, DW + 1),
        cat([ports.dy_valid.e(), ports.dy_in.lane(J, DW)]),
    );
    m.gen_for(J.name(), C, "g_dy_cat", lanes);
    bank(m, ports, DelayBank::XSkew, DW.e(), ports.x_in, x_sk);
    bank(m, ports, DelayBank::DySkew, DW + 1, dy_cat, dy_sk);
    (x_sk, dy_sk)
}

/// The banks of delay lines both arrays have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelayBank {
    XSkew,
    DySkew,
    YDeskew,
    DxDeskew,
}

impl Bank for DelayBank {
    fn stem(self) -> &'static str {
        match self {
            DelayBank::XSkew => "xskew",
            DelayBank::DySkew => "dyskew",
            DelayBank::YDeskew => "ydeskew",
            DelayBank::DxDeskew => "dxdeskew",
        }
    }
    fn edge(self) -> Edge {
        match self {
            DelayBank::XSkew | DelayBank::DxDeskew => Edge::Rows,
            DelayBank::DySkew | DelayBank::YDeskew => Edge::Cols,
        }
    }
    fn deskew(self) -> bool {
        matches!(self, DelayBank::YDeskew | DelayBank::DxDeskew)
    }
}

/// `Modes: 0 IDLE, 1 LOAD, ...` for a module header.
pub(crate) fn modes_line(modes: &[Mode], rest: &str) -> String {
    let list: Vec<String> = modes
        .iter()
        .map(|m| format!("{} {}", m.code(), m.name()))
        .collect();
    format!("Modes: {}{rest}", list.join(", "))
}

/// `M_<name>`: the array's mode codes in `modes`, as localparams.
pub(crate) fn mode_constants(m: &mut Scope, modes: &[Mode]) -> Modes {
    let consts = modes
        .iter()
        .map(|mode| {
            let c = m.localparam(
                &mode.verilog_name(),
                Width::of(MODE_BITS),
                lit(MODE_BITS, mode.code().into()),
            );
            (*mode, c)
        })
        .collect();
    Modes(consts)
}

/// The mode localparams of a module, by mode.
pub(crate) struct Modes(Vec<(Mode, Const)>);

impl Modes {
    pub fn of(&self, mode: Mode) -> Const {
        self.0
            .iter()
            .find(|(m, _)| *m == mode)
            .unwrap_or_else(|| panic!("mode {} has no localparam here", mode.name()))
            .1
    }
}

/// The parameters both arrays take from their configuration (the `none`
/// one adds `MUL_REG`, the dense one `RB`); `sa_accel` has the array's.
/// `FRAC` only if the PE `pe` takes it (its format has fractional bits).
pub(crate) fn array_params(cfg: &ArrayConfig, pe: &Module) -> Vec<Param> {
    let pe_has_frac = pe.params.iter().any(|p| p.name == FRAC.name());
    let f = cfg.format();
    vec![
        param(
            R.name(),
            cfg.rows() as i64,
            "PE rows (reduction dimension K)",
        ),
        param(
            C.name(),
            cfg.cols() as i64,
            "PE columns (output dimension M)",
        ),
        param(DW.name(), f.in_bits.into(), "data width"),
        param(AW.name(), f.acc_bits.into(), "accumulator width"),
        param(FRAC.name(), f.frac_bits.into(), "fractional bits of data"),
        param(
            INTERLEAVED.name(),
            cfg.interleaved().into(),
            "1: interleaved backward PEs",
        ),
    ]
    .into_iter()
    .filter(|p| pe_has_frac || p.name != FRAC.name())
    .chain(lr_params(cfg.fixed_lr_shift()))
    .chain(seed_param(cfg))
    .collect()
}

/// `SEED`, the stochastic rounding's seed, for a configuration that
/// rounds its update stochastically.
fn seed_param(cfg: &ArrayConfig) -> Option<Param> {
    let seed = cfg.numbers().stochastic_seed()?;
    // 32 bits unsigned: a seed from 2^31 up does not fit an `integer`.
    Some(param_bits(
        SEED.name(),
        seed.into(),
        32,
        "seed of the PEs' stochastic-rounding generators (sr_state)",
    ))
}

/// The parameters of a PE that its array overrides: data format,
/// interleaving and the learning-rate constant; `doc` is what
/// INTERLEAVED's comment says one pass computes in (a pass or a wave).
pub(crate) fn pe_params(pass: &str, arith: &dyn crate::arith::Arithmetic) -> Vec<Param> {
    vec![
        param(DW.name(), 16, "data width (signed)"),
        param(AW.name(), 40, "accumulator width (signed, >= 2*DW)"),
        param(FRAC.name(), 8, "fractional bits of data"),
        param(
            INTERLEAVED.name(),
            1,
            &format!("1: two multipliers (dX and dW in one {pass}); 0: one"),
        ),
    ]
    .into_iter()
    .filter(|p| arith.has_frac() || p.name != FRAC.name())
    .chain(lr_params(None))
    .collect()
}

/// `MUL_REG` with `on` as its default: the `none` array's, and its PE's
/// (which the array overrides) with `false`.
pub(crate) fn mul_reg_param(on: bool) -> Param {
    param(
        MUL_REG.name(),
        on.into(),
        "1: a register after each multiplier (every result one cycle later)",
    )
}

/// `LR_FIXED` and `LR_SHIFT` with `fixed`'s values as defaults: the
/// array's, and a PE's (which its array overrides) with `None`.
fn lr_params(fixed: Option<u32>) -> [Param; 2] {
    [
        param(
            LR_FIXED.name(),
            fixed.is_some().into(),
            "1: the SGD shift is the constant LR_SHIFT (no barrel shifter; the lr_shift port is ignored)",
        ),
        param(
            LR_SHIFT.name(),
            fixed.unwrap_or(0).into(),
            "the constant SGD shift when LR_FIXED = 1 (0..63)",
        ),
    ]
}
