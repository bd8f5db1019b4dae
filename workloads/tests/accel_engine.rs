//! Training on the whole emulated accelerator (commands, buffers, DMA, a
//! host link) gives the array engine's weights bit for bit after every
//! step, for the shipped MLP, CNN and SNN, with the default buffers and
//! with buffers so small that products are split; a layer that cannot run
//! is named with the buffer and the size it needs. Dense layers resident
//! on chip (`compile::Residency`): the MLP's hidden activations and
//! gradients pass between its layers by ACT and never cross the host link;
//! a layer that does not fit, or cannot chain, is named with the reason.

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

fn on_accelerator(cfg: ArrayConfig, train: usize) -> TrainOptions {
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
        // The reference network runs on the fast array.
        engine: sysgrad_emulator::fast::EngineKind::Fast,
        ..TrainOptions::default()
    }
}

/// Two steps of each shipped model (batch 32), checked after each step.
#[test]
fn shipped_models_train_bit_exact_on_the_accelerator() {
    for name in ["mlp", "cnn", "snn"] {
        let m = shipped(name);
        let run = train::train(&m, &split(&m), &on_accelerator(m.cfg, 64)).unwrap();
        assert_eq!(run.steps_checked, 2, "{name}");
        // The sequential baseline ran on the accelerator too, and every
        // layer's products were charged end to end.
        let l = &run.ledgers[0];
        assert!(!l.accel_sequential_backward.is_empty(), "{name}");
        for (layer, seq) in &l.accel_sequential_backward {
            let il = l.accel_cost(*layer, Bucket::Backward);
            assert!(seq.run_cycles() > il.run_cycles(), "{name} layer {layer}");
            assert!(il.host.link_cycles() > 0);
        }
    }
}

/// The PEs' stochastic rounding (the fixed format's update) draws alike
/// on the accelerator and on the array engine: the MLP and the CNN, with
/// and without the multiplier register, on both pipelinings, bit exact
/// after every step.
#[test]
fn stochastic_rounding_trains_bit_exact_on_the_accelerator() {
    use sysgrad_config::float::Rounding;
    for name in ["mlp", "cnn"] {
        let mut m = shipped(name);
        m.cfg = m
            .cfg
            .with_update_rounding((Rounding::Stochastic, 9))
            .unwrap();
        let variants = [
            m.cfg.with_multiplier_register(true).unwrap(),
            m.cfg.with_pipelining(Pipelining::Dense).unwrap(),
        ];
        for cfg in variants {
            let model = sysgrad_workloads::model::Model { cfg, ..m.clone() };
            let run = train::train(&model, &split(&m), &on_accelerator(cfg, 64)).unwrap();
            assert_eq!(run.steps_checked, 2, "{name} {}", cfg.tag());
        }
    }
}

/// Buffers of 160 lines (300 for W) split the CNN's convolutions (X, dX and Y of a
/// whole batch do not fit) and share the weight buffer; still bit exact,
/// on both pipelinings.
#[test]
fn split_products_stay_bit_exact() {
    let m = shipped("cnn");
    for pipelining in [Pipelining::None, Pipelining::Dense] {
        let small = BufferDepths {
            weights: 300,
            activations: 160,
            gradients: 160,
            accumulators: 160,
            commands: 64,
        };
        let cfg = m
            .cfg
            .with_buffers(small)
            .unwrap()
            .with_pipelining(pipelining)
            .unwrap();
        let plan = compile_network(&m, &cfg).unwrap();
        assert!(!plan.weights_resident);
        let run = train::train(&m, &split(&m), &on_accelerator(cfg, 40)).unwrap();
        assert_eq!(run.steps_checked, 2);
        let moved = run.ledgers[0].accel_cost(0, Bucket::Backward).host;
        assert!(moved.flow(Traffic::PartialsOut).beats > 0 || moved.runs > 2);
    }
}

#[test]
fn a_layer_that_cannot_run_is_named() {
    let m = shipped("mlp");
    let tiny = BufferDepths {
        weights: 100,
        ..BufferDepths::default()
    };
    let e = compile_network(&m, &m.cfg.with_buffers(tiny).unwrap())
        .unwrap_err()
        .to_string();
    // Layer 1 is 64 x 65 (bias column): 4 blocks of 65 lines.
    assert!(e.contains("layers[1] (dense)"), "{e}");
    assert!(
        e.contains("260 lines of the weights buffer, which has 100"),
        "{e}"
    );
    let tiny = BufferDepths {
        accumulators: 3,
        ..BufferDepths::default()
    };
    let e = compile_network(&m, &m.cfg.with_buffers(tiny).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("layers[1] (dense): forward"), "{e}");
    assert!(
        e.contains("needs 4 lines of the accumulators buffer, which has 3"),
        "{e}"
    );
}

