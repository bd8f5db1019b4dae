//! The generated Verilog is standard: slang (pyslang, the strictest open
//! IEEE 1800 front end) compiles the array and the whole accelerator with
//! no error and no warning, for every shipped configuration and for
//! random ones. Verilator, Icarus and Yosys accept more than the standard
//! does (a net used before its declaration, for one); vendor simulators
//! and synthesis tools do not. pyslang lives in the virtualenv
//! `scripts/setup-fpga.sh` makes; without it the test fails saying so.

use std::path::{Path, PathBuf};
use std::process::Command;
use sysgrad_config::{load_config, ArrayConfig};
use sysgrad_testbench::soak::random_config;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The virtualenv's Python, which must have pyslang.
fn python() -> PathBuf {
    let venv = std::env::var_os("SYSGRAD_FPGA_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(sysgrad_synth::pnr::DEFAULT_VENV));
    let py = venv.join("bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import pyslang"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import pyslang: run {} (or set SYSGRAD_FPGA_VENV)",
        py.display(),
        sysgrad_synth::pnr::FPGA_SETUP_SCRIPT
    );
    py
}

/// Every `.toml` under configs/, the formal and FPGA ones included.
fn shipped_configs(dir: &Path, out: &mut Vec<(String, ArrayConfig)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            shipped_configs(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            let cfg = load_config(&path).unwrap_or_else(|e| panic!("{e}"));
            out.push((path.display().to_string(), cfg));
        }
    }
}

/// slang's verdict on the Verilog of `cfg`: None if clean, else its report.
fn slang(py: &Path, cfg: &ArrayConfig) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    sysgrad_hdl::write_all(cfg, dir.path()).unwrap();
    let files: Vec<String> = sysgrad_hdl::generate(cfg)
        .into_iter()
        .map(|f| f.name)
        .collect();
    let out = Command::new(py)
        .arg(root().join("scripts/slang_check.py"))
        .args(&files)
        .current_dir(dir.path())
        .output()
        .expect("python runs");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (!out.status.success()).then_some(text)
}

#[test]
#[ignore = "needs pyslang (scripts/setup-fpga.sh)"]
fn every_generated_module_compiles_cleanly_in_slang() {
    let py = python();
    let mut configs = Vec::new();
    shipped_configs(&root().join("configs"), &mut configs);
    assert!(
        configs.len() > 10,
        "configs/ holds the shipped configurations"
    );
    // Random ones: sizes up to 9, either schedule and pipelining, any
    // format, with and without a multiplier register or the address
    // generator.
    for seed in 0..12 {
        configs.push((format!("random_config({seed}, 9)"), random_config(seed, 9)));
    }
    let failures: Vec<String> = configs
        .iter()
        .filter_map(|(what, cfg)| slang(&py, cfg).map(|r| format!("{what} ({}):\n{r}", cfg.tag())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
