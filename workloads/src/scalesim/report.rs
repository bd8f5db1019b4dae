//! SCALE-Sim-style outputs. SCALE-Sim 3.0's own files, with its columns
//! and their meanings, for the forward pass (what SCALE-Sim simulates):
//! `COMPUTE_REPORT.csv`, `BANDWIDTH_REPORT.csv`,
//! `DETAILED_ACCESS_REPORT.csv`; the training passes beside them in the
//! same columns (`COMPUTE_REPORT_TRAINING_INTERLEAVED.csv`, `..._SEQUENTIAL`);
//! then sysgrad's own: `SYSGRAD_REPORT.csv` (folds, streaming utilization,
//! buffer and off-chip words, energy, sparsity for every pass),
//! `ENERGY_REPORT.csv` (per layer, pass and phase), `ACCESS_REPORT.csv`,
//! `COMPARISON.csv` / `.md` (interleaved vs sequential beside the
//! published figures) and `summary.json`.
//!
//! Column meanings on the sysgrad array (SCALE-Sim's in brackets):
//! * Total Cycles: the array's cycles (loads, streaming, drain/update) plus
//!   stall cycles, from the first tile's start to the last tile's end
//!   [SCALE-Sim: compute cycles incl. stalls].
//! * Total Cycles (incl. prefetch): from the first off-chip request to the
//!   last result written off chip [ofmap DRAM stop - first DRAM start].
//! * Stall Cycles: cycles the array waits for off-chip data or for room to
//!   write ([`super::offchip`]); 0 with `InterfaceBandwidth: CALC`.
//! * Overall Util %: useful MACs / (Total Cycles x PEs) [the same]. A PE
//!   of the interleaved array does two MACs per cycle in BWD_IL, so
//!   training rows can exceed 100%.
//! * Mapping Efficiency %: mean share of the PEs a weight tile occupies
//!   [mean over folds of the mapped PEs].
//! * Compute Util %: SCALE-Sim 3.0's formula (`systolic_compute_ws.py`):
//!   the mean over folds of mapped PEs x T / (PEs x (2R + 2C + T - 3)),
//!   T the stream length. Its fold length there is not its cycle count
//!   (2R + C + T - 2) but that plus C - 1, so the figure reads lower than
//!   MACs over cycles; it depends on the mapping alone, not on stalls or
//!   on our cycles. Training rows: each stream of T columns through a
//!   loaded tile is a fold with the MACs it does (BWD_IL two per PE, so
//!   up to 200%; a sequential backward two streams of one).
//! * Streaming Util % (sysgrad's own, not a SCALE-Sim column): useful MACs
//!   / (streaming cycles x PEs), without weight loads, drains, updates.

use super::count::LayerCost;
use super::offchip::OffChipRun;
use super::{Gemm, LayerRun, TopologyRun};
use crate::energy::{Energy, EnergyModel};
use crate::error::{Result, WorkloadError};
use crate::report::csv;
use crate::report::layers::streaming_cycles;
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::count::{Count, Overflow};
use sysgrad_emulator::gemm::tiles;
use sysgrad_emulator::Stats;

/// Figures published for gradient interleaving, quoted for comparison.
pub const PUBLISHED_FC_CYCLE_RATIO: (f64, f64) = (1.4, 2.2);
pub const PUBLISHED_FC_ACCESS_RATIO: f64 = 1.9;
pub const PUBLISHED_CNN_CYCLE_REDUCTION: f64 = 0.25;
/// Published: up to 16% less energy on CNNs.
pub const PUBLISHED_CNN_ENERGY_REDUCTION: f64 = 0.16;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct ComputeRow {
    pub total_cycles_incl_prefetch: u64,
    pub total_cycles: u64,
    pub stall_cycles: u64,
    pub overall_util: f64,
    pub mapping_efficiency: f64,
    pub compute_util: f64,
    pub streaming_util: f64,
    /// Weight tiles loaded (SCALE-Sim's folds).
    pub folds: usize,
    pub macs: u64,
    /// Words between the array and its on-chip buffers.
    pub reads: u64,
    pub writes: u64,
    /// Of the reads, the weight words.
    pub w_sram_reads: u64,
    pub offchip: OffChipRun,
    /// On-chip energy plus the off-chip words.
    pub energy: Energy,
}

