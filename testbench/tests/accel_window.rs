//! The convolution address generator (`docs/COMMANDS.md`, WINDOW and
//! Windowed FORWARD and BACKWARD) on the RTL alone: a 3 x 3 convolution
//! of two 5 x 6 images of 3 channels into 4, as a sum of windowed passes
//! over the kernel elements, against the same convolution through plain
//! passes over patches the host built (im2col) and a host-side col2im of
//! plain DX passes. Both run in one program on the same hardware; the
//! lines read back must be equal:
//!
//! * Y: windowed FORWARDs (acc = 1 after the first element) and plain
//!   FORWARDs over the patches;
//! * dX: windowed DX passes (acc = 1) into the image's lines, and the
//!   host's col2im of plain DX passes' patch gradients; and the dX of
//!   windowed INTERLEAVED passes;
//! * dW of each kernel element: a windowed DW pass and a plain one over
//!   the patches (DRAINed), and the windowed INTERLEAVED pass's.
//!
//! On `configs/small_4x4.toml` (`none`) and `configs/dense_4x4.toml`
//! (dense), stride 1 and 2, padding 0 and 1, Verilator. The emulator is
//! not involved: this checks the generator against the host's im2col,
//! which shares no code with it.

use std::path::Path;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::command::{format, opcode};
use sysgrad_isa::host::{reg, status, DmaTarget};
use sysgrad_isa::BackwardMode;
use sysgrad_testbench::accel::{self, HostScript};

/// The convolution: `c` input channels (lanes of a pixel), `o` output
/// channels, `images` images of `h x w`, a `k x k` kernel.
#[derive(Clone, Copy, Debug)]
struct Conv {
    c: usize,
    o: usize,
    h: usize,
    w: usize,
    k: usize,
    stride: usize,
    pad: usize,
    images: usize,
}

impl Conv {
    fn oh(&self) -> usize {
        (self.h + 2 * self.pad - self.k) / self.stride + 1
    }
    fn ow(&self) -> usize {
        (self.w + 2 * self.pad - self.k) / self.stride + 1
    }
    /// Output positions of the stream: a pass's `n`.
    fn p(&self) -> usize {
        self.images * self.oh() * self.ow()
    }
    fn pixels(&self) -> usize {
        self.images * self.h * self.w
    }
    /// The input line under kernel element (ky, kx) at position t, if
    /// inside (written from the contract's formula, with a division).
    fn line(&self, t: usize, ky: usize, kx: usize) -> Option<usize> {
        let per = self.oh() * self.ow();
        let (img, oy, ox) = (t / per, (t % per) / self.ow(), t % self.ow());
        let iy = (oy * self.stride + ky) as i64 - self.pad as i64;
        let ix = (ox * self.stride + kx) as i64 - self.pad as i64;
        let inside = (0..self.h as i64).contains(&iy) && (0..self.w as i64).contains(&ix);
        inside.then(|| img * self.h * self.w + iy as usize * self.w + ix as usize)
    }
    fn elements(&self) -> Vec<(usize, usize)> {
        (0..self.k)
            .flat_map(|ky| (0..self.k).map(move |kx| (ky, kx)))
            .collect()
    }
}

/// The words of `op` with the named arguments (others 0).
fn words(op: u8, args: &[(&str, u64)]) -> Vec<u64> {
    format(op)
        .expect("a command")
        .encode(|name| args.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v))
}

fn window(cv: &Conv, ky: usize, kx: usize) -> Vec<u64> {
    let v = |x: usize| x as u64;
    words(
        opcode::WINDOW,
        &[
            ("w", v(cv.w)),
            ("h", v(cv.h)),
            ("ow", v(cv.ow())),
            ("oh", v(cv.oh())),
            ("stride", v(cv.stride)),
            ("ky", v(ky)),
            ("kx", v(kx)),
            ("pad", v(cv.pad)),
            ("images", v(cv.images)),
        ],
    )
}

