//! The argument groups several subcommands share, each flag defined once
//! here and flattened (`#[command(flatten)]`) into the subcommands that
//! take it. A subcommand adjusts a shared flag's help, default or count
//! with `#[command(mut_arg(...))]`, never by defining it again.

use anyhow::{bail, Context, Result};
use clap::{Arg, ArgAction, Args};
use std::path::{Path, PathBuf};
use sysgrad_config::budget::{Bytes, Estimate, Seconds};
use sysgrad_config::{load_config, ArrayConfig, Pipelining};

/// `-c/--config`: the array or accelerator configuration.
#[derive(Args, Clone, Debug, Default)]
pub struct Configs {
    /// Array or accelerator configuration (.toml or .json) [default: the
    /// built-in 16x16].
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Vec<PathBuf>,
}

/// For `mut_arg("config", ...)`: the subcommand takes one configuration.
pub fn one_config(a: Arg) -> Arg {
    a.action(ArgAction::Set)
}

/// Loads one configuration file, its path in the error.
pub fn load(path: &Path) -> Result<ArrayConfig> {
    load_config(path).map_err(anyhow::Error::new)
}

impl Configs {
    /// Every configuration given, loaded, in order.
    pub fn all(&self) -> Result<Vec<ArrayConfig>> {
        self.config.iter().map(|p| load(p)).collect()
    }

    /// The one configuration given, if any.
    pub fn one(&self) -> Result<Option<ArrayConfig>> {
        match self.config.as_slice() {
            [] => Ok(None),
            [path] => load(path).map(Some),
            _ => bail!("-c/--config: give one configuration"),
        }
    }

    /// The one configuration given, or the built-in 16x16 default.
    pub fn one_or_default(&self) -> Result<ArrayConfig> {
        Ok(self.one()?.unwrap_or_else(ArrayConfig::default_16x16))
    }

    /// Every configuration given, or the built-in 16x16 default.
    pub fn all_or_default(&self) -> Result<Vec<ArrayConfig>> {
        match self.config.is_empty() {
            true => Ok(vec![ArrayConfig::default_16x16()]),
            false => self.all(),
        }
    }
}

/// `-o/--out`: the output folder. A subcommand sets its help and default
/// with `mut_arg("out", ...)`; everything it writes goes under it.
#[derive(Args, Clone, Debug, Default)]
pub struct Out {
    /// Output folder.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl Out {
    /// The folder given, or `default`.
    pub fn or(&self, default: impl AsRef<Path>) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| default.as_ref().to_path_buf())
    }
}

/// `--timings`: run times on stdout.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct Timings {
    /// Print run times on stdout (they go to stderr otherwise, so that
    /// stdout is the same in every run and a README can quote it).
    #[arg(long)]
    pub timings: bool,
}

impl Timings {
    /// A run time: on stdout when asked for, on stderr otherwise (see
    /// `sysgrad figures`).
    pub fn print(&self, line: &str) {
        if self.timings {
            println!("{line}");
        } else {
            eprintln!("{line}");
        }
    }
}

/// `--pipelining`: run or build the configuration with these pipelinings
/// instead of its own.
#[derive(Args, Clone, Debug, Default)]
pub struct PipeliningChoice {
    /// Pipelinings to run, each in place of the configuration's own,
    /// comma-separated [default: the configuration's own].
    #[arg(long, value_delimiter = ',', value_name = "PIPELINING")]
    pub pipelining: Vec<Pipelining>,
}

impl LayerArgs {
    /// (M, K, N), each at least 1.
    pub fn dims(&self) -> Result<(usize, usize, usize)> {
        let (m, k, n) = (self.m, self.k, self.n);
        if m == 0 || k == 0 || n == 0 {
            bail!("layer sizes must be at least 1 (got M={m} K={k} N={n})");
        }
        Ok((m, k, n))
    }
}

impl PipeliningChoice {
    /// `cfg` with each pipelining asked for (a refusal names the flag and
    /// the field), or `cfg` itself.
    pub fn configs(&self, cfg: ArrayConfig) -> Result<Vec<ArrayConfig>> {
        if self.pipelining.is_empty() {
            return Ok(vec![cfg]);
        }
        self.pipelining
            .iter()
            .map(|&p| {
                cfg.with_pipelining(p)
                    .with_context(|| format!("--pipelining {}", p.name()))
            })
            .collect()
    }

