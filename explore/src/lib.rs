//! Design-space sweep: every layer on every array of a grid (sizes x data
//! widths x backward schedules), one training step each (forward, then
//! backward with the chosen dW sink) in the fast exact mode, in parallel.
//! The counters are the cycle-accurate ones (`fast` guarantees it), so the
//! sweep reports what the hardware would take, at GEMM speed or better.
//! [`write_csv`] writes the rows, [`plot::write_svg`] a utilisation plot.

pub mod budget;
pub mod plot;
pub mod record;

use rayon::prelude::*;
use std::io::{self, Write};
use sysgrad_config::{fixed, ArrayConfig, Backward, ConfigError, NumberFormat};
use sysgrad_emulator::fast::{self, Engine, FastEngine};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::DriveError;
use sysgrad_emulator::{Counters, Phase, Stats};
use sysgrad_rng::Rng;

/// One layer `Y = W X`: W is M x K, X is K x N.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub name: String,
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

/// What a sweep point computes besides the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepData {
    /// Counters only (they depend on shapes alone): instant at any size.
    Counters,
    /// Also run the numbers on uniform full-range random data (seeded per
    /// layer and width), reporting how many outputs hit the clamp.
    Random { seed: u64 },
}

/// The arrays to try. Every combination of the lists is one configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// The configuration every point starts from (its pipelining, options
    /// and buffers); each point replaces its size, format and backward.
    pub base: ArrayConfig,
    /// (rows, cols) of the PE mesh.
    pub sizes: Vec<(usize, usize)>,
    /// Data widths; the rest of the format follows [`format_for`].
    pub in_bits: Vec<u32>,
    /// Backward schedules; the array is built for the schedule it runs.
    pub schedules: Vec<Backward>,
    pub sink: DwSink,
    pub data: SweepData,
}

/// One (configuration, layer) point.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    pub cfg: ArrayConfig,
    pub layer: Layer,
    pub stats: Stats,
    /// Outputs (Y and dX) at the accumulator clamp, with [`SweepData::Random`].
    pub saturated: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("grid point {point}")]
    Config { point: String, source: ConfigError },
    #[error("{tag}, layer {layer}")]
    Drive {
        tag: String,
        layer: String,
        source: DriveError,
    },
}

/// The number format used for a data width: accumulators of 2*DW + 8 bits
/// (headroom for 256-term sums without saturation, as in the 16/40/8
/// default), clamped to the allowed range, and DW/2 fractional bits.
pub fn format_for(in_bits: u32) -> NumberFormat {
    NumberFormat {
        in_bits,
        acc_bits: (2 * in_bits + 8).clamp(16, 48),
        frac_bits: in_bits / 2,
    }
}

/// The configurations of a grid, in sweep order (size, width, schedule);
/// a point outside the allowed ranges is an error naming it.
pub fn configs(grid: &Grid) -> Result<Vec<ArrayConfig>, SweepError> {
    let mut out = Vec::new();
    for &(rows, cols) in &grid.sizes {
        for &bits in &grid.in_bits {
            for &schedule in &grid.schedules {
                let cfg = grid
                    .base
                    .with_size(rows, cols)
                    .and_then(|c| c.with_format(format_for(bits)))
                    .map_err(|source| SweepError::Config {
                        point: format!("{rows}x{cols}, {bits}-bit data, {}", schedule.name()),
                        source,
                    })?;
                out.push(cfg.with_backward(schedule));
            }
        }
    }
    Ok(out)
}

/// One point of a sweep: a configuration and the index of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub cfg: ArrayConfig,
    pub layer: usize,
}

/// The sweep's job list, defined once: every layer on every configuration,
/// configuration-major, in [`configs`] then layer order (the order of the
/// CSV's rows). A sharded sweep runs a subset of it.
pub fn points(layers: &[Layer], grid: &Grid) -> Result<Vec<Point>, SweepError> {
    Ok(configs(grid)?
        .into_iter()
        .flat_map(|cfg| (0..layers.len()).map(move |layer| Point { cfg, layer }))
        .collect())
}

/// Runs every layer on every configuration of `grid` (in parallel) and
/// returns the rows configuration-major, in [`configs`] then layer order.
pub fn sweep(layers: &[Layer], grid: &Grid) -> Result<Vec<SweepRow>, SweepError> {
    sweep_points(&points(layers, grid)?, layers, grid)
}

/// Runs the given points of a sweep (in parallel); the rows in their order.
pub fn sweep_points(
    points: &[Point],
    layers: &[Layer],
    grid: &Grid,
) -> Result<Vec<SweepRow>, SweepError> {
    points
        .par_iter()
        .map(|&Point { cfg, layer: l }| {
            run_point(&cfg, l, &layers[l], grid).map_err(|source| SweepError::Drive {
                tag: cfg.tag(),
                layer: layers[l].name.clone(),
                source,
            })
        })
        .collect()
}

