//! Convolutions on the address generator (`sysgrad_accel::conv`) against
//! a convolution written here as direct loops over pixels and kernel
//! elements in i128 (no im2col, no code shared with the compiler or the
//! workloads): the forward pass's raw Y, the backward pass's raw dX and
//! dW (drained) or the weights updated in the PEs (the oracle's SGD rule),
//! on random shapes (channels up to 2R and 2C, 1 to 3 images, up to 10 x
//! 10 pixels, kernels 1, 3 and 5, stride 1 or 2, any padding up to half
//! the kernel), random small arrays (R and C differ), both pipelinings and
//! both backward schedules. Operands are small, so that no partial sum
//! saturates and every grouping of the sums gives the same bits.

use ndarray::{Array2, Array4};
use proptest::prelude::*;
use sysgrad_accel::conv::{self, Bases, ConvLayer, ConvShape};
use sysgrad_accel::{encode_program, Accelerator, BackwardMode, Blocked, BufferId, Command};
use sysgrad_config::{ArrayConfig, Backward, BufferDepths, NumberFormat, Pipelining};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_oracle as oracle;
use sysgrad_rng::Rng;

const FORMAT: NumberFormat = NumberFormat {
    in_bits: 8,
    acc_bits: 24,
    frac_bits: 3,
};

#[derive(Debug, Clone)]
struct Case {
    rows: usize,
    cols: usize,
    shape: ConvShape,
    dense: bool,
    sequential: bool,
    drain: bool,
    /// First lines of the operands (so that no address is 0 by luck).
    offset: usize,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (1usize..=4, 1usize..=4, 1usize..=3, 1usize..=10, 1usize..=10),
        (
            proptest::sample::select(vec![1usize, 3, 5]),
            1usize..=2,
            0usize..=2,
            1usize..=8,
            1usize..=8,
        ),
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            0usize..=5,
            any::<u64>(),
        ),
    )
        .prop_map(
            |((rows, cols, images, h, w), (kernel, stride, pad, ci, co), flags)| Case {
                rows,
                cols,
                shape: ConvShape {
                    c_in: 1 + (ci - 1) % (2 * rows),
                    c_out: 1 + (co - 1) % (2 * cols),
                    h,
                    w,
                    kernel,
                    stride,
                    pad: pad.min(kernel / 2),
                    images,
                },
                dense: flags.0,
                sequential: flags.1,
                drain: flags.2,
                offset: flags.3,
                seed: flags.4,
            },
        )
        .prop_filter("the kernel fits the padded image", |c| {
            let s = &c.shape;
            s.kernel <= s.h + 2 * s.pad && s.kernel <= s.w + 2 * s.pad
        })
}

/// The host's operands: X (c, n, h, w), W (c_out x (c k k + 1), column
/// `(c k + ky) k + kx`, the bias last), dY (c_out x positions).
struct Operands {
    x: Array4<i64>,
    w: Array2<i64>,
    dy: Array2<i64>,
}

fn operands(s: &ConvShape, seed: u64) -> Operands {
    let mut rng = Rng::new(seed);
    let mut small = || rng.range(-6, 6);
    Operands {
        x: Array4::from_shape_fn((s.c_in, s.images, s.h, s.w), |_| small()),
        w: Array2::from_shape_fn((s.c_out, s.host_cols()), |_| small()),
        dy: Array2::from_shape_fn((s.c_out, s.positions()), |_| small()),
    }
}

/// The input pixel under element `(ky, kx)` at output `(oy, ox)`, if any.
fn pixel(
    s: &ConvShape,
    (oy, ox): (usize, usize),
    (ky, kx): (usize, usize),
) -> Option<(usize, usize)> {
    let iy = (oy * s.stride + ky) as isize - s.pad as isize;
    let ix = (ox * s.stride + kx) as isize - s.pad as isize;
    ((0..s.h as isize).contains(&iy) && (0..s.w as isize).contains(&ix))
        .then_some((iy as usize, ix as usize))
}

