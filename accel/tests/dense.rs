//! Programs whose later commands read what earlier ones wrote back: the
//! dense controller overlaps commands, so a load must not read weight lines
//! whose updated values are still on their way out of the array, nor a
//! stream read lines REQUANT has not written yet. The `none` controller
//! runs one command at a time and is the reference: every buffer (words
//! and access counts) must end the same on both.

use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_accel::*;
use sysgrad_config::{ArrayConfig, Backward, BufferDepths, NumberFormat, Pipelining};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_isa::BackwardMode;
use sysgrad_rng::Rng;

fn cfg(rows: usize, cols: usize, pipelining: Pipelining) -> ArrayConfig {
    cfg_with(rows, cols, Backward::Interleaved, pipelining)
}

fn cfg_with(rows: usize, cols: usize, backward: Backward, pipelining: Pipelining) -> ArrayConfig {
    let format = NumberFormat {
        in_bits: 8,
        acc_bits: 24,
        frac_bits: 4,
    };
    ArrayConfig::new(rows, cols, backward, format)
        .unwrap()
        .with_pipelining(pipelining)
        .unwrap()
}

/// `steps` training steps of one FC layer (m x k, batch n) in one program,
/// each step's forward pass reading the weights the last one updated.
fn steps(cfg: &ArrayConfig, (m, k, n): (usize, usize, usize), steps: usize) -> Accelerator {
    let layer = FcLayer::new(cfg, m, k, n);
    let mut rng = Rng::new(7);
    let mut random = |r, c| Array2::from_shape_fn((r, c), |_| rng.value(6));
    let mut acc = Accelerator::new(*cfg);
    let (w, x, dy) = (random(m, k), random(k, n), random(m, n));
    layer
        .w
        .store(acc.buffer_mut(BufferId::Weights), w.view())
        .unwrap();
    layer
        .x
        .store(acc.buffer_mut(BufferId::Activations), x.view())
        .unwrap();
    layer
        .dy
        .store(acc.buffer_mut(BufferId::Gradients), dy.view())
        .unwrap();
    let mut prog = Vec::new();
    for _ in 0..steps {
        let step = compile_layer(
            cfg,
            &layer,
            Backward::Interleaved,
            DwSink::Update { lr_shift: 3 },
        );
        prog.extend(step.unwrap());
        assert_eq!(prog.pop(), Some(Command::Halt));
    }
    prog.push(Command::Halt);
    acc.run(&encode_program(&prog)).unwrap();
    acc
}

fn assert_same_buffers(dense: &Accelerator, none: &Accelerator, what: &str) {
    for id in BufferId::ALL {
        assert!(
            dense.buffer(id) == none.buffer(id),
            "{what}: the {id:?} buffer differs between dense and none"
        );
    }
}

#[test]
fn later_steps_read_the_weights_earlier_steps_wrote_back() {
    // One tile (the same lines reloaded at once), two tiles along K, and
    // tiles along both M and K.
    for (rows, cols, layer) in [(4, 4, (3, 4, 2)), (4, 4, (4, 7, 3)), (3, 2, (5, 7, 1))] {
        let dense = steps(&cfg(rows, cols, Pipelining::Dense), layer, 3);
        let none = steps(&cfg(rows, cols, Pipelining::None), layer, 3);
        let what = format!("{rows}x{cols}, layer {layer:?}");
        assert_same_buffers(&dense, &none, &what);
        assert!(
            dense.driver().cycle() < none.driver().cycle(),
            "{what}: dense {} cycles, none {}",
            dense.driver().cycle(),
            none.driver().cycle()
        );
    }
}

/// A tile loaded and never used, between a tile updated at line 7 and a
/// second load of line 7: `none` wrote the updated tile back when the
/// unused one came in, so the second load must read the new weights (a
/// random program found this; the update after it makes the last tile
/// dirty, so that what it read reaches the buffer).
#[test]
fn a_load_after_an_unused_tile_reads_the_weights_written_back() {
    let tile = |addr| Command::LoadW { addr, m: 1, k: 1 };
    let prog = [
        tile(7),
        Command::Backward {
            mode: BackwardMode::Dw,
            dy_addr: 0,
            x_addr: 0,
            dx_addr: 0,
            n: 1,
            accumulate: false,
            window: false,
        },
        Command::Update { lr_shift: 0 },
        tile(0),
        tile(7),
        Command::Update { lr_shift: 1 },
        Command::FlushW,
        Command::Halt,
    ];
    let shape = (1, 4, Backward::Interleaved);
    let run = |pipelining| {
        let mut acc = filled(small_config(shape, pipelining), 3416142979580);
        acc.run(&encode_program(&prog)).unwrap();
        acc
    };
    let (dense, none) = (run(Pipelining::Dense), run(Pipelining::None));
    let before = filled(small_config(shape, Pipelining::None), 3416142979580);
    let line7 = |acc: &Accelerator| acc.buffer(BufferId::Weights).get(7, 0).unwrap();
    assert_ne!(
        line7(&none),
        line7(&before),
        "the first update changed line 7"
    );
    assert_same_buffers(&dense, &none, "unused tile between two loads of line 7");
}

