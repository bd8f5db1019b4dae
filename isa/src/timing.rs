//! How many cycles each array operation takes (`docs/ARCHITECTURE.md`,
//! Timing; `docs/COMMANDS.md`, Cycles). Every count is linear in the
//! stream length N and the array's rows R and columns C, so it is written
//! once as a [`Cycles`] and evaluated where it is needed: by the driver as
//! it clocks, by the fast mode's ledger as it counts, and by the generator
//! as a Verilog expression over the parameters `R` and `C`.

/// `n_coef * N + row_coef * R + col_coef * C + constant` cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cycles {
    pub n_coef: i64,
    pub row_coef: i64,
    pub col_coef: i64,
    pub constant: i64,
}

impl Cycles {
    /// The count for an array of `rows` x `cols` and a stream of `n` columns.
    pub fn eval(self, rows: usize, cols: usize, n: usize) -> u64 {
        let v = self.n_coef * n as i64
            + self.row_coef * rows as i64
            + self.col_coef * cols as i64
            + self.constant;
        u64::try_from(v).expect("cycle counts are not negative for valid sizes")
    }
}

/// A streaming pass (FWD, BWD_DX, BWD_DW, BWD_IL) of N columns:
/// `N + R + C - 1` cycles, until the last result is in the output registers.
pub const PASS: Cycles = Cycles {
    n_coef: 1,
    row_coef: 1,
    col_coef: 1,
    constant: -1,
};

/// From a column's input to its result at the outputs: `R + C` cycles.
pub const RESULT_LATENCY: Cycles = Cycles {
    n_coef: 0,
    row_coef: 1,
    col_coef: 1,
    constant: 0,
};

/// Shifting a weight tile in (and the previous one out): R LOAD cycles.
pub const LOAD: Cycles = Cycles {
    n_coef: 0,
    row_coef: 1,
    col_coef: 0,
    constant: 0,
};

/// Shifting dW out east: C DRAIN cycles.
pub const DRAIN: Cycles = Cycles {
    n_coef: 0,
    row_coef: 0,
    col_coef: 1,
    constant: 0,
};

/// The in-place SGD update: one UPDATE cycle.
pub const UPDATE: Cycles = Cycles {
    n_coef: 0,
    row_coef: 0,
    col_coef: 0,
    constant: 1,
};

/// REQUANT: one cycle per line (`count` is N).
pub const REQUANT: Cycles = Cycles {
    n_coef: 1,
    row_coef: 0,
    col_coef: 0,
    constant: 0,
};

/// Decoding a command: one cycle per command word fetched (`N` is the
/// number of words).
pub const DECODE: Cycles = Cycles {
    n_coef: 1,
    row_coef: 0,
    col_coef: 0,
    constant: 0,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(PASS.eval(16, 16, 64), 64 + 31);
        assert_eq!(RESULT_LATENCY.eval(3, 5, 9), 8);
        assert_eq!(LOAD.eval(3, 5, 9), 3);
        assert_eq!(DRAIN.eval(3, 5, 9), 5);
        assert_eq!(UPDATE.eval(3, 5, 9), 1);
    }
}
