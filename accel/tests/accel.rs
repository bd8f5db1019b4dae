//! The accelerator's command stream against `gemm` and the oracle: an FC
//! layer larger than the array (100 x 70, N = 16 on 8 x 8), compiled to
//! commands, must give the same bits, the same array stimulus (apart from
//! the controller's IDLE cycles) and the same per-phase counters. Bad
//! commands must stop the controller with their code and change nothing.

#[path = "../../emulator/tests/common/mod.rs"]
mod common;

use common::{assert_same, oracle_config, to_oracle};
use ndarray::Array2;
use sysgrad_accel::*;
use sysgrad_config::{fixed, ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{Driver, Mode, Phase};
use sysgrad_oracle as oracle;

fn cfg(backward: Backward) -> ArrayConfig {
    ArrayConfig::new(
        8,
        8,
        backward,
        NumberFormat {
            in_bits: 8,
            acc_bits: 20,
            frac_bits: 4,
        },
    )
    .unwrap()
}

/// Deterministic data with the format's extremes mixed in (so saturation
/// in the 20-bit accumulators is exercised).
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
            _ => fixed::sat(((s >> 20) as i64 % 256) - 128, bits),
        }
    })
}

struct Case {
    cfg: ArrayConfig,
    layer: FcLayer,
    w: Array2<i64>,
    x: Array2<i64>,
    dy: Array2<i64>,
}

fn case(backward: Backward) -> Case {
    let cfg = cfg(backward);
    let (m, k, n) = (100, 70, 16);
    let b = cfg.format().in_bits;
    Case {
        cfg,
        layer: FcLayer::new(&cfg, m, k, n),
        w: matrix(m, k, b, 1),
        x: matrix(k, n, b, 2),
        dy: matrix(m, n, b, 3),
    }
}

fn accelerator(c: &Case) -> Accelerator {
    let mut acc = Accelerator::with_driver(Driver::recording(c.cfg, false));
    let l = &c.layer;
    l.w.store(acc.buffer_mut(BufferId::Weights), c.w.view())
        .unwrap();
    l.x.store(acc.buffer_mut(BufferId::Activations), c.x.view())
        .unwrap();
    l.dy.store(acc.buffer_mut(BufferId::Gradients), c.dy.view())
        .unwrap();
    acc
}

/// The non-IDLE cycles' inputs: what the array did, without the controller.
fn array_stimulus(d: &Driver) -> Vec<sysgrad_emulator::CycleInput> {
    let rec = d.recording.as_ref().unwrap();
    rec.inputs
        .iter()
        .filter(|i| i.mode != Mode::Idle)
        .cloned()
        .collect()
}

