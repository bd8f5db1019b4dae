//! ACT, the activation unit on the accumulators' way out
//! (`docs/COMMANDS.md`), on the whole accelerator, RTL against the
//! emulator on both controllers: every function (identity, relu,
//! relu_grad gated by a mask in the activation buffer), partial lanes
//! (the lanes past `lanes` keep what they held), ACT reading the line a
//! FORWARD writes in the same cycle, ACT after LOAD_W, and each error ACT
//! can fault with, in its priority. Compared as everywhere: the array's
//! inputs in every run cycle, STATUS, PC, every counter (`act_cycles`,
//! `act_words` among them) and the buffers read back. The same program
//! runs on Icarus in `accel_icarus.rs`.
//!
//! Verilator builds of the 3 x 2 array (`none` and dense; shared with
//! `accel_faults.rs` and `accel_random.rs`) and of the 3 x 5 sequential
//! one (R < C, shared with `accel_cosim.rs`).

mod common;

use common::model;
use sysgrad_accel::*;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::command::{format, opcode};
use sysgrad_isa::host::Counter;
use sysgrad_testbench::accel::Setup;

fn every_function_on(c: ArrayConfig) {
    let (setup, prog) = common::act_program(&c);
    let rep = model(c)
        .cosim(&setup, &prog, 17, 20)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", c.tag(), asm::disassemble(&prog)));
    assert_eq!(rep.state, State::Halted);
    let get = |k: Counter| rep.counter(k).unwrap();
    // The program's ACTs: 1 + 6 + 6 + 6 + 6 + 3 + 4 + 8 + 6 lines.
    assert_eq!(get(Counter::ActCycles), 46, "{rep:?}");
    assert!(get(Counter::ActWords) > 0 && get(Counter::RequantCycles) == 2);
    eprintln!(
        "{}: {} run cycles, {} words compared",
        c.tag(),
        rep.run_cycles,
        rep.words_compared
    );
}

#[test]
#[ignore = "needs verilator"]
fn every_function_matches_the_emulator() {
    every_function_on(common::small());
}

#[test]
#[ignore = "needs verilator"]
fn every_function_matches_the_emulator_on_the_dense_controller() {
    every_function_on(common::dense(common::small()));
}

/// ACT's words with any function code (3 is none).
fn act_words(
    func: u64,
    (src, dst, addr, count): (u64, u64, u64, u64),
    mask: u64,
    lanes: u64,
) -> Vec<u64> {
    format(opcode::ACT).expect("ACT").encode(|name| match name {
        "func" => func,
        "src" => src,
        "dst" => dst,
        "addr" => addr,
        "count" => count,
        "mask" => mask,
        "lanes" => lanes,
        _ => unreachable!("{name}"),
    })
}

