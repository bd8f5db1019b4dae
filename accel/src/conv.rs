//! Command programs for a convolution layer on the address generator
//! (`docs/COMMANDS.md`: WINDOW and the windowed FORWARD and BACKWARD), so
//! that the host sends images instead of im2col patch matrices.
//!
//! The input image lives in the activation buffer one pixel per line, a
//! channel per lane (`Blocked` with `rows` = channels, `cols` = pixels of
//! all images, `lanes` = R: channels past R take further blocks of lines),
//! with one more channel of ones: the bias input. The output Y and its
//! gradient dY are the `c_out x positions` matrices of the im2col GEMM
//! (column `(img * oh + oy) * ow + ox`), blocked by C.
//!
//! A convolution is the sum over its *taps* (a kernel element and a block
//! of input channels) of windowed passes, each with the weight tile of
//! that element (`W[o][c]`):
//!
//! * forward: per block of output channels, per tap: LOAD_W, WINDOW (when
//!   the element changes), FORWARD `win = 1`, accumulating after the first;
//! * backward: per block of output channels, per tap: LOAD_W, WINDOW,
//!   BACKWARD `win = 1` (interleaved or sequential), then DRAIN (dW of the
//!   tap, for the host's optimizer) or UPDATE (in the PEs), FLUSH_W at the
//!   end. dX is accumulated into the input image's lines (col2im by
//!   accumulation): the first pass into a block of them writes (`acc = 0`)
//!   and must reach every pixel, so the taps of a *covering* element (one
//!   whose window reaches every pixel: stride 1 and a padding that lets
//!   the kernel's element sit on every pixel, e.g. the centre of a "same"
//!   convolution) go first; where no element covers, DX passes of a zero
//!   tile clear the lines first.
//!
//! The bias is the ones channel (index `c_in`) under the **bias element**,
//! a kernel element that is inside the image at every output position
//! (the centre, when the padding is at most half the kernel), so that its
//! product is `W[o][bias] * 1` at every position, exactly the im2col bias
//! row. It is the last element of the weight layout, so its tiles take
//! the bias line right after their channels' lines.
//!
//! The weights of element `p` (in [`ConvLayer::elements`] order) for
//! channel `c` are weight column `p * c_in + c` (a line per column, a lane
//! per output channel, [`Blocked`] by C); the bias is column `k * k * c_in`,
//! and R zero columns follow it when the layer needs the zero tile.
//!
//! The sums differ in order from the im2col GEMM only in how a pixel's
//! terms are grouped; with accumulators wide enough that no partial sum
//! saturates (the digits models: 40 bits, at most 2^30 per product) they
//! are the same numbers, and dW (one pass per tap over the positions in
//! order) is exactly the GEMM's.

use super::command::{BackwardMode, Command, DataBuffer};
use super::layout::Blocked;
use super::schedule::requant;
use super::window::Window;
use ndarray::{Array2, ArrayView2, ArrayView4};
use serde::Serialize;
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::gemm::{tiles, DwSink};
use sysgrad_isa::command::{field, Field};

/// A convolution: square kernel, the same stride and padding on both axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConvShape {
    pub c_in: usize,
    pub c_out: usize,
    /// Input height and width in pixels.
    pub h: usize,
    pub w: usize,
    pub kernel: usize,
    pub stride: usize,
    pub pad: usize,
    /// Images in the batch (one after another in the buffers).
    pub images: usize,
}

/// Why a convolution cannot run on the address generator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
pub enum ConvError {
    #[error("{what} = {value} does not fit its command field (at most {max})")]
    Field {
        what: &'static str,
        value: usize,
        max: usize,
    },
    #[error("{what} is 0")]
    Zero { what: &'static str },
    #[error(
        "the kernel ({kernel}) is larger than the padded image ({h} x {w} with padding {pad})"
    )]
    KernelTooLarge {
        kernel: usize,
        h: usize,
        w: usize,
        pad: usize,
    },
    #[error(
        "no kernel element is inside the image at every output position (padding {pad} > \
         half the kernel {kernel}), so the bias has no element to ride on"
    )]
    NoBiasElement { kernel: usize, pad: usize },
    #[error(
        "the accelerator has no address generator (units.window = false in its config), so \
         WINDOW would fault NO_GENERATOR"
    )]
    NoGenerator,
}

