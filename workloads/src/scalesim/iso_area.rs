//! Interleaving at equal area. An interleaved PE has two multipliers, a
//! sequential one has one, so comparing both schedules on the same R x C
//! array holds the PE count equal, not the silicon. This module runs a
//! topology on sequential arrays sized to hold something else equal, the
//! multiplier count (R x 2C, and the nearest square) or the LUT count (from
//! a measured sequential / interleaved LUT ratio), next to the interleaved
//! R x C array, and reports training cycles, accesses and energy for each.

use super::report::{layer_reports, ComputeRow};
use super::{array_for, run_topology_on, Exactness, ScaleConfig, Topology};
use crate::energy::EnergyTable;
use crate::error::{Result, WorkloadError};
use std::fmt::Write;
use sysgrad_config::{Backward, Numbers};
use sysgrad_emulator::count;
use sysgrad_emulator::gemm::DwSink;

/// What a sequential array is sized to match in the interleaved R x C one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Held {
    /// The reference itself: interleaved, R x C.
    Reference,
    /// The same R x C PEs (half the multipliers): today's comparison.
    Pes,
    /// The same number of multipliers, R rows kept: R x 2C.
    MultipliersWide,
    /// The same number of multipliers (nearest square): s x s, s^2 ~ 2RC.
    MultipliersSquare,
    /// The same LUTs, given sequential / interleaved LUTs at equal PE
    /// count (`ratio`, measured by `sysgrad synth`): R rows kept.
    Luts { ratio: f64 },
}

impl Held {
    pub fn describe(self) -> String {
        match self {
            Held::Reference => "reference".into(),
            Held::Pes => "PEs".into(),
            Held::MultipliersWide => "multipliers (R rows kept)".into(),
            Held::MultipliersSquare => "multipliers (square)".into(),
            Held::Luts { ratio } => format!("LUTs (sequential PE = {ratio:.2}x the LUTs)"),
        }
    }
}

/// One array in the comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contender {
    pub rows: usize,
    pub cols: usize,
    pub backward: Backward,
    pub held: Held,
}

impl Contender {
    pub fn pes(&self) -> usize {
        self.rows * self.cols
    }
    pub fn multipliers(&self) -> usize {
        self.pes() * self.backward.multipliers_per_pe()
    }
}

/// The interleaved `rows` x `cols` reference and the sequential arrays
/// sized against it; with `lut_ratio`, also the one with equal LUTs.
pub fn contenders(rows: usize, cols: usize, lut_ratio: Option<f64>) -> Vec<Contender> {
    let seq = |rows, cols, held| Contender {
        rows,
        cols,
        backward: Backward::Sequential,
        held,
    };
    let multipliers = rows * cols * Backward::Interleaved.multipliers_per_pe();
    let side = (multipliers as f64).sqrt().round() as usize;
    let mut all = vec![
        Contender {
            rows,
            cols,
            backward: Backward::Interleaved,
            held: Held::Reference,
        },
        seq(rows, cols, Held::Pes),
        seq(rows, multipliers / rows, Held::MultipliersWide),
        seq(side, side, Held::MultipliersSquare),
    ];
    if let Some(ratio) = lut_ratio {
        let pes = (rows * cols) as f64 / ratio;
        let cols = ((pes / rows as f64).round() as usize).max(1);
        all.push(seq(rows, cols, Held::Luts { ratio }));
    }
    all
}

/// A whole topology's training (forward + backward, every layer) on one
/// contender.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub contender: Contender,
    /// Array cycles plus off-chip stalls.
    pub cycles: u64,
    pub stall_cycles: u64,
    /// Words between the array and its on-chip buffers.
    pub on_chip_words: u64,
    pub off_chip_words: u64,
    pub energy_pj: f64,
}

/// How a topology is run: the same for every contender.
pub struct Setup {
    pub topology: Topology,
    /// The reference array's config; contenders change only its size.
    pub config: ScaleConfig,
    pub batch: usize,
    pub sink: DwSink,
    pub how: Exactness,
    pub table: EnergyTable,
    /// The number format of every contender (its MACs' energy).
    pub numbers: Numbers,
}

