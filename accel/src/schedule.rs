//! Layer products on the accelerator through its host interface: the
//! operands go in by DMA, command programs run the tiles, the results come
//! out by DMA, with the same bits as `sysgrad_emulator::gemm`.
//!
//! The weights of a layer stay in the weight buffer (the caller puts them
//! there once, [`load_weights`]); X, dY and the results live only for one
//! product. When they do not fit the buffers ([`Arena`]) the product is
//! split, in ways that keep every sum of `docs/ARCHITECTURE.md` ("Layers
//! larger than the array") in its order:
//!
//! * forward: N into chunks (columns are independent), K into groups of
//!   K blocks whose partial Y stays in the accumulators between groups (Y
//!   of an M block still adds its K tiles in K order);
//! * backward, [`BackwardPlan::Grouped`]: dY whole on chip, K into groups
//!   (each tile's dW still sees the whole stream, dX of a K block still
//!   adds its M tiles in M order; groups only reorder independent tiles);
//! * backward, [`BackwardPlan::Chunked`], when even one K block of N columns
//!   does not fit: per tile, N in chunks, the tile resident from the first
//!   chunk to the last (dW accumulates in the PEs over the whole stream in
//!   order), dX partial sums out to the host and back in.
//!
//! A product that cannot run at all (a buffer smaller than the smallest
//! piece) is refused with the buffer and the lines it needs ([`PlanError`]).

use crate::buffer::BufferId;
use crate::command::{encode_program, BackwardMode, Command, DataBuffer};
use crate::device::{buffer_name, Device, DeviceError, Traffic};
use crate::layout::Blocked;
use ndarray::{s, Array2, ArrayView2};
use serde::Serialize;
use sysgrad_config::{fixed, ArrayConfig};
use sysgrad_emulator::gemm::{tiles, DwSink};

/// The largest stream length or REQUANT count a command field holds.
pub(crate) const FIELD_MAX: usize = u16::MAX as usize;

/// Lines `base..base + len` of a buffer that one product may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Region {
    pub base: usize,
    pub len: usize,
}

/// The transient space of a product in the three data buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Arena {
    pub activations: Region,
    pub gradients: Region,
    pub accumulators: Region,
}

impl Arena {
    /// Every line of the three data buffers of `cfg`.
    pub fn whole(cfg: &ArrayConfig) -> Self {
        let b = cfg.buffers();
        let all = |len| Region { base: 0, len };
        Arena {
            activations: all(b.activations),
            gradients: all(b.gradients),
            accumulators: all(b.accumulators),
        }
    }
}

/// How a result comes back to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Output {
    /// Raw accumulators (for sums the host goes on with, e.g. col2im).
    Raw,
    /// Requantized to data (`fixed::requantize`); on chip by REQUANT when
    /// the buffers have room, so that four 16-bit words share a beat.
    Data,
    /// Not wanted (dX of the first layer that learns): it stays on chip
    /// and the product returns zeros in its place.
    Discard,
}

/// A product that cannot run in the configured buffers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("{what} needs {needed} lines of the {buffer} buffer, which has {available} for it (raise buffers.{buffer})")]
pub struct PlanError {
    pub buffer: &'static str,
    pub needed: usize,
    pub available: usize,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

fn need(
    buffer: BufferId,
    needed: usize,
    available: usize,
    what: impl Into<String>,
) -> Result<(), PlanError> {
    if needed > available {
        return Err(PlanError {
            buffer: buffer_name(buffer),
            needed,
            available,
            what: what.into(),
        });
    }
    Ok(())
}

/// Sizes of a product `Y = W X`: W is M x K, X is K x N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

impl Shape {
    fn m_blocks(&self, cfg: &ArrayConfig) -> usize {
        self.m.div_ceil(cfg.cols())
    }
    fn k_blocks(&self, cfg: &ArrayConfig) -> usize {
        self.k.div_ceil(cfg.rows())
    }
}

/// The layout of a layer's W in the weight buffer from line `base`.
pub fn weights_layout(cfg: &ArrayConfig, base: usize, m: usize, k: usize) -> Blocked {
    Blocked {
        base,
        rows: m,
        cols: k,
        lanes: cfg.cols(),
    }
}

/// DMA of a layer's weights into their lines.
pub fn load_weights(dev: &mut Device, w: &Blocked, m: ArrayView2<i64>) -> Result<(), DeviceError> {
    dev.write_matrix(BufferId::Weights, w, m, Traffic::WeightsIn)
}

/// DMA of a layer's weights back to the host.
pub fn read_weights(dev: &mut Device, w: &Blocked) -> Result<Array2<i64>, DeviceError> {
    dev.read_matrix(BufferId::Weights, w, Traffic::WeightsOut)
}

/// The weights of `w` read back only to check them against a reference
/// (charged as [`Traffic::CheckOut`], not as part of a step).
pub fn check_weights(dev: &mut Device, w: &Blocked) -> Result<Array2<i64>, DeviceError> {
    dev.read_matrix(BufferId::Weights, w, Traffic::CheckOut)
}

// ------------------------------------------------------------------ plans

/// How a forward product is cut (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ForwardPlan {
    /// Columns of X per chunk.
    pub chunk: usize,
    /// K blocks per group.
    pub group: usize,
    /// Y is requantized on chip (into the gradient buffer) before it leaves.
    pub requant_on_chip: bool,
}

