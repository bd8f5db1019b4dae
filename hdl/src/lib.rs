//! Verilog generator for the sysgrad training array.
//!
//! Data flows config -> IR ([`ir`], expressions in [`expr`]) -> Verilog text
//! ([`emit`]). There is one module per kind (`sa_pe`, `sa_skew`,
//! `sa_buffer`, `sa_top`, `sa_requant`, `sa_accel`), parameterized, with
//! the mesh built by generate loops; only the tops' parameter defaults
//! depend on the configuration. The behaviour is specified in
//! `docs/ARCHITECTURE.md`, which the emulator implements too.
//!
//! Each net is declared once and used by handle ([`expr::Net`]); the
//! printer checks every name against its module and declares a net ahead
//! of its first use where the logic that drives it comes later.
//!
//! Variants are types chosen once (`design.rs`): the array of each
//! pipelining (`none`, dense: its own `sa_pe` and `sa_top`, with the wave
//! ports) behind one trait, its controller behind another, the number
//! format's arithmetic behind a third; every configuration gets the
//! accelerator `sa_accel` and its C host driver ([`c_driver`]).
//! [`pe_registers`], [`pe_reg_name`], [`delay_reg_name`] (over
//! [`delay_banks`] and [`dense_delay_banks`]) and [`output_reg_name`] give
//! the hierarchical names of the registers for register-level
//! co-simulation, read from the modules the generator builds.

mod accel;
mod arith;
mod array;
mod buffer;
pub mod c_driver;
mod design;
pub mod emit;
pub mod expr;
mod files;
pub mod formal;
pub mod ir;
mod names;
mod params;
pub mod pnr;
mod skew;

pub use arith::SR_STATE;
pub use files::VerilogFile;
pub use names::{
    control_reg_name, delay_banks, delay_reg_name, dense_delay_banks, output_reg_name, pe_reg_name,
    pe_registers, Bank, DelayBank, DenseBank, PROD_DW, PROD_SUM,
};

use std::io;
use std::path::{Path, PathBuf};
use sysgrad_config::ArrayConfig;

/// The line of generated Verilog `text` that drives the wire `net` with
/// its declaration (`wire [..] net = ...;`, as the emitter writes an
/// initialised wire) or, where the printer declared it ahead of its use,
/// with an assign (`assign net = ...;`), so that a test can change that
/// one expression without spelling out the widths the generator derives.
pub fn wire_declaration<'a>(text: &'a str, net: &str) -> Option<&'a str> {
    let decl = format!(" {net} = ");
    let assign = format!("assign {net} = ");
    text.lines().find(|l| {
        let l = l.trim_start();
        (l.starts_with("wire ") && l.contains(&decl)) || l.starts_with(&assign)
    })
}

/// The name of the array's top module.
pub fn top_name() -> &'static str {
    array::core::TOP_MODULE
}

/// The name of the accelerator's top module (array, buffers, controller,
/// host interface; `docs/HOST.md`).
pub fn accel_top_name() -> &'static str {
    accel::ACCEL_MODULE
}

/// The IR of every module of `cfg`, leaves first: the PE and `sa_top` of
/// its pipelining (a dense array's with the wave ports), the skew bank,
/// the buffer bank, the requantizer and `sa_accel`, in every number
/// format.
pub fn modules(cfg: &ArrayConfig) -> Vec<ir::Module> {
    design::design(cfg).modules()
}

/// `sa_fp_units`: every floating-point unit of every format side by side
/// (combinational), for the units' tests against the soft-float
/// reference (`sysgrad_config::float`).
pub fn float_units_module() -> ir::Module {
    arith::float_units::test_module(sysgrad_config::LR_SHIFT_BITS)
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
/// [`c_driver`]): every configuration has one.
pub fn host_driver(cfg: &ArrayConfig) -> Vec<VerilogFile> {
    c_driver::files(cfg)
}

/// Writes the files of `cfg` (the Verilog and the C host driver) into `dir`, each atomically (temporary file,
/// then rename), so an interrupted run never leaves a half-written file.
/// Every target is checked first (a folder where a file goes is refused
/// before any file is written), and every error names its path.
pub fn write_all(cfg: &ArrayConfig, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let named = |what: &str, path: &Path, e: io::Error| {
        io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| named("creating", dir, e))?;
    let mut files: Vec<(PathBuf, String)> = generate(cfg)
        .into_iter()
        .chain(host_driver(cfg))
        .map(|f| (dir.join(&f.name), f.text))
        .collect();
    files.push((dir.join("config.toml"), cfg.to_toml()));
    for (path, _) in &files {
        if path.exists() && !path.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} is not a file (nothing written)", path.display()),
            ));
        }
    }
    let mut written = Vec::new();
    for (path, text) in files {
        sysgrad_config::files::write_atomically(&path, &text)
            .map_err(|e| named("writing", &path, e))?;
        written.push(path);
    }
    Ok(written)
}
