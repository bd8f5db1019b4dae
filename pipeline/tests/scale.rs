//! The cost table from clocked arrays equals the fast exact mode's on 8
//! arrays of different sizes (one of them dense), and a 64-array pipeline of ResNet-101 runs
//! every task exactly once.

use std::path::Path;
use sysgrad_config::{ArrayConfig, Backward, Pipelining};
use sysgrad_emulator::fast::EngineKind;
use sysgrad_pipeline::work::LayerWork;
use sysgrad_pipeline::{Link, PartitionChoice, Plan, Schedule, Setup, System, Work};
use sysgrad_workloads::scalesim;

fn setup(work: Work, system: System, engine: EngineKind, schedule: Schedule) -> Setup {
    Setup {
        work,
        system,
        plan: Plan::new(schedule, Backward::Sequential, 4, 1, None).unwrap(),
        micro_batch_size: 2,
        partition: PartitionChoice::Balanced,
        engine,
        dw_offload: true,
    }
}

#[test]
fn clocked_and_fast_costs_agree_on_eight_arrays() {
    let layers = (0..10)
        .map(|i| LayerWork {
            name: format!("l{i}"),
            m: 3 + i,
            k: 5 + 2 * i,
            n_per_sample: 4 + i % 3,
            input_words: 20,
        })
        .collect();
    let work = Work {
        name: "tiny".into(),
        layers,
        time_steps: 1,
        model_index: Vec::new(),
    };
    let sizes = [
        (4, 4),
        (4, 4),
        (3, 5),
        (8, 2),
        (4, 4),
        (2, 2),
        (5, 3),
        (4, 4),
    ];
    let arrays: Vec<ArrayConfig> = sizes
        .iter()
        .enumerate()
        .map(|(i, &(r, c))| {
            let f = ArrayConfig::default_16x16().format();
            let cfg = ArrayConfig::new(r, c, Backward::Interleaved, f).unwrap();
            // Array 1 is a dense one: its own cycle model, the same bits.
            if i == 1 {
                cfg.with_pipelining(Pipelining::Dense).unwrap()
            } else {
                cfg
            }
        })
        .collect();
    let system = System::new(arrays, Link::new(2, 3).unwrap(), 100.0).unwrap();
    for schedule in [
        Schedule::OneFOneB,
        Schedule::LayerPipe,
        Schedule::ZeroBubble,
    ] {
        let fast = setup(work.clone(), system.clone(), EngineKind::Fast, schedule);
        let cycle = setup(work.clone(), system.clone(), EngineKind::Cycle, schedule);
        assert_eq!(fast.cost_table().unwrap(), cycle.cost_table().unwrap());
        let (f, c) = (fast.measure().unwrap(), cycle.measure().unwrap());
        assert_eq!(f.timeline, c.timeline);
    }
}

#[test]
fn sixty_four_arrays_of_resnet101() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads/topologies");
    let topo = scalesim::load_topology(&root.join("resnet101.csv")).unwrap();
    let sc = scalesim::load_config(&root.join("sysgrad_16x16.cfg")).unwrap();
    let array = scalesim::array_for(&sc).unwrap();
    let work = Work::of_topology(&topo, 1).unwrap();
    assert_eq!(work.layers.len(), 105);
    let system = System::uniform(array, 64, Link::new(16, 8).unwrap(), 200.0).unwrap();
    let s = Setup {
        micro_batch_size: 1,
        ..setup(work, system, EngineKind::Fast, Schedule::LayerPipe)
    };
    let m = s.measure().unwrap();
    assert_eq!(m.partition.stages.len(), 64);
    // The steady-state search simulates the first guess or a doubling of it.
    let units = m.timeline.groups.last().unwrap().end;
    let first = s.figure_groups().iter().sum::<usize>();
    assert!((0..=3).any(|d| units == first << d), "{units} {first}");
    assert_eq!(m.timeline.tasks.len(), 64 * units * 3);
    let e = System::uniform(array, 65, Link::ideal(), 200.0).unwrap_err();
    assert!(e.to_string().contains("1..=64"), "{e}");
}
