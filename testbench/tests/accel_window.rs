//! The convolution address generator (`docs/COMMANDS.md`, WINDOW and
//! Windowed FORWARD and BACKWARD) on the RTL alone: a 3 x 3 convolution
//! of two 5 x 6 images of 3 channels into 4, as a sum of windowed passes
//! over the kernel elements, against the same convolution through plain
//! passes over patches the host built (im2col) and a host-side col2im of
//! plain DX passes. Both run in one program on the same hardware; the
//! lines read back must be equal:
//!
//! * Y: windowed FORWARDs (acc = 1 after the first element) and plain
//!   FORWARDs over the patches;
//! * dX: windowed DX passes (acc = 1) into the image's lines, and the
//!   host's col2im of plain DX passes' patch gradients; and the dX of
//!   windowed INTERLEAVED passes;
//! * dW of each kernel element: a windowed DW pass and a plain one over
//!   the patches (DRAINed), and the windowed INTERLEAVED pass's.
//!
//! On `configs/small_4x4.toml` (`none`) and `configs/dense_4x4.toml`
//! (dense), stride 1 and 2, padding 0 and 1, Verilator. The emulator is
//! not involved: this checks the generator against the host's im2col,
//! which shares no code with it.

mod common;

use common::{conv_case, Conv};
use std::path::Path;
use sysgrad_accel::*;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::{reg, status, DmaTarget};
use sysgrad_testbench::accel::{self, HostScript, Setup};

fn target(b: BufferId) -> DmaTarget {
    match b {
        BufferId::Weights => DmaTarget::Weights,
        BufferId::Activations => DmaTarget::Activations,
        BufferId::Gradients => DmaTarget::Gradients,
        BufferId::Accumulators => DmaTarget::Accumulators,
    }
}

/// Runs the convolution both ways on `model` and compares.
fn conv_on(model: &accel::AccelModel, cv: Conv) {
    let cfg = model.cfg;
    let p = cv.p();
    let case = conv_case(&cfg, cv);
    let l = &case.layout;
    let mut s = HostScript::new(&cfg);
    for (b, at, lines) in &case.fills {
        s.dma_write_lines(target(*b), *at, lines);
    }
    let prog = encode_program(&case.program);
    s.load_program(&prog).start().poll();
    let st = s.read_reg(reg::STATUS);
    let back = s.dma_read(DmaTarget::Accumulators, 0, l.acc_end);
    let work = accel::work_dir(&cfg, "window");
    let res = model
        .run(&s, 1, 0, Path::new(&work))
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
    let status = res.value(st).expect("STATUS read");
    assert_eq!(
        status & (status::HALTED | status::FAULTED),
        status::HALTED,
        "{}: {cv:?}: STATUS {status:#x}",
        cfg.tag()
    );
    let acc = res.lines(back).expect("accumulators read back");
    let lanes = |from: usize, n: usize, k: usize| -> Vec<Vec<i64>> {
        acc[from..from + n]
            .iter()
            .map(|v| v[..k].to_vec())
            .collect()
    };
    let what = format!("{} {cv:?}", cfg.tag());
    assert_eq!(
        lanes(l.y_win, p, cv.o),
        lanes(l.y_col, p, cv.o),
        "Y: {what}"
    );
    // col2im of the plain passes' patch gradients, on the host.
    let mut col2im = vec![vec![0i64; cv.c]; cv.pixels()];
    for (e, (ky, kx)) in cv.elements().into_iter().enumerate() {
        for t in 0..p {
            if let Some(line) = cv.line(t, ky, kx) {
                for c in 0..cv.c {
                    col2im[line][c] += acc[l.dx_col + e * p + t][c];
                }
            }
        }
    }
    let dx = lanes(l.dx_win, cv.pixels(), cv.c);
    assert_eq!(dx, col2im, "dX: {what}");
    assert_eq!(
        lanes(l.dx_il, cv.pixels(), cv.c),
        dx,
        "interleaved dX: {what}"
    );
    let dw = |at: usize| lanes(at, cv.k * cv.k * cv.o, cv.c);
    assert_eq!(dw(l.dw_win), dw(l.dw_col), "dW: {what}");
    assert_eq!(dw(l.dw_il), dw(l.dw_win), "interleaved dW: {what}");
    assert!(
        dx.iter().flatten().any(|v| *v != 0)
            && lanes(l.y_win, p, cv.o).iter().flatten().any(|v| *v != 0),
        "{what}: nothing computed"
    );
    eprintln!("{what}: {} cycles, equal", res.cycles);
}

fn config(path: &str) -> ArrayConfig {
    sysgrad_config::load_config(Path::new(path)).expect(path)
}

const NONE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/small_4x4.toml");
const DENSE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/dense_4x4.toml");
const STRIDE_PAD: [(usize, usize); 4] = [(1, 0), (1, 1), (2, 0), (2, 1)];

fn convolutions_on(path: &str) {
    let cfg = config(path);
    let model = accel::build(&cfg).unwrap_or_else(|e| panic!("{e}"));
    for (stride, pad) in STRIDE_PAD {
        conv_on(&model, Conv::on(&cfg, stride, pad));
    }
}

