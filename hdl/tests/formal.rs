//! Bounded proofs on the generated `sa_accel` (`configs/formal/accel_1x1.toml`)
//! with `yosys-smtbmc` and z3: the properties of `sysgrad_hdl::formal`
//! (AXI4-Lite answers, AXI4-Stream stability, faulting commands without
//! effect) hold in every cycle up to [`DEPTH`] from reset, for any host
//! behaviour and any contents of the command memory and buffers; and the
//! check can fail: three faults put into the generated Verilog are each
//! caught by the property written for them. `sysgrad formal` runs the
//! same check deeper (README, Formal checks).

#[allow(dead_code)] // `run`, `write` serve the simulating tests
mod common;

use std::path::Path;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_synth::formal::{bmc, BmcReport};

/// Cycles from reset of the proof here (about a minute);
/// `sysgrad formal --depth` checks deeper (README, Formal checks).
const DEPTH: u32 = 10;

/// Cycles within which the counterexamples below are found (the solver
/// stops at the first): a FORWARD on one PE (fetch, execute, write-back)
/// and a command faulting after it, its write-back still landing.
const REACH: u32 = 16;

fn config() -> ArrayConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/formal/accel_1x1.toml");
    let c = sysgrad_config::load_config(&path).unwrap();
    assert_eq!(c, c.with_buffers(c.buffers()).unwrap());
    assert_eq!(
        (c.rows(), c.cols(), c.backward()),
        (1, 1, Backward::Interleaved)
    );
    c
}

/// Checks the design of `cfg` after `mutate` rewrote its `sa_accel.v`,
/// with the property file after `extra` rewrote it.
fn check_with(
    cfg: &ArrayConfig,
    depth: u32,
    mutate: impl Fn(&str) -> String,
    extra: impl Fn(&str) -> String,
) -> (BmcReport, String) {
    let (files, mut props) = sysgrad_hdl::formal::formal_design(cfg, mutate).unwrap();
    props.text = extra(&props.text);
    let sources: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f.name.as_str(), f.text.as_str()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let r = bmc(
        &sources,
        (&props.name, &props.text),
        sysgrad_hdl::accel_top_name(),
        depth,
        dir.path(),
    )
    .unwrap();
    (r, props.text)
}

fn check(cfg: &ArrayConfig, depth: u32, mutate: impl Fn(&str) -> String) -> (BmcReport, String) {
    check_with(cfg, depth, mutate, str::to_string)
}

/// `text` with `from` replaced by `to` exactly once.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "`{from}` once in the text");
    text.replace(from, to)
}

/// `from` -> `to` within the declaration of the wire `net` (whose width
/// the generator derives, so the test does not spell it out).
fn replace_in_wire(text: &str, net: &str, from: &str, to: &str) -> String {
    let line = sysgrad_hdl::wire_declaration(text, net).unwrap_or_else(|| panic!("no wire {net}"));
    assert!(line.contains(from), "`{from}` in `{line}`");
    replace_once(text, line, &line.replacen(from, to, 1))
}

/// The line of the property file that `report` says failed.
fn failed_lines(report: &BmcReport, props: &str) -> Vec<String> {
    let failure = report.failure.as_ref().expect("a counterexample");
    failure
        .assertions
        .iter()
        .map(|loc| {
            let line: usize = loc
                .split(':')
                .nth(1)
                .and_then(|s| s.split('.').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no line in `{loc}`"));
            props.lines().nth(line - 1).unwrap_or("").trim().to_string()
        })
        .collect()
}

#[test]
#[ignore = "needs yosys, z3"]
fn the_properties_hold_on_the_generated_accelerator() {
    let (r, _) = check(&config(), DEPTH, str::to_string);
    assert_eq!(r.failure, None, "a property fails");
}

/// The fault properties are not vacuous: within [`REACH`] cycles a command
/// faults while an earlier FORWARD's write-back is landing (a checker
/// asserting that this never happens fails).
#[test]
#[ignore = "needs yosys, z3"]
fn a_fault_during_a_write_back_is_reached() {
    let never = "always @* if (f_live) assert(!(dec_fault && wb_write));";
    let (r, props) = check_with(&config(), REACH, str::to_string, |p| {
        replace_once(p, "endmodule\n", &format!("  {never}\nendmodule\n"))
    });
    assert_eq!(failed_lines(&r, &props), [never]);
}

#[test]
#[ignore = "needs yosys, z3"]
fn a_response_dropped_before_it_is_taken_is_caught() {
    let (r, props) = check(&config(), 6, |v| {
        replace_once(
            v,
            "assign s_axil_bvalid = bvalid_q;",
            "assign s_axil_bvalid = bvalid_q & s_axil_bready;",
        )
    });
    let lines = failed_lines(&r, &props);
    // Caught by the write channel's accounting of requests and answers.
    let write_channel = |l: &String| l.contains("s_axil_bvalid") || l.contains("f_wr_open");
    assert!(lines.iter().any(write_channel), "{lines:?}");
}

#[test]
#[ignore = "needs yosys, z3"]
fn a_stream_beat_changed_under_back_pressure_is_caught() {
    // The beat's data changes when the sink becomes ready, i.e. the beat
    // offered while it was not differs from the one taken.
    let (r, props) = check(&config(), 12, |v| {
        replace_once(
            v,
            "assign m_axis_tdata = m_data;",
            "assign m_axis_tdata = m_data ^ {63'd0, m_axis_tready};",
        )
    });
    let lines = failed_lines(&r, &props);
    // Caught by the stream property (named by its line or its `if`'s).
    assert!(
        lines
            .iter()
            .any(|l| l.contains("m_axis_tdata") || l.contains("m_axis_tvalid")),
        "{lines:?}"
    );
}

#[test]
#[ignore = "needs yosys, z3"]
fn a_faulting_command_that_counts_is_caught() {
    // COMMANDS counts the faulting command too.
    let (r, props) = check(&config(), REACH, |v| {
        replace_in_wire(v, "inc_commands", "dec_go", "(dec_go || dec_fault)")
    });
    let lines = failed_lines(&r, &props);
    // Caught by the fault properties (Yosys names the assertion by the
    // line of its `always` block or its own).
    let fault = |l: &String| l.contains("f_quiet") || l.contains("dec_fault");
    assert!(lines.iter().any(fault), "{lines:?}");
}
