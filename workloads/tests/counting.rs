//! SCALE-Sim counting, the off-chip model and the energy model at any size
//! up to 2^64 - 1 (issue 28): a figure or an overflow error naming the
//! input, never a panic or a wrapped figure; a larger batch never fewer
//! cycles, a longer off-chip latency never a faster run, more layers never
//! fewer cycles, more counted actions never less energy. Plus the cases of
//! the issue, each as it was reported.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::Stats;
use sysgrad_workloads::energy::{BufferSizes, EnergyModel, EnergyTable};
use sysgrad_workloads::scalesim::config::{BandwidthMode, MemoryConfig};
use sysgrad_workloads::scalesim::offchip::{self, Pass};
use sysgrad_workloads::scalesim::{
    self, parse_topology, report, Exactness, Gemm, ScaleConfig, Topology, TopologyRun,
};
use sysgrad_workloads::WorkloadError;

fn topologies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies")
}

fn vgg_small() -> Topology {
    scalesim::load_topology(&topologies().join("vgg_small.csv")).unwrap()
}

fn config_16x16() -> ScaleConfig {
    scalesim::load_config(&topologies().join("sysgrad_16x16.cfg")).unwrap()
}

/// `sysgrad_16x16.cfg` with a USER interface of `bandwidth` words per
/// cycle and an off-chip latency of `latency` cycles.
fn user(bandwidth: usize, latency: u64) -> ScaleConfig {
    let mut sc = config_16x16();
    sc.memory.interface_bandwidth = BandwidthMode::User;
    sc.memory.bandwidth = vec![bandwidth];
    sc.memory.off_chip_latency = latency;
    sc
}

fn run(topo: &Topology, sc: &ScaleConfig, batch: usize) -> Result<TopologyRun, WorkloadError> {
    scalesim::run_topology(topo, sc, batch, DwSink::Drain, Exactness::FastLedger)
}

/// The training cycles (incl. prefetch, interleaved and sequential) of
/// every layer together.
fn training_cycles(r: &TopologyRun) -> (u64, u64) {
    let o = |f: &dyn Fn(&scalesim::LayerRun) -> u64| r.layers.iter().map(f).sum::<u64>();
    (
        o(&|l| l.offchip.training_interleaved.total_cycles_incl_prefetch),
        o(&|l| l.offchip.training_sequential.total_cycles_incl_prefetch),
    )
}

/// An overflow error, naming what overflowed and the input.
fn assert_overflow(e: &WorkloadError, input: &str) {
    assert!(matches!(e, WorkloadError::Overflow { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains(input), "{text} does not name {input}");
    assert!(text.ends_with("exceed 2^64 - 1"), "{text}");
}

fn batch() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..64,
        (0u32..64).prop_map(|b| 1usize << b),
        any::<usize>(),
        Just(usize::MAX),
    ]
}

fn cfg(rows: usize, cols: usize) -> ArrayConfig {
    let f = NumberFormat {
        in_bits: 16,
        acc_bits: 40,
        frac_bits: 8,
    };
    ArrayConfig::new(rows, cols, Backward::Interleaved, f).unwrap()
}