/// One training step of one layer on one configuration.
fn run_point(
    cfg: &ArrayConfig,
    index: usize,
    layer: &Layer,
    grid: &Grid,
) -> Result<SweepRow, DriveError> {
    let schedule = cfg.backward();
    let dims = (layer.m, layer.k, layer.n);
    let (stats, saturated) = match grid.data {
        SweepData::Counters => {
            let mut stats = Stats::default();
            fast::count_forward(&mut stats, cfg, dims)?;
            fast::count_backward(&mut stats, cfg, schedule, dims, grid.sink)?;
            (stats, None)
        }
        SweepData::Random { seed } => {
            let bits = cfg.format().in_bits;
            // The same data for every array of a width: only the array varies.
            let mut rng = Rng::new(seed ^ ((index as u64) << 8) ^ bits as u64);
            let w = rng.uniform_matrix(layer.m, layer.k, bits);
            let x = rng.uniform_matrix(layer.k, layer.n, bits);
            let dy = rng.uniform_matrix(layer.m, layer.n, bits);
            let mut engine = FastEngine::new(*cfg);
            let y = engine.forward(w.view(), x.view())?;
            let back = engine.backward(schedule, w.view(), x.view(), dy.view(), grid.sink)?;
            let aw = cfg.format().acc_bits;
            let at_clamp = |v: &&i64| **v == fixed::min_of(aw) || **v == fixed::max_of(aw);
            let saturated = y.iter().chain(back.dx.iter()).filter(at_clamp).count();
            (engine.stats, Some(saturated as u64))
        }
    };
    Ok(SweepRow {
        cfg: *cfg,
        layer: layer.clone(),
        stats,
        saturated,
    })
}

/// The phases of [`Stats::backward`].
const BACKWARD: [Phase; 5] = [
    Phase::BackwardDx,
    Phase::BackwardDw,
    Phase::BackwardInterleaved,
    Phase::Drain,
    Phase::Update,
];

impl SweepRow {
    pub fn pes(&self) -> usize {
        self.cfg.rows() * self.cfg.cols()
    }

    /// Useful MACs and MAC slots (cycles x PEs x [`Stats::mac_slots`]) of
    /// some phases: what utilisation divides, kept apart for aggregating.
    pub fn macs_and_slots(&self, phases: &[Phase]) -> (u64, u64) {
        phases.iter().fold((0, 0), |(m, s), &p| {
            let c = self.stats.phase(p);
            let slots = c.cycles * Stats::mac_slots(p) * self.pes() as u64;
            (m + c.macs, s + slots)
        })
    }

    /// Utilisation of some phases together, as [`Stats::utilization`]
    /// defines it for one phase or all (an interleaved pass offers two MAC
    /// slots per PE and cycle).
    pub fn utilization(&self, phases: &[Phase]) -> f64 {
        match self.macs_and_slots(phases) {
            (_, 0) => 0.0,
            (m, s) => m as f64 / s as f64,
        }
    }

    /// Buffer traffic in bits: data words are `in_bits` wide, accumulator
    /// words (Y, dX, dW and the partial-sum read-modify-writes) `acc_bits`.
    pub fn traffic_bits(c: &Counters, f: &NumberFormat) -> u64 {
        let data = c.w_reads + c.x_reads + c.dy_reads + c.w_writes;
        let acc = c.y_writes + c.dx_writes + c.dw_writes + c.acc_reads + c.acc_writes;
        data * f.in_bits as u64 + acc * f.acc_bits as u64
    }
}

/// The CSV header, matching [`csv_line`].
pub fn csv_header() -> String {
    let mut cols: Vec<String> = [
        "rows",
        "cols",
        "pes",
        "schedule",
        "in_bits",
        "acc_bits",
        "frac_bits",
        "layer",
        "m",
        "k",
        "n",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cols.extend(Phase::ALL.iter().map(|p| format!("cycles_{}", p.name())));
    cols.extend(
        [
            "cycles",
            "macs",
            "reads",
            "writes",
            "accesses",
            "traffic_bits",
            "utilization",
            "backward_cycles",
            "backward_utilization",
            "saturated",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    cols.join(",")
}

/// One row as CSV (layer names are quoted if they need it).
pub fn csv_line(row: &SweepRow) -> String {
    let (cfg, l, st) = (&row.cfg, &row.layer, &row.stats);
    let (total, back) = (st.total(), st.backward());
    let name = if l.name.contains([',', '"', '\n']) {
        format!("\"{}\"", l.name.replace('"', "\"\""))
    } else {
        l.name.clone()
    };
    let mut f: Vec<String> = vec![
        cfg.rows().to_string(),
        cfg.cols().to_string(),
        row.pes().to_string(),
        cfg.backward().name().to_string(),
        cfg.format().in_bits.to_string(),
        cfg.format().acc_bits.to_string(),
        cfg.format().frac_bits.to_string(),
        name,
        l.m.to_string(),
        l.k.to_string(),
        l.n.to_string(),
    ];
    f.extend(Phase::ALL.iter().map(|p| st.phase(*p).cycles.to_string()));
    f.extend([
        total.cycles.to_string(),
        total.macs.to_string(),
        total.reads().to_string(),
        total.writes().to_string(),
        total.accesses().to_string(),
        SweepRow::traffic_bits(&total, &cfg.format()).to_string(),
        format!("{:.6}", row.utilization(&Phase::ALL)),
        back.cycles.to_string(),
        format!("{:.6}", row.utilization(&BACKWARD)),
        row.saturated.map(|s| s.to_string()).unwrap_or_default(),
    ]);
    f.join(",")
}

/// Writes the rows as CSV with a header line (utilisations as fractions,
/// see [`SweepRow::utilization`]).
pub fn write_csv(rows: &[SweepRow], mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{}", csv_header())?;
    for row in rows {
        writeln!(out, "{}", csv_line(row))?;
    }
    Ok(())
}
