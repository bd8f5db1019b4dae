//! Bounded model checking of Verilog with assertions: Yosys reads the
//! design and a property file (`read_verilog -formal`), writes SMT-LIB 2,
//! and `yosys-smtbmc` (Debian's `yosys` package) with z3 checks every
//! assertion in every cycle up to a depth, from the first cycle on.
//! (Debian's Boolector, 1.5, predates the SMT-LIB 2 commands smtbmc
//! sends.)

use std::path::Path;
use std::process::Command;
use std::time::Instant;
use sysgrad_tools::{require, run, ToolError};

use crate::Source;

/// The solver `yosys-smtbmc` drives (Debian's `z3`).
pub const SOLVER: &str = "z3";

/// What a bounded check found.
#[derive(Debug, Clone, PartialEq)]
pub struct BmcReport {
    /// Cycles checked (steps 0 ..= depth - 1).
    pub depth: u32,
    /// `None` if every assertion held in every step; else the first
    /// failing step and the assertions that failed there
    /// (`file:line.col-line.col`), and the counterexample's VCD file.
    pub failure: Option<BmcFailure>,
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BmcFailure {
    pub step: u32,
    pub assertions: Vec<String>,
    pub vcd: String,
}

/// Seconds yosys-smtbmc takes to depth 12 on the smallest accelerator
/// (`configs/formal/accel_1x1.toml`; the README's `sysgrad formal` figure).
pub const SECONDS_AT_DEPTH_12: f64 = 88.0;

/// The time a check to `depth` takes, at least: each step unrolls the
/// design once more and the solver works on everything unrolled so far,
/// so the time grows with the square of the depth (from the smallest
/// accelerator's; a larger one takes longer).
pub fn estimate(depth: u32) -> sysgrad_config::budget::Estimate {
    let d = f64::from(depth) / 12.0;
    sysgrad_config::budget::Estimate::new(
        format!("a bounded check to depth {depth}"),
        0.0,
        SECONDS_AT_DEPTH_12 * d * d,
    )
}

/// The deepest check [`estimate`] puts within `seconds`.
pub fn max_depth(seconds: f64) -> u32 {
    (12.0 * (seconds / SECONDS_AT_DEPTH_12).sqrt()).clamp(1.0, f64::from(u32::MAX)) as u32
}

/// Checks module `top` of `sources` with the assertions of `props` (also
/// Verilog; SystemVerilog if its name ends in `.sv`) for `depth` cycles,
/// in folder `work`.
pub fn bmc(
    sources: &[Source],
    props: Source,
    top: &str,
    depth: u32,
    work: &Path,
) -> Result<BmcReport, ToolError> {
    require("yosys")?;
    require("yosys-smtbmc")?;
    require(SOLVER)?;
    std::fs::create_dir_all(work)?;
    let t0 = Instant::now();
    let mut reads = String::new();
    for (name, text) in sources {
        std::fs::write(work.join(name), text)?;
        reads.push_str(&format!("read_verilog -formal {name}; "));
    }
    let (pname, ptext) = props;
    std::fs::write(work.join(pname), ptext)?;
    let sv = if pname.ends_with(".sv") { "-sv " } else { "" };
    let script = format!(
        "{reads}read_verilog -formal {sv}{pname}; prep -top {top}; \
         async2sync; dffunmap; write_smt2 -wires {top}.smt2"
    );
    run(
        Command::new("yosys").args(["-q", "-l", "yosys.log", "-p", &script]),
        work,
    )?;
    let out = Command::new("yosys-smtbmc")
        // --unroll: smtbmc expands the per-state functions itself; z3 4.8
        // given Yosys' define-fun chains as they are takes exponential time.
        .args(["-s", SOLVER, "--unroll", "-t", &depth.to_string()])
        .args(["--dump-vcd", "trace.vcd", &format!("{top}.smt2")])
        .current_dir(work)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    std::fs::write(work.join("smtbmc.log"), &text)?;
    let failure = parse_outcome(&text).map_err(|e| ToolError::Failed {
        command: format!("yosys-smtbmc in {}", work.display()),
        status: out.status.to_string(),
        stderr: format!("{e}\n{text}{}", String::from_utf8_lossy(&out.stderr)),
    })?;
    Ok(BmcReport {
        depth,
        failure: failure.map(|(step, assertions)| BmcFailure {
            step,
            assertions,
            vcd: work.join("trace.vcd").display().to_string(),
        }),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Why yosys-smtbmc's log says neither PASSED nor FAILED.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutcomeError {
    #[error("yosys-smtbmc printed no status")]
    NoStatus,
    #[error("yosys-smtbmc status `{0}`")]
    Unknown(String),
}

/// `Ok(None)` if smtbmc says PASSED; `Ok(Some((step, assertions)))` if it
/// found a failing step; `Err` if it says neither.
pub fn parse_outcome(log: &str) -> Result<Option<(u32, Vec<String>)>, OutcomeError> {
    let status = log
        .lines()
        .filter_map(|l| l.split("Status: ").nth(1))
        .next_back()
        .ok_or(OutcomeError::NoStatus)?;
    match status.trim() {
        "PASSED" => Ok(None),
        "FAILED" => {
            let mut step = 0;
            let mut assertions = Vec::new();
            for l in log.lines() {
                if let Some(rest) = l.split("Checking assertions in step ").nth(1) {
                    step = rest.trim_end_matches('.').trim().parse().unwrap_or(step);
                }
                if let Some(at) = l.split("Assert failed in ").nth(1) {
                    let loc = at.split_once(": ").map_or(at, |(_, loc)| loc);
                    assertions.push(loc.trim().to_string());
                }
            }
            Ok(Some((step, assertions)))
        }
        other => Err(OutcomeError::Unknown(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtbmc_outcomes_are_read() {
        let passed =
            "##   0:00:00  Checking assertions in step 9..\n##   0:00:01  Status: PASSED\n";
        assert_eq!(parse_outcome(passed), Ok(None));
        let failed = "##   0:00:00  Checking assertions in step 3..\n\
                      ##   0:00:00  BMC failed!\n\
                      ##   0:00:00  Assert failed in sa_accel.u_props: sa_accel_props.sv:80.5-80.40\n\
                      ##   0:00:00  Status: FAILED\n";
        assert_eq!(
            parse_outcome(failed),
            Ok(Some((3, vec!["sa_accel_props.sv:80.5-80.40".to_string()])))
        );
        assert!(parse_outcome("nothing").is_err());
    }
}