/// Every (image, output position index, oy, ox).
fn positions(s: &ConvShape) -> Vec<(usize, usize, usize, usize)> {
    let (oh, ow) = (s.out_h(), s.out_w());
    (0..s.images)
        .flat_map(|n| {
            (0..oh).flat_map(move |oy| (0..ow).map(move |ox| (n, (n * oh + oy) * ow + ox, oy, ox)))
        })
        .collect()
}

struct Reference {
    y: Array2<i64>,
    /// c_in x pixels.
    dx: Array2<i64>,
    dw: Array2<i64>,
}

fn reference(s: &ConvShape, op: &Operands, one: i64) -> Reference {
    let k = s.kernel;
    let bias = s.host_cols() - 1;
    let mut y = vec![vec![0i128; s.positions()]; s.c_out];
    let mut dx = vec![vec![0i128; s.pixels()]; s.c_in];
    let mut dw = vec![vec![0i128; s.host_cols()]; s.c_out];
    for (n, t, oy, ox) in positions(s) {
        for o in 0..s.c_out {
            let g = op.dy[(o, t)] as i128;
            y[o][t] += op.w[(o, bias)] as i128 * one as i128;
            dw[o][bias] += g * one as i128;
            for ky in 0..k {
                for kx in 0..k {
                    let Some((iy, ix)) = pixel(s, (oy, ox), (ky, kx)) else {
                        continue;
                    };
                    for (c, dx_c) in dx.iter_mut().enumerate() {
                        let col = (c * k + ky) * k + kx;
                        let (wv, xv) = (op.w[(o, col)] as i128, op.x[[c, n, iy, ix]] as i128);
                        y[o][t] += wv * xv;
                        dx_c[(n * s.h + iy) * s.w + ix] += wv * g;
                        dw[o][col] += g * xv;
                    }
                }
            }
        }
    }
    let m =
        |v: Vec<Vec<i128>>| Array2::from_shape_fn((v.len(), v[0].len()), |(r, c)| v[r][c] as i64);
    Reference {
        y: m(y),
        dx: m(dx),
        dw: m(dw),
    }
}

fn config(c: &Case, l: &ConvLayer) -> ArrayConfig {
    let pipelining = if c.dense {
        Pipelining::Dense
    } else {
        Pipelining::None
    };
    let cfg = ArrayConfig::new(c.rows, c.cols, Backward::Interleaved, FORMAT)
        .unwrap()
        .with_pipelining(pipelining)
        .unwrap();
    let taps = l.taps(&cfg).len();
    // Every buffer exactly as deep as the layer needs (so a line past
    // its operands would be an ADDRESS_RANGE fault).
    cfg.with_buffers(BufferDepths {
        weights: l.w.end(),
        activations: l.image.end(),
        gradients: l.dy.end(),
        accumulators: l.y.end().max(l.dw + taps * l.shape.c_out),
        commands: 1 << 14,
    })
    .unwrap()
}

