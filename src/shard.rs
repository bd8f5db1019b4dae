//! `--shard I/N`: a deterministic share of a command's job list, for
//! running one study as N independent processes (a Slurm job array, GNU
//! parallel across hosts), and the one file each share writes.
//!
//! Each sharded command defines its job list once (`sysgrad sweep`: its
//! points, configuration-major; `sysgrad pipeline`: its runs, arrays x
//! schedule x backward; `sysgrad soak`: its seeds). Shard I of N runs
//! the jobs whose index j has j mod N = I (round robin): neighbouring jobs
//! in a list tend to cost alike (a sweep's largest arrays, a pipeline's
//! largest array counts come together), so dealing them out in turn gives
//! every shard a similar share of the expensive ones, where contiguous
//! ranges would give them all to the last shard.
//!
//! A shard writes one file, `<command>.shard-<I>-of-<N>.json`, into its
//! output folder (names never collide, so all shards may share a folder on
//! a shared file system): the command line, I, N, the number of jobs, a
//! hash of the whole job list (every job's inputs, so shards of different
//! studies cannot be merged), the version, and each of its jobs' results
//! with the job's index. It is written atomically (a temporary file
//! renamed), so a shard file that exists is complete. A shard writes no
//! manifest and removes nothing: shards share a folder. `sysgrad merge`
//! (`crate::merge`) checks a set of shard files and writes what the
//! unsharded run writes.

use crate::args::{create_dir, write_atomically};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The format of a shard file (its `format` field); `sysgrad merge`
/// refuses any other.
pub const FORMAT: &str = "sysgrad-shard-1";

/// Shard `index` of `count` (`--shard I/N`, 0 <= I < N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Whether job `job` of the list is this shard's (round robin).
    pub fn owns(&self, job: usize) -> bool {
        job % self.count == self.index
    }

    /// `I/N`, as given.
    pub fn name(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }

    /// The shard's file name for `command`, e.g. `sweep.shard-3-of-16.json`.
    pub fn file_name(&self, command: &str) -> String {
        format!("{command}.shard-{}-of-{}.json", self.index, self.count)
    }
}

/// `--shard`'s value: `I/N` with N >= 1 and 0 <= I < N.
pub fn parse(s: &str) -> std::result::Result<Shard, String> {
    let usage = "expected I/N, shard I (0 to N-1) of N, e.g. 0/4";
    let (i, n) = s.split_once('/').ok_or(usage)?;
    let number = |t: &str| t.trim().parse::<usize>().map_err(|_| usage.to_string());
    let (index, count) = (number(i)?, number(n)?);
    if count == 0 {
        return Err("N = 0 shards: give at least 1".into());
    }
    if index >= count {
        return Err(format!(
            "shard {index} of {count} is out of range (allowed: 0 to {})",
            count - 1
        ));
    }
    Ok(Shard { index, count })
}

/// `--shard I/N`, flattened into the commands that can be sharded.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct ShardChoice {
    /// Run only shard I of N of the job list (the jobs whose index is I
    /// modulo N) and write its results into one file,
    /// <command>.shard-I-of-N.json, in the output folder; `sysgrad merge`
    /// joins the N files into what the unsharded run writes. See
    /// docs/CLUSTER.md.
    #[arg(long, value_name = "I/N", value_parser = parse)]
    pub shard: Option<Shard>,
}

/// A hash of a job list: FNV-1a (64 bits) over the number of jobs and
/// every job's description, each ended by a zero byte. Stable across
/// machines and runs (no random seed), so shards computed on different
/// hosts agree; a check that shards belong together, not a defence
/// against forgery.
pub fn job_list_hash<'a>(descriptions: impl IntoIterator<Item = &'a str>, jobs: usize) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h = OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
    };
    eat(&(jobs as u64).to_le_bytes());
    for d in descriptions {
        eat(d.as_bytes());
        eat(&[0]);
    }
    format!("{h:016x}")
}