fn memory(bandwidth: usize, latency: u64, kb: usize) -> MemoryConfig {
    let mut m = user(bandwidth, latency).memory;
    (m.ifmap_sram_kb, m.filter_sram_kb, m.ofmap_sram_kb) = (kb, kb, kb);
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A larger batch: more training cycles, or an overflow that names the
    /// batch; the smaller batch overflows only if the larger one does.
    #[test]
    fn a_larger_batch_never_takes_fewer_cycles(a in batch(), b in batch(), latency in 0u64..100_000) {
        let (small, large) = (a.min(b), a.max(b));
        let (topo, sc) = (vgg_small(), user(10, latency));
        match (run(&topo, &sc, small), run(&topo, &sc, large)) {
            (Ok(s), Ok(l)) => {
                let (s, l) = (training_cycles(&s), training_cycles(&l));
                prop_assert!(l.0 >= s.0 && l.1 >= s.1, "{l:?} < {s:?}");
            }
            (Ok(_), Err(e)) => assert_overflow(&e, &format!("batch {large}")),
            (Err(e), Ok(_)) => prop_assert!(false, "batch {small} fails ({e}), {large} does not"),
            (Err(e), Err(_)) => assert_overflow(&e, &format!("batch {small}")),
        }
    }

    /// More layers (a longer prefix of the topology): never fewer cycles.
    #[test]
    fn more_layers_never_take_fewer_cycles(batch in batch(), cut in 1usize..9) {
        let topo = vgg_small();
        let mut prefix = topo.clone();
        prefix.layers.truncate(cut);
        let sc = user(10, 100);
        match (run(&prefix, &sc, batch), run(&topo, &sc, batch)) {
            (Ok(p), Ok(all)) => {
                let (p, all) = (training_cycles(&p), training_cycles(&all));
                prop_assert!(all.0 >= p.0 && all.1 >= p.1);
            }
            (Err(e), Ok(_)) => prop_assert!(false, "the prefix fails ({e}), the whole does not"),
            (_, Err(e)) => assert_overflow(&e, &format!("batch {batch}")),
        }
    }

    /// The off-chip model at any N, latency and bandwidth: a run, or an
    /// overflow; a longer latency never ends the run sooner.
    #[test]
    fn a_longer_latency_never_makes_a_run_faster(
        m in 1usize..80, k in 1usize..80, n in batch(),
        bandwidth in prop_oneof![1usize..64, Just(usize::MAX)],
        l1 in any::<u64>(), l2 in any::<u64>(), backward: bool,
        compute in any::<u64>(), kb in 1usize..64,
    ) {
        let (cfg, g) = (cfg(16, 16), Gemm { m, k, n });
        let pass = if backward { Pass::Backward } else { Pass::Forward };
        let (short, long) = (l1.min(l2), l1.max(l2));
        let a = offchip::run(&cfg, g, pass, &memory(bandwidth, short, kb), compute);
        let b = offchip::run(&cfg, g, pass, &memory(bandwidth, long, kb), compute);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                prop_assert!(b.total_cycles_incl_prefetch >= a.total_cycles_incl_prefetch);
                prop_assert!(b.prefetch_cycles >= a.prefetch_cycles);
                prop_assert_eq!(a.words(), b.words(), "latency moves no word");
                prop_assert!(a.total_cycles >= compute / 2, "the compute is in the run");
            }
            (Err(e), Ok(_)) => prop_assert!(false, "latency {short} fails ({e}), {long} does not"),
            (_, Err(e)) => prop_assert!(e.to_string().ends_with("exceed 2^64 - 1")),
        }
    }

    /// Energy grows with every counter, and stays finite for any counts.
    #[test]
    fn energy_grows_with_the_counts(
        m in batch(), k in 1usize..5000, n in 1usize..5000, grow in 0usize..1 << 20,
    ) {
        let cfg = cfg(16, 16);
        let model = EnergyModel::new(EnergyTable::default(), &cfg, BufferSizes {
            weights_kb: 64.0, activations_kb: 64.0, gradients_kb: 64.0, accumulators_kb: 64.0,
        });
        let count = |m: usize| {
            let mut st = Stats::default();
            sysgrad_emulator::fast::count_forward(&mut st, &cfg, (m, k, n)).ok()?;
            sysgrad_emulator::fast::count_backward(
                &mut st, &cfg, Backward::Interleaved, (m, k, n), DwSink::Drain).ok()?;
            Some(st)
        };
        if let (Some(a), Some(b)) = (count(m), count(m.saturating_add(grow))) {
            let (ea, eb) = (model.stats(&a).1, model.stats(&b).1);
            prop_assert!(ea.total_pj().is_finite() && eb.total_pj().is_finite());
            prop_assert!(eb.total_pj() >= ea.total_pj());
            let off = model.off_chip(u64::MAX);
            prop_assert!(off.total_pj().is_finite());
        }
    }
}

/// Issue 28: `--batch 18446744073709551615` panicked in `timing`; 2^48
/// printed "-1492.2% fewer training cycles (0.06x)" and 2^52 a first
/// layer of 188 cycles. Each is an overflow error naming the layer and
/// the batch, and no report is written.
#[test]
fn batches_past_the_counters_are_refused_naming_layer_and_batch() {
    let (topo, sc) = (vgg_small(), config_16x16());
    for batch in [usize::MAX, 1 << 48, 1 << 52] {
        let e = run(&topo, &sc, batch).unwrap_err();
        assert_overflow(
            &e,
            &format!("layer Conv1_1 (M 32 x K 27 x N 1024 per sample) at batch {batch}"),
        );
    }
    // A batch that counts (2^32): every ratio is a ratio of true counts.
    let r = run(&topo, &sc, 1 << 32).unwrap();
    let layers = report::layer_reports(&r);
    let w = report::reduction(layers.iter()).unwrap().unwrap();
    assert!(w.training_cycle_ratio >= 1.0, "{}", w.training_cycle_ratio);
    assert!((0.0..1.0).contains(&w.training_cycle_reduction));
    let first = &layers[0].training_interleaved;
    assert!(
        first.total_cycles > (1u64 << 32) * 1024,
        "{}",
        first.total_cycles
    );
}

/// Issue 28: a topology row with sizes of 2^32 panicked; an FC row of
/// 10^8 x 10^8 x 10^8 hung.
#[test]
fn huge_topology_rows_are_refused_at_once() {
    let sc = config_16x16();
    let conv = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n\
                big, 4294967296, 4294967296, 3, 3, 4294967296, 64, 1,\n";
    let fc = "Layer, M, N, K,\nFC, 100000000, 100000000, 100000000,\n";
    for (name, text) in [("big", conv), ("FC", fc)] {
        let topo = parse_topology(text, Path::new("t.csv")).unwrap();
        let started = std::time::Instant::now();
        let e = run(&topo, &sc, 1).unwrap_err();
        assert_overflow(&e, &format!("layer {name}"));
        assert!(
            started.elapsed().as_secs() < 5,
            "refused at once, not after a walk"
        );
    }
}

/// Issue 28: `OffChipLatency: 18446744073709551615` (USER bandwidth)
/// reported fewer cycles than latency 0: the sum wrapped.
#[test]
fn the_largest_off_chip_latency_is_an_overflow_not_a_wrap() {
    let topo = vgg_small();
    let zero = run(&topo, &user(10, 0), 1).unwrap();
    let some = run(&topo, &user(10, 1 << 40), 1).unwrap();
    assert!(training_cycles(&some).0 > training_cycles(&zero).0);
    let e = run(&topo, &user(10, u64::MAX), 1).unwrap_err();
    assert_overflow(&e, "layer Conv1_1");
}