fn fits(what: &'static str, value: usize, max: usize) -> Result<(), ConvError> {
    if value > max {
        return Err(ConvError::Field { what, value, max });
    }
    Ok(())
}

/// Output positions along an axis of `size` inputs of a convolution with
/// `kernel`, `stride` and `pad` on both sides (the kernel fits the padded
/// axis): the one definition the compiler, the models and the networks use.
pub fn out_size(size: usize, kernel: usize, stride: usize, pad: usize) -> usize {
    (size + 2 * pad - kernel) / stride + 1
}

impl ConvShape {
    pub fn out_h(&self) -> usize {
        out_size(self.h, self.kernel, self.stride, self.pad)
    }
    pub fn out_w(&self) -> usize {
        out_size(self.w, self.kernel, self.stride, self.pad)
    }
    /// Output positions of the batch: the stream length of every pass.
    pub fn positions(&self) -> usize {
        self.images * self.out_h() * self.out_w()
    }
    /// Input pixels of the batch: the lines of one block of the image.
    pub fn pixels(&self) -> usize {
        self.images * self.h * self.w
    }
    /// Columns of the host's weight matrix: `c_in * k * k` filter taps
    /// (column `(c * k + ky) * k + kx`), then the bias.
    pub fn host_cols(&self) -> usize {
        self.c_in * self.kernel * self.kernel + 1
    }

    /// Whether element `(ky, kx)` is inside the image at every output
    /// position.
    fn always_inside(&self, ky: usize, kx: usize) -> bool {
        let axis = |k: usize, out: usize, len: usize| {
            k >= self.pad && (out - 1) * self.stride + k - self.pad < len
        };
        axis(ky, self.out_h(), self.h) && axis(kx, self.out_w(), self.w)
    }

    /// Whether element `(ky, kx)`'s window reaches every input pixel.
    fn covers(&self, ky: usize, kx: usize) -> bool {
        let axis = |k: usize, out: usize, len: usize| {
            self.stride == 1 && k <= self.pad && out - 1 + k >= len - 1 + self.pad
        };
        axis(ky, self.out_h(), self.h) && axis(kx, self.out_w(), self.w)
    }

    /// The element the bias rides on: the centre if it is always inside,
    /// else the first element that is.
    pub fn bias_element(&self) -> Option<(usize, usize)> {
        self.first_element(|y, x| self.always_inside(y, x))
    }

    /// An element whose window reaches every pixel (the centre first).
    pub fn covering_element(&self) -> Option<(usize, usize)> {
        self.first_element(|y, x| self.covers(y, x))
    }

    /// The centre if `ok` holds for it, else the first element, row by
    /// row, for which it does.
    fn first_element(&self, ok: impl Fn(usize, usize) -> bool) -> Option<(usize, usize)> {
        let (k, c) = (self.kernel, self.kernel / 2);
        let all = (0..k).flat_map(|y| (0..k).map(move |x| (y, x)));
        std::iter::once((c, c)).chain(all).find(|&(y, x)| ok(y, x))
    }

