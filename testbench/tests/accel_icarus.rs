//! The whole accelerator (`sa_accel`) on a second simulator: Icarus Verilog
//! plays the host script through a generated Verilog testbench (no
//! back-pressure) and must agree with the emulator exactly like the
//! Verilator co-simulation (array inputs per run cycle, STATUS, PC,
//! counters, buffers read back).
//!
//! On the small 3 x 2 array: a training step (LOAD_W, FORWARD, REQUANT,
//! BACKWARD interleaved, UPDATE, FLUSH_W, HALT) and a program that faults
//! after real work; a fault injected into `sa_accel.v` is reported. A missing `iverilog` fails the tests with the package
//! to install; nothing is skipped.

mod common;

use sysgrad_config::host::status;
use sysgrad_config::{fixed, ArrayConfig, Backward};
use sysgrad_emulator::accel::*;
use sysgrad_emulator::gemm::DwSink;
use sysgrad_testbench::accel::{self, AccelError, Setup};

/// Small deterministic data (|v| <= 8).
fn data(c: &ArrayConfig, seed: i64) -> impl FnMut(usize, usize) -> ndarray::Array2<i64> + '_ {
    let mut v = seed;
    move |rows, cols| {
        ndarray::Array2::from_shape_fn((rows, cols), |_| {
            v = (v * 37 + 11) % 251;
            fixed::sat(v % 17 - 8, c.format.in_bits)
        })
    }
}

/// `lines` lines of `lanes` small nonzero values.
fn junk(lines: usize, lanes: usize) -> Vec<Vec<i64>> {
    (0..lines)
        .map(|l| {
            (0..lanes)
                .map(|k| (l * 7 + k * 3) as i64 % 23 - 11)
                .collect()
        })
        .collect()
}

/// A training step of a 5 x 7 layer (N = 4) with REQUANT of the last Y
/// line after the FORWARD that writes it (as in accel_faults.rs).
fn training_step(c: &ArrayConfig) -> (Setup, Vec<u64>) {
    let layer = FcLayer::new(c, 5, 7, 4);
    let mut d = data(c, 7);
    let mut setup = Setup::default();
    setup
        .fill_blocked_padded(BufferId::Weights, &layer.w, d(5, 7).view(), 5)
        .fill_blocked_padded(BufferId::Activations, &layer.x, d(7, 4).view(), -9)
        .fill_blocked_padded(BufferId::Gradients, &layer.dy, d(5, 4).view(), 3)
        // Every line read back is written first: a buffer line nothing
        // wrote reads X under Icarus (sa_buffer's memory has no initial
        // value), 0 under Verilator and in the emulator.
        .fill(BufferId::Gradients, layer.dy.end(), vec![vec![-2, 6]])
        .fill(
            BufferId::Accumulators,
            0,
            junk(layer.dx.end().max(layer.y.end()), 3),
        )
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

#[test]
fn icarus_training_step_matches_the_emulator() {
    let c = common::small();
    let (setup, prog) = training_step(&c);
    let rep = accel::cosim_program_icarus(&c, &setup, &prog)
        .unwrap_or_else(|e| panic!("Icarus co-simulation: {e}"));
    assert_eq!(rep.state, State::Halted);
    assert_ne!(rep.status & status::HALTED, 0);
    assert!(rep.run_cycles > 0 && rep.words_compared > 0, "{rep:?}");
}

#[test]
fn icarus_catches_a_miscounted_counter() {
    // The Icarus side really compares: a fault of accel_faults.rs is reported.
    let c = common::small();
    let mut files = sysgrad_hdl::generate(&c);
    let top = files
        .iter_mut()
        .find(|f| f.name == "sa_accel.v")
        .expect("sa_accel.v generated");
    let (from, to) = (
        "(x_on && is_forward) ? {{9{1'b0}}, res_k}",
        "(x_on && is_forward) ? {{9{1'b0}}, res_m}",
    );
    assert_eq!(top.text.matches(from).count(), 1, "fault site `{from}`");
    top.text = top.text.replace(from, to);
    let (setup, prog) = training_step(&c);
    match accel::cosim_runs_icarus_files(&c, &files, &setup, &[&prog]) {
        Ok(_) => panic!("the fault `{from}` -> `{to}` went unnoticed under Icarus"),
        Err(AccelError::Mismatch { findings, .. }) => assert!(
            findings.iter().any(|f| f.contains("fwd_x_reads")),
            "{findings:#?}"
        ),
        Err(e) => panic!("the Icarus co-simulation failed to run: {e}"),
    }
}

#[test]
fn icarus_fault_matches_the_emulator() {
    let c = common::small();
    let mut setup = Setup::default();
    setup
        .fill(
            BufferId::Weights,
            0,
            (0..4).map(|i| vec![i * 10 - 15; 2]).collect(),
        )
        .fill(
            BufferId::Activations,
            0,
            (0..4).map(|i| vec![3 * i - 5; 3]).collect(),
        )
        .fill(BufferId::Accumulators, 0, junk(4, 3))
        .compare(BufferId::Accumulators, 0, 4);
    let prefix = [
        Command::LoadW {
            addr: 0,
            m: 2,
            k: 3,
        },
        Command::Forward {
            x_addr: 0,
            y_addr: 0,
            n: 4,
            accumulate: false,
        },
    ];
    // A tile of 3 output rows on a 2-column array.
    let bad = Command::LoadW {
        addr: 0,
        m: 3,
        k: 3,
    };
    let prog = encode_program(&[&prefix[..], &[bad]].concat());
    let rep = accel::cosim_program_icarus(&c, &setup, &prog)
        .unwrap_or_else(|e| panic!("Icarus co-simulation: {e}"));
    match rep.state {
        State::Faulted(f) => {
            assert_eq!((f.code, f.pc), (ErrorCode::TileTooLarge, prefix.len()));
            assert_eq!(rep.pc as usize, prefix.len());
            assert_ne!(rep.status & status::FAULTED, 0);
        }
        s => panic!("emulator state {s:?}"),
    }
}
