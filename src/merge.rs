//! `sysgrad merge`: joins the shard files of a sharded run (`--shard I/N`,
//! see `crate::shard`) into exactly the files the unsharded run writes,
//! with the same code that writes them there. A set of shards is merged
//! only if it is whole: one format, one command, one version, one N, one
//! job count and one job-list hash, every shard 0..N-1 exactly once, and
//! each shard holding exactly its own jobs; anything else is refused with
//! the files and the field that differ.

use crate::args::Out;
use crate::shard::{ShardFile, FORMAT};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
#[command(mut_arg("out", |a| a.help("Output folder for the merged files [default: the folder of the shards, if they are in one]")))]
pub struct MergeArgs {
    /// Shard files (<command>.shard-I-of-N.json), or folders: every shard
    /// file in them.
    #[arg(required = true, value_name = "SHARD")]
    shards: Vec<PathBuf>,
    #[command(flatten)]
    out: Out,
}

pub fn run(a: &MergeArgs) -> Result<()> {
    let paths = shard_paths(&a.shards)?;
    let files = paths
        .iter()
        .map(|p| read(p).map(|f| (p.clone(), f)))
        .collect::<Result<Vec<_>>>()?;
    let out = match &a.out.out {
        Some(dir) => dir.clone(),
        None => one_folder(&paths)?,
    };
    let (command, results) = check(files)?;
    match command.as_str() {
        "sweep" => crate::sweep::merge(&out, results),
        "pipeline" => crate::pipeline::merge(&out, results),
        "soak" => crate::soak::merge(&out, results),
        other => bail!("shards of `sysgrad {other}`, which merge does not know"),
    }
}

/// Whether `name` is a shard file's name, `<command>.shard-<I>-of-<N>.json`.
fn is_shard_name(name: &str) -> bool {
    let Some(rest) = name.strip_suffix(".json") else {
        return false;
    };
    let Some((_, tail)) = rest.split_once(".shard-") else {
        return false;
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    matches!(tail.split_once("-of-"), Some((i, n)) if digits(i) && digits(n))
}

/// The files given and the shard files in the folders given, sorted.
fn shard_paths(given: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in given {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let entries = std::fs::read_dir(p).with_context(|| format!("reading {}", p.display()))?;
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|f| {
                f.is_file()
                    && f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(is_shard_name)
            })
            .collect();
        if found.is_empty() {
            bail!(
                "{}: no shard files (<command>.shard-I-of-N.json) in this folder",
                p.display()
            );
        }
        found.sort();
        out.append(&mut found);
    }
    Ok(out)
}

fn read(path: &Path) -> Result<ShardFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: ShardFile = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a sysgrad shard file", path.display()))?;
    if file.format != FORMAT {
        bail!(
            "{}: shard format {:?}, this sysgrad reads {FORMAT:?}",
            path.display(),
            file.format
        );
    }
    Ok(file)
}

/// The one folder all `paths` are in (the default output folder).
fn one_folder(paths: &[PathBuf]) -> Result<PathBuf> {
    let parent = |p: &PathBuf| p.parent().map(Path::to_path_buf).unwrap_or_default();
    let first = parent(&paths[0]);
    if paths.iter().any(|p| parent(p) != first) {
        bail!("the shards are in several folders: give the output folder with -o DIR");
    }
    Ok(if first.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        first
    })
}

