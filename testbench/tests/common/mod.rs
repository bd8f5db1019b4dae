//! Accelerator configurations the co-simulation tests share. The same
//! configuration gives the same Verilog, so the tests reuse one cached
//! Verilator build of each.

#![allow(dead_code)] // each test file uses some of them

use sysgrad_accel::*;
use sysgrad_config::{fixed, ArrayConfig, Backward, BufferDepths, NumberFormat};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_testbench::accel::{self, AccelModel, Setup};

fn accel(
    (rows, cols, backward): (usize, usize, Backward),
    (in_bits, acc_bits, frac_bits): (u32, u32, u32),
    [weights, activations, gradients, accumulators, commands]: [usize; 5],
) -> ArrayConfig {
    ArrayConfig::new(
        rows,
        cols,
        backward,
        NumberFormat {
            in_bits,
            acc_bits,
            frac_bits,
        },
    )
    .and_then(|cfg| {
        cfg.with_buffers(BufferDepths {
            weights,
            activations,
            gradients,
            accumulators,
            commands,
        })
    })
    .unwrap()
}

/// mid_8x8 (8 x 8 interleaved, i16 a40 f8) with small buffers; the
/// accumulator buffer holds Y, dX and the drained dW^T of a 100 x 70 layer
/// (configs/accel_8x8.toml).
pub fn square() -> ArrayConfig {
    accel(
        (8, 8, Backward::Interleaved),
        (16, 40, 8),
        [1024, 1024, 1024, 2048, 1024],
    )
}

/// `cfg` in the float format `weights`/`activations`/`gradients`, the
/// update rounding stochastically if `stochastic` (seed 7).
pub fn float(
    cfg: ArrayConfig,
    [weights, activations, gradients]: [sysgrad_config::float::FloatKind; 3],
    stochastic: bool,
) -> ArrayConfig {
    use sysgrad_config::float::{FloatFormat, Rounding};
    let format = FloatFormat {
        weights,
        activations,
        gradients,
        rounding: if stochastic {
            Rounding::Stochastic
        } else {
            Rounding::Nearest
        },
        seed: 7,
    };
    cfg.with_numbers(sysgrad_config::Numbers::Float(format))
        .unwrap()
}

/// `cfg` with the dense controller and array.
pub fn dense(cfg: ArrayConfig) -> ArrayConfig {
    cfg.with_pipelining(sysgrad_config::Pipelining::Dense)
        .unwrap()
}

/// seq_3x5 (3 x 5 sequential, i6 a16 f2): R != C, one multiplier per PE.
pub fn sequential() -> ArrayConfig {
    accel(
        (3, 5, Backward::Sequential),
        (6, 16, 2),
        [256, 256, 256, 256, 256],
    )
}

/// A small 3 x 2 interleaved array (i8 a20 f4), quick to build.
pub fn small() -> ArrayConfig {
    accel(
        (3, 2, Backward::Interleaved),
        (8, 20, 4),
        [64, 64, 64, 128, 256],
    )
}

/// Small deterministic data (|v| <= 8).
fn data(c: &ArrayConfig, seed: i64) -> impl FnMut(usize, usize) -> ndarray::Array2<i64> + '_ {
    let mut v = seed;
    move |rows, cols| {
        ndarray::Array2::from_shape_fn((rows, cols), |_| {
            v = (v * 37 + 11) % 251;
            fixed::sat(v % 17 - 8, c.format().in_bits)
        })
    }
}

/// `lines` lines of `lanes` small nonzero values.
pub fn junk(lines: usize, lanes: usize) -> Vec<Vec<i64>> {
    (0..lines)
        .map(|l| {
            (0..lanes)
                .map(|k| (l * 7 + k * 3) as i64 % 23 - 11)
                .collect()
        })
        .collect()
}

