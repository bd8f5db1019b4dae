//! Counting a layer with the fast mode's ledger gives every counter of
//! every phase exactly as the full cycle-stepped `gemm` run.

use ndarray::Array2;
use std::path::Path;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{Driver, Stats};
use sysgrad_rng::Rng;
use sysgrad_workloads::scalesim::{self, count, Exactness, Gemm};

fn cfg(rows: usize, cols: usize) -> ArrayConfig {
    let fmt = NumberFormat {
        in_bits: 8,
        acc_bits: 24,
        frac_bits: 4,
    };
    ArrayConfig::new(rows, cols, Backward::Interleaved, fmt).unwrap()
}

fn random(rng: &mut Rng, r: usize, c: usize) -> Array2<i64> {
    Array2::from_shape_simple_fn((r, c), || rng.below(15) as i64 - 7)
}

/// The full run on random data: forward, then backward in `schedule`.
fn stepped(cfg: ArrayConfig, g: Gemm, schedule: Backward, sink: DwSink) -> (Stats, Stats) {
    let mut rng = Rng::new((g.m * 31 + g.k * 7 + g.n) as u64);
    let (w, x, dy) = (
        random(&mut rng, g.m, g.k),
        random(&mut rng, g.k, g.n),
        random(&mut rng, g.m, g.n),
    );
    let mut d = Driver::new(cfg.with_backward(schedule));
    gemm::forward(&mut d, w.view(), x.view()).unwrap();
    let fwd = std::mem::take(&mut d.stats);
    gemm::backward(&mut d, schedule, w.view(), x.view(), dy.view(), sink).unwrap();
    (fwd, d.stats)
}

#[test]
fn ledger_counts_equal_the_stepped_run() {
    let layers = [
        Gemm { m: 1, k: 1, n: 1 },
        Gemm { m: 4, k: 4, n: 5 },
        Gemm { m: 9, k: 7, n: 3 },
        Gemm { m: 13, k: 22, n: 6 },
        Gemm { m: 3, k: 17, n: 1 },
    ];
    for (r, c) in [(4, 4), (3, 5), (5, 2)] {
        let cfg = cfg(r, c);
        for g in layers {
            for sink in [DwSink::Drain, DwSink::Update { lr_shift: 3 }] {
                let counted = count::counted(&cfg, g, sink).unwrap();
                for schedule in [Backward::Interleaved, Backward::Sequential] {
                    let (fwd, bwd) = stepped(cfg, g, schedule, sink);
                    assert_eq!(counted.forward, fwd, "forward {g:?} on {r}x{c}");
                    let ledger = match schedule {
                        Backward::Interleaved => &counted.backward_interleaved,
                        Backward::Sequential => &counted.backward_sequential,
                    };
                    assert_eq!(*ledger, bwd, "{schedule:?} {sink:?} {g:?} on {r}x{c}");
                }
            }
        }
    }
}

#[test]
fn a_topology_counts_the_same_both_ways() {
    let text = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
conv, 6, 6, 3, 3, 2, 5, 1,
strided, 7, 7, 3, 3, 3, 6, 2,
fc, 2, 2, 2, 2, 5, 7, 1,
";
    let topo = scalesim::parse_topology(text, Path::new("tiny.csv")).unwrap();
    let sc = scalesim::parse_config(
        "[architecture_presets]\nArrayHeight: 4\nArrayWidth: 3\nDataflow: ws\n",
        Path::new("c.cfg"),
    )
    .unwrap();
    for sink in [DwSink::Drain, DwSink::Update { lr_shift: 2 }] {
        let fast = scalesim::run_topology(&topo, &sc, 2, sink, Exactness::FastLedger).unwrap();
        let full = scalesim::run_topology(&topo, &sc, 2, sink, Exactness::Stepped).unwrap();
        for (a, b) in fast.layers.iter().zip(&full.layers) {
            assert_eq!(a.cost, b.cost, "{}", a.layer.name);
        }
        // Interleaving never costs more and always saves cycles.
        for l in &fast.layers {
            assert!(
                l.cost.backward_interleaved.total().cycles
                    < l.cost.backward_sequential.total().cycles
            );
            assert_eq!(
                l.cost.backward_interleaved.total().macs,
                l.cost.backward_sequential.total().macs
            );
        }
    }
}

#[test]
fn mapping_efficiency_counts_partial_tiles() {
    let c = cfg(4, 4);
    // 6 x 5 on 4x4: tiles (4x4, 4x1, 2x4, 2x1) -> 30 PEs used of 4 * 16.
    let (tiles, eff) = count::mapping_efficiency(&c, Gemm { m: 6, k: 5, n: 1 });
    assert_eq!(tiles, 4);
    assert!((eff - 30.0 / 64.0).abs() < 1e-12);
}