fn pct(macs: u64, cycles: u64, pes: usize) -> f64 {
    if cycles == 0 {
        0.0
    } else {
        100.0 * macs as f64 / (cycles as f64 * pes as f64)
    }
}

/// What a pass's row is made of.
struct Pass<'a> {
    stats: &'a Stats,
    offchip: OffChipRun,
    folds: usize,
    compute_util: f64,
}

/// SCALE-Sim 3.0's Compute Util % of the streams every tile of `g` runs
/// (the products per PE of each stream: forward `[1]`, an interleaved
/// backward `[2]`, a sequential one `[1, 1]`): the mean over streams of
/// mapped PEs x products x T / (PEs x (2R + 2C + T - 3)).
pub fn scalesim_compute_util(cfg: &ArrayConfig, g: Gemm, streams: &[u64]) -> f64 {
    let (r, c, t) = (cfg.rows() as f64, cfg.cols() as f64, g.n as f64);
    let fold_cycles = 2.0 * r + 2.0 * c + t - 3.0;
    let (mut sum, mut folds) = (0.0, 0usize);
    for (_, m) in tiles(g.m, cfg.cols()) {
        for (_, k) in tiles(g.k, cfg.rows()) {
            for &products in streams {
                sum += (m * k) as f64 * products as f64 * t / (r * c * fold_cycles);
                folds += 1;
            }
        }
    }
    if folds == 0 {
        0.0
    } else {
        100.0 * sum / folds as f64
    }
}

impl ComputeRow {
    /// Weight words the array read from the buffer (the rest of the
    /// reads are X, dY and partial sums).
    fn offchip_w_sram(&self) -> u64 {
        self.w_sram_reads
    }

    fn new(p: &Pass, mapping_efficiency: f64, pes: usize, energy: &EnergyModel) -> Self {
        let t = p.stats.total();
        let o = &p.offchip;
        let mut e = energy.stats(p.stats).1;
        e += energy.off_chip(o.words());
        ComputeRow {
            total_cycles_incl_prefetch: o.total_cycles_incl_prefetch,
            total_cycles: o.total_cycles,
            stall_cycles: o.stall_cycles,
            overall_util: pct(t.macs, o.total_cycles, pes),
            mapping_efficiency: 100.0 * mapping_efficiency,
            compute_util: p.compute_util,
            streaming_util: pct(t.macs, streaming_cycles(p.stats), pes),
            folds: p.folds,
            macs: t.macs,
            reads: t.reads(),
            writes: t.writes(),
            w_sram_reads: t.w_reads,
            offchip: *o,
            energy: e,
        }
    }
}

/// One layer: forward, training interleaved, training sequential.
#[derive(Debug, Clone, Serialize)]
pub struct LayerReport {
    pub id: usize,
    pub name: String,
    pub fully_connected: bool,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// `N:M` of the weights as the topology gives it. sysgrad's array has
    /// no sparse dataflow: zero weights are multiplied like any other.
    pub sparsity: String,
    pub forward: ComputeRow,
    pub training_interleaved: ComputeRow,
    pub training_sequential: ComputeRow,
    pub backward_interleaved: ComputeRow,
    pub backward_sequential: ComputeRow,
    /// (pass, phase, energy) of every phase that ran.
    pub energy_by_phase: Vec<(String, String, Energy)>,
}

/// Energy by phase of the forward pass and of both training passes.
fn phase_energy(energy: &EnergyModel, l: &LayerRun) -> Vec<(String, String, Energy)> {
    let mut out = Vec::new();
    for (pass, stats) in [
        ("forward", &l.cost.forward),
        ("training_interleaved", &l.training_interleaved),
        ("training_sequential", &l.training_sequential),
    ] {
        for (phase, e) in energy.stats(stats).0 {
            out.push((pass.to_string(), phase.name().to_string(), e));
        }
    }
    out
}

