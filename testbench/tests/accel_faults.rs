//! The accelerator co-simulation catches what it is for: three faults
//! injected into the generated `sa_accel.v` (forwarding of a line written
//! in the cycle it is read, the tile's lane mask on the X stream, a
//! counter's increment), each on its own build of a small 3 x 2 array,
//! must each be reported, and the clean build must pass the same program.
//!
//! The dense controller (`common::dense`) gets its own three: a lane mask
//! in the issue register, an engine that thinks the array is empty one
//! cycle early, and a miscounted slot.
//!
//! The activation unit (ACT), under `common::act_program`: a relu that
//! passes negative words, a relu_grad that ignores its gate, ACT's lane
//! mask one lane too wide and the mask read from the next line, on
//! `none`; the last two on the dense controller too (the unit itself is
//! the same module text on both).
//!
//! The address generator (WINDOW, `common::conv_program`: a convolution
//! through windowed passes beside the same through im2col patches) on
//! both controllers: a padding position that streams the line read last
//! instead of zeros, the output column wrapping one position late, and
//! dX written at padding positions.
//!
//! The faults run on Icarus, which needs no build (each Verilator build
//! took about 40 s on 2 cores: 21 of them were the longest part of the
//! suite), except the two whose faulty RTL reads lines never written:
//! Icarus holds them as X, which its harness refuses instead of
//! comparing, so they run on Verilator. The clean RTL passes every
//! scenario on both.

mod common;

use sysgrad_accel::*;
use sysgrad_testbench::accel::{self, AccelError, Simulator};

/// The program a fault is run with: [`common::training_step`], or
/// [`common::act_program`] for the activation unit's faults.
type Scenario = fn(&sysgrad_config::ArrayConfig) -> (accel::Setup, Vec<u64>);

/// The simulators a fault runs on (the module's comment says which);
/// Verilator with back-pressure from a fixed seed.
const ICARUS: Simulator = Simulator::Icarus;
const VERILATOR: Simulator = Simulator::Verilator {
    seed: 5,
    gap_percent: 30,
};

/// What the co-simulation of `scenario` on `sim` says of `files`.
fn run_scenario(
    c: &sysgrad_config::ArrayConfig,
    files: Vec<sysgrad_hdl::VerilogFile>,
    scenario: Scenario,
    sim: Simulator,
) -> Result<accel::AccelReport, AccelError> {
    let (setup, prog) = scenario(c);
    accel::cosim_files_on(sim, c, &files, &setup, &[&prog])
}

/// The clean RTL of `c` runs `scenario` to HALT on both simulators.
fn clean_passes(c: &sysgrad_config::ArrayConfig, scenario: Scenario) {
    for sim in [ICARUS, VERILATOR] {
        let rep = run_scenario(c, sysgrad_hdl::generate(c), scenario, sim)
            .unwrap_or_else(|e| panic!("{}: {e}", c.tag()));
        assert_eq!(rep.state, State::Halted, "{}", c.tag());
    }
}

fn expect_caught(from: &str, to: &str, named: &str) {
    expect_caught_on(&common::small(), from, to, named)
}

fn expect_caught_on(c: &sysgrad_config::ArrayConfig, from: &str, to: &str, named: &str) {
    expect_files_caught(
        c,
        common::with_fault(c, from, to),
        &format!("{from}` -> `{to}"),
        named,
    )
}

/// The fault in `net`'s declaration (`from` -> `to`) is reported, naming `named`.
fn expect_caught_in(c: &sysgrad_config::ArrayConfig, net: &str, from: &str, to: &str, named: &str) {
    let files = common::with_fault_in(c, net, from, to);
    expect_files_caught(c, files, &format!("{net}: {from}` -> `{to}"), named)
}

/// `what` (the fault) in `files` is reported, naming `named`.
fn expect_files_caught(
    c: &sysgrad_config::ArrayConfig,
    files: Vec<sysgrad_hdl::VerilogFile>,
    what: &str,
    named: &str,
) {
    expect_scenario_caught(c, files, common::training_step, what, named, ICARUS)
}