fn check_step(schedule: Backward, array: Backward, sink: DwSink) {
    let c = case(array);
    let mut acc = accelerator(&c);
    let prog = compile_layer(&c.cfg, &c.layer, schedule, sink).unwrap();
    let words = encode_program(&prog);
    acc.run(&words).unwrap();
    assert_eq!(acc.state(), State::Halted);

    let mut drv = Driver::recording(c.cfg, false);
    let y = gemm::forward(&mut drv, c.w.view(), c.x.view()).unwrap();
    let bw = gemm::backward(
        &mut drv,
        schedule,
        c.w.view(),
        c.x.view(),
        c.dy.view(),
        sink,
    )
    .unwrap();

    let l = &c.layer;
    let accbuf = acc.buffer(BufferId::Accumulators);
    let o = oracle_config(&c.cfg);
    let (ow, ox, ody) = (to_oracle(&c.w), to_oracle(&c.x), to_oracle(&c.dy));
    assert_eq!(l.y.load(accbuf).unwrap(), y);
    assert_same("Y", &y, &oracle::forward(&o, &ow, &ox));
    assert_eq!(l.dx.load(accbuf).unwrap(), bw.dx);
    assert_same("dX", &bw.dx, &oracle::dx(&o, &ow, &ody));
    let dw_want = oracle::dw(&o, &ody, &ox);
    match sink {
        DwSink::Drain => {
            let dw = l.dw_t.load(accbuf).unwrap().t().to_owned();
            assert_eq!(dw, bw.dw.unwrap());
            assert_same("dW", &dw, &dw_want);
            // No UPDATE: the weights stay as they were.
            assert_eq!(l.w.load(acc.buffer(BufferId::Weights)).unwrap(), c.w);
        }
        DwSink::Update { lr_shift } => {
            let w_new = l.w.load(acc.buffer(BufferId::Weights)).unwrap();
            assert_eq!(w_new, bw.w.unwrap());
            let w_want = oracle::update(&o, &ow, &dw_want, lr_shift);
            assert_same("updated W", &w_new, &w_want);
        }
    }

    // Same array stimulus, same per-phase counters; only IDLE cycles added.
    assert_eq!(array_stimulus(acc.driver()), array_stimulus(&drv));
    for p in Phase::ALL.into_iter().filter(|p| *p != Phase::Idle) {
        assert_eq!(
            acc.driver().stats.phase(p),
            drv.stats.phase(p),
            "{}",
            p.name()
        );
    }
    // Controller overhead: one IDLE cycle per command word, nothing else.
    assert_eq!(acc.control().decode_cycles, words.len() as u64);
    assert_eq!(acc.idle_cycles(), words.len() as u64);
    assert_eq!(acc.busy_cycles(), drv.stats.total().cycles);
    assert_eq!(acc.control().commands(), prog.len() as u64);
    let per_cmd: u64 = acc.control().per_command.values().map(|c| c.cycles).sum();
    assert_eq!(per_cmd, acc.driver().cycle());

    // The buffers' own counters agree with the per-operand phase counters.
    let t = acc.driver().stats.total();
    let buf = |id| acc.buffer(id);
    assert_eq!(buf(BufferId::Weights).reads(), t.w_reads);
    assert_eq!(buf(BufferId::Weights).writes(), t.w_writes);
    assert_eq!(buf(BufferId::Activations).reads(), t.x_reads);
    assert_eq!(buf(BufferId::Gradients).reads(), t.dy_reads);
    let acc_writes = t.y_writes + t.dx_writes + t.dw_writes + t.acc_writes;
    assert_eq!(buf(BufferId::Accumulators).writes(), acc_writes);
    assert_eq!(buf(BufferId::Accumulators).reads(), t.acc_reads);
}

#[test]
fn interleaved_step_with_update_matches_gemm() {
    check_step(
        Backward::Interleaved,
        Backward::Interleaved,
        DwSink::Update { lr_shift: 3 },
    );
}

#[test]
fn sequential_step_with_update_matches_gemm() {
    check_step(
        Backward::Sequential,
        Backward::Sequential,
        DwSink::Update { lr_shift: 0 },
    );
}

#[test]
fn drained_gradients_match_gemm_in_both_schedules() {
    check_step(Backward::Interleaved, Backward::Interleaved, DwSink::Drain);
    check_step(Backward::Sequential, Backward::Interleaved, DwSink::Drain);
}

#[test]
fn requant_turns_y_into_the_next_layers_x() {
    let c = case(Backward::Interleaved);
    let mut acc = accelerator(&c);
    let l = c.layer;
    let next_x = Blocked {
        base: l.x.end(),
        rows: l.m,
        cols: l.n,
        lanes: c.cfg.rows(),
    };
    let mut prog = compile_forward(&c.cfg, &l).unwrap();
    prog.push(Command::Requant {
        src: l.y.base as u16,
        dst: DataBuffer::Activations,
        dst_addr: next_x.base as u16,
        count: l.y.lines() as u16,
    });
    prog.push(Command::Sync);
    prog.push(Command::Halt);
    acc.run(&encode_program(&prog)).unwrap();
    let o = oracle_config(&c.cfg);
    let y = oracle::forward(&o, &to_oracle(&c.w), &to_oracle(&c.x));
    assert_same(
        "requantized Y",
        &next_x.load(acc.buffer(BufferId::Activations)).unwrap(),
        &oracle::requantize_matrix(&o, &y),
    );
    assert_eq!(acc.control().requant_cycles, l.y.lines() as u64);
    assert_eq!(acc.control().syncs, 1);
    assert_eq!(acc.idle_cycles(), prog.len() as u64 + l.y.lines() as u64);
}

