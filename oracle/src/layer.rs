//! Layer-level products in the order of `docs/ARCHITECTURE.md`, "Layers
//! larger than the array". Saturating adds do not associate, so each loop
//! nest below is that section's order, written out; the comments quote it.

use crate::float::{generator, xorshift};
use crate::matrix::Matrix;
use crate::number::{acc_add, max_of, min_of, requantize, sat, sgd_update, sr_shift, Format};

/// The array's shape (R = `rows`, C = `cols`) and number format: all that
/// decides the bits of a layer's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub rows: usize,
    pub cols: usize,
    pub format: Format,
    /// The update's rounding: to nearest (`None`) or stochastic.
    pub stochastic: Option<Stochastic>,
}

/// "`rounding = "stochastic"`": the generators' seed, and how many cycles
/// an UPDATE steps them ("two with the multiplier register, the first
/// rounding"; else one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stochastic {
    pub seed: u32,
    pub cycles_per_update: u32,
}

/// The largest `lr_shift` (a 6-bit port).
pub const MAX_LR_SHIFT: u32 = 63;

/// "M into blocks `m0 = 0, C, 2C, ...` of `mt = min(C, M - m0)` rows" (and
/// likewise K by R): the `(start, len)` of each block, in order.
pub fn blocks(len: usize, size: usize) -> Vec<(usize, usize)> {
    assert!(size >= 1, "blocks of size 0");
    let mut out = Vec::new();
    let mut start = 0;
    while start < len {
        out.push((start, size.min(len - start)));
        start += size;
    }
    out
}

/// "`Y = W X`": raw accumulators, M x N.
pub fn forward(cfg: &Config, w: &Matrix, x: &Matrix) -> Matrix {
    let (m, k) = w.dim();
    let n = x.cols();
    assert_eq!(x.rows(), k, "X must have K = {k} rows");
    check_data(cfg, &[("W", w), ("X", x)]);
    let aw = cfg.format.acc_bits;
    let mut y = Matrix::zeros(m, n);
    // "Tiles run M-block outer, K-block inner."
    for (m0, mt) in blocks(m, cfg.cols) {
        for (k0, kt) in blocks(k, cfg.rows) {
            for row in m0..m0 + mt {
                for col in 0..n {
                    // "the PE chain down column j, in row order"
                    let mut part = 0;
                    for i in 0..kt {
                        part = acc_add(part, w[(row, k0 + i)] * x[(k0 + i, col)], aw);
                    }
                    // "Tiles of the same M block are added ... in K order"
                    y[(row, col)] = acc_add(y[(row, col)], part, aw);
                }
            }
        }
    }
    y
}

/// "dX `= W^T dY`": raw accumulators, K x N.
pub fn dx(cfg: &Config, w: &Matrix, dy: &Matrix) -> Matrix {
    let (m, k) = w.dim();
    let n = dy.cols();
    assert_eq!(dy.rows(), m, "dY must have M = {m} rows");
    check_data(cfg, &[("W", w), ("dY", dy)]);
    let aw = cfg.format.acc_bits;
    let mut dx = Matrix::zeros(k, n);
    // The same tile walk as forward; the sums run the other way.
    for (m0, mt) in blocks(m, cfg.cols) {
        for (k0, kt) in blocks(k, cfg.rows) {
            for row in k0..k0 + kt {
                for col in 0..n {
                    // "the PE chain east along row i, in column order"
                    let mut part = 0;
                    for j in 0..mt {
                        part = acc_add(part, w[(m0 + j, row)] * dy[(m0 + j, col)], aw);
                    }
                    // "tiles are added in M order"
                    dx[(row, col)] = acc_add(dx[(row, col)], part, aw);
                }
            }
        }
    }
    dx
}

/// "dW `= dY X^T`": raw accumulators, M x K. `rows` and `cols` do not enter:
/// "No tile boundary enters this sum".
pub fn dw(cfg: &Config, dy: &Matrix, x: &Matrix) -> Matrix {
    let (m, n) = dy.dim();
    let k = x.rows();
    assert_eq!(x.cols(), n, "X must have N = {n} columns like dY");
    check_data(cfg, &[("dY", dy), ("X", x)]);
    let aw = cfg.format.acc_bits;
    Matrix::from_fn(m, k, |row, col| {
        // "over the whole stream, in stream order, from 0"
        (0..n).fold(0, |acc, t| acc_add(acc, dy[(row, t)] * x[(col, t)], aw))
    })
}