/// A job list and the share of it this process runs.
pub struct Selected<T> {
    /// This process's jobs with their indices in the whole list (all of
    /// them when unsharded).
    pub jobs: Vec<(usize, T)>,
    /// The length of the whole list.
    pub total: usize,
    /// [`job_list_hash`] of the whole list.
    pub hash: String,
    pub shard: Option<Shard>,
}

/// The jobs of `all` that `shard` owns; `describe` gives a job's every
/// input as text (for the hash).
pub fn select<T>(
    shard: Option<Shard>,
    all: Vec<T>,
    describe: impl Fn(&T) -> String,
) -> Selected<T> {
    let descriptions: Vec<String> = all.iter().map(describe).collect();
    let hash = job_list_hash(descriptions.iter().map(String::as_str), all.len());
    let total = all.len();
    let jobs = all
        .into_iter()
        .enumerate()
        .filter(|(j, _)| shard.is_none_or(|s| s.owns(*j)))
        .collect();
    Selected {
        jobs,
        total,
        hash,
        shard,
    }
}

impl<T> Selected<T> {
    /// The jobs alone, in order.
    pub fn jobs(&self) -> impl Iterator<Item = &T> {
        self.jobs.iter().map(|(_, t)| t)
    }
}

/// One job's result in a shard file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    /// The job's index in the whole list.
    pub job: usize,
    pub result: serde_json::Value,
}

/// What a shard file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFile {
    /// [`FORMAT`].
    pub format: String,
    /// The subcommand (`sweep`, `pipeline`, `soak`).
    pub command: String,
    /// The version of sysgrad that wrote it.
    pub version: String,
    /// The command line, the program named `sysgrad`.
    pub command_line: Vec<String>,
    /// I.
    pub shard: usize,
    /// N.
    pub shards: usize,
    /// Jobs in the whole list.
    pub jobs: usize,
    pub job_list_hash: String,
    /// This shard's jobs, in list order.
    pub results: Vec<JobResult>,
}

/// Writes the shard file of `sel` (sharded) into `out`, `results` being
/// its jobs' results in order; its path.
pub fn write<T>(
    out: &Path,
    command: &str,
    sel: &Selected<T>,
    shard: Shard,
    results: Vec<serde_json::Value>,
) -> Result<PathBuf> {
    assert_eq!(results.len(), sel.jobs.len(), "one result per job");
    let file = ShardFile {
        format: FORMAT.into(),
        command: command.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command_line: crate::run_dir::command_line(),
        shard: shard.index,
        shards: shard.count,
        jobs: sel.total,
        job_list_hash: sel.hash.clone(),
        results: sel
            .jobs
            .iter()
            .zip(results)
            .map(|((job, _), result)| JobResult { job: *job, result })
            .collect(),
    };
    create_dir(out)?;
    let path = out.join(shard.file_name(command));
    let text = serde_json::to_string(&file).context("serialising a shard file")? + "\n";
    write_atomically(&path, text.as_bytes())?;
    println!(
        "shard {}: {} of {} jobs, wrote {}",
        shard.name(),
        sel.jobs.len(),
        sel.total,
        path.display()
    );
    Ok(path)
}

/// Files as a job's result: what a run writes, each file's name (relative
/// to the output folder) and text, and what the command prints of the run
/// (`report`, the command's own record). `sysgrad pipeline` stores its
/// runs so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilesResult {
    pub files: Vec<(String, String)>,
    #[serde(default)]
    pub report: serde_json::Value,
}

