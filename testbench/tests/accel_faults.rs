//! The accelerator co-simulation catches what it is for: three faults
//! injected into the generated `sa_accel.v` (forwarding of a line written
//! in the cycle it is read, the tile's lane mask on the X stream, a
//! counter's increment), each on its own build of a small 3 x 2 array,
//! must each be reported, and the clean build must pass the same program.
//!
//! Four small Verilator builds (about 40 s each on 2 cores, cached).

mod common;

use sysgrad_config::{fixed, ArrayConfig, Backward};
use sysgrad_emulator::accel::*;
use sysgrad_emulator::gemm::DwSink;
use sysgrad_testbench::accel::{self, AccelError, Setup};

/// A training step of a 5 x 7 layer (N = 4), then REQUANT of the last Y
/// line in the cycle after the FORWARD that writes it.
fn scenario(c: &ArrayConfig) -> (Setup, Vec<u64>) {
    let layer = FcLayer::new(c, 5, 7, 4);
    // Small values (|v| <= 8), so that the requantized sums do not all
    // saturate and a stale line reads differently from the new one.
    let mut v = 7i64;
    let mut data = |rows, cols| {
        ndarray::Array2::from_shape_fn((rows, cols), |_| {
            v = (v * 37 + 11) % 251;
            fixed::sat(v % 17 - 8, c.format.in_bits)
        })
    };
    let mut setup = Setup::default();
    setup
        .fill_blocked_padded(BufferId::Weights, &layer.w, data(5, 7).view(), 5)
        .fill_blocked_padded(BufferId::Activations, &layer.x, data(7, 4).view(), -9)
        .fill_blocked_padded(BufferId::Gradients, &layer.dy, data(5, 4).view(), 3)
        .compare_blocked(BufferId::Weights, &layer.w)
        .compare_blocked(BufferId::Accumulators, &layer.y)
        .compare_blocked(BufferId::Accumulators, &layer.dx)
        .compare(BufferId::Gradients, layer.dy.end(), 1);
    let mut prog = compile_forward(c, &layer).unwrap();
    prog.push(Command::Requant {
        src: layer.y.end() as u16 - 1,
        dst: DataBuffer::Gradients,
        dst_addr: layer.dy.end() as u16,
        count: 1,
    });
    prog.extend(
        compile_layer(
            c,
            &layer,
            Backward::Interleaved,
            DwSink::Update { lr_shift: 2 },
        )
        .unwrap(),
    );
    (setup, encode_program(&prog))
}

/// Builds `cfg`'s RTL with `from` replaced by `to` in `sa_accel.v` and
/// returns what the co-simulation of [`scenario`] says.
fn run_with(from: &str, to: &str) -> Result<accel::AccelReport, AccelError> {
    let c = common::small();
    let mut files = sysgrad_hdl::generate(&c);
    let top = files
        .iter_mut()
        .find(|f| f.name == "sa_accel.v")
        .expect("sa_accel.v generated");
    assert_eq!(
        top.text.matches(from).count(),
        1,
        "the fault site `{from}` is not unique in sa_accel.v"
    );
    top.text = top.text.replace(from, to);
    let model = accel::build_files(&c, &files).unwrap_or_else(|e| panic!("{e}"));
    let (setup, prog) = scenario(&c);
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
    let (setup, prog) = scenario(&c);
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