fn run(acc: &mut Accelerator, mut prog: Vec<Command>) {
    prog.push(Command::Halt);
    if let Err(f) = acc.run(&encode_program(&prog)) {
        panic!("{f}");
    }
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let s = c.shape;
    let layout_cfg = ArrayConfig::new(c.rows, c.cols, Backward::Interleaved, FORMAT).unwrap();
    let o = c.offset;
    let at = Bases {
        weights: o,
        image: 2 * o,
        dy: 3 * o,
        accumulators: o,
    };
    let l = ConvLayer::new(&layout_cfg, s, at).unwrap();
    let cfg = config(c, &l);
    let one = 1i64 << FORMAT.frac_bits;
    let op = operands(&s, c.seed);
    let want = reference(&s, &op, one);

    let mut acc = Accelerator::new(cfg);
    let chip_w = l.chip_weights(op.w.view());
    prop_assert_eq!(
        &l.host_weights(chip_w.view()),
        &op.w,
        "the weight layout round trip"
    );
    l.w.store(acc.buffer_mut(BufferId::Weights), chip_w.view())
        .unwrap();
    l.image
        .store(
            acc.buffer_mut(BufferId::Activations),
            l.image_rows(op.x.view(), one).view(),
        )
        .unwrap();
    l.dy.store(acc.buffer_mut(BufferId::Gradients), op.dy.view())
        .unwrap();

    run(&mut acc, conv::compile_forward(&cfg, &l));
    let y = l.y.load(acc.buffer(BufferId::Accumulators)).unwrap();
    prop_assert_eq!(&y, &want.y, "Y");

    let mode = if c.sequential {
        BackwardMode::Sequential
    } else {
        BackwardMode::Interleaved
    };
    let lr_shift = 1;
    let sink = if c.drain {
        DwSink::Drain
    } else {
        DwSink::Update { lr_shift }
    };
    run(&mut acc, conv::compile_backward(&cfg, &l, mode, sink));
    let dx_lay = Blocked {
        rows: s.c_in,
        ..l.dx
    };
    let dx = dx_lay.load(acc.buffer(BufferId::Accumulators)).unwrap();
    prop_assert_eq!(&dx, &want.dx, "dX");
    if c.drain {
        let dw = l.host_dw(&cfg, |t| {
            l.dw_tap(&cfg, t)
                .load(acc.buffer(BufferId::Accumulators))
                .unwrap()
        });
        prop_assert_eq!(&dw, &want.dw, "dW");
    } else {
        let f = oracle::Format {
            in_bits: FORMAT.in_bits,
            acc_bits: FORMAT.acc_bits,
            frac_bits: FORMAT.frac_bits,
        };
        let updated = Array2::from_shape_fn(op.w.dim(), |(r, col)| {
            oracle::sgd_update(
                op.w[(r, col)] as i128,
                want.dw[(r, col)] as i128,
                lr_shift,
                f,
            ) as i64
        });
        let after = l.w.load(acc.buffer(BufferId::Weights)).unwrap();
        prop_assert_eq!(after, l.chip_weights(updated.view()), "W after the step");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn convolutions_on_the_address_generator_equal_direct_loops(c in case()) {
        check(&c)?;
    }
}

/// The digits CNN's second convolution (16 channels on a 16 x 16 array:
/// the ones channel takes a block of its own), stride 2 without a
/// covering element (the zero tile clears dX first), and a valid
/// convolution whose bias element is not the centre, each on both
/// pipelinings.
#[test]
fn named_shapes() {
    let shape = |c_in, c_out, h, kernel, stride, pad| ConvShape {
        c_in,
        c_out,
        h,
        w: h,
        kernel,
        stride,
        pad,
        images: 2,
    };
    for (rows, s) in [
        (16, shape(16, 32, 4, 3, 1, 1)),
        (4, shape(3, 5, 7, 3, 2, 1)),
        (4, shape(5, 3, 6, 5, 1, 0)),
        (3, shape(3, 2, 5, 1, 2, 0)),
    ] {
        for dense in [false, true] {
            let c = Case {
                rows,
                cols: rows,
                shape: s,
                dense,
                sequential: false,
                drain: true,
                offset: 3,
                seed: 5,
            };
            check(&c).unwrap();
        }
    }
}

/// What the compiler refuses, with the field and the limit.
#[test]
fn shapes_the_window_cannot_hold_are_refused() {
    let cfg = ArrayConfig::new(4, 4, Backward::Interleaved, FORMAT).unwrap();
    let base = ConvShape {
        c_in: 1,
        c_out: 1,
        h: 8,
        w: 8,
        kernel: 3,
        stride: 1,
        pad: 1,
        images: 1,
    };
    let err = |s| ConvLayer::at_zero(&cfg, s).unwrap_err().to_string();
    assert!(err(ConvShape { w: 1024, ..base }).contains("image width = 1024"));
    assert!(err(ConvShape { stride: 0, ..base }).contains("stride is 0"));
    assert!(err(ConvShape {
        kernel: 11,
        h: 4,
        pad: 1,
        ..base
    })
    .contains("larger than the padded image"));
    assert!(err(ConvShape {
        images: 1024,
        ..base
    })
    .contains("positions"));
    assert!(err(ConvShape { pad: 2, ..base }).contains("bias has no element"));
}
