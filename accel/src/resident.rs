//! Dense layers whose operands stay on chip for a whole training step
//! (issue 31, item 2): each layer owns an X region in the activation buffer
//! (blocked by R, with the bias row of ones the host writes once) and a dY
//! region in the gradient buffer (blocked by C), allocated across the
//! network by its compiler. The forward product writes its output where
//! the next layer reads its input (`ACT relu` into the next X region), the
//! backward product writes the previous layer's dY (`ACT relu_grad`, the
//! mask being this layer's X region, which holds the ReLU's output), so
//! neither crosses the host link.
//!
//! Tiles run in `gemm`'s order (the forward pass adds an M block's K tiles
//! in K order, the backward pass a K block's M tiles in M order, each tile
//! updated in the PEs after its own pass), so the bits are `gemm`'s. The
//! accumulator buffer holds Y or dX of the product from line 0 (it is
//! scratch: nothing in it outlives a product).

use crate::command::{ActFunction, BackwardMode, Command, DataBuffer};
use crate::device::{Device, DeviceError};
use crate::layout::Blocked;
use crate::schedule::{a16, requant, run_commands, FIELD_MAX};
use sysgrad_emulator::gemm::tiles;

/// A layer's two regions (lines of the activation and gradient buffers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// X with its bias row: K x N, R lanes.
    pub x: Blocked,
    /// dY: M x N, C lanes.
    pub dy: Blocked,
}

/// Where a forward product's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardEnd {
    /// ReLU by ACT into rows `0..M` of the next layer's X region (its bias
    /// row, in lanes ACT does not write, stays).
    Relu { next_x: Blocked },
    /// Requantized (REQUANT) into the layer's own dY region, for the host
    /// to read (the last layer: the loss is on the host, whose dY then
    /// takes the same lines).
    Requant,
}

/// Where a backward product's dX goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackwardEnd {
    /// The ReLU's gate by ACT into the previous layer's dY region, masked
    /// by this layer's X region (rows `0..K-1`: the bias row has no
    /// gradient to pass on).
    ReluGrad { prev_dy: Blocked },
    /// Requantized over this layer's X region (X is not needed again in
    /// the step), for the host to read.
    Requant,
    /// Not wanted (no earlier layer learns).
    Discard,
}

/// The ACTs of a blocked M x N result (C lanes) at accumulator line `src`
/// into `dst` (same blocking, so R = C): one per block, writing only the
/// block's rows.
fn act_blocks(
    func: ActFunction,
    (src, dst): (usize, &Blocked),
    to: DataBuffer,
    mask: Option<usize>,
) -> Vec<Command> {
    let n = dst.cols;
    assert!(n <= FIELD_MAX, "a stream of at most {FIELD_MAX} columns");
    (0..dst.blocks())
        .map(|b| Command::Act {
            func,
            src: a16(src + b * n),
            dst: to,
            dst_addr: a16(dst.base + b * n),
            count: n as u16,
            mask: a16(mask.map_or(0, |m| m + b * n)),
            lanes: dst.lanes.min(dst.rows - b * dst.lanes) as u16,
        })
        .collect()
}

fn load(w: &Blocked, m0: usize, mt: usize, k0: usize, kt: usize) -> Command {
    Command::LoadW {
        addr: a16(w.line(m0, k0)),
        m: mt as u16,
        k: kt as u16,
    }
}

/// `Y = W X` with W at `w` and X in its region; Y to `end`.
pub fn forward(
    dev: &mut Device,
    w: &Blocked,
    r: &Regions,
    end: &ForwardEnd,
) -> Result<(), DeviceError> {
    let cfg = dev.cfg();
    let (rows, cols, n) = (cfg.rows(), cfg.cols(), r.x.cols);
    let y = Blocked {
        base: 0,
        rows: w.rows,
        cols: n,
        lanes: cols,
    };
    let mut cmds = Vec::new();
    for (m0, mt) in tiles(w.rows, cols) {
        for (k0, kt) in tiles(w.cols, rows) {
            cmds.push(load(w, m0, mt, k0, kt));
            cmds.push(Command::Forward {
                x_addr: a16(r.x.line(k0, 0)),
                y_addr: a16(y.line(m0, 0)),
                n: n as u16,
                accumulate: k0 > 0,
                window: false,
            });
        }
    }
    match end {
        ForwardEnd::Relu { next_x } => {
            let rows_of_y = Blocked {
                rows: w.rows,
                ..*next_x
            };
            cmds.extend(act_blocks(
                ActFunction::Relu,
                (y.base, &rows_of_y),
                DataBuffer::Activations,
                None,
            ));
        }
        ForwardEnd::Requant => {
            requant(
                &mut cmds,
                y.base,
                DataBuffer::Gradients,
                r.dy.base,
                y.lines(),
            );
        }
    }
    run_commands(dev, &cmds)
}

/// The backward pass with dY and X in their regions, each tile's W updated
/// in the PEs (`lr_shift`), dX to `end`.
pub fn backward(
    dev: &mut Device,
    w: &Blocked,
    r: &Regions,
    (mode, lr_shift): (BackwardMode, u8),
    end: &BackwardEnd,
) -> Result<(), DeviceError> {
    let cfg = dev.cfg();
    let (rows, cols, n) = (cfg.rows(), cfg.cols(), r.x.cols);
    let dx = Blocked {
        base: 0,
        rows: w.cols,
        cols: n,
        lanes: rows,
    };
    let mut cmds = Vec::new();
    for (m0, mt) in tiles(w.rows, cols) {
        for (k0, kt) in tiles(w.cols, rows) {
            cmds.push(load(w, m0, mt, k0, kt));
            cmds.push(Command::Backward {
                mode,
                dy_addr: a16(r.dy.line(m0, 0)),
                x_addr: a16(r.x.line(k0, 0)),
                dx_addr: a16(dx.line(k0, 0)),
                n: n as u16,
                accumulate: m0 > 0,
                window: false,
            });
            cmds.push(Command::Update { lr_shift });
        }
    }
    cmds.push(Command::FlushW);
    match end {
        BackwardEnd::ReluGrad { prev_dy } => cmds.extend(act_blocks(
            ActFunction::ReluGrad,
            (dx.base, prev_dy),
            DataBuffer::Gradients,
            Some(r.x.base),
        )),
        BackwardEnd::Requant => requant(
            &mut cmds,
            dx.base,
            DataBuffer::Activations,
            r.x.base,
            dx.lines(),
        ),
        BackwardEnd::Discard => {}
    }
    run_commands(dev, &cmds)
}

/// The blocks of `lay` (`None` for all) whose rows of `new` differ from
/// `held`, as layouts of their own with the rows they hold: what a DMA must
/// send so that the region holds `new`.
pub fn changed_blocks(
    lay: &Blocked,
    held: Option<&ndarray::Array2<i64>>,
    new: ndarray::ArrayView2<i64>,
) -> Vec<(Blocked, std::ops::Range<usize>)> {
    (0..lay.blocks())
        .map(|b| {
            let rows = b * lay.lanes..lay.rows.min((b + 1) * lay.lanes);
            let sub = Blocked {
                base: lay.base + b * lay.cols,
                rows: rows.len(),
                cols: lay.cols,
                lanes: lay.lanes,
            };
            (sub, rows)
        })
        .filter(|(_, rows)| {
            held.is_none_or(|h| {
                h.dim() != new.dim()
                    || h.slice(ndarray::s![rows.clone(), ..])
                        != new.slice(ndarray::s![rows.clone(), ..])
            })
        })
        .collect()
}
