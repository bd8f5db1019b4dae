//! `sa_accel`: the accelerator an FPGA design instantiates. The array
//! (`sa_top`), four data buffers and the command memory (banks of
//! `sa_buffer`), the controller that runs `docs/COMMANDS.md`, the
//! counters, and the host interface of `docs/HOST.md` (AXI4-Lite
//! registers, AXI4-Stream DMA).
//!
//! The pieces are built in their own files and meet at named nets:
//! * [`control`]: command fetch, checks and the execute sequencer;
//! * [`datapath`]: the array's inputs (`arr_*`), the controller's buffer
//!   ports (`<b>_ctl_*`), forwarding and the write-back unit;
//! * [`host`]: AXI4-Lite registers and the DMA engine (`dma_*`);
//! * [`counters`]: one 48-bit counter per `sysgrad_isa::host::Counter`;
//! * this file: ports, parameters, the buffers and the port muxes between
//!   controller and DMA (they never use a buffer in the same cycle: a DMA
//!   cannot start while the controller runs, nor a run during a DMA).

mod control;
mod counters;
mod datapath;
mod dense;
mod host;
mod sizes;

use crate::ir::*;
use sysgrad_config::{ArrayConfig, LR_SHIFT_BITS};
use sysgrad_isa::host::{DmaTarget, AXIL_ADDR_BITS, AXIL_DATA_BITS, STREAM_BITS};
use sysgrad_isa::wave::WaveField;

/// A wire of `bits` bits driven by `e`.
fn wire_of(name: &str, bits: impl Into<Expr>, e: impl Into<Expr>) -> Item {
    wire(name, Width::of(bits)).init(e).item()
}

/// A one-bit wire driven by `e`.
fn flag_wire(name: &str, e: impl Into<Expr>) -> Item {
    wire(name, Width::bit()).init(e).item()
}

/// A register of `bits` bits.
fn reg_of(name: &str, bits: impl Into<Expr>) -> Item {
    reg(name, Width::of(bits)).item()
}

/// A one-bit register.
fn flag_reg(name: &str) -> Item {
    reg(name, Width::bit()).item()
}

/// Registers from one table of `(name, width)` (`Int(1)` is a single bit):
/// their declarations, and the reset statements that clear them, so a
/// register's width and its reset value cannot drift apart.
fn registers(table: &[(&str, Expr)]) -> (Vec<Item>, Vec<Stmt>) {
    table
        .iter()
        .map(|(name, width)| match width {
            Expr::Int(1) => (flag_reg(name), set(*name, lit(1, 0))),
            Expr::Int(bits) => (reg_of(name, *bits), set(*name, lit(*bits as u32, 0))),
            w => (reg_of(name, w.clone()), set(*name, zeros(w.clone()))),
        })
        .unzip()
}

/// A localparam integer `name_I = value` and its `bits`-bit slice `name`,
/// so that comparisons with sized nets have matching widths.
fn sized_const(name: &str, bits: u32, value: Expr) -> Vec<Item> {
    let int_name = format!("{name}_I");
    vec![
        localparam(&int_name, Width::bit(), value),
        localparam(
            name,
            Width::of(bits as i64),
            id(&int_name).bits(bits as i64 - 1, 0),
        ),
    ]
}

/// One of the buffers around the array, as the Verilog names it.
pub(crate) struct Buf {
    /// Net prefix: `w`, `x`, `g`, `a`, `c`.
    pub prefix: &'static str,
    /// Lanes (banks), as a Verilog expression.
    pub lanes: &'static str,
    /// Word width, as a Verilog expression.
    pub width: &'static str,
    /// Depth parameter name.
    pub depth: &'static str,
    pub target: DmaTarget,
}

pub(crate) const BUFFERS: [Buf; 5] = [
    Buf {
        prefix: "c",
        lanes: "1",
        width: "64",
        depth: "C_DEPTH",
        target: DmaTarget::Commands,
    },
    Buf {
        prefix: "w",
        lanes: "C",
        width: "DW",
        depth: "W_DEPTH",
        target: DmaTarget::Weights,
    },
    Buf {
        prefix: "x",
        lanes: "R",
        width: "DW",
        depth: "X_DEPTH",
        target: DmaTarget::Activations,
    },
    Buf {
        prefix: "g",
        lanes: "C",
        width: "DW",
        depth: "G_DEPTH",
        target: DmaTarget::Gradients,
    },
    Buf {
        prefix: "a",
        lanes: "LA",
        width: "AW",
        depth: "A_DEPTH",
        target: DmaTarget::Accumulators,
    },
];

impl Buf {
    fn n(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.prefix)
    }
    fn bus(&self) -> Expr {
        id(self.lanes) * self.width
    }
    fn abits(&self) -> String {
        format!("{}_AB", self.prefix.to_uppercase())
    }
}