pub fn layer_reports(run: &TopologyRun) -> Vec<LayerReport> {
    let pes = run.cfg.rows() * run.cfg.cols();
    let en = &run.energy;
    run.layers
        .iter()
        .enumerate()
        .map(|(id, l)| {
            let c: &LayerCost = &l.cost;
            let o = &l.offchip;
            let me = c.mapping_efficiency;
            let row = |stats: &Stats, offchip: OffChipRun, folds: usize, streams: &[u64]| {
                ComputeRow::new(
                    &Pass {
                        stats,
                        offchip,
                        folds,
                        compute_util: scalesim_compute_util(&run.cfg, l.gemm, streams),
                    },
                    me,
                    pes,
                    en,
                )
            };
            let tiles = c.tiles;
            LayerReport {
                id,
                name: l.layer.name.clone(),
                fully_connected: l.layer.is_fully_connected(),
                m: l.gemm.m,
                k: l.gemm.k,
                n: l.gemm.n,
                sparsity: l.layer.sparsity.to_string(),
                forward: row(&c.forward, o.forward, tiles, &[1]),
                training_interleaved: row(
                    &l.training_interleaved,
                    o.training_interleaved,
                    2 * tiles,
                    &[1, 2],
                ),
                training_sequential: row(
                    &l.training_sequential,
                    o.training_sequential,
                    2 * tiles,
                    &[1, 1, 1],
                ),
                backward_interleaved: row(
                    &c.backward_interleaved,
                    o.backward_interleaved,
                    tiles,
                    &[2],
                ),
                backward_sequential: row(
                    &c.backward_sequential,
                    o.backward_sequential,
                    tiles,
                    &[1, 1],
                ),
                energy_by_phase: phase_energy(en, l),
            }
        })
        .collect()
}

/// Sequential over interleaved for a set of layers.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Reduction {
    pub layers: usize,
    pub training_cycles_interleaved: u64,
    pub training_cycles_sequential: u64,
    pub training_cycle_ratio: f64,
    /// 1 - interleaved / sequential.
    pub training_cycle_reduction: f64,
    pub backward_cycle_ratio: f64,
    pub training_access_ratio: f64,
    pub backward_access_ratio: f64,
    /// Smallest and largest per-layer training cycle ratio.
    pub min_layer_cycle_ratio: f64,
    pub max_layer_cycle_ratio: f64,
    pub min_layer_backward_cycle_ratio: f64,
    pub max_layer_backward_cycle_ratio: f64,
    /// Training energy (on chip and off chip), sequential / interleaved.
    pub training_energy_ratio: f64,
    /// 1 - interleaved / sequential training energy.
    pub training_energy_reduction: f64,
    /// The same for the on-chip energy alone.
    pub training_on_chip_energy_reduction: f64,
    pub training_stall_cycles_interleaved: u64,
    pub training_stall_cycles_sequential: u64,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The figures of `layers` together; an overflow of a sum over them names
