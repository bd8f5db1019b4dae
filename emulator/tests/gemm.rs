//! What `gemm` promises besides its numbers (those are checked against the
//! independent oracle in `oracle.rs`): bad operands are typed errors naming
//! the value and the limit, never panics; and the interleaved schedule
//! saves a streaming pass per tile.

use ndarray::Array2;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{DriveError, Driver};

#[test]
fn interleaving_halves_the_backward_streaming_cycles() {
    let cfg = ArrayConfig::default_16x16();
    let (m, k, n) = (64, 64, 64);
    let w = Array2::<i64>::ones((m, k));
    let x = Array2::<i64>::ones((k, n));
    let dy = Array2::<i64>::ones((m, n));
    let cycles = |s| {
        let mut drv = Driver::new(cfg);
        gemm::backward(
            &mut drv,
            s,
            w.view(),
            x.view(),
            dy.view(),
            DwSink::Update { lr_shift: 4 },
        )
        .unwrap();
        drv.stats
    };
    let (il, seq) = (cycles(Backward::Interleaved), cycles(Backward::Sequential));
    let tiles = (m / 16 * (k / 16)) as u64;
    let pass = (n + 16 + 16 - 1) as u64;
    assert_eq!(il.backward().cycles, tiles * (pass + 1));
    assert_eq!(seq.backward().cycles, tiles * (2 * pass + 1));
    // The same useful work, dY read once instead of twice.
    assert_eq!(il.total().macs, seq.total().macs);
    assert_eq!(2 * il.total().dy_reads, seq.total().dy_reads);
}

/// A 2 x 2 array with 8-bit data and 16-bit accumulators.
fn small(backward: Backward) -> Driver {
    let format = NumberFormat {
        in_bits: 8,
        acc_bits: 16,
        frac_bits: 0,
    };
    Driver::new(ArrayConfig::new(2, 2, backward, format).unwrap())
}

fn zeros(rows: usize, cols: usize) -> Array2<i64> {
    Array2::zeros((rows, cols))
}

#[test]
fn data_outside_the_format_is_a_value_range_error() {
    let mut drv = small(Backward::Sequential);
    let w = Array2::from_elem((2, 2), 300i64);
    assert_eq!(
        gemm::forward(&mut drv, w.view(), zeros(2, 1).view()),
        Err(DriveError::ValueRange {
            what: "W",
            value: 300,
            bits: 8
        })
    );
    let x = Array2::from_elem((2, 1), -129i64);
    assert_eq!(
        gemm::forward(&mut drv, zeros(2, 2).view(), x.view()),
        Err(DriveError::ValueRange {
            what: "X",
            value: -129,
            bits: 8
        })
    );
    let dy = Array2::from_elem((2, 1), 128i64);
    let e = gemm::backward(
        &mut drv,
        Backward::Sequential,
        zeros(2, 2).view(),
        zeros(2, 1).view(),
        dy.view(),
        DwSink::Drain,
    );
    assert!(matches!(
        e,
        Err(DriveError::ValueRange {
            what: "dY",
            value: 128,
            ..
        })
    ));
}

#[test]
fn inner_dimensions_that_disagree_are_stream_length_errors() {
    let mut drv = small(Backward::Sequential);
    // W is 2 x 3, so X needs 3 rows.
    let e = gemm::forward(&mut drv, zeros(2, 3).view(), zeros(2, 1).view());
    assert_eq!(
        e,
        Err(DriveError::StreamLength {
            what: "X rows",
            got: 2,
            expected: 3
        })
    );
    // dY has N = 3 columns, X has 4.
    let e = gemm::backward(
        &mut drv,
        Backward::Sequential,
        zeros(2, 2).view(),
        zeros(2, 4).view(),
        zeros(2, 3).view(),
        DwSink::Drain,
    );
    assert_eq!(
        e,
        Err(DriveError::StreamLength {
            what: "dY columns",
            got: 3,
            expected: 4
        })
    );
}

#[test]
fn an_empty_stream_is_an_error() {
    let mut drv = small(Backward::Sequential);
    let e = gemm::forward(&mut drv, zeros(2, 2).view(), zeros(2, 0).view());
    assert_eq!(e, Err(DriveError::EmptyStream));
}

#[test]
fn a_tile_larger_than_the_array_is_refused_by_the_driver() {
    // gemm never makes one; the driver's own tile operations check it.
    let mut drv = small(Backward::Sequential);
    assert_eq!(
        drv.load(zeros(3, 2).view()),
        Err(DriveError::TileTooLarge {
            what: "W",
            got_r: 3,
            got_c: 2,
            max_r: 2,
            max_c: 2
        })
    );
}

#[test]
fn lr_shift_beyond_the_port_and_interleaving_on_a_sequential_array_are_errors() {
    let (w, x, dy) = (zeros(2, 2), zeros(2, 4), zeros(2, 4));
    let mut drv = small(Backward::Sequential);
    let mut back =
        |schedule, sink| gemm::backward(&mut drv, schedule, w.view(), x.view(), dy.view(), sink);
    assert_eq!(
        back(Backward::Interleaved, DwSink::Drain),
        Err(DriveError::NotInterleaved)
    );
    assert_eq!(
        back(Backward::Sequential, DwSink::Update { lr_shift: 64 }),
        Err(DriveError::LrShift(64))
    );
    assert!(back(Backward::Sequential, DwSink::Update { lr_shift: 63 }).is_ok());
}

#[test]
fn an_array_with_a_constant_lr_shift_refuses_every_other_shift() {
    let cfg = small(Backward::Interleaved)
        .cfg()
        .with_fixed_lr_shift(Some(3))
        .unwrap();
    let mut drv = Driver::new(cfg);
    assert_eq!(drv.update(4), Err(DriveError::LrShift(4)));
    assert!(drv.update(3).is_ok());
    let (w, x, dy) = (zeros(2, 2), zeros(2, 4), zeros(2, 4));
    let sink = DwSink::Update { lr_shift: 2 };
    assert_eq!(
        gemm::backward(
            &mut drv,
            Backward::Interleaved,
            w.view(),
            x.view(),
            dy.view(),
            sink
        ),
        Err(DriveError::LrShift(2))
    );
}