/// A training step of a 5 x 7 layer (N = 4) with REQUANT of the last Y
/// line after the FORWARD that writes it (the forwarding case: the REQUANT reads the line in the cycle it is
/// written). Small values (|v| <= 8), so that requantized sums do not all
/// saturate and a stale line reads differently from the new one.
pub fn training_step(c: &ArrayConfig) -> (Setup, Vec<u64>) {
    let layer = FcLayer::new(c, 5, 7, 4);
    let mut d = data(c, 7);
    let mut setup = Setup::default();
    setup
        .fill_blocked_padded(BufferId::Weights, &layer.w, d(5, 7).view(), 5)
        .fill_blocked_padded(BufferId::Activations, &layer.x, d(7, 4).view(), -9)
        .fill_blocked_padded(BufferId::Gradients, &layer.dy, d(5, 4).view(), 3)
        // Every line read back is written first: a buffer line nothing
        // wrote reads X under Icarus (sa_buffer's memory has no initial
        // value), 0 under Verilator and in the emulator.
        .fill(BufferId::Gradients, layer.dy.end(), vec![vec![-2, 6]])
        .fill(
            BufferId::Accumulators,
            0,
            junk(layer.dx.end().max(layer.y.end()), 3),
        )
        .compare_blocked(BufferId::Weights, &layer.w)
        .compare_blocked(BufferId::Accumulators, &layer.y)
        .compare_blocked(BufferId::Accumulators, &layer.dx)
        .compare(BufferId::Gradients, layer.dy.end(), 1);
    let mut prog = compile_forward(c, &layer).unwrap();
    prog.push(Command::Requant {
        src: layer.y.end() as u16 - 1,
        dst: DataBuffer::Gradients,
        dst_addr: layer.dy.end() as u16,
        count: 1,
    });
    prog.extend(
        compile_layer(
            c,
            &layer,
            Backward::Interleaved,
            DwSink::Update { lr_shift: 2 },
        )
        .unwrap(),
    );
    (setup, encode_program(&prog))
}

/// The Verilog of `cfg` with `from` replaced by `to` in `sa_accel.v` (a
/// fault injected on purpose); `from` must occur exactly once.
/// [`with_fault`] within the declaration of the wire `net` only (so that
/// the fault site does not spell out widths the generator derives).
pub fn with_fault_in(
    cfg: &ArrayConfig,
    net: &str,
    from: &str,
    to: &str,
) -> Vec<sysgrad_hdl::VerilogFile> {
    let text = sysgrad_hdl::generate(cfg)
        .into_iter()
        .find(|f| f.name == "sa_accel.v")
        .expect("sa_accel.v generated")
        .text;
    let line = sysgrad_hdl::wire_declaration(&text, net)
        .unwrap_or_else(|| panic!("no wire {net} in sa_accel.v"));
    assert!(line.contains(from), "`{from}` is not in `{line}`");
    with_fault(cfg, line, &line.replacen(from, to, 1))
}

pub fn with_fault(cfg: &ArrayConfig, from: &str, to: &str) -> Vec<sysgrad_hdl::VerilogFile> {
    let mut files = sysgrad_hdl::generate(cfg);
    let top = files
        .iter_mut()
        .find(|f| f.name == "sa_accel.v")
        .expect("sa_accel.v generated");
    assert_eq!(
        top.text.matches(from).count(),
        1,
        "the fault site `{from}` is not unique in sa_accel.v"
    );
    top.text = top.text.replace(from, to);
    files
}

/// ACT `func` from `src` into `dst` at `dst_addr`, `count` lines, `lanes`
/// lanes, reading the mask at `mask` (ignored unless `relu_grad`).
pub fn act(
    func: ActFunction,
    (src, dst, dst_addr, count): (u16, DataBuffer, u16, u16),
    mask: u16,
    lanes: u16,
) -> Command {
    Command::Act {
        func,
        src,
        dst,
        dst_addr,
        count,
        mask,
        lanes,
    }
}

/// Every lane of `dst` on `c`.
pub fn lanes_of(c: &ArrayConfig, dst: DataBuffer) -> u16 {
    match dst {
        DataBuffer::Activations => c.rows() as u16,
        DataBuffer::Gradients => c.cols() as u16,
    }
}

