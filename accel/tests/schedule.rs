//! Layer products through the host interface (`sysgrad_accel::schedule`)
//! give the bits of `sysgrad_emulator::gemm`, however small the buffers
//! are: random layers on random small arrays with narrow accumulators (so
//! that sums saturate and any reordering would show), buffers from one
//! line up, both pipelinings, both schedules and both dW sinks.

use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_accel::schedule::{self, Arena, BackwardOperands, BackwardPlan, Output};
use sysgrad_accel::{Accelerator, BackwardMode, Device, HostLink, Traffic};
use sysgrad_config::{fixed, ArrayConfig, Backward, BufferDepths, NumberFormat, Pipelining};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::Driver;
use sysgrad_rng::Rng;

#[derive(Debug, Clone)]
struct Case {
    rows: usize,
    cols: usize,
    m: usize,
    k: usize,
    n: usize,
    depths: [usize; 4],
    commands: usize,
    dense: bool,
    sequential: bool,
    drain: bool,
    data_out: bool,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            1usize..=4,
            1usize..=4,
            1usize..=11,
            1usize..=11,
            1usize..=12,
        ),
        (
            1usize..=40,
            1usize..=40,
            1usize..=40,
            1usize..=80,
            3usize..=24,
        ),
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<u64>(),
        ),
    )
        .prop_map(
            |((rows, cols, m, k, n), (a, g, acc, w, commands), flags)| Case {
                rows,
                cols,
                m,
                k,
                n,
                depths: [w, a, g, acc],
                commands,
                dense: flags.0,
                sequential: flags.1,
                drain: flags.2,
                data_out: flags.3,
                seed: flags.4,
            },
        )
}

fn config(c: &Case) -> ArrayConfig {
    let format = NumberFormat {
        in_bits: 8,
        acc_bits: 16,
        frac_bits: 3,
    };
    let pipelining = if c.dense {
        Pipelining::Dense
    } else {
        Pipelining::None
    };
    let mb = c.m.div_ceil(c.cols);
    ArrayConfig::new(c.rows, c.cols, Backward::Interleaved, format)
        .unwrap()
        .with_pipelining(pipelining)
        .unwrap()
        .with_buffers(BufferDepths {
            // W always fits; the data buffers are whatever the case says.
            weights: mb * c.k + c.depths[0],
            activations: c.depths[1],
            gradients: c.depths[2],
            accumulators: c.depths[3],
            commands: c.commands,
        })
        .unwrap()
}

fn requantized(cfg: &ArrayConfig, m: &Array2<i64>) -> Array2<i64> {
    let f = cfg.format();
    m.mapv(|a| fixed::requantize(a, f.frac_bits, f.in_bits, f.acc_bits))
}

/// Runs forward and backward on both sides; `Ok(false)` if the buffers
/// cannot hold the smallest piece (then the plan must have said so).
fn check(c: &Case) -> Result<bool, TestCaseError> {
    let cfg = config(c);
    let mut rng = Rng::new(c.seed);
    let bits = cfg.format().in_bits;
    let (w, x, dy) = (
        rng.matrix(c.m, c.k, bits),
        rng.matrix(c.k, c.n, bits),
        rng.matrix(c.m, c.n, bits),
    );
    let sink = if c.drain {
        DwSink::Drain
    } else {
        DwSink::Update { lr_shift: 2 }
    };
    let out = if c.data_out {
        Output::Data
    } else {
        Output::Raw
    };
    let arena = Arena::whole(&cfg);
    let mut dev = Device::new(Accelerator::new(cfg), HostLink::default());
    let wl = schedule::weights_layout(&cfg, c.depths[0] / 2, c.m, c.k);
    schedule::load_weights(&mut dev, &wl, w.view()).unwrap();
    let y = match schedule::forward(&mut dev, &wl, x.view(), &arena, out) {
        Ok(y) => y,
        Err(schedule::ScheduleError::Plan(e)) => {
            prop_assert!(e.needed > e.available, "{e}");
            return Ok(false);
        }
        Err(e) => return Err(TestCaseError::fail(e.to_string())),
    };
    let mode = if c.sequential {
        BackwardMode::Sequential
    } else {
        BackwardMode::Interleaved
    };
    let ops = BackwardOperands {
        w: wl,
        x: x.view(),
        dy: dy.view(),
    };
    let g = match schedule::backward(&mut dev, &ops, &arena, mode, sink, out) {
        Ok(g) => g,
        Err(schedule::ScheduleError::Plan(e)) => {
            prop_assert!(e.needed > e.available, "{e}");
            return Ok(false);
        }
        Err(e) => return Err(TestCaseError::fail(e.to_string())),
    };
    let w_after = schedule::read_weights(&mut dev, &wl).unwrap();

    let mut drv = Driver::new(cfg.with_pipelining(Pipelining::None).unwrap());
    let mut y_ref = gemm::forward(&mut drv, w.view(), x.view()).unwrap();
    let schedule = if c.sequential {
        Backward::Sequential
    } else {
        Backward::Interleaved
    };
    let b = gemm::backward(&mut drv, schedule, w.view(), x.view(), dy.view(), sink).unwrap();
    let mut dx_ref = b.dx;
    if c.data_out {
        y_ref = requantized(&cfg, &y_ref);
        dx_ref = requantized(&cfg, &dx_ref);
    }
    prop_assert_eq!(y, y_ref, "Y");
    prop_assert_eq!(g.dx, dx_ref, "dX");
    prop_assert_eq!(g.dw, b.dw, "dW");
    prop_assert_eq!(w_after, b.w.unwrap_or(w), "W after the step");
    Ok(true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]
    #[test]
    fn products_through_the_host_interface_equal_gemm(c in case()) {
        check(&c)?;
    }
}

