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
use sysgrad_emulator::count::{Count, Overflow};
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
    /// The reads of a run (each field within `u64`, their sum checked by
    /// [`run`] and [`OffChipRun::then`]).
    pub fn reads(&self) -> u64 {
        self.w_reads + self.x_reads + self.dy_reads + self.acc_reads
    }
    pub fn words(&self) -> u64 {
        self.reads() + self.writes
    }

    /// Checks that [`OffChipRun::reads`] and [`OffChipRun::words`] fit.
    fn checked(self) -> Result<OffChipRun, Overflow> {
        let reads = Count::from(self.w_reads) + self.x_reads + self.dy_reads + self.acc_reads;
        (reads + self.writes).get("the off-chip words")?;
        Ok(self)
    }

    /// Two passes one after the other (forward, then backward), checked.
    pub fn then(&self, next: &OffChipRun) -> Result<OffChipRun, Overflow> {
        let shift = Count::from(self.total_cycles_incl_prefetch);
        let add = |a: u64, b: u64, what: &str| (Count::from(a) + b).get(what);
        let at = |b: u64, what: &str| (shift + b).get(what);
        OffChipRun {
            prefetch_cycles: add(
                self.prefetch_cycles,
                next.prefetch_cycles,
                "the prefetch cycles",
            )?,
            compute_cycles: add(
                self.compute_cycles,
                next.compute_cycles,
                "the compute cycles",
            )?,
            stall_cycles: add(self.stall_cycles, next.stall_cycles, "the stall cycles")?,
            total_cycles: add(self.total_cycles, next.total_cycles, "the total cycles")?,
            total_cycles_incl_prefetch: at(
                next.total_cycles_incl_prefetch,
                "the total cycles incl. prefetch",
            )?,
            w_reads: add(self.w_reads, next.w_reads, "the off-chip weight reads")?,
            x_reads: add(self.x_reads, next.x_reads, "the off-chip X reads")?,
            dy_reads: add(self.dy_reads, next.dy_reads, "the off-chip dY reads")?,
            acc_reads: add(
                self.acc_reads,
                next.acc_reads,
                "the off-chip partial-sum reads",
            )?,
            writes: add(self.writes, next.writes, "the off-chip writes")?,
            read_start: self.read_start,
            read_stop: at(next.read_stop, "the last off-chip read cycle")?,
            write_start: self.write_start,
            write_stop: at(next.write_stop, "the last off-chip write cycle")?,
        }
        .checked()
    }
}

/// Off-chip words one tile needs and produces.
#[derive(Debug, Clone, Copy, Default)]
struct TileTraffic {
    /// (words, half-buffer words) of each operand fetched.
    fetch: [(Count, u64); 4],
    writes: Count,
}

impl TileTraffic {
    fn words(&self) -> Count {
        self.fetch.iter().map(|f| f.0).sum()
    }
    /// Words that must be on chip before the tile starts: each operand up
    /// to its half-buffer.
    fn before_start(&self) -> Count {
        self.fetch
            .iter()
            .map(|(w, half)| w.min(Count::from(*half)))
            .sum()
    }
}

