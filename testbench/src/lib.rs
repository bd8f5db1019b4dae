//! Co-simulation: the generated RTL and the emulator run the same stimulus
//! and must agree on every output port in every cycle, and (with Verilator's
//! VCD) on every register.
//!
//! Flow: the emulator runs a workload while recording its port stimulus
//! ([`sysgrad_emulator::Recording`]); [`stimulus::render`] writes it as text;
//! a harness ([`verilator`] or [`icarus`]) replays it on the RTL and writes
//! a port trace; [`compare`] reports the first mismatching cycle and signal.
//! Before a register-level comparison, [`flops`] lists the RTL's registers
//! (Yosys) and [`registers::check_coverage`] requires exactly the
//! emulator's, so that no register of the RTL can go unchecked.

pub mod accel;
pub mod budget;
pub mod compare;
pub mod flops;
pub mod icarus;
pub mod registers;
pub mod scenario;
pub mod soak;
pub mod stimulus;
pub mod vcd;
pub mod verilator;

use std::path::Path;
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::Recording;

pub use compare::Mismatch;
pub use sysgrad_tools::ToolError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simulator {
    Verilator,
    Icarus,
}

#[derive(Debug, thiserror::Error)]
pub enum CosimError {
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error("unreadable simulator output: {0}")]
    Trace(String),
    #[error("unreadable simulator output")]
    Vcd(#[from] vcd::VcdError),
    #[error("unreadable simulator output: {0}")]
    Registers(registers::Missing),
    #[error("the register comparison does not match the RTL's registers")]
    Coverage(#[from] registers::CoverageError),
    #[error("RTL and emulator differ: {0}")]
    Mismatch(Mismatch),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What a successful co-simulation checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosimReport {
    pub cycles: usize,
    /// Register values compared (cycles x registers), 0 without VCD.
    pub register_samples: usize,
    /// Registers of the RTL shown to be exactly the compared ones, 0
    /// without VCD.
    pub rtl_registers: usize,
}

/// Replays `rec` on the RTL of `cfg` with `sim` in folder `work` and
/// compares every cycle. With `rec.snapshots` and Verilator, registers are
/// compared too.
pub fn run(
    cfg: &ArrayConfig,
    rec: &Recording,
    sim: Simulator,
    work: &Path,
) -> Result<CosimReport, CosimError> {
    run_files(cfg, &sysgrad_hdl::generate(cfg), rec, sim, work)
}

/// [`run`] on the given Verilog files instead of the generator's output
/// (used to check that injected faults are caught).
pub fn run_files(
    cfg: &ArrayConfig,
    files: &[sysgrad_hdl::VerilogFile],
    rec: &Recording,
    sim: Simulator,
    work: &Path,
) -> Result<CosimReport, CosimError> {
    let stim = stimulus::render(cfg, &rec.inputs);
    let want_vcd = rec.snapshots.is_some() && sim == Simulator::Verilator;
    // Before anything is built: the registers compared must be all the RTL has.
    let rtl_registers = if want_vcd {
        registers::check_coverage(&flops::flip_flops(files)?, cfg)?
    } else {
        0
    };
    let (text, vcd) = match sim {
        Simulator::Verilator => {
            let model = verilator::build_files(cfg, files, verilator::BuildOptions::default())?;
            model.run(&stim, work, want_vcd)?
        }
        Simulator::Icarus => (icarus::run_icarus_files(cfg, files, &stim, work)?, None),
    };
    let got = stimulus::parse_ports(cfg, &text).map_err(CosimError::Trace)?;
    let outputs = registers::sampled_outputs(cfg, &rec.outputs);
    // Registers first: a register mismatch names the PE where things went wrong.
    let mut register_samples = 0;
    if let (Some(snaps), Some(vcd)) = (&rec.snapshots, vcd) {
        let wave = vcd::Waveform::parse(&std::fs::read_to_string(&vcd)?)?;
        let reg_error = |e| match e {
            registers::RegError::Missing(m) => CosimError::Registers(m),
            registers::RegError::Mismatch(m) => CosimError::Mismatch(m),
        };
        register_samples = registers::compare(&wave, snaps).map_err(reg_error)?;
        registers::compare_ports(&wave, cfg, &outputs).map_err(reg_error)?;
        // Waveforms are large; keep them only when something failed.
        let _ = std::fs::remove_file(&vcd);
    }
    compare::ports(&outputs, &got).map_err(CosimError::Mismatch)?;
    Ok(CosimReport {
        cycles: rec.inputs.len(),
        register_samples,
        rtl_registers,
    })
}
