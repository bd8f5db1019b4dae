//! How many cycles each array operation takes (`docs/ARCHITECTURE.md`,
//! Timing; `docs/COMMANDS.md`, Cycles). Every count is linear in the
//! stream length N, the array's rows R and columns C and its product
//! stages Q (1 with a multiplier register, else 0), so it is written once
//! as a [`Cycles`] and evaluated where it is needed: by the driver as it
//! clocks, by the fast mode's ledger as it counts, and by the generator as
//! a Verilog expression over the parameters `R`, `C` and `MUL_REG`.

use crate::count::Count;
use sysgrad_config::ArrayConfig;

/// `n_coef * N + row_coef * R + col_coef * C + mul_reg_coef * Q + constant`
/// cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cycles {
    pub n_coef: i64,
    pub row_coef: i64,
    pub col_coef: i64,
    pub mul_reg_coef: i64,
    pub constant: i64,
}

impl Cycles {
    /// The count on `cfg`'s array for a stream of `n` columns held in
    /// memory, for a run that clocks it: exact for every `n` up to
    /// `isize::MAX` (the longest slice) on every array `ArrayConfig`
    /// accepts, since `n + R + C + Q` stays below 2^64. A figure computed
    /// from sizes alone uses [`Cycles::count`].
    pub fn eval(self, cfg: &ArrayConfig, n: usize) -> u64 {
        self.eval_dims(cfg.rows(), cfg.cols(), cfg.product_stages(), n)
    }

    /// [`Cycles::eval`] for an array of `rows` x `cols` with `stages`
    /// product stages (saturating at `u64::MAX`, which the sizes it is
    /// documented for never reach).
    pub fn eval_dims(self, rows: usize, cols: usize, stages: usize, n: usize) -> u64 {
        self.count(rows, cols, stages, n as u64)
            .value()
            .unwrap_or(u64::MAX)
    }

    /// The count for an array of `rows` x `cols` with `stages` product
    /// stages and a stream of `n` columns, checked: over if it exceeds
    /// `u64` (or is negative, which no array of one row or more gives).
    pub fn count(self, rows: usize, cols: usize, stages: usize, n: u64) -> Count {
        // Five products of an i64 and a u64 sum to well within i128.
        let term = |coef: i64, v: u64| i128::from(coef) * i128::from(v);
        let v = term(self.n_coef, n)
            + term(self.row_coef, rows as u64)
            + term(self.col_coef, cols as u64)
            + term(self.mul_reg_coef, stages as u64)
            + i128::from(self.constant);
        u64::try_from(v).map_or(Count::OVER, Count::from)
    }

    /// The count on an array without product stages (a dense array, whose
    /// PE has no multiplier register), where the generator has no
    /// `MUL_REG` parameter to write.
    pub fn without_product_stages(self) -> Cycles {
        Cycles {
            mul_reg_coef: 0,
            ..self
        }
    }
}

/// A streaming pass (FWD, BWD_DX, BWD_DW, BWD_IL) of N columns:
/// `N + R + C - 1 + Q` cycles, until the last result is in the output
/// registers (a multiplier register delays every result by one).
pub const PASS: Cycles = Cycles {
    n_coef: 1,
    row_coef: 1,
    col_coef: 1,
    mul_reg_coef: 1,
    constant: -1,
};

/// From a column's input to its result at the outputs: `R + C + Q` cycles.
pub const RESULT_LATENCY: Cycles = Cycles {
    n_coef: 0,
    row_coef: 1,
    col_coef: 1,
    mul_reg_coef: 1,
    constant: 0,
};

/// Shifting a weight tile in (and the previous one out): R LOAD cycles.
pub const LOAD: Cycles = Cycles {
    n_coef: 0,
    row_coef: 1,
    col_coef: 0,
    mul_reg_coef: 0,
    constant: 0,
};

/// Shifting dW out east: C DRAIN cycles.
pub const DRAIN: Cycles = Cycles {
    n_coef: 0,
    row_coef: 0,
    col_coef: 1,
    mul_reg_coef: 0,
    constant: 0,
};

/// The in-place SGD update: one UPDATE cycle, two with a multiplier
/// register (whose `prod_dw` holds the rounded step between them).
pub const UPDATE: Cycles = Cycles {
    n_coef: 0,
    row_coef: 0,
    col_coef: 0,
    mul_reg_coef: 1,
    constant: 1,
};

/// REQUANT: one cycle per line (`count` is N).
pub const REQUANT: Cycles = Cycles {
    n_coef: 1,
    row_coef: 0,
    col_coef: 0,
    mul_reg_coef: 0,
    constant: 0,
};

/// Decoding a command: one cycle per command word fetched (`N` is the
/// number of words).
pub const DECODE: Cycles = Cycles {
    n_coef: 1,
    row_coef: 0,
    col_coef: 0,
    mul_reg_coef: 0,
    constant: 0,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(PASS.eval_dims(16, 16, 0, 64), 64 + 31);
        assert_eq!(PASS.eval_dims(16, 16, 1, 64), 64 + 32);
        assert_eq!(RESULT_LATENCY.eval_dims(3, 5, 0, 9), 8);
        assert_eq!(RESULT_LATENCY.eval_dims(3, 5, 1, 9), 9);
        for stages in 0..2 {
            assert_eq!(LOAD.eval_dims(3, 5, stages, 9), 3);
            assert_eq!(DRAIN.eval_dims(3, 5, stages, 9), 5);
            assert_eq!(UPDATE.eval_dims(3, 5, stages, 9), 1 + stages as u64);
        }
    }

    /// The panic of issue 28 (`n as i64` negative for a stream of 2^63
    /// columns or more): an overflow is reported, not a negative count.
    #[test]
    fn huge_streams_overflow_instead_of_panicking() {
        assert_eq!(PASS.count(16, 16, 0, u64::MAX), Count::OVER);
        assert_eq!(PASS.count(16, 16, 0, 1 << 63).value(), Some((1 << 63) + 31));
        assert_eq!(PASS.eval_dims(16, 16, 0, usize::MAX), u64::MAX);
        assert_eq!(REQUANT.count(1, 1, 0, u64::MAX).value(), Some(u64::MAX));
        assert_eq!(RESULT_LATENCY.count(0, 0, 0, 0).value(), Some(0));
        assert_eq!(PASS.count(0, 0, 0, 0), Count::OVER, "negative");
    }
}
