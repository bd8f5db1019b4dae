//! Off-chip memory and prefetch into double-buffered on-chip buffers, as
//! SCALE-Sim models them (`double_buffered_scratchpad_mem.py`: half of each
//! buffer is read by the array while the other half is filled), at the
//! granularity of a weight tile (SCALE-Sim's fold):
//!
//! * each tile needs its operands on chip before it starts: its weights,
//!   the X slice (fetched once per layer when the whole X fits in half the
//!   activation buffer, else once per tile), in the backward pass the dY
//!   rows (once per tile row when they fit half the gradient buffer);
//! * the part of an operand larger than its half-buffer streams in while
//!   the tile computes, and the tile cannot end before it has arrived;
//! * the fetch of tile t + 1 starts once tile t has started (its half is
//!   free) and the read channel is idle; a fetch takes the latency plus
//!   `words / bandwidth` cycles;
//! * results go out on a write channel of the same bandwidth: Y of a tile
//!   row after its last tile, dX after the layer (per tile, read back and
//!   written, when it does not fit half the accumulator buffer), dW (or the
//!   updated weights) after every tile. A tile waits for the write of the
//!   tile two before it (its output half must be empty).
//!
//! A tile's compute cycles are the pass's cycles spread evenly over its
//! tiles (every tile of a `none`-pipelined pass costs the same). Stall
//! cycles are the cycles a tile waits for its operands or its output half
//! beyond its compute. `InterfaceBandwidth: CALC` means a bandwidth as large
//! as needed: no stalls (SCALE-Sim's CALC mode also reports none). The
//! word is the data width (`in_bits`); buffer sizes come from the config's
//! SRAM sizes.
//!
//! `tests/offchip_dma.rs` holds these words against the DMA the accelerator
//! emulator moves for the same step (equal where the operands fit, the
//! refetch factors above where they do not; weights resident on the
//! accelerator, fetched per pass here).

use super::config::{BandwidthMode, MemoryConfig};
use super::topology::Gemm;
use serde::Serialize;
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::gemm::tiles;

/// Which pass of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    Forward,
    Backward,
}

/// Words and cycles of one pass through the off-chip model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OffChipRun {
    /// Cycles before the first tile can start (its operands arriving).
    pub prefetch_cycles: u64,
    /// The array's own cycles (the ledger's count).
    pub compute_cycles: u64,
    pub stall_cycles: u64,
    /// First tile start to last tile end: compute + stalls.
    pub total_cycles: u64,
    /// First request to the last result written off chip.
    pub total_cycles_incl_prefetch: u64,
    pub w_reads: u64,
    pub x_reads: u64,
    pub dy_reads: u64,
    /// Partial sums read back (dX or Y spilled off chip).
    pub acc_reads: u64,
    pub writes: u64,
    /// First and last cycle of off-chip reads and of writes.
    pub read_start: u64,
    pub read_stop: u64,
    pub write_start: u64,
    pub write_stop: u64,
}

impl OffChipRun {
    pub fn reads(&self) -> u64 {
        self.w_reads + self.x_reads + self.dy_reads + self.acc_reads
    }
    pub fn words(&self) -> u64 {
        self.reads() + self.writes
    }
    /// Two passes one after the other (forward, then backward).
    pub fn then(&self, next: &OffChipRun) -> OffChipRun {
        let shift = self.total_cycles_incl_prefetch;
        OffChipRun {
            prefetch_cycles: self.prefetch_cycles + next.prefetch_cycles,
            compute_cycles: self.compute_cycles + next.compute_cycles,
            stall_cycles: self.stall_cycles + next.stall_cycles,
            total_cycles: self.total_cycles + next.total_cycles,
            total_cycles_incl_prefetch: shift + next.total_cycles_incl_prefetch,
            w_reads: self.w_reads + next.w_reads,
            x_reads: self.x_reads + next.x_reads,
            dy_reads: self.dy_reads + next.dy_reads,
            acc_reads: self.acc_reads + next.acc_reads,
            writes: self.writes + next.writes,
            read_start: self.read_start,
            read_stop: shift + next.read_stop,
            write_start: self.write_start,
            write_stop: shift + next.write_stop,
        }
    }
}

/// Off-chip words one tile needs and produces.
#[derive(Debug, Clone, Copy, Default)]
struct TileTraffic {
    /// (words, half-buffer words) of each operand fetched.
    fetch: [(u64, u64); 4],
    writes: u64,
}