/// The MLP on an accelerator whose format differs is refused, naming it.
#[test]
fn the_accelerator_must_match_the_model() {
    let m = shipped("mlp");
    let e = train::build_on_accelerator(
        &m,
        AccelOptions {
            cfg: ArrayConfig::default_16x16(),
            link: HostLink::default(),
            record_trace: false,
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("accelerator config format"), "{e}");
}

/// Training through a float accelerator is refused by name (the engine's
/// host side computes on fixed-point words), not run on its patterns.
#[test]
fn training_through_a_float_accelerator_is_refused() {
    let m = shipped("mlp");
    let bf16: sysgrad_config::float::FloatFormat = "bf16".parse().unwrap();
    let cfg = m
        .cfg
        .with_numbers(sysgrad_config::Numbers::Float(bf16))
        .unwrap();
    let opts = AccelOptions {
        cfg,
        link: HostLink::default(),
        record_trace: false,
    };
    let e = train::build_on_accelerator(&m, opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("format.kind") && e.contains("fixed point only"),
        "{e}"
    );
}

/// Resident dense layers (`compile::Residency`): the MLP's hidden layer
/// passes Y and dX by ACT, bit exact on both pipelinings.
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
        let run = train::train(&m, &split(&m), &on_accelerator(cfg, 96)).unwrap();
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
    let run = train::train(&m, &split(&m), &on_accelerator(cfg, 64)).unwrap();
    assert_eq!(run.steps_checked, 2);
    let cnn = shipped("cnn");
    let plan = compile_network(&cnn, &cnn.cfg).unwrap();
    let why: Vec<String> = plan
        .layers
        .iter()
        .filter_map(|l| l.gemm.as_ref().map(|g| g.residency.why.clone()))
        .collect();
    // The first convolution (one channel: a pass per kernel element where
    // its patch matrix is one tile) stays with im2col, the second goes to
    // the address generator.
    assert!(
        why[0].starts_with("im2col on the host: the address generator's 9 passes"),
        "{why:?}"
    );
    assert!(why[1].starts_with("on the address generator"), "{why:?}");
    assert!(why[2].starts_with("momentum"), "{why:?}");
    // Buffers too shallow for the second convolution's image (16 channels
    // and the ones channel, 32 images of 4 x 4 pixels: 2 x 512 lines).
    let small = BufferDepths {
        activations: 1000,
        ..cnn.cfg.buffers()
    };
    let plan = compile_network(&cnn, &cnn.cfg.with_buffers(small).unwrap()).unwrap();
    let r = &plan.layers[3].gemm.as_ref().unwrap().residency;
    assert!(r.window.is_none(), "{}", r.why);
    assert!(
        r.why
            .contains("im2col on the host: the image needs 1024 activation lines, 1000 are left"),
        "{}",
        r.why
    );
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
    let run = train::train(&m, &split(&m), &on_accelerator(m.cfg, 32)).unwrap();
    assert_eq!(run.steps_checked, 2);
}

/// A convolution on the address generator with the weights updated in the
/// PEs (plain SGD: read back through the layer's weight layout), on an
/// array with R != C, stride 2 (no kernel element reaches every pixel, so
/// a zero tile clears dX first) and 8 input channels on 8 rows (the ones
/// channel takes a block of its own); both pipelinings, bit exact.
#[test]
fn a_strided_convolution_with_sgd_trains_on_the_address_generator() {
    let layers = r#"
[[layers]]
type = "conv2d"
filters = 8
kernel = 3
stride = 1
padding = 1
[[layers]]
type = "relu"
[[layers]]
type = "conv2d"
filters = 4
kernel = 3
stride = 2
padding = 1
[[layers]]
type = "relu"
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 10
"#;
    let optimizer = "[optimizer]\nkind = \"sgd\"\nlr_shift = 11\ngrad_scale_shift = 4\n";
    let m = model(&small_model((8, 4), "", layers, optimizer, 16));
    for pipelining in [Pipelining::None, Pipelining::Dense] {
        let cfg = m.cfg.with_pipelining(pipelining).unwrap();
        let plan = compile_network(&m, &cfg).unwrap();
        let r = &plan.layers[2].gemm.as_ref().unwrap().residency;
        assert!(r.window.is_some(), "{}", r.why);
        let run = train::train(&m, &split(&m), &on_accelerator(cfg, 32)).unwrap();
        assert_eq!(run.steps_checked, 2);
    }
}
