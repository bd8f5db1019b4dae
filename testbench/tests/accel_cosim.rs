//! The whole accelerator (`sa_accel`, docs/HOST.md) against the emulator's
//! `Accelerator`, driven over its AXI4-Lite and AXI4-Stream ports with
//! random back-pressure. Compared: the array's inputs in every run cycle,
//! STATUS, PC, every counter and the buffers read back.
//!
//! * a 100 x 70 FC training step (N = 16) on 8 x 8 (mid_8x8 with small
//!   buffers), interleaved and sequential schedules, update and drain, and
//!   REQUANT of the result; single commands in every BACKWARD mode; runs
//!   one after another;
//! * a non-square sequential array (3 x 5): a training step, NOT_INTERLEAVED;
//! * bad commands: the same fault code and PC as the emulator;
//! * DMA errors (RANGE, BAD_TARGET, VALUE with saturation, BUSY) and the
//!   register file (ID, SHAPE, SLVERR, read-back, CLEAR).
//!
//! Two Verilator builds (about a minute each, cached under target/cosim);
//! the runs take seconds. A missing Verilator fails the tests with the
//! package to install; nothing is skipped.

mod common;

use ndarray::Array2;
use std::sync::OnceLock;
use sysgrad_accel::*;
use sysgrad_config::{fixed, ArrayConfig, Backward};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_isa::host::{
    self, reg, status, Counter, CounterReference, DmaError, DmaTarget, DMA_READ, DMA_WRITE,
};
use sysgrad_testbench::accel::{self, AccelModel, AccelReport, HostScript, Setup};

/// AXI `SLVERR`.
const SLVERR: u32 = 2;
/// Back-pressure of the training steps.
const GAP: u32 = 20;

/// One build per configuration and test binary; the tests share it.
fn model() -> &'static AccelModel {
    static MODEL: OnceLock<AccelModel> = OnceLock::new();
    MODEL.get_or_init(|| accel::build(&common::square()).unwrap_or_else(|e| panic!("{e}")))
}

fn seq_model() -> &'static AccelModel {
    static MODEL: OnceLock<AccelModel> = OnceLock::new();
    MODEL.get_or_init(|| accel::build(&common::sequential()).unwrap_or_else(|e| panic!("{e}")))
}

fn work(name: &str) -> std::path::PathBuf {
    accel::work_dir(&common::square(), name)
}

/// Deterministic data over the whole range with the extremes mixed in.
fn matrix(rows: usize, cols: usize, bits: u32, seed: u64) -> Array2<i64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    Array2::from_shape_fn((rows, cols), |_| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        match (s >> 60) % 8 {
            0 => fixed::min_of(bits),
            1 => fixed::max_of(bits),
            _ => fixed::sat(((s >> 20) as i64 % (1 << bits)) - (1 << (bits - 1)), bits),
        }
    })
}

