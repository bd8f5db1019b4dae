//! What the parts of `sa_accel` hand each other: the interface of a
//! controller ([`Controller`], one implementation per pipelining), what it
//! reads ([`ControllerIo`]) and gives back ([`Built`]), and the nets the
//! host interface defines for the others ([`Requests`]).

use super::buffers::{Buffers, CtlPorts};
use super::results::AccRead;
use crate::arith::Arithmetic;
use crate::ir::*;
use sysgrad_isa::host::Counter;

/// The array's ports as `sa_accel`'s nets `arr_<port>`, one per port of
/// `sa_top` but the clock and reset.
pub(crate) struct ArrayNets(pub(super) Vec<(Net, Net)>);

impl ArrayNets {
    /// `arr_<port>` of the array's port `port` (a handle of
    /// [`crate::array::core::TopPorts`], or a port the variant adds).
    pub fn of(&self, port: Net) -> Net {
        self.0
            .iter()
            .find(|(p, _)| *p == port)
            .unwrap_or_else(|| panic!("the array has no port {}", port.name()))
            .1
    }
}

/// Register requests of the host the controller reads (defined by the
/// host interface, built after it).
pub(crate) struct Requests {
    pub start_req: Net,
    pub prog_len: Net,
    /// `PROG_START`: where START sets the PC.
    pub prog_start: Net,
}

impl Requests {
    pub fn named() -> Requests {
        Requests {
            start_req: Net::named("start_req"),
            prog_len: Net::named("prog_len"),
            prog_start: Net::named("prog_start"),
        }
    }
}

/// What a controller reads and drives.
pub(crate) struct ControllerIo<'a> {
    pub rst: Net,
    /// The array's ports (`arr_*`): the controller drives the inputs.
    pub arr: &'a ArrayNets,
    pub bufs: &'a Buffers,
    /// The controller's side of the buffers' ports, defined by it.
    pub ctl: &'a CtlPorts,
    pub requests: &'a Requests,
    /// `LA`: the accumulator buffer's lanes, max(R, C).
    pub la: Const,
    /// `sa_requant`, one instance per accumulator lane.
    pub requant: &'a Module,
    pub arith: &'a dyn Arithmetic,
}

/// The controller's state the host interface reads.
pub(crate) struct Status {
    pub ctl_running: Net,
    pub err_code: Net,
    pub stop_pc: Net,
    pub faulted: Net,
    pub halted: Net,
}

/// The controller's nets the formal properties (`crate::formal`) read.
pub(crate) struct ControlProbes {
    pub dec_fault: Net,
    pub dec_err: Net,
    pub in_dec: Net,
    pub in_dec2: Net,
    pub pc: Net,
    /// `res_valid`, `res_dirty`, `res_addr`, `res_m`, `res_k`, `res_mk`.
    pub resident: [Net; 6],
    pub wb_write: Net,
    pub wb_we: Net,
    pub wb_begin: Net,
}

/// The host registers the formal properties read.
pub(crate) struct HostProbes {
    pub prog_len: Net,
    pub dma_target_q: Net,
    pub dma_addr_q: Net,
    pub dma_count_q: Net,
    pub dma_err: Net,
    pub dma_on: Net,
    pub axil_wr: Net,
}

/// What a controller gives back.
pub(crate) struct Built {
    pub status: Status,
    /// The accumulator reads (the DMA reads them too).
    pub acc: AccRead,
    /// `MAX_M`, `MAX_K`, `ACC_LANES`: the array's shape as the commands
    /// compare it (the host reports it).
    pub shape: [Const; 3],
    /// What it charges each counter but the host interface's.
    pub counts: Box<dyn Fn(Counter) -> Expr>,
    /// The nets of its formal properties, or why it has none.
    pub probes: Result<ControlProbes, &'static str>,
}

/// One controller (`docs/COMMANDS.md`): the `none` one or the dense one.
pub(crate) trait Controller {
    /// SHAPE's dense bit and multiplier-register bit.
    fn shape_bits(&self) -> (bool, Expr);
    /// Builds the controller into `m`.
    fn build(&self, m: &mut Scope, io: &ControllerIo) -> Built;
}
