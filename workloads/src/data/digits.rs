//! The digits data set (1797 8x8 images, pixels 0..16, labels 0..9) read
//! from CSV or gzip'ed CSV, and its seeded train/test split.

use super::{Sample, Split, DIGITS};
use crate::error::{Result, WorkloadError};
use std::io::Read;
use std::path::Path;
use sysgrad_rng::Rng;

/// Reads `path` (gzip'ed if it ends in `.gz`): one sample per line, 64
/// pixels then the label, comma separated, no header.
pub fn load(path: &Path) -> Result<Vec<Sample>> {
    let raw = std::fs::read(path).map_err(|e| WorkloadError::io(path, e))?;
    let text = if path.extension().is_some_and(|e| e == "gz") {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_string(&mut s)
            .map_err(|e| WorkloadError::io(path, e))?;
        s
    } else {
        String::from_utf8(raw).map_err(|e| WorkloadError::Data {
            path: path.to_path_buf(),
            line: 0,
            message: format!("not UTF-8 text: {e}"),
        })?
    };
    parse(&text, path)
}

pub fn parse(text: &str, path: &Path) -> Result<Vec<Sample>> {
    let pixels = DIGITS.input.size();
    let err = |line: usize, message: String| WorkloadError::Data {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != pixels + 1 {
            return Err(err(
                line_no,
                format!(
                    "{} fields, expected {} pixels and a label",
                    fields.len(),
                    pixels
                ),
            ));
        }
        let mut values = Vec::with_capacity(fields.len());
        for (col, f) in fields.iter().enumerate() {
            let (max, what) = if col < pixels {
                (DIGITS.max_pixel as u32, "pixel")
            } else {
                (DIGITS.classes as u32 - 1, "label")
            };
            let v: u32 = f.parse().map_err(|_| {
                err(
                    line_no,
                    format!("field {} ({what}) = `{f}` is not an integer", col + 1),
                )
            })?;
            if v > max {
                return Err(err(
                    line_no,
                    format!("field {} ({what}) = {v} is out of range 0..={max}", col + 1),
                ));
            }
            values.push(v as u8);
        }
        let label = values.pop().unwrap();
        out.push(Sample::new(values, label, &DIGITS));
    }
    if out.is_empty() {
        return Err(err(0, "no samples".into()));
    }
    Ok(out)
}

/// A seeded shuffle, then the first `test_fraction` of it is the test set.
pub fn split(samples: &[Sample], test_fraction: f64, seed: u64) -> Result<Split> {
    if samples.len() < 2 {
        return Err(WorkloadError::model(
            "data",
            format!(
                "{} samples cannot be split into a training and a test set",
                samples.len()
            ),
        ));
    }
    let mut idx: Vec<usize> = (0..samples.len()).collect();
    Rng::derive(seed, "split").shuffle(&mut idx);
    let n_test =
        ((samples.len() as f64 * test_fraction).round() as usize).clamp(1, samples.len() - 1);
    let pick = |ix: &[usize]| ix.iter().map(|&i| samples[i].clone()).collect();
    Ok(Split {
        test: pick(&idx[..n_test]),
        train: pick(&idx[n_test..]),
    })
}