    /// Checks every WINDOW field and stream length against the command
    /// format.
    pub fn check(&self) -> Result<(), ConvError> {
        let max = |f: Field| f.max() as usize;
        for (what, v, f) in [
            ("image width", self.w, field::WIN_W),
            ("image height", self.h, field::WIN_H),
            ("stride", self.stride, field::WIN_STRIDE),
            ("kernel - 1", self.kernel.saturating_sub(1), field::WIN_KY),
            ("padding", self.pad, field::WIN_PAD),
            ("images", self.images, field::WIN_IMAGES),
        ] {
            fits(what, v, max(f))?;
        }
        for (what, v) in [
            ("image width", self.w),
            ("image height", self.h),
            ("stride", self.stride),
            ("kernel", self.kernel),
            ("images", self.images),
            ("input channels", self.c_in),
            ("output channels", self.c_out),
        ] {
            if v == 0 {
                return Err(ConvError::Zero { what });
            }
        }
        if self.kernel > self.h + 2 * self.pad || self.kernel > self.w + 2 * self.pad {
            return Err(ConvError::KernelTooLarge {
                kernel: self.kernel,
                h: self.h,
                w: self.w,
                pad: self.pad,
            });
        }
        fits("output width", self.out_w(), max(field::WIN_OW))?;
        fits("output height", self.out_h(), max(field::WIN_OH))?;
        fits(
            "positions (images x oh x ow)",
            self.positions(),
            max(field::LENGTH),
        )?;
        if self.bias_element().is_none() {
            return Err(ConvError::NoBiasElement {
                kernel: self.kernel,
                pad: self.pad,
            });
        }
        Ok(())
    }
}

/// One windowed pass's operands: kernel element `(ky, kx)` over input
/// channels `c0..c0 + kt` (the ones channel `c_in` included on the bias
/// element), whose weights are columns `col..col + kt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tap {
    pub ky: usize,
    pub kx: usize,
    pub c0: usize,
    pub kt: usize,
    pub col: usize,
    /// Index in [`ConvLayer::taps`] (where its drained dW goes).
    pub index: usize,
}

/// Where a convolution's operands live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvLayer {
    pub shape: ConvShape,
    /// Weights: `c_out` rows, a column per line ([`ConvLayer::w_cols`]).
    pub w: Blocked,
    /// The image and its ones channel: `c_in + 1` rows, a pixel per line.
    pub image: Blocked,
    /// dY: `c_out x positions`, C lanes.
    pub dy: Blocked,
    /// Y: `c_out x positions` in the accumulators, C lanes.
    pub y: Blocked,
    /// dX of the image (and of its ones channel, unused), R lanes.
    pub dx: Blocked,
    /// First accumulator line of the drained dW: tap `i`'s dW^T at lines
    /// `dw + i * c_out + o`, lane `c` for channel `c0 + c`.
    pub dw: usize,
}

/// First lines of a convolution's operands in their buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bases {
    pub weights: usize,
    pub image: usize,
    pub dy: usize,
    /// Y, and in the backward pass dX then dW (scratch: neither outlives
    /// its product).
    pub accumulators: usize,
}

impl ConvLayer {
    pub fn new(cfg: &ArrayConfig, shape: ConvShape, at: Bases) -> Result<Self, ConvError> {
        if !cfg.has_window() {
            return Err(ConvError::NoGenerator);
        }
        shape.check()?;
        let (r, c) = (cfg.rows(), cfg.cols());
        let zero_cols = if shape.covering_element().is_some() {
            0
        } else {
            r
        };
        let lay = |base, rows, cols, lanes| Blocked {
            base,
            rows,
            cols,
            lanes,
        };
        let (pos, pix) = (shape.positions(), shape.pixels());
        let dx = lay(at.accumulators, shape.c_in + 1, pix, r);
        Ok(ConvLayer {
            shape,
            w: lay(at.weights, shape.c_out, shape.host_cols() + zero_cols, c),
            image: lay(at.image, shape.c_in + 1, pix, r),
            dy: lay(at.dy, shape.c_out, pos, c),
            y: lay(at.accumulators, shape.c_out, pos, c),
            dx,
            dw: dx.end(),
        })
    }

    /// Every operand from line 0 of its buffer.
    pub fn at_zero(cfg: &ArrayConfig, shape: ConvShape) -> Result<Self, ConvError> {
        Self::new(cfg, shape, Bases::default())
    }