/// The same programs co-simulated against the emulator on Verilator
/// (every array input, STATUS, PC, counters, the accumulator lines).
fn cosim_on(path: &str) {
    let cfg = config(path);
    let model = common::model(cfg);
    for (seed, (stride, pad)) in STRIDE_PAD.into_iter().enumerate() {
        let case = conv_case(&cfg, Conv::on(&cfg, stride, pad));
        let rep = model
            .cosim(
                &case.setup(),
                &encode_program(&case.program),
                seed as u64,
                25,
            )
            .unwrap_or_else(|e| panic!("{} {:?}: {e}", cfg.tag(), case.cv));
        assert_eq!(rep.state, State::Halted);
        eprintln!(
            "{} {:?}: {} run cycles, {} words compared",
            cfg.tag(),
            case.cv,
            rep.run_cycles,
            rep.words_compared
        );
    }
}

#[test]
#[ignore = "needs verilator"]
fn windowed_passes_equal_im2col_on_the_none_controller() {
    convolutions_on(NONE);
}

#[test]
#[ignore = "needs verilator"]
fn windowed_passes_equal_im2col_on_the_dense_controller() {
    convolutions_on(DENSE);
}

#[test]
#[ignore = "needs verilator"]
fn windowed_convolutions_match_the_emulator() {
    cosim_on(NONE);
}

#[test]
#[ignore = "needs verilator"]
fn windowed_convolutions_match_the_emulator_on_the_dense_controller() {
    cosim_on(DENSE);
}

/// Every error a window can cause, each after real work (a WINDOW, a
/// tile and a windowed FORWARD), co-simulated on the 3 x 2 array with
/// room for a convolution (512-line activation and accumulator buffers)
/// on both controllers: the same code at the same PC as the emulator,
/// nothing written by the faulting command. Among them the `none`
/// controller's pre-check cases: a WINDOW just before the pass that its
/// new window makes valid, or faulty.
fn errors_on(c: ArrayConfig) {
    use ErrorCode::*;
    let cv = Conv::on(&c, 1, 1);
    let (n, px) = (cv.p() as u16, cv.pixels() as u16);
    let depth = c.buffers().activations as u16;
    let win = cv.window(1, 2);
    let with = |f: &dyn Fn(&mut Window)| match win {
        Command::Window(mut w) => {
            f(&mut w);
            Command::Window(w)
        }
        _ => unreachable!(),
    };
    let fwd = |x_addr: u16, n: u16, window: bool| Command::Forward {
        x_addr,
        y_addr: 0,
        n,
        accumulate: false,
        window,
    };
    let dx = |dx_addr: u16| Command::Backward {
        mode: BackwardMode::Dx,
        dy_addr: 0,
        x_addr: 0,
        dx_addr,
        n,
        accumulate: true,
        window: true,
    };
    let load = Command::LoadW {
        addr: 0,
        m: cv.o as u16,
        k: cv.c as u16,
    };
    let prefix = encode_program(&[win, load, fwd(0, n, true)]);
    let e = |cmds: &[Command]| encode_program(cmds);
    let other = with(&|w| w.ow -= 1);
    let window_words = win.encode();
    let n_other = n - cv.images as u16 * cv.oh() as u16;
    let (sync, halt) = (Command::Sync, Command::Halt);
    // Each case runs after `prefix`; a fault names its code and the word
    // of the faulting command, counted from the case's first word.
    type Outcome = Option<(ErrorCode, usize)>;
    let cases: Vec<(&str, Vec<u64>, Outcome)> = vec![
        (
            "stride 0",
            e(&[with(&|w| w.stride = 0)]),
            Some((ZeroSize, 0)),
        ),
        (
            "images 0",
            e(&[with(&|w| w.images = 0)]),
            Some((ZeroSize, 0)),
        ),
        ("w 0", e(&[with(&|w| w.w = 0)]), Some((ZeroSize, 0))),
        (
            "reserved bit in word 1",
            vec![window_words[0], window_words[1] | 1 << 40],
            Some((ReservedBits, 0)),
        ),
        (
            "WINDOW cut",
            window_words[..1].to_vec(),
            Some((ProgramEnd, 0)),
        ),
        (
            "n one short",
            e(&[fwd(0, n - 1, true)]),
            Some((WindowLength, 0)),
        ),
        (
            "n of another window",
            e(&[other, fwd(0, n, true)]),
            Some((WindowLength, 2)),
        ),
        (
            "X past the end",
            e(&[fwd(depth - px + 1, n, true)]),
            Some((AddressRange, 0)),
        ),
        (
            "dX past the end",
            e(&[dx(c.buffers().accumulators as u16 - px + 1)]),
            Some((AddressRange, 0)),
        ),
        (
            "n of the window just set",
            e(&[other, fwd(0, n_other, true), halt]),
            None,
        ),
        // The window just set, as the check of the pass right after it
        // sees it, whatever comes before the WINDOW (the `none` controller
        // forms its limits a cycle ahead of its first decode cycle): a
        // SYNC, another WINDOW, a pass; the X range at and one past the
        // buffer's end.
        (
            "after a SYNC",
            e(&[sync, other, fwd(0, n_other, true), halt]),
            None,
        ),
        (
            "n of the earlier window after a SYNC",
            e(&[sync, other, fwd(0, n, true)]),
            Some((WindowLength, 3)),
        ),
        (
            "the second of two WINDOWs",
            e(&[other, win, fwd(0, n, true), halt]),
            None,
        ),
        (
            "n of the first of two WINDOWs",
            e(&[win, other, fwd(0, n, true)]),
            Some((WindowLength, 4)),
        ),
        (
            "X to the end right after the WINDOW",
            e(&[other, fwd(depth - px, n_other, true), halt]),
            None,
        ),
        (
            "X past the end right after the WINDOW",
            e(&[other, fwd(depth - px + 1, n_other, true)]),
            Some((AddressRange, 2)),
        ),
    ];
    let mut setup = Setup::default();
    setup
        .fill(BufferId::Weights, 0, vec![vec![3, -2]; 3])
        .fill(
            BufferId::Activations,
            0,
            vec![vec![1, -1, 2]; depth as usize],
        )
        .compare(BufferId::Accumulators, 0, n as usize);
    for (i, (what, words, want)) in cases.into_iter().enumerate() {
        let prog = [prefix.clone(), words].concat();
        let rep = common::model(c)
            .cosim(&setup, &prog, 200 + i as u64, 10)
            .unwrap_or_else(|e| panic!("{} {what}: {e}", c.tag()));
        let got = match rep.state {
            State::Faulted(f) => {
                assert_eq!(rep.pc as usize, f.pc, "{} {what}", c.tag());
                Some((f.code, f.pc - prefix.len()))
            }
            State::Halted => None,
            s => panic!("{what}: emulator state {s:?}"),
        };
        assert_eq!(got, want, "{} {what}", c.tag());
    }
    // No window since reset; no tile comes first.
    for (prog, code) in [
        (e(&[load, fwd(0, n, true)]), NoWindow),
        (e(&[fwd(0, n, true)]), NoTile),
    ] {
        let rep = common::model(c).cosim(&setup, &prog, 7, 10).unwrap();
        assert!(
            matches!(rep.state, State::Faulted(f) if f.code == code),
            "{}: {:?}",
            c.tag(),
            rep.state
        );
    }
}