/// The Update sink: "`W'[m][k] = sat(W[m][k] - round_shift(dW[m][k], F +
/// lr_shift), DW)`", each weight once, or with stochastic rounding
/// `sr_shift` with the draw of the PE that holds it. `dw` is the raw
/// result of [`dw`].
pub fn update(cfg: &Config, w: &Matrix, dw: &Matrix, lr_shift: u32) -> Matrix {
    assert_eq!(w.dim(), dw.dim(), "W and dW must have the same shape");
    assert!(lr_shift <= MAX_LR_SHIFT, "lr_shift {lr_shift} > 63");
    check_data(cfg, &[("W", w)]);
    let f = cfg.format;
    let k_tiles = w.cols().div_ceil(cfg.rows);
    Matrix::from_fn(w.rows(), w.cols(), |r, c| match cfg.stochastic {
        None => sgd_update(w[(r, c)], dw[(r, c)], lr_shift, f),
        Some(sr) => {
            // "`r` the draw of the PE that holds the weight, (k mod R, m
            // mod C), in its tile's UPDATE: ... M-block outer, K-block
            // inner", the tile's first UPDATE cycle rounding.
            let tile = (r / cfg.cols) * k_tiles + c / cfg.rows;
            let steps = sr.cycles_per_update as usize * tile + 1;
            let mut state = generator(sr.seed, c % cfg.rows, r % cfg.cols);
            for _ in 0..steps {
                state = xorshift(state);
            }
            let step = sr_shift(
                dw[(r, c)],
                f.frac_bits + lr_shift,
                state & 0xFFFF,
                f.acc_bits,
            );
            sat(w[(r, c)] - step, f.in_bits)
        }
    })
}

/// "Requantization ... elementwise: `sat(round_shift(acc, F), DW)`".
pub fn requantize_matrix(cfg: &Config, acc: &Matrix) -> Matrix {
    acc.map(|v| requantize(v, cfg.format))
}