    /// The kernel elements in weight-column order: row by row, the bias
    /// element last.
    pub fn elements(&self) -> Vec<(usize, usize)> {
        let k = self.shape.kernel;
        let bias = self.shape.bias_element().expect("checked in new");
        let mut e: Vec<_> = (0..k)
            .flat_map(|y| (0..k).map(move |x| (y, x)))
            .filter(|&p| p != bias)
            .collect();
        e.push(bias);
        e
    }

    /// The forward pass's taps: element by element, channel blocks in order.
    pub fn taps(&self, cfg: &ArrayConfig) -> Vec<Tap> {
        let s = &self.shape;
        let bias = s.bias_element().expect("checked in new");
        let mut taps = Vec::new();
        for (p, (ky, kx)) in self.elements().into_iter().enumerate() {
            let channels = s.c_in + usize::from((ky, kx) == bias);
            for (c0, kt) in tiles(channels, cfg.rows()) {
                taps.push(Tap {
                    ky,
                    kx,
                    c0,
                    kt,
                    col: p * s.c_in + c0,
                    index: taps.len(),
                });
            }
        }
        taps
    }

    /// The backward pass's taps: those of the covering element first, so
    /// that the first dX pass into each block of pixels writes all of it.
    pub fn backward_taps(&self, cfg: &ArrayConfig) -> Vec<Tap> {
        let mut taps = self.taps(cfg);
        if let Some(cover) = self.shape.covering_element() {
            taps.sort_by_key(|t| (t.ky, t.kx) != cover);
        }
        taps
    }

    /// The weight column of the first zero line (only when no element
    /// covers every pixel).
    fn zero_col(&self) -> Option<usize> {
        (self.w.cols > self.shape.host_cols()).then_some(self.shape.host_cols())
    }

    /// Pairs (weight-buffer column, host column) of every weight: element
    /// `p`'s channel `c` and the bias.
    fn columns(&self) -> Vec<(usize, usize)> {
        let s = &self.shape;
        let mut cols = Vec::with_capacity(s.host_cols());
        for (p, (ky, kx)) in self.elements().into_iter().enumerate() {
            cols.extend((0..s.c_in).map(|c| (p * s.c_in + c, self.host_col(c, ky, kx))));
        }
        let bias = s.host_cols() - 1;
        cols.push((bias, bias));
        cols
    }

    /// The weight matrix the buffer holds, from the host's (`c_out x
    /// (c_in k k + 1)`, im2col's column order, bias last); the zero
    /// columns, if any, after them.
    pub fn chip_weights(&self, host: ArrayView2<i64>) -> Array2<i64> {
        let s = &self.shape;
        assert_eq!(
            host.dim(),
            (s.c_out, s.host_cols()),
            "W is c_out x (c_in k k + 1)"
        );
        let mut chip = Array2::zeros((s.c_out, self.w.cols));
        for (on_chip, on_host) in self.columns() {
            chip.column_mut(on_chip).assign(&host.column(on_host));
        }
        chip
    }

    /// The host's weight matrix from the one the buffer holds (the inverse
    /// of [`ConvLayer::chip_weights`]).
    pub fn host_weights(&self, chip: ArrayView2<i64>) -> Array2<i64> {
        let s = &self.shape;
        assert_eq!(
            chip.dim(),
            (s.c_out, self.w.cols),
            "the layer's weight lines"
        );
        let mut host = Array2::zeros((s.c_out, s.host_cols()));
        for (on_chip, on_host) in self.columns() {
            host.column_mut(on_host).assign(&chip.column(on_chip));
        }
        host
    }

    /// The host's column of channel `ch` (the ones channel: the bias) under
    /// element `(ky, kx)`.
    fn host_col(&self, ch: usize, ky: usize, kx: usize) -> usize {
        let k = self.shape.kernel;
        if ch == self.shape.c_in {
            self.shape.host_cols() - 1
        } else {
            (ch * k + ky) * k + kx
        }
    }