/// The banks of one buffer and the mux of its ports between the DMA
/// (while `dma_on`) and the controller (`ctl_<b>_*`, 16-bit addresses).
fn buffer(b: &Buf) -> Vec<Item> {
    let ab = b.abits();
    let dma_sel = id("dma_tgt").equals(lit(3, b.target.code().into()));
    let lanes = || id(b.lanes);
    let bank = Item::Instance(Instance {
        module: "sa_buffer".into(),
        name: "u_bank".into(),
        params: vec![
            ("W".into(), id(b.width)),
            ("DEPTH".into(), id(b.depth)),
            ("ABITS".into(), id(&ab)),
        ],
        conns: vec![
            conn("clk", "clk"),
            conn("we", id(&b.n("we")).at("l")),
            conn("waddr", id(&b.n("waddr"))),
            conn("wdata", id(&b.n("wdata")).lane("l", b.width)),
            conn("re", id(&b.n("re"))),
            conn("raddr", id(&b.n("raddr"))),
            conn("rdata", id(&b.n("rdata")).lane("l", b.width)),
        ],
    });
    let dma_value = if b.prefix == "c" {
        id("s_axis_tdata")
    } else {
        let w = b.width.to_lowercase();
        cond(
            "dma_packed",
            id(&format!("dma_pkw_{w}")).bits(b.bus() - 1, 0),
            repeat(lanes(), id(&format!("dma_val_{w}"))),
        )
    };
    let mut items = vec![Item::Comment(format!(
        "Buffer {:?}: {} lane(s) of {} bits, {} lines.",
        b.target, b.lanes, b.width, b.depth
    ))];
    items.push(localparam(
        &ab,
        Width::bit(),
        cond(
            id(b.depth).greater(1),
            call("$clog2", [id(b.depth)]),
            int(1),
        ),
    ));
    items.extend([
        flag_wire(
            &b.n("re"),
            cond(
                "dma_on",
                id("dma_re").and(dma_sel.clone()),
                id(&b.n("ctl_re")),
            ),
        ),
        wire_of(
            &b.n("raddr"),
            id(&ab),
            cond(
                "dma_on",
                id("dma_line").bits(id(&ab) - 1, 0),
                id(&b.n("ctl_raddr")).bits(id(&ab) - 1, 0),
            ),
        ),
        wire_of(
            &b.n("we"),
            lanes(),
            cond(
                "dma_on",
                cond(
                    id("dma_wbeat").and(dma_sel),
                    id("dma_wmask").bits(lanes() - 1, 0),
                    zeros(lanes()),
                ),
                id(&b.n("ctl_we")),
            ),
        ),
        wire_of(
            &b.n("waddr"),
            id(&ab),
            cond(
                "dma_on",
                id("dma_line").bits(id(&ab) - 1, 0),
                id(&b.n("ctl_waddr")).bits(id(&ab) - 1, 0),
            ),
        ),
        wire_of(
            &b.n("wdata"),
            b.bus(),
            cond("dma_on", dma_value, id(&b.n("ctl_wdata"))),
        ),
        wire(&b.n("rdata"), Width::of(b.bus())).item(),
        gen_for("l", lanes(), &format!("g_{}_bank", b.prefix), vec![bank]),
    ]);
    items
}

fn ports() -> Vec<Port> {
    let bit = Width::bit;
    let axil = |n: &str| format!("s_axil_{n}");
    let mut p = vec![input("clk", bit()), input("rst", bit())];
    let a = AXIL_ADDR_BITS as i64;
    let d = AXIL_DATA_BITS as i64;
    p.extend([
        input(&axil("awaddr"), Width::of(a)),
        input(&axil("awvalid"), bit()),
        output(&axil("awready"), bit()),
        input(&axil("wdata"), Width::of(d)),
        input(&axil("wstrb"), Width::of(d / 8)),
        input(&axil("wvalid"), bit()),
        output(&axil("wready"), bit()),
        output(&axil("bresp"), Width::of(2)),
        output(&axil("bvalid"), bit()),
        input(&axil("bready"), bit()),
        input(&axil("araddr"), Width::of(a)),
        input(&axil("arvalid"), bit()),
        output(&axil("arready"), bit()),
        output(&axil("rdata"), Width::of(d)),
        output(&axil("rresp"), Width::of(2)),
        output(&axil("rvalid"), bit()),
        input(&axil("rready"), bit()),
        input("s_axis_tdata", Width::of(STREAM_BITS as i64)),
        input("s_axis_tvalid", bit()),
        output("s_axis_tready", bit()),
        output("m_axis_tdata", Width::of(STREAM_BITS as i64)),
        output("m_axis_tvalid", bit()),
        input("m_axis_tready", bit()),
        output("m_axis_tlast", bit()),
    ]);
    p
}