/// Writes results that are files ([`FilesResult`], `sysgrad pipeline`'s
/// runs) into `out`, every file of every job as the unsharded run writes
/// it; the number of files and each job's `report`, in job order. The
/// caller finishes the folder ([`crate::run_dir::finish`] of the
/// returned run).
pub fn write_files(
    out: &Path,
    results: Vec<serde_json::Value>,
) -> Result<(
    sysgrad_config::outdir::OutputDir,
    usize,
    Vec<serde_json::Value>,
)> {
    let dir = crate::run_dir::start(out)?;
    let mut written = 0;
    let mut reports = Vec::new();
    for (job, r) in results.into_iter().enumerate() {
        let r: FilesResult = serde_json::from_value(r)
            .with_context(|| format!("job {job}: not a stored list of files"))?;
        for (name, text) in r.files {
            let plain = Path::new(&name)
                .components()
                .all(|c| matches!(c, Component::Normal(_)));
            if !plain || name.is_empty() {
                bail!("job {job}: file name {name:?} is not a plain name in the output folder");
            }
            write_atomically(&out.join(&name), text.as_bytes())?;
            written += 1;
        }
        reports.push(r.report);
    }
    Ok((dir, written, reports))
}

/// Writes the shard file of runs whose results are files: `write_run` writes
/// one run's files into a folder, as the unsharded run writes them into
/// its output folder, and returns their paths; each run's files are stored
/// with their names and text, beside `report(i)`, what the command prints
/// of run i ([`FilesResult`]).
pub fn write_runs<T, M>(
    out: &Path,
    command: &str,
    sel: &Selected<T>,
    shard: Shard,
    runs: &[M],
    write_run: impl Fn(&Path, &M) -> Result<Vec<PathBuf>>,
    report: impl Fn(usize) -> Result<serde_json::Value>,
) -> Result<PathBuf> {
    // A hidden scratch folder of this process, beside the shard file.
    let scratch = out.join(format!(
        ".{}.{}.files",
        shard.file_name(command),
        std::process::id()
    ));
    let stored = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let _ = std::fs::remove_dir_all(&scratch);
            let mut files = Vec::new();
            for path in write_run(&scratch, run)? {
                let name = path
                    .strip_prefix(&scratch)
                    .with_context(|| format!("{} is outside the run's folder", path.display()))?
                    .to_string_lossy()
                    .into_owned();
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                files.push((name, text));
            }
            Ok(serde_json::to_value(FilesResult {
                files,
                report: report(i)?,
            })?)
        })
        .collect::<Result<Vec<_>>>();
    let _ = std::fs::remove_dir_all(&scratch);
    write(out, command, sel, shard, stored?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_read_and_checked() {
        assert_eq!(parse("0/1"), Ok(Shard { index: 0, count: 1 }));
        assert_eq!(
            parse("3/16"),
            Ok(Shard {
                index: 3,
                count: 16
            })
        );
        assert!(parse("4/4").unwrap_err().contains("0 to 3"));
        assert!(parse("0/0").unwrap_err().contains("at least 1"));
        for bad in ["", "1", "a/2", "1/b", "-1/2", "1/2/3"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// Every job belongs to exactly one shard, whatever N, including N
    /// above the number of jobs (some shards then have none).
    #[test]
    fn the_shards_partition_the_job_list() {
        for jobs in 0..12usize {
            for count in 1..15 {
                let mut seen = vec![0; jobs];
                for index in 0..count {
                    let sel = select(Some(Shard { index, count }), (0..jobs).collect(), |j| {
                        j.to_string()
                    });
                    for (j, t) in &sel.jobs {
                        assert_eq!(j, t);
                        seen[*j] += 1;
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{jobs} jobs, {count} shards");
            }
        }
    }

    /// The hash is fixed (so hosts agree) and tells lists apart, also
    /// lists whose descriptions concatenate alike.
    #[test]
    fn the_hash_tells_job_lists_apart() {
        assert_eq!(job_list_hash([], 0), job_list_hash([], 0));
        assert_ne!(job_list_hash(["ab", "c"], 2), job_list_hash(["a", "bc"], 2));
        assert_ne!(job_list_hash(["a"], 1), job_list_hash(["a", ""], 2));
        assert_ne!(job_list_hash(["a", "b"], 2), job_list_hash(["b", "a"], 2));
    }
}
