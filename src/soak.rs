//! `sysgrad soak`: the randomised co-simulation soak
//! (`sysgrad_testbench::soak`) over a fixed list of seeds, so that a long
//! soak can be split into shards (`--shard I/N`) and run on a cluster:
//! seed S gives a random configuration (sizes up to `--max-dim`) and a
//! random training step, the RTL (Verilator) against the emulator every
//! cycle; a failing case is shrunk to a smaller layer. Writes `soak.csv`,
//! one row per seed, and fails (exit 1) after writing it if any case
//! failed. The time-bounded soak of the test suite
//! (`testbench/tests/soak_and_faults.rs`) runs the same cases.

use crate::args::{write_atomically, Out, Timings};
use crate::shard::{self, ShardChoice};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;
use sysgrad_testbench::soak::{self, Outcome};

/// Where `soak` writes without `-o`.
const DEFAULT_OUT: &str = "target/soak";
/// The file a soak writes (a merge of its shards too).
const CSV: &str = "soak.csv";
const HEADER: &str = "seed,config,layer,result,cycles,shrunk_config,shrunk_layer,error";

#[derive(clap::Args)]
#[command(mut_arg("out", |a| a.help("Output folder for soak.csv (with --shard, for the shard file); the simulators build in its subfolder work/ (work-I-of-N with --shard)").default_value(DEFAULT_OUT)))]
pub struct SoakArgs {
    /// First seed (printed with each case, so a failure can be replayed
    /// with --seed S --runs 1).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of cases: seeds SEED to SEED+RUNS-1.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Largest number of rows or columns of a random array.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..=64))]
    max_dim: u64,
    #[command(flatten)]
    out: Out,
    #[command(flatten)]
    timings: Timings,
    #[command(flatten)]
    shard: ShardChoice,
}

/// One case's row of `soak.csv`, as a shard stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CaseRow {
    line: String,
    failed: bool,
}

/// A CSV field, quoted if it needs it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn run_case(seed: u64, max_dim: usize, work: &Path) -> CaseRow {
    let (cfg, spec, outcome) = soak::case(seed, max_dim, work, &mut |l| println!("{l}"));
    let (result, cycles, shrunk) = match &outcome {
        Outcome::Passed { cycles } => ("ok", cycles.to_string(), None),
        Outcome::Failed(f) => ("failed", String::new(), Some(f)),
    };
    let fields = [
        seed.to_string(),
        cfg.tag(),
        spec.to_string(),
        result.to_string(),
        cycles,
        shrunk.map(|f| f.cfg.tag()).unwrap_or_default(),
        shrunk.map(|f| f.spec.to_string()).unwrap_or_default(),
        shrunk.map(|f| f.error.clone()).unwrap_or_default(),
    ];
    CaseRow {
        line: fields
            .iter()
            .map(|f| field(f))
            .collect::<Vec<_>>()
            .join(","),
        failed: shrunk.is_some(),
    }
}

pub fn run(a: &SoakArgs) -> Result<()> {
    let Some(last) = a.seed.checked_add(a.runs - 1) else {
        bail!("--seed {} --runs {}: the seeds pass 2^64", a.seed, a.runs);
    };
    let max_dim = a.max_dim as usize;
    let sel = shard::select(a.shard.shard, (a.seed..=last).collect(), |s| {
        format!("seed {s}, max dim {max_dim}")
    });
    let out = a.out.or(DEFAULT_OUT);
    let work = match sel.shard {
        Some(s) => out.join(format!("work-{}-of-{}", s.index, s.count)),
        None => out.join("work"),
    };
    let dir = match sel.shard {
        None => Some(crate::run_dir::start(&out)?),
        Some(_) => None,
    };
    let start = Instant::now();
    let rows: Vec<CaseRow> = sel.jobs().map(|&s| run_case(s, max_dim, &work)).collect();
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    a.timings.print(&format!("time: {minutes:.1} min"));
    if let Some(s) = sel.shard {
        let results = rows
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?;
        shard::write(&out, "soak", &sel, s, results)?;
        return failures(&rows);
    }
    write_csv(&out, &rows)?;
    crate::run_dir::finish(&dir.context("an unsharded soak's folder")?)?;
    failures(&rows)
}

fn write_csv(out: &Path, rows: &[CaseRow]) -> Result<()> {
    let mut text = format!("{HEADER}\n");
    for r in rows {
        text.push_str(&r.line);
        text.push('\n');
    }
    let path = out.join(CSV);
    write_atomically(&path, text.as_bytes())?;
    println!("wrote {} ({} cases)", path.display(), rows.len());
    Ok(())
}

/// An error if any case failed (after the files are written).
fn failures(rows: &[CaseRow]) -> Result<()> {
    let failed = rows.iter().filter(|r| r.failed).count();
    if failed > 0 {
        bail!(
            "{failed} of {} cases failed (rows with result `failed` in {CSV})",
            rows.len()
        );
    }
    Ok(())
}

/// `sysgrad merge` of a soak: `soak.csv` of every shard's rows, in seed
/// order, as the unsharded soak writes it.
pub fn merge(out: &Path, results: Vec<serde_json::Value>) -> Result<()> {
    let rows = results
        .into_iter()
        .enumerate()
        .map(|(job, r)| {
            serde_json::from_value(r).with_context(|| format!("job {job}: not a stored soak case"))
        })
        .collect::<Result<Vec<CaseRow>>>()?;
    let dir = crate::run_dir::start(out)?;
    write_csv(out, &rows)?;
    crate::run_dir::finish(&dir)?;
    failures(&rows)
}