/// The wave inputs of a dense array (all but the learning-rate shift,
/// which is `lr_shift`), as `(port, width)`.
fn wave_inputs() -> Vec<(&'static str, Width)> {
    WaveField::wave_inputs()
        .map(|f| (f.port(), crate::ctl::field_width(f)))
        .collect()
}

fn array_instance(cfg: &ArrayConfig) -> Vec<Item> {
    let mut conns = vec![conn("clk", "clk"), conn("rst", "rst")];
    for p in ["mode", "lr_shift", "x_in", "w_in", "dy_in", "dy_valid"] {
        conns.push(conn(p, id(&format!("arr_{p}"))));
    }
    let waves = if cfg.dense() { wave_inputs() } else { vec![] };
    for (p, _) in &waves {
        conns.push(conn(p, id(&format!("arr_{p}"))));
    }
    for p in ["y_out", "dx_out", "dw_out", "w_out"] {
        conns.push(conn(p, id(&format!("arr_{p}"))));
    }
    let mut params: Vec<(String, Expr)> = ["R", "C"]
        .iter()
        .chain(&crate::top::PE_PARAMS)
        .map(|p| (p.to_string(), id(p)))
        .collect();
    if cfg.dense() {
        params.push((crate::ctl::RB.into(), id(crate::ctl::RB)));
    } else {
        params.push(("MUL_REG".into(), id("MUL_REG")));
    }
    let wave_nets = waves
        .into_iter()
        .map(|(p, w)| wire(&format!("arr_{p}"), w).item());
    vec![
        Item::Comment("The array; its inputs arr_* are driven by the controller.".into()),
        wire("arr_mode", Width::of(sysgrad_isa::mode::MODE_BITS)).item(),
        wire("arr_lr_shift", Width::of(LR_SHIFT_BITS as i64)).item(),
        wire("arr_x_in", Width::of(id("R") * "DW")).item(),
        wire("arr_w_in", Width::of(id("C") * "DW")).item(),
        wire("arr_dy_in", Width::of(id("C") * "DW")).item(),
        wire("arr_dy_valid", Width::bit()).item(),
        wire("arr_y_out", Width::of(id("C") * "AW")).item(),
        wire("arr_dx_out", Width::of(id("R") * "AW")).item(),
        wire("arr_dw_out", Width::of(id("R") * "AW")).item(),
        wire("arr_w_out", Width::of(id("C") * "DW")).item(),
    ]
    .into_iter()
    .chain(wave_nets)
    .chain([Item::Instance(Instance {
        module: "sa_top".into(),
        name: "u_array".into(),
        params,
        conns,
    })])
    .collect()
}

/// The dense array's extra parameter (`RB`, the bits of a load row).
fn dense_params(cfg: &ArrayConfig) -> Vec<Param> {
    if !cfg.dense() {
        return vec![];
    }
    vec![param(
        crate::ctl::RB,
        sysgrad_isa::mode::load_row_bits(cfg.rows()).into(),
        "bits of wave_load_row: max(1, ceil(log2 R))",
    )]
}

pub fn module(cfg: &ArrayConfig) -> Module {
    let b = cfg.buffers();
    let mut items = vec![localparam(
        "LA",
        Width::bit(),
        cond(id("R").greater("C"), "R", "C"),
    )];
    items.extend(array_instance(cfg));
    for buf in &BUFFERS {
        items.extend(buffer(buf));
    }
    if cfg.dense() {
        items.extend(dense::items());
        items.extend(host::items(true));
        items.extend(counters::items(dense::increment));
    } else {
        items.extend(control::items());
        items.extend(host::items(false));
        items.extend(counters::items(counters::none_increment));
    }
    Module {
        name: "sa_accel".into(),
        doc: vec![
            "sa_accel: the training array with its buffers, command controller, counters and"
                .into(),
            "host interface (AXI4-Lite registers, AXI4-Stream DMA). Contract: docs/HOST.md and"
                .into(),
            "docs/COMMANDS.md; the emulator's accel::Accelerator runs the same commands.".into(),
        ],
        params: [
            crate::top::array_params(cfg),
            dense_params(cfg),
            vec![
                param("W_DEPTH", b.weights as i64, "weight buffer lines"),
                param("X_DEPTH", b.activations as i64, "activation buffer lines"),
                param("G_DEPTH", b.gradients as i64, "gradient buffer lines"),
                param("A_DEPTH", b.accumulators as i64, "accumulator buffer lines"),
                param("C_DEPTH", b.commands as i64, "command memory words"),
                param(
                    "CNT_BITS",
                    cfg.counter_bits().into(),
                    "counter width, 0..=48 (0: no counters)",
                ),
            ],
        ]
        .concat(),
        ports: ports(),
        genvars: vec!["l".into()],
        items,
    }
}