/// The three ways a product is cut all happen, and all equal `gemm`.
#[test]
fn every_plan_is_exercised() {
    let base = Case {
        rows: 3,
        cols: 2,
        m: 5,
        k: 10,
        n: 9,
        depths: [8, 64, 64, 128],
        commands: 8,
        dense: false,
        sequential: false,
        drain: true,
        data_out: true,
        seed: 7,
    };
    for (depths, want) in [
        ([8, 64, 64, 128], "grouped, one group"),
        ([8, 20, 64, 40], "grouped, several groups"),
        ([8, 5, 4, 8], "chunked"),
    ] {
        for dense in [false, true] {
            let c = Case {
                depths,
                dense,
                ..base.clone()
            };
            let cfg = config(&c);
            let s = schedule::Shape { m: 5, k: 10, n: 9 };
            let plan =
                schedule::plan_backward(&cfg, &s, &Arena::whole(&cfg), DwSink::Drain, Output::Data)
                    .unwrap();
            let kind = match plan {
                BackwardPlan::Grouped { group, .. } if group >= 4 => "grouped, one group",
                BackwardPlan::Grouped { .. } => "grouped, several groups",
                BackwardPlan::Chunked { .. } => "chunked",
            };
            assert_eq!(kind, want, "{plan:?}");
            assert!(check(&c).unwrap(), "{want} runs");
        }
    }
}

/// A buffer too small for the smallest piece is named with the lines needed.
#[test]
fn a_product_that_cannot_run_names_the_buffer() {
    let c = Case {
        rows: 2,
        cols: 2,
        m: 9,
        k: 4,
        n: 4,
        depths: [4, 16, 16, 3],
        commands: 8,
        dense: false,
        sequential: false,
        drain: false,
        data_out: false,
        seed: 1,
    };
    let cfg = config(&c);
    let s = schedule::Shape { m: 9, k: 4, n: 4 };
    let e = schedule::plan_forward(&cfg, &s, &Arena::whole(&cfg), Output::Raw).unwrap_err();
    assert_eq!((e.buffer, e.needed, e.available), ("accumulators", 5, 3));
    assert!(e.to_string().contains("raise buffers.accumulators"), "{e}");
}

/// Traffic is counted per kind, in beats as the RTL's DMA moves them.
#[test]
fn traffic_is_counted_in_packed_beats() {
    let cfg = ArrayConfig::default_16x16();
    let mut dev = Device::new(Accelerator::new(cfg), HostLink::default());
    let mut rng = Rng::new(3);
    let (w, x) = (rng.matrix(20, 40, 16), rng.matrix(40, 8, 16));
    let wl = schedule::weights_layout(&cfg, 0, 20, 40);
    schedule::load_weights(&mut dev, &wl, w.view()).unwrap();
    schedule::forward(&mut dev, &wl, x.view(), &Arena::whole(&cfg), Output::Data).unwrap();
    let h = &dev.host;
    // W: 2 blocks of 40 lines, 16 lanes = 4 beats a line.
    assert_eq!(h.flow(Traffic::WeightsIn).beats, 2 * 40 * 4);
    // X: 3 blocks of 8 lines; Y requantized: 2 blocks of 8 lines.
    assert_eq!(h.flow(Traffic::InputsIn).beats, 3 * 8 * 4);
    assert_eq!(h.flow(Traffic::ResultsOut).beats, 2 * 8 * 4);
    assert_eq!(h.flow(Traffic::ResultsOut).words, 20 * 8);
}
