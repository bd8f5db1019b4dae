//! Issue 29, item 2: figures are taken in the pipeline's steady state. No
//! run reports an iteration shorter than its busiest array's own work per
//! iteration (a utilisation above 100%), over random layers, partitions,
//! schedules (the SpikePipes in time chunks), backwards, links and up to
//! 64 arrays; `Setup::measure` refuses such a figure as an internal
//! error, and this checks it never comes to that.

use proptest::prelude::*;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::fast::EngineKind;
use sysgrad_pipeline::work::LayerWork;
use sysgrad_pipeline::{metrics, Link, PartitionChoice, Plan, Schedule, Setup, System, Work};

fn array() -> ArrayConfig {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../workloads/topologies/sysgrad_16x16.cfg"
    );
    let sc = sysgrad_workloads::scalesim::load_config(std::path::Path::new(path)).unwrap();
    sysgrad_workloads::scalesim::array_for(&sc).unwrap()
}

/// Layers of `shapes` (m, k, columns per sample and time step) over
/// `time_steps` time steps.
fn work(shapes: &[(usize, usize, usize)], time_steps: usize) -> Work {
    Work {
        name: "random".into(),
        layers: shapes
            .iter()
            .enumerate()
            .map(|(i, &(m, k, n))| LayerWork {
                name: format!("l{i}"),
                m,
                k,
                n_per_sample: n * time_steps,
                input_words: (k * n * time_steps) as u64,
            })
            .collect(),
        time_steps,
        model_index: Vec::new(),
    }
}

/// Split `layers` into `p` non-empty stages at the given cut choices.
fn counts(layers: usize, p: usize, cuts: &[usize]) -> Vec<usize> {
    let mut c = vec![1; p];
    for (i, &x) in cuts.iter().take(layers - p).enumerate() {
        c[(x + i) % p] += 1;
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn no_iteration_is_shorter_than_the_busiest_arrays_work(
        p in 1usize..=64,
        extra in 0usize..8,
        shapes in prop::collection::vec((1usize..24, 1usize..24, 1usize..6), 72),
        cuts in prop::collection::vec(0usize..64, 8),
        balanced in any::<bool>(),
        schedule in prop::sample::select(Schedule::ALL.to_vec()),
        backward in prop::sample::select(vec![Backward::Interleaved, Backward::Sequential]),
        m in 1usize..10,
        chunks in 1usize..3,
        width in prop::option::of(1u64..32),
        latency in 0u64..40,
    ) {
        // The SpikePipes run time chunks of a spiking network.
        let chunks = if schedule.spiking() { chunks } else { 1 };
        let layers = p + extra;
        let partition = if balanced {
            PartitionChoice::Balanced
        } else {
            PartitionChoice::Counts(counts(layers, p, &cuts))
        };
        let s = Setup {
            work: work(&shapes[..layers], chunks),
            system: System::uniform(array(), p, Link { width, latency }, 200.0).unwrap(),
            plan: Plan::new(schedule, backward, m, chunks, None).unwrap(),
            micro_batch_size: 1,
            partition,
            engine: EngineKind::Fast,
            dw_offload: true,
        };
        let measured = s.measure().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let f = &measured.figures;
        let busy = metrics::busy_per_iteration(&s.plan, &measured.loads);
        for (st, b) in f.per_stage.iter().zip(&busy) {
            prop_assert!(b.0 as f64 <= f.iteration_cycles, "{}: {} > {}", f.label, b.0, f.iteration_cycles);
            prop_assert!(st.utilization <= 1.0, "{}: {}", f.label, st.utilization);
        }
        prop_assert!(f.bubble_fraction >= 0.0);
    }
}

/// Issue 29, item 3: LayerPipe's split dX + dW costs exactly the fused
/// sequential backward, so LayerPipe is never slower than 1F1B on the
/// same arrays (the setup keeps 1F1B's order with split tasks when the
/// greedy order loses).
#[test]
fn layerpipe_is_never_slower_than_1f1b() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads/topologies");
    for name in ["vgg_small.csv", "resnet_small.csv"] {
        let topo = sysgrad_workloads::scalesim::load_topology(&root.join(name)).unwrap();
        let work = Work::of_topology(&topo, 1).unwrap();
        for p in 2..=work.layers.len().min(8) {
            let it = |schedule| {
                let s = Setup {
                    work: work.clone(),
                    system: System::uniform(array(), p, Link::new(16, 8).unwrap(), 200.0).unwrap(),
                    plan: Plan::new(schedule, Backward::Sequential, 8, 1, None).unwrap(),
                    micro_batch_size: 1,
                    partition: PartitionChoice::Balanced,
                    engine: EngineKind::Fast,
                    dw_offload: true,
                };
                s.measure().unwrap().figures.iteration_cycles
            };
            let (one, layerpipe) = (it(Schedule::OneFOneB), it(Schedule::LayerPipe));
            assert!(layerpipe <= one, "{name} p={p}: {layerpipe} > {one}");
        }
    }
}
