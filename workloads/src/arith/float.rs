//! The f32 reference: the same network in plain floating point.

use super::{Arith, Site, Step};
use crate::error::Result;
use ndarray::{Array2, ArrayView2};

/// `a b` on rayon's threads, cut into the fixed-size blocks of the
/// fixed-point kernel ([`sysgrad_emulator::fast::kernel::in_blocks`]), so
/// the f32 reference gets the same cores as the fixed-point network.
pub fn par_dot(a: ArrayView2<f32>, b: ArrayView2<f32>) -> Array2<f32> {
    sysgrad_emulator::fast::kernel::in_blocks(a, b, |a, b| a.dot(&b))
}

#[derive(Debug, Clone)]
pub struct FloatArith {
    pub step: Step,
}

impl FloatArith {
    pub fn new(step: Step) -> Self {
        FloatArith { step }
    }
}

impl Arith for FloatArith {
    super::host_f32_ops!();

    fn matmul(
        &mut self,
        _site: Site,
        w: ArrayView2<f32>,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        Ok(par_dot(w, x))
    }

    fn backward(
        &mut self,
        _layer: usize,
        w: &mut Array2<f32>,
        velocity: Option<&mut Array2<f32>>,
        x: ArrayView2<f32>,
        dy: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        let (dx, dw) = rayon::join(|| par_dot(w.t(), dy), || par_dot(dy, x.t()));
        let lr = (-(self.step.lr_shift as f64)).exp2() as f32;
        match (self.step.momentum, velocity) {
            (Some(mu), Some(v)) => {
                let mu = mu as f32;
                v.zip_mut_with(&dw, |v, d| *v = mu * *v + d);
                w.zip_mut_with(v, |w, v| *w -= lr * v);
            }
            _ => w.zip_mut_with(&dw, |w, d| *w -= lr * d),
        }
        Ok(dx)
    }
}
