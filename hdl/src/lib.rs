//! Verilog generator for the sysgrad training array.
//!
//! Data flows config -> IR ([`ir`], expressions in [`expr`]) -> Verilog text
//! ([`emit`]). There is one module per kind (`sa_pe`, `sa_skew`, `sa_top`),
//! parameterized, with the mesh built by generate loops; besides the choice
//! of the `none` or the dense texts, only `sa_top`'s parameter defaults
//! depend on the configuration. The behaviour is
//! specified in `docs/ARCHITECTURE.md`, which the emulator implements too.
//! A configuration with `pipelining = "dense"` gets the dense array
//! (`dense_pe`, `dense_top`: other texts of `sa_pe` and `sa_top`, with the
//! wave ports; the control word's layout in `ctl`). [`pe_registers`],
//! [`pe_reg_name`], [`delay_reg_name`] (over [`delay_banks`] and
//! [`dense_delay_banks`]) and [`output_reg_name`] give the hierarchical
//! names of the registers for register-level co-simulation.

mod accel;
mod buffer;
pub mod c_driver;
mod ctl;
mod dense_pe;
mod dense_top;
pub mod emit;
pub mod expr;
pub mod formal;
pub mod ir;
mod names;
mod pe;
mod requant;
mod skew;
mod top;

pub use names::{
    control_reg_name, delay_banks, delay_reg_name, dense_delay_banks, output_reg_name, pe_reg_name,
    pe_registers, Bank, DelayBank, DenseBank, PROD_DW, PROD_SUM,
};

use std::io;
use std::path::{Path, PathBuf};
use sysgrad_config::ArrayConfig;

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerilogFile {
    pub name: String,
    pub text: String,
}

/// The line of generated Verilog `text` that declares and drives the wire
/// `net` (`wire [..] net = ...;`, as the emitter writes an initialised
/// wire), so that a test can change that one expression without spelling
/// out the widths the generator derives.
pub fn wire_declaration<'a>(text: &'a str, net: &str) -> Option<&'a str> {
    let decl = format!(" {net} = ");
    text.lines()
        .find(|l| l.trim_start().starts_with("wire ") && l.contains(&decl))
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

/// The IR of every module of `cfg`, leaves first. A dense configuration
/// has the dense array's `sa_pe` and `sa_top` (other module texts, with
/// the wave ports) and, until the dense controller exists, no accelerator
/// (`sa_accel` and the buffers and requantizer only it uses).
pub fn modules(cfg: &ArrayConfig) -> Vec<ir::Module> {
    let (pe, top) = if cfg.dense() {
        (dense_pe::module(), dense_top::module(cfg))
    } else {
        (pe::module(cfg.deferred_saturation()), top::module(cfg))
    };
    vec![
        pe,
        skew::module(),
        buffer::module(),
        top,
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

/// The C host driver of `cfg`'s accelerator (`sa_accel.h`, `sa_accel.c`;
/// [`c_driver`]), if the configuration has one.
pub fn host_driver(cfg: &ArrayConfig) -> Vec<VerilogFile> {
    let has_accel = modules(cfg).iter().any(|m| m.name == accel_top_name());
    if has_accel {
        c_driver::files(cfg)
    } else {
        Vec::new()
    }
}

/// Writes the files of `cfg` (the Verilog and the C host driver) into `dir`, each atomically (temporary file,
/// then rename), so an interrupted run never leaves a half-written file.
pub fn write_all(cfg: &ArrayConfig, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for f in generate(cfg).into_iter().chain(host_driver(cfg)) {
        let path = dir.join(&f.name);
        sysgrad_config::files::write_atomically(&path, &f.text)?;
        written.push(path);
    }
    let cfg_path = dir.join("config.toml");
    sysgrad_config::files::write_atomically(&cfg_path, cfg.to_toml())?;
    written.push(cfg_path);
    Ok(written)
}
