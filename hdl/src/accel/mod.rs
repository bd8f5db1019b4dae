//! `sa_accel`: the accelerator an FPGA design instantiates. The array
//! (`sa_top`), four data buffers and the command memory (banks of
//! `sa_buffer`), the controller that runs `docs/COMMANDS.md`, the
//! counters, and the host interface of `docs/HOST.md` (AXI4-Lite
//! registers, AXI4-Stream DMA).
//!
//! The pieces are built in their own files and hand each other the
//! handles of the nets they export ([`io`]):
//! * a controller ([`io::Controller`]): [`none::NoneController`] or
//!   [`dense::DenseController`], chosen once from the configuration; what
//!   both do alike is in [`commands`] (constants, fields, checks) and
//!   [`results`] (accumulator reads, write-back data) and [`activation`]
//!   (the activation unit after the requantizer);
//! * [`buffers`]: the banks and the port muxes between controller and DMA
//!   (they never use a buffer in the same cycle: a DMA cannot start while
//!   the controller runs, nor a run during a DMA);
//! * [`host`]: AXI4-Lite registers and the DMA engine (`dma_*`);
//! * [`counters`]: one 48-bit counter per `sysgrad_isa::host::Counter`;
//! * this file: the ports, the parameters, the array instance (its nets
//!   and connections read from `sa_top`'s module), and the assembly.

mod activation;
mod buffers;
mod commands;
mod counters;
pub(crate) mod dense;
mod host;
pub(crate) mod io;
pub(crate) mod none;
mod results;
mod sizes;
mod window;

use crate::arith::Arithmetic;
use crate::ir::*;
use crate::params::{A_DEPTH, C, CNT_BITS, C_DEPTH, G_DEPTH, L, R, WINDOW, W_DEPTH, X_DEPTH};
use io::{ArrayNets, ControlProbes, Controller, ControllerIo, HostProbes, Requests};
use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::{Counter, DmaTarget};

/// The accelerator's module name.
pub(crate) const ACCEL_MODULE: &str = "sa_accel";

/// The nets of `sa_accel` its formal properties read (`crate::formal`).
pub(crate) struct FormalNets {
    /// The ports the properties watch: clock, reset, the AXI4-Lite
    /// handshakes and responses and the output stream.
    pub ports: Vec<Net>,
    pub control: ControlProbes,
    pub ctl_running: Net,
    pub stop_pc: Net,
    pub faulted: Net,
    pub halted: Net,
    pub err_code: Net,
    pub host: HostProbes,
    pub arr_mode: Net,
    /// Each buffer's write enables (`<b>_we`), in DMA target order.
    pub buffer_we: Vec<(DmaTarget, Net)>,
    /// Each counter's increment (`inc_<name>`).
    pub increments: Vec<(Counter, Net)>,
}

/// The accelerator's module, and the nets of its formal properties (or
/// why its controller has none).
pub(crate) struct Accel {
    pub module: Module,
    pub formal: Result<FormalNets, &'static str>,
}

/// `arr_<port>` for every port of `top` but the clock and reset, and the
/// instance of `top` on them.
fn array_instance(m: &mut Scope, top: &Module, clk: Net, rst: Net) -> ArrayNets {
    m.comment("The array; its inputs arr_* are driven by the controller.");
    let nets: Vec<(Net, Net)> = top
        .ports
        .iter()
        .filter(|p| p.net != clk && p.net != rst)
        .map(|p| (p.net, m.wire(&format!("arr_{}", p.name()), p.width.clone())))
        .collect();
    let arr = ArrayNets(nets);
    let conns = top
        .ports
        .iter()
        .map(|p| {
            let e = if p.net == clk || p.net == rst {
                p.net
            } else {
                arr.of(p.net)
            };
            (p.name().to_string(), e.e())
        })
        .collect();
    m.instance(Instance {
        module: top.name.clone(),
        name: "u_array".into(),
        params: top
            .params
            .iter()
            .map(|p| (p.name.clone(), id(&p.name)))
            .collect(),
        conns,
    });
    arr
}

