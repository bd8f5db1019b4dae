//! Randomised co-simulation soak: random configurations and seeds for a
//! bounded time, each case reproducible from its printed seed, and a failing
//! case shrunk to a smaller layer before it is reported.

use crate::scenario::{self, Spec};
use crate::Simulator;
use std::time::{Duration, Instant};
use sysgrad_config::float::Rounding;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, Pipelining, Units};
use sysgrad_rng::Rng;

/// A random valid configuration from `seed` (sizes up to `max_dim`,
/// either schedule, dense or `none` pipelining, with or without a
/// multiplier register on `none`, a quarter of them without the
/// accelerator's address generator).
pub fn random_config(seed: u64, max_dim: usize) -> ArrayConfig {
    let mut rng = Rng::new(seed ^ 0x5eed_c0f1_9000_0000);
    let r = rng.range(1, max_dim as i64) as usize;
    let c = rng.range(1, max_dim as i64) as usize;
    let in_bits = rng.range(4, 16) as u32;
    let acc_bits = rng.range((2 * in_bits).max(16) as i64, 48) as u32;
    let frac_bits = rng.range(0, in_bits as i64 - 1) as u32;
    let b = if rng.next_u64().is_multiple_of(2) {
        Backward::Interleaved
    } else {
        Backward::Sequential
    };
    // Drawn last, so that the other fields of a seed's config stay those
    // they were before dense arrays existed.
    let pipelining = if rng.next_u64().is_multiple_of(2) {
        Pipelining::Dense
    } else {
        Pipelining::None
    };
    ArrayConfig::new(
        r,
        c,
        b,
        NumberFormat {
            in_bits,
            acc_bits,
            frac_bits,
        },
    )
    .unwrap()
    .with_pipelining(pipelining)
    .unwrap()
    // A multiplier register and deferred saturation each on half the
    // `none` arrays, drawn after the rest.
    .with_multiplier_register(pipelining == Pipelining::None && rng.next_u64().is_multiple_of(2))
    .unwrap()
    .with_deferred_saturation(pipelining == Pipelining::None && rng.next_u64().is_multiple_of(2))
    .unwrap()
    // Only `sa_accel` sees the units (the slang check compiles it).
    .with_units(Units {
        window: !rng.next_u64().is_multiple_of(4),
    })
    // Stochastic rounding of the update on a quarter, drawn last.
    .with_update_rounding(stochastic_or_nearest(&mut rng))
    .unwrap()
}

/// Stochastic rounding with a random seed one time in four, else to
/// nearest.
fn stochastic_or_nearest(rng: &mut Rng) -> (Rounding, u32) {
    let seed = rng.next_u64() as u32;
    if rng.next_u64().is_multiple_of(4) {
        (Rounding::Stochastic, seed)
    } else {
        (Rounding::Nearest, seed)
    }
}

/// One failing case, shrunk.
#[derive(Debug)]
pub struct Failure {
    pub cfg: ArrayConfig,
    pub spec: Spec,
    pub error: String,
}

fn fails(cfg: &ArrayConfig, spec: &Spec, sim: Simulator, work: &std::path::Path) -> Option<String> {
    let (rec, _) = scenario::run_spec(cfg, spec, sim == Simulator::Verilator);
    crate::run(cfg, &rec, sim, work)
        .err()
        .map(|e| e.to_string())
}

/// Shrinks a failing spec: halves, then decrements, each layer dimension
/// while `fails` still reports an error; returns the smallest failing spec
/// and its error.
pub fn shrink(
    mut spec: Spec,
    mut error: String,
    mut fails: impl FnMut(&Spec) -> Option<String>,
) -> (Spec, String) {
    loop {
        let smaller = [
            Spec {
                m: spec.m / 2,
                ..spec
            },
            Spec {
                k: spec.k / 2,
                ..spec
            },
            Spec {
                n: spec.n / 2,
                ..spec
            },
            Spec {
                m: spec.m - 1,
                ..spec
            },
            Spec {
                k: spec.k - 1,
                ..spec
            },
            Spec {
                n: spec.n - 1,
                ..spec
            },
        ];
        let next = smaller
            .into_iter()
            .filter(|s| s.m >= 1 && s.k >= 1 && s.n >= 1 && *s != spec)
            .find_map(|s| fails(&s).map(|e| (s, e)));
        match next {
            Some((s, e)) => (spec, error) = (s, e),
            None => return (spec, error),
        }
    }
}

/// How one case of a soak ended.
#[derive(Debug)]
pub enum Outcome {
    /// RTL and emulator agreed on every port for this many cycles.
    Passed { cycles: usize },
    /// They disagreed; the case shrunk.
    Failed(Box<Failure>),
}

/// One case of a soak: seed `seed`'s random configuration (sizes up to
/// `max_dim`) and layer, co-simulated with Verilator in `work`; a failure
/// is shrunk. `log` receives a line when the case passes, and when it
/// fails (before shrinking, which can take long).
pub fn case(
    seed: u64,
    max_dim: usize,
    work: &std::path::Path,
    log: &mut impl FnMut(&str),
) -> (ArrayConfig, Spec, Outcome) {
    let cfg = random_config(seed, max_dim);
    let spec = Spec::from_seed(&cfg, seed);
    let (rec, _) = scenario::run_spec(&cfg, &spec, true);
    let outcome = match crate::run(&cfg, &rec, Simulator::Verilator, work) {
        Ok(report) => {
            log(&format!("seed {seed}: {} {spec} ok", cfg.tag()));
            Outcome::Passed {
                cycles: report.cycles,
            }
        }
        Err(e) => {
            let e = e.to_string();
            log(&format!(
                "seed {seed}: {} {spec} FAILED: {e}; shrinking",
                cfg.tag()
            ));
            let (small, error) = shrink(spec, e, |s| fails(&cfg, s, Simulator::Verilator, work));
            Outcome::Failed(Box::new(Failure {
                cfg,
                spec: small,
                error,
            }))
        }
    };
    (cfg, spec, outcome)
}

/// Runs random cases for `budget`; returns how many passed, or the first
/// failure (shrunk). `log` receives one line per case.
pub fn soak(
    first_seed: u64,
    budget: Duration,
    max_dim: usize,
    work: &std::path::Path,
    mut log: impl FnMut(&str),
) -> Result<usize, Box<Failure>> {
    let start = Instant::now();
    let mut seed = first_seed;
    let mut passed = 0;
    while start.elapsed() < budget {
        match case(seed, max_dim, work, &mut log).2 {
            Outcome::Passed { .. } => passed += 1,
            Outcome::Failed(f) => return Err(f),
        }
        seed += 1;
    }
    Ok(passed)
}