/// Each error ACT can fault with, after real work, on `c` (3 x 2 with
/// 64-line buffers and 128 accumulator lines): the same code at the same
/// PC as the emulator, nothing written by the faulting command.
fn errors_on(c: ArrayConfig) {
    use ErrorCode::*;
    let (g, x) = (DataBuffer::Gradients.code(), DataBuffer::Activations.code());
    let (relu, gate) = (ActFunction::Relu.code(), ActFunction::ReluGrad.code());
    let (r, cols) = (c.rows() as u64, c.cols() as u64);
    let (setup, _) = common::act_program(&c);
    let work = common::act(ActFunction::Relu, (0, DataBuffer::Activations, 10, 4), 0, 1);
    let prefix = encode_program(&[&common::loaded_forward(&c, 4)[..], &[work]].concat());
    let acc_depth = c.buffers().accumulators as u64;
    let depth = c.buffers().activations as u64;
    let mut reserved = act_words(relu, (0, x, 0, 1), 0, 1);
    reserved[1] |= 1 << 40;
    let cases: Vec<(&str, Vec<u64>, ErrorCode)> = vec![
        ("func 3", act_words(3, (0, g, 0, 2), 0, 1), BadFunction),
        (
            "func 3 before zero size",
            act_words(3, (0, g, 0, 0), 0, 0),
            BadFunction,
        ),
        (
            "relu_grad into activations",
            act_words(gate, (0, x, 0, 2), 0, 1),
            BadFunction,
        ),
        ("zero count", act_words(relu, (0, g, 0, 0), 0, 1), ZeroSize),
        ("zero lanes", act_words(relu, (0, g, 0, 2), 0, 0), ZeroSize),
        (
            "lanes past R",
            act_words(relu, (0, x, 0, 2), 0, r + 1),
            TileTooLarge,
        ),
        (
            "lanes past C",
            act_words(relu, (0, g, 0, 2), 0, cols + 1),
            TileTooLarge,
        ),
        (
            "src range",
            act_words(relu, (acc_depth - 1, g, 0, 2), 0, 1),
            AddressRange,
        ),
        (
            "dst range",
            act_words(relu, (0, x, depth - 1, 2), 0, 1),
            AddressRange,
        ),
        (
            "mask range",
            act_words(gate, (0, g, 0, 2), depth - 1, 1),
            AddressRange,
        ),
        ("reserved bit in word 1", reserved, ReservedBits),
        (
            "cut after word 0",
            act_words(relu, (0, g, 0, 2), 0, 1)[..1].to_vec(),
            ProgramEnd,
        ),
    ];
    for (i, (what, bad, code)) in cases.into_iter().enumerate() {
        let prog = [prefix.clone(), bad].concat();
        let rep = model(c)
            .cosim(&setup, &prog, 200 + i as u64, 10)
            .unwrap_or_else(|e| panic!("{} {what}: {e}", c.tag()));
        match rep.state {
            State::Faulted(f) => assert_eq!((f.code, f.pc), (code, prefix.len()), "{what}"),
            s => panic!("{what}: emulator state {s:?}"),
        }
    }
    // A mask past the buffer is no error for a function that reads none.
    let prog = [
        prefix.clone(),
        act_words(relu, (0, g, 0, 2), depth - 1, 1),
        encode_program(&[Command::Halt]),
    ]
    .concat();
    let rep = model(c)
        .cosim(&setup, &prog, 230, 10)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rep.state, State::Halted);
}

#[test]
#[ignore = "needs verilator"]
fn errors_match_the_emulator() {
    errors_on(common::small());
}

#[test]
#[ignore = "needs verilator"]
fn errors_match_the_emulator_on_the_dense_controller() {
    errors_on(common::dense(common::small()));
}

/// R < C (3 x 5): a gate reads its mask in the activations' R lanes, so
/// relu_grad takes at most R lanes though the gradients have C; relu
/// writes all C.
#[test]
#[ignore = "needs verilator"]
fn a_gate_on_an_array_wider_than_tall_matches_the_emulator() {
    use ActFunction::*;
    use DataBuffer::*;
    let c = common::sequential();
    let (r, cols) = (c.rows() as u16, c.cols() as u16);
    let mut setup = Setup::default();
    setup
        .fill(BufferId::Activations, 0, common::junk(16, c.rows()))
        .fill(BufferId::Gradients, 0, common::junk(16, c.cols()))
        .fill(BufferId::Accumulators, 0, common::junk(16, c.cols()))
        .compare(BufferId::Gradients, 0, 16);
    let ok = encode_program(&[
        common::act(Relu, (0, Gradients, 0, 4), 0, cols),
        common::act(ReluGrad, (4, Gradients, 4, 4), 0, r),
        Command::Halt,
    ]);
    let rep = model(c)
        .cosim(&setup, &ok, 31, 10)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rep.state, State::Halted);
    let bad = encode_program(&[common::act(ReluGrad, (4, Gradients, 4, 4), 0, r + 1)]);
    let rep = model(c)
        .cosim(&setup, &bad, 32, 10)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(rep.state, State::Faulted(f) if f.code == ErrorCode::TileTooLarge && f.pc == 0),
        "{:?}",
        rep.state
    );
}
