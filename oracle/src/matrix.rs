//! A row-major matrix of `i128`, just enough for the oracle and its callers.

use std::ops::{Index, IndexMut};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<i128>,
}

impl Matrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: vec![0; rows * cols],
        }
    }

    /// Entry `(r, c)` is `f(r, c)`.
    pub fn from_fn(rows: usize, cols: usize, mut f: impl FnMut(usize, usize) -> i128) -> Self {
        let mut m = Matrix::zeros(rows, cols);
        for r in 0..rows {
            for c in 0..cols {
                m[(r, c)] = f(r, c);
            }
        }
        m
    }

    /// From rows given as slices (all of one length); handy for small cases.
    pub fn from_rows(rows: &[&[i128]]) -> Self {
        let cols = rows.first().map_or(0, |r| r.len());
        assert!(
            rows.iter().all(|r| r.len() == cols),
            "rows of different lengths"
        );
        Matrix::from_fn(rows.len(), cols, |r, c| rows[r][c])
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// `(rows, cols)`.
    pub fn dim(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Every entry in row-major order.
    pub fn values(&self) -> impl Iterator<Item = i128> + '_ {
        self.data.iter().copied()
    }

    /// The same shape with `f` applied to every entry.
    pub fn map(&self, f: impl Fn(i128) -> i128) -> Self {
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(|&v| f(v)).collect(),
        }
    }
}

impl Index<(usize, usize)> for Matrix {
    type Output = i128;
    fn index(&self, (r, c): (usize, usize)) -> &i128 {
        assert!(
            r < self.rows && c < self.cols,
            "({r}, {c}) outside {}x{}",
            self.rows,
            self.cols
        );
        &self.data[r * self.cols + c]
    }
}

impl IndexMut<(usize, usize)> for Matrix {
    fn index_mut(&mut self, (r, c): (usize, usize)) -> &mut i128 {
        assert!(
            r < self.rows && c < self.cols,
            "({r}, {c}) outside {}x{}",
            self.rows,
            self.cols
        );
        &mut self.data[r * self.cols + c]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_indexing() {
        let m = Matrix::from_rows(&[&[1, 2, 3], &[4, 5, 6]]);
        assert_eq!(m.dim(), (2, 3));
        assert_eq!(m[(1, 0)], 4);
        assert_eq!(m.values().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(m.map(|v| -v)[(0, 2)], -3);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn out_of_bounds_panics() {
        let _ = Matrix::zeros(2, 2)[(0, 2)];
    }
}