/// Half of a buffer of `kb` KiB, in words of `bits`.
fn half_words(kb: usize, bits: u32) -> u64 {
    ((Count::from(kb) * 1024u64 * 8u64) / (u64::from(bits) * 2))
        .value()
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Whether `words` fit in `half` (an overflowed count never does).
fn fits(words: Count, half: u64) -> bool {
    words.value().is_some_and(|w| w <= half)
}

/// The off-chip traffic of every tile of a pass, in `gemm`'s tile order
/// (produced as the model walks them: a layer of many tiles takes time,
/// not memory).
fn traffic<'a>(
    cfg: &'a ArrayConfig,
    g: Gemm,
    pass: Pass,
    mem: &'a MemoryConfig,
) -> impl Iterator<Item = TileTraffic> + 'a {
    let bits = cfg.format().in_bits;
    let (w_half, x_half, out_half) = (
        half_words(mem.filter_sram_kb, bits),
        half_words(mem.ifmap_sram_kb, bits),
        half_words(mem.ofmap_sram_kb, bits),
    );
    let (k, n) = (Count::from(g.k), Count::from(g.n));
    let x_resident = fits(k * n, x_half);
    let dx_resident = fits(k * n, out_half);
    let (tm, tk) = (g.m.div_ceil(cfg.cols()), g.k.div_ceil(cfg.rows()));
    tiles(g.m, cfg.cols())
        .enumerate()
        .flat_map(move |(mi, (_, mt))| {
            tiles(g.k, cfg.rows())
                .enumerate()
                .map(move |(ki, (_, kt))| (mi, mt, ki, kt))
        })
        .map(move |(mi, mt, ki, kt)| {
            let (mt, kt) = (Count::from(mt), Count::from(kt));
            let (first_m, first_k) = (mi == 0, ki == 0);
            let last_k = ki + 1 == tk;
            let last = last_k && mi + 1 == tm;
            let x = if x_resident && !first_m {
                Count::ZERO
            } else {
                kt * n
            };
            let mut t = TileTraffic::default();
            t.fetch[0] = (mt * kt, w_half);
            t.fetch[1] = (x, x_half);
            match pass {
                Pass::Forward => {
                    let spill = !fits(mt * n, out_half);
                    if spill && !first_k {
                        t.fetch[3] = (mt * n, out_half);
                    }
                    t.writes = if spill || last_k { mt * n } else { Count::ZERO };
                }
                Pass::Backward => {
                    let dy_resident = fits(mt * n, out_half);
                    let dy = if dy_resident && !first_k {
                        Count::ZERO
                    } else {
                        mt * n
                    };
                    t.fetch[2] = (dy, out_half);
                    if !dx_resident && !first_m {
                        t.fetch[3] = (kt * n, out_half);
                    }
                    let dx = match (dx_resident, last) {
                        (false, _) => kt * n,
                        (true, true) => k * n,
                        (true, false) => Count::ZERO,
                    };
                    t.writes = mt * kt + dx;
                }
            }
            t
        })
}

/// `words` at `bandwidth` words per cycle (`None`: as fast as needed).
fn transfer(words: Count, bandwidth: Option<u64>) -> Count {
    bandwidth.map_or(Count::ZERO, |b| words.div_ceil(b))
}