/// COMMANDS.md (dense decoder): a REQUANT uses no weight, so it is never
/// marked swap and a tile loaded before it stays unused; the stop then
/// swaps it in and loads zeros, R slots more than when a FORWARD used it.
#[test]
fn a_requant_leaves_a_loaded_tile_unused() {
    use sysgrad_isa::{host::Counter, DataBuffer};
    for (rows, cols) in [(4, 4), (3, 5), (8, 8)] {
        let cfg = cfg(rows, cols, Pipelining::Dense);
        let load = Command::LoadW {
            addr: 0,
            m: cols as u16,
            k: rows as u16,
        };
        let requant = Command::Requant {
            src: 0,
            dst: DataBuffer::Activations,
            dst_addr: 0,
            count: 1,
        };
        let forward = Command::Forward {
            x_addr: 0,
            y_addr: 0,
            n: 2,
            accumulate: false,
            window: false,
        };
        let counts = |prog: &[Command]| {
            let mut acc = Accelerator::new(cfg);
            acc.run(&encode_program(prog)).unwrap();
            let c = |c| acc.counter(c).unwrap();
            (c(Counter::LoadSlots), c(Counter::LoadCycles))
        };
        let r = rows as u64;
        let what = format!("{rows}x{cols}");
        let (slots, _) = counts(&[load, forward, Command::Halt]);
        assert_eq!(slots, r, "{what}: LOAD_W; FORWARD; HALT");
        let alone = counts(&[load, Command::Halt]);
        assert_eq!(alone.0, 2 * r, "{what}: LOAD_W; HALT");
        let (slots, cycles) = counts(&[load, requant, Command::Halt]);
        assert_eq!(slots, 2 * r, "{what}: LOAD_W; REQUANT; HALT");
        assert_eq!(
            cycles, alone.1,
            "{what}: load cycles as without the REQUANT"
        );
    }
}

/// Lines per buffer in the random programs: few, so that commands read
/// and write each other's lines.
const LINES: usize = 12;

fn small_config((rows, cols, backward): Shape, pipelining: Pipelining) -> ArrayConfig {
    let c = cfg_with(rows, cols, backward, pipelining);
    c.with_buffers(BufferDepths {
        weights: LINES,
        activations: LINES,
        gradients: LINES,
        accumulators: LINES,
        ..c.buffers()
    })
    .unwrap()
}

fn line() -> impl Strategy<Value = u16> {
    0..LINES as u16
}

fn stream_len() -> impl Strategy<Value = u16> {
    1..4u16
}

fn forward() -> impl Strategy<Value = Command> {
    (line(), line(), stream_len(), any::<bool>()).prop_map(|(x_addr, y_addr, n, accumulate)| {
        Command::Forward {
            x_addr,
            y_addr,
            n,
            accumulate,
            window: false,
        }
    })
}

fn backward() -> impl Strategy<Value = Command> {
    let mode = prop::sample::select(BackwardMode::ALL.to_vec());
    (mode, line(), line(), line(), stream_len(), any::<bool>()).prop_map(
        |(mode, dy_addr, x_addr, dx_addr, n, accumulate)| Command::Backward {
            mode,
            dy_addr,
            x_addr,
            dx_addr,
            n,
            accumulate,
            window: false,
        },
    )
}

/// What consumes a tile's dW before the next tile comes (on `none`, dW
/// would otherwise carry over to it; `docs/COMMANDS.md`, Differences).
fn sink() -> impl Strategy<Value = Command> {
    prop_oneof![
        (0..8u8).prop_map(|lr_shift| Command::Update { lr_shift }),
        line().prop_map(|dw_addr| Command::Drain { dw_addr }),
    ]
}

