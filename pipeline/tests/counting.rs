//! Pipeline costs and the simulated timeline at any size up to 2^64 - 1
//! (issue 28): a figure or an overflow error naming the input, never a
//! panic or a wrapped figure; longer tasks (more stream columns) never
//! cost fewer cycles. Plus the cases: `--link-latency
//! 18446744073709551615` reported the zero-latency result and
//! `--micro-batch-size 18446744073709551615` panicked.

use proptest::prelude::*;
use std::path::Path;
use sysgrad_config::Backward;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_pipeline::cost::layer_costs;
use sysgrad_pipeline::metrics;
use sysgrad_pipeline::work::LayerWork;
use sysgrad_pipeline::{Link, PartitionChoice, PipelineError, Plan, Schedule, Setup, System, Work};
use sysgrad_workloads::scalesim;

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..64,
        (0u32..64).prop_map(|b| 1usize << b),
        any::<usize>(),
        Just(usize::MAX),
    ]
}

fn vgg_small(time_steps: usize) -> Result<Work, PipelineError> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads/topologies");
    let topo = scalesim::load_topology(&root.join("vgg_small.csv")).unwrap();
    Work::of_topology(&topo, time_steps)
}

fn setup(work: Work, link: Link, micro_batch_size: usize, schedule: Schedule) -> Setup {
    let array = sysgrad_config::ArrayConfig::default_16x16();
    Setup {
        work,
        system: System::uniform(array, 3, link, 200.0).unwrap(),
        plan: Plan::new(schedule, Backward::Interleaved, 4, 1, None).unwrap(),
        micro_batch_size,
        partition: PartitionChoice::Balanced,
        engine: EngineKind::Fast,
        dw_offload: false,
    }
}

