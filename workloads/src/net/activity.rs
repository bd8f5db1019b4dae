//! Data-dependent counts per layer: how sparse the operands streamed into
//! the array are. Spikes (values 0 or 1) turn a MAC into an add or nothing,
//! zero gradients into a skipped multiply.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Activity {
    /// X values streamed in the training forward pass (bias row excluded).
    pub inputs: u64,
    pub zero_inputs: u64,
    /// X values equal to 1.0 (a spike).
    pub one_inputs: u64,
    /// MACs whose X operand is a spike: an accumulate of the weight, no
    /// multiply (M per spike).
    pub accumulate_only_macs: u64,
    /// MACs whose X operand is 0 (could be skipped).
    pub zero_operand_macs: u64,
    /// All forward MACs (bias excluded).
    pub macs: u64,
    /// dY values streamed in the backward pass.
    pub gradients: u64,
    pub zero_gradients: u64,
    /// For LIF layers: outputs and spikes emitted.
    pub neuron_steps: u64,
    pub spikes: u64,
}

impl Activity {
    pub fn add(&mut self, o: &Activity) {
        self.inputs += o.inputs;
        self.zero_inputs += o.zero_inputs;
        self.one_inputs += o.one_inputs;
        self.accumulate_only_macs += o.accumulate_only_macs;
        self.zero_operand_macs += o.zero_operand_macs;
        self.macs += o.macs;
        self.gradients += o.gradients;
        self.zero_gradients += o.zero_gradients;
        self.neuron_steps += o.neuron_steps;
        self.spikes += o.spikes;
    }

    /// Whether every input was 0 or 1, i.e. the layer is fed spikes.
    pub fn spiking_input(&self) -> bool {
        self.inputs > 0 && self.zero_inputs + self.one_inputs == self.inputs
    }

    fn ratio(a: u64, b: u64) -> f64 {
        if b == 0 {
            0.0
        } else {
            a as f64 / b as f64
        }
    }
    pub fn input_sparsity(&self) -> f64 {
        Self::ratio(self.zero_inputs, self.inputs)
    }
    pub fn gradient_sparsity(&self) -> f64 {
        Self::ratio(self.zero_gradients, self.gradients)
    }
    pub fn spike_rate(&self) -> f64 {
        Self::ratio(self.spikes, self.neuron_steps)
    }

    /// Counts the operand `x` (K x N, bias row excluded) of a product with
    /// `m` outputs.
    pub fn count_inputs<V: PartialEq + Copy>(
        &mut self,
        x: impl Iterator<Item = V>,
        zero: V,
        one: V,
        m: usize,
    ) {
        for v in x {
            self.inputs += 1;
            if v == zero {
                self.zero_inputs += 1;
                self.zero_operand_macs += m as u64;
            } else if v == one {
                self.one_inputs += 1;
                self.accumulate_only_macs += m as u64;
            }
            self.macs += m as u64;
        }
    }

    pub fn count_gradients<V: PartialEq + Copy>(&mut self, dy: impl Iterator<Item = V>, zero: V) {
        for v in dy {
            self.gradients += 1;
            self.zero_gradients += (v == zero) as u64;
        }
    }
}
