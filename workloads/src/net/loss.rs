//! Softmax cross-entropy on the host, applied at every time step and
//! summed over the steps (snnTorch's `ce_rate_loss`; for T = 1 the usual
//! loss). The reported loss is the mean per sample and step. Predictions
//! take the largest output summed over the steps (the spike count of a
//! spiking output, the summed membrane of a membrane readout).
//!
//! Gradient scaling: the exact gradient of the mean loss is
//! `(softmax - onehot) / B`. The array instead gets
//! `dY = (softmax - onehot) * 2^s` (`optimizer.grad_scale_shift` = s),
//! rounded to the data format; at Q.F with F = 10 an unscaled gradient of a
//! few hundredths would keep only a handful of significant bits and most of
//! dW would round to zero. The weight step `W -= 2^-lr_shift * dW` applies
//! the sum over the batch (and time steps), so the learning rate on the
//! mean gradient is `B * 2^(s - lr_shift)`. The float reference uses the
//! same scaled gradient and the same step, so both see the same
//! hyperparameters.

use super::tensor::Tensor;
use crate::arith::Arith;
use ndarray::Array4;

/// Loss and accuracy of one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchResult {
    /// Sum over samples of -ln p(label).
    pub loss_sum: f64,
    pub correct: usize,
    pub count: usize,
}

impl BatchResult {
    pub fn add(&mut self, o: &BatchResult) {
        self.loss_sum += o.loss_sum;
        self.correct += o.correct;
        self.count += o.count;
    }
    pub fn mean_loss(&self) -> f64 {
        self.loss_sum / self.count.max(1) as f64
    }
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.count.max(1) as f64
    }
}

/// Logits per sample: the output `(classes, T*B, 1, 1)` summed over T.
pub fn logits<A: Arith>(ar: &A, out: &Tensor<A::V>, steps: usize) -> Vec<Vec<f64>> {
    let (classes, n, _, _) = out.dim();
    let batch = n / steps;
    (0..batch)
        .map(|b| {
            (0..classes)
                .map(|c| {
                    (0..steps)
                        .map(|t| ar.real(out[[c, t * batch + b, 0, 0]]))
                        .sum()
                })
                .collect()
        })
        .collect()
}

/// The index of the largest logit (the first one on ties).
pub fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

fn softmax(z: &[f64]) -> Vec<f64> {
    let max = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|v| v / sum).collect()
}

/// Loss and accuracy, and the scaled gradient with respect to the output.
pub fn softmax_xent<A: Arith>(
    ar: &A,
    out: &Tensor<A::V>,
    labels: &[u8],
    steps: usize,
    grad_scale_shift: u32,
) -> (BatchResult, Tensor<A::V>) {
    let (classes, n, _, _) = out.dim();
    let batch = n / steps;
    let scale = (grad_scale_shift as f64).exp2();
    let mut grad = Array4::from_elem(out.dim(), ar.zero());
    let mut loss_sum = 0.0;
    for (b, &label) in labels.iter().enumerate().take(batch) {
        for t in 0..steps {
            let col = t * batch + b;
            let z: Vec<f64> = (0..classes).map(|c| ar.real(out[[c, col, 0, 0]])).collect();
            let p = softmax(&z);
            loss_sum -= p[label as usize].max(1e-12).ln();
            for (c, pc) in p.iter().enumerate() {
                let target = if c == label as usize { 1.0 } else { 0.0 };
                grad[[c, col, 0, 0]] = ar.quantize((pc - target) * scale);
            }
        }
    }
    let mut res = score(ar, out, labels, steps);
    res.loss_sum = loss_sum / steps as f64;
    (res, grad)
}

/// Loss and accuracy only.
pub fn score<A: Arith>(ar: &A, out: &Tensor<A::V>, labels: &[u8], steps: usize) -> BatchResult {
    let (classes, n, _, _) = out.dim();
    let batch = n / steps;
    let mut res = BatchResult {
        count: batch,
        ..BatchResult::default()
    };
    for (b, &label) in labels.iter().enumerate().take(batch) {
        for t in 0..steps {
            let z: Vec<f64> = (0..classes)
                .map(|c| ar.real(out[[c, t * batch + b, 0, 0]]))
                .collect();
            res.loss_sum -= softmax(&z)[label as usize].max(1e-12).ln() / steps as f64;
        }
    }
    for (zb, &label) in logits(ar, out, steps).iter().zip(labels) {
        res.correct += (argmax(zb) == label as usize) as usize;
    }
    res
}
