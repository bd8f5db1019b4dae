//! Counting from sizes alone, at any size up to 2^64 - 1 (issue 28): the
//! shape ledger of both pipelinings and the timing formulas give a figure
//! or an overflow error, never a panic, a wrapped count or a hang, and a
//! figure never shrinks when a size grows.

use proptest::prelude::*;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, Pipelining};
use sysgrad_emulator::fast::{count_backward, count_forward};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::{DriveError, Stats};
use sysgrad_isa::count::Count;
use sysgrad_isa::timing;

/// Sizes from tiny to 2^64 - 1, powers of two and their neighbours included.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..40,
        (0u32..64).prop_map(|b| 1usize << b),
        (1u32..64).prop_map(|b| (1usize << b) - 1),
        any::<usize>(),
        Just(usize::MAX),
    ]
}

fn array(rows: usize, cols: usize, dense: bool) -> ArrayConfig {
    let f = NumberFormat {
        in_bits: 16,
        acc_bits: 40,
        frac_bits: 8,
    };
    let cfg = ArrayConfig::new(rows, cols, Backward::Interleaved, f).unwrap();
    if dense {
        cfg.with_pipelining(Pipelining::Dense).unwrap()
    } else {
        cfg
    }
}

#[derive(Debug, Clone, Copy)]
enum Product {
    Forward,
    Backward(Backward, DwSink),
}

fn products() -> impl Strategy<Value = Product> {
    prop_oneof![
        Just(Product::Forward),
        Just(Product::Backward(Backward::Interleaved, DwSink::Drain)),
        Just(Product::Backward(Backward::Sequential, DwSink::Drain)),
        Just(Product::Backward(
            Backward::Interleaved,
            DwSink::Update { lr_shift: 4 }
        )),
        Just(Product::Backward(
            Backward::Sequential,
            DwSink::Update { lr_shift: 4 }
        )),
    ]
}

fn count(cfg: &ArrayConfig, p: Product, mkn: (usize, usize, usize)) -> Result<Stats, DriveError> {
    let mut st = Stats::default();
    match p {
        Product::Forward => count_forward(&mut st, cfg, mkn)?,
        Product::Backward(schedule, sink) => {
            count_backward(&mut st, &cfg.with_backward(schedule), schedule, mkn, sink)?
        }
    }
    Ok(st)
}

/// A figure, or an overflow: nothing else may come back for N >= 1.
fn figure(r: Result<Stats, DriveError>) -> Result<Option<Stats>, TestCaseError> {
    match r {
        Ok(st) => Ok(Some(st)),
        Err(DriveError::Overflow(o)) => {
            prop_assert!(o.to_string().ends_with("exceed 2^64 - 1"), "{o}");
            Ok(None)
        }
        Err(e) => Err(TestCaseError::fail(format!("unexpected error {e}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Growing M, K or N never lowers a counter; a size that overflows
    /// stays overflowing when it grows.
    #[test]
    fn counts_grow_with_every_size(
        rows in 1usize..=256, cols in 1usize..=256, dense: bool,
        product in products(),
        m in size(), k in size(), n in size(),
        which in 0usize..3, grow in size(),
    ) {
        let cfg = array(rows, cols, dense);
        let mut bigger = [m, k, n];
        bigger[which] = bigger[which].saturating_add(grow);
        let small = figure(count(&cfg, product, (m, k, n)))?;
        let large = figure(count(&cfg, product, (bigger[0], bigger[1], bigger[2])))?;
        match (small, large) {
            (Some(s), Some(l)) => {
                let (s, l) = (s.total(), l.total());
                prop_assert!(l.cycles >= s.cycles, "{} < {}", l.cycles, s.cycles);
                prop_assert!(l.macs >= s.macs);
                prop_assert!(l.accesses() >= s.accesses());
            }
            (None, Some(_)) => prop_assert!(false, "smaller sizes overflowed, larger did not"),
            _ => {}
        }
    }

    /// Every timing formula: exact in i128, over past 2^64 - 1, never
    /// negative for an array, monotone in N.
    #[test]
    fn timing_formulas_are_checked_and_monotone(
        rows in 1usize..=256, cols in 1usize..=256, stages in 0usize..2,
        n in any::<u64>(), grow in any::<u64>(),
    ) {
        for c in [timing::PASS, timing::RESULT_LATENCY, timing::LOAD, timing::DRAIN,
                  timing::UPDATE, timing::REQUANT, timing::DECODE] {
            let exact = i128::from(c.n_coef) * i128::from(n)
                + i128::from(c.row_coef) * rows as i128
                + i128::from(c.col_coef) * cols as i128
                + i128::from(c.mul_reg_coef) * stages as i128
                + i128::from(c.constant);
            let got = c.count(rows, cols, stages, n);
            prop_assert_eq!(got, u64::try_from(exact).map_or(Count::OVER, Count::from));
            let later = c.count(rows, cols, stages, n.saturating_add(grow));
            match (got.value(), later.value()) {
                (Some(a), Some(b)) => prop_assert!(b >= a),
                (None, Some(_)) => prop_assert!(false, "over, then not"),
                _ => {}
            }
        }
    }
}

/// Issue 28: a stream of 2^64 - 1 columns (a batch of 2^64 - 1 folded into
/// N) panicked in `timing` ("cycle counts are not negative").
#[test]
fn a_stream_of_two_to_the_64_is_an_overflow_not_a_panic() {
    let cfg = array(16, 16, false);
    let e = count(&cfg, Product::Forward, (16, 16, usize::MAX)).unwrap_err();
    assert!(matches!(e, DriveError::Overflow(_)), "{e}");
    // Sizes of 2^32 each (a topology row): counted at once, and over.
    let e = count(&cfg, Product::Forward, (1 << 32, 1 << 32, 1 << 32)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the load weight reads of the layer exceed 2^64 - 1"
    );
}