impl TileTraffic {
    fn words(&self) -> u64 {
        self.fetch.iter().map(|f| f.0).sum()
    }
    /// Words that must be on chip before the tile starts: each operand up
    /// to its half-buffer.
    fn before_start(&self) -> u64 {
        self.fetch.iter().map(|(w, half)| (*w).min(*half)).sum()
    }
}

/// Half of a buffer of `kb` KiB, in words of `bits`.
fn half_words(kb: usize, bits: u32) -> u64 {
    (kb as u64 * 1024 * 8 / bits as u64 / 2).max(1)
}

/// The off-chip traffic of every tile of a pass, in `gemm`'s tile order.
fn traffic(cfg: &ArrayConfig, g: Gemm, pass: Pass, mem: &MemoryConfig) -> Vec<TileTraffic> {
    let bits = cfg.format().in_bits;
    let (w_half, x_half, out_half) = (
        half_words(mem.filter_sram_kb, bits),
        half_words(mem.ifmap_sram_kb, bits),
        half_words(mem.ofmap_sram_kb, bits),
    );
    let (m, k, n) = (g.m as u64, g.k as u64, g.n as u64);
    let x_resident = k * n <= x_half;
    let dx_resident = k * n <= out_half;
    let mtiles: Vec<_> = tiles(g.m, cfg.cols()).collect();
    let ktiles: Vec<_> = tiles(g.k, cfg.rows()).collect();
    let mut out = Vec::new();
    for (mi, &(_, mt)) in mtiles.iter().enumerate() {
        for (ki, &(_, kt)) in ktiles.iter().enumerate() {
            let (mt, kt) = (mt as u64, kt as u64);
            let (first_m, first_k) = (mi == 0, ki == 0);
            let last_k = ki + 1 == ktiles.len();
            let last = last_k && mi + 1 == mtiles.len();
            let x = if x_resident && !first_m { 0 } else { kt * n };
            let mut t = TileTraffic::default();
            t.fetch[0] = (mt * kt, w_half);
            t.fetch[1] = (x, x_half);
            match pass {
                Pass::Forward => {
                    let spill = mt * n > out_half;
                    if spill && !first_k {
                        t.fetch[3] = (mt * n, out_half);
                    }
                    t.writes = if spill || last_k { mt * n } else { 0 };
                }
                Pass::Backward => {
                    let dy_resident = mt * n <= out_half;
                    let dy = if dy_resident && !first_k { 0 } else { mt * n };
                    t.fetch[2] = (dy, out_half);
                    if !dx_resident && !first_m {
                        t.fetch[3] = (kt * n, out_half);
                    }
                    let dx = match (dx_resident, last) {
                        (false, _) => kt * n,
                        (true, true) => k * n,
                        (true, false) => 0,
                    };
                    t.writes = mt * kt + dx;
                }
            }
            out.push(t);
        }
    }
    debug_assert!(m > 0 || out.is_empty());
    out
}

/// `words` at `bandwidth` words per cycle (`None`: as fast as needed).
fn transfer(words: u64, bandwidth: Option<u64>) -> u64 {
    bandwidth.map_or(0, |b| words.div_ceil(b))
}

