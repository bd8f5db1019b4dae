//! Windowed streams (`docs/COMMANDS.md`, WINDOW) against a convolution
//! written here as direct loops over pixels and kernel elements, sharing
//! no code with the address generator: forward, dX (col2im by
//! accumulation) and dW of a small padded, strided convolution, on both
//! controllers; and the window's checks.

use sysgrad_accel::*;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, Pipelining, Units};

/// A convolution: `b` images of `c_in x h x w`, `c_out` filters of
/// `k x k`, stride `s`, padding `p`.
#[derive(Clone, Copy)]
struct Conv {
    b: usize,
    c_in: usize,
    c_out: usize,
    h: usize,
    w: usize,
    k: usize,
    s: usize,
    p: usize,
}

impl Conv {
    fn out(&self, size: usize) -> usize {
        (size + 2 * self.p - self.k) / self.s + 1
    }
    fn positions(&self) -> usize {
        self.b * self.out(self.h) * self.out(self.w)
    }
    /// The input pixel (image, y, x) under kernel element (ky, kx) at
    /// output position t, if not in the padding.
    fn input_at(&self, t: usize, ky: usize, kx: usize) -> Option<usize> {
        let (oh, ow) = (self.out(self.h), self.out(self.w));
        let (img, oy, ox) = (t / (oh * ow), t / ow % oh, t % ow);
        let iy = (oy * self.s + ky).checked_sub(self.p)?;
        let ix = (ox * self.s + kx).checked_sub(self.p)?;
        (iy < self.h && ix < self.w).then_some((img * self.h + iy) * self.w + ix)
    }
    fn window(&self, ky: usize, kx: usize) -> Window {
        let v = |x: usize| x as u16;
        Window {
            w: v(self.w),
            h: v(self.h),
            ow: v(self.out(self.w)),
            oh: v(self.out(self.h)),
            stride: v(self.s),
            ky: v(ky),
            kx: v(kx),
            pad: v(self.p),
            images: v(self.b),
        }
    }
    fn elements(&self) -> impl Iterator<Item = (usize, usize, usize)> {
        let k = self.k;
        (0..k * k).map(move |e| (e, e / k, e % k))
    }
}

fn cfg(pipelining: Pipelining) -> ArrayConfig {
    let format = NumberFormat {
        in_bits: 8,
        acc_bits: 24,
        frac_bits: 4,
    };
    ArrayConfig::new(4, 4, Backward::Interleaved, format)
        .unwrap()
        .with_pipelining(pipelining)
        .unwrap()
}

/// Small values, so nothing saturates and the sums are exact.
fn values(n: usize, seed: u64) -> Vec<i64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 15) as i64 - 7
        })
        .collect()
}

/// Lines of the regions: images at activation line 0, dY at gradient
/// line 0, Y and dW at accumulator line 0, dX after them.
const DX_BASE: usize = 256;

struct Data {
    x: Vec<i64>,  // [pixel][c_in]
    wt: Vec<i64>, // [e][c_in][c_out]
    dy: Vec<i64>, // [t][c_out]
}

fn load(acc: &mut Accelerator, c: &Conv, d: &Data) {
    let pixels = c.b * c.h * c.w;
    for px in 0..pixels {
        for ch in 0..c.c_in {
            let v = d.x[px * c.c_in + ch];
            acc.buffer_mut(BufferId::Activations)
                .set(px, ch, v)
                .unwrap();
        }
    }
    // Element e's tile at weight lines e * c_in + i, lane j = W[j][i][e].
    for (e, _, _) in c.elements() {
        for i in 0..c.c_in {
            for j in 0..c.c_out {
                let v = d.wt[(e * c.c_in + i) * c.c_out + j];
                acc.buffer_mut(BufferId::Weights)
                    .set(e * c.c_in + i, j, v)
                    .unwrap();
            }
        }
    }
    for t in 0..c.positions() {
        for j in 0..c.c_out {
            acc.buffer_mut(BufferId::Gradients)
                .set(t, j, d.dy[t * c.c_out + j])
                .unwrap();
        }
    }
}

