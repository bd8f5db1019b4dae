//! The whole accelerator (`sa_accel`) on a second simulator: Icarus Verilog
//! plays the host script through a generated Verilog testbench (no
//! back-pressure) and must agree with the emulator exactly like the
//! Verilator co-simulation (array inputs per run cycle, STATUS, PC,
//! counters, buffers read back).
//!
//! On the small 3 x 2 array (and its dense twin): a training step (LOAD_W, FORWARD, REQUANT,
//! BACKWARD interleaved, UPDATE, FLUSH_W, HALT), every ACT function
//! (`common::act_program`), a convolution through the address generator
//! (`common::conv_program`: WINDOW and windowed passes beside im2col
//! ones) and programs that fault after real work; a
//! fault injected into `sa_accel.v` is reported. A missing `iverilog` fails the tests with the package
//! to install; nothing is skipped.

mod common;

use sysgrad_accel::*;
use sysgrad_isa::host::{status, Counter};
use sysgrad_testbench::accel::{self, AccelError, Setup};

#[test]
#[ignore = "needs iverilog"]
fn icarus_training_step_matches_the_emulator() {
    let c = common::small();
    let (setup, prog) = common::training_step(&c);
    let rep = accel::cosim_program_icarus(&c, &setup, &prog)
        .unwrap_or_else(|e| panic!("Icarus co-simulation: {e}"));
    assert_eq!(rep.state, State::Halted);
    assert_ne!(rep.status & status::HALTED, 0);
    assert!(rep.run_cycles > 0 && rep.words_compared > 0, "{rep:?}");
}

#[test]
#[ignore = "needs iverilog"]
fn narrow_counters_wrap_and_no_counters_read_zero_like_the_emulator() {
    // host.counter_bits: 5-bit counters wrap in a training step (the
    // emulator's counts go through the same modulo), 0 builds none.
    let full = {
        let c = common::small();
        let (setup, prog) = common::training_step(&c);
        accel::cosim_program_icarus(&c, &setup, &prog).unwrap()
    };
    for bits in [5, 0] {
        let c = common::small().with_counter_bits(bits).unwrap();
        let (setup, prog) = common::training_step(&c);
        let rep = accel::cosim_program_icarus(&c, &setup, &prog)
            .unwrap_or_else(|e| panic!("{bits}-bit counters under Icarus: {e}"));
        assert_eq!(rep.counters.len(), full.counters.len());
        for ((k, narrow), (_, wide)) in rep.counters.iter().zip(&full.counters) {
            assert_eq!(*narrow, wide % (1 << bits), "{}", k.name());
        }
        assert!(
            full.counters.iter().any(|(_, v)| *v >= 1 << 5),
            "nothing wraps"
        );
    }
}

#[test]
#[ignore = "needs iverilog"]
fn icarus_dense_training_step_matches_the_emulator() {
    // The dense controller: the same program, its own cycles.
    let c = common::dense(common::small());
    let (setup, prog) = common::training_step(&c);
    let rep = accel::cosim_program_icarus(&c, &setup, &prog)
        .unwrap_or_else(|e| panic!("Icarus co-simulation: {e}"));
    assert_eq!(rep.state, State::Halted);
    assert!(rep.run_cycles > 0 && rep.words_compared > 0, "{rep:?}");
}

#[test]
#[ignore = "needs iverilog"]
fn icarus_act_matches_the_emulator_on_both_controllers() {
    // Every ACT function, partial lanes, the gate's mask (common::act_program).
    for c in [common::small(), common::dense(common::small())] {
        let (setup, prog) = common::act_program(&c);
        let rep = accel::cosim_program_icarus(&c, &setup, &prog)
            .unwrap_or_else(|e| panic!("{} under Icarus: {e}", c.tag()));
        assert_eq!(rep.state, State::Halted);
        assert!(rep.counter(Counter::ActWords).unwrap() > 0, "{rep:?}");
    }
}

#[test]
#[ignore = "needs iverilog"]
fn icarus_act_fault_matches_the_emulator() {
    // A gate into the activations: BAD_FUNCTION, after real work.
    let c = common::dense(common::small());
    let (setup, _) = common::act_program(&c);
    let work = common::act(ActFunction::Relu, (0, DataBuffer::Activations, 10, 4), 0, 2);
    let bad = common::act(
        ActFunction::ReluGrad,
        (0, DataBuffer::Activations, 20, 4),
        10,
        2,
    );
    let words = encode_program(&[&common::loaded_forward(&c, 4)[..], &[work]].concat());
    let prog = [words.clone(), bad.encode()].concat();
    let rep = accel::cosim_program_icarus(&c, &setup, &prog)
        .unwrap_or_else(|e| panic!("Icarus co-simulation: {e}"));
    match rep.state {
        State::Faulted(f) => assert_eq!((f.code, f.pc), (ErrorCode::BadFunction, words.len())),
        s => panic!("emulator state {s:?}"),
    }
}

#[test]
#[ignore = "needs iverilog"]
fn icarus_catches_a_miscounted_counter() {
    // The Icarus side really compares: a fault of accel_faults.rs is reported.
    let c = common::small();
    let (from, to) = ("res_k", "res_m");
    let files = common::with_fault_in(&c, "inc_fwd_x_reads", from, to);
    let (setup, prog) = common::training_step(&c);
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
#[ignore = "needs iverilog"]
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
        .fill(BufferId::Accumulators, 0, common::junk(4, 3))
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
            window: false,
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

#[test]
#[ignore = "needs iverilog"]
fn icarus_windowed_convolution_matches_the_emulator() {
    for c in [common::conv_small(), common::dense(common::conv_small())] {
        let (setup, prog) = common::conv_program(&c);
        let rep = accel::cosim_program_icarus(&c, &setup, &prog)
            .unwrap_or_else(|e| panic!("{} under Icarus: {e}", c.tag()));
        assert_eq!(rep.state, State::Halted);
        assert!(rep.run_cycles > 0 && rep.words_compared > 0, "{rep:?}");
    }
}
