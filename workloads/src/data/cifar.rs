//! CIFAR-10's binary format: records of one label byte and 3,072 pixel
//! bytes (the red, green and blue 32x32 planes, row-major), with no header;
//! the training set is `data_batch_1.bin` .. `data_batch_5.bin`, the test
//! set `test_batch.bin` (uncompressed, as the archive holds them).

use super::idx::Stream;
use super::{DatasetInfo, Sample};
use crate::error::Result;
use crate::model::Shape;
use std::path::Path;

pub const SHAPE: Shape = Shape { c: 3, h: 32, w: 32 };

/// Bytes of one record: the label, then the pixels.
pub const RECORD: usize = 1 + 3 * 32 * 32;

/// Reads the records of every file in `files`, checking that each file is
/// whole records and every label is below `classes`.
pub fn load(files: &[impl AsRef<Path>], classes: usize) -> Result<Vec<Sample>> {
    let info = DatasetInfo {
        input: SHAPE,
        classes,
        max_pixel: u8::MAX,
    };
    let mut out = Vec::new();
    for path in files {
        let path = path.as_ref();
        let len = std::fs::metadata(path)
            .map_err(|e| crate::error::WorkloadError::io(path, e))?
            .len();
        let mut s = Stream::open(path)?;
        let whole = len / RECORD as u64;
        if len == 0 || len % RECORD as u64 != 0 {
            return Err(s.error(
                whole * RECORD as u64,
                format!(
                    "{len} bytes is not a whole number of {RECORD}-byte records \
                     (a label byte and 3x32x32 pixels); expected {} bytes",
                    whole.max(1) * RECORD as u64
                ),
            ));
        }
        for i in 0..whole {
            let mut label = [0u8; 1];
            s.read(&mut label, || format!("the label of record {i}"))?;
            if label[0] as usize >= classes {
                return Err(s.error(
                    s.offset - 1,
                    format!(
                        "label {} of record {i} is out of range (expected 0..={})",
                        label[0],
                        classes - 1
                    ),
                ));
            }
            let mut pixels = vec![0u8; RECORD - 1];
            s.read(&mut pixels, || {
                format!("the pixels of record {i} (3x32x32)")
            })?;
            out.push(Sample::new(pixels, label[0], &info));
        }
    }
    Ok(out)
}
