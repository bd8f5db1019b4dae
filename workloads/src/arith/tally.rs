//! Where fixed-point values met the edge of their format: for every layer
//! and kind of value, how many were clamped (saturated) and the largest
//! magnitude each would have had without the clamp. Saturation is the
//! format's defined behaviour (never a wrap), so a run counts it instead of
//! hiding it: the training report prints the counts per epoch.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The kind of value a clamp acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// A product's accumulator at the accumulator's limit (the array's
    /// saturating adds; the value says it was reached, not how far past).
    Accumulator,
    /// A layer's output (forward pass) requantized to data.
    Activation,
    /// The gradient of a layer's input (backward pass) requantized to data.
    InputGradient,
    /// A weight after its optimizer step.
    Weight,
    /// A momentum velocity (accumulator format) after its update.
    Velocity,
    /// Element-wise host arithmetic (residual add, gradient sums of
    /// pooling, LIF membranes): only the clamped values are recorded.
    Host,
}

impl Quantity {
    pub fn name(self) -> &'static str {
        match self {
            Quantity::Accumulator => "accumulator",
            Quantity::Activation => "activation",
            Quantity::InputGradient => "input gradient",
            Quantity::Weight => "weight",
            Quantity::Velocity => "velocity",
            Quantity::Host => "host",
        }
    }
}

/// Clamps and peak of one (layer, quantity).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Clamps {
    /// Values checked.
    pub values: u64,
    /// Values that were clamped.
    pub clamped: u64,
    /// Largest magnitude before the clamp, as a real number.
    pub peak: f64,
}

impl Clamps {
    /// Adds one value: `raw` before the clamp, `kept` after, `lsb` the
    /// real value of one unit.
    pub fn count(&mut self, raw: i64, kept: i64, lsb: f64) {
        self.values += 1;
        self.clamped += u64::from(raw != kept);
        self.peak = self.peak.max(raw.unsigned_abs() as f64 * lsb);
    }

    pub fn add(&mut self, o: &Clamps) {
        self.values += o.values;
        self.clamped += o.clamped;
        self.peak = self.peak.max(o.peak);
    }
}

/// The counts of every (layer, quantity), with the layer and pass the
/// arithmetic is working on. Real numbers converted to data (pixels in
/// [0, 1], the scaled loss gradient, at most `2^grad_scale_shift` in
/// magnitude) are not counted: the model's checks keep them in range.
/// Shared by the threads of one product, so behind a lock.
#[derive(Debug, Default)]
pub struct Tally {
    counts: Mutex<BTreeMap<(usize, Quantity), Clamps>>,
    /// The layer of the last product (times 2), plus 1 in a backward pass.
    at: AtomicUsize,
}

impl Tally {
    /// Sets the layer and pass the following host operations belong to.
    pub fn enter(&self, layer: usize, backward: bool) {
        self.at
            .store(2 * layer + usize::from(backward), Ordering::Relaxed);
    }

    /// The current layer's requantized value: an activation in a forward
    /// pass, an input gradient in a backward one.
    pub fn requantized(&self) -> (usize, Quantity) {
        let at = self.at.load(Ordering::Relaxed);
        let q = if at % 2 == 1 {
            Quantity::InputGradient
        } else {
            Quantity::Activation
        };
        (at / 2, q)
    }

    pub fn layer(&self) -> usize {
        self.at.load(Ordering::Relaxed) / 2
    }

    /// Adds the counts of a whole tensor.
    pub fn add(&self, key: (usize, Quantity), c: &Clamps) {
        if c.values == 0 {
            return;
        }
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.entry(key).or_default().add(c);
    }

    /// One value: `raw` before the clamp, `kept` after, `lsb` the real
    /// value of one unit.
    pub fn one(&self, key: (usize, Quantity), raw: i64, kept: i64, lsb: f64) {
        let mut c = Clamps::default();
        c.count(raw, kept, lsb);
        self.add(key, &c);
    }

    /// The counts so far, and starts again from zero.
    pub fn take(&self) -> BTreeMap<(usize, Quantity), Clamps> {
        std::mem::take(&mut *self.counts.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Saturation counts keyed by (layer, quantity), summed over a run.
pub fn merge(
    into: &mut BTreeMap<(usize, Quantity), Clamps>,
    from: &BTreeMap<(usize, Quantity), Clamps>,
) {
    for (k, c) in from {
        into.entry(*k).or_default().add(c);
    }
}
