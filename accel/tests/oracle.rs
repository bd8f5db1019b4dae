//! The accelerator's FC-layer program against the independent oracle
//! (`sysgrad-oracle`, written from `docs/ARCHITECTURE.md` alone): one
//! training step of a random layer on a random configuration, then a
//! REQUANT of Y, read back from the buffers. The layers come from the
//! emulator's oracle tests (`emulator/tests/common/cases.rs`).

#[path = "../../emulator/tests/common/mod.rs"]
mod common;

use common::cases::*;
use common::{oracle_config, with_deep_buffers, with_pipelining};
use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_accel::{
    compile_layer, encode_program, Accelerator, Blocked, BufferId, Command, DataBuffer, FcLayer,
};
use sysgrad_config::{ArrayConfig, Pipelining};
use sysgrad_oracle as oracle;

/// Layers per run: about 0.4 s in `--release` on two cores.
const ACCEL_CASES: u32 = 32;

/// What the accelerator's buffers hold after the program of
/// [`run_on_accelerator`].
struct AccelResults {
    y: Array2<i64>,
    dx: Array2<i64>,
    w: Array2<i64>,
    y_requantized: Array2<i64>,
}

/// One training step of an FC layer as a command program on the
/// accelerator, then a REQUANT of Y, read back from its buffers.
fn run_on_accelerator(c: &Case, cfg: &ArrayConfig) -> AccelResults {
    let cfg = with_deep_buffers(*cfg);
    let (m, k) = c.w.dim();
    let l = FcLayer::new(&cfg, m, k, c.x.ncols());
    let mut acc = Accelerator::new(cfg);
    l.w.store(acc.buffer_mut(BufferId::Weights), c.w.view())
        .unwrap();
    l.x.store(acc.buffer_mut(BufferId::Activations), c.x.view())
        .unwrap();
    l.dy.store(acc.buffer_mut(BufferId::Gradients), c.dy.view())
        .unwrap();
    // REQUANT moves whole lines, so Y (blocks of `cols` rows) goes to the
    // gradient buffer, whose lines have `cols` lanes too, after dY.
    let y_q = Blocked {
        base: l.dy.end(),
        ..l.y
    };
    let mut prog = compile_layer(&cfg, &l, c.schedule, update(c)).unwrap();
    let halt = prog.pop();
    assert_eq!(halt, Some(Command::Halt));
    prog.extend([
        Command::Requant {
            src: l.y.base as u16,
            dst: DataBuffer::Gradients,
            dst_addr: y_q.base as u16,
            count: l.y.lines() as u16,
        },
        Command::Halt,
    ]);
    acc.run(&encode_program(&prog)).unwrap();
    let results = acc.buffer(BufferId::Accumulators);
    AccelResults {
        y: l.y.load(results).unwrap(),
        dx: l.dx.load(results).unwrap(),
        w: l.w.load(acc.buffer(BufferId::Weights)).unwrap(),
        y_requantized: y_q.load(acc.buffer(BufferId::Gradients)).unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ACCEL_CASES))]

    #[test]
    fn accelerator_program_equals_oracle(c in case()) {
        for pipelining in [Pipelining::None, Pipelining::Dense] {
            let cfg = with_pipelining(&c.cfg, pipelining);
            let want = expected_on(&c, &cfg);
            let got = run_on_accelerator(&c, &cfg);
            same("Y", &got.y, &want.y)?;
            same("dX", &got.dx, &want.dx)?;
            same("updated W", &got.w, &want.w)?;
            let y_q = oracle::requantize_matrix(&oracle_config(&c.cfg), &want.y);
            same("requantized Y", &got.y_requantized, &y_q)?;
        }
    }
}