    /// Like [`Self::configs`], but by default `cfg` and its twin with the
    /// other pipelining, when the configuration can have one (a dense
    /// array has no multiplier register): what `emulate` and `accel` compare.
    pub fn configs_or_twins(&self, cfg: ArrayConfig) -> Result<Vec<ArrayConfig>> {
        if !self.pipelining.is_empty() {
            return self.configs(cfg);
        }
        let other = match cfg.pipelining() {
            Pipelining::Dense => Pipelining::None,
            Pipelining::None => Pipelining::Dense,
        };
        Ok(std::iter::once(cfg)
            .chain(cfg.with_pipelining(other).ok())
            .collect())
    }
}

/// `--help` of `--pipelining` in `emulate` and `accel`.
pub fn pipelining_or_twins(a: Arg) -> Arg {
    a.help(
        "Pipelinings to run, each in place of the configuration's own, comma-separated \
         [default: the configuration's own, then the other where the configuration allows it]",
    )
}

/// `--m --k --n --lr-shift --seed`: one random FC layer.
#[derive(Args, Clone, Debug)]
pub struct LayerArgs {
    /// Layer output size M (rows of W).
    #[arg(long, default_value_t = 64)]
    pub m: usize,
    /// Layer input size K (columns of W).
    #[arg(long, default_value_t = 64)]
    pub k: usize,
    /// Batch size N (columns of X).
    #[arg(long, default_value_t = 64)]
    pub n: usize,
    /// SGD learning rate as 2^-lr_shift.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=63))]
    pub lr_shift: u32,
    /// Seed of the random operands.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `--gap`: how often the host stalls the streams.
#[derive(Args, Clone, Copy, Debug)]
pub struct HostStalls {
    /// With the RTL: percentage of cycles in which the host stalls the
    /// streams.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=95))]
    pub gap: u32,
}

/// `--epochs --max-train --max-test --quiet`: how much of a training run.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct TrainingLimits {
    /// Epochs [default: the model's].
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Train on the first N training samples only.
    #[arg(long, value_name = "N")]
    pub max_train: Option<usize>,
    /// Test on the first N test samples only.
    #[arg(long, value_name = "N")]
    pub max_test: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `--model`, or `--topology` with `--scalesim-config`: what to run.
#[derive(Args, Clone, Debug, Default)]
pub struct Workload {
    /// Model file (.toml or .json), e.g. workloads/models/mlp.toml.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "topology",
        conflicts_with = "topology"
    )]
    pub model: Vec<PathBuf>,
    /// SCALE-Sim topology CSV (convolution or `Layer, M, N, K,` form),
    /// e.g. workloads/topologies/vgg16.csv.
    #[arg(long, value_name = "CSV", requires = "scalesim_config")]
    pub topology: Vec<PathBuf>,
    /// SCALE-Sim .cfg giving the array size (with --topology).
    #[arg(long, value_name = "CFG")]
    pub scalesim_config: Vec<PathBuf>,
}

/// For `mut_arg`: the subcommand takes the flag once.
pub fn once(a: Arg) -> Arg {
    a.action(ArgAction::Set)
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// failed run never leaves a half-written report behind.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    sysgrad_config::files::write_atomically(path, bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// Creates folder `dir` (and its parents).
pub fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// `--max-memory --max-time`: the budget every run that allocates or
/// computes by input size is held to. A run's needs are estimated before
/// it allocates (by the crate that allocates: `sysgrad_emulator::budget`,
/// `sysgrad_workloads::budget`, ...); a run over budget is refused with the
/// estimate and these knobs. This is the one place the policy and its
/// message are defined.
#[derive(Args, Clone, Copy, Debug)]
pub struct Budget {
    /// Memory a run may need, estimated before it starts; a run estimated
    /// above it is refused. K, M, G, T are powers of 1000.
    #[arg(long, value_name = "SIZE", default_value = "8G", value_parser = bytes, env = "SYSGRAD_MAX_MEMORY", hide_env_values = true)]
    pub max_memory: f64,
    /// Time a run may need, estimated before it starts (s, min, h, d); a
    /// run estimated above it is refused.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = seconds, env = "SYSGRAD_MAX_TIME", hide_env_values = true)]
    pub max_time: f64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_memory: 8e9,
            max_time: 3600.0,
        }
    }
}

