//! A bounded randomised co-simulation soak (seed printed, reproducible),
//! and faults injected into the RTL on purpose: each must be caught and
//! named by cycle and signal, and the shrinker must find a smaller case.

use std::time::Duration;
use sysgrad_config::ArrayConfig;
use sysgrad_hdl::VerilogFile;
use sysgrad_testbench::scenario::{self, Spec};
use sysgrad_testbench::{soak, verilator, CosimError, Simulator};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn randomised_soak() {
    // SYSGRAD_SOAK_SECONDS bounds the run; SYSGRAD_SOAK_SEED replays one.
    let seconds = env_u64("SYSGRAD_SOAK_SECONDS", 90);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let seed = env_u64("SYSGRAD_SOAK_SEED", now);
    println!("soak: first seed {seed} (replay with SYSGRAD_SOAK_SEED={seed}), {seconds} s");
    let work = verilator::cache_root().join("soak");
    match soak::soak(seed, Duration::from_secs(seconds), 6, &work, |l| {
        println!("{l}")
    }) {
        Ok(n) => assert!(n > 0, "the soak ran no case"),
        Err(f) => panic!(
            "soak failure, shrunk to {} {}: {}",
            f.cfg.tag(),
            f.spec,
            f.error
        ),
    }
}

/// The generated files with `from` replaced by `to` in `sa_pe.v`.
fn with_fault(cfg: &ArrayConfig, from: &str, to: &str) -> Vec<VerilogFile> {
    let mut files = sysgrad_hdl::generate(cfg);
    let pe = files.iter_mut().find(|f| f.name == "sa_pe.v").unwrap();
    assert!(pe.text.contains(from), "fault site `{from}` not in sa_pe.v");
    pe.text = pe.text.replacen(from, to, 1);
    files
}

fn cosim(
    cfg: &ArrayConfig,
    files: &[VerilogFile],
    spec: &Spec,
    name: &str,
) -> Result<(), CosimError> {
    let (rec, _) = scenario::run_spec(cfg, spec, true);
    let work = verilator::cache_root().join("faults").join(name);
    sysgrad_testbench::run_files(cfg, files, &rec, Simulator::Verilator, &work).map(|_| ())
}

#[test]
fn injected_faults_are_caught_and_located() {
    // Accumulators of exactly 2*DW bits, so that two products can saturate.
    let fmt = sysgrad_config::NumberFormat {
        in_bits: 8,
        acc_bits: 16,
        frac_bits: 4,
    };
    let cfg = ArrayConfig::new(4, 4, sysgrad_config::Backward::Interleaved, fmt).unwrap();
    let spec = Spec {
        m: 6,
        k: 7,
        n: 5,
        lr_shift: 2,
        seed: 11,
    };
    // (what, text in sa_pe.v, replacement, register expected to differ)
    let faults = [
        ("update disabled", "w <= w_next;", "w <= w;", ".w"),
        (
            "dW accumulation without saturation",
            "dw <= sat_add(dw, p_dw);",
            "dw <= dw + p_dw;",
            ".dw",
        ),
        (
            "dX partial sum ignores its west input",
            "psh <= sat_add(psh_in, p_dx);",
            "psh <= sat_add({AW{1'b0}}, p_dx);",
            ".psh",
        ),
    ];
    for (what, from, to, reg) in faults {
        let files = with_fault(&cfg, from, to);
        match cosim(&cfg, &files, &spec, what) {
            Err(CosimError::Mismatch(m)) => {
                assert!(
                    m.signal.contains("u_pe") && m.signal.ends_with(reg),
                    "{what}: first mismatch {m}"
                );
                println!("{what}: caught at {m}");
            }
            other => panic!("{what}: not caught ({other:?})"),
        }
    }
}

#[test]
fn a_failing_case_is_shrunk() {
    let cfg: ArrayConfig = sysgrad_config::load_config(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/small_4x4.toml"),
    )
    .unwrap();
    let files = with_fault(&cfg, "w <= w_next;", "w <= w;");
    let spec = Spec {
        m: 8,
        k: 8,
        n: 6,
        lr_shift: 1,
        seed: 3,
    };
    let err = cosim(&cfg, &files, &spec, "shrink-start")
        .unwrap_err()
        .to_string();
    let (best, _) = soak::shrink(spec, err.clone(), |s| {
        cosim(&cfg, &files, s, "shrink")
            .err()
            .map(|e| e.to_string())
    });
    assert!(
        best.m * best.k * best.n < spec.m * spec.k * spec.n,
        "nothing shrank from {spec} ({err})"
    );
    println!("shrunk {spec} to {best}");
}
