//! Data sets: the digits CSV (a seeded train/test split of one file), IDX
//! files (MNIST, Fashion-MNIST; gzip'ed or not) and CIFAR-10's binary
//! batches (both with their official train/test split), chosen by a
//! model's `[data]` section ([`crate::model::DataSpec`]).
//!
//! Pixels stay `u8` (60,000 28x28 images are 47 MB); each batch is scaled
//! to [0, 1] only when it is encoded (`train::encode`).

pub mod cifar;
pub mod digits;
pub mod idx;
mod source;

pub use digits::{load, parse, split};
pub use source::{load_split, DataSource};

use crate::model::Shape;

/// What the workloads know about a data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetInfo {
    pub input: Shape,
    pub classes: usize,
    /// Largest pixel value; inputs are scaled to [0, 1] by it.
    pub max_pixel: u8,
}

pub const DIGITS: DatasetInfo = DatasetInfo {
    input: Shape { c: 1, h: 8, w: 8 },
    classes: 10,
    max_pixel: 16,
};

/// One image (`C*H*W` pixels, channel-major) and its label. It carries its
/// shape and scale so that a batch can be encoded without the data set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub pixels: Vec<u8>,
    pub label: u8,
    pub shape: Shape,
    pub max_pixel: u8,
}

impl Sample {
    pub fn new(pixels: Vec<u8>, label: u8, info: &DatasetInfo) -> Self {
        Sample {
            pixels,
            label,
            shape: info.input,
            max_pixel: info.max_pixel,
        }
    }

    /// The pixel scaled to [0, 1].
    pub fn value(&self, i: usize) -> f64 {
        self.pixels[i] as f64 / self.max_pixel as f64
    }
}

#[derive(Debug, Clone)]
pub struct Split {
    pub train: Vec<Sample>,
    pub test: Vec<Sample>,
}