/// A program of every ACT function on a FORWARD's Y (both signs), on an
/// array with buffers of at least 64 lines: identity right after the
/// FORWARD that writes the line (the forwarding case), relu into the
/// activations on all lanes and on fewer (the lanes past `lanes` keep
/// their junk, as a bias row of ones would), relu_grad into the
/// gradients gated by that relu's output (written by the command before)
/// and by X itself (negative, zero and positive mask words), identity
/// with fewer lanes, ACT right after LOAD_W (never marked swap on the
/// dense controller), REQUANT between ACTs, SYNC, HALT. Every line the
/// commands write and the lines around them are compared.
pub fn act_program(c: &ArrayConfig) -> (Setup, Vec<u64>) {
    use ActFunction::*;
    use DataBuffer::*;
    let (r, cols) = (c.rows(), c.cols());
    let mut d = data(c, 13);
    let n = 6;
    let mut setup = Setup::default();
    let x: Vec<Vec<i64>> = d(n, r).rows().into_iter().map(|v| v.to_vec()).collect();
    let w: Vec<Vec<i64>> = d(r, cols).rows().into_iter().map(|v| v.to_vec()).collect();
    // X has zeros as well as both signs, so that a mask word of 0 gates.
    let x: Vec<Vec<i64>> = x
        .into_iter()
        .enumerate()
        .map(|(t, l)| {
            l.into_iter()
                .enumerate()
                .map(|(k, v)| if (t + k) % 4 == 0 { 0 } else { v })
                .collect()
        })
        .collect();
    let la = r.max(cols);
    setup
        .fill(BufferId::Weights, 0, w)
        .fill(BufferId::Activations, 0, x)
        .fill(BufferId::Activations, n, junk(64 - n, r))
        .fill(BufferId::Gradients, 0, junk(64, cols))
        .fill(BufferId::Accumulators, 0, junk(32, la))
        .compare(BufferId::Activations, 0, 64)
        .compare(BufferId::Gradients, 0, 64)
        .compare(BufferId::Accumulators, 0, 32);
    let (rl, cl) = (r as u16, cols as u16);
    let few = |l: u16| (l - 1).max(1);
    let fwd = |y_addr, acc| Command::Forward {
        x_addr: 0,
        y_addr,
        n: n as u16,
        accumulate: acc,
        window: false,
    };
    let load = Command::LoadW {
        addr: 0,
        m: cols as u16,
        k: r as u16,
    };
    let prog = [
        load,
        fwd(0, false),
        act(Identity, (n as u16 - 1, Gradients, 8, 1), 0, cl),
        act(Relu, (0, Activations, 10, n as u16), 0, rl),
        act(Relu, (0, Activations, 20, n as u16), 0, few(rl)),
        act(ReluGrad, (0, Gradients, 12, n as u16), 20, few(rl).min(cl)),
        act(ReluGrad, (0, Gradients, 20, n as u16), 0, rl.min(cl)),
        act(Identity, (2, Activations, 30, 3), 0, few(rl)),
        Command::Requant {
            src: 1,
            dst: Gradients,
            dst_addr: 30,
            count: 2,
        },
        act(Relu, (1, Gradients, 33, 4), 0, few(cl)),
        load,
        act(ReluGrad, (16, Gradients, 40, 8), 8, cl.min(rl)),
        fwd(16, true),
        act(Relu, (16, Activations, 40, n as u16), 0, rl),
        Command::Sync,
        Command::Halt,
    ];
    (setup, encode_program(&prog))
}

/// One Verilator build per configuration and test binary, shared by its
/// tests (and cached on disk across binaries).
pub fn model(c: ArrayConfig) -> &'static AccelModel {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static MODELS: OnceLock<Mutex<HashMap<String, &'static AccelModel>>> = OnceLock::new();
    let models = MODELS.get_or_init(Default::default);
    let key = format!("{c:?}");
    if let Some(m) = models.lock().expect("models").get(&key) {
        return m;
    }
    // Built outside the lock, so that tests on other configurations go on.
    let built: &'static AccelModel =
        Box::leak(Box::new(accel::build(&c).unwrap_or_else(|e| panic!("{e}"))));
    models.lock().expect("models").entry(key).or_insert(built)
}

/// LOAD_W of a whole tile at line 0, then a FORWARD of `n` lines from X
/// at line 0 into Y at line 0: real work before a command under test.
pub fn loaded_forward(c: &ArrayConfig, n: u16) -> [Command; 2] {
    [
        Command::LoadW {
            addr: 0,
            m: c.cols() as u16,
            k: c.rows() as u16,
        },
        Command::Forward {
            x_addr: 0,
            y_addr: 0,
            n,
            accumulate: false,
            window: false,
        },
    ]
}

/// A convolution for the address generator's tests: `c` input channels
/// (lanes of a pixel), `o` output channels, `images` images of `h x w`,
/// a `k x k` kernel.
#[derive(Clone, Copy, Debug)]
pub struct Conv {
    pub c: usize,
    pub o: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub stride: usize,
    pub pad: usize,
    pub images: usize,
}