impl ForwardPlan {
    pub fn chunks(&self, s: &Shape) -> usize {
        s.n.div_ceil(self.chunk)
    }
    pub fn groups(&self, cfg: &ArrayConfig, s: &Shape) -> usize {
        s.k_blocks(cfg).div_ceil(self.group)
    }
}

/// The forward plan with the fewest chunks (each chunk loads every tile
/// again), then the fewest groups.
pub fn plan_forward(
    cfg: &ArrayConfig,
    s: &Shape,
    arena: &Arena,
    out: Output,
) -> Result<ForwardPlan, PlanError> {
    let (mb, kb) = (s.m_blocks(cfg), s.k_blocks(cfg));
    let (la, lg, lacc) = (
        arena.activations.len,
        arena.gradients.len,
        arena.accumulators.len,
    );
    need(BufferId::Activations, 1, la, "one column of X")?;
    need(
        BufferId::Accumulators,
        mb,
        lacc,
        "one column of Y (a line per block of the array's columns)",
    )?;
    let requant_on_chip = out == Output::Data && lg >= mb;
    let mut chunk = s.n.min(la).min(lacc / mb).min(FIELD_MAX);
    if requant_on_chip {
        chunk = chunk.min(lg / mb);
    }
    Ok(ForwardPlan {
        chunk,
        group: kb.min(la / chunk),
        requant_on_chip,
    })
}

/// How a backward product is cut (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BackwardPlan {
    /// dY on chip whole; `group` K blocks of X, dX (and dW) at a time.
    Grouped { group: usize, requant_on_chip: bool },
    /// Tile by tile, `chunk` columns at a time.
    Chunked { chunk: usize },
}

pub fn plan_backward(
    cfg: &ArrayConfig,
    s: &Shape,
    arena: &Arena,
    sink: DwSink,
    out: Output,
) -> Result<BackwardPlan, PlanError> {
    let (mb, kb) = (s.m_blocks(cfg), s.k_blocks(cfg));
    let (la, lg, lacc) = (
        arena.activations.len,
        arena.gradients.len,
        arena.accumulators.len,
    );
    // dW^T of a group: a line per row of dW for each K block.
    let dw_lines = if sink == DwSink::Drain { s.m } else { 0 };
    let group = kb
        .min(la / s.n)
        .min(lacc / (s.n + dw_lines))
        .min(usize::from(s.n <= FIELD_MAX) * kb);
    if group >= 1 && mb * s.n <= lg {
        return Ok(BackwardPlan::Grouped {
            group,
            requant_on_chip: out == Output::Data,
        });
    }
    let drain = if sink == DwSink::Drain { cfg.cols() } else { 0 };
    need(BufferId::Activations, 1, la, "one column of X")?;
    need(BufferId::Gradients, 1, lg, "one column of dY")?;
    need(
        BufferId::Accumulators,
        1 + drain,
        lacc,
        "one column of dX and a drained dW tile",
    )?;
    let chunk = s.n.min(la).min(lg).min(lacc - drain).min(FIELD_MAX);
    Ok(BackwardPlan::Chunked { chunk })
}

// -------------------------------------------------------------- execution

pub(crate) fn a16(v: usize) -> u16 {
    u16::try_from(v).expect("line addresses are below the 65536-line depth limit")
}