impl Budget {
    /// Refuses `e` if it is over the budget, saying what was estimated,
    /// by how much it is over and how to raise the budget.
    pub fn admit(&self, e: &Estimate) -> Result<()> {
        // NaN (an estimate that lost its meaning) is over any budget.
        let over = |need: f64, budget: f64| {
            !matches!(
                need.partial_cmp(&budget),
                Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
            )
        };
        if over(e.bytes, self.max_memory) {
            bail!(
                "{} would need about {} of memory, more than the budget of {}: \
                 make the run smaller, or raise the budget with --max-memory SIZE \
                 (or SYSGRAD_MAX_MEMORY) if the machine has the memory",
                e.what,
                Bytes(e.bytes),
                Bytes(self.max_memory)
            );
        }
        if over(e.seconds, self.max_time) {
            bail!(
                "{} would take about {} (estimated before starting), more than the budget of {}: \
                 make the run smaller, or raise the budget with --max-time DURATION \
                 (or SYSGRAD_MAX_TIME)",
                e.what,
                Seconds(e.seconds),
                Seconds(self.max_time)
            );
        }
        Ok(())
    }
}

/// `8G`, `512M`, `100000`: bytes (K, M, G, T, P are powers of 1000; a
/// trailing `B` is allowed).
fn bytes(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix(['B', 'b']).unwrap_or(t);
    let (digits, scale) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale = match c.to_ascii_uppercase() {
                'K' => 1e3,
                'M' => 1e6,
                'G' => 1e9,
                'T' => 1e12,
                'P' => 1e15,
                _ => return Err(format!("unknown unit {c} (K, M, G, T or P)")),
            };
            (&t[..i], scale)
        }
        _ => (t, 1.0),
    };
    positive(digits, scale, "a size such as 8G or 512M")
}

/// `1h`, `30min`, `90s`, `2d`, `600`: seconds.
fn seconds(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let scale = match unit {
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return Err(format!("unknown unit {unit} (s, min, h or d)")),
    };
    positive(digits, scale, "a duration such as 1h, 30min or 90s")
}

/// `digits` (a positive number) times `scale`.
fn positive(digits: &str, scale: f64, example: &str) -> std::result::Result<f64, String> {
    match digits.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!("expected {example}")),
    }
}

/// A file written as it is produced, still atomically: into a temporary
/// file beside `path` (same folder, so the rename is atomic), renamed onto
/// `path` by [`Staged::commit`]; dropped before that, the temporary file is
/// removed.
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    committed: bool,
}

impl Staged {
    /// The staging file of `path` and a buffered writer into it.
    pub fn create(path: &Path) -> Result<(Staged, std::io::BufWriter<std::fs::File>)> {
        let (tmp, file) = sysgrad_config::files::create_temp(path)
            .with_context(|| format!("creating a temporary file beside {}", path.display()))?;
        let staged = Staged {
            tmp,
            path: path.to_path_buf(),
            committed: false,
        };
        Ok((staged, std::io::BufWriter::new(file)))
    }

    /// `out` (the writer [`Staged::create`] gave) flushed and renamed onto
    /// the path.
    pub fn commit(mut self, out: std::io::BufWriter<std::fs::File>) -> Result<()> {
        let writing = || format!("writing {}", self.path.display());
        out.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .with_context(writing)?;
        sysgrad_config::files::commit_temp(&self.tmp, &self.path).with_context(writing)?;
        self.committed = true;
        Ok(())
    }

    /// The path it will be renamed onto.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            sysgrad_config::files::discard_temp(&self.tmp);
        }
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_written() {
        assert_eq!(bytes("8G"), Ok(8e9));
        assert_eq!(bytes("512MB"), Ok(512e6));
        assert_eq!(bytes("100000"), Ok(1e5));
        assert_eq!(bytes("1.5T"), Ok(1.5e12));
        assert!(bytes("8Q").unwrap_err().contains("unknown unit"));
        assert!(bytes("-1G").is_err() && bytes("0").is_err() && bytes("G").is_err());
        assert_eq!(seconds("1h"), Ok(3600.0));
        assert_eq!(seconds("30min"), Ok(1800.0));
        assert_eq!(seconds("90s"), Ok(90.0));
        assert_eq!(seconds("2d"), Ok(172800.0));
        assert!(seconds("1y").unwrap_err().contains("unknown unit"));
        assert!(seconds("inf").is_err() && seconds("NaN").is_err());
    }

    #[test]
    fn a_run_within_the_budget_is_admitted_and_one_over_it_is_told_how_to_raise_it() {
        let b = Budget::default();
        assert!(b.admit(&Estimate::new("x", 8e9, 3600.0)).is_ok());
        let e = b.admit(&Estimate::new("x", 8.1e9, 1.0)).unwrap_err();
        assert!(e.to_string().contains("8.1 GB") && e.to_string().contains("--max-memory"));
        let e = b.admit(&Estimate::new("x", 1.0, 3601.0)).unwrap_err();
        assert!(e.to_string().contains("--max-time"), "{e}");
        assert!(b.admit(&Estimate::new("x", f64::NAN, 1.0)).is_err());
    }
}