/// Checks that `files` are every shard of one run, each once and each with
/// its own jobs; the command and every job's result, in job order.
pub fn check(files: Vec<(PathBuf, ShardFile)>) -> Result<(String, Vec<serde_json::Value>)> {
    let Some((first_path, first)) = files.first() else {
        bail!("no shard files given");
    };
    let same = |what: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug, path: &Path| {
        anyhow::anyhow!(
            "{} and {} are not shards of one run: {what} {a:?} against {b:?}",
            first_path.display(),
            path.display()
        )
    };
    for (path, f) in &files[1..] {
        if f.command != first.command {
            return Err(same("command", &first.command, &f.command, path));
        }
        if f.version != first.version {
            return Err(same("sysgrad version", &first.version, &f.version, path));
        }
        if f.shards != first.shards {
            return Err(same("number of shards N", &first.shards, &f.shards, path));
        }
        if f.jobs != first.jobs || f.job_list_hash != first.job_list_hash {
            return Err(same(
                "job list (jobs, hash)",
                &(first.jobs, &first.job_list_hash),
                &(f.jobs, &f.job_list_hash),
                path,
            ));
        }
    }
    let n = first.shards;
    let mut by_index: Vec<Option<&PathBuf>> = vec![None; n];
    for (path, f) in &files {
        if f.shard >= n {
            bail!(
                "{}: shard {} of {n} is out of range",
                path.display(),
                f.shard
            );
        }
        if let Some(other) = by_index[f.shard].replace(path) {
            bail!(
                "shard {}/{n} is given twice: {} and {}",
                f.shard,
                other.display(),
                path.display()
            );
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| by_index[*i].is_none())
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "missing {} of {n} shards: {} (run them, or give their files)",
            missing.len(),
            missing.join(", ")
        );
    }
    let mut results: Vec<Option<serde_json::Value>> = vec![None; first.jobs];
    for (path, f) in files.iter() {
        let expected: Vec<usize> = (f.shard..first.jobs).step_by(n).collect();
        let held: Vec<usize> = f.results.iter().map(|r| r.job).collect();
        if held != expected {
            bail!(
                "{}: shard {}/{n} holds jobs {held:?}, not its own {expected:?} of {} (a damaged file?)",
                path.display(),
                f.shard,
                first.jobs
            );
        }
        for r in &f.results {
            results[r.job] = Some(r.result.clone());
        }
    }
    let command = first.command.clone();
    Ok((command, results.into_iter().flatten().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::JobResult;

    fn shard(i: usize, n: usize, jobs: usize) -> (PathBuf, ShardFile) {
        let file = ShardFile {
            format: FORMAT.into(),
            command: "sweep".into(),
            version: "1".into(),
            command_line: vec![],
            shard: i,
            shards: n,
            jobs,
            job_list_hash: "h".into(),
            results: (i..jobs)
                .step_by(n)
                .map(|job| JobResult {
                    job,
                    result: job.into(),
                })
                .collect(),
        };
        (PathBuf::from(format!("s{i}")), file)
    }

    fn error(files: Vec<(PathBuf, ShardFile)>) -> String {
        format!("{:#}", check(files).unwrap_err())
    }

    #[test]
    fn a_whole_set_merges_in_job_order() {
        for (n, jobs) in [(1, 5), (3, 7), (4, 2)] {
            let mut files: Vec<_> = (0..n).map(|i| shard(i, n, jobs)).collect();
            files.reverse();
            let (_, results) = check(files).unwrap();
            let want: Vec<serde_json::Value> = (0..jobs).map(|j| j.into()).collect();
            assert_eq!(results, want);
        }
    }

    #[test]
    fn a_broken_set_is_refused_by_name() {
        let e = error(vec![shard(0, 3, 7), shard(2, 3, 7)]);
        assert!(e.contains("missing 1 of 3 shards: 1/3"), "{e}");
        let e = error(vec![shard(0, 2, 7), shard(1, 2, 7), shard(1, 2, 7)]);
        assert!(e.contains("shard 1/2 is given twice"), "{e}");
        let mut other = shard(1, 2, 7);
        other.1.job_list_hash = "g".into();
        let e = error(vec![shard(0, 2, 7), other]);
        assert!(e.contains("not shards of one run: job list"), "{e}");
        let e = error(vec![shard(0, 2, 7), shard(1, 3, 7)]);
        assert!(e.contains("number of shards N"), "{e}");
        let mut pipeline = shard(1, 2, 7);
        pipeline.1.command = "pipeline".into();
        assert!(error(vec![shard(0, 2, 7), pipeline]).contains("command"));
        let mut damaged = shard(1, 2, 7);
        damaged.1.results.pop();
        let e = error(vec![shard(0, 2, 7), damaged]);
        assert!(e.contains("not its own [1, 3, 5]"), "{e}");
    }

    #[test]
    fn shard_names_are_recognised() {
        assert!(is_shard_name("sweep.shard-0-of-4.json"));
        assert!(is_shard_name("pipeline.shard-12-of-64.json"));
        for n in [
            "sweep.csv",
            "MANIFEST.json",
            "x.shard-a-of-2.json",
            "x.shard-1-of-.json",
        ] {
            assert!(!is_shard_name(n), "{n}");
        }
    }
}