/// Runs a pass of `compute_cycles` (the ledger's) through the model.
/// Every cycle and word is checked: a latency, a bandwidth or a layer that
/// takes a figure past `u64` is an [`Overflow`] naming the figure, never
/// a wrapped count (a latency of 2^64 - 1 used to wrap to fewer cycles
/// than a latency of 0).
pub fn run(
    cfg: &ArrayConfig,
    g: Gemm,
    pass: Pass,
    mem: &MemoryConfig,
    compute_cycles: u64,
) -> Result<OffChipRun, Overflow> {
    let (bandwidth, latency) = match mem.interface_bandwidth {
        BandwidthMode::Calc => (None, 0),
        BandwidthMode::User => (
            Some((*mem.bandwidth.first().unwrap_or(&1) as u64).max(1)),
            mem.off_chip_latency,
        ),
    };
    let count = (g.m.div_ceil(cfg.cols()) as u64 * g.k.div_ceil(cfg.rows()) as u64).max(1);
    let compute = Count::from(compute_cycles);
    let zero = Count::ZERO;
    let (mut prefetch, mut stalls) = (zero, zero);
    let (mut read_start, mut read_stop) = (None::<Count>, zero);
    let (mut write_start, mut write_stop) = (None::<Count>, zero);
    let mut reads = [zero; 4];
    let mut writes = zero;
    // End of the read channel, of the previous tile, its start, and the
    // ends of the last two writes.
    let (mut read_free, mut prev_end, mut prev_start) = (zero, zero, zero);
    let mut writes_end = [zero; 2];
    for (i, t) in traffic(cfg, g, pass, mem).enumerate() {
        let cycles = (compute / count) + u64::from((i as u64) < compute_cycles % count);
        let words = t.words();
        let fetch_start = read_free.max(prev_start);
        let lat = if words == zero { 0 } else { latency };
        let before = fetch_start + lat + transfer(t.before_start(), bandwidth);
        let arrived = before + transfer(words - t.before_start(), bandwidth);
        if words != zero {
            read_start = Some(read_start.map_or(fetch_start, |s| s.min(fetch_start)));
            read_stop = read_stop.max(arrived);
        }
        read_free = arrived;
        let start = before.max(prev_end).max(writes_end[0]);
        let end = (start + cycles).max(arrived);
        if i == 0 {
            prefetch = start;
        } else {
            stalls += start - prev_end;
        }
        stalls += end - start - cycles;
        let write_begin = end.max(writes_end[1]);
        let write_end = write_begin + transfer(t.writes, bandwidth);
        if t.writes != zero {
            write_start = Some(write_start.map_or(write_begin, |s| s.min(write_begin)));
            write_stop = write_stop.max(write_end);
        }
        writes_end = [writes_end[1], write_end];
        (prev_start, prev_end) = (start, end);
        for (sum, f) in reads.iter_mut().zip(t.fetch) {
            *sum += f.0;
        }
        writes += t.writes;
        if prev_end.is_over() || read_free.is_over() || write_end.is_over() {
            // Every later figure would be over too: stop walking.
            break;
        }
    }
    OffChipRun {
        prefetch_cycles: prefetch.get("the prefetch cycles")?,
        compute_cycles,
        stall_cycles: stalls.get("the stall cycles")?,
        total_cycles: (prev_end - prefetch).get("the total cycles")?,
        total_cycles_incl_prefetch: prev_end
            .max(writes_end[1])
            .get("the total cycles incl. prefetch")?,
        w_reads: reads[0].get("the off-chip weight reads")?,
        x_reads: reads[1].get("the off-chip X reads")?,
        dy_reads: reads[2].get("the off-chip dY reads")?,
        acc_reads: reads[3].get("the off-chip partial-sum reads")?,
        writes: writes.get("the off-chip writes")?,
        read_start: read_start
            .unwrap_or(zero)
            .get("the first off-chip read cycle")?,
        read_stop: read_stop.get("the last off-chip read cycle")?,
        write_start: write_start
            .unwrap_or(zero)
            .get("the first off-chip write cycle")?,
        write_stop: write_stop.get("the last off-chip write cycle")?,
    }
    .checked()
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
        let r = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 5, 64), 30).unwrap();
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
        let r = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 5, 64), 8).unwrap();
        // tile 0: fetched 0..12, runs 12..16; tile 1: fetched from 12 (when
        // tile 0 starts) to 24, runs 24..28: 8 stall cycles.
        assert_eq!(
            (r.prefetch_cycles, r.stall_cycles, r.total_cycles),
            (12, 8, 16)
        );
        let fast = run(&cfg(4, 4), g, Pass::Forward, &mem(1000, 0, 64), 8).unwrap();
        assert_eq!(fast.stall_cycles, 0);
        let mut calc = mem(8, 5, 64);
        calc.interface_bandwidth = BandwidthMode::Calc;
        let c = run(&cfg(4, 4), g, Pass::Forward, &calc, 8).unwrap();
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
        let small = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 0, 1), 100).unwrap();
        assert_eq!(small.x_reads, 400);
        let g = Gemm { m: 8, k: 4, n: 200 };
        let big = run(&cfg(4, 4), g, Pass::Forward, &mem(8, 0, 1), 100).unwrap();
        assert_eq!(big.x_reads, 1600);
    }
}
