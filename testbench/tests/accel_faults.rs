//! The accelerator co-simulation catches what it is for: three faults
//! injected into the generated `sa_accel.v` (forwarding of a line written
//! in the cycle it is read, the tile's lane mask on the X stream, a
//! counter's increment), each on its own build of a small 3 x 2 array,
//! must each be reported, and the clean build must pass the same program.
//!
//! Four small Verilator builds (about 40 s each on 2 cores, cached).

mod common;

use sysgrad_accel::*;
use sysgrad_testbench::accel::{self, AccelError};

/// Builds `cfg`'s RTL with `from` replaced by `to` in `sa_accel.v` and
/// returns what the co-simulation of [`common::training_step`] says.
fn run_with(from: &str, to: &str) -> Result<accel::AccelReport, AccelError> {
    let c = common::small();
    let files = common::with_fault(&c, from, to);
    let model = accel::build_files(&c, &files).unwrap_or_else(|e| panic!("{e}"));
    let (setup, prog) = common::training_step(&c);
    model.cosim(&setup, &prog, 5, 30)
}

fn expect_caught(from: &str, to: &str, named: &str) {
    match run_with(from, to) {
        Ok(_) => panic!("the fault `{from}` -> `{to}` went unnoticed"),
        Err(AccelError::Mismatch { findings, .. }) => {
            let text = findings.join("\n");
            assert!(
                text.contains(named),
                "the fault `{from}` was caught but `{named}` is not named:\n{text}"
            );
            eprintln!("caught `{to}`: {}", findings[0]);
        }
        Err(e) => panic!("the co-simulation failed to run: {e}"),
    }
}

#[test]
fn the_clean_rtl_passes_the_fault_scenario() {
    let c = common::small();
    let model = accel::build(&c).unwrap_or_else(|e| panic!("{e}"));
    let (setup, prog) = common::training_step(&c);
    let rep = model
        .cosim(&setup, &prog, 5, 30)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rep.state, State::Halted);
}

#[test]
fn missing_write_forwarding_is_caught() {
    // The REQUANT reads the stale Y line: its result in the gradients differs.
    expect_caught(
        "a_fwd_q[l] ? a_fwd_data_q[l*AW +: AW] : a_rdata[l*AW +: AW]",
        "a_rdata[l*AW +: AW]",
        "Gradients",
    );
}

#[test]
fn a_missing_lane_mask_is_caught() {
    // Lanes past the tile's K stream the padding into the array.
    expect_caught("(x_on && k_mask[l])", "x_on", "x_in[");
}

#[test]
fn a_miscounted_counter_is_caught() {
    expect_caught(
        "(x_on && is_forward) ? {{9{1'b0}}, res_k}",
        "(x_on && is_forward) ? {{9{1'b0}}, res_m}",
        "fwd_x_reads",
    );
}