fn load_w(c: &Conv, e: usize) -> Command {
    Command::LoadW {
        addr: (e * c.c_in) as u16,
        m: c.c_out as u16,
        k: c.c_in as u16,
    }
}

fn run(pipelining: Pipelining, c: &Conv, d: &Data, program: Vec<Command>) -> Accelerator {
    let mut acc = Accelerator::new(cfg(pipelining));
    load(&mut acc, c, d);
    let mut program = program;
    program.push(Command::Halt);
    acc.run(&encode_program(&program)).unwrap();
    acc
}

fn data(c: &Conv, seed: u64) -> Data {
    Data {
        x: values(c.b * c.h * c.w * c.c_in, seed),
        wt: values(c.k * c.k * c.c_in * c.c_out, seed + 1),
        dy: values(c.positions() * c.c_out, seed + 2),
    }
}

fn check_forward(pipelining: Pipelining, c: &Conv, d: &Data) {
    let n = c.positions() as u16;
    let mut program = Vec::new();
    for (e, ky, kx) in c.elements() {
        program.extend([
            load_w(c, e),
            Command::Window(c.window(ky, kx)),
            Command::Forward {
                x_addr: 0,
                y_addr: 0,
                n,
                accumulate: e > 0,
                window: true,
            },
        ]);
    }
    let acc = run(pipelining, c, d, program);
    for t in 0..c.positions() {
        for o in 0..c.c_out {
            let mut want = 0;
            for (e, ky, kx) in c.elements() {
                if let Some(px) = c.input_at(t, ky, kx) {
                    for i in 0..c.c_in {
                        want += d.x[px * c.c_in + i] * d.wt[(e * c.c_in + i) * c.c_out + o];
                    }
                }
            }
            let got = acc.buffer(BufferId::Accumulators).get(t, o).unwrap();
            assert_eq!(got, want, "Y[{o}] at position {t}");
        }
    }
}

/// dX by windowed DX passes (or interleaved, with dW drained per element).
fn check_backward(pipelining: Pipelining, c: &Conv, d: &Data, mode: BackwardMode) {
    let n = c.positions() as u16;
    let mut program = Vec::new();
    for (e, ky, kx) in c.elements() {
        program.extend([
            load_w(c, e),
            Command::Window(c.window(ky, kx)),
            Command::Backward {
                mode,
                dy_addr: 0,
                x_addr: 0,
                dx_addr: DX_BASE as u16,
                n,
                accumulate: true,
                window: true,
            },
        ]);
        if mode.computes_dw() {
            program.push(Command::Drain {
                dw_addr: (e * c.c_out) as u16,
            });
        }
    }
    let acc = run(pipelining, c, d, program);
    let buf = acc.buffer(BufferId::Accumulators);
    if mode.computes_dx() {
        for px in 0..c.b * c.h * c.w {
            for i in 0..c.c_in {
                let mut want = 0;
                for t in 0..c.positions() {
                    for (e, ky, kx) in c.elements() {
                        if c.input_at(t, ky, kx) == Some(px) {
                            for o in 0..c.c_out {
                                want +=
                                    d.wt[(e * c.c_in + i) * c.c_out + o] * d.dy[t * c.c_out + o];
                            }
                        }
                    }
                }
                assert_eq!(
                    buf.get(DX_BASE + px, i).unwrap(),
                    want,
                    "dX[{i}] at pixel {px}"
                );
            }
        }
    }
    if mode.computes_dw() {
        for (e, ky, kx) in c.elements() {
            for o in 0..c.c_out {
                for i in 0..c.c_in {
                    let want: i64 = (0..c.positions())
                        .filter_map(|t| c.input_at(t, ky, kx).map(|px| (t, px)))
                        .map(|(t, px)| d.dy[t * c.c_out + o] * d.x[px * c.c_in + i])
                        .sum();
                    let got = buf.get(e * c.c_out + o, i).unwrap();
                    assert_eq!(got, want, "dW[{o}][{i}] of element {e}");
                }
            }
        }
    }
}

