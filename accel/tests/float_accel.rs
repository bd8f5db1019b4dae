//! The accelerator in a float format (`docs/COMMANDS.md`, Floating point)
//! against the independent oracle (`sysgrad_oracle::float`: the CPU's IEEE
//! fp32 arithmetic and the `half` and `float8` crates): one training step
//! of a random layer as a command program (FORWARD with tiles added in the
//! accumulator buffer by `add32`, BACKWARD, the in-PE update), then
//! REQUANT of Y into the gradient buffer, `ACT relu` of Y into the
//! activation buffer and `ACT relu_grad` of Y gated by that ReLU output,
//! on both controllers. The cases (random formats, roundings, shapes and
//! edge values) are the emulator's float cases.

#[path = "../../emulator/tests/common/mod.rs"]
mod common;

use common::float_cases::{case_from, expected, oracle_kind, Case};
use common::{difference, with_deep_buffers, with_pipelining};
use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_accel::{
    compile_layer, encode_program, Accelerator, ActFunction, BufferId, Command, DataBuffer, FcLayer,
};
use sysgrad_config::{ArrayConfig, Pipelining};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_oracle::float as of;
use sysgrad_oracle::Matrix;

/// Layers per run (each on both controllers).
const CASES: u32 = 48;

/// Whether the pattern `bits` of format `k` stands for a value greater
/// than 0, as IEEE compares (the oracle's conversion).
fn positive(k: of::Kind, bits: i64) -> bool {
    of::to_f32(k, bits as u32) > 0.0
}

/// Where the extra commands put their lines: after the layer's own.
struct Extra {
    /// REQUANT of Y, in the gradient buffer.
    y_q: usize,
    /// ACT relu of Y, in the activation buffer.
    relu: usize,
    /// ACT relu_grad of Y gated by `relu`, in the gradient buffer.
    gated: usize,
    lines: usize,
    lanes: usize,
}

fn run(c: &Case, cfg: ArrayConfig) -> Result<(), TestCaseError> {
    let tag = cfg.tag();
    let (m, k) = c.w.dim();
    let l = FcLayer::new(&cfg, m, k, c.x.ncols());
    let mut acc = Accelerator::new(cfg);
    l.w.store(acc.buffer_mut(BufferId::Weights), c.w.view())
        .unwrap();
    l.x.store(acc.buffer_mut(BufferId::Activations), c.x.view())
        .unwrap();
    l.dy.store(acc.buffer_mut(BufferId::Gradients), c.dy.view())
        .unwrap();
    let lines = l.y.lines();
    let e = Extra {
        y_q: l.dy.end(),
        relu: l.x.end(),
        gated: l.dy.end() + lines,
        lines,
        lanes: cfg.rows().min(cfg.cols()),
    };
    let sink = DwSink::Update {
        lr_shift: c.lr_shift,
    };
    let mut prog = compile_layer(&cfg, &l, c.schedule, sink).unwrap();
    assert_eq!(prog.pop(), Some(Command::Halt));
    let act = |func, dst, dst_addr: usize| Command::Act {
        func,
        src: l.y.base as u16,
        dst,
        dst_addr: dst_addr as u16,
        count: lines as u16,
        mask: e.relu as u16,
        lanes: e.lanes as u16,
    };
    prog.extend([
        Command::Requant {
            src: l.y.base as u16,
            dst: DataBuffer::Gradients,
            dst_addr: e.y_q as u16,
            count: lines as u16,
        },
        act(ActFunction::Relu, DataBuffer::Activations, e.relu),
        act(ActFunction::ReluGrad, DataBuffer::Gradients, e.gated),
        Command::Halt,
    ]);
    acc.run(&encode_program(&prog)).unwrap();

    // The oracle's draws follow the array run (with_pipelining may have
    // turned the multiplier register off, whose update steps twice).
    let want = expected(&Case { cfg, ..c.clone() });
    let results = acc.buffer(BufferId::Accumulators);
    let same = |what: &str, got: &Array2<i64>, want: &Matrix| match difference(
        &format!("{what} {tag}"),
        got,
        want,
    ) {
        Some(msg) => Err(TestCaseError::fail(msg)),
        None => Ok(()),
    };
    same("Y", &l.y.load(results).unwrap(), &want.y)?;
    same("dX", &l.dx.load(results).unwrap(), &want.dx)?;
    same(
        "updated W",
        &l.w.load(acc.buffer(BufferId::Weights)).unwrap(),
        &want.w,
    )?;
    lines_through_the_unit(c, &acc, l.y.base, &e)
        .map_err(|msg| TestCaseError::fail(format!("{msg} {tag}")))
}

/// Every lane REQUANT and ACT wrote, against the oracle's rounding and
/// ReLU of the accumulator word the accelerator holds.
fn lines_through_the_unit(
    c: &Case,
    acc: &Accelerator,
    y_base: usize,
    e: &Extra,
) -> Result<(), String> {
    let (act_k, grad_k) = (
        oracle_kind(c.format.activations),
        oracle_kind(c.format.gradients),
    );
    let word = |id, line, lane| acc.buffer(id).get(line, lane).unwrap();
    for t in 0..e.lines {
        for lane in 0..acc.buffer(BufferId::Gradients).lanes() {
            let y = word(BufferId::Accumulators, y_base + t, lane) as u32;
            let q = i64::from(of::round_to(grad_k, y));
            let got = word(BufferId::Gradients, e.y_q + t, lane);
            if got != q {
                return Err(format!(
                    "REQUANT line {t} lane {lane}: {got:#x}, oracle {q:#x}"
                ));
            }
            if lane >= e.lanes {
                continue;
            }
            let a = i64::from(of::round_to(act_k, y));
            let relu = if positive(act_k, a) { a } else { 0 };
            let got = word(BufferId::Activations, e.relu + t, lane);
            if got != relu {
                return Err(format!(
                    "ACT relu line {t} lane {lane}: {got:#x}, oracle {relu:#x}"
                ));
            }
            let gated = if positive(act_k, relu) { q } else { 0 };
            let got = word(BufferId::Gradients, e.gated + t, lane);
            if got != gated {
                return Err(format!(
                    "ACT relu_grad line {t} lane {lane}: {got:#x}, oracle {gated:#x}"
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn a_float_training_step_and_its_activations_equal_the_oracle(seed in any::<u64>()) {
        let c = case_from(seed);
        for pipelining in [Pipelining::None, Pipelining::Dense] {
            run(&c, with_deep_buffers(with_pipelining(&c.cfg, pipelining)))?;
        }
    }
}

/// A host write of a word outside a buffer's format is refused, naming
/// the buffer, where, and what a word of it is.
#[test]
fn a_host_word_outside_the_buffers_format_is_refused() {
    let c = case_from(3);
    let mut acc = Accelerator::new(c.cfg);
    let bits = c.format.activations.encoding().bits();
    let b = acc.buffer_mut(BufferId::Activations);
    assert!(b.set(0, 0, (1 << bits) - 1).is_ok());
    for bad in [1i64 << bits, -1] {
        let err = b.set(0, 0, bad).unwrap_err().to_string();
        assert!(err.contains(&format!("{bits}-bit pattern")), "{err}");
    }
}