/// Runs `cmds` as programs that fit command memory (a HALT each); the
/// resident tile and the buffers carry over from one to the next.
pub fn run_commands(dev: &mut Device, cmds: &[Command]) -> Result<(), DeviceError> {
    let room = dev.cfg().buffers().commands.saturating_sub(1).max(2);
    let mut program = Vec::new();
    for cmd in cmds {
        let words = cmd.encode();
        if program.len() + words.len() > room {
            program.extend(Command::Halt.encode());
            dev.run(&program)?;
            program.clear();
        }
        program.extend(words);
    }
    program.extend(encode_program(&[Command::Halt]));
    dev.run(&program)
}

/// REQUANT of `count` lines, cut to what the count field holds.
pub(crate) fn requant(
    cmds: &mut Vec<Command>,
    src: usize,
    dst: DataBuffer,
    dst_addr: usize,
    count: usize,
) {
    for (off, len) in tiles(count, FIELD_MAX) {
        cmds.push(Command::Requant {
            src: a16(src + off),
            dst,
            dst_addr: a16(dst_addr + off),
            count: len as u16,
        });
    }
}

fn requantize_host(cfg: &ArrayConfig, m: &mut Array2<i64>) {
    let f = cfg.format();
    m.mapv_inplace(|a| fixed::requantize(a, f.frac_bits, f.in_bits, f.acc_bits));
}

fn blocked(base: usize, rows: usize, cols: usize, lanes: usize) -> Blocked {
    Blocked {
        base,
        rows,
        cols,
        lanes,
    }
}

/// `Y = W X` with W at `w` in the weight buffer; Y (M x N) as `out` asks.
pub fn forward(
    dev: &mut Device,
    w: &Blocked,
    x: ArrayView2<i64>,
    arena: &Arena,
    out: Output,
) -> Result<Array2<i64>, ScheduleError> {
    let cfg = dev.cfg();
    let (r, c) = (cfg.rows(), cfg.cols());
    let s = Shape {
        m: w.rows,
        k: w.cols,
        n: x.ncols(),
    };
    assert_eq!(x.nrows(), s.k, "X rows = K");
    let plan = plan_forward(&cfg, &s, arena, out)?;
    let mut y = Array2::zeros((s.m, s.n));
    for (n0, nc) in tiles(s.n, plan.chunk) {
        let ylay = blocked(arena.accumulators.base, s.m, nc, c);
        let groups: Vec<_> = tiles(s.k, plan.group * r).collect();
        for (gi, &(gk0, gk)) in groups.iter().enumerate() {
            let xlay = blocked(arena.activations.base, gk, nc, r);
            let xs = x.slice(s![gk0..gk0 + gk, n0..n0 + nc]);
            dev.write_matrix(BufferId::Activations, &xlay, xs, Traffic::InputsIn)?;
            let mut cmds = Vec::new();
            for (m0, mt) in tiles(s.m, c) {
                for (k0, kt) in tiles(gk, r) {
                    cmds.push(load(w, m0, mt, gk0 + k0, kt));
                    cmds.push(Command::Forward {
                        x_addr: a16(xlay.line(k0, 0)),
                        y_addr: a16(ylay.line(m0, 0)),
                        n: nc as u16,
                        accumulate: gk0 + k0 > 0,
                        window: false,
                    });
                }
            }
            let last = gi + 1 == groups.len();
            if last && plan.requant_on_chip {
                let dst = arena.gradients.base;
                requant(
                    &mut cmds,
                    ylay.base,
                    DataBuffer::Gradients,
                    dst,
                    ylay.lines(),
                );
            }
            run_commands(dev, &cmds)?;
        }
        let part = if plan.requant_on_chip {
            let lay = blocked(arena.gradients.base, s.m, nc, c);
            dev.read_matrix(BufferId::Gradients, &lay, Traffic::ResultsOut)?
        } else {
            let mut raw = dev.read_matrix(BufferId::Accumulators, &ylay, Traffic::ResultsOut)?;
            if out == Output::Data {
                requantize_host(&cfg, &mut raw);
            }
            raw
        };
        y.slice_mut(s![.., n0..n0 + nc]).assign(&part);
    }
    Ok(y)
}

fn load(w: &Blocked, m0: usize, mt: usize, k0: usize, kt: usize) -> Command {
    Command::LoadW {
        addr: a16(w.line(m0, k0)),
        m: mt as u16,
        k: kt as u16,
    }
}

