//! Convolution lowered to GEMM tiles on the array against a direct
//! convolution written from the definition.

use ndarray::{Array2, Array4};
use sysgrad_config::{fixed, ArrayConfig, Backward, NumberFormat};
use sysgrad_rng::Rng;
use sysgrad_workloads::arith::{Arith, FixedArith, Site, Step};
use sysgrad_workloads::net::conv::{col2im, im2col};
use sysgrad_workloads::net::{Conv2d, ConvGeom};

const FMT: NumberFormat = NumberFormat {
    in_bits: 16,
    acc_bits: 40,
    frac_bits: 8,
};

fn arith(rows: usize, cols: usize) -> FixedArith {
    let cfg = ArrayConfig::new(rows, cols, Backward::Interleaved, FMT).unwrap();
    FixedArith::new(
        cfg,
        Step {
            lr_shift: 4,
            momentum: None,
        },
    )
}

/// Small random data values (|v| < 2^6, so no sum saturates).
fn random4(rng: &mut Rng, dims: (usize, usize, usize, usize)) -> Array4<i64> {
    Array4::from_shape_simple_fn(dims, || rng.below(128) as i64 - 64)
}

/// The input pixel read by tap (i, j) of output (oy, ox), if not padding.
fn tap(g: &ConvGeom, oy: usize, ox: usize, i: usize, j: usize) -> Option<(usize, usize)> {
    let y = (oy * g.stride + i) as isize - g.padding as isize;
    let x = (ox * g.stride + j) as isize - g.padding as isize;
    (y >= 0 && x >= 0 && (y as usize) < g.h && (x as usize) < g.w)
        .then_some((y as usize, x as usize))
}

/// y[o][b][oy][ox] = bias[o] + sum_{c,i,j} w[o][c][i][j] x[c][b][oy*s+i-p][ox*s+j-p],
/// as an accumulator (2F fractional bits; the bias is data, so scaled by 2^F).
fn direct_conv(g: &ConvGeom, w: &Array2<i64>, x: &Array4<i64>) -> Array4<i64> {
    let (co, n, k) = (w.nrows(), x.dim().1, g.kernel);
    let one = 1i64 << FMT.frac_bits;
    Array4::from_shape_fn((co, n, g.out_h(), g.out_w()), |(o, b, oy, ox)| {
        let mut acc = w[[o, g.patch_len()]] * one;
        for c in 0..g.c_in {
            for i in 0..k {
                for j in 0..k {
                    if let Some((y, xx)) = tap(g, oy, ox, i, j) {
                        acc += w[[o, (c * k + i) * k + j]] * x[[c, b, y, xx]];
                    }
                }
            }
        }
        acc
    })
}

fn geometries() -> Vec<ConvGeom> {
    let g = |c_in, h, w, kernel, stride, padding| ConvGeom {
        c_in,
        h,
        w,
        kernel,
        stride,
        padding,
    };
    vec![
        g(1, 8, 8, 3, 1, 1),
        g(3, 7, 6, 3, 2, 0),
        g(2, 6, 6, 2, 2, 1),
        g(4, 5, 5, 1, 1, 0),
    ]
}

#[test]
fn im2col_forward_on_the_array_equals_direct_convolution() {
    let mut rng = Rng::new(3);
    for (t, g) in geometries().into_iter().enumerate() {
        let co = 5 + t;
        let x = random4(&mut rng, (g.c_in, 3, g.h, g.w));
        let w =
            Array2::from_shape_simple_fn((co, g.patch_len() + 1), || rng.below(128) as i64 - 64);
        let mut ar = arith(4, 3);
        let mut conv = Conv2d::new(g, w.clone(), false);
        let y = conv
            .forward(
                &mut ar,
                Site {
                    layer: 0,
                    training: false,
                },
                &x,
            )
            .unwrap();
        let expect = direct_conv(&g, &w, &x).mapv(|a| ar.requantize(a));
        assert_eq!(y, expect, "geometry {g:?}");
    }
}

#[test]
fn conv_backward_dx_and_update_equal_direct_formulas() {
    let mut rng = Rng::new(5);
    for g in geometries() {
        let (co, n) = (4, 2);
        let x = random4(&mut rng, (g.c_in, n, g.h, g.w));
        let w = Array2::from_shape_simple_fn((co, g.patch_len() + 1), || rng.below(64) as i64 - 32);
        let dy = random4(&mut rng, (co, n, g.out_h(), g.out_w()));
        let mut ar = arith(3, 4);
        let mut conv = Conv2d::new(g, w.clone(), false);
        conv.forward(
            &mut ar,
            Site {
                layer: 1,
                training: true,
            },
            &x,
        )
        .unwrap();
        let dx = conv.backward(&mut ar, 1, &dy, true).unwrap().unwrap();

        // dX[c][b][y][x] = sum over (o, oy, ox, i, j) reading (y, x) of w * dy.
        let k = g.kernel;
        let mut dx_acc = Array4::<i64>::zeros(x.dim());
        let mut dw = Array2::<i64>::zeros(w.dim());
        for o in 0..co {
            for b in 0..n {
                for oy in 0..g.out_h() {
                    for ox in 0..g.out_w() {
                        let d = dy[[o, b, oy, ox]];
                        dw[[o, g.patch_len()]] += d << FMT.frac_bits;
                        for c in 0..g.c_in {
                            for i in 0..k {
                                for j in 0..k {
                                    if let Some((y, xx)) = tap(&g, oy, ox, i, j) {
                                        let r = (c * k + i) * k + j;
                                        dx_acc[[c, b, y, xx]] += w[[o, r]] * d;
                                        dw[[o, r]] += d * x[[c, b, y, xx]];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(dx, dx_acc.mapv(|a| ar.requantize(a)), "dX, geometry {g:?}");
        let expect_w = Array2::from_shape_fn(w.dim(), |ix| {
            fixed::sgd_update(w[ix], dw[ix], FMT.frac_bits, 4, FMT.in_bits, FMT.acc_bits)
        });
        assert_eq!(conv.w, expect_w, "SGD update, geometry {g:?}");
    }
}

#[test]
fn col2im_is_the_adjoint_of_im2col() {
    // <im2col(x), c> = <x, col2im(c)> for every geometry.
    let mut rng = Rng::new(9);
    for g in geometries() {
        let n = 2;
        let x = random4(&mut rng, (g.c_in, n, g.h, g.w));
        let cols = im2col(&g, &x, 0);
        let c = Array2::from_shape_simple_fn(cols.dim(), || rng.below(21) as i64 - 10);
        let back = col2im(&g, c.view(), n, 0, |a, b| a + b);
        let lhs: i64 = cols.iter().zip(c.iter()).map(|(a, b)| a * b).sum();
        let rhs: i64 = x.iter().zip(back.iter()).map(|(a, b)| a * b).sum();
        assert_eq!(lhs, rhs, "{g:?}");
    }
}
