//! ACT, the activation unit (`docs/COMMANDS.md`): requantize, then the
//! function per lane, against a reference written here (the oracle's
//! requantization, ReLU and its gate by hand); its checks in the documented
//! order; its cycles on both controllers.

use sysgrad_accel::*;
use sysgrad_config::{ArrayConfig, Backward, BufferDepths, NumberFormat, Pipelining};
use sysgrad_isa::host::Counter;
use sysgrad_oracle as oracle;
use sysgrad_rng::Rng;

const LINES: usize = 16;

fn cfg(rows: usize, cols: usize, pipelining: Pipelining) -> ArrayConfig {
    let format = NumberFormat {
        in_bits: 8,
        acc_bits: 20,
        frac_bits: 4,
    };
    let c = ArrayConfig::new(rows, cols, Backward::Interleaved, format)
        .unwrap()
        .with_pipelining(pipelining)
        .unwrap();
    c.with_buffers(BufferDepths {
        weights: LINES,
        activations: LINES,
        gradients: LINES,
        accumulators: LINES,
        ..c.buffers()
    })
    .unwrap()
}

/// Every buffer filled with random words over its whole width (so the
/// requantizer saturates both ways), a third of the data words <= 0.
fn filled(cfg: ArrayConfig, seed: u64) -> Accelerator {
    let mut acc = Accelerator::new(cfg);
    let mut rng = Rng::new(seed);
    for id in BufferId::ALL {
        let b = acc.buffer_mut(id);
        let bits = b.bits();
        for line in 0..b.depth() {
            for lane in 0..b.lanes() {
                let v = match rng.below(6) {
                    0 => 0,
                    1 => -rng.value(bits).abs(),
                    _ => rng.value(bits),
                };
                b.set(line, lane, v).unwrap();
            }
        }
    }
    acc
}

/// The words of every buffer, as the host reads them.
type Words = Vec<Vec<Vec<i64>>>;

fn words(acc: &Accelerator) -> Words {
    BufferId::ALL
        .iter()
        .map(|&id| {
            let b = acc.buffer(id);
            (0..b.depth())
                .map(|l| (0..b.lanes()).map(|k| b.get(l, k).unwrap()).collect())
                .collect()
        })
        .collect()
}

/// `docs/COMMANDS.md`'s ACT on `w`, written out: every read before any
/// write, lanes `>= lanes` untouched.
fn reference(w: &mut Words, fmt: NumberFormat, cmd: &Command) {
    let Command::Act {
        func,
        src,
        dst,
        dst_addr,
        count,
        mask,
        lanes,
    } = *cmd
    else {
        panic!("not an ACT: {cmd}")
    };
    let f = oracle::Format {
        in_bits: fmt.in_bits,
        acc_bits: fmt.acc_bits,
        frac_bits: fmt.frac_bits,
    };
    let to = match dst {
        DataBuffer::Activations => BufferId::Activations,
        DataBuffer::Gradients => BufferId::Gradients,
    } as usize;
    let before = w.clone();
    for t in 0..usize::from(count) {
        for l in 0..usize::from(lanes) {
            let acc = before[BufferId::Accumulators as usize][usize::from(src) + t][l];
            let v = oracle::requantize(acc.into(), f) as i64;
            let out = match func {
                ActFunction::Identity => v,
                ActFunction::Relu => {
                    if v > 0 {
                        v
                    } else {
                        0
                    }
                }
                ActFunction::ReluGrad => {
                    let m = before[BufferId::Activations as usize][usize::from(mask) + t][l];
                    if m > 0 {
                        v
                    } else {
                        0
                    }
                }
            };
            w[to][usize::from(dst_addr) + t][l] = out;
        }
    }
}

fn act(
    func: ActFunction,
    (src, dst, dst_addr, count): (u16, DataBuffer, u16, u16),
    mask: u16,
    lanes: usize,
) -> Command {
    Command::Act {
        func,
        src,
        dst,
        dst_addr,
        count,
        mask,
        lanes: lanes as u16,
    }
}

#[test]
fn act_requantizes_then_applies_its_function_to_its_lanes_only() {
    use ActFunction::*;
    use DataBuffer::*;
    for (rows, cols) in [(4, 6), (6, 4), (1, 1)] {
        for pipelining in [Pipelining::None, Pipelining::Dense] {
            let cfg = cfg(rows, cols, pipelining);
            let prog = [
                act(Identity, (0, Activations, 8, 3), 0, rows),
                act(
                    Relu,
                    (3, Activations, 11, 4),
                    0,
                    rows.saturating_sub(1).max(1),
                ),
                act(Relu, (5, Gradients, 2, 5), 0, cols),
                // The gate reads the ReLU output the second ACT wrote.
                act(ReluGrad, (7, Gradients, 9, 4), 11, cols.min(rows)),
                act(ReluGrad, (0, Gradients, 0, 2), 3, 1),
            ];
            let mut acc = filled(cfg, 7 + rows as u64);
            let mut want = words(&acc);
            for cmd in &prog {
                reference(&mut want, cfg.format(), cmd);
            }
            let mut words_prog = encode_program(&prog);
            words_prog.extend(Command::Halt.encode());
            acc.run(&words_prog).unwrap();
            assert_eq!(words(&acc), want, "{rows}x{cols} {pipelining:?}");
            let lines: u64 = prog.iter().map(|c| c.arg("count")).sum();
            let lane_words: u64 = prog.iter().map(|c| c.arg("count") * c.arg("lanes")).sum();
            assert_eq!(acc.control().act_cycles, lines);
            assert_eq!(acc.control().act_words, lane_words);
            assert_eq!(acc.counter(Counter::ActCycles), Some(lines));
            assert_eq!(acc.counter(Counter::ActWords), Some(lane_words));
            assert_eq!(acc.control().requant_cycles, 0);
        }
    }
}