    /// Where tap `t`'s drained dW^T is: `kt` rows (lanes), `c_out` lines.
    pub fn dw_tap(&self, cfg: &ArrayConfig, t: &Tap) -> Blocked {
        Blocked {
            base: self.dw + t.index * self.shape.c_out,
            rows: t.kt,
            cols: self.shape.c_out,
            lanes: cfg.rows(),
        }
    }

    /// dW in the host's order (`c_out x (c_in k k + 1)`) from each tap's
    /// drained dW^T (`kt x c_out`, as [`ConvLayer::dw_tap`] lays it out).
    pub fn host_dw(&self, cfg: &ArrayConfig, tap_dw: impl Fn(&Tap) -> Array2<i64>) -> Array2<i64> {
        let s = &self.shape;
        let mut dw = Array2::zeros((s.c_out, s.host_cols()));
        for t in self.taps(cfg) {
            let part = tap_dw(&t);
            assert_eq!(part.dim(), (t.kt, s.c_out), "a tap's dW^T is kt x c_out");
            for c in 0..t.kt {
                dw.column_mut(self.host_col(t.c0 + c, t.ky, t.kx))
                    .assign(&part.row(c));
            }
        }
        dw
    }

    /// The image rows the activation buffer holds (`c_in + 1` x pixels)
    /// from `x` (channel, image, row, column): pixel `(img, y, x)` is
    /// column `(img * h + y) * w + x`; the last row is `one`.
    pub fn image_rows(&self, x: ArrayView4<i64>, one: i64) -> Array2<i64> {
        let s = &self.shape;
        assert_eq!(x.dim(), (s.c_in, s.images, s.h, s.w), "X is (c, n, h, w)");
        let mut rows = Array2::from_elem((s.c_in + 1, s.pixels()), one);
        for c in 0..s.c_in {
            let plane = x.index_axis(ndarray::Axis(0), c);
            for (dst, &v) in rows.row_mut(c).iter_mut().zip(plane.iter()) {
                *dst = v;
            }
        }
        rows
    }

    /// The window of element `(ky, kx)` over the whole batch.
    fn window(&self, ky: usize, kx: usize) -> Command {
        let s = &self.shape;
        Command::Window(Window {
            w: s.w as u16,
            h: s.h as u16,
            ow: s.out_w() as u16,
            oh: s.out_h() as u16,
            stride: s.stride as u16,
            ky: ky as u16,
            kx: kx as u16,
            pad: s.pad as u16,
            images: s.images as u16,
        })
    }
}

/// Appends WINDOW for `t`'s element unless it is the one set already.
fn set_window(prog: &mut Vec<Command>, set: &mut Option<(usize, usize)>, l: &ConvLayer, t: &Tap) {
    if *set != Some((t.ky, t.kx)) {
        prog.push(l.window(t.ky, t.kx));
        *set = Some((t.ky, t.kx));
    }
}

fn a16(v: usize) -> u16 {
    u16::try_from(v).expect("line addresses are below the 65536-line depth limit")
}

fn load(l: &ConvLayer, m0: usize, mt: usize, col: usize, kt: usize) -> Command {
    Command::LoadW {
        addr: a16(l.w.line(m0, col)),
        m: mt as u16,
        k: kt as u16,
    }
}

/// `Y = conv(W, X)` into `l.y` (raw accumulators): per block of output
/// channels, per tap, LOAD_W, WINDOW, windowed FORWARD.
pub fn compile_forward(cfg: &ArrayConfig, l: &ConvLayer) -> Vec<Command> {
    let n = l.shape.positions() as u16;
    let taps = l.taps(cfg);
    let mut prog = Vec::new();
    let mut set = None;
    for (m0, mt) in tiles(l.shape.c_out, cfg.cols()) {
        for (i, t) in taps.iter().enumerate() {
            prog.push(load(l, m0, mt, t.col, t.kt));
            set_window(&mut prog, &mut set, l, t);
            prog.push(Command::Forward {
                x_addr: a16(l.image.line(t.c0, 0)),
                y_addr: a16(l.y.line(m0, 0)),
                n,
                accumulate: i > 0,
                window: true,
            });
        }
    }
    prog
}