const CONVS: [Conv; 3] = [
    // 3x3, pad 1, stride 1 ("same"), two images.
    Conv {
        b: 2,
        c_in: 3,
        c_out: 4,
        h: 5,
        w: 4,
        k: 3,
        s: 1,
        p: 1,
    },
    // Stride 2 with padding: padding on one side only for some outputs.
    Conv {
        b: 1,
        c_in: 4,
        c_out: 2,
        h: 6,
        w: 7,
        k: 3,
        s: 2,
        p: 1,
    },
    // No padding, 2x2 kernel.
    Conv {
        b: 3,
        c_in: 2,
        c_out: 3,
        h: 3,
        w: 3,
        k: 2,
        s: 1,
        p: 0,
    },
];

#[test]
fn windowed_streams_compute_a_convolution_on_both_controllers() {
    for pipelining in [Pipelining::None, Pipelining::Dense] {
        for (i, c) in CONVS.iter().enumerate() {
            let d = data(c, 10 * i as u64);
            check_forward(pipelining, c, &d);
            for mode in [
                BackwardMode::Dx,
                BackwardMode::Dw,
                BackwardMode::Sequential,
                BackwardMode::Interleaved,
            ] {
                check_backward(pipelining, c, &d, mode);
            }
        }
    }
}

fn fault(program: &[Command]) -> ErrorCode {
    let mut acc = Accelerator::new(cfg(Pipelining::None));
    let mut words = encode_program(program);
    words.extend(Command::Halt.encode());
    acc.run(&words).unwrap_err().code
}

#[test]
fn window_checks() {
    let c = CONVS[0];
    let win = c.window(0, 0);
    let n = c.positions() as u16;
    let fwd = |n: u16, x_addr: u16| Command::Forward {
        x_addr,
        y_addr: 0,
        n,
        accumulate: false,
        window: true,
    };
    let load = load_w(&c, 0);
    assert_eq!(fault(&[load, fwd(n, 0)]), ErrorCode::NoWindow);
    assert_eq!(
        fault(&[load, Command::Window(win), fwd(n - 1, 0)]),
        ErrorCode::WindowLength
    );
    // X spans images * h * w = 40 lines from x_addr: 4056 + 40 > 4096.
    let depth = cfg(Pipelining::None).buffers().activations as u16;
    assert_eq!(
        fault(&[load, Command::Window(win), fwd(n, depth - 39)]),
        ErrorCode::AddressRange
    );
    let zero = Window { stride: 0, ..win };
    assert_eq!(fault(&[Command::Window(zero)]), ErrorCode::ZeroSize);
    // NO_TILE comes before the window's checks.
    assert_eq!(fault(&[fwd(n, 0)]), ErrorCode::NoTile);
}

/// Without the address generator (`units.window = false`) WINDOW faults
/// NO_GENERATOR after the checks before it (a zero size first), so no
/// window is ever set and a windowed pass faults NO_WINDOW; plain passes
/// run as before. Both controllers.
#[test]
fn without_the_generator_window_faults() {
    let c = CONVS[0];
    let win = c.window(0, 0);
    let n = c.positions() as u16;
    let fwd = |window: bool| Command::Forward {
        x_addr: 0,
        y_addr: 0,
        n,
        accumulate: false,
        window,
    };
    let load = load_w(&c, 0);
    for pipelining in [Pipelining::None, Pipelining::Dense] {
        let cfg = cfg(pipelining).with_units(Units { window: false });
        let run = |program: &[Command]| {
            let mut words = encode_program(program);
            words.extend(Command::Halt.encode());
            Accelerator::new(cfg)
                .run(&words)
                .map_err(|e| (e.code, e.pc))
        };
        assert_eq!(
            run(&[load, Command::Window(win)]).unwrap_err(),
            (ErrorCode::NoGenerator, 1)
        );
        let zero = Window { stride: 0, ..win };
        assert_eq!(
            run(&[Command::Window(zero)]).unwrap_err(),
            (ErrorCode::ZeroSize, 0)
        );
        assert_eq!(
            run(&[load, fwd(true)]).unwrap_err(),
            (ErrorCode::NoWindow, 1)
        );
        assert!(run(&[load, fwd(false)]).is_ok(), "{pipelining:?}");
    }
}