/// `none`: two decode cycles and `count` IDLE cycles (COMMANDS.md, Cycles);
/// `dense`: its entry runs as a REQUANT's, so `ACT` (two words) costs what
/// `SYNC; REQUANT` (two words, one entry) does.
#[test]
fn act_cycles_on_both_controllers() {
    for count in [1u16, 5, 16] {
        let a = Command::Act {
            func: ActFunction::Relu,
            src: 0,
            dst: DataBuffer::Activations,
            dst_addr: 0,
            count,
            mask: 0,
            lanes: 3,
        };
        let run = |pipelining, prog: &[Command]| {
            let mut acc = Accelerator::new(cfg(4, 6, pipelining));
            acc.run(&encode_program(prog)).unwrap();
            acc
        };
        let none = run(Pipelining::None, &[a, Command::Halt]);
        let n = u64::from(count);
        assert_eq!(none.driver().cycle(), 2 + n + 1);
        assert_eq!(none.idle_cycles(), none.driver().cycle());
        assert_eq!(none.control().decode_cycles, 3);
        assert_eq!(none.control().per_command["ACT"].cycles, 2 + n);
        let requant = Command::Requant {
            src: 0,
            dst: DataBuffer::Activations,
            dst_addr: 0,
            count,
        };
        let dense = run(Pipelining::Dense, &[a, Command::Halt]);
        let like = run(Pipelining::Dense, &[Command::Sync, requant, Command::Halt]);
        assert_eq!(
            dense.driver().cycle(),
            like.driver().cycle(),
            "count {count}"
        );
        assert_eq!(dense.idle_cycles(), like.idle_cycles());
        assert_eq!(dense.control().act_cycles, n);
        assert_eq!(dense.control().decode_cycles, 3);
        // The data engine waits nothing here: one line a cycle, one cycle
        // for the last write to land, behind the two decode cycles.
        assert!(dense.driver().cycle() <= none.driver().cycle() + 2);
    }
}

/// Each check of ACT, in `ErrorCode::CHECK_ORDER`, on both controllers;
/// a faulting ACT writes nothing.
#[test]
fn act_errors_in_the_documented_order() {
    use ActFunction::*;
    use DataBuffer::*;
    use ErrorCode::*;
    let (rows, cols) = (4, 6);
    let full = |func, dst, lanes: u16, src: u16, dst_addr: u16, mask: u16, count: u16| {
        Command::Act {
            func,
            src,
            dst,
            dst_addr,
            count,
            mask,
            lanes,
        }
        .encode()
    };
    let l = LINES as u16;
    let mut code3 = full(Relu, Activations, 1, 0, 0, 0, 1);
    code3[0] |= sysgrad_isa::command::field::ACT_FUNC.put(3);
    let cases: Vec<(Vec<u64>, ErrorCode)> = vec![
        (code3, BadFunction),
        // The gate into activations comes before its zero count.
        (full(ReluGrad, Activations, 1, 0, 0, 0, 0), BadFunction),
        (full(Relu, Activations, 1, 0, 0, 0, 0), ZeroSize),
        (full(Relu, Activations, 0, 0, 0, 0, 1), ZeroSize),
        (full(Relu, Activations, rows + 1, 0, 0, 0, 1), TileTooLarge),
        (full(Relu, Gradients, cols + 1, 0, 0, 0, 1), TileTooLarge),
        // The gate reads as many lanes of its mask (R = 4 < C = 6).
        (
            full(ReluGrad, Gradients, rows + 1, 0, 0, 0, 1),
            TileTooLarge,
        ),
        (full(Relu, Gradients, cols, l, 0, 0, 1), AddressRange),
        (full(Relu, Gradients, cols, 0, l - 1, 0, 2), AddressRange),
        (
            full(ReluGrad, Gradients, rows, 0, 0, l - 2, 3),
            AddressRange,
        ),
    ];
    for pipelining in [Pipelining::None, Pipelining::Dense] {
        for (bad, code) in &cases {
            let mut acc = filled(cfg(rows as usize, cols as usize, pipelining), 3);
            let before = words(&acc);
            let mut prog = encode_program(&[Command::Sync]);
            prog.extend(bad);
            prog.extend(Command::Halt.encode());
            let fault = acc.run(&prog).unwrap_err();
            assert_eq!(
                (fault.code, fault.pc),
                (*code, 1),
                "{pipelining:?} {bad:x?}"
            );
            assert_eq!(words(&acc), before);
            assert_eq!(acc.control().act_cycles, 0);
        }
        // The edges are allowed: every lane of the destination, the last
        // lines of each buffer, a mask that is not read.
        let mut acc = Accelerator::new(cfg(rows as usize, cols as usize, pipelining));
        let mut ok = full(Relu, Activations, rows, l - 1, l - 1, l, 1);
        ok.extend(full(ReluGrad, Gradients, rows, 0, 0, l - 3, 3));
        ok.extend(full(Relu, Gradients, cols, 0, 0, 0, 1));
        ok.extend(Command::Halt.encode());
        acc.run(&ok).unwrap();
    }
}
