//! What a run would need, estimated before it allocates: memory and time.
//!
//! Each crate that allocates by input size knows its sizes and says what a
//! run of given inputs needs, as an [`Estimate`], next to the code it
//! estimates (`sysgrad_emulator::budget`, `sysgrad_workloads::budget`, ...).
//! The command line compares the estimate with the user's budget and
//! refuses a run over it before anything is allocated (the policy and its
//! message are `sysgrad`'s `args::Budget`).
//!
//! Estimates are in `f64`: they are approximate by nature, and a product of
//! sizes that would overflow `u64` (three sizes of 2^32) stays a number
//! that is refused, not a wrapped one.

use std::fmt;

/// The memory and time a run would need, and what was estimated.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// What the figures are of, e.g. "the cycle-accurate step of M=... K=...".
    pub what: String,
    /// Peak memory, bytes.
    pub bytes: f64,
    /// Run time, seconds.
    pub seconds: f64,
}

impl Estimate {
    pub fn new(what: impl Into<String>, bytes: f64, seconds: f64) -> Estimate {
        Estimate {
            what: what.into(),
            bytes,
            seconds,
        }
    }

    /// Nothing: the start of a sum.
    pub fn none(what: impl Into<String>) -> Estimate {
        Estimate::new(what, 0.0, 0.0)
    }

    /// `self` and `other` one after the other: the larger memory (what one
    /// part allocates is freed before the next), the sum of the times.
    pub fn then(self, other: &Estimate) -> Estimate {
        Estimate {
            bytes: self.bytes.max(other.bytes),
            seconds: self.seconds + other.seconds,
            ..self
        }
    }

    /// `self` and `other` held at once: both memories and both times.
    pub fn and(self, other: &Estimate) -> Estimate {
        Estimate {
            bytes: self.bytes + other.bytes,
            seconds: self.seconds + other.seconds,
            ..self
        }
    }

    /// The same figures under another description.
    pub fn named(self, what: impl Into<String>) -> Estimate {
        Estimate {
            what: what.into(),
            ..self
        }
    }
}

/// `n` as a float, for estimates (exact below 2^53, close above).
pub fn f(n: usize) -> f64 {
    n as f64
}

/// Bytes in the units a budget is written in: "80.0 GB", "512 MB".
pub struct Bytes(pub f64);

impl fmt::Display for Bytes {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, f64); 5] = [
            ("EB", 1e18),
            ("PB", 1e15),
            ("TB", 1e12),
            ("GB", 1e9),
            ("MB", 1e6),
        ];
        let b = self.0;
        if b >= 1e21 {
            return write!(out, "{b:.1e} bytes");
        }
        match UNITS.iter().find(|(_, scale)| b >= *scale) {
            Some((unit, scale)) => write!(out, "{:.1} {unit}", b / scale),
            None => write!(out, "{:.1} MB", b / 1e6),
        }
    }
}

/// Seconds in the units a budget is written in: "13 s", "2.5 h", "40 years".
pub struct Seconds(pub f64);

impl fmt::Display for Seconds {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        const YEAR: f64 = 365.25 * 86400.0;
        if s >= 1e6 * YEAR {
            write!(out, "{:.1e} years", s / YEAR)
        } else if s >= YEAR {
            write!(out, "{:.1} years", s / YEAR)
        } else if s >= 86400.0 {
            write!(out, "{:.1} days", s / 86400.0)
        } else if s >= 3600.0 {
            write!(out, "{:.1} h", s / 3600.0)
        } else if s >= 60.0 {
            write!(out, "{:.1} min", s / 60.0)
        } else {
            write!(out, "{s:.1} s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_in_sequence_hold_the_larger_memory_and_add_their_times() {
        let a = Estimate::new("a", 10.0, 1.0);
        let b = Estimate::new("b", 4.0, 2.0);
        let seq = a.clone().then(&b);
        assert_eq!(
            (seq.bytes, seq.seconds, seq.what.as_str()),
            (10.0, 3.0, "a")
        );
        let both = a.and(&b);
        assert_eq!((both.bytes, both.seconds), (14.0, 3.0));
    }

    #[test]
    fn sizes_and_times_read_in_their_units() {
        assert_eq!(Bytes(80e9).to_string(), "80.0 GB");
        assert_eq!(Bytes(3e5).to_string(), "0.3 MB");
        assert_eq!(Bytes(2f64.powi(96)).to_string(), "7.9e28 bytes");
        assert_eq!(Seconds(13.0).to_string(), "13.0 s");
        assert_eq!(Seconds(9000.0).to_string(), "2.5 h");
        assert!(Seconds(1e30).to_string().ends_with("years"));
    }
}