/// the sum (every figure of one layer is checked when it is counted).
pub fn reduction<'a>(
    layers: impl Iterator<Item = &'a LayerReport>,
) -> Result<Option<Reduction>, Overflow> {
    let ls: Vec<&LayerReport> = layers.collect();
    if ls.is_empty() {
        return Ok(None);
    }
    let mut over = None;
    let mut sum = |f: &dyn Fn(&LayerReport) -> u64| {
        let total: Count = ls.iter().map(|l| f(l)).sum();
        total.value().unwrap_or_else(|| {
            over = Some(Overflow::new(
                "the cycles, stall cycles or buffer accesses of all layers together",
            ));
            0
        })
    };
    let (ti, ts) = (
        sum(&|l| l.training_interleaved.total_cycles),
        sum(&|l| l.training_sequential.total_cycles),
    );
    let (bi, bs) = (
        sum(&|l| l.backward_interleaved.total_cycles),
        sum(&|l| l.backward_sequential.total_cycles),
    );
    let acc = |r: &ComputeRow| r.reads + r.writes;
    let (ai, as_) = (
        sum(&|l| acc(&l.training_interleaved)),
        sum(&|l| acc(&l.training_sequential)),
    );
    let (bai, bas) = (
        sum(&|l| acc(&l.backward_interleaved)),
        sum(&|l| acc(&l.backward_sequential)),
    );
    let per_layer = |f: &dyn Fn(&LayerReport) -> f64| {
        ls.iter()
            .map(|l| f(l))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let (lo, hi) = per_layer(&|l| {
        ratio(
            l.training_sequential.total_cycles,
            l.training_interleaved.total_cycles,
        )
    });
    let (blo, bhi) = per_layer(&|l| {
        ratio(
            l.backward_sequential.total_cycles,
            l.backward_interleaved.total_cycles,
        )
    });
    let energy = |f: &dyn Fn(&LayerReport) -> f64| ls.iter().map(|l| f(l)).sum::<f64>();
    let (ei, es) = (
        energy(&|l| l.training_interleaved.energy.total_pj()),
        energy(&|l| l.training_sequential.energy.total_pj()),
    );
    let (oi, os) = (
        energy(&|l| l.training_interleaved.energy.on_chip_pj()),
        energy(&|l| l.training_sequential.energy.on_chip_pj()),
    );
    let stalls = (
        sum(&|l| l.training_interleaved.stall_cycles),
        sum(&|l| l.training_sequential.stall_cycles),
    );
    if let Some(o) = over {
        return Err(o);
    }
    let fratio = |a: f64, b: f64| if b == 0.0 { 0.0 } else { a / b };
    Ok(Some(Reduction {
        training_energy_ratio: fratio(es, ei),
        training_energy_reduction: 1.0 - fratio(ei, es),
        training_on_chip_energy_reduction: 1.0 - fratio(oi, os),
        training_stall_cycles_interleaved: stalls.0,
        training_stall_cycles_sequential: stalls.1,
        layers: ls.len(),
        training_cycles_interleaved: ti,
        training_cycles_sequential: ts,
        training_cycle_ratio: ratio(ts, ti),
        training_cycle_reduction: 1.0 - ratio(ti, ts),
        backward_cycle_ratio: ratio(bs, bi),
        training_access_ratio: ratio(as_, ai),
        backward_access_ratio: ratio(bas, bai),
        min_layer_cycle_ratio: lo,
        max_layer_cycle_ratio: hi,
        min_layer_backward_cycle_ratio: blo,
        max_layer_backward_cycle_ratio: bhi,
    }))
}

/// SCALE-Sim 3.0's COMPUTE_REPORT layout (", " separated, trailing comma).
pub fn compute_report(rows: &[(usize, ComputeRow)]) -> String {
    let mut s = String::from("LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n");
    for (id, r) in rows {
        writeln!(
            s,
            "{id}, {}, {}, {}, {:.4}, {:.4}, {:.4},",
            r.total_cycles_incl_prefetch,
            r.total_cycles,
            r.stall_cycles,
            r.overall_util,
            r.mapping_efficiency,
            r.compute_util
        )
        .unwrap();
    }
    s
}

/// Words per cycle over `cycles` (SCALE-Sim divides by the span + 1 for
/// DRAM and by Total Cycles for SRAM).
fn per_cycle(words: u64, cycles: u64) -> f64 {
    words as f64 / cycles.max(1) as f64
}

/// SCALE-Sim 3.0's BANDWIDTH_REPORT of the forward pass: SRAM words the
/// array reads (IFMAP = X, FILTER = W) and writes (OFMAP = Y and partial
/// sums) per Total Cycle; DRAM words per cycle of their transfer span.
pub fn bandwidth_report(layers: &[LayerReport]) -> String {
    let mut s = String::from("LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,\n");
    for l in layers {
        let r = &l.forward;
        let o = &r.offchip;
        let read_span = o.read_stop - o.read_start + 1;
        let write_span = o.write_stop - o.write_start + 1;
        let (x, w) = (r.reads - r.offchip_w_sram(), r.offchip_w_sram());
        writeln!(
            s,
            "{}, {:.4}, {:.4}, {:.4}, {:.4}, {:.4}, {:.4},",
            l.id,
            per_cycle(x, r.total_cycles),
            per_cycle(w, r.total_cycles),
            per_cycle(r.writes, r.total_cycles),
            per_cycle(o.x_reads + o.acc_reads, read_span),
            per_cycle(o.w_reads, read_span),
            per_cycle(o.writes, write_span),
        )
        .unwrap();
    }
    s
}

/// SCALE-Sim 3.0's DETAILED_ACCESS_REPORT of the forward pass. SRAM
/// start/stop are the array's first and last compute cycle (sysgrad reads
/// every buffer from the first tile on), DRAM ones the off-chip model's.
pub fn detailed_access_report(layers: &[LayerReport]) -> String {
    let mut s = String::from("LayerID, SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, SRAM Filter Start Cycle, SRAM Filter Stop Cycle, SRAM Filter Reads, SRAM OFMAP Start Cycle, SRAM OFMAP Stop Cycle, SRAM OFMAP Writes, DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM IFMAP Reads, DRAM Filter Start Cycle, DRAM Filter Stop Cycle, DRAM Filter Reads, DRAM OFMAP Start Cycle, DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,\n");
    for l in layers {
        let r = &l.forward;
        let o = &r.offchip;
        let (start, stop) = (o.prefetch_cycles, o.prefetch_cycles + o.total_cycles);
        let w = r.offchip_w_sram();
        writeln!(
            s,
            "{}, {start}, {stop}, {}, {start}, {stop}, {w}, {start}, {stop}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {},",
            l.id,
            r.reads - w,
            r.writes,
            o.read_start,
            o.read_stop,
            o.x_reads + o.acc_reads,
            o.read_start,
            o.read_stop,
            o.w_reads,
            o.write_start,
            o.write_stop,
            o.writes,
        )
        .unwrap();
    }
    s
}

const SYSGRAD_HEADER: [&str; 22] = [
    "LayerID",
    "Layer",
    "Pass",
    "GEMM MxKxN",
    "Sparsity (N:M)",
    "Sparsity Exploited",
    "Folds",
    "Total Cycles",
    "Stall Cycles",
    "Prefetch Cycles",
    "MACs",
    "Overall Util %",
    "Compute Util %",
    "Streaming Util %",
    "Buffer Reads",
    "Buffer Writes",
    "Off-chip Reads",
    "Off-chip Writes",
    "Energy On-chip (nJ)",
    "Energy Off-chip (nJ)",
    "Energy Total (nJ)",
    "Energy per MAC (pJ)",
];

/// Every pass of every layer with sysgrad's own columns.
fn sysgrad_rows(layers: &[LayerReport]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for l in layers {
        for (pass, r) in [
            ("forward", &l.forward),
            ("training_interleaved", &l.training_interleaved),
            ("training_sequential", &l.training_sequential),
        ] {
            let e = &r.energy;
            out.push(vec![
                l.id.to_string(),
                l.name.clone(),
                pass.into(),
                format!("{}x{}x{}", l.m, l.k, l.n),
                l.sparsity.clone(),
                "no (dense dataflow)".into(),
                r.folds.to_string(),
                r.total_cycles.to_string(),
                r.stall_cycles.to_string(),
                r.offchip.prefetch_cycles.to_string(),
                r.macs.to_string(),
                format!("{:.4}", r.overall_util),
                format!("{:.4}", r.compute_util),
                format!("{:.4}", r.streaming_util),
                r.reads.to_string(),
                r.writes.to_string(),
                r.offchip.reads().to_string(),
                r.offchip.writes.to_string(),
                format!("{:.3}", e.on_chip_pj() / 1e3),
                format!("{:.3}", e.off_chip_pj / 1e3),
                format!("{:.3}", e.total_pj() / 1e3),
                format!("{:.4}", e.total_pj() / r.macs.max(1) as f64),
            ]);
        }
    }
    out
}

const ENERGY_HEADER: [&str; 10] = [
    "LayerID",
    "Layer",
    "Pass",
    "Phase",
    "Multiply (pJ)",
    "Accumulate (pJ)",
    "Register (pJ)",
    "Buffer (pJ)",
    "Off-chip (pJ)",
    "Total (pJ)",
];

/// Energy per layer, pass and phase; off-chip words as their own phase.
fn energy_rows(layers: &[LayerReport]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let cells = |e: &Energy| {
        [
            e.multiply_pj,
            e.accumulate_pj,
            e.register_pj,
            e.buffer_pj,
            e.off_chip_pj,
            e.total_pj(),
        ]
        .map(|v| format!("{v:.2}"))
    };
    for l in layers {
        for (pass, phase, e) in &l.energy_by_phase {
            let mut r = vec![
                l.id.to_string(),
                l.name.clone(),
                pass.clone(),
                phase.clone(),
            ];
            r.extend(cells(e));
            out.push(r);
        }
        for (pass, r) in [
            ("forward", &l.forward),
            ("training_interleaved", &l.training_interleaved),
            ("training_sequential", &l.training_sequential),
        ] {
            let off = Energy {
                off_chip_pj: r.energy.off_chip_pj,
                ..Energy::default()
            };
            let mut row = vec![
                l.id.to_string(),
                l.name.clone(),
                pass.into(),
                "off_chip".into(),
            ];
            row.extend(cells(&off));
            out.push(row);
        }
    }
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct TopologySummary {
    pub topology: String,
    pub run_name: String,
    pub array: String,
    pub dataflow_in_config: String,
    pub batch: usize,
    pub dw_sink: String,
    pub layers: Vec<LayerReport>,
    pub fully_connected: Option<Reduction>,
    pub whole_network: Option<Reduction>,
    pub files: Vec<PathBuf>,
}

fn comparison_rows(layers: &[LayerReport]) -> Vec<Vec<String>> {
    layers
        .iter()
        .map(|l| {
            let (ti, ts) = (&l.training_interleaved, &l.training_sequential);
            let (bi, bs) = (&l.backward_interleaved, &l.backward_sequential);
            vec![
                l.id.to_string(),
                l.name.clone(),
                l.fully_connected.to_string(),
                format!("{}x{}x{}", l.m, l.k, l.n),
                ti.total_cycles.to_string(),
                ts.total_cycles.to_string(),
                format!("{:.4}", ratio(ts.total_cycles, ti.total_cycles)),
                format!(
                    "{:.2}",
                    100.0 * (1.0 - ratio(ti.total_cycles, ts.total_cycles))
                ),
                bi.total_cycles.to_string(),
                bs.total_cycles.to_string(),
                format!("{:.4}", ratio(bs.total_cycles, bi.total_cycles)),
                (ti.reads + ti.writes).to_string(),
                (ts.reads + ts.writes).to_string(),
                format!("{:.4}", ratio(ts.reads + ts.writes, ti.reads + ti.writes)),
                format!("{:.4}", ratio(bs.reads + bs.writes, bi.reads + bi.writes)),
            ]
        })
        .collect()
}

const COMPARISON_HEADER: [&str; 15] = [
    "LayerID",
    "Layer",
    "FullyConnected",
    "GEMM MxKxN",
    "Training Cycles Interleaved",
    "Training Cycles Sequential",
    "Training Cycle Ratio",
    "Training Cycle Reduction %",
    "Backward Cycles Interleaved",
    "Backward Cycles Sequential",
    "Backward Cycle Ratio",
    "Training Accesses Interleaved",
    "Training Accesses Sequential",
    "Training Access Ratio",
    "Backward Access Ratio",
];

fn access_rows(layers: &[LayerReport]) -> Vec<Vec<String>> {
    layers
        .iter()
        .map(|l| {
            let mut r = vec![l.id.to_string(), l.name.clone()];
            for c in [&l.forward, &l.training_interleaved, &l.training_sequential] {
                r.push(c.reads.to_string());
                r.push(c.writes.to_string());
            }
            r
        })
        .collect()
}

const ACCESS_HEADER: [&str; 8] = [
    "LayerID",
    "Layer",
    "Forward Reads",
    "Forward Writes",
    "Training Interleaved Reads",
    "Training Interleaved Writes",
    "Training Sequential Reads",
    "Training Sequential Writes",
];

/// The comparison in prose, measured next to published.
pub fn comparison_markdown(s: &TopologySummary) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "# {}: interleaved vs sequential backward on {}\n",
        s.topology, s.array
    );
    let _ = writeln!(
        m,
        "Batch {} (N = batch x output pixels), dW sink `{}`. Training = forward + dX + dW \
         (+ drain or in-place update). Ratios are sequential / interleaved.\n",
        s.batch, s.dw_sink
    );
    let _ = writeln!(m, "| metric | published | measured |\n|---|---:|---:|");
    let (plo, phi) = PUBLISHED_FC_CYCLE_RATIO;
    match &s.fully_connected {
        Some(fc) => {
            let _ = writeln!(
                m,
                "| FC layers: fewer cycles, training (per layer) | {plo:.1}-{phi:.1}x | {:.2}-{:.2}x (all FC: {:.2}x) |",
                fc.min_layer_cycle_ratio, fc.max_layer_cycle_ratio, fc.training_cycle_ratio
            );
            let _ = writeln!(
                m,
                "| FC layers: fewer cycles, backward only (per layer) | {plo:.1}-{phi:.1}x | {:.2}-{:.2}x (all FC: {:.2}x) |",
                fc.min_layer_backward_cycle_ratio, fc.max_layer_backward_cycle_ratio, fc.backward_cycle_ratio
            );
            let _ = writeln!(
                m,
                "| FC layers: fewer memory accesses, training / backward only | {PUBLISHED_FC_ACCESS_RATIO:.1}x | {:.2}x / {:.2}x |",
                fc.training_access_ratio, fc.backward_access_ratio
            );
        }
        None => {
            let _ = writeln!(m, "| FC layers | {plo:.1}-{phi:.1}x cycles, {PUBLISHED_FC_ACCESS_RATIO:.1}x accesses | (no FC layer in this topology) |");
        }
    }
    if let Some(w) = &s.whole_network {
        let _ = writeln!(
            m,
            "| whole network: fewer training cycles | up to {:.0}% | {:.1}% ({:.2}x) |",
            100.0 * PUBLISHED_CNN_CYCLE_REDUCTION,
            100.0 * w.training_cycle_reduction,
            w.training_cycle_ratio
        );
        let _ = writeln!(
            m,
            "| whole network: fewer memory accesses, training | - | {:.2}x |",
            w.training_access_ratio
        );
        let _ = writeln!(
            m,
            "| whole network: less training energy (on chip + off chip / on chip only) | up to {:.0}% (CNNs) | {:.1}% / {:.1}% |",
            100.0 * PUBLISHED_CNN_ENERGY_REDUCTION,
            100.0 * w.training_energy_reduction,
            100.0 * w.training_on_chip_energy_reduction
        );
        let _ = writeln!(
            m,
            "| whole network: stall cycles, training (interleaved / sequential) | - | {} / {} |",
            w.training_stall_cycles_interleaved, w.training_stall_cycles_sequential
        );
    }
    m.push_str(
        "\nMemory accesses count words moved between the array and its on-chip buffers \
         (weights loaded and stored, X and dY streamed, Y/dX/dW written, partial sums \
         read-modify-written). The sequential baseline streams dY twice (dX pass, then dW \
         pass) but loads each weight tile once, so its extra traffic is one dY stream per \
         tile; where weight traffic dominates (batch-1 FC layers) the access ratio stays \
         close to 1. The published access figure may count the baseline differently \
         (e.g. reloading weights or re-reading X per pass).\n\n\
         Energy: the per-action model of `sysgrad_workloads::energy` (45 nm, Horowitz \
         ISSCC 2014; dynamic energy only). Both schedules do the same MACs and move the \
         same words off chip, so interleaving saves only the second dY stream from the \
         gradient buffer and the register activity of the extra pass; multiplies, \
         accumulator buffer traffic and DRAM, equal in both, dominate, so the saving is \
         smaller than the cycle saving. A baseline that also reloaded weights or \
         re-fetched dY off chip for its second pass would save more.\n",
    );
    m
}

