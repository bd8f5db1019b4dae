//! Simulation speed, measured in one run: the same workload (one
//! interleaved backward pass of an N x N x N layer with an in-place update)
//! through the cycle-accurate emulator, the fast exact mode, Verilator
//! (1 and 2 model threads) and Icarus, as simulated cycles per second.
//!
//!     cargo run --release -p sysgrad-testbench --bin sim-speed -- [--size 256] [--icarus-cycles 4000]

use std::time::Instant;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::fast;
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{Driver, Stats};
use sysgrad_testbench::scenario::Rng;
use sysgrad_testbench::verilator::{self, BuildOptions};
use sysgrad_testbench::{icarus, stimulus};

fn arg(name: &str, default: usize) -> Result<usize, String> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} needs a whole number")),
    }
}

fn main() -> Result<(), String> {
    let size = arg("--size", 256)?;
    let icarus_cycles = arg("--icarus-cycles", 4000)?;
    let cfg = ArrayConfig::default_16x16();
    let mut rng = Rng::new(7);
    let bits = cfg.format.in_bits;
    let (w, x, dy) = (
        rng.matrix(size, size, bits),
        rng.matrix(size, size, bits),
        rng.matrix(size, size, bits),
    );
    let sink = DwSink::Update { lr_shift: 8 };
    let work = verilator::cache_root().join("speed");

    eprintln!("recording the stimulus ...");
    let mut rec = Driver::recording(cfg, false);
    gemm::backward(
        &mut rec,
        Backward::Interleaved,
        w.view(),
        x.view(),
        dy.view(),
        sink,
    )
    .map_err(|e| e.to_string())?;
    let inputs = rec.recording.take().unwrap().inputs;
    let cycles = inputs.len() as f64;
    let stim = stimulus::render(&cfg, &inputs);

    let t = Instant::now();
    let mut drv = Driver::new(cfg);
    gemm::backward(
        &mut drv,
        Backward::Interleaved,
        w.view(),
        x.view(),
        dy.view(),
        sink,
    )
    .map_err(|e| e.to_string())?;
    let emu = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut stats = Stats::default();
    fast::backward(
        &mut stats,
        &cfg,
        Backward::Interleaved,
        w.view(),
        x.view(),
        dy.view(),
        sink,
    )
    .map_err(|e| e.to_string())?;
    let fast_s = t.elapsed().as_secs_f64();
    assert_eq!(stats, drv.stats, "fast mode counters differ");

    let mut verilator_s = Vec::new();
    for threads in [1, 2] {
        eprintln!("building Verilator ({threads} thread(s)) ...");
        let model =
            verilator::build(&cfg, BuildOptions::speed(threads)).map_err(|e| e.to_string())?;
        verilator_s.push(
            model
                .run_timed(&stim, &work.join(format!("t{threads}")))
                .map_err(|e| e.to_string())?,
        );
    }

    eprintln!("running Icarus on the first {icarus_cycles} cycles ...");
    let n_ic = icarus_cycles.min(inputs.len());
    let stim_ic = stimulus::render(&cfg, &inputs[..n_ic]);
    let t = Instant::now();
    icarus::run_icarus(&cfg, &stim_ic, &work.join("icarus")).map_err(|e| e.to_string())?;
    let ic = t.elapsed().as_secs_f64();

    let v1 = cycles / verilator_s[0];
    println!(
        "# {} array, one interleaved backward pass of a {size}^3 layer: {} cycles\n",
        cfg.tag(),
        inputs.len()
    );
    println!("| engine | simulated cycles | seconds | cycles/s | vs Verilator 1 thread |");
    println!("|---|---:|---:|---:|---:|");
    let row = |name: &str, c: f64, s: f64| {
        println!(
            "| {name} | {c} | {s:.4} | {:.3e} | {:.2}x |",
            c / s,
            (c / s) / v1
        )
    };
    row("emulator, cycle-accurate", cycles, emu);
    row("emulator, fast exact (per tile)", cycles, fast_s);
    row("Verilator -O3, 1 thread", cycles, verilator_s[0]);
    row("Verilator -O3, --threads 2", cycles, verilator_s[1]);
    row("Icarus (incl. compile and I/O)", n_ic as f64, ic);
    Ok(())
}
