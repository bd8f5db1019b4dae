//! [`PeArith`] for the fixed-point formats (`sysgrad_config::fixed`):
//! two's-complement data of DW bits with F fractional bits, accumulators
//! of AW bits that saturate, and deferred saturation
//! (`docs/ARCHITECTURE.md`, Deferred saturation).

use super::arith::{PeArith, Product};
use sysgrad_config::float::{Rounding, StochasticBits};
use sysgrad_config::{fixed, FixedFormat};

/// The fixed-point arithmetic of a format's PEs, with deferred saturation
/// if `DEFERRED` (a type, so that the hot loops are compiled for one).
///
/// An accumulator register's value read from it is clamped to `read` (AW
/// bits), a sum written into it to `write` (AW bits; with deferred
/// saturation the AW+1 bits of the exact sum of two AW-bit values, which
/// no add leaves, so the register holds the exact sum and its readers
/// clamp it). With deferred saturation `w` likewise holds the exact
/// difference an UPDATE left (DW+2 bits), and the PE presents it clamped.
/// Without, every register holds an in-range value, which its readers
/// take as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed<const DEFERRED: bool = false> {
    read: (i64, i64),
    write: (i64, i64),
    /// DW, AW and F.
    in_bits: u32,
    acc_bits: u32,
    frac_bits: u32,
    /// The update's rounding and its generators' seed.
    rounding: Rounding,
    seed: u32,
}

impl<const DEFERRED: bool> Fixed<DEFERRED> {
    /// The arithmetic of format `f`.
    pub fn new(format: FixedFormat) -> Self {
        let f = format.widths;
        let range = |n| (fixed::min_of(n), fixed::max_of(n));
        Fixed {
            read: range(f.acc_bits),
            write: range(f.acc_bits + u32::from(DEFERRED)),
            in_bits: f.in_bits,
            acc_bits: f.acc_bits,
            frac_bits: f.frac_bits,
            rounding: format.rounding,
            seed: format.seed,
        }
    }

    /// The step `dw * 2^-(F + lr)` as the update rounds it, unclamped.
    #[inline(always)]
    fn rounded_step(self, dw: i64, lr: u32, r: u32) -> i64 {
        let s = self.frac_bits + lr;
        fixed::update_step(self.read(dw), s, self.acc_bits, self.rounding, r)
    }

    /// [`PeArith::add`] for a `sum` known to be in the read range.
    #[inline(always)]
    fn add_in_range(self, sum: i64, p: i64) -> i64 {
        (sum + p).clamp(self.write.0, self.write.1)
    }
}

impl<const DEFERRED: bool> PeArith for Fixed<DEFERRED> {
    /// The PE's xorshift generator: its state is the RTL's `sr_state`
    /// (a PE that rounds to nearest has none; this one steps unread).
    type Generator = StochasticBits;

    fn generator(self, row: usize, col: usize) -> StochasticBits {
        StochasticBits::new(self.seed, row, col)
    }

    #[inline(always)]
    fn draw(self, g: &mut StochasticBits) -> u32 {
        g.draw()
    }

    fn sr_state(g: &StochasticBits) -> Option<u32> {
        Some(g.state)
    }

    /// Data values have at most 16 bits (`sysgrad_config::IN_BITS`), so
    /// their 32-bit truncations multiply exactly into 64 bits, which AVX2
    /// does four at a time (it has no 64 x 64-bit multiply).
    #[inline(always)]
    fn product(self, _: Product, a: i64, b: i64) -> i64 {
        i64::from(a as i32) * i64::from(b as i32)
    }

    #[inline(always)]
    fn read(self, sum: i64) -> i64 {
        if DEFERRED {
            sum.clamp(self.read.0, self.read.1)
        } else {
            sum
        }
    }

    #[inline(always)]
    fn add(self, sum: i64, p: i64) -> i64 {
        self.add_in_range(self.read(sum), p)
    }

    /// The moving registers move before this, so every operand lines up
    /// with the PE it feeds and a block of rows is one loop: resliced to
    /// one length, without bounds checks or branches, it vectorises.
    #[inline(always)]
    fn accumulate(
        self,
        which: Product,
        sums: &mut [i64],
        a: &[i64],
        b: &[i64],
        valid: Option<&[bool]>,
    ) {
        let add = |sum: i64, p: i64| self.add(sum, p);
        let n = sums.len();
        let (a, b) = (&a[..n], &b[..n]);
        match valid {
            None => {
                for k in 0..n {
                    sums[k] = add(sums[k], self.product(which, a[k], b[k]));
                }
            }
            Some(valid) => {
                let valid = &valid[..n];
                for k in 0..n {
                    // An invalid dy leaves the register as it is (the RTL's
                    // dw_en); adding 0 to an in-range value does the same.
                    sums[k] = if DEFERRED {
                        let added = add(sums[k], self.product(which, a[k], b[k]));
                        if valid[k] {
                            added
                        } else {
                            sums[k]
                        }
                    } else {
                        // 0 or all ones: a select without a branch.
                        let keep = -i64::from(valid[k]);
                        add(sums[k], self.product(which, a[k], b[k]) & keep)
                    };
                }
            }
        }
    }

    /// `w` clamped to DW bits (without deferred saturation `w` is in range
    /// and this is `w` itself).
    #[inline(always)]
    fn shown(self, w: i64) -> i64 {
        fixed::sat(w, self.in_bits)
    }

    /// `sat(w - round_shift(dw, F + lr), DW)` (`sr_shift` with draw `r`
    /// when stochastic); with deferred saturation the exact difference,
    /// with the step clamped ([`PeArith::step`]).
    #[inline(always)]
    fn sgd(self, shown: i64, dw: i64, lr: u32, r: u32) -> i64 {
        if DEFERRED {
            // ARCHITECTURE.md, Deferred saturation.
            shown - self.step(dw, lr, r)
        } else {
            fixed::sat(shown - self.rounded_step(dw, lr, r), self.in_bits)
        }
    }

    /// The step of a PE whose `dw` register holds `dw`, rounded at shift
    /// F + `lr` and clamped to DW+1 bits: every weight is below 2^(DW-1)
    /// in magnitude, so a larger step saturates it alike, and the
    /// subtract is DW+2 bits wide.
    #[inline(always)]
    fn step(self, dw: i64, lr: u32, r: u32) -> i64 {
        fixed::sat(self.rounded_step(dw, lr, r), self.in_bits + 1)
    }

    /// Saturated to DW bits, or with deferred saturation the exact
    /// difference. `step` is clamped to DW+1 bits first: a step is within
    /// them, but an UPDATE right after a pass cut short finds a raw
    /// product in `prod_dw` (ARCHITECTURE.md, Multiplier register); the
    /// clamp saturates `w` alike and keeps the difference in DW+2 bits.
    #[inline(always)]
    fn minus_step(self, shown: i64, step: i64, _: u32) -> i64 {
        let diff = shown - fixed::sat(step, self.in_bits + 1);
        if DEFERRED {
            diff
        } else {
            fixed::sat(diff, self.in_bits)
        }
    }
}
