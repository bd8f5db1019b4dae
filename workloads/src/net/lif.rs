//! Leaky integrate-and-fire neurons, following snnTorch's `Leaky`:
//!
//! ```text
//! reset_t = S_{t-1}                      (the previous step's spike)
//! mem_t   = beta * mem_{t-1} + I_t - reset_t * threshold     (reset = subtract)
//! mem_t   = beta * (1 - reset_t) * mem_{t-1} + I_t           (reset = zero)
//! S_t     = 1 if mem_t > threshold else 0                     (strictly greater)
//! ```
//!
//! with `mem_{-1} = 0`. A membrane exactly at the threshold does not spike.
//! The backward pass is BPTT with the reset detached from the graph (as
//! snnTorch does) and the Heaviside step replaced by a surrogate derivative:
//!
//! ```text
//! dL/dmem_t = dL/dS_t * surrogate(mem_t - threshold) + dL/dmem_{t+1} * dmem_{t+1}/dmem_t
//!            (dL/dS_t * surrogate is replaced by dL/dout_t for a membrane readout)
//! dmem_{t+1}/dmem_t = beta (subtract) or beta * (1 - S_t) (zero)
//! dL/dI_t  = dL/dmem_t
//! ```
//!
//! In fixed point every product is rounded to the data format
//! ([`Arith::mul`]) and every sum saturates; the surrogate is evaluated on
//! the fixed-point membrane and rounded to the data format, i.e. what a
//! lookup table indexed by the membrane would hold.

use super::tensor::Tensor;
use crate::arith::Arith;
use crate::model::{LifOutput, Reset, Surrogate};
use ndarray::{Array4, Axis};

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LifParams {
    pub beta: f64,
    pub threshold: f64,
    pub reset: Reset,
    pub surrogate: Surrogate,
    pub slope: f64,
    pub output: LifOutput,
}

impl LifParams {
    /// The surrogate derivative of the spike at `u = mem - threshold`.
    pub fn surrogate_grad(&self, u: f64) -> f64 {
        match self.surrogate {
            Surrogate::FastSigmoid => 1.0 / (1.0 + self.slope * u.abs()).powi(2),
            Surrogate::Arctan => {
                let a = std::f64::consts::PI * self.slope * u / 2.0;
                (self.slope / 2.0) / (1.0 + a * a)
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Lif<V> {
    pub params: LifParams,
    /// Membrane and spikes of the last training forward pass.
    cache: Option<(Tensor<V>, Tensor<V>)>,
    pub spikes: u64,
    pub neuron_steps: u64,
}

/// The membrane and spike trains for input currents `current` over
/// `steps` time steps (columns `t * batch .. (t+1) * batch`).
pub fn run<A: Arith>(
    ar: &A,
    p: &LifParams,
    current: &Tensor<A::V>,
    steps: usize,
) -> (Tensor<A::V>, Tensor<A::V>) {
    let (c, n, h, w) = current.dim();
    let batch = n / steps;
    let (beta, thr, one, zero) = (
        ar.quantize(p.beta),
        ar.quantize(p.threshold),
        ar.quantize(1.0),
        ar.zero(),
    );
    let mut mem = Array4::from_elem((c, n, h, w), zero);
    let mut spk = Array4::from_elem((c, n, h, w), zero);
    let mut m_prev = Array4::from_elem((c, batch, h, w), zero);
    let mut s_prev = Array4::from_elem((c, batch, h, w), zero);
    for t in 0..steps {
        let cols = ndarray::Slice::from(t * batch..(t + 1) * batch);
        let i_t = current.slice_axis(Axis(1), cols);
        ndarray::Zip::from(&mut m_prev)
            .and(&mut s_prev)
            .and(&i_t)
            .for_each(|m, s, &i| {
                let fired = *s == one;
                let next = match (p.reset, fired) {
                    (Reset::Subtract, true) => ar.sub(ar.add(ar.mul(beta, *m), i), thr),
                    (Reset::Subtract, false) => ar.add(ar.mul(beta, *m), i),
                    (Reset::Zero, true) => i,
                    (Reset::Zero, false) => ar.add(ar.mul(beta, *m), i),
                };
                *m = next;
                *s = if next > thr { one } else { zero };
            });
        mem.slice_axis_mut(Axis(1), cols).assign(&m_prev);
        spk.slice_axis_mut(Axis(1), cols).assign(&s_prev);
    }
    (mem, spk)
}

impl<V: Copy + PartialEq + PartialOrd + Default> Lif<V> {
    pub fn new(params: LifParams) -> Self {
        Lif {
            params,
            cache: None,
            spikes: 0,
            neuron_steps: 0,
        }
    }

    pub fn forward<A: Arith<V = V>>(
        &mut self,
        ar: &A,
        current: &Tensor<V>,
        steps: usize,
        training: bool,
    ) -> Tensor<V> {
        let (mem, spk) = run(ar, &self.params, current, steps);
        if training {
            let one = ar.quantize(1.0);
            self.spikes += spk.iter().filter(|&&s| s == one).count() as u64;
            self.neuron_steps += spk.len() as u64;
            self.cache = Some((mem.clone(), spk.clone()));
        }
        match self.params.output {
            LifOutput::Spikes => spk,
            LifOutput::Membrane => mem,
        }
    }

    /// dL/dI from the gradient of the output (dL/dS, or dL/dmem for a
    /// membrane readout) by BPTT.
    pub fn backward<A: Arith<V = V>>(
        &mut self,
        ar: &A,
        d_out: &Tensor<V>,
        steps: usize,
    ) -> Option<Tensor<V>> {
        let (mem, spk) = self.cache.take()?;
        let p = &self.params;
        let (c, n, h, w) = mem.dim();
        let batch = n / steps;
        let (beta, one, zero) = (ar.quantize(p.beta), ar.quantize(1.0), ar.zero());
        let thr = ar.real(ar.quantize(p.threshold));
        let mut d_cur = Array4::from_elem((c, n, h, w), zero);
        // dL/dmem_{t+1}, carried back one step at a time.
        let mut carry = Array4::from_elem((c, batch, h, w), zero);
        for t in (0..steps).rev() {
            let cols = ndarray::Slice::from(t * batch..(t + 1) * batch);
            let mut d_t = d_cur.slice_axis_mut(Axis(1), cols);
            ndarray::Zip::from(&mut d_t)
                .and(&mut carry)
                .and(mem.slice_axis(Axis(1), cols))
                .and(spk.slice_axis(Axis(1), cols))
                .and(d_out.slice_axis(Axis(1), cols))
                .for_each(|d, carry, &m, &s, &g| {
                    let direct = match p.output {
                        LifOutput::Spikes => {
                            ar.mul(g, ar.quantize(p.surrogate_grad(ar.real(m) - thr)))
                        }
                        LifOutput::Membrane => g,
                    };
                    // dmem_{t+1}/dmem_t depends on this step's spike.
                    let decay = match p.reset {
                        Reset::Zero if s == one => zero,
                        _ => beta,
                    };
                    let d_mem = ar.add(direct, ar.mul(*carry, decay));
                    *d = d_mem;
                    *carry = d_mem;
                });
        }
        Some(d_cur)
    }
}