/// Runs the topology on every contender (same buffers, bandwidth, energy
/// table, batch and dW sink: only the array's size and schedule change).
pub fn measure(setup: &Setup, contenders: &[Contender]) -> Result<Vec<Measured>> {
    contenders
        .iter()
        .map(|c| {
            let mut sc = setup.config.clone();
            sc.array_height = c.rows;
            sc.array_width = c.cols;
            let cfg = array_for(&sc)?
                .with_numbers(setup.numbers)
                .map_err(|e| WorkloadError::model("format", e.to_string()))?;
            let run = run_topology_on(
                &setup.topology,
                &sc,
                cfg,
                setup.batch,
                setup.sink,
                setup.how,
                setup.table,
            )?;
            let rows: Vec<ComputeRow> = layer_reports(&run)
                .into_iter()
                .map(|l| match c.backward {
                    Backward::Interleaved => l.training_interleaved,
                    Backward::Sequential => l.training_sequential,
                })
                .collect();
            let sum = |what: &str, f: &dyn Fn(&ComputeRow) -> u64| {
                count::sum(rows.iter().map(f), what).map_err(|source| WorkloadError::Overflow {
                    input: format!(
                        "topology {} at batch {} on {}x{}",
                        setup.topology.name, setup.batch, c.rows, c.cols
                    ),
                    overflow: source,
                })
            };
            Ok(Measured {
                contender: *c,
                cycles: sum("the training cycles", &|r| r.total_cycles)?,
                stall_cycles: sum("the stall cycles", &|r| r.stall_cycles)?,
                on_chip_words: sum("the on-chip words", &|r| r.reads + r.writes)?,
                off_chip_words: sum("the off-chip words", &|r| r.offchip.words())?,
                energy_pj: rows.iter().map(|r| r.energy.total_pj()).sum(),
            })
        })
        .collect()
}

/// `value / reference`, as a factor.
fn times(value: f64, reference: f64) -> String {
    format!("{:.2}x", value / reference)
}

/// One Markdown table per topology: each contender's figures and its
/// ratio to the interleaved reference (above 1.00x: the reference wins).
pub fn markdown(topology: &str, measured: &[Measured]) -> String {
    let Some(reference) = measured
        .iter()
        .find(|m| m.contender.held == Held::Reference)
    else {
        return String::new();
    };
    let mut out = format!(
        "**`{topology}`: training (forward + backward, every layer) at equal PEs, \
         multipliers or LUTs; ratios are contender / interleaved reference**\n\n\
         | array | backward | holds equal | PEs | multipliers | cycles | cycles ratio | \
         on-chip words | ratio | off-chip words | ratio | energy (uJ) | ratio |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for m in measured {
        let c = &m.contender;
        let _ = writeln!(
            out,
            "| {}x{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} |",
            c.rows,
            c.cols,
            c.backward.name(),
            c.held.describe(),
            c.pes(),
            c.multipliers(),
            m.cycles,
            times(m.cycles as f64, reference.cycles as f64),
            m.on_chip_words,
            times(m.on_chip_words as f64, reference.on_chip_words as f64),
            m.off_chip_words,
            times(m.off_chip_words as f64, reference.off_chip_words as f64),
            m.energy_pj / 1e6,
            times(m.energy_pj, reference.energy_pj),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contenders_hold_what_they_say() {
        let all = contenders(16, 16, Some(1.12));
        let reference = all[0];
        assert_eq!(reference.multipliers(), 512);
        for c in &all[1..] {
            match c.held {
                Held::Pes => assert_eq!(c.pes(), 256),
                Held::MultipliersWide => {
                    assert_eq!((c.rows, c.cols, c.multipliers()), (16, 32, 512))
                }
                Held::MultipliersSquare => assert_eq!((c.rows, c.cols), (23, 23)),
                // 256 / 1.12 = 228.6 PEs: 16 x 14 = 224 is the nearest with 16 rows.
                Held::Luts { .. } => assert_eq!((c.rows, c.cols), (16, 14)),
                Held::Reference => unreachable!("one reference"),
            }
            assert_eq!(c.backward, Backward::Sequential);
        }
    }

    /// The contenders' number format changes the energy of their MACs and
    /// nothing that is counted: bf16 multiplies and fp32 adds cost more
    /// than 16-bit integer ones in the default table.
    #[test]
    fn a_float_format_costs_float_energy_and_counts_alike() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
        let setup = |numbers| Setup {
            topology: super::super::load_topology(&root.join("vgg_small.csv")).unwrap(),
            config: super::super::load_config(&root.join("sysgrad_16x16.cfg")).unwrap(),
            batch: 1,
            sink: DwSink::Update { lr_shift: 4 },
            how: Exactness::FastLedger,
            table: EnergyTable::default(),
            numbers,
        };
        let config = super::super::load_config(&root.join("sysgrad_16x16.cfg")).unwrap();
        let fixed = setup(array_for(&config).unwrap().numbers());
        let bf16: sysgrad_config::float::FloatFormat = "bf16".parse().unwrap();
        let float = setup(Numbers::Float(bf16));
        let two = &contenders(16, 16, None)[..2];
        let (a, b) = (measure(&fixed, two).unwrap(), measure(&float, two).unwrap());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.cycles, x.on_chip_words, x.off_chip_words),
                (y.cycles, y.on_chip_words, y.off_chip_words)
            );
            assert!(
                y.energy_pj > x.energy_pj,
                "{} <= {}",
                y.energy_pj,
                x.energy_pj
            );
        }
    }
}