/// A fault of the activation unit (`from` -> `to`) is reported by the
/// ACT program, naming `named`.
fn expect_act_fault_caught(c: &sysgrad_config::ArrayConfig, from: &str, to: &str, named: &str) {
    let files = common::with_fault(c, from, to);
    let what = format!("{from}` -> `{to}");
    expect_scenario_caught(c, files, common::act_program, &what, named, ICARUS)
}

fn expect_scenario_caught(
    c: &sysgrad_config::ArrayConfig,
    files: Vec<sysgrad_hdl::VerilogFile>,
    scenario: Scenario,
    what: &str,
    named: &str,
    sim: Simulator,
) {
    match run_scenario(c, files, scenario, sim) {
        Ok(_) => panic!("the fault `{what}` went unnoticed"),
        Err(AccelError::Mismatch { findings, .. }) => {
            let text = findings.join("\n");
            assert!(
                text.contains(named),
                "the fault `{what}` was caught but `{named}` is not named:\n{text}"
            );
            eprintln!("caught `{what}`: {}", findings[0]);
        }
        Err(e) => panic!("the co-simulation failed to run: {e}"),
    }
}

#[test]
#[ignore = "needs iverilog, verilator"]
fn the_clean_rtl_passes_the_fault_scenario() {
    clean_passes(&common::small(), common::training_step);
    clean_passes(&common::small(), common::act_program);
}

#[test]
#[ignore = "needs iverilog"]
fn missing_write_forwarding_is_caught() {
    // The REQUANT reads the stale Y line: its result in the gradients differs.
    expect_caught(
        "a_fwd_q[l] ? a_fwd_data_q[l*AW +: AW] : a_rdata[l*AW +: AW]",
        "a_rdata[l*AW +: AW]",
        "Gradients",
    );
}

#[test]
#[ignore = "needs iverilog"]
fn a_missing_lane_mask_is_caught() {
    // Lanes past the tile's K stream the padding into the array.
    expect_caught("(x_feed && k_mask[l])", "x_feed", "x_in[");
}

#[test]
#[ignore = "needs iverilog"]
fn a_miscounted_counter_is_caught() {
    expect_caught_in(
        &common::small(),
        "inc_fwd_x_reads",
        "res_k",
        "res_m",
        "fwd_x_reads",
    );
}

#[test]
#[ignore = "needs iverilog, verilator"]
fn the_clean_dense_rtl_passes_the_fault_scenario() {
    let c = common::dense(common::small());
    clean_passes(&c, common::training_step);
    clean_passes(&c, common::act_program);
}

#[test]
#[ignore = "needs iverilog"]
fn a_missing_lane_mask_in_the_issue_register_is_caught() {
    let c = common::dense(common::small());
    expect_caught_on(&c, "(iq_x_on && arr_x_in_mask[l])", "iq_x_on", "x_in[");
}

#[test]
#[ignore = "needs iverilog"]
fn a_dense_engine_that_does_not_wait_for_the_array_to_empty_is_caught() {
    // The stop (and any UPDATE or DRAIN) comes a cycle early: the run is a
    // cycle short, before the last results are written.
    let c = common::dense(common::small());
    let wait = format!(
        "wave_wait <= stream_cycle ? RESULT_LATENCY : ((wave_wait == {0}'d0) ? {0}'d0 : wave_wait - {0}'d1);",
        wait_bits()
    );
    let early = format!(
        "wave_wait <= stream_cycle ? RESULT_LATENCY - {0}'d1 : ((wave_wait == {0}'d0) ? {0}'d0 : wave_wait - {0}'d1);",
        wait_bits()
    );
    expect_caught_on(&c, &wait, &early, "run length");
}

#[test]
#[ignore = "needs iverilog"]
fn a_miscounted_slot_is_caught() {
    let c = common::dense(common::small());
    expect_caught_in(
        &c,
        "inc_load_slots",
        "slot_now",
        "slot_now && !do_wave",
        "load_slots",
    );
}

/// The width of the controller's wait counters in the generated text.
fn wait_bits() -> u32 {
    let text = sysgrad_hdl::generate(&common::dense(common::small()))
        .into_iter()
        .find(|f| f.name == "sa_accel.v")
        .expect("sa_accel.v")
        .text;
    let decl = text
        .lines()
        .find(|l| l.contains("reg [") && l.contains(" wave_wait;"))
        .expect("the wave_wait register");
    let msb: u32 = decl
        .split('[')
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|m| m.trim().parse().ok())
        .expect("a numeric width");
    msb + 1
}