fn forward(x: usize, y: usize, n: usize, acc: bool, win: bool) -> Vec<u64> {
    let args = [
        ("x", x as u64),
        ("y", y as u64),
        ("n", n as u64),
        ("acc", acc.into()),
        ("win", win.into()),
    ];
    words(opcode::FORWARD, &args)
}

fn backward(mode: BackwardMode, [dy, x, dx]: [usize; 3], n: usize, win: bool) -> Vec<u64> {
    // A windowed dX accumulates into the image's lines (zeroed first).
    let acc = u64::from(win);
    let args = [
        ("mode", mode.code()),
        ("dy", dy as u64),
        ("x", x as u64),
        ("dx", dx as u64),
        ("n", n as u64),
        ("acc", acc),
        ("win", win.into()),
    ];
    words(opcode::BACKWARD, &args)
}

/// Small values from a seed, both signs.
fn values(seed: u64, lines: usize, lanes: usize) -> Vec<Vec<i64>> {
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

/// Where everything lives (line addresses).
struct Layout {
    /// Activations: the images, then the patches of element e.
    image: usize,
    patches: usize,
    /// Accumulators: Y (windowed, plain), dX (windowed, interleaved:
    /// the image's lines; plain: patch lines), dW (windowed, plain,
    /// interleaved: `o` lines per element).
    y_win: usize,
    y_col: usize,
    dx_win: usize,
    dx_il: usize,
    dx_col: usize,
    dw_win: usize,
    dw_col: usize,
    dw_il: usize,
    acc_end: usize,
}

impl Layout {
    fn of(cv: &Conv) -> Layout {
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
        Layout {
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

/// Runs the convolution both ways on `model` and compares.
fn conv_on(model: &accel::AccelModel, cv: Conv) {
    let cfg = model.cfg;
    let (r, p) = (cfg.rows(), cv.p());
    let l = Layout::of(&cv);
    let image = values(5 + cv.stride as u64, cv.pixels(), cv.c);
    let dy = values(17, p, cv.o);
    // Tile e: line e*R + c holds W_e[.][c] in lanes 0..o.
    let tiles: Vec<Vec<Vec<i64>>> = (0..cv.k * cv.k)
        .map(|e| values(29 + e as u64, cv.c, cv.o))
        .collect();
    // The host's im2col: patch line t of element e is the input pixel
    // under it, or zeros.
    let patch = |(ky, kx): (usize, usize)| -> Vec<Vec<i64>> {
        (0..p)
            .map(|t| match cv.line(t, ky, kx) {
                Some(line) => image[line].clone(),
                None => vec![0; cv.c],
            })
            .collect()
    };
    let mut s = HostScript::new(&cfg);
    s.dma_write_lines(DmaTarget::Activations, l.image, &image);
    for (e, el) in cv.elements().into_iter().enumerate() {
        s.dma_write_lines(DmaTarget::Activations, l.patches + e * p, &patch(el));
        s.dma_write_lines(DmaTarget::Weights, e * r, &tiles[e]);
    }
    s.dma_write_lines(DmaTarget::Gradients, 0, &dy);
    // Y regions hold junk (the first element overwrites them); the dX
    // images start at 0 (every element accumulates).
    let la = r.max(cfg.cols());
    let mut acc_init = values(3, l.acc_end, la);
    for line in l.dx_win..l.dx_col {
        acc_init[line] = vec![0; la];
    }
    s.dma_write_lines(DmaTarget::Accumulators, 0, &acc_init);
    let mut prog = Vec::new();
    for (e, (ky, kx)) in cv.elements().into_iter().enumerate() {
        let patches = l.patches + e * p;
        let load = words(
            opcode::LOAD_W,
            &[
                ("addr", (e * r) as u64),
                ("m", cv.o as u64),
                ("k", cv.c as u64),
            ],
        );
        let drain = |at: usize| words(opcode::DRAIN, &[("dw", (at + e * cv.o) as u64)]);
        use BackwardMode::*;
        prog.extend(window(&cv, ky, kx));
        prog.extend(load);
        prog.extend(forward(l.image, l.y_win, p, e > 0, true));
        prog.extend(forward(patches, l.y_col, p, e > 0, false));
        prog.extend(backward(Dx, [0, 0, l.dx_win], p, true));
        prog.extend(backward(Dx, [0, 0, l.dx_col + e * p], p, false));
        prog.extend(backward(Dw, [0, l.image, 0], p, true));
        prog.extend(drain(l.dw_win));
        prog.extend(backward(Dw, [0, patches, 0], p, false));
        prog.extend(drain(l.dw_col));
        prog.extend(backward(Interleaved, [0, l.image, l.dx_il], p, true));
        prog.extend(drain(l.dw_il));
    }
    prog.extend(words(opcode::HALT, &[]));
    s.load_program(&prog).start().poll();
    let st = s.read_reg(reg::STATUS);
    let back = s.dma_read(DmaTarget::Accumulators, 0, l.acc_end);
    let work = accel::work_dir(&cfg, "window");
    let res = model
        .run(&s, 1, 0, Path::new(&work))
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
    let status = res.value(st).expect("STATUS read");
    assert_eq!(
        status & (status::HALTED | status::FAULTED),
        status::HALTED,
        "{}: {cv:?}: STATUS {status:#x}",
        cfg.tag()
    );
    let acc = res.lines(back).expect("accumulators read back");
    let lanes = |from: usize, n: usize, k: usize| -> Vec<Vec<i64>> {
        acc[from..from + n]
            .iter()
            .map(|v| v[..k].to_vec())
            .collect()
    };
    let what = format!("{} {cv:?}", cfg.tag());
    assert_eq!(
        lanes(l.y_win, p, cv.o),
        lanes(l.y_col, p, cv.o),
        "Y: {what}"
    );
    // col2im of the plain passes' patch gradients, on the host.
    let mut col2im = vec![vec![0i64; cv.c]; cv.pixels()];
    for (e, (ky, kx)) in cv.elements().into_iter().enumerate() {
        for t in 0..p {
            if let Some(line) = cv.line(t, ky, kx) {
                for c in 0..cv.c {
                    col2im[line][c] += acc[l.dx_col + e * p + t][c];
                }
            }
        }
    }
    let dx = lanes(l.dx_win, cv.pixels(), cv.c);
    assert_eq!(dx, col2im, "dX: {what}");
    assert_eq!(
        lanes(l.dx_il, cv.pixels(), cv.c),
        dx,
        "interleaved dX: {what}"
    );
    let dw = |at: usize| lanes(at, cv.k * cv.k * cv.o, cv.c);
    assert_eq!(dw(l.dw_win), dw(l.dw_col), "dW: {what}");
    assert_eq!(dw(l.dw_il), dw(l.dw_win), "interleaved dW: {what}");
    assert!(
        dx.iter().flatten().any(|v| *v != 0)
            && lanes(l.y_win, p, cv.o).iter().flatten().any(|v| *v != 0),
        "{what}: nothing computed"
    );
    eprintln!("{what}: {} cycles, equal", res.cycles);
}

fn convolutions_on(path: &str) {
    let cfg: ArrayConfig = sysgrad_config::load_config(Path::new(path)).expect(path);
    let model = accel::build(&cfg).unwrap_or_else(|e| panic!("{e}"));
    for (stride, pad) in [(1, 0), (1, 1), (2, 0), (2, 1)] {
        let cv = Conv {
            c: 3,
            o: 4,
            h: 5,
            w: 6,
            k: 3,
            stride,
            pad,
            images: 2,
        };
        conv_on(&model, cv);
    }
}

#[test]
#[ignore = "needs verilator"]
fn windowed_passes_equal_im2col_on_the_none_controller() {
    convolutions_on(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../configs/small_4x4.toml"
    ));
}

#[test]
#[ignore = "needs verilator"]
fn windowed_passes_equal_im2col_on_the_dense_controller() {
    convolutions_on(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../configs/dense_4x4.toml"
    ));
}
