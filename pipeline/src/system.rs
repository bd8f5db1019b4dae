//! The multi-array system: P arrays (each with its own configuration) in a
//! line, stage s on array s, joined by links that carry activations forward
//! and gradients backward.

use crate::error::{PipelineError, Result};
use serde::Serialize;
use sysgrad_config::ArrayConfig;

/// A link between neighbouring arrays, one per direction (full duplex).
/// A message of `w` words occupies the link for `ceil(w / width)` cycles
/// (messages queue behind each other) and arrives `latency` cycles after
/// its last word left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Link {
    /// Words per cycle; `None` is an ideal link (no serialisation).
    pub width: Option<u64>,
    /// Cycles from the last word sent to the message usable.
    pub latency: u64,
}

impl Link {
    pub fn ideal() -> Link {
        Link {
            width: None,
            latency: 0,
        }
    }

    pub fn new(width: u64, latency: u64) -> Result<Link> {
        if width == 0 {
            return Err(PipelineError::out_of_range(
                "link width",
                0,
                "1 or more words per cycle",
            ));
        }
        Ok(Link {
            width: Some(width),
            latency,
        })
    }

    /// Cycles a message of `words` words occupies the link.
    pub fn occupancy(&self, words: u64) -> u64 {
        self.width.map_or(0, |w| words.div_ceil(w))
    }
}

/// The arrays and the links of the system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct System {
    pub arrays: Vec<ArrayConfig>,
    pub link: Link,
    /// The clock at which cycles become seconds.
    pub clock_mhz: f64,
}

impl System {
    /// `p` copies of `array`.
    pub fn uniform(array: ArrayConfig, p: usize, link: Link, clock_mhz: f64) -> Result<System> {
        if !(1..=MAX_ARRAYS).contains(&p) {
            return Err(PipelineError::out_of_range(
                "arrays",
                p,
                format!("1..={MAX_ARRAYS}"),
            ));
        }
        Self::new(vec![array; p], link, clock_mhz)
    }

    /// Arrays of possibly different sizes; all must share one number
    /// format, since activations and gradients pass between them as data.
    pub fn new(arrays: Vec<ArrayConfig>, link: Link, clock_mhz: f64) -> Result<System> {
        if arrays.is_empty() || arrays.len() > MAX_ARRAYS {
            return Err(PipelineError::out_of_range(
                "arrays",
                arrays.len(),
                format!("1..={MAX_ARRAYS}"),
            ));
        }
        if let Some((i, a)) = arrays
            .iter()
            .enumerate()
            .find(|(_, a)| a.format() != arrays[0].format())
        {
            return Err(PipelineError::out_of_range(
                format!("arrays[{i}].format"),
                format!("{:?}", a.format()),
                format!("the format of arrays[0], {:?}", arrays[0].format()),
            ));
        }
        if !(clock_mhz > 0.0 && clock_mhz.is_finite()) {
            return Err(PipelineError::out_of_range(
                "clock (MHz)",
                clock_mhz,
                "a positive number",
            ));
        }
        Ok(System {
            arrays,
            link,
            clock_mhz,
        })
    }

    pub fn stages(&self) -> usize {
        self.arrays.len()
    }
}

/// The most arrays a system may have.
pub const MAX_ARRAYS: usize = 64;
