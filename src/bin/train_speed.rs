//! Training speed, measured in one run: the fixed-point network's training
//! step in the fast exact mode (every product's bits and counters of the
//! array) against the f32 reference's step, on the same network, the same
//! initial weights and the same batches (the two steps of a batch back to
//! back, so that both see the same load), as milliseconds per step,
//! samples per second and their ratio. Both run on all cores (rayon's pool:
//! `RAYON_NUM_THREADS` sets its size) and, with `--threads-too`, again on
//! one thread each, which shows what the threads gain.
//!
//!     cargo run --release --bin train-speed -- [--model FILE] [--steps 20]
//!
//! The default model is the Fashion-MNIST CNN
//! (`workloads/models/fashion/cnn.toml`; its data set must be installed).
//! The target of issue 30 is a ratio of at most 3.

#[path = "../train_speed_args.rs"]
mod train_speed_args;
use train_speed_args::TrainSpeedArgs as Args;

use clap::Parser;
use std::time::Instant;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_workloads::arith::Arith;
use sysgrad_workloads::data::{load_split, Sample};
use sysgrad_workloads::model::{load_model, Model};
use sysgrad_workloads::net::Network;
use sysgrad_workloads::train::{build_on, encode, epoch_order};

/// One training step of `net` on `batch`, timed.
fn timed_step<A: Arith>(
    net: &mut Network<A>,
    (x, labels): &(ndarray::Array4<f64>, Vec<u8>),
) -> Result<f64, String> {
    let t = Instant::now();
    net.train_step(net.input(x), labels)
        .map_err(|e| e.to_string())?;
    Ok(t.elapsed().as_secs_f64())
}

/// The first `steps + 1` batches of epoch 1, encoded as training encodes them.
fn batches(model: &Model, train: &[Sample], steps: usize) -> Vec<(ndarray::Array4<f64>, Vec<u8>)> {
    let spec = &model.spec;
    let order = epoch_order(spec.training.seed, 0, train.len());
    let mut spikes = sysgrad_rng::Rng::derive(spec.training.seed, "input-spikes");
    order
        .chunks(spec.training.batch_size)
        .take(steps + 1)
        .map(|chunk| {
            let samples: Vec<&Sample> = chunk.iter().map(|&i| &train[i]).collect();
            (
                encode::encode(&samples, &spec.input, &mut spikes),
                encode::labels(&samples),
            )
        })
        .collect()
}

/// Both networks' seconds per step, from the same initial weights. The
/// two steps of a batch run back to back (after one warm-up step each),
/// so that both networks see the same load on a shared machine.
fn time_both(
    model: &Model,
    data: &[(ndarray::Array4<f64>, Vec<u8>)],
) -> Result<(f64, f64), String> {
    let (mut fixed, mut float) = build_on(model, EngineKind::Fast);
    timed_step(&mut fixed, &data[0])?;
    timed_step(&mut float, &data[0])?;
    let (mut fx, mut fl) = (0.0, 0.0);
    for b in &data[1..] {
        fx += timed_step(&mut fixed, b)?;
        fl += timed_step(&mut float, b)?;
    }
    let n = (data.len() - 1) as f64;
    Ok((fx / n, fl / n))
}

fn run(a: &Args) -> Result<(), String> {
    if a.steps == 0 {
        return Err("--steps: 1 or more".into());
    }
    let model = load_model(&a.model).map_err(|e| e.to_string())?;
    let split = load_split(&model).map_err(|e| e.to_string())?;
    let data = batches(&model, &split.train, a.steps);
    if data.len() < 2 {
        return Err(format!(
            "{}: too few training samples for two steps",
            a.model.display()
        ));
    }
    let batch = model.spec.training.batch_size;
    let threads = rayon::current_num_threads();
    println!(
        "{} on {}: batch {batch}, {} timed steps each",
        model.spec.name,
        model.cfg.tag(),
        data.len() - 1
    );
    let mut rows = vec![(threads, time_both(&model, &data)?)];
    if a.threads_too && threads > 1 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .map_err(|e| e.to_string())?;
        rows.push((1, pool.install(|| time_both(&model, &data))?));
    }
    println!("| threads | fixed fast ms/step | f32 ms/step | fixed samples/s | f32 samples/s | fixed / f32 |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for (t, (fx, fl)) in rows {
        println!(
            "| {t} | {:.1} | {:.1} | {:.0} | {:.0} | {:.2}x |",
            fx * 1e3,
            fl * 1e3,
            batch as f64 / fx,
            batch as f64 / fl,
            fx / fl
        );
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run(&Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train-speed: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
