//! Turning samples into the input tensor `(C, T*B, H, W)` of real values,
//! shared by both networks (each rounds it to its own format), so that the
//! rate-coded spikes are the same for both.

use crate::data::Sample;
use crate::model::{Encoding, InputSpec};
use ndarray::Array4;
use sysgrad_rng::Rng;

pub fn encode(samples: &[&Sample], input: &InputSpec, rng: &mut Rng) -> Array4<f64> {
    let Some(first) = samples.first() else {
        return Array4::zeros((1, 0, 1, 1));
    };
    let s = first.shape;
    let (b, t) = (samples.len(), input.time_steps);
    let mut x = Array4::zeros((s.c, t * b, s.h, s.w));
    for step in 0..t {
        for (j, sample) in samples.iter().enumerate() {
            for c in 0..s.c {
                for y in 0..s.h {
                    for xx in 0..s.w {
                        let p = sample.value((c * s.h + y) * s.w + xx);
                        x[[c, step * b + j, y, xx]] = match input.encoding {
                            Encoding::Analog => p,
                            Encoding::Rate => (rng.next_f64() < p) as u8 as f64,
                        };
                    }
                }
            }
        }
    }
    x
}

pub fn labels(samples: &[&Sample]) -> Vec<u8> {
    samples.iter().map(|s| s.label).collect()
}
