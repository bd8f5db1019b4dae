//! Figures that cannot wrap: every cycle count, word count, MAC count and
//! latency the tools report is a `u64`, and a figure computed from input
//! sizes alone (a topology row, a batch, a link latency: no data in memory
//! bounds them) is computed as a [`Count`], whose overflow is sticky and
//! reported once, where the figure is read, as an [`Overflow`] naming it.
//!
//! ```
//! use sysgrad_isa::count::Count;
//! let macs = Count::from(1u64 << 40) * (1u64 << 20) * 2u64;
//! assert_eq!(macs.get("the MACs").unwrap(), 1 << 61);
//! let more = macs * 8u64;
//! assert_eq!(
//!     more.get("the MACs of layer fc1").unwrap_err().to_string(),
//!     "the MACs of layer fc1 exceed 2^64 - 1"
//! );
//! ```
//!
//! Counters that a clocked run increments one cycle at a time (the
//! cycle-accurate array, the controller) and counters of products whose
//! operands are held in memory stay plain `u64`: reaching 2^64 would take
//! centuries of simulation, or matrices larger than any memory (three
//! matrices of M x K, K x N and M x N words bound M K N by their product's
//! square root: under 2^47 for 16 GB of operands).

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

/// A figure that exceeds `u64` (or, for a difference, falls below zero),
/// with what it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    /// What overflowed, e.g. "the training cycles of layer conv1".
    pub what: String,
}

impl Overflow {
    pub fn new(what: impl Into<String>) -> Overflow {
        Overflow { what: what.into() }
    }
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} exceed 2^64 - 1", self.what)
    }
}

impl std::error::Error for Overflow {}

/// A `u64` count, or the knowledge that it exceeded `u64` somewhere in its
/// computation. Arithmetic is checked; once over, it stays over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Count(Option<u64>);

impl Default for Count {
    /// Zero (not over).
    fn default() -> Count {
        Count::ZERO
    }
}

impl Count {
    pub const ZERO: Count = Count(Some(0));
    /// A count known to exceed `u64`.
    pub const OVER: Count = Count(None);

    /// The value, or an [`Overflow`] naming `what` the count is.
    pub fn get(self, what: impl Into<String>) -> Result<u64, Overflow> {
        self.0.ok_or_else(|| Overflow::new(what))
    }

    /// The value, if it fits.
    pub fn value(self) -> Option<u64> {
        self.0
    }

    pub fn is_over(self) -> bool {
        self.0.is_none()
    }

    /// The larger of two counts (over is larger than any value).
    pub fn max(self, o: Count) -> Count {
        Count(self.0.zip(o.0).map(|(a, b)| a.max(b)))
    }

    /// The smaller of two counts.
    pub fn min(self, o: Count) -> Count {
        match (self.0, o.0) {
            (Some(a), Some(b)) => Count(Some(a.min(b))),
            (Some(a), None) | (None, Some(a)) => Count(Some(a)),
            (None, None) => Count::OVER,
        }
    }

    /// `self / d` rounded up (`d` > 0).
    pub fn div_ceil(self, d: u64) -> Count {
        Count(self.0.map(|a| a.div_ceil(d)))
    }
}

/// `self / d` rounded down (`d` > 0).
impl Div<u64> for Count {
    type Output = Count;
    fn div(self, d: u64) -> Count {
        Count(self.0.map(|a| a / d))
    }
}

impl From<u64> for Count {
    fn from(v: u64) -> Count {
        Count(Some(v))
    }
}

impl From<usize> for Count {
    fn from(v: usize) -> Count {
        Count(u64::try_from(v).ok())
    }
}

impl From<u128> for Count {
    fn from(v: u128) -> Count {
        Count(u64::try_from(v).ok())
    }
}

impl From<Overflow> for Count {
    fn from(_: Overflow) -> Count {
        Count::OVER
    }
}

macro_rules! checked_op {
    ($trait:ident, $method:ident, $checked:ident) => {
        impl $trait for Count {
            type Output = Count;
            fn $method(self, o: Count) -> Count {
                Count(self.0.zip(o.0).and_then(|(a, b)| a.$checked(b)))
            }
        }
        impl $trait<u64> for Count {
            type Output = Count;
            fn $method(self, o: u64) -> Count {
                self.$method(Count::from(o))
            }
        }
        impl $trait<usize> for Count {
            type Output = Count;
            fn $method(self, o: usize) -> Count {
                self.$method(Count::from(o))
            }
        }
    };
}

checked_op!(Add, add, checked_add);
checked_op!(Mul, mul, checked_mul);
// A difference below zero is out of range like one above 2^64 - 1; the
// figures subtract only a part from its whole.
checked_op!(Sub, sub, checked_sub);

impl AddAssign for Count {
    fn add_assign(&mut self, o: Count) {
        *self = *self + o;
    }
}

impl AddAssign<u64> for Count {
    fn add_assign(&mut self, o: u64) {
        *self = *self + o;
    }
}

impl Sum for Count {
    fn sum<I: Iterator<Item = Count>>(it: I) -> Count {
        it.fold(Count::ZERO, |a, b| a + b)
    }
}

impl Sum<u64> for Count {
    fn sum<I: Iterator<Item = u64>>(it: I) -> Count {
        it.fold(Count::ZERO, |a, b| a + b)
    }
}

/// The checked sum of `values`, named `what` if it overflows.
pub fn sum(values: impl IntoIterator<Item = u64>, what: &str) -> Result<u64, Overflow> {
    values.into_iter().sum::<Count>().get(what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_is_sticky_and_named() {
        let c = Count::from(u64::MAX) + 1u64;
        assert!(c.is_over());
        let zero = Count::ZERO;
        assert!((c * zero).is_over(), "over times zero stays over");
        assert!((c - 5u64).is_over());
        assert_eq!(c.max(Count::from(3u64)), Count::OVER);
        assert_eq!(c.min(Count::from(3u64)), Count::from(3u64));
        assert_eq!(
            c.get("the cycles").unwrap_err().to_string(),
            "the cycles exceed 2^64 - 1"
        );
        assert!((Count::from(2u64) - 3u64).is_over());
        assert_eq!(Count::from(u128::from(u64::MAX) + 1), Count::OVER);
        assert_eq!(sum([u64::MAX, 0], "x"), Ok(u64::MAX));
        assert!(sum([u64::MAX, 1], "x").is_err());
    }

    #[test]
    fn exact_below_the_limit() {
        let c = Count::from(7u64) * 3u64 + 2u64 - 1u64;
        assert_eq!(c.get("x"), Ok(22));
        assert_eq!(c.div_ceil(4).get("x"), Ok(6));
        assert_eq!((c / 4).get("x"), Ok(5));
        assert_eq!(Count::default(), Count::ZERO);
    }
}