#[test]
#[ignore = "needs verilator"]
fn window_errors_fault_like_the_emulator() {
    errors_on(common::conv_small());
}

#[test]
#[ignore = "needs verilator"]
fn window_errors_fault_like_the_emulator_on_the_dense_controller() {
    errors_on(common::dense(common::conv_small()));
}

/// Built without the address generator (`units.window = false`): WINDOW
/// faults NO_GENERATOR (a zero size first), a windowed pass NO_WINDOW,
/// and a plain pass runs, each co-simulated against the emulator; the
/// expected codes are the contract's (COMMANDS.md, Errors).
fn without_generator_on(c: ArrayConfig) {
    use ErrorCode::*;
    let c = c.with_units(sysgrad_config::Units { window: false });
    let cv = Conv::on(&c, 1, 1);
    let n = cv.p() as u16;
    let win = cv.window(1, 1);
    let zero = match win {
        Command::Window(w) => Command::Window(Window { stride: 0, ..w }),
        _ => unreachable!(),
    };
    let fwd = |window: bool| Command::Forward {
        x_addr: 0,
        y_addr: 0,
        n,
        accumulate: false,
        window,
    };
    let load = Command::LoadW {
        addr: 0,
        m: cv.o as u16,
        k: cv.c as u16,
    };
    let mut setup = Setup::default();
    setup
        .fill(BufferId::Weights, 0, vec![vec![3, -2]; 3])
        .fill(BufferId::Activations, 0, vec![vec![1, -1, 2]; n as usize])
        .compare(BufferId::Accumulators, 0, n as usize);
    let cases = [
        (vec![load, win], Some((NoGenerator, 1))),
        (vec![zero], Some((ZeroSize, 0))),
        (vec![load, fwd(true)], Some((NoWindow, 1))),
        (vec![load, fwd(false), Command::Halt], None),
    ];
    for (i, (cmds, want)) in cases.into_iter().enumerate() {
        let rep = common::model(c)
            .cosim(&setup, &encode_program(&cmds), 300 + i as u64, 10)
            .unwrap_or_else(|e| panic!("{} {cmds:?}: {e}", c.tag()));
        let got = match rep.state {
            State::Faulted(f) => Some((f.code, f.pc)),
            State::Halted => None,
            s => panic!("{cmds:?}: emulator state {s:?}"),
        };
        assert_eq!(got, want, "{} {cmds:?}", c.tag());
    }
}

#[test]
#[ignore = "needs verilator"]
fn without_the_generator_window_faults_like_the_emulator() {
    without_generator_on(common::conv_small());
}

#[test]
#[ignore = "needs verilator"]
fn without_the_generator_window_faults_like_the_emulator_on_the_dense_controller() {
    without_generator_on(common::dense(common::conv_small()));
}
