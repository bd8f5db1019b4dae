//! What a co-simulation needs, estimated before it builds or runs
//! ([`sysgrad_config::budget`]): the Verilator build, whose time and memory
//! grow with the PEs, and the simulation, whose register comparison holds
//! every PE's registers every cycle.
//!
//! The rates were measured on this project's 2-core machine while other
//! jobs shared it (load average about 7), so an idle machine runs within
//! them: `sysgrad cosim -c configs/mid_8x8.toml` built in 64 s (280 MB),
//! `-c configs/default.toml` (16x16) in 280 s (440 MB),
//! `-c configs/large/large_32x32.toml` in 1,958 s (930 MB); two cached
//! runs of the 16x16 scenario took 1.5 s and of the 32x32 one 9.4 s (165
//! MB; nine registers a PE are sampled every cycle: 4,184,064 samples in
//! a run of 454 cycles).

use crate::Simulator;
use sysgrad_config::budget::{f, Estimate};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::budget::step_cycles;

/// Seconds of a Verilator build: a fixed part and a part per PE.
const BUILD_SECONDS_BASE: f64 = 30.0;
const BUILD_SECONDS_PER_PE: f64 = 2.0;
/// Peak memory of a Verilator build (the C++ compiler's), likewise.
const BUILD_BYTES_BASE: f64 = 2e8;
const BUILD_BYTES_PER_PE: f64 = 1e6;
/// PE-cycles a second of the Verilator model dumping every register to a
/// VCD (the array co-simulation), and of the model without a dump (the
/// accelerator's replay, which compares ports, not registers).
const TRACED_PE_CYCLES_PER_SECOND: f64 = 2e5;
const PE_CYCLES_PER_SECOND: f64 = 5e6;
/// PE-cycles a second of Icarus (compile and file I/O included): 172
/// cycles/s on the 16x16 array (`sim-speed`, docs/results/speed.md),
/// halved for a shared machine.
const ICARUS_PE_CYCLES_PER_SECOND: f64 = 2e4;
/// Memory per PE and cycle of the register comparison: nine registers a
/// PE, held by the emulator's snapshots and read from the VCD (the 32x32
/// runs above peaked at about 350 bytes per PE-cycle).
const SNAPSHOT_BYTES_PER_PE_CYCLE: f64 = 400.0;

fn pes(cfg: &ArrayConfig) -> f64 {
    f(cfg.rows()) * f(cfg.cols())
}

/// Building the Verilator model of `cfg` (skipped when it is cached, which
/// an estimate made before starting cannot know: this is the most it takes).
pub fn build(cfg: &ArrayConfig) -> Estimate {
    Estimate::new(
        format!("the Verilator build of the {}", cfg.tag()),
        BUILD_BYTES_BASE + BUILD_BYTES_PER_PE * pes(cfg),
        BUILD_SECONDS_BASE + BUILD_SECONDS_PER_PE * pes(cfg),
    )
}

/// Building `cfg`'s `sa_accel` and replaying `cycles` run cycles on it.
pub fn verilator(cfg: &ArrayConfig, cycles: f64) -> Estimate {
    let run = Estimate::new("", 0.0, cycles * pes(cfg) / PE_CYCLES_PER_SECOND);
    build(cfg).then(&run)
}

/// Cycles of one `sysgrad cosim` scenario at most: a forward and two
/// backward passes of a layer up to 2C x 2R x 5 (`scenario::Spec`).
fn scenario_cycles(cfg: &ArrayConfig) -> f64 {
    2.0 * step_cycles(cfg, (2 * cfg.cols(), 2 * cfg.rows(), 5))
}

/// `runs` co-simulations of `cfg` on `sim` with every register compared
/// (Verilator: after its build; Icarus compiles in each run).
pub fn cosim(cfg: &ArrayConfig, runs: u64, sim: Simulator) -> Estimate {
    let pe_cycles = scenario_cycles(cfg) * pes(cfg);
    let (rate, setup) = match sim {
        Simulator::Verilator => (TRACED_PE_CYCLES_PER_SECOND, build(cfg)),
        Simulator::Icarus => (ICARUS_PE_CYCLES_PER_SECOND, Estimate::none("")),
    };
    let one = Estimate::new(
        "",
        pe_cycles * SNAPSHOT_BYTES_PER_PE_CYCLE,
        runs as f64 * pe_cycles / rate,
    );
    setup.then(&one).named(format!(
        "{runs} co-simulation run(s) of the {} on {sim:?}",
        cfg.tag()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_array_is_refused_by_the_default_budget() {
        let big = ArrayConfig::default_16x16().with_size(256, 256).unwrap();
        let e = cosim(&big, 1, Simulator::Verilator);
        assert!(e.bytes > 8e9 && e.seconds > 3600.0, "{e:?}");
    }

    #[test]
    fn the_shipped_configurations_fit_it() {
        let e = cosim(&ArrayConfig::default_16x16(), 100, Simulator::Verilator);
        assert!(e.bytes < 8e9 && e.seconds < 3600.0, "{e:?}");
    }

    #[test]
    fn runs_cost_time_not_memory() {
        let cfg = ArrayConfig::default_16x16();
        let (one, many) = (
            cosim(&cfg, 1, Simulator::Icarus),
            cosim(&cfg, 1_000_000, Simulator::Icarus),
        );
        assert_eq!(one.bytes, many.bytes);
        assert!(many.seconds > 1000.0 * one.seconds);
    }
}
