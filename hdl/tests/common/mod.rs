//! Helpers shared by the tool-running tests.

use std::path::Path;
use std::process::Command;
use sysgrad_config::float::{FloatFormat, FloatKind, Rounding};
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, Numbers};

/// Fails (never skips) when `tool` is missing, naming the Debian package.
pub fn require_tool(tool: &str) {
    if let Err(e) = sysgrad_tools::require(tool) {
        panic!("{e}");
    }
}

pub fn cfg(r: usize, c: usize, b: Backward, in_bits: u32, acc_bits: u32, frac: u32) -> ArrayConfig {
    let format = NumberFormat {
        in_bits,
        acc_bits,
        frac_bits: frac,
    };
    ArrayConfig::new(r, c, b, format).unwrap()
}

/// `cfg` in floating point: weights `w`, activations `x`, gradients `g`,
/// the update rounded by `rounding` (seed 7).
#[allow(dead_code)] // the lint test's
pub fn float(cfg: ArrayConfig, [w, x, g]: [FloatKind; 3], rounding: Rounding) -> ArrayConfig {
    cfg.with_numbers(Numbers::Float(FloatFormat {
        weights: w,
        activations: x,
        gradients: g,
        rounding,
        seed: 7,
    }))
    .unwrap()
}

/// Writes the Verilog of `cfg` into `dir` and returns the file names.
pub fn write(cfg: &ArrayConfig, dir: &Path) -> Vec<String> {
    sysgrad_hdl::write_all(cfg, dir).unwrap();
    sysgrad_hdl::generate(cfg)
        .into_iter()
        .map(|f| f.name)
        .collect()
}

/// Runs `cmd` in `dir`, asserts success, returns stdout and stderr together.
pub fn run(cmd: &mut Command, dir: &Path) -> String {
    let out = cmd.current_dir(dir).output().expect("tool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}