/// Runs `bad` after a good prefix and checks the fault and that the bad
/// command changed nothing (buffers, array, resident tile).
fn expect_fault(cfg: ArrayConfig, prefix: &[Command], bad: &[u64], code: ErrorCode) {
    let mut acc = Accelerator::new(cfg);
    for line in 0..4 {
        acc.buffer_mut(BufferId::Weights).set(line, 0, 3).unwrap();
    }
    let mut words = encode_program(prefix);
    let pc = words.len();
    words.extend_from_slice(bad);
    let ok = encode_program(&[prefix, &[Command::Halt]].concat());
    let mut before = Accelerator::new(cfg);
    for line in 0..4 {
        before
            .buffer_mut(BufferId::Weights)
            .set(line, 0, 3)
            .unwrap();
    }
    before.run(&ok).unwrap();

    let fault = acc.run(&words).unwrap_err();
    assert_eq!(fault.code, code, "{fault}");
    assert_eq!(fault.pc, pc, "{fault}");
    assert_eq!(acc.state(), State::Faulted(fault));
    for id in BufferId::ALL {
        let (a, b) = (acc.buffer(id), before.buffer(id));
        for line in 0..a.depth().min(8) {
            for lane in 0..a.lanes() {
                assert_eq!(a.get(line, lane), b.get(line, lane));
            }
        }
    }
    assert_eq!(acc.resident(), before.resident());
    assert_eq!(
        acc.driver().array.outputs(),
        before.driver().array.outputs()
    );
    let array_cycles = |a: &Accelerator| a.busy_cycles();
    assert_eq!(array_cycles(&acc), array_cycles(&before));
}

#[test]
fn bad_commands_stop_with_their_error_code_and_change_nothing() {
    let small = cfg(Backward::Sequential)
        .with_buffers(sysgrad_config::BufferDepths {
            weights: 16,
            accumulators: 16,
            ..Default::default()
        })
        .unwrap();
    let load = |addr, m, k| Command::LoadW { addr, m, k };
    let fwd = |n, y_addr| Command::Forward {
        x_addr: 0,
        y_addr,
        n,
        accumulate: false,
        window: false,
    };
    let bwd = |mode| Command::Backward {
        mode,
        dy_addr: 0,
        x_addr: 0,
        dx_addr: 0,
        n: 4,
        accumulate: false,
        window: false,
    };
    let e = |c: Command| c.encode();
    let tile = [load(0, 8, 4)];
    let updated = [load(0, 8, 4), Command::Update { lr_shift: 1 }];
    let flushed = [load(0, 8, 4), Command::FlushW];
    use ErrorCode::*;
    let cases: Vec<(&[Command], Vec<u64>, ErrorCode)> = vec![
        (&[], vec![0], UnknownOpcode),
        (&[], vec![0x42 << 56], UnknownOpcode),
        (&[], vec![e(Command::Halt)[0] | 1], ReservedBits),
        (&tile, e(bwd(BackwardMode::Dx))[..1].to_vec(), ProgramEnd),
        (&tile, vec![], ProgramEnd),
        (&[], e(load(0, 0, 4)), ZeroSize),
        (&tile, e(fwd(0, 0)), ZeroSize),
        (&[], e(load(0, 9, 4)), TileTooLarge),
        (&[], e(load(0, 8, 9)), TileTooLarge),
        (&tile, e(Command::Update { lr_shift: 64 }), LrShift),
        (&tile, e(bwd(BackwardMode::Interleaved)), NotInterleaved),
        (&[], e(fwd(4, 0)), NoTile),
        (&[], e(Command::Drain { dw_addr: 0 }), NoTile),
        (&flushed, e(bwd(BackwardMode::Dx)), NoTile),
        (&[], e(load(13, 8, 4)), AddressRange),
        (&tile, e(fwd(4, 13)), AddressRange),
        (&tile, e(Command::Drain { dw_addr: 9 }), AddressRange),
        (&updated, e(load(2, 8, 4)), WeightOverlap),
    ];
    for (prefix, bad, code) in cases {
        expect_fault(small, prefix, &bad, code);
    }
    // The edges of the checks are allowed: the last lines of a buffer, and
    // reloading a changed tile from the lines it goes back to.
    let mut acc = Accelerator::new(small);
    let ok = [
        load(12, 8, 4),
        Command::Update { lr_shift: 0 },
        load(12, 8, 4),
        fwd(4, 12),
        Command::Drain { dw_addr: 8 },
        Command::Halt,
    ];
    acc.run(&encode_program(&ok)).unwrap();
}

#[test]
fn faulting_commands_cost_only_their_decode_cycles() {
    let mut acc = Accelerator::new(cfg(Backward::Interleaved));
    // A two-word command whose second word has a stray bit: both fetched.
    let mut bad = Command::Backward {
        mode: BackwardMode::Dw,
        dy_addr: 0,
        x_addr: 0,
        dx_addr: 0,
        n: 1,
        accumulate: false,
        window: false,
    }
    .encode();
    bad[1] |= 1 << 63;
    let fault = acc.run(&bad).unwrap_err();
    assert_eq!(fault.code, ErrorCode::ReservedBits);
    assert_eq!(acc.driver().cycle(), 2);
    assert_eq!(acc.busy_cycles(), 0);
}