/// Runs a pass of `compute_cycles` (the ledger's) through the model.
pub fn run(
    cfg: &ArrayConfig,
    g: Gemm,
    pass: Pass,
    mem: &MemoryConfig,
    compute_cycles: u64,
) -> OffChipRun {
    let tt = traffic(cfg, g, pass, mem);
    let (bandwidth, latency) = match mem.interface_bandwidth {
        BandwidthMode::Calc => (None, 0),
        BandwidthMode::User => (
            Some(*mem.bandwidth.first().unwrap_or(&1) as u64),
            mem.off_chip_latency,
        ),
    };
    let count = tt.len().max(1) as u64;
    let mut r = OffChipRun {
        compute_cycles,
        read_start: u64::MAX,
        write_start: u64::MAX,
        ..Default::default()
    };
    // End of the read channel, of the previous tile, its start, and the
    // ends of the last two writes.
    let (mut read_free, mut prev_end, mut prev_start) = (0u64, 0u64, 0u64);
    let mut writes_end = [0u64; 2];
    for (i, t) in tt.iter().enumerate() {
        let cycles = compute_cycles / count + u64::from((i as u64) < compute_cycles % count);
        let words = t.words();
        let fetch_start = read_free.max(prev_start);
        let lat = if words > 0 { latency } else { 0 };
        let before = fetch_start + lat + transfer(t.before_start(), bandwidth);
        let arrived = before + transfer(words - t.before_start(), bandwidth);
        if words > 0 {
            r.read_start = r.read_start.min(fetch_start);
            r.read_stop = r.read_stop.max(arrived);
        }
        read_free = arrived;
        let start = before.max(prev_end).max(writes_end[0]);
        let end = (start + cycles).max(arrived);
        if i == 0 {
            r.prefetch_cycles = start;
        } else {
            r.stall_cycles += start - prev_end;
        }
        r.stall_cycles += end - start - cycles;
        let write_start = end.max(writes_end[1]);
        let write_end = write_start + transfer(t.writes, bandwidth);
        if t.writes > 0 {
            r.write_start = r.write_start.min(write_start);
            r.write_stop = r.write_stop.max(write_end);
        }
        writes_end = [writes_end[1], write_end];
        (prev_start, prev_end) = (start, end);
        r.w_reads += t.fetch[0].0;
        r.x_reads += t.fetch[1].0;
        r.dy_reads += t.fetch[2].0;
        r.acc_reads += t.fetch[3].0;
        r.writes += t.writes;
    }
    r.total_cycles = prev_end - r.prefetch_cycles;
    r.total_cycles_incl_prefetch = prev_end.max(writes_end[1]);
    if r.read_start == u64::MAX {
        r.read_start = 0;
    }
    if r.write_start == u64::MAX {
        r.write_start = 0;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalesim::ScaleConfig;
    use sysgrad_config::{Backward, NumberFormat};

    fn cfg(r: usize, c: usize) -> ArrayConfig {
        let f = NumberFormat {
            in_bits: 8,
            acc_bits: 24,
            frac_bits: 4,
        };
        ArrayConfig::new(r, c, Backward::Interleaved, f).unwrap()
    }

    fn mem(bandwidth: usize, latency: u64, kb: usize) -> MemoryConfig {
        let mut m = ScaleConfig::for_array("t", 4, 4).memory;
        m.interface_bandwidth = BandwidthMode::User;
        m.bandwidth = vec![bandwidth];
        m.off_chip_latency = latency;
        (m.ifmap_sram_kb, m.filter_sram_kb, m.ofmap_sram_kb) = (kb, kb, kb);
        m
    }

    /// One tile: the prefetch is latency + words / bandwidth, no stalls,
    /// and the result goes out after the compute.
    #[test]
    fn one_tile_by_hand() {
        let g = Gemm { m: 4, k: 4, n: 10 };
        // W 16 + X 40 = 56 words at 8 per cycle after 5 cycles: start at 12.
        let r = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 5, 64), 30);
        assert_eq!(
            (r.prefetch_cycles, r.stall_cycles, r.total_cycles),
            (12, 0, 30)
        );
        // Y: 40 words, 5 cycles after the end at 42.
        assert_eq!(r.total_cycles_incl_prefetch, 47);
        assert_eq!((r.w_reads, r.x_reads, r.writes), (16, 40, 40));
    }

    /// Two tiles along K, 4 compute cycles each, 56 words each at 8 words
    /// per cycle after a latency of 5.
    #[test]
    fn a_slow_interface_stalls() {
        let g = Gemm { m: 4, k: 8, n: 10 };
        let r = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 5, 64), 8);
        // tile 0: fetched 0..12, runs 12..16; tile 1: fetched from 12 (when
        // tile 0 starts) to 24, runs 24..28: 8 stall cycles.
        assert_eq!(
            (r.prefetch_cycles, r.stall_cycles, r.total_cycles),
            (12, 8, 16)
        );
        let fast = run(&cfg(4, 4), g, Pass::Forward, &mem(1000, 0, 64), 8);
        assert_eq!(fast.stall_cycles, 0);
        let mut calc = mem(8, 5, 64);
        calc.interface_bandwidth = BandwidthMode::Calc;
        let c = run(&cfg(4, 4), g, Pass::Forward, &calc, 8);
        assert_eq!(
            (c.stall_cycles, c.total_cycles, c.words()),
            (0, 8, r.words())
        );
    }

    /// X that fits half the buffer is fetched once per layer, X that does
    /// not once per tile.
    #[test]
    fn resident_operands_are_fetched_once() {
        let g = Gemm { m: 8, k: 4, n: 100 };
        // 1 KiB of 8-bit words: half is 512 >= 400 words of X.
        let small = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 0, 1), 100);
        assert_eq!(small.x_reads, 400);
        let g = Gemm { m: 8, k: 4, n: 200 };
        let big = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 0, 1), 100);
        assert_eq!(big.x_reads, 1600);
    }
}