fn requant() -> impl Strategy<Value = Command> {
    let dst = prop::sample::select(vec![DataBuffer::Activations, DataBuffer::Gradients]);
    (line(), dst, line(), 1..4u16).prop_map(|(src, dst, dst_addr, count)| Command::Requant {
        src,
        dst,
        dst_addr,
        count,
    })
}

/// ACT of any function into either buffer, up to 4 lanes (more than a
/// small array's lanes, or a gate into activations, faults on both).
fn act() -> impl Strategy<Value = Command> {
    let dst = prop::sample::select(vec![DataBuffer::Activations, DataBuffer::Gradients]);
    let func = prop::sample::select(ActFunction::ALL.to_vec());
    (func, line(), dst, line(), 1..4u16, line(), 1..=4u16).prop_map(
        |(func, src, dst, dst_addr, count, mask, lanes)| Command::Act {
            func,
            src,
            dst,
            dst_addr,
            count,
            mask,
            lanes,
        },
    )
}

/// One weight tile's commands: LOAD_W, forward passes, backward passes
/// closed by a sink, REQUANTs, ACTs and SYNCs in between, maybe FLUSH_W.
fn block(rows: usize, cols: usize) -> impl Strategy<Value = Vec<Command>> {
    let load = (line(), 1..=cols as u16, 1..=rows as u16).prop_map(|(addr, m, k)| Command::LoadW {
        addr,
        m,
        k,
    });
    let backwards = prop::collection::vec(backward(), 0..3);
    // An UPDATE right after LOAD_W (dW is 0 then on both) makes the tile
    // dirty before any command used it.
    let early_update = any::<bool>();
    let extra = prop::collection::vec(
        prop_oneof![requant(), act(), Just(Command::Sync), forward()],
        0..3,
    );
    (
        load,
        prop::collection::vec(forward(), 0..3),
        backwards,
        sink(),
        extra,
        any::<bool>(),
        early_update,
    )
        .prop_map(|(load, fwd, bwd, sink, extra, flush, early)| {
            let mut v = vec![load];
            if early {
                v.push(Command::Update { lr_shift: 1 });
            }
            v.extend(fwd);
            if !bwd.is_empty() {
                v.extend(bwd);
                v.push(sink);
            }
            v.extend(extra);
            if flush {
                v.push(Command::FlushW);
            }
            v
        })
}

/// Rows, columns and backward schedule of an array (IL commands fault
/// on a sequential one, which the programs then test too).
type Shape = (usize, usize, Backward);

fn program() -> impl Strategy<Value = (Shape, Vec<Command>)> {
    let backward = prop::sample::select(vec![Backward::Interleaved, Backward::Sequential]);
    (1..=4usize, 1..=4usize, backward).prop_flat_map(|shape| {
        let blocks = prop::collection::vec(block(shape.0, shape.1), 1..5);
        (Just(shape), blocks).prop_map(|(shape, blocks)| {
            let mut prog: Vec<Command> = blocks.concat();
            prog.push(Command::Halt);
            (shape, prog)
        })
    })
}

/// Every buffer filled with random words of its width.
fn filled(cfg: ArrayConfig, seed: u64) -> Accelerator {
    let mut acc = Accelerator::new(cfg);
    let mut rng = Rng::new(seed);
    for id in BufferId::ALL {
        let b = acc.buffer_mut(id);
        let bits = b.bits().min(10);
        for line in 0..b.depth() {
            for lane in 0..b.lanes() {
                b.set(line, lane, rng.value(bits)).unwrap();
            }
        }
    }
    acc
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn random_programs_end_alike_on_dense_and_none(
        (shape, prog) in program(),
        seed in any::<u64>(),
    ) {
        let words = encode_program(&prog);
        let mut end = Vec::new();
        for pipelining in [Pipelining::Dense, Pipelining::None] {
            let mut acc = filled(small_config(shape, pipelining), seed);
            let outcome = acc.run(&words);
            end.push((outcome, acc));
        }
        let (none_outcome, none) = end.pop().unwrap();
        let (dense_outcome, dense) = end.pop().unwrap();
        prop_assert_eq!(dense_outcome, none_outcome, "{:?}", prog);
        for id in BufferId::ALL {
            prop_assert!(
                dense.buffer(id) == none.buffer(id),
                "the {:?} buffer differs after {:?}", id, prog
            );
        }
    }
}
