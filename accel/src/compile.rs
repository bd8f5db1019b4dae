//! Command programs for a fully connected layer `Y = W X` larger than the
//! array, in exactly the tile order of [`sysgrad_emulator::gemm`], so that running
//! them reproduces `gemm::forward` / `gemm::backward` bit for bit.

use super::command::{BackwardMode, Command};
use super::layout::Blocked;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::gemm::{tiles, DwSink};

/// Where an M x K x N layer's operands live (line layouts, see [`Blocked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FcLayer {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// W (M x K) in the weight buffer.
    pub w: Blocked,
    /// X (K x N) in the activation buffer.
    pub x: Blocked,
    /// dY (M x N) in the gradient buffer.
    pub dy: Blocked,
    /// Y (M x N) in the accumulator buffer.
    pub y: Blocked,
    /// dX (K x N) in the accumulator buffer.
    pub dx: Blocked,
    /// dW transposed (K x M) in the accumulator buffer, for [`DwSink::Drain`].
    pub dw_t: Blocked,
}

impl FcLayer {
    /// Operands from line 0 of their buffers; Y, dX and dW^T one after the
    /// other in the accumulator buffer.
    pub fn new(cfg: &ArrayConfig, m: usize, k: usize, n: usize) -> Self {
        let (r, c) = (cfg.rows(), cfg.cols());
        let at = |base, rows, cols, lanes| Blocked {
            base,
            rows,
            cols,
            lanes,
        };
        let y = at(0, m, n, c);
        let dx = at(y.end(), k, n, r);
        FcLayer {
            m,
            k,
            n,
            w: at(0, m, k, c),
            x: at(0, k, n, r),
            dy: at(0, m, n, c),
            y,
            dx,
            dw_t: at(dx.end(), k, m, r),
        }
    }
}

/// A size or address that does not fit its 16-bit command field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} = {value} does not fit a 16-bit command field")]
pub struct CompileError {
    pub what: &'static str,
    pub value: usize,
}

fn f16(what: &'static str, value: usize) -> Result<u16, CompileError> {
    u16::try_from(value).map_err(|_| CompileError { what, value })
}

/// `Y = W X`: per weight tile, LOAD_W then FORWARD, accumulating over K.
pub fn compile_forward(cfg: &ArrayConfig, l: &FcLayer) -> Result<Vec<Command>, CompileError> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let n = f16("n", l.n)?;
    let mut prog = Vec::new();
    for (m0, mt) in tiles(l.m, c) {
        for (k0, kt) in tiles(l.k, r) {
            prog.push(load(l, m0, mt, k0, kt)?);
            prog.push(Command::Forward {
                x_addr: f16("x address", l.x.line(k0, 0))?,
                y_addr: f16("y address", l.y.line(m0, 0))?,
                n,
                accumulate: k0 > 0,
                window: false,
            });
        }
    }
    Ok(prog)
}

/// The backward pass: per weight tile, LOAD_W, BACKWARD (accumulating dX
/// over M), then DRAIN or UPDATE; with UPDATE a final FLUSH_W writes the
/// last tile back.
pub fn compile_backward(
    cfg: &ArrayConfig,
    l: &FcLayer,
    schedule: Backward,
    sink: DwSink,
) -> Result<Vec<Command>, CompileError> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let mode = match schedule {
        Backward::Interleaved => BackwardMode::Interleaved,
        Backward::Sequential => BackwardMode::Sequential,
    };
    let n = f16("n", l.n)?;
    let mut prog = Vec::new();
    for (m0, mt) in tiles(l.m, c) {
        for (k0, kt) in tiles(l.k, r) {
            prog.push(load(l, m0, mt, k0, kt)?);
            prog.push(Command::Backward {
                mode,
                dy_addr: f16("dy address", l.dy.line(m0, 0))?,
                x_addr: f16("x address", l.x.line(k0, 0))?,
                dx_addr: f16("dx address", l.dx.line(k0, 0))?,
                n,
                accumulate: m0 > 0,
                window: false,
            });
            prog.push(match sink {
                DwSink::Drain => Command::Drain {
                    dw_addr: f16("dw address", l.dw_t.line(k0, m0))?,
                },
                DwSink::Update { lr_shift } => Command::Update {
                    // Out-of-range shifts are the controller's LR_SHIFT error.
                    lr_shift: lr_shift.min(255) as u8,
                },
            });
        }
    }
    if matches!(sink, DwSink::Update { .. }) {
        prog.push(Command::FlushW);
    }
    Ok(prog)
}

/// One training step of the layer: forward, backward, HALT.
pub fn compile_layer(
    cfg: &ArrayConfig,
    l: &FcLayer,
    schedule: Backward,
    sink: DwSink,
) -> Result<Vec<Command>, CompileError> {
    let mut prog = compile_forward(cfg, l)?;
    prog.extend(compile_backward(cfg, l, schedule, sink)?);
    prog.push(Command::Halt);
    Ok(prog)
}

fn load(l: &FcLayer, m0: usize, mt: usize, k0: usize, kt: usize) -> Result<Command, CompileError> {
    Ok(Command::LoadW {
        addr: f16("w address", l.w.line(m0, k0))?,
        m: mt as u16,
        k: kt as u16,
    })
}
