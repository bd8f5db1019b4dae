//! Verilog generator for the sysgrad training array.
//!
//! Data flows config -> IR ([`ir`], expressions in [`expr`]) -> Verilog text
//! ([`emit`]). There is one module per kind (`sa_pe`, `sa_skew`, `sa_top`),
//! parameterized, with the mesh built by generate loops; only `sa_top`'s
//! parameter defaults depend on the configuration. The behaviour is
//! specified in `docs/ARCHITECTURE.md`, which the emulator implements too;
//! [`delay_reg_name`] and [`output_reg_name`] give the hierarchical names
//! of the registers outside the PEs for register-level co-simulation.

mod accel;
mod buffer;
pub mod emit;
pub mod expr;
pub mod ir;
mod names;
mod pe;
mod requant;
mod skew;
mod top;

pub use names::{delay_banks, delay_reg_name, output_reg_name, DelayBank};

use std::io;
use std::path::{Path, PathBuf};
use sysgrad_config::ArrayConfig;

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerilogFile {
    pub name: String,
    pub text: String,
}

/// The name of the array's top module.
pub fn top_name() -> &'static str {
    "sa_top"
}

/// The name of the accelerator's top module (array, buffers, controller,
/// host interface; `docs/HOST.md`).
pub fn accel_top_name() -> &'static str {
    "sa_accel"
}

/// The IR of every module of `cfg`, leaves first.
pub fn modules(cfg: &ArrayConfig) -> Vec<ir::Module> {
    vec![
        pe::module(),
        skew::module(),
        buffer::module(),
        top::module(cfg),
        requant::module(),
        accel::module(cfg),
    ]
}

/// The Verilog files of `cfg` (deterministic: same config, same bytes).
pub fn generate(cfg: &ArrayConfig) -> Vec<VerilogFile> {
    modules(cfg)
        .iter()
        .map(|m| VerilogFile {
            name: format!("{}.v", m.name),
            text: emit::module(m),
        })
        .collect()
}

/// Writes the files of `cfg` into `dir`, each atomically (temporary file,
/// then rename), so an interrupted run never leaves a half-written file.
pub fn write_all(cfg: &ArrayConfig, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for f in generate(cfg) {
        let path = dir.join(&f.name);
        sysgrad_config::files::write_atomically(&path, &f.text)?;
        written.push(path);
    }
    let cfg_path = dir.join("config.toml");
    sysgrad_config::files::write_atomically(&cfg_path, cfg.to_toml())?;
    written.push(cfg_path);
    Ok(written)
}