/// LOAD_W's tile sizes reach the widest array: `m = k = 256` (9-bit
/// fields) round-trips through the encoder, decoder and assembler, loads
/// the whole 256 x 256 array on both controllers, and its FORWARD equals
/// the oracle's (an 8-bit field read as `u8` once made `m = 256` a 0 and
/// faulted ZERO_SIZE).
#[test]
fn the_widest_tile_round_trips_and_runs() {
    let n = sysgrad_config::MAX_DIM;
    let load = Command::LoadW {
        addr: 0,
        m: n as u16,
        k: n as u16,
    };
    let words = load.encode();
    assert_eq!(Command::decode(&words), Ok((load, 1)));
    assert_eq!(
        asm::assemble(&format!("LOAD_W addr=0 m={n} k={n}")),
        Ok(words.clone())
    );
    assert_eq!(
        asm::disassemble(&words),
        format!("LOAD_W addr=0 m={n} k={n}\n")
    );
    for pipelining in [
        sysgrad_config::Pipelining::None,
        sysgrad_config::Pipelining::Dense,
    ] {
        let cfg = cfg(Backward::Sequential)
            .with_size(n, n)
            .and_then(|c| c.with_pipelining(pipelining))
            .unwrap();
        let b = cfg.format().in_bits;
        let c = Case {
            cfg,
            layer: FcLayer::new(&cfg, n, n, 2),
            w: matrix(n, n, b, 4),
            x: matrix(n, 2, b, 5),
            dy: matrix(n, 2, b, 6),
        };
        let mut acc = accelerator(&c);
        let prog = compile_forward(&cfg, &c.layer).unwrap();
        assert!(
            matches!(prog[0], Command::LoadW { m, k, .. } if usize::from(m) == n && usize::from(k) == n),
            "{prog:?}"
        );
        acc.run(&encode_program(&[&prog[..], &[Command::Halt]].concat()))
            .unwrap();
        let tile = acc.resident().expect("the tile is resident");
        assert_eq!((tile.m, tile.k), (n, n), "{pipelining:?}");
        let o = oracle_config(&cfg);
        assert_same(
            "Y",
            &c.layer.y.load(acc.buffer(BufferId::Accumulators)).unwrap(),
            &oracle::forward(&o, &to_oracle(&c.w), &to_oracle(&c.x)),
        );
    }
}

/// Programs kept in command memory (`Device::keep_programs`): each
/// distinct program is sent once and run from its own words; one that
/// does not fit in what is left empties the table and is sent again at
/// word 0; `PROG_START = PROG_LEN` faults PROGRAM_END at the first fetch.
#[test]
fn kept_programs_are_sent_once_while_they_fit() {
    let small = cfg(Backward::Sequential)
        .with_buffers(sysgrad_config::BufferDepths {
            commands: 6,
            ..cfg(Backward::Sequential).buffers()
        })
        .unwrap();
    let mut dev = Device::new(Accelerator::new(small), HostLink::default());
    dev.keep_programs();
    let a = encode_program(&[Command::Sync, Command::Halt]);
    let b = encode_program(&[Command::Sync, Command::Sync, Command::Halt]);
    let c = encode_program(&[Command::Sync, Command::Sync, Command::Sync, Command::Halt]);
    let sent = |d: &Device| d.host.flow(Traffic::ProgramIn).words;
    for _ in 0..3 {
        dev.run(&a).unwrap();
        dev.run(&b).unwrap();
    }
    assert_eq!(sent(&dev), 5, "a and b sent once each");
    let kept = dev.kept_programs().unwrap();
    assert_eq!((kept.programs, kept.words, kept.overflows), (2, 5, 0));
    // c does not fit beside them: the table starts again at word 0.
    dev.run(&c).unwrap();
    dev.run(&a).unwrap();
    assert_eq!(sent(&dev), 5 + 4 + 2);
    assert_eq!(dev.kept_programs().unwrap().overflows, 1);
    assert_eq!(dev.acc.control().syncs, 3 * 3 + 3 + 1);
    let f = dev.run_at(6, &[]).unwrap_err();
    assert!(
        matches!(f, DeviceError::Fault(f) if (f.code, f.pc) == (ErrorCode::ProgramEnd, 6)),
        "{f:?}"
    );
}