/// `sa_accel` around `top` (the array of `cfg`, whose parameters it has
/// and passes down), with `controller` and the number format `arith`.
pub(crate) fn build(
    cfg: &ArrayConfig,
    top: &Module,
    controller: &dyn Controller,
    arith: &dyn Arithmetic,
) -> Accel {
    let b = cfg.buffers();
    let ports = host::HostPorts::new();
    let mut m = Scope::new();
    let la = m.localparam("LA", Width::bit(), cond(R.greater(C), R, C));
    let arr = array_instance(&mut m, top, ports.clk, ports.rst);
    let ctl = buffers::CtlPorts::named();
    let dma = buffers::DmaNets::named(cfg);
    let requests = Requests::named();
    let counter_regs = counters::CounterRegs::named();
    let bufs = buffers::build(&mut m, la, &ctl, &dma, ports.s_tdata, ports.clk);
    let requant = arith.requant();
    let built = controller.build(
        &mut m,
        &ControllerIo {
            rst: ports.rst,
            arr: &arr,
            bufs: &bufs,
            ctl: &ctl,
            requests: &requests,
            la,
            requant: &requant,
            arith,
        },
    );
    let (shape_dense, shape_mul_reg) = controller.shape_bits();
    let [max_m, max_k, acc_lanes] = built.shape;
    let host = host::build(
        &mut m,
        &host::HostIo {
            ports: &ports,
            status: &built.status,
            bufs: &bufs,
            a_rd: built.acc.a_rd,
            counters: &counter_regs,
            dma: &dma,
            requests: &requests,
            max_m,
            max_k,
            acc_lanes,
            la,
            shape_dense,
            shape_mul_reg,
            format_value: sysgrad_isa::host::format::value(cfg),
            frac_param: arith.has_frac(),
        },
    );
    let counts = &built.counts;
    let increments = counters::build(&mut m, &counter_regs, ports.rst, host.clear_req, |c| {
        host.counts.increment(c).unwrap_or_else(|| counts(c))
    });
    let st = &built.status;
    let formal = built.probes.map(|control| FormalNets {
        ports: vec![
            ports.clk,
            ports.rst,
            ports.awvalid,
            ports.awready,
            ports.wvalid,
            ports.wready,
            ports.bvalid,
            ports.bready,
            ports.bresp,
            ports.arvalid,
            ports.arready,
            ports.rvalid,
            ports.rready,
            ports.rdata,
            ports.rresp,
            ports.m_tvalid,
            ports.m_tready,
            ports.m_tdata,
            ports.m_tlast,
        ],
        control,
        ctl_running: st.ctl_running,
        stop_pc: st.stop_pc,
        faulted: st.faulted,
        halted: st.halted,
        err_code: st.err_code,
        host: host.probes,
        arr_mode: arr.of(crate::array::core::TopPorts::new().mode),
        buffer_we: buffers::BUFFERS
            .iter()
            .map(|buf| (buf.target, bufs.of(buf.target).we))
            .collect(),
        increments,
    });
    let module = Module {
        name: ACCEL_MODULE.into(),
        doc: vec![
            "sa_accel: the training array with its buffers, command controller, counters and"
                .into(),
            "host interface (AXI4-Lite registers, AXI4-Stream DMA). Contract: docs/HOST.md and"
                .into(),
            "docs/COMMANDS.md; the emulator's accel::Accelerator runs the same commands.".into(),
        ],
        params: top
            .params
            .iter()
            .cloned()
            .chain([
                param(W_DEPTH.name(), b.weights as i64, "weight buffer lines"),
                param(
                    X_DEPTH.name(),
                    b.activations as i64,
                    "activation buffer lines",
                ),
                param(G_DEPTH.name(), b.gradients as i64, "gradient buffer lines"),
                param(
                    A_DEPTH.name(),
                    b.accumulators as i64,
                    "accumulator buffer lines",
                ),
                param(C_DEPTH.name(), b.commands as i64, "command memory words"),
                param(
                    CNT_BITS.name(),
                    cfg.counter_bits().into(),
                    "counter width, 0..=48 (0: no counters)",
                ),
                param(
                    WINDOW.name(),
                    cfg.has_window().into(),
                    "1: the convolution address generator; 0: WINDOW faults NO_GENERATOR",
                ),
            ])
            .collect(),
        ports: ports.ports(),
        genvars: vec![L.name().into()],
        items: m.into_items(),
    };
    Accel { module, formal }
}
