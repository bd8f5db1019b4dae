//! `sysgrad sweep`: a design-space sweep (array sizes x data widths x
//! schedules) over a list of layers, in the fast exact mode, in parallel;
//! writes `sweep.csv` and `sweep.svg`; with `--shard I/N` a share of the
//! points and one shard file (`crate::shard`), which `sysgrad merge`
//! joins into the same two files.

use crate::args::{one_config, write_atomically, Budget, Configs, Out, Timings};
use crate::choices::{array_size, layer};
use crate::shard::{self, ShardChoice};
use anyhow::{Context, Result};
use std::path::Path;
use sysgrad_config::outdir::OutputDir;
use sysgrad_config::Backward;
use sysgrad_emulator::gemm::DwSink;
use sysgrad_explore::record::RowRecord;
use sysgrad_explore::{Grid, Layer, Point, SweepData, SweepRow};

/// Where `sweep` writes without `-o`.
const DEFAULT_OUT: &str = "target/sweep";

#[derive(clap::Args)]
#[command(
    mut_arg("config", |a| one_config(a).help("The configuration every point starts from: its pipelining, options and buffers (each point sets its size, format and backward) [default: the built-in 16x16]")),
    mut_arg("out", |a| a.help("Output folder for sweep.csv and sweep.svg (with --shard, for the shard file)").default_value(DEFAULT_OUT))
)]
pub struct SweepArgs {
    #[command(flatten)]
    config: Configs,
    /// Array sizes, ROWSxCOLS, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = array_size, default_value = "4x4,8x8,16x16,32x32", value_name = "RxC")]
    sizes: Vec<(usize, usize)>,
    /// Data widths (bits), comma-separated; the rest of the format follows
    /// `sysgrad_explore::format_for`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "8,16",
        value_name = "BITS"
    )]
    in_bits: Vec<u32>,
    /// Backward schedules, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "interleaved,sequential")]
    backward: Vec<Backward>,
    /// Layers as NAME:MxKxN (W is M x K, batch N), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = layer,
        default_value = "fc1:256x784x64,fc2:128x256x64,fc3:10x128x64",
        value_name = "NAME:MxKxN"
    )]
    layers: Vec<Layer>,
    #[command(flatten)]
    out: Out,
    #[command(flatten)]
    timings: Timings,
    #[command(flatten)]
    budget: Budget,
    #[command(flatten)]
    shard: ShardChoice,
}

pub fn run(a: &SweepArgs) -> Result<()> {
    let base = a.config.one_or_default()?;
    let grid = Grid {
        base,
        sizes: a.sizes.clone(),
        in_bits: a.in_bits.clone(),
        schedules: a.backward.clone(),
        // An array built with a constant shift takes only that one.
        sink: DwSink::Update {
            lr_shift: base.fixed_lr_shift().unwrap_or(8),
        },
        data: SweepData::Counters,
    };
    let all = sysgrad_explore::points(&a.layers, &grid)?;
    let sel = shard::select(a.shard.shard, all, |p| {
        // Every input of a point: its array, its layer, what it computes.
        format!(
            "{:?} {:?} {:?} {:?}",
            p.cfg, a.layers[p.layer], grid.data, grid.sink
        )
    });
    let mine: Vec<Point> = sel.jobs().copied().collect();
    a.budget.admit(&sysgrad_explore::budget::sweep_points(
        &mine, &a.layers, &grid,
    ))?;
    let start = std::time::Instant::now();
    let rows = sysgrad_explore::sweep_points(&mine, &a.layers, &grid)?;
    let time = format!(
        "{} points in {:.1} ms",
        rows.len(),
        start.elapsed().as_secs_f64() * 1e3
    );
    let out = a.out.or(DEFAULT_OUT);
    if let Some(s) = sel.shard {
        let results = rows
            .iter()
            .map(|r| serde_json::to_value(RowRecord::from(r)))
            .collect::<Result<_, _>>()?;
        shard::write(&out, "sweep", &sel, s, results)?;
        a.timings.print(&time);
        return Ok(());
    }
    let dir = write_files(&out, &rows)?;
    a.timings.print(&time);
    crate::run_dir::finish(&dir)
}

/// Writes `sweep.csv` and `sweep.svg` of `rows` into `out`, started as a
/// run (its manifest still to write): what an unsharded sweep and `sysgrad
/// merge` of a sweep's shards write, with the same code.
fn write_files(out: &Path, rows: &[SweepRow]) -> Result<OutputDir> {
    let mut csv = Vec::new();
    sysgrad_explore::write_csv(rows, &mut csv)?;
    let mut svg = Vec::new();
    sysgrad_explore::plot::write_svg(rows, &mut svg)?;
    let dir = crate::run_dir::start(out)?;
    for (name, bytes) in [("sweep.csv", &csv), ("sweep.svg", &svg)] {
        let path = out.join(name);
        write_atomically(&path, bytes)?;
        println!("wrote {} ({} points)", path.display(), rows.len());
    }
    Ok(dir)
}

/// `sysgrad merge` of a sweep: the rows of every shard, in job order.
pub fn merge(out: &Path, results: Vec<serde_json::Value>) -> Result<()> {
    let rows = results
        .into_iter()
        .enumerate()
        .map(|(job, r)| {
            let record: RowRecord = serde_json::from_value(r)
                .with_context(|| format!("job {job}: not a stored sweep row"))?;
            SweepRow::try_from(record).with_context(|| format!("job {job}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let dir = write_files(out, &rows)?;
    crate::run_dir::finish(&dir)
}