impl Conv {
    /// A 3 x 3 convolution of two 5 x 6 images with as many channels as
    /// `cfg` takes (at most 3 in, 4 out).
    pub fn on(cfg: &ArrayConfig, stride: usize, pad: usize) -> Conv {
        Conv {
            c: cfg.rows().min(3),
            o: cfg.cols().min(4),
            h: 5,
            w: 6,
            k: 3,
            stride,
            pad,
            images: 2,
        }
    }
    pub fn oh(&self) -> usize {
        (self.h + 2 * self.pad - self.k) / self.stride + 1
    }
    pub fn ow(&self) -> usize {
        (self.w + 2 * self.pad - self.k) / self.stride + 1
    }
    /// Output positions of the stream: a pass's `n`.
    pub fn p(&self) -> usize {
        self.images * self.oh() * self.ow()
    }
    pub fn pixels(&self) -> usize {
        self.images * self.h * self.w
    }
    /// The input line under kernel element (ky, kx) at position t, if
    /// inside (the contract's formula, with a division).
    pub fn line(&self, t: usize, ky: usize, kx: usize) -> Option<usize> {
        let per = self.oh() * self.ow();
        let (img, oy, ox) = (t / per, (t % per) / self.ow(), t % self.ow());
        let iy = (oy * self.stride + ky) as i64 - self.pad as i64;
        let ix = (ox * self.stride + kx) as i64 - self.pad as i64;
        let inside = (0..self.h as i64).contains(&iy) && (0..self.w as i64).contains(&ix);
        inside.then(|| img * self.h * self.w + iy as usize * self.w + ix as usize)
    }
    pub fn elements(&self) -> Vec<(usize, usize)> {
        (0..self.k)
            .flat_map(|ky| (0..self.k).map(move |kx| (ky, kx)))
            .collect()
    }
    /// WINDOW for kernel element (ky, kx).
    pub fn window(&self, ky: usize, kx: usize) -> Command {
        let v = |x: usize| x as u16;
        Command::Window(Window {
            w: v(self.w),
            h: v(self.h),
            ow: v(self.ow()),
            oh: v(self.oh()),
            stride: v(self.stride),
            ky: v(ky),
            kx: v(kx),
            pad: v(self.pad),
            images: v(self.images),
        })
    }
}

/// Where a [`conv_case`] keeps everything (line addresses): activations:
/// the images, then each element's patches; accumulators: Y (windowed,
/// plain), dX (windowed, interleaved: the image's lines; plain: patch
/// lines per element), dW (windowed, plain, interleaved: `o` lines per
/// element).
#[derive(Debug)]
pub struct ConvLayout {
    pub image: usize,
    pub patches: usize,
    pub y_win: usize,
    pub y_col: usize,
    pub dx_win: usize,
    pub dx_il: usize,
    pub dx_col: usize,
    pub dw_win: usize,
    pub dw_col: usize,
    pub dw_il: usize,
    pub acc_end: usize,
}

impl ConvLayout {
    fn of(cv: &Conv) -> ConvLayout {
        let (p, e, px) = (cv.p(), cv.k * cv.k, cv.pixels());
        let mut at = 0;
        let mut take = |n: usize| {
            let a = at;
            at += n;
            a
        };
        let (y_win, y_col) = (take(p), take(p));
        let (dx_win, dx_il, dx_col) = (take(px), take(px), take(e * p));
        let (dw_win, dw_col, dw_il) = (take(e * cv.o), take(e * cv.o), take(e * cv.o));
        ConvLayout {
            image: 0,
            patches: px,
            y_win,
            y_col,
            dx_win,
            dx_il,
            dx_col,
            dw_win,
            dw_col,
            dw_il,
            acc_end: at,
        }
    }
}

/// A convolution on the accelerator both ways in one program: for each
/// kernel element, WINDOW, LOAD_W of the element's tile, a windowed
/// FORWARD (acc after the first element) and a plain one over the host's
/// im2col patches, a windowed DX (acc, into the zeroed image lines) and a
/// plain one into the element's patch gradients, a windowed and a plain
/// DW pass each DRAINed, a windowed INTERLEAVED pass DRAINed; HALT.
pub struct ConvCase {
    pub cv: Conv,
    pub layout: ConvLayout,
    /// What the buffers hold first: (buffer, line, lines).
    pub fills: Vec<(BufferId, usize, Vec<Vec<i64>>)>,
    pub program: Vec<Command>,
}

/// Small values from a seed, both signs.
fn conv_values(seed: u64, lines: usize, lanes: usize) -> Vec<Vec<i64>> {
    let mut v = seed;
    (0..lines)
        .map(|_| {
            (0..lanes)
                .map(|_| {
                    v = (v * 37 + 11) % 251;
                    (v % 15) as i64 - 7
                })
                .collect()
        })
        .collect()
}