/// The tile's dW command after its backward pass.
fn sink_command(sink: DwSink, dw_addr: usize) -> Command {
    match sink {
        DwSink::Drain => Command::Drain {
            dw_addr: a16(dw_addr),
        },
        DwSink::Update { lr_shift } => Command::Update {
            // Out-of-range shifts are the controller's LR_SHIFT error.
            lr_shift: lr_shift.min(255) as u8,
        },
    }
}

/// What a backward product gives the host: dX (K x N, as `out` asked)
/// and, with [`DwSink::Drain`], dW (M x K raw). With [`DwSink::Update`] the
/// weights were updated in the weight buffer ([`read_weights`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gradients {
    pub dx: Array2<i64>,
    pub dw: Option<Array2<i64>>,
}

/// The operands of a backward product.
pub struct BackwardOperands<'a> {
    pub w: Blocked,
    pub x: ArrayView2<'a, i64>,
    pub dy: ArrayView2<'a, i64>,
}

/// The backward pass of `Y = W X`, BACKWARD in `mode` (interleaved or
/// sequential), dW to `sink`, dX as `out` asks.
pub fn backward(
    dev: &mut Device,
    ops: &BackwardOperands,
    arena: &Arena,
    mode: BackwardMode,
    sink: DwSink,
    out: Output,
) -> Result<Gradients, ScheduleError> {
    let cfg = dev.cfg();
    let s = Shape {
        m: ops.w.rows,
        k: ops.w.cols,
        n: ops.x.ncols(),
    };
    assert_eq!(ops.x.nrows(), s.k, "X rows = K");
    assert_eq!(ops.dy.dim(), (s.m, s.n), "dY is M x N");
    let plan = plan_backward(&cfg, &s, arena, sink, out)?;
    let mut g = match plan {
        BackwardPlan::Grouped {
            group,
            requant_on_chip,
        } => {
            let how = Grouped {
                group,
                requant_on_chip,
                out,
                mode,
                sink,
            };
            grouped(dev, ops, &s, arena, how)?
        }
        BackwardPlan::Chunked { chunk } => {
            let keep_dx = out != Output::Discard;
            chunked(dev, ops, &s, arena, (mode, sink, keep_dx), chunk)?
        }
    };
    let on_chip = matches!(
        plan,
        BackwardPlan::Grouped {
            requant_on_chip: true,
            ..
        }
    );
    if out == Output::Data && !on_chip {
        requantize_host(&cfg, &mut g.dx);
    }
    Ok(g)
}

struct Grouped {
    group: usize,
    requant_on_chip: bool,
    out: Output,
    mode: BackwardMode,
    sink: DwSink,
}

fn grouped(
    dev: &mut Device,
    ops: &BackwardOperands,
    s: &Shape,
    arena: &Arena,
    how: Grouped,
) -> Result<Gradients, ScheduleError> {
    let cfg = dev.cfg();
    let (r, c, n) = (cfg.rows(), cfg.cols(), s.n);
    let dylay = blocked(arena.gradients.base, s.m, n, c);
    dev.write_matrix(BufferId::Gradients, &dylay, ops.dy, Traffic::GradientsIn)?;
    let mut dx = Array2::zeros((s.k, n));
    let mut dw = (how.sink == DwSink::Drain).then(|| Array2::zeros((s.m, s.k)));
    let groups: Vec<_> = tiles(s.k, how.group * r).collect();
    for (gi, &(gk0, gk)) in groups.iter().enumerate() {
        let xlay = blocked(arena.activations.base, gk, n, r);
        let xs = ops.x.slice(s![gk0..gk0 + gk, ..]);
        dev.write_matrix(BufferId::Activations, &xlay, xs, Traffic::InputsIn)?;
        let dxlay = blocked(arena.accumulators.base, gk, n, r);
        let dwlay = blocked(dxlay.end(), gk, s.m, r);
        let mut cmds = Vec::new();
        for (m0, mt) in tiles(s.m, c) {
            for (k0, kt) in tiles(gk, r) {
                cmds.push(load(&ops.w, m0, mt, gk0 + k0, kt));
                cmds.push(Command::Backward {
                    mode: how.mode,
                    dy_addr: a16(dylay.line(m0, 0)),
                    x_addr: a16(xlay.line(k0, 0)),
                    dx_addr: a16(dxlay.line(k0, 0)),
                    n: n as u16,
                    accumulate: m0 > 0,
                    window: false,
                });
                cmds.push(sink_command(how.sink, dwlay.line(k0, m0)));
            }
        }
        let last = gi + 1 == groups.len();
        if last && matches!(how.sink, DwSink::Update { .. }) {
            cmds.push(Command::FlushW);
        }
        if how.requant_on_chip && how.out == Output::Data {
            // X of the group is no longer needed: dX takes its lines.
            requant(
                &mut cmds,
                dxlay.base,
                DataBuffer::Activations,
                xlay.base,
                dxlay.lines(),
            );
        }
        run_commands(dev, &cmds)?;
        if how.out != Output::Discard {
            let part = if how.requant_on_chip {
                dev.read_matrix(BufferId::Activations, &xlay, Traffic::ResultsOut)?
            } else {
                dev.read_matrix(BufferId::Accumulators, &dxlay, Traffic::ResultsOut)?
            };
            dx.slice_mut(s![gk0..gk0 + gk, ..]).assign(&part);
        }
        if let Some(dw) = &mut dw {
            let t = dev.read_matrix(BufferId::Accumulators, &dwlay, Traffic::WeightGradientsOut)?;
            dw.slice_mut(s![.., gk0..gk0 + gk]).assign(&t.t());
        }
    }
    Ok(Gradients { dx, dw })
}

