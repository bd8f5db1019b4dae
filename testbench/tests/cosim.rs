//! RTL against emulator, cycle by cycle: every output port and (Verilator)
//! every register, on randomised training steps in all modes. A missing
//! simulator fails the test with the package to install; nothing is skipped.

use proptest::prelude::*;
use std::path::PathBuf;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_testbench::{scenario, Simulator};
use sysgrad_tools as tools;

fn work(name: &str) -> PathBuf {
    sysgrad_testbench::verilator::cache_root()
        .join("tests")
        .join(name)
}

fn check(cfg: &ArrayConfig, seed: u64, sim: Simulator) {
    let (rec, what) = scenario::training_step(cfg, seed, sim == Simulator::Verilator);
    let dir = work(&format!("{}-{seed}-{sim:?}", cfg.tag()));
    match sysgrad_testbench::run(cfg, &rec, sim, &dir) {
        Ok(rep) => {
            assert_eq!(rep.cycles, rec.inputs.len());
            if sim == Simulator::Verilator {
                assert!(rep.register_samples > 0, "no registers were compared");
            }
        }
        Err(e) => panic!("{} {what}: {e}", cfg.tag()),
    }
}

fn load(name: &str) -> ArrayConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../configs")
        .join(name);
    sysgrad_config::load_config(&path).unwrap()
}

#[test]
fn shipped_configs_match_every_cycle() {
    for name in ["small_4x4.toml", "seq_3x5.toml", "default.toml"] {
        let cfg = load(name);
        for seed in 1..=3 {
            check(&cfg, seed, Simulator::Verilator);
        }
    }
}

#[test]
fn icarus_agrees_too() {
    for name in ["small_4x4.toml", "seq_3x5.toml"] {
        let cfg = load(name);
        for seed in 1..=2 {
            check(&cfg, seed, Simulator::Icarus);
        }
    }
}

#[test]
fn a_missing_simulator_is_a_clear_error() {
    let e = tools::require("verilator-that-does-not-exist")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not found") && e.contains("install"), "{e}");
}

fn random_config() -> impl Strategy<Value = ArrayConfig> {
    (
        1usize..=6,
        1usize..=6,
        any::<bool>(),
        4u32..=16,
        0u32..=16,
        any::<u32>(),
    )
        .prop_map(|(r, c, il, dw, extra, f)| {
            let aw = (2 * dw + extra).clamp(16, 48).max(2 * dw);
            let b = if il {
                Backward::Interleaved
            } else {
                Backward::Sequential
            };
            ArrayConfig::new(
                r,
                c,
                b,
                NumberFormat {
                    in_bits: dw,
                    acc_bits: aw,
                    frac_bits: f % dw,
                },
            )
            .unwrap()
        })
}

proptest! {
    // Every case builds a Verilator model (~15 s), so few cases, each with two seeds.
    #![proptest_config(ProptestConfig { cases: 6, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_configs_match_every_cycle(cfg in random_config(), seed in any::<u64>()) {
        check(&cfg, seed, Simulator::Verilator);
        check(&cfg, seed.wrapping_add(1), Simulator::Verilator);
    }
}
