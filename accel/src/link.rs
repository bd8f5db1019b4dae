//! The host's side of `sa_accel` (`docs/HOST.md`): what moving data over
//! the DMA and touching registers costs, so that the emulated accelerator
//! can count the host traffic and the host-link cycles that the RTL
//! measures for real.
//!
//! A DMA transfer moves whole lines, one beat per cycle when neither side
//! stalls; packed, a beat carries as many lanes as fit 64 bits
//! ([`sysgrad_isa::host::lanes_per_beat`]). The host link between host
//! memory and the streams carries `bits_per_cycle` bits a cycle after
//! `latency` cycles; every AXI4-Lite access is a round trip over it.

use serde::Serialize;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::{lanes_per_beat, DmaTarget, STREAM_BITS};

/// Cycles of one AXI4-Lite access with no link latency: the slave takes
/// the request in the first cycle and answers the cycle after (HOST.md).
pub const REGISTER_CYCLES: u64 = 2;
/// Register writes that start a DMA transfer: `DMA_TARGET`, `DMA_ADDR`,
/// `DMA_COUNT`, `DMA_CTRL`.
pub const DMA_SETUP_WRITES: u64 = 4;

/// The link between host memory and the accelerator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HostLink {
    /// Bits the link carries per cycle (a 64-bit beat takes
    /// `ceil(64 / bits_per_cycle)` cycles).
    pub bits_per_cycle: u32,
    /// Cycles before the first bit of a transfer or a register access arrives.
    pub latency: u32,
}

impl Default for HostLink {
    /// A 64-bit stream at the accelerator's clock with no added latency:
    /// the link the Verilator harness models without back-pressure.
    fn default() -> Self {
        HostLink {
            bits_per_cycle: STREAM_BITS,
            latency: 0,
        }
    }
}

/// The widest host link: 4,096 bits a cycle (64 beats of the stream).
pub const MAX_LINK_BITS: u32 = 4096;
/// The longest host-link latency: 2^20 cycles (10 ms at 100 MHz, a
/// thousand times a PCIe round trip). It bounds what one operation costs
/// (a DMA: 6 latencies plus its beats), so that the host counters, which
/// grow by one operation at a time, would need over 10^12 emulated
/// operations (years of emulation) to reach 2^64; an unbounded `u32`
/// latency would reach it in under 10^9.
pub const MAX_LINK_LATENCY: u32 = 1 << 20;

/// A host link that cannot move anything, or one slower than any link.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("--link-bits {0} is out of range (allowed: 1..={MAX_LINK_BITS} bits per cycle)")]
    Bits(u32),
    #[error("--link-latency {0} is out of range (allowed: 0..={MAX_LINK_LATENCY} cycles)")]
    Latency(u32),
}

impl HostLink {
    pub fn new(bits_per_cycle: u32, latency: u32) -> Result<Self, LinkError> {
        if !(1..=MAX_LINK_BITS).contains(&bits_per_cycle) {
            return Err(LinkError::Bits(bits_per_cycle));
        }
        if latency > MAX_LINK_LATENCY {
            return Err(LinkError::Latency(latency));
        }
        Ok(HostLink {
            bits_per_cycle,
            latency,
        })
    }

    /// Cycles the link needs per 64-bit beat (the DMA takes at most one a cycle).
    pub fn cycles_per_beat(&self) -> u64 {
        u64::from(STREAM_BITS.div_ceil(self.bits_per_cycle))
    }

    /// One register read or write.
    pub fn register_cycles(&self) -> u64 {
        u64::from(self.latency) + REGISTER_CYCLES
    }

    /// A stream of `beats` beats, pipelined: the latency once.
    pub fn stream_cycles(&self, beats: u64) -> u64 {
        u64::from(self.latency) + beats * self.cycles_per_beat()
    }

    /// A whole DMA transfer as the host sees it: the set-up writes, the
    /// beats, and the `STATUS` read that finds the transfer done.
    pub fn dma_cycles(&self, beats: u64) -> u64 {
        (DMA_SETUP_WRITES + 1) * self.register_cycles() + self.stream_cycles(beats)
    }
}

/// Beats of a DMA transfer of `lines` lines of `target` (HOST.md, DMA):
/// one per lane, or packed `ceil(lanes / P)` per line.
pub fn dma_beats(cfg: &ArrayConfig, target: DmaTarget, lines: usize, packed: bool) -> u64 {
    let lanes = target.lanes(cfg);
    let per_line = if packed {
        lanes.div_ceil(lanes_per_beat(target.word_bits(cfg)))
    } else {
        lanes
    };
    (lines * per_line) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_follow_host_md() {
        let cfg = ArrayConfig::default_16x16();
        // 16-bit data: four lanes a beat; 40-bit accumulators: one.
        assert_eq!(dma_beats(&cfg, DmaTarget::Activations, 10, true), 40);
        assert_eq!(dma_beats(&cfg, DmaTarget::Activations, 10, false), 160);
        assert_eq!(dma_beats(&cfg, DmaTarget::Accumulators, 10, true), 160);
        assert_eq!(dma_beats(&cfg, DmaTarget::Commands, 7, true), 7);
    }

    #[test]
    fn a_narrow_slow_link_costs_more() {
        let fast = HostLink::default();
        let slow = HostLink::new(16, 100).unwrap();
        assert_eq!(fast.stream_cycles(10), 10);
        assert_eq!(slow.stream_cycles(10), 140);
        assert_eq!(fast.dma_cycles(10), 20);
        assert!(HostLink::new(0, 0)
            .unwrap_err()
            .to_string()
            .contains("--link-bits 0 is out of range (allowed: 1..=4096"));
        assert!(HostLink::new(64, u32::MAX)
            .unwrap_err()
            .to_string()
            .contains("(allowed: 0..=1048576 cycles)"));
        assert!(HostLink::new(64, MAX_LINK_LATENCY).is_ok());
    }
}