fn err(path: &Path) -> impl Fn(std::io::Error) -> WorkloadError + '_ {
    move |e| WorkloadError::io(path, e)
}

/// Writes every report into `out` and returns the summary.
pub fn write_topology_report(run: &TopologyRun, out: &Path) -> Result<TopologySummary> {
    std::fs::create_dir_all(out).map_err(err(out))?;
    let layers = layer_reports(run);
    // `run_topology` checked these sums already.
    let overflow = |source| WorkloadError::Overflow {
        input: format!("topology {} at batch {}", run.topology.name, run.batch),
        overflow: source,
    };
    let mut s = TopologySummary {
        topology: run.topology.name.clone(),
        run_name: run.config.run_name.clone(),
        array: run.cfg.tag(),
        dataflow_in_config: run.config.dataflow.clone(),
        batch: run.batch,
        dw_sink: match run.sink {
            sysgrad_emulator::gemm::DwSink::Drain => "drain".into(),
            sysgrad_emulator::gemm::DwSink::Update { lr_shift } => {
                format!("update (lr_shift {lr_shift})")
            }
        },
        fully_connected: reduction(layers.iter().filter(|l| l.fully_connected))
            .map_err(overflow)?,
        whole_network: reduction(layers.iter()).map_err(overflow)?,
        layers,
        files: Vec::new(),
    };
    let mut files = Vec::new();
    let mut write = |name: &str, text: String| -> Result<()> {
        let p = out.join(name);
        csv::write_text(&p, &text)?;
        files.push(p);
        Ok(())
    };
    let rows = |f: &dyn Fn(&LayerReport) -> ComputeRow| {
        s.layers.iter().map(|l| (l.id, f(l))).collect::<Vec<_>>()
    };
    write("COMPUTE_REPORT.csv", compute_report(&rows(&|l| l.forward)))?;
    write("BANDWIDTH_REPORT.csv", bandwidth_report(&s.layers))?;
    write(
        "DETAILED_ACCESS_REPORT.csv",
        detailed_access_report(&s.layers),
    )?;
    write(
        "SYSGRAD_REPORT.csv",
        csv::to_string(&SYSGRAD_HEADER, &sysgrad_rows(&s.layers)),
    )?;
    write(
        "ENERGY_REPORT.csv",
        csv::to_string(&ENERGY_HEADER, &energy_rows(&s.layers)),
    )?;
    write(
        "COMPUTE_REPORT_TRAINING_INTERLEAVED.csv",
        compute_report(&rows(&|l| l.training_interleaved)),
    )?;
    write(
        "COMPUTE_REPORT_TRAINING_SEQUENTIAL.csv",
        compute_report(&rows(&|l| l.training_sequential)),
    )?;
    write(
        "ACCESS_REPORT.csv",
        csv::to_string(&ACCESS_HEADER, &access_rows(&s.layers)),
    )?;
    write(
        "COMPARISON.csv",
        csv::to_string(&COMPARISON_HEADER, &comparison_rows(&s.layers)),
    )?;
    write("COMPARISON.md", comparison_markdown(&s))?;
    let json = out.join("summary.json");
    s.files = files;
    s.files.push(json.clone());
    csv::write_json(&json, &s)?;
    Ok(s)
}