pub fn conv_case(cfg: &ArrayConfig, cv: Conv) -> ConvCase {
    let (r, p) = (cfg.rows(), cv.p());
    let l = ConvLayout::of(&cv);
    let image = conv_values(5 + cv.stride as u64, cv.pixels(), cv.c);
    let mut fills = vec![
        (BufferId::Activations, l.image, image.clone()),
        (BufferId::Gradients, 0, conv_values(17, p, cv.o)),
    ];
    for (e, (ky, kx)) in cv.elements().into_iter().enumerate() {
        // The host's im2col: the input pixel under the element, or zeros.
        let patch = (0..p)
            .map(|t| {
                cv.line(t, ky, kx)
                    .map_or(vec![0; cv.c], |i| image[i].clone())
            })
            .collect();
        fills.push((BufferId::Activations, l.patches + e * p, patch));
        // Tile e: line e*R + c holds W_e[.][c] in lanes 0..o.
        fills.push((
            BufferId::Weights,
            e * r,
            conv_values(29 + e as u64, cv.c, cv.o),
        ));
    }
    // Y and plain dX hold junk (overwritten); the windowed dX images start
    // at 0 (every element accumulates into them).
    let la = r.max(cfg.cols());
    let mut acc = conv_values(3, l.acc_end, la);
    for line in &mut acc[l.dx_win..l.dx_col] {
        *line = vec![0; la];
    }
    fills.push((BufferId::Accumulators, 0, acc));
    let a16 = |x: usize| x as u16;
    let n = a16(p);
    let mut program = Vec::new();
    for (e, (ky, kx)) in cv.elements().into_iter().enumerate() {
        let patches = a16(l.patches + e * p);
        let fwd = |x_addr, y_addr, window| Command::Forward {
            x_addr,
            y_addr,
            n,
            accumulate: e > 0,
            window,
        };
        let bwd = |mode, x_addr, dx_addr, window: bool| Command::Backward {
            mode,
            dy_addr: 0,
            x_addr,
            dx_addr,
            n,
            accumulate: window,
            window,
        };
        let drain = |at: usize| Command::Drain {
            dw_addr: a16(at + e * cv.o),
        };
        use BackwardMode::*;
        program.extend([
            cv.window(ky, kx),
            Command::LoadW {
                addr: a16(e * r),
                m: a16(cv.o),
                k: a16(cv.c),
            },
            fwd(a16(l.image), a16(l.y_win), true),
            fwd(patches, a16(l.y_col), false),
            bwd(Dx, 0, a16(l.dx_win), true),
            bwd(Dx, 0, a16(l.dx_col + e * p), false),
            bwd(Dw, a16(l.image), 0, true),
            drain(l.dw_win),
            bwd(Dw, patches, 0, false),
            drain(l.dw_col),
            bwd(Interleaved, a16(l.image), a16(l.dx_il), true),
            drain(l.dw_il),
        ]);
    }
    program.push(Command::Halt);
    ConvCase {
        cv,
        layout: l,
        fills,
        program,
    }
}

impl ConvCase {
    /// The fills, and every accumulator line the program uses compared.
    pub fn setup(&self) -> Setup {
        let mut s = Setup::default();
        for (b, at, lines) in &self.fills {
            s.fill(*b, *at, lines.clone());
        }
        s.compare(BufferId::Accumulators, 0, self.layout.acc_end);
        s
    }
}

/// [`conv_case`] with stride 2 and padding 1 on `c`, for co-simulation:
/// the whole accumulator buffer filled and compared (a dX written at a
/// padding position lands at a line far from the image's).
pub fn conv_program(c: &ArrayConfig) -> (Setup, Vec<u64>) {
    let mut case = conv_case(c, Conv::on(c, 2, 1));
    let depth = c.buffers().accumulators;
    let end = case.layout.acc_end;
    let la = c.rows().max(c.cols());
    case.fills
        .push((BufferId::Accumulators, end, junk(depth - end, la)));
    let mut setup = case.setup();
    setup.compare(BufferId::Accumulators, end, depth - end);
    (setup, encode_program(&case.program))
}

/// The 3 x 2 array of [`small`] with buffers that hold a [`conv_program`]
/// (its images and im2col patches, its Y, dX and dW lines).
pub fn conv_small() -> ArrayConfig {
    accel(
        (3, 2, Backward::Interleaved),
        (8, 20, 4),
        [64, 512, 64, 512, 512],
    )
}
