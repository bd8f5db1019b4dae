//! Dense layers resident on the accelerator (`compile::Residency`): the
//! MLP's hidden activations and gradients pass between its layers by ACT
//! and never cross the host link, the weights still equal the array
//! engine's after every step (on both pipelinings), and a layer that does
//! not fit, or cannot chain, is named with the reason.

mod common;

use common::*;
use sysgrad_accel::{HostLink, Traffic};
use sysgrad_config::{ArrayConfig, BufferDepths, Pipelining};
use sysgrad_workloads::arith::{AccelOptions, Bucket};
use sysgrad_workloads::compile::compile_network;
use sysgrad_workloads::model::load_model;
use sysgrad_workloads::train::{self, TrainOptions};

fn shipped(name: &str) -> sysgrad_workloads::model::Model {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("models/{name}.toml"));
    load_model(&path).unwrap()
}

fn options(cfg: ArrayConfig, train: usize) -> TrainOptions {
    TrainOptions {
        epochs: Some(1),
        max_train: Some(train),
        max_test: Some(24),
        progress: false,
        accelerator: Some(AccelOptions {
            cfg,
            link: HostLink::default(),
            record_trace: false,
        }),
        engine: sysgrad_emulator::fast::EngineKind::Fast,
        ..TrainOptions::default()
    }
}

#[test]
fn the_mlp_passes_its_hidden_layer_on_chip() {
    let m = shipped("mlp");
    let plan = compile_network(&m, &m.cfg).unwrap();
    let r = |i: usize| plan.layers[i].gemm.as_ref().unwrap().residency.clone();
    assert_eq!(r(1).relu_into, Some(3), "{:?}", r(1));
    assert_eq!(r(3).gate_into, Some(1), "{:?}", r(3));
    for pipelining in [Pipelining::None, Pipelining::Dense] {
        let cfg = m.cfg.with_pipelining(pipelining).unwrap();
        // Three full steps of 32 (no partial batch, whose shape takes the
        // DMA path).
        let run = train::train(&m, &split(&m), &options(cfg, 96)).unwrap();
        assert_eq!(run.steps_checked, 3, "{pipelining:?}");
        let l = &run.ledgers[0];
        let beats = |layer, bucket, t| l.accel_cost(layer, bucket).host.flow(t).beats;
        use Bucket::{Backward, Forward};
        // Y of layer 1 and dX of layer 3 stay on chip.
        assert_eq!(beats(1, Forward, Traffic::ResultsOut), 0);
        assert_eq!(beats(3, Backward, Traffic::ResultsOut), 0);
        // Layer 3's X is sent once (its bias row of ones, at the first
        // step); layer 1's X (the network input) once per step, not again
        // for its backward pass; layer 1's dY never.
        assert!(beats(3, Forward, Traffic::InputsIn) > 0);
        let x3_first = beats(3, Forward, Traffic::InputsIn);
        assert!(x3_first * 3 <= beats(1, Forward, Traffic::InputsIn));
        assert_eq!(beats(1, Backward, Traffic::InputsIn), 0);
        assert_eq!(beats(1, Backward, Traffic::GradientsIn), 0);
        assert_eq!(beats(3, Backward, Traffic::InputsIn), 0);
        // The last layer's dY comes from the host's loss.
        assert!(beats(3, Backward, Traffic::GradientsIn) > 0);
        let act = l.accel_cost(1, Forward).act_cycles + l.accel_cost(3, Backward).act_cycles;
        // 64 hidden rows = 4 blocks of 32 lines, each way, each step.
        assert_eq!(act, 3 * 2 * 4 * 32, "{pipelining:?}");
    }
}

#[test]
fn layers_that_stay_on_the_dma_path_say_why() {
    let m = shipped("mlp");
    let plan_with = |activations| {
        let small = BufferDepths {
            activations,
            ..m.cfg.buffers()
        };
        let cfg = m.cfg.with_buffers(small).unwrap();
        (compile_network(&m, &cfg).unwrap(), cfg)
    };
    let why = |plan: &sysgrad_workloads::compile::NetworkPlan, i: usize| {
        let r = plan.layers[i].gemm.as_ref().unwrap().residency.clone();
        assert!(r.x.is_none() && r.relu_into.is_none() && r.gate_into.is_none());
        r.why
    };
    // Each layer's X (5 blocks of 32 lines) fits alone, but would take
    // lines the other one's products use on the DMA path.
    let (plan, _) = plan_with(200);
    assert!(
        why(&plan, 1).contains("layer 3's products fewer"),
        "{}",
        why(&plan, 1)
    );
    assert!(
        why(&plan, 3).contains("layer 1's products fewer"),
        "{}",
        why(&plan, 3)
    );
    let (plan, cfg) = plan_with(150);
    let w = why(&plan, 1);
    assert!(
        w.contains("X needs 160 activation lines, 150 are left"),
        "{w}"
    );
    // Still bit exact, on the DMA path.
    let run = train::train(&m, &split(&m), &options(cfg, 64)).unwrap();
    assert_eq!(run.steps_checked, 2);
    let cnn = shipped("cnn");
    let plan = compile_network(&cnn, &cnn.cfg).unwrap();
    let why: Vec<String> = plan
        .layers
        .iter()
        .filter_map(|l| l.gemm.as_ref().map(|g| g.residency.why.clone()))
        .collect();
    assert!(why[0].starts_with("convolution"), "{why:?}");
    assert!(why[2].starts_with("momentum"), "{why:?}");
}

/// On an array with R != C, Y (blocked by C) is not the next X (blocked by
/// R): both layers are resident, neither is chained.
#[test]
fn no_chain_when_rows_and_columns_differ() {
    let layers = r#"
[input]
encoding = "analog"
time_steps = 1
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 20
[[layers]]
type = "relu"
[[layers]]
type = "dense"
units = 10
"#;
    let optimizer = "[optimizer]\nkind = \"sgd\"\nlr_shift = 11\ngrad_scale_shift = 4\n";
    let m = model(&small_model((16, 8), "", layers, optimizer, 16));
    let plan = compile_network(&m, &m.cfg).unwrap();
    let r = |i: usize| plan.layers[i].gemm.as_ref().unwrap().residency.clone();
    assert!(r(1).x.is_some() && r(3).x.is_some());
    assert_eq!((r(1).relu_into, r(3).gate_into), (None, None));
    assert!(r(1).why.contains("R != C"), "{}", r(1).why);
    let run = train::train(&m, &split(&m), &options(m.cfg, 32)).unwrap();
    assert_eq!(run.steps_checked, 2);
}