/// "every entry a DW-bit data value": the rules say nothing about other
/// inputs, so the oracle refuses them rather than invent an answer.
fn check_data(cfg: &Config, operands: &[(&str, &Matrix)]) {
    let bits = cfg.format.in_bits;
    let (lo, hi) = (min_of(bits), max_of(bits));
    for (name, m) in operands {
        if let Some(v) = m.values().find(|v| !(lo..=hi).contains(v)) {
            panic!("{name} holds {v}, outside {bits}-bit data");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8-bit data, the narrowest (16-bit) accumulators, integer values.
    fn cfg(rows: usize, cols: usize) -> Config {
        Config {
            rows,
            cols,
            format: Format {
                in_bits: 8,
                acc_bits: 16,
                frac_bits: 0,
            },
            stochastic: None,
        }
    }

    fn column(v: &[i128]) -> Matrix {
        Matrix::from_fn(v.len(), 1, |r, _| v[r])
    }

    fn row(v: &[i128]) -> Matrix {
        Matrix::from_fn(1, v.len(), |_, c| v[c])
    }

    /// Products 16384, 16384, 16384, -16256, -16256, -16256 (exact sum 384).
    const BIG: [i128; 6] = [-128, -128, -128, 127, 127, 127];

    #[test]
    fn blocks_end_with_a_partial_one() {
        assert_eq!(blocks(5, 2), [(0, 2), (2, 2), (4, 1)]);
        assert_eq!(blocks(4, 4), [(0, 4)]);
        assert_eq!(blocks(3, 8), [(0, 3)]);
        assert_eq!(blocks(0, 3), []);
    }

    #[test]
    fn small_products_are_exact() {
        // A 3 x 2 W on a 1 x 2 array: two M blocks (one partial), two K blocks.
        let w = Matrix::from_rows(&[&[1, 2], &[3, 4], &[5, 6]]);
        let x = Matrix::from_rows(&[&[1, 0], &[-1, 2]]);
        let y = Matrix::from_rows(&[&[-1, 4], &[-1, 8], &[-1, 12]]);
        assert_eq!(forward(&cfg(1, 2), &w, &x), y);
        let dy = Matrix::from_rows(&[&[1], &[0], &[-1]]);
        assert_eq!(dx(&cfg(1, 2), &w, &dy), Matrix::from_rows(&[&[-4], &[-4]]));
        let dw_ = dw(&cfg(1, 2), &dy, &Matrix::from_rows(&[&[2], &[3]]));
        assert_eq!(dw_, Matrix::from_rows(&[&[2, 3], &[0, 0], &[-2, -3]]));
    }

    #[test]
    fn forward_tiles_along_k_change_a_saturated_sum() {
        let w = row(&[-128; 6]);
        let x = column(&BIG);
        // One tile of 6: 16384, 32767 (clamped), 32767, 16511, 255, -16001.
        assert_eq!(forward(&cfg(6, 1), &w, &x)[(0, 0)], -16001);
        // Tiles of 3: partial sums clamp to 32767 and -32768, then add to -1.
        assert_eq!(forward(&cfg(3, 1), &w, &x)[(0, 0)], -1);
        // Tiles of 1 add the products in K order: the same as one chain.
        assert_eq!(forward(&cfg(1, 1), &w, &x)[(0, 0)], -16001);
    }

    #[test]
    fn dx_tiles_along_m_change_a_saturated_sum() {
        let w = column(&[-128; 6]);
        let dy = column(&BIG);
        assert_eq!(dx(&cfg(1, 6), &w, &dy)[(0, 0)], -16001);
        assert_eq!(dx(&cfg(1, 3), &w, &dy)[(0, 0)], -1);
        // The array's rows do not cut the dX sum.
        assert_eq!(dx(&cfg(3, 6), &w, &dy)[(0, 0)], -16001);
    }

    #[test]
    fn dw_follows_the_stream_order_whatever_the_array() {
        let dy = row(&[-128; 6]);
        let x = row(&BIG);
        for (r, c) in [(1, 1), (3, 3), (6, 6)] {
            assert_eq!(dw(&cfg(r, c), &dy, &x)[(0, 0)], -16001);
        }
        // Reversed stream: -16256, -32512, -32768 (clamped), -16384, 0, 16384.
        let mut reversed = BIG;
        reversed.reverse();
        assert_eq!(dw(&cfg(1, 1), &dy, &row(&reversed))[(0, 0)], 16384);
    }

    #[test]
    fn update_uses_the_raw_gradient_and_saturates() {
        let c = Config {
            format: Format {
                in_bits: 8,
                acc_bits: 16,
                frac_bits: 4,
            },
            ..cfg(2, 2)
        };
        let w = Matrix::from_rows(&[&[10, -128, 127]]);
        let dw_ = Matrix::from_rows(&[&[48, 32767, -32768]]);
        // Shift F + 1 = 5: 48 / 32 = 1.5 -> 2; the others clamp at the ends.
        assert_eq!(
            update(&c, &w, &dw_, 1),
            Matrix::from_rows(&[&[8, -128, 127]])
        );
        // Shift 4 + 12 = 16 = AW: nothing moves.
        assert_eq!(update(&c, &w, &dw_, 12), w);
    }

    /// 5/4 = 1.25 rounds up for the draws whose top two bits are both
    /// set (a quarter of them): "floor(r * 2^s / 2^16)" is 3 from 49152.
    #[test]
    fn sr_shift_rounds_up_with_the_dropped_fraction() {
        use crate::number::sr_shift;
        let up = |r| sr_shift(5, 2, r, 16) == 2;
        assert!(!up(0) && !up(49151) && up(49152) && up(65535));
        assert_eq!((0..1u32 << 16).filter(|&r| up(r)).count(), 1 << 14);
        assert_eq!(sr_shift(-5, 2, 65535, 16), -1);
        assert_eq!(sr_shift(-5, 2, 0, 16), -2);
        assert_eq!(sr_shift(7, 0, 65535, 16), 7);
        assert_eq!(sr_shift(7, 16, 65535, 16), 0);
    }

    /// Weight (r, c) of a 3 x 5 layer on a 2 x 2 array takes the draw of
    /// PE (c mod 2, r mod 2) at its tile's (M-block outer) UPDATE.
    #[test]
    fn a_stochastic_update_draws_from_the_pe_and_tile_of_the_weight() {
        let sr = Stochastic {
            seed: 9,
            cycles_per_update: 2,
        };
        let c = Config {
            stochastic: Some(sr),
            ..cfg(2, 2)
        };
        let w = Matrix::zeros(3, 5);
        // dW 2^14 at shift 15 (lr 15, F 0), one half: the step is 1 iff
        // the draw's top bit is set.
        let dw_ = Matrix::from_fn(3, 5, |_, _| 1 << 14);
        let got = update(
            &Config {
                format: Format {
                    acc_bits: 20,
                    ..c.format
                },
                ..c
            },
            &w,
            &dw_,
            15,
        );
        for (r, col) in [(0, 0), (1, 3), (2, 4), (2, 1)] {
            let tile = (r / 2) * 3 + col / 2;
            let mut state = generator(9, col % 2, r % 2);
            for _ in 0..2 * tile + 1 {
                state = xorshift(state);
            }
            assert_eq!(
                got[(r, col)],
                -i128::from(state & 0x8000 != 0),
                "({r}, {col})"
            );
        }
    }

    #[test]
    fn requantize_matrix_is_elementwise() {
        let c = Config {
            format: Format {
                in_bits: 8,
                acc_bits: 16,
                frac_bits: 4,
            },
            ..cfg(1, 1)
        };
        let acc = Matrix::from_rows(&[&[24, -24, 32767]]);
        assert_eq!(
            requantize_matrix(&c, &acc),
            Matrix::from_rows(&[&[2, -1, 127]])
        );
    }

    #[test]
    #[should_panic(expected = "outside 8-bit data")]
    fn values_outside_the_format_are_refused() {
        forward(&cfg(2, 2), &row(&[128]), &column(&[1]));
    }

    #[test]
    #[should_panic(expected = "lr_shift 64")]
    fn lr_shift_beyond_the_port_is_refused() {
        update(&cfg(2, 2), &row(&[1]), &row(&[1]), 64);
    }
}