fn cosim(m: &AccelModel, setup: &Setup, program: &[u64], seed: u64, gap: u32) -> AccelReport {
    m.cosim(setup, program, seed, gap)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Counters the co-simulation compares: the emulator's and the host's
/// tally of DMA beats (not the ones that depend on the host's timing).
fn compared_counters() -> usize {
    CounterReference::Emulator.count() + CounterReference::HostTally.count()
}

/// A layer with W, X and dY in their buffers, compared after the step: W
/// (updated), Y, dX and, when drained, dW^T. The lanes no command touches
/// (past the last row of a partial block, and in the accumulators
/// everywhere before the run) hold junk, which must survive.
fn layer_setup(c: &ArrayConfig, layer: &FcLayer, sink: DwSink, seed: u64) -> Setup {
    let (b, aw) = (c.format().in_bits, c.format().acc_bits);
    let acc_lanes = c.rows().max(c.cols());
    let junk: Vec<Vec<i64>> = matrix(layer.dw_t.end(), acc_lanes, aw, seed + 3)
        .rows()
        .into_iter()
        .map(|r| r.to_vec())
        .collect();
    let mut setup = Setup::default();
    setup
        .fill_blocked_padded(
            BufferId::Weights,
            &layer.w,
            matrix(layer.m, layer.k, b, seed).view(),
            fixed::max_of(b) - 1,
        )
        .fill_blocked_padded(
            BufferId::Activations,
            &layer.x,
            matrix(layer.k, layer.n, b, seed + 1).view(),
            fixed::min_of(b) + 2,
        )
        .fill_blocked_padded(
            BufferId::Gradients,
            &layer.dy,
            matrix(layer.m, layer.n, b, seed + 2).view(),
            3,
        )
        .fill(BufferId::Accumulators, 0, junk)
        .compare_blocked(BufferId::Weights, &layer.w)
        .compare_blocked(BufferId::Accumulators, &layer.y)
        .compare_blocked(BufferId::Accumulators, &layer.dx);
    if sink == DwSink::Drain {
        setup.compare_blocked(BufferId::Accumulators, &layer.dw_t);
    }
    setup
}

/// Buffer words `setup` reads back.
fn words(c: &ArrayConfig, setup: &Setup) -> usize {
    setup
        .compare
        .iter()
        .map(|r| r.count * r.buffer.target().lanes(c))
        .sum()
}

fn training_step(
    m: &AccelModel,
    (rows, cols, n): (usize, usize, usize),
    schedule: Backward,
    sink: DwSink,
    seed: u64,
    packed: bool,
) {
    let c = m.cfg;
    let layer = FcLayer::new(&c, rows, cols, n);
    let mut setup = layer_setup(&c, &layer, sink, seed);
    setup.packed = packed;
    let prog = encode_program(&compile_layer(&c, &layer, schedule, sink).unwrap());
    let rep = cosim(m, &setup, &prog, seed, GAP);
    assert_eq!(rep.state, State::Halted);
    assert_eq!(rep.counters_compared, compared_counters());
    assert_eq!(rep.words_compared, words(&c, &setup));
    if packed {
        // Several lanes per beat: fewer beats than words read back.
        assert!(rep.beats_out < rep.words_compared as u64, "{rep:?}");
    }
    // The back-pressure really happened.
    let get = |k: Counter| rep.counter(k).unwrap();
    assert!(get(Counter::DmaInStalls) > 0 && get(Counter::DmaOutStalls) > 0);
    eprintln!(
        "{} {rows}x{cols} N={n} {schedule:?} {sink:?}: {} run cycles, {} host cycles, {} words compared",
        c.tag(),
        rep.run_cycles,
        rep.host_cycles,
        rep.words_compared
    );
}

const LAYER: (usize, usize, usize) = (100, 70, 16);

#[test]
#[ignore = "needs verilator"]
fn interleaved_training_step_matches_the_emulator() {
    let sink = DwSink::Update { lr_shift: 12 };
    // Data moved in packed beats (4 lanes of 16 bits per beat).
    training_step(model(), LAYER, Backward::Interleaved, sink, 11, true);
}

#[test]
#[ignore = "needs verilator"]
fn sequential_training_step_matches_the_emulator() {
    // On the interleaved array; lr_shift 0: most updated weights saturate.
    let sink = DwSink::Update { lr_shift: 0 };
    training_step(model(), LAYER, Backward::Sequential, sink, 21, false);
}

#[test]
#[ignore = "needs verilator"]
fn drained_gradients_and_requant_match_the_emulator() {
    let m = model();
    training_step(m, LAYER, Backward::Interleaved, DwSink::Drain, 31, false);

    // REQUANT of the last Y line right after the FORWARD that writes it
    // (the controller must forward the line being written), then all of Y
    // into the activations (the next layer's X), then SYNC.
    let c = m.cfg;
    let layer = FcLayer::new(&c, LAYER.0, LAYER.1, LAYER.2);
    let next_x = Blocked {
        base: layer.x.end(),
        rows: layer.m,
        cols: layer.n,
        lanes: c.rows(),
    };
    let spare_dy = layer.dy.end();
    let mut prog = compile_forward(&c, &layer).unwrap();
    prog.extend([
        Command::Requant {
            src: layer.y.end() as u16 - 1,
            dst: DataBuffer::Gradients,
            dst_addr: spare_dy as u16,
            count: 1,
        },
        Command::Requant {
            src: layer.y.base as u16,
            dst: DataBuffer::Activations,
            dst_addr: next_x.base as u16,
            count: layer.y.lines() as u16,
        },
        Command::Requant {
            src: layer.y.base as u16,
            dst: DataBuffer::Gradients,
            dst_addr: spare_dy as u16 + 1,
            count: 3,
        },
        Command::Sync,
        Command::Halt,
    ]);
    let mut setup = layer_setup(&c, &layer, DwSink::Drain, 41);
    setup
        .compare_blocked(BufferId::Activations, &next_x)
        .compare(BufferId::Gradients, spare_dy, 4);
    let rep = cosim(m, &setup, &encode_program(&prog), 41, GAP);
    assert_eq!(rep.state, State::Halted);
}

/// Every BACKWARD mode on its own, n = 1 passes, REQUANT of the dX line
/// just written, accumulation into fresh results, the largest lr_shift.
#[test]
#[ignore = "needs verilator"]
fn single_commands_match_the_emulator() {
    let m = model();
    let c = m.cfg;
    let layer = FcLayer::new(&c, 13, 11, 6);
    let bwd = |mode, n, dx_addr, accumulate| Command::Backward {
        mode,
        dy_addr: 0,
        x_addr: 2,
        dx_addr,
        n,
        accumulate,
        window: false,
    };
    let prog = [
        Command::LoadW {
            addr: 0,
            m: 8,
            k: 8,
        },
        bwd(BackwardMode::Dx, 1, 300, false),
        Command::Requant {
            src: 300,
            dst: DataBuffer::Gradients,
            dst_addr: 500,
            count: 1,
        },
        bwd(BackwardMode::Dw, 3, 0, false),
        bwd(BackwardMode::Dx, 4, 301, true),
        bwd(BackwardMode::Sequential, 1, 301, true),
        bwd(BackwardMode::Interleaved, 5, 305, false),
        Command::Drain { dw_addr: 320 },
        bwd(BackwardMode::Dw, 2, 0, false),
        Command::Update { lr_shift: 63 },
        Command::Forward {
            x_addr: 0,
            y_addr: 310,
            n: 1,
            accumulate: false,
            window: false,
        },
        Command::Forward {
            x_addr: 1,
            y_addr: 310,
            n: 1,
            accumulate: true,
            window: false,
        },
        Command::LoadW {
            addr: 0,
            m: 8,
            k: 8,
        },
        Command::Update { lr_shift: 1 },
        Command::LoadW {
            addr: 8,
            m: 5,
            k: 3,
        },
        Command::Forward {
            x_addr: 3,
            y_addr: 312,
            n: 2,
            accumulate: true,
            window: false,
        },
        bwd(BackwardMode::Dw, 2, 0, false),
        Command::Update { lr_shift: 4 },
        Command::FlushW,
        Command::Halt,
    ];
    let mut setup = layer_setup(&c, &layer, DwSink::Drain, 51);
    let junk = matrix(40, 8, c.format().acc_bits, 52);
    setup
        .fill(
            BufferId::Accumulators,
            300,
            junk.rows().into_iter().map(|r| r.to_vec()).collect(),
        )
        .compare(BufferId::Accumulators, 300, 40)
        .compare(BufferId::Gradients, 500, 1)
        .compare(BufferId::Weights, 0, 16);
    // Heavy back-pressure.
    let rep = cosim(m, &setup, &encode_program(&prog), 51, 60);
    assert_eq!(rep.state, State::Halted);
}

#[test]
#[ignore = "needs verilator"]
fn sequential_array_matches_the_emulator() {
    let m = seq_model();
    let sink = DwSink::Update { lr_shift: 1 };
    training_step(m, (23, 17, 9), Backward::Sequential, sink, 61, false);
    // Packed: 10 lanes of 6 bits per beat; accumulators 4 lanes of 16 bits,
    // so a line of 5 takes a full beat and a partial one.
    training_step(
        m,
        (23, 17, 9),
        Backward::Sequential,
        DwSink::Drain,
        62,
        true,
    );
    // BACKWARD INTERLEAVED is refused on this array.
    let il = Command::Backward {
        mode: BackwardMode::Interleaved,
        dy_addr: 0,
        x_addr: 0,
        dx_addr: 0,
        n: 2,
        accumulate: false,
        window: false,
    };
    let load = Command::LoadW {
        addr: 0,
        m: 5,
        k: 3,
    };
    let prog = encode_program(&[load, il, Command::Halt]);
    let rep = cosim(m, &Setup::default(), &prog, 63, GAP);
    assert!(
        matches!(rep.state, State::Faulted(f) if f.code == ErrorCode::NotInterleaved && f.pc == 1),
        "{:?}",
        rep.state
    );
}

#[test]
#[ignore = "needs verilator"]
fn bad_commands_fault_like_the_emulator() {
    let c = common::square();
    let load = |addr, m, k| Command::LoadW { addr, m, k };
    let fwd = |x_addr, y_addr, n| Command::Forward {
        x_addr,
        y_addr,
        n,
        accumulate: false,
        window: false,
    };
    let e = |cmds: &[Command]| encode_program(cmds);
    let depth = c.buffers().weights as u16;
    // A good prefix so that the fault comes after real work.
    let prefix = e(&[load(0, 8, 8), fwd(0, 0, 5), Command::Update { lr_shift: 2 }]);
    let bwd = Command::Backward {
        mode: BackwardMode::Dx,
        dy_addr: 0,
        x_addr: 0,
        dx_addr: 0,
        n: 4,
        accumulate: false,
        window: false,
    }
    .encode();
    use ErrorCode::*;
    let cases: Vec<(&str, Vec<u64>, ErrorCode)> = vec![
        ("unknown opcode", vec![0x42 << 56], UnknownOpcode),
        ("zeroed memory", vec![0], UnknownOpcode),
        (
            "reserved bits",
            vec![Command::Halt.encode()[0] | 1 << 20],
            ReservedBits,
        ),
        ("zero size", e(&[load(0, 0, 4)]), ZeroSize),
        ("zero n", e(&[fwd(0, 0, 0)]), ZeroSize),
        ("tile too large", e(&[load(0, 9, 4)]), TileTooLarge),
        ("lr shift", e(&[Command::Update { lr_shift: 64 }]), LrShift),
        ("address range", e(&[load(depth - 4, 8, 8)]), AddressRange),
        ("y address range", e(&[fwd(0, 2047, 2)]), AddressRange),
        ("weight overlap", e(&[load(4, 8, 8)]), WeightOverlap),
        ("program end", vec![], ProgramEnd),
        ("backward cut", bwd[..1].to_vec(), ProgramEnd),
    ];
    let mut setup = Setup::default();
    setup
        .fill(
            BufferId::Weights,
            0,
            (0..16).map(|i| vec![i * 100 - 700; 8]).collect(),
        )
        .fill(
            BufferId::Activations,
            0,
            (0..8).map(|i| vec![3 * i - 11; 8]).collect(),
        )
        .compare(BufferId::Weights, 0, 16)
        .compare(BufferId::Accumulators, 0, 8);
    for (i, (what, bad, code)) in cases.into_iter().enumerate() {
        let prog = [prefix.clone(), bad].concat();
        let rep = model()
            .cosim(&setup, &prog, 100 + i as u64, 10)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        match rep.state {
            State::Faulted(f) => {
                assert_eq!((f.code, f.pc), (code, prefix.len()), "{what}");
                assert_eq!(rep.pc as usize, prefix.len(), "{what}");
                assert_ne!(rep.status & status::FAULTED, 0, "{what}");
            }
            s => panic!("{what}: emulator state {s:?}"),
        }
    }
    // No tile at all, in the first command.
    let rep = cosim(model(), &setup, &e(&[fwd(0, 0, 4)]), 7, 10);
    assert!(matches!(rep.state, State::Faulted(f) if f.code == NoTile && f.pc == 0));
}

fn status_of(res: &accel::HostResult, r: accel::RegRead) -> u32 {
    res.value(r).expect("STATUS read answered OKAY")
}
fn dma_error(s: u32) -> u32 {
    (s >> status::DMA_ERROR_SHIFT) & 0xff
}

#[test]
#[ignore = "needs verilator"]
fn dma_errors_are_reported_and_nothing_moves() {
    let c = common::square();
    let m = model();
    let aw = c.format().acc_bits;
    let mut s = HostScript::new(&c);
    // Known contents first.
    s.dma_write(DmaTarget::Weights, 0, &(1..=16).collect::<Vec<_>>());
    let ok = s.read_reg(reg::STATUS);
    // RANGE: past the depth, and zero lines; nothing moves.
    let depth = c.buffers().weights as u32;
    s.dma_request(DmaTarget::Weights.code(), depth - 1, 2, DMA_WRITE);
    let range_past = s.read_reg(reg::STATUS);
    s.dma_request(DmaTarget::Weights.code(), 0, 0, DMA_READ);
    let range_zero = s.read_reg(reg::STATUS);
    // BAD_TARGET.
    s.dma_request(5, 0, 1, DMA_READ);
    let bad_target = s.read_reg(reg::STATUS);
    let in_before = s.beats_in();
    // VALUE: stored saturated, the transfer goes on.
    let big = [70000, -70000, 5, 32767, -32768, 32768, -32769, 9];
    s.dma_write(DmaTarget::Weights, 1, &big);
    let value = s.read_reg(reg::STATUS);
    let acc_big = [1i64 << 45, -(1i64 << 45), 1 << 38, 0, 0, 0, 0, -1];
    s.dma_write(DmaTarget::Accumulators, 3, &acc_big);
    let acc_value = s.read_reg(reg::STATUS);
    // The next accepted DMA clears the code.
    let back = s.dma_read(DmaTarget::Weights, 0, 2);
    let cleared = s.read_reg(reg::STATUS);
    let acc_back = s.dma_read(DmaTarget::Accumulators, 3, 1);
    // BUSY: a second DMA_CTRL while a read waits for m_axis; the running
    // transfer goes on. START is ignored meanwhile.
    s.dma_request(DmaTarget::Weights.code(), 0, 2, DMA_READ);
    s.write_reg(reg::DMA_CTRL, DMA_WRITE);
    let busy = s.read_reg(reg::STATUS);
    s.start();
    let start_during_dma = s.read_reg(reg::STATUS);
    let during = s.take_beats(16);
    s.poll();
    let after_busy = s.read_reg(reg::STATUS);
    let runs_before = s.read_reg(Counter::RunCycles.offset());
    // BUSY while the controller runs (a long FORWARD): nothing moves.
    let long = encode_program(&[
        Command::LoadW {
            addr: 0,
            m: 8,
            k: 8,
        },
        Command::Forward {
            x_addr: 0,
            y_addr: 0,
            n: 300,
            accumulate: false,
            window: false,
        },
        Command::Halt,
    ]);
    s.load_program(&long).start();
    s.write_reg(reg::DMA_CTRL, DMA_READ);
    // Cutting the running program short is refused too (it would end
    // before its HALT).
    s.write_reg(reg::PROG_LEN, 1);
    let busy_running = s.read_reg(reg::STATUS);
    s.poll();
    let after_run = s.read_reg(reg::STATUS);
    let counters = s.read_counters();
    let dir = work("dma");
    let res = m.run(&s, 5, 30, &dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(res.protocol_errors.is_empty(), "{:?}", res.protocol_errors);

    assert_eq!(dma_error(status_of(&res, ok)), 0);
    for (what, r, code) in [
        ("past the depth", range_past, DmaError::Range),
        ("zero lines", range_zero, DmaError::Range),
        ("bad target", bad_target, DmaError::BadTarget),
        ("weight value", value, DmaError::Value),
        ("accumulator value", acc_value, DmaError::Value),
        ("busy", busy, DmaError::Busy),
        ("busy, after", after_busy, DmaError::Busy),
        ("busy, running", busy_running, DmaError::Busy),
        ("busy, after the run", after_run, DmaError::Busy),
    ] {
        let st = status_of(&res, r);
        assert_eq!(dma_error(st), code as u32, "{what}: STATUS {st:#x}");
    }
    assert_eq!(dma_error(status_of(&res, cleared)), 0);
    let sat = |v: i64, b| fixed::sat(v, b);
    let lines = res.lines(back).unwrap();
    assert_eq!(lines[0], (1..=8).collect::<Vec<i64>>(), "line 0 kept");
    let want: Vec<i64> = big.iter().map(|v| sat(*v, c.format().in_bits)).collect();
    assert_eq!(lines[1], want, "saturated weights");
    let want: Vec<i64> = acc_big.iter().map(|v| sat(*v, aw)).collect();
    assert_eq!(
        res.lines(acc_back).unwrap()[0],
        want,
        "saturated accumulators"
    );
    // The transfer that was running when BUSY was refused went on.
    let during: Vec<i64> = res
        .stream(during)
        .unwrap()
        .beats
        .iter()
        .map(|b| *b as i64)
        .collect();
    assert_eq!(during[..8], lines[0][..]);
    assert_eq!(during[8..], lines[1][..]);
    assert!(res.streams.iter().all(|s| s.tlast_ok), "tlast");
    // The refused requests moved nothing.
    let counters = res.counters(counters).unwrap();
    let get = |k: Counter| counters.iter().find(|(c, _)| *c == k).unwrap().1;
    assert_eq!(get(Counter::DmaInBeats), in_before + 16 + long.len() as u64);
    assert_eq!(get(Counter::DmaOutBeats), 16 + 8 + 16);
    // START during the DMA did not run anything; the later START did.
    let st = status_of(&res, start_during_dma);
    let stopped = status::RUNNING | status::HALTED | status::FAULTED;
    assert_eq!(st & stopped, 0, "{st:#x}");
    assert_ne!(st & status::DMA_BUSY, 0, "{st:#x}");
    assert_eq!(status_of(&res, after_busy) & stopped, 0);
    assert_eq!(res.value(runs_before), Some(0));
    let st = status_of(&res, busy_running);
    assert_ne!(st & status::RUNNING, 0, "{st:#x}");
    let st = status_of(&res, after_run);
    assert_eq!(st & 0xff, status::HALTED, "{st:#x}");
    // START during the DMA and PROG_LEN during the run answered SLVERR.
    assert_eq!(
        res.write_errors,
        [(reg::CTRL, SLVERR), (reg::PROG_LEN, SLVERR)],
        "refused writes"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs verilator"]
fn register_file_answers_as_documented() {
    let c = common::square();
    let m = model();
    let mut s = HostScript::new(&c);
    let status0 = s.read_reg(reg::STATUS);
    let id = s.read_reg(reg::ID);
    let shape = s.read_reg(reg::SHAPE);
    let counter_width = s.read_reg(reg::COUNTER_WIDTH);
    let format = s.read_reg(reg::FORMAT);
    // Unmapped offsets and the write-only CTRL and DMA_CTRL.
    let unreadable: Vec<_> = [0x03C, 0x038, 0x0FC, 0xFFC, reg::CTRL, reg::DMA_CTRL]
        .map(|a| s.read_reg(a))
        .to_vec();
    let past_counters = s.read_reg(Counter::ALL.last().unwrap().offset() + 8);
    // Writes to read-only and unmapped offsets: SLVERR, no effect.
    s.write_reg(reg::ID, 0)
        .write_reg(reg::SHAPE, 0)
        .write_reg(reg::STATUS, 0xff)
        .write_reg(reg::COUNTER_WIDTH, 1)
        .write_reg(reg::FORMAT, 1)
        .write_reg(0x03C, 1)
        .write_reg(Counter::Commands.offset(), 5);
    let id_after = s.read_reg(reg::ID);
    // Read/write registers read back.
    s.write_reg(reg::PROG_LEN, 0x123)
        .write_reg(reg::PROG_START, 0x89)
        .write_reg(reg::DMA_ADDR, 0x45)
        .write_reg(reg::DMA_COUNT, 0x67);
    let rw = [
        reg::PROG_LEN,
        reg::PROG_START,
        reg::DMA_ADDR,
        reg::DMA_COUNT,
    ]
    .map(|a| s.read_reg(a));
    let depths: Vec<_> = DmaTarget::ALL
        .iter()
        .map(|t| {
            s.write_reg(reg::DMA_TARGET, t.code());
            (s.read_reg(reg::DMA_TARGET), s.read_reg(reg::DMA_DEPTH))
        })
        .collect();
    // Command memory reads back; CLEAR zeroes the counters.
    let words = encode_program(&[Command::Sync, Command::FlushW, Command::Halt]);
    s.load_program(&words);
    let prog_back = s.dma_read(DmaTarget::Commands, 0, words.len());
    let before_clear = s.read_counters();
    s.clear_counters();
    let after_clear = s.read_counters();
    let dir = work("regs");
    let res = m.run(&s, 9, 25, &dir).unwrap_or_else(|e| panic!("{e}"));

    assert_eq!(res.value(status0), Some(0), "STATUS after reset");
    assert_eq!(res.value(id), Some(host::ID_VALUE));
    // docs/HOST.md: rows [8:0], cols [17:9], in_bits [22:18], acc_bits [28:23], interleaved [29], dense [30].
    let want_shape = c.rows() as u32
        | (c.cols() as u32) << 9
        | c.format().in_bits << 18
        | c.format().acc_bits << 23
        | u32::from(c.interleaved()) << 29
        | u32::from(c.dense()) << 30;
    assert_eq!(
        host::shape::value(&c),
        want_shape,
        "the table agrees with the page"
    );
    assert_eq!(res.value(shape), Some(want_shape), "SHAPE");
    assert_eq!(res.value(counter_width), Some(48), "COUNTER_WIDTH");
    // docs/HOST.md: kind [0] (0: fixed point), stochastic [1], frac_bits [5:2].
    let want_format = c.format().frac_bits << 2;
    assert_eq!(
        host::format::value(&c),
        want_format,
        "the table agrees with the page"
    );
    assert_eq!(res.value(format), Some(want_format), "FORMAT");
    for r in unreadable.iter().chain([&past_counters]) {
        let v = res.reg(*r).unwrap();
        assert_eq!(v.resp, SLVERR, "read of {:#x}", v.addr);
        assert_eq!(v.data, 0, "read of {:#x}", v.addr);
    }
    let refused: Vec<u32> = res.write_errors.iter().map(|(a, _)| *a).collect();
    assert_eq!(
        refused,
        [
            reg::ID,
            reg::SHAPE,
            reg::STATUS,
            0x018,
            reg::FORMAT,
            0x03C,
            Counter::Commands.offset()
        ]
    );
    assert!(res.write_errors.iter().all(|(_, r)| *r == SLVERR));
    assert_eq!(res.value(id_after), Some(host::ID_VALUE));
    assert_eq!(
        rw.map(|r| res.value(r)),
        [Some(0x123), Some(0x89), Some(0x45), Some(0x67)]
    );
    for (t, (target, depth)) in DmaTarget::ALL.iter().zip(&depths) {
        assert_eq!(res.value(*target), Some(t.code()), "{t:?}");
        assert_eq!(res.value(*depth), Some(t.depth(&c) as u32), "{t:?}");
    }
    let back: Vec<u64> = res.stream(prog_back).unwrap().beats.clone();
    assert_eq!(back, words);
    let get = |r, k: Counter| {
        res.counters(r)
            .unwrap()
            .iter()
            .find(|(c, _)| *c == k)
            .unwrap()
            .1
    };
    assert_eq!(get(before_clear, Counter::DmaInBeats), words.len() as u64);
    assert_eq!(get(before_clear, Counter::DmaOutBeats), words.len() as u64);
    assert!(get(before_clear, Counter::HostIdleCycles) > 0);
    assert_eq!(get(after_clear, Counter::DmaInBeats), 0);
    assert_eq!(get(after_clear, Counter::DmaOutBeats), 0);
    assert_eq!(get(after_clear, Counter::RunCycles), 0);
    assert!(res.protocol_errors.is_empty(), "{:?}", res.protocol_errors);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs verilator"]
fn a_malformed_script_is_refused() {
    let m = model();
    let dir = work("malformed");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("bad.txt");
    for text in [
        "not a script\n",
        "sysgrad-host 1 8 8 16 40\nq 1\n",
        "sysgrad-host 1 8 8 16 40\nw 10\n",
        "sysgrad-host 1 8 8 16 40\ni zz\n",
    ] {
        std::fs::write(&script, text).unwrap();
        let out = std::process::Command::new(&m.exe)
            .arg(&script)
            .arg(dir.join("o.txt"))
            .arg(dir.join("t.txt"))
            .args(["1", "0"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs one after the other: the resident tile, the buffers and the
/// counters carry over, START clears HALTED, FAULTED and the error code.
#[test]
#[ignore = "needs verilator"]
fn runs_carry_state_over() {
    let m = model();
    let c = m.cfg;
    let layer = FcLayer::new(&c, 13, 11, 6);
    let load = encode_program(&[
        Command::LoadW {
            addr: 0,
            m: 8,
            k: 8,
        },
        Command::Halt,
    ]);
    let forward = encode_program(&[
        Command::Forward {
            x_addr: 0,
            y_addr: 0,
            n: 6,
            accumulate: false,
            window: false,
        },
        Command::Sync,
        Command::Halt,
    ]);
    let bad = vec![0x42 << 56];
    let train = encode_program(&[
        Command::Backward {
            mode: BackwardMode::Interleaved,
            dy_addr: 0,
            x_addr: 0,
            dx_addr: 20,
            n: 6,
            accumulate: false,
            window: false,
        },
        Command::Update { lr_shift: 9 },
        Command::FlushW,
        Command::Halt,
    ]);
    let setup = layer_setup(&c, &layer, DwSink::Drain, 71);
    let runs: [&[u64]; 5] = [&load, &forward, &bad, &train, &forward];
    // No back-pressure: beats back to back.
    let rep = m
        .cosim_runs(&setup, &runs, 71, 0)
        .unwrap_or_else(|e| panic!("{e}"));
    // The last FORWARD runs without a tile (FLUSH_W took it).
    assert!(
        matches!(rep.state, State::Faulted(f) if f.code == ErrorCode::NoTile),
        "{:?}",
        rep.state
    );
    let get = |k: Counter| rep.counter(k).unwrap();
    assert_eq!(get(Counter::Syncs), 1);
}

/// An array built with a constant `lr_shift`: an UPDATE with that shift
/// trains the weights as the emulator does (the PEs' constant shifter),
/// any other shift faults `LR_SHIFT` before it touches anything.
#[test]
#[ignore = "needs verilator"]
fn constant_lr_shift_trains_with_it_and_refuses_others() {
    let cfg = common::small().with_fixed_lr_shift(Some(2)).unwrap();
    let m = accel::build(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let mut setup = Setup::default();
    setup
        .fill(
            BufferId::Weights,
            0,
            (0..3).map(|i| vec![40 * i - 50; 2]).collect(),
        )
        .fill(
            BufferId::Activations,
            0,
            (0..3).map(|i| vec![7 * i - 9; 2]).collect(),
        )
        .fill(
            BufferId::Gradients,
            0,
            (0..2).map(|i| vec![60 - 90 * i; 2]).collect(),
        )
        .compare(BufferId::Weights, 0, 3);
    let step = [
        Command::LoadW {
            addr: 0,
            m: 2,
            k: 3,
        },
        Command::Backward {
            mode: BackwardMode::Interleaved,
            dy_addr: 0,
            x_addr: 0,
            dx_addr: 0,
            n: 2,
            accumulate: false,
            window: false,
        },
        Command::Update { lr_shift: 2 },
        Command::FlushW,
    ];
    let good = encode_program(&step);
    let bad = encode_program(&[Command::Update { lr_shift: 3 }]);
    let rep = cosim(&m, &setup, &[good.clone(), bad].concat(), 5, 10);
    match rep.state {
        State::Faulted(f) => assert_eq!((f.code, f.pc), (ErrorCode::LrShift, good.len())),
        s => panic!("emulator state {s:?}"),
    }
}
