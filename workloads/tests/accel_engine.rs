//! Training on the whole emulated accelerator (commands, buffers, DMA, a
//! host link) gives the array engine's weights bit for bit after every
//! step, for the shipped MLP, CNN and SNN, with the default buffers and
//! with buffers so small that products are split; a layer that cannot run
//! is named with the buffer and the size it needs.

mod common;

use common::*;
use sysgrad_accel::HostLink;
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
        assert!(moved.flow(sysgrad_accel::Traffic::PartialsOut).beats > 0 || moved.runs > 2);
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
