//! How a matrix larger than one line is laid out in a buffer: rows are cut
//! into blocks of `lanes` rows; column `c` of block `b` is one line, at
//! `base + b * cols + c`, row `b * lanes + l` in lane `l`.
//!
//! This one layout serves every operand because each command streams or
//! shifts one line per cycle: X (K x N, lanes = rows), dY and Y (M x N,
//! lanes = cols), dX (K x N, lanes = rows), W (M x K, lanes = cols: line =
//! one K index, as LOAD feeds one array row per cycle) and dW stored
//! transposed (K x M, lanes = rows: a DRAIN line is one row of dW).

use super::buffer::{Buffer, HostError};
use ndarray::{Array2, ArrayView2};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked {
    /// First line.
    pub base: usize,
    pub rows: usize,
    pub cols: usize,
    /// Rows per block: the lanes of the buffer the operand lives in.
    pub lanes: usize,
}

impl Blocked {
    pub fn blocks(&self) -> usize {
        self.rows.div_ceil(self.lanes)
    }
    /// Lines used.
    pub fn lines(&self) -> usize {
        self.blocks() * self.cols
    }
    /// First line after the matrix.
    pub fn end(&self) -> usize {
        self.base + self.lines()
    }
    /// The line holding column `col` of the block that starts at row `row0`.
    pub fn line(&self, row0: usize, col: usize) -> usize {
        debug_assert_eq!(row0 % self.lanes, 0);
        self.base + row0 / self.lanes * self.cols + col
    }

    /// Host write of `m` (rows x cols) into `buf`; lanes past the last row
    /// of a partial block are left as they are.
    pub fn store(&self, buf: &mut Buffer, m: ArrayView2<i64>) -> Result<(), HostError> {
        assert_eq!(m.dim(), (self.rows, self.cols), "matrix shape");
        for ((r, c), &v) in m.indexed_iter() {
            buf.set(self.line(r - r % self.lanes, c), r % self.lanes, v)?;
        }
        Ok(())
    }

    /// Host read of the matrix back from `buf`.
    pub fn load(&self, buf: &Buffer) -> Result<Array2<i64>, HostError> {
        let mut m = Array2::zeros((self.rows, self.cols));
        for ((r, c), v) in m.indexed_iter_mut() {
            *v = buf.get(self.line(r - r % self.lanes, c), r % self.lanes)?;
        }
        Ok(m)
    }
}
