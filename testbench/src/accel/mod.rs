//! Co-simulation of the whole accelerator (`sa_accel`, `docs/HOST.md`)
//! against the emulator's [`Accelerator`].
//!
//! A [`HostScript`] is what a host does over the accelerator's ports:
//! AXI4-Lite register writes and reads, DMA transfers over the two
//! AXI4-Streams and polling of `STATUS`. The Verilator harness
//! (`cpp/tb_sa_accel.cpp`) plays it with seeded random back-pressure and
//! writes the array's inputs in every cycle the controller runs, as
//! stimulus lines without the reset column
//! ([`stimulus::render_traced_line`]). [`cosim_program`] puts the same
//! data into the emulator's buffers and the RTL's, runs one program on both
//! and compares the array's inputs cycle by cycle, `STATUS` and `PC`, every
//! counter and the buffer lines asked for.
//!
//! Every offset, bit and code comes from [`sysgrad_isa::host`].

use crate::stimulus;
use crate::verilator::cache_root;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use sysgrad_accel::{Accelerator, Blocked, BufferId, State};
use sysgrad_config::files::unique_suffix;
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::Driver;
use sysgrad_hdl::VerilogFile;
use sysgrad_isa::host::{self, reg, status, Counter, DmaTarget, DMA_READ, DMA_WRITE};
use sysgrad_tools::{run, ToolError};

/// The C++ host of `sa_accel`.
pub const HARNESS: &str = include_str!("../../cpp/tb_sa_accel.cpp");
/// First line of a host script.
pub const MAGIC: &str = "sysgrad-host 1";

/// Beats per `i` line of a script (any number works; this keeps lines short).
const BEATS_PER_LINE: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum AccelError {
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the Verilog files have no `{top}.v` (files: {files})")]
    NoTop { top: &'static str, files: String },
    #[error("unreadable harness output: {0}")]
    Output(String),
    #[error("bad co-simulation setup: {0}")]
    Setup(String),
    #[error("RTL and emulator differ ({} findings; files kept in {}):\n  {}", .findings.len(), .work.display(), .findings.join("\n  "))]
    Mismatch {
        work: PathBuf,
        findings: Vec<String>,
    },
}

// ---------------------------------------------------------------- building

/// A built Verilator simulator of `sa_accel` for one configuration.
#[derive(Debug, Clone)]
pub struct AccelModel {
    pub exe: PathBuf,
    pub cfg: ArrayConfig,
}

/// Generates the RTL for `cfg` and builds (or reuses) its `sa_accel` simulator.
pub fn build(cfg: &ArrayConfig) -> Result<AccelModel, AccelError> {
    build_files(cfg, &sysgrad_hdl::generate(cfg))
}

/// The Verilator command line (without files), part of the cache key.
fn verilator_args(cfg: &ArrayConfig) -> Vec<String> {
    let busy = status::RUNNING | status::DMA_BUSY;
    [
        "--cc",
        "--exe",
        "--build",
        "-O3",
        "-j",
        "2",
        "-Wno-fatal",
        "--public-flat-rw",
        "--top-module",
        sysgrad_hdl::accel_top_name(),
        "-Mdir",
        "obj",
        "-o",
        "Vsa_accel",
        "-CFLAGS",
        "-O1",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        "-CFLAGS".to_string(),
        format!("-DSG_REG_STATUS={:#x}", reg::STATUS),
        "-CFLAGS".to_string(),
        format!("-DSG_STATUS_BUSY={busy:#x}"),
    ])
    // A dense array's wave nets are traced too.
    .chain(
        cfg.dense()
            .then(|| ["-CFLAGS".to_string(), "-DSG_DENSE=1".to_string()])
            .into_iter()
            .flatten(),
    )
    .collect()
}

/// An error unless `files` contain the accelerator's top module.
pub(super) fn require_top(files: &[VerilogFile]) -> Result<(), AccelError> {
    let top = sysgrad_hdl::accel_top_name();
    if files.iter().any(|f| f.name == format!("{top}.v")) {
        return Ok(());
    }
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    Err(AccelError::NoTop {
        top,
        files: names.join(", "),
    })
}

/// Builds (or reuses) a simulator of the given Verilog files (which must
/// contain `sa_accel.v`), cached like [`crate::verilator::build_files`]:
/// keyed by the harness, the Verilog, the flags and the Verilator version.
pub fn build_files(cfg: &ArrayConfig, files: &[VerilogFile]) -> Result<AccelModel, AccelError> {
    require_top(files)?;
    let exe = crate::verilator::cached_build(&crate::verilator::CachedBuild {
        label: format!("accel-{}", cfg.tag()),
        files,
        harness: ("tb_sa_accel.cpp", HARNESS),
        args: &verilator_args(cfg),
        exe: "Vsa_accel",
        c_files: &[],
    })?;
    Ok(AccelModel { exe, cfg: *cfg })
}

/// "N counters equal", saying what each was compared with (HOST.md):
/// the emulator's value, or the host's own tally of DMA beats.
pub fn counters_agreed(n: usize) -> String {
    use sysgrad_isa::host::CounterReference;
    let (emu, tally) = (
        CounterReference::Emulator.count(),
        CounterReference::HostTally.count(),
    );
    if n == emu + tally {
        format!(
            "{n} counters equal ({emu} to the emulator's, the {tally} DMA beat counts to the \
             host's own tally)"
        )
    } else {
        format!("{n} counters equal")
    }
}

mod c_host;
mod cosim;
mod icarus;
mod script;
mod transcript;

pub use c_host::*;
pub use cosim::*;
pub use icarus::*;
pub use script::*;
pub use transcript::*;