/// DX passes of the zero tile over every block of `l.dx` (when no element
/// covers every pixel): the lines the windowed DX passes then add into.
fn clear_dx(cfg: &ArrayConfig, l: &ConvLayer, col: usize, prog: &mut Vec<Command>) {
    // The dY region's lines are read, their values do not matter.
    let chunk = l.dy.lines().min(field::LENGTH.max() as usize);
    for (c0, kt) in tiles(l.dx.rows, cfg.rows()) {
        prog.push(load(l, 0, 1, col, kt));
        for (off, len) in tiles(l.dx.cols, chunk) {
            prog.push(Command::Backward {
                mode: BackwardMode::Dx,
                dy_addr: a16(l.dy.base),
                x_addr: 0,
                dx_addr: a16(l.dx.line(c0, 0) + off),
                n: len as u16,
                accumulate: false,
                window: false,
            });
        }
    }
}

/// The backward pass: dX (raw accumulators) into `l.dx`, dW drained to
/// `l.dw` (per tap, [`ConvLayer::dw_tap`]) or applied in the PEs.
pub fn compile_backward(
    cfg: &ArrayConfig,
    l: &ConvLayer,
    mode: BackwardMode,
    sink: DwSink,
) -> Vec<Command> {
    let n = l.shape.positions() as u16;
    let taps = l.backward_taps(cfg);
    let mut prog = Vec::new();
    if let Some(col) = l.zero_col() {
        clear_dx(cfg, l, col, &mut prog);
    }
    let mut written = vec![l.zero_col().is_some(); l.dx.blocks()];
    let mut set = None;
    for (m0, mt) in tiles(l.shape.c_out, cfg.cols()) {
        for t in &taps {
            prog.push(load(l, m0, mt, t.col, t.kt));
            set_window(&mut prog, &mut set, l, t);
            let block = t.c0 / cfg.rows();
            prog.push(Command::Backward {
                mode,
                dy_addr: a16(l.dy.line(m0, 0)),
                x_addr: a16(l.image.line(t.c0, 0)),
                dx_addr: a16(l.dx.line(t.c0, 0)),
                n,
                accumulate: written[block],
                window: true,
            });
            written[block] = true;
            prog.push(match sink {
                DwSink::Drain => Command::Drain {
                    dw_addr: a16(l.dw_tap(cfg, t).base + m0),
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
    prog
}

/// The forward pass with Y requantized (REQUANT) into the dY region, where
/// the host reads it (the region is free until the backward pass).
pub fn forward_program(cfg: &ArrayConfig, l: &ConvLayer) -> Vec<Command> {
    let mut prog = compile_forward(cfg, l);
    requant(
        &mut prog,
        l.y.base,
        DataBuffer::Gradients,
        l.dy.base,
        l.y.lines(),
    );
    prog
}

/// The backward pass with dX (if `keep_dx`) requantized over the image's
/// region (the image is not needed again in the step), where the host
/// reads it: the blocks of the input channels, not a block that holds
/// only the ones channel.
pub fn backward_program(
    cfg: &ArrayConfig,
    l: &ConvLayer,
    (mode, sink): (BackwardMode, DwSink),
    keep_dx: bool,
) -> Vec<Command> {
    let mut prog = compile_backward(cfg, l, mode, sink);
    if keep_dx {
        let channels = Blocked {
            rows: l.shape.c_in,
            ..l.dx
        };
        requant(
            &mut prog,
            l.dx.base,
            DataBuffer::Activations,
            l.image.base,
            channels.lines(),
        );
    }
    prog
}
