//! What the directed Icarus tests share: operands, and the packing of
//! lanes into Verilog literals and back.

use std::fmt::Write;
use sysgrad_config::fixed::{max_of, min_of};

/// Matrices are `Vec` of rows: `W[j][i]`, `X[i][n]`, `dY[j][n]`.
pub type Mat = Vec<Vec<i64>>;

pub struct Rng(pub u64);

impl Rng {
    pub fn data(&mut self, bits: u32) -> i64 {
        // xorshift64: deterministic and dependency-free.
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        // A third of the values are extremes, so that sums saturate.
        match self.0 % 6 {
            0 => min_of(bits),
            1 => max_of(bits),
            _ => min_of(bits) + (self.0 / 6 % (1u64 << bits)) as i64,
        }
    }
    pub fn mat(&mut self, rows: usize, cols: usize, bits: u32) -> Mat {
        (0..rows)
            .map(|_| (0..cols).map(|_| self.data(bits)).collect())
            .collect()
    }
}

/// `width'h...` literal of lanes of `w` bits each, lane 0 lowest.
pub fn packed(vals: &[i64], w: u32) -> String {
    let bits: Vec<bool> = vals
        .iter()
        .flat_map(|v| (0..w).map(move |b| (*v as u64 >> b) & 1 == 1))
        .collect();
    let mut hex = String::new();
    for d in (0..bits.len().div_ceil(4)).rev() {
        let nib = (0..4).fold(0, |n, b| {
            n | ((bits.get(4 * d + b) == Some(&true)) as u32) << b
        });
        write!(hex, "{nib:x}").unwrap();
    }
    format!("{}'h{hex}", bits.len())
}

/// Lanes of `w` bits, signed, from `%h` output; `None` if any bit is x/z.
pub fn unpack(hex: &str, w: u32, lanes: usize) -> Option<Vec<i64>> {
    if !hex.chars().all(|ch| ch.is_ascii_hexdigit()) {
        return None;
    }
    let bits: Vec<bool> = hex
        .chars()
        .rev()
        .flat_map(|ch| {
            let n = ch.to_digit(16).unwrap();
            (0..4).map(move |b| (n >> b) & 1 == 1)
        })
        .collect();
    let lanes = (0..lanes)
        .map(|k| {
            let raw = (0..w as usize).fold(0i64, |v, b| v | (bits[k * w as usize + b] as i64) << b);
            if bits[k * w as usize + w as usize - 1] {
                raw - (1i64 << w)
            } else {
                raw
            }
        })
        .collect();
    Some(lanes)
}