fn assert_overflow(e: &PipelineError, input: &str) {
    assert!(matches!(e, PipelineError::Overflow { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains(input), "{text} does not name {input}");
    assert!(text.ends_with("exceed 2^64 - 1"), "{text}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A layer's task costs at any size: a figure or an overflow naming
    /// the layer; more columns never cost fewer cycles or MACs.
    #[test]
    fn task_costs_grow_with_the_columns(
        m in size(), k in size(), n in size(), grow in size(), dense: bool,
    ) {
        let mut cfg = sysgrad_config::ArrayConfig::default_16x16();
        if dense {
            cfg = cfg.with_pipelining(sysgrad_config::Pipelining::Dense).unwrap();
        }
        let layer = LayerWork { name: "l".into(), m, k, n_per_sample: 1, input_words: 1 };
        let costs = |n| layer_costs(&cfg, &layer, n, EngineKind::Fast);
        match (costs(n), costs(n.saturating_add(grow))) {
            (Ok(a), Ok(b)) => {
                for schedule in [Backward::Interleaved, Backward::Sequential] {
                    let (a, b) = (a.training(schedule), b.training(schedule));
                    prop_assert!(b.cycles >= a.cycles && b.macs >= a.macs);
                }
                prop_assert!(b.dx.cycles + b.dw.cycles >= a.dx.cycles + a.dw.cycles);
            }
            (Err(e), Ok(_)) => prop_assert!(false, "{n} columns fail ({e}), more do not"),
            (_, Err(e)) => assert_overflow(&e, "layer l"),
        }
    }

    /// The whole run at any link latency, micro-batch size and number of
    /// time steps: figures, or an overflow naming an input.
    #[test]
    fn a_run_gives_figures_or_names_its_overflow(
        latency in prop_oneof![0u64..10_000, any::<u64>(), Just(u64::MAX)],
        micro in size(), steps in prop_oneof![Just(1usize), size()],
    ) {
        let work = match vgg_small(steps) {
            Ok(w) => w,
            Err(e) => {
                assert_overflow(&e, &format!("at {steps} time steps"));
                return Ok(());
            }
        };
        let s = setup(work, Link::new(16, latency).unwrap(), micro, Schedule::OneFOneB);
        match s.measure() {
            Ok(m) => {
                prop_assert!(m.figures.iteration_cycles.is_finite());
                prop_assert!(m.timeline.makespan() >= latency, "a message waits the latency");
            }
            Err(e) => prop_assert!(
                matches!(e, PipelineError::Overflow { .. }) && e.to_string().ends_with("exceed 2^64 - 1"),
                "{e}"
            ),
        }
    }
}

/// The timeline of the same run at a longer link latency never ends
/// sooner (the list scheduler decides in the same order, later).
#[test]
fn a_longer_link_latency_never_makes_an_iteration_faster() {
    let mut last = 0.0;
    for latency in [0, 1, 8, 100, 10_000, 1 << 20, 1 << 40] {
        let s = setup(
            vgg_small(1).unwrap(),
            Link::new(16, latency).unwrap(),
            2,
            Schedule::OneFOneB,
        );
        let m = s.measure().unwrap();
        let cycles = metrics::iteration_cycles(&m.timeline);
        assert!(m.timeline.makespan() as f64 >= last, "latency {latency}");
        last = m.timeline.makespan() as f64;
        assert!(cycles > 0.0);
    }
}

/// Issue 28: the largest link latency wrapped to the zero-latency result.
#[test]
fn the_largest_link_latency_is_an_overflow_not_a_wrap() {
    let s = setup(
        vgg_small(1).unwrap(),
        Link::new(16, u64::MAX).unwrap(),
        2,
        Schedule::OneFOneB,
    );
    assert_overflow(
        &s.measure().unwrap_err(),
        "link latency 18446744073709551615",
    );
}

/// Issue 28: the largest micro-batch size panicked in `timing`.
#[test]
fn the_largest_micro_batch_size_is_an_overflow_not_a_panic() {
    for schedule in [Schedule::OneFOneB, Schedule::GPipe, Schedule::ZeroBubble] {
        let s = setup(
            vgg_small(1).unwrap(),
            Link::new(16, 8).unwrap(),
            usize::MAX,
            schedule,
        );
        assert_overflow(
            &s.measure().unwrap_err(),
            "micro-batch size 18446744073709551615",
        );
    }
    let e = vgg_small(usize::MAX).unwrap_err();
    assert_overflow(&e, "layer Conv1_1 at 18446744073709551615 time steps");
}

/// Issue 29: stage 0's first layer has no upstream to send dX to, so the
/// sequential backward does not run its BWD_DX passes: stage 0's dX task
/// is its other layers' only (the interleaved pass runs whole), and the
/// ticks of a run's progress add up to the steps it announced.
#[test]
fn the_first_layers_dx_is_not_counted() {
    let s = Setup {
        plan: Plan::new(Schedule::ZeroBubble, Backward::Sequential, 4, 1, None).unwrap(),
        ..setup(
            vgg_small(1).unwrap(),
            Link::new(16, 8).unwrap(),
            1,
            Schedule::GPipe,
        )
    };
    let table = s.cost_table().unwrap();
    let part = s.partition(&table).unwrap();
    let (loads, _) = s.loads(&table, &part).unwrap();
    let sum = |s: usize, f: fn(&sysgrad_pipeline::cost::TaskCosts) -> u64, skip: usize| {
        part.stages[s]
            .clone()
            .skip(skip)
            .map(|l| f(&table[s][l]))
            .sum::<u64>()
    };
    assert!(table[0][0].dx.cycles > 0);
    assert_eq!(loads[0].costs.dx.cycles, sum(0, |c| c.dx.cycles, 1));
    assert_eq!(
        loads[0].costs.backward_sequential.cycles,
        sum(0, |c| c.backward_sequential.cycles, 0) - table[0][0].dx.cycles
    );
    assert_eq!(
        loads[0].costs.backward_interleaved.cycles,
        sum(0, |c| c.backward_interleaved.cycles, 0)
    );
    assert_eq!(loads[1].costs.dx.cycles, sum(1, |c| c.dx.cycles, 0));
    let ticks = std::sync::atomic::AtomicU64::new(0);
    s.measure_with_progress(&|n| {
        ticks.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(ticks.into_inner(), s.progress_steps());
}