#[test]
#[ignore = "needs iverilog"]
fn a_relu_that_passes_negative_words_is_caught() {
    expect_act_fault_caught(
        &common::small(),
        "? ~rq_out[l*DW+(DW-1)] :",
        "? 1'b1 :",
        "Activations",
    );
}

#[test]
#[ignore = "needs iverilog"]
fn a_relu_grad_that_ignores_its_gate_is_caught() {
    expect_act_fault_caught(
        &common::small(),
        "? act_mask_pos[l] :",
        "? 1'b1 :",
        "Gradients",
    );
}

#[test]
#[ignore = "needs iverilog"]
fn act_lanes_one_too_many_are_caught() {
    // relu into the activations on fewer lanes than R writes one more.
    expect_act_fault_caught(
        &common::small(),
        "~({R{1'b1}} << f_lanes)",
        "~({R{1'b1}} << (f_lanes + 1'b1))",
        "Activations",
    );
    expect_act_fault_caught(
        &common::dense(common::small()),
        "~({R{1'b1}} << rq_lanes)",
        "~({R{1'b1}} << (rq_lanes + 1'b1))",
        "Activations",
    );
}

#[test]
#[ignore = "needs iverilog"]
fn a_mask_read_from_the_wrong_line_is_caught() {
    expect_act_fault_caught(
        &common::small(),
        "(is_act ? f_mask[X_AB-1:0] :",
        "(is_act ? f_mask[X_AB-1:0] + 1'b1 :",
        "Gradients",
    );
    // The dense decoder queues the mask line with the entry.
    expect_act_fault_caught(
        &common::dense(common::small()),
        "{K_REQUANT, w0, f_mask,",
        "{K_REQUANT, w0, f_mask + 1'b1,",
        "Gradients",
    );
}

/// A fault of the address generator (`from` -> `to` in `net`'s
/// declaration) is reported by the convolution program, naming `named`.
fn expect_window_fault_caught(
    c: &sysgrad_config::ArrayConfig,
    net: &str,
    (from, to): (&str, &str),
    named: &str,
    sim: Simulator,
) {
    let files = common::with_fault_in(c, net, from, to);
    let what = format!("{net}: {from}` -> `{to}");
    expect_scenario_caught(c, files, common::conv_program, &what, named, sim)
}

#[test]
#[ignore = "needs iverilog, verilator"]
fn the_clean_rtl_passes_the_window_scenario() {
    for c in [common::conv_small(), common::dense(common::conv_small())] {
        clean_passes(&c, common::conv_program);
    }
}

#[test]
#[ignore = "needs verilator"]
fn a_padding_position_that_streams_the_last_line_read_is_caught() {
    let c = common::conv_small();
    let sim = VERILATOR;
    expect_window_fault_caught(&c, "x_feed", ("x_on && ~x_pad_q", "x_on"), "x_in[", sim);
    let c = common::dense(c);
    let read = ("wave_x && (~c_windowed || gd_inside)", "wave_x");
    expect_window_fault_caught(&c, "x_read", read, "x_in[", sim);
}

#[test]
#[ignore = "needs iverilog"]
fn an_output_column_that_wraps_one_late_is_caught() {
    let c = common::conv_small();
    let sim = ICARUS;
    expect_window_fault_caught(
        &c,
        "gx_last_x",
        ("(win_ow - 10'd1)", "win_ow"),
        "x_in[",
        sim,
    );
    let c = common::dense(c);
    expect_window_fault_caught(&c, "gd_last_x", ("(cw_ow - 10'd1)", "cw_ow"), "x_in[", sim);
}

#[test]
#[ignore = "needs verilator"]
fn dx_written_at_padding_positions_is_caught() {
    let c = common::conv_small();
    let put = ("wb_write && (~wb_win || wb_in)", "wb_write");
    let sim = VERILATOR;
    expect_window_fault_caught(&c, "wb_put", put, "Accumulators", sim);
    let c = common::dense(c);
    let store = ("wb_write && wb_put", "wb_write");
    expect_window_fault_caught(&c, "wb_store", store, "Accumulators", sim);
}
