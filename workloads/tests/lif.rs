//! LIF dynamics against a hand-written float LIF on fixed inputs.

use ndarray::Array4;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_workloads::arith::{Arith, FixedArith, FloatArith, Step};
use sysgrad_workloads::model::{LifOutput, Reset, Surrogate};
use sysgrad_workloads::net::lif::{self, Lif, LifParams};

const STEP: Step = Step {
    lr_shift: 8,
    momentum: None,
};

fn fixed() -> FixedArith {
    let fmt = NumberFormat {
        in_bits: 16,
        acc_bits: 40,
        frac_bits: 10,
    };
    FixedArith::new(
        ArrayConfig::new(4, 4, Backward::Interleaved, fmt).unwrap(),
        STEP,
    )
}

fn params(reset: Reset) -> LifParams {
    LifParams {
        beta: 0.75,
        threshold: 1.0,
        reset,
        surrogate: Surrogate::FastSigmoid,
        slope: 25.0,
        output: LifOutput::Spikes,
    }
}

/// The textbook recurrence, one neuron: returns (membranes, spikes).
fn reference(p: &LifParams, current: &[f64]) -> (Vec<f64>, Vec<bool>) {
    let (mut mem, mut spiked) = (0.0, false);
    let (mut mems, mut spikes) = (vec![], vec![]);
    for &i in current {
        mem = match (p.reset, spiked) {
            (Reset::Subtract, s) => p.beta * mem + i - if s { p.threshold } else { 0.0 },
            (Reset::Zero, true) => i,
            (Reset::Zero, false) => p.beta * mem + i,
        };
        spiked = mem > p.threshold;
        mems.push(mem);
        spikes.push(spiked);
    }
    (mems, spikes)
}

/// Currents chosen in multiples of 1/64 so that beta = 0.75 keeps every
/// membrane exact in Q.10 for a few steps, with no membrane at the threshold.
const CURRENT: [f64; 10] = [0.5, 0.625, 0.25, 0.75, 1.25, 0.0, -0.25, 0.875, 0.5, 1.5];

/// Lays one neuron's current over time out as `(1, T, 1, 1)` (batch 1).
fn as_tensor<A: Arith>(ar: &A, c: &[f64]) -> Array4<A::V> {
    Array4::from_shape_fn((1, c.len(), 1, 1), |(_, t, _, _)| ar.quantize(c[t]))
}

#[test]
fn float_and_fixed_lif_match_the_recurrence() {
    for reset in [Reset::Subtract, Reset::Zero] {
        let p = params(reset);
        let (mems, spikes) = reference(&p, &CURRENT);
        assert!(spikes.iter().any(|&s| s) && spikes.iter().any(|&s| !s));

        let fl = FloatArith::new(STEP);
        let (m, s) = lif::run(&fl, &p, &as_tensor(&fl, &CURRENT), CURRENT.len());
        for t in 0..CURRENT.len() {
            assert!(
                (m[[0, t, 0, 0]] as f64 - mems[t]).abs() < 1e-6,
                "{reset:?} t={t}"
            );
            assert_eq!(s[[0, t, 0, 0]] == 1.0, spikes[t], "{reset:?} t={t}");
        }

        let fx = fixed();
        let (m, s) = lif::run(&fx, &p, &as_tensor(&fx, &CURRENT), CURRENT.len());
        for t in 0..CURRENT.len() {
            assert!(
                (fx.real(m[[0, t, 0, 0]]) - mems[t]).abs() < 1e-3,
                "{reset:?} t={t}"
            );
            assert_eq!(
                s[[0, t, 0, 0]] == fx.quantize(1.0),
                spikes[t],
                "{reset:?} t={t}"
            );
        }
    }
}

#[test]
fn a_membrane_exactly_at_threshold_does_not_spike() {
    // Convention (snnTorch): spike iff mem > threshold.
    let p = params(Reset::Subtract);
    for ar_fixed in [true, false] {
        let current = [1.0, 0.25];
        let spiked: Vec<bool> = if ar_fixed {
            let fx = fixed();
            let (_, s) = lif::run(&fx, &p, &as_tensor(&fx, &current), 2);
            s.iter().map(|&v| v == fx.quantize(1.0)).collect()
        } else {
            let fl = FloatArith::new(STEP);
            let (_, s) = lif::run(&fl, &p, &as_tensor(&fl, &current), 2);
            s.iter().map(|&v| v == 1.0).collect()
        };
        // mem = 1.0 (no spike), then 0.75 + 0.25 = 1.0 again (no spike).
        assert_eq!(spiked, vec![false, false]);
    }
}

#[test]
fn bptt_matches_a_hand_written_backward() {
    // With a unit gradient on every spike, dL/dI_t = sum_{u >= t} surr_u * beta^(u-t)
    // for reset = subtract (the reset is detached).
    let p = params(Reset::Subtract);
    let (mems, _) = reference(&p, &CURRENT);
    let t_len = CURRENT.len();
    let surr: Vec<f64> = mems
        .iter()
        .map(|m| p.surrogate_grad(m - p.threshold))
        .collect();
    let expect: Vec<f64> = (0..t_len)
        .map(|t| {
            (t..t_len)
                .map(|u| surr[u] * p.beta.powi((u - t) as i32))
                .sum()
        })
        .collect();
    let fl = FloatArith::new(STEP);
    let mut layer = Lif::new(p);
    layer.forward(&fl, &as_tensor(&fl, &CURRENT), t_len, true);
    let ones = Array4::from_elem((1, t_len, 1, 1), 1.0f32);
    let d = layer.backward(&fl, &ones, t_len).unwrap();
    for t in 0..t_len {
        assert!((d[[0, t, 0, 0]] as f64 - expect[t]).abs() < 1e-5, "t={t}");
    }
    // Reset to zero cuts the path through a step that spiked.
    let p = params(Reset::Zero);
    let (mems, spikes) = reference(&p, &CURRENT);
    let mut layer = Lif::new(p);
    layer.forward(&fl, &as_tensor(&fl, &CURRENT), t_len, true);
    let d = layer.backward(&fl, &ones, t_len).unwrap();
    let mut carry = 0.0;
    for t in (0..t_len).rev() {
        let decay = if spikes[t] { 0.0 } else { p.beta };
        let g = p.surrogate_grad(mems[t] - p.threshold) + decay * carry;
        assert!((d[[0, t, 0, 0]] as f64 - g).abs() < 1e-5, "t={t}");
        carry = g;
    }
}