fn chunked(
    dev: &mut Device,
    ops: &BackwardOperands,
    s: &Shape,
    arena: &Arena,
    (mode, sink, keep_dx): (BackwardMode, DwSink, bool),
    chunk: usize,
) -> Result<Gradients, ScheduleError> {
    let cfg = dev.cfg();
    let (r, c) = (cfg.rows(), cfg.cols());
    let mut dx = Array2::zeros((s.k, s.n));
    let mut dw = (sink == DwSink::Drain).then(|| Array2::zeros((s.m, s.k)));
    let m_tiles: Vec<_> = tiles(s.m, c).collect();
    for (mi, &(m0, mt)) in m_tiles.iter().enumerate() {
        for (k0, kt) in tiles(s.k, r) {
            let chunks: Vec<_> = tiles(s.n, chunk).collect();
            for (ci, &(n0, nc)) in chunks.iter().enumerate() {
                let xlay = blocked(arena.activations.base, kt, nc, r);
                let xs = ops.x.slice(s![k0..k0 + kt, n0..n0 + nc]);
                dev.write_matrix(BufferId::Activations, &xlay, xs, Traffic::InputsIn)?;
                let dylay = blocked(arena.gradients.base, mt, nc, c);
                let dys = ops.dy.slice(s![m0..m0 + mt, n0..n0 + nc]);
                dev.write_matrix(BufferId::Gradients, &dylay, dys, Traffic::GradientsIn)?;
                let dxlay = blocked(arena.accumulators.base, kt, nc, r);
                let mut dxs = dx.slice_mut(s![k0..k0 + kt, n0..n0 + nc]);
                if m0 > 0 && keep_dx {
                    dev.write_matrix(
                        BufferId::Accumulators,
                        &dxlay,
                        dxs.view(),
                        Traffic::PartialsIn,
                    )?;
                }
                let mut cmds = Vec::new();
                if ci == 0 {
                    cmds.push(load(&ops.w, m0, mt, k0, kt));
                }
                cmds.push(Command::Backward {
                    mode,
                    dy_addr: a16(dylay.base),
                    x_addr: a16(xlay.base),
                    dx_addr: a16(dxlay.base),
                    n: nc as u16,
                    accumulate: m0 > 0,
                    window: false,
                });
                let last_chunk = ci + 1 == chunks.len();
                if last_chunk {
                    cmds.push(sink_command(sink, dxlay.end()));
                }
                run_commands(dev, &cmds)?;
                let t = if mi + 1 == m_tiles.len() {
                    Traffic::ResultsOut
                } else {
                    Traffic::PartialsOut
                };
                if keep_dx {
                    dxs.assign(&dev.read_matrix(BufferId::Accumulators, &dxlay, t)?);
                }
                if let (Some(dw), true) = (&mut dw, last_chunk) {
                    let lay = blocked(dxlay.end(), kt, mt, r);
                    let tile =
                        dev.read_matrix(BufferId::Accumulators, &lay, Traffic::WeightGradientsOut)?;
                    dw.slice_mut(s![m0..m0 + mt, k0..k0 + kt]).assign(&tile.t());
                }
            }
        }
    }
    if matches!(sink, DwSink::Update { .. }) {
        run_commands(dev, &[Command::FlushW])?;
    }
    Ok(Gradients { dx, dw })
}
