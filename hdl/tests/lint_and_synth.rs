//! The generated Verilog passes `verilator --lint-only -Wall`, compiles in
//! Icarus without warnings and synthesises in Yosys, for a spread of
//! configurations. A missing tool fails the test with the package to install.

use std::path::Path;
use std::process::Command;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};

fn require_tool(tool: &str, package: &str) {
    let ok = Command::new(tool).arg("-V").output().is_ok()
        || Command::new(tool).arg("--version").output().is_ok();
    assert!(
        ok,
        "`{tool}` is not installed: apt-get install {package} (or run scripts/setup.sh)"
    );
}

fn cfg(
    r: usize,
    c: usize,
    b: Backward,
    in_bits: u32,
    acc_bits: u32,
    frac_bits: u32,
) -> ArrayConfig {
    let cfg = ArrayConfig::new(
        r,
        c,
        b,
        NumberFormat {
            in_bits,
            acc_bits,
            frac_bits,
        },
    );
    cfg.validate().unwrap();
    cfg
}

fn configs() -> Vec<ArrayConfig> {
    use Backward::*;
    vec![
        cfg(1, 1, Interleaved, 8, 16, 4),
        cfg(1, 1, Sequential, 4, 16, 0),
        cfg(2, 3, Interleaved, 8, 24, 4),
        cfg(4, 4, Interleaved, 16, 48, 8),
        cfg(5, 2, Sequential, 6, 16, 2),
        cfg(16, 16, Interleaved, 16, 40, 8),
        cfg(32, 3, Sequential, 16, 32, 15),
    ]
}

fn write(cfg: &ArrayConfig, dir: &Path) -> Vec<String> {
    sysgrad_hdl::write_all(cfg, dir).unwrap();
    sysgrad_hdl::generate(cfg)
        .into_iter()
        .map(|f| f.name)
        .collect()
}

fn run(cmd: &mut Command, dir: &Path) -> String {
    let out = cmd.current_dir(dir).output().expect("tool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn verilator_lint_is_clean() {
    require_tool("verilator", "verilator");
    for cfg in configs() {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&cfg, dir.path());
        let out = run(
            Command::new("verilator")
                .args(["--lint-only", "-Wall", "--top-module", "sa_top"])
                .args(&files),
            dir.path(),
        );
        assert!(
            !out.contains("%Warning"),
            "{}: lint warnings:\n{out}",
            cfg.tag()
        );
    }
}

#[test]
fn icarus_compiles_without_warnings() {
    require_tool("iverilog", "iverilog");
    for cfg in configs() {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&cfg, dir.path());
        let out = run(
            Command::new("iverilog")
                .args(["-g2012", "-Wall", "-o", "a.vvp", "-s", "sa_top"])
                .args(&files),
            dir.path(),
        );
        assert!(
            out.trim().is_empty(),
            "{}: iverilog said:\n{out}",
            cfg.tag()
        );
    }
}

#[test]
fn yosys_synthesises_4x4_and_16x16() {
    require_tool("yosys", "yosys");
    for cfg in [
        cfg(4, 4, Backward::Interleaved, 8, 24, 4),
        ArrayConfig::default_16x16(),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&cfg, dir.path());
        let script = format!("read_verilog {}; synth -top sa_top; stat", files.join(" "));
        let out = run(
            Command::new("yosys").args(["-q", "-p", &script, "-l", "y.log"]),
            dir.path(),
        );
        let log = std::fs::read_to_string(dir.path().join("y.log")).unwrap();
        assert!(!out.contains("ERROR"), "{out}");
        // Every PE survives synthesis (nothing optimised away as constant).
        let pes = cfg.rows() * cfg.cols();
        let pe_line =
            |l: &&str| l.contains("sa_pe") && l.split_whitespace().last() == Some(&pes.to_string());
        assert!(
            log.lines().any(|l| pe_line(&l)),
            "{}: {pes} PEs not found in\n{log}",
            cfg.tag()
        );
    }
}

#[test]
fn generation_is_deterministic_and_parameterised() {
    let a = sysgrad_hdl::generate(&ArrayConfig::default_16x16());
    let b = sysgrad_hdl::generate(&ArrayConfig::default_16x16());
    assert_eq!(a, b);
    // Only sa_top's parameter defaults depend on the configuration.
    let small = sysgrad_hdl::generate(&configs()[2]);
    for (x, y) in a.iter().zip(&small) {
        assert_eq!(x.name, y.name);
        if x.name != "sa_top.v" {
            assert_eq!(x.text, y.text, "{} depends on the config", x.name);
        }
    }
}
