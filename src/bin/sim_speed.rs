//! Simulation speed, measured in one run: the same stimulus through the
//! cycle-accurate emulator (`Array::step` per cycle), Verilator (1 and 2
//! model threads) and Icarus, as simulated cycles per second, for three
//! workloads: one interleaved backward pass of an N x N x N layer with an
//! in-place update on the default 16x16 array, `none` and dense (both also
//! timed in the fast exact mode), and one full training step (forward, backward, update of every
//! layer) of the CNN example on its own array. A fourth, the `none` pass in
//! floating point (bf16/E4M3/E5M2, stochastic update), is timed the same
//! way with `--only float` (not by default: its Verilator model takes ten
//! minutes to build). Each engine's time is the
//! best of several runs (5 for the emulator, 3 for Verilator).
//!
//!     cargo run --release --bin sim-speed -- [--size 256] [--icarus-cycles 4000]
//!
//! `--emulator-only` times the cycle-accurate emulator alone on the same
//! workloads (no simulator builds), for profiling it; `--only none|dense|cnn`
//! runs one workload. `sim-speed --help` lists every option (docs/CLI.md).
//!
//! With `--array-sizes 16,64,128,256` it instead times the cycle-accurate
//! emulator alone on TPU-sized arrays (an R^3 interleaved backward pass with
//! update on an R x R array, the Q7.8 / 40-bit format): simulated cycles and
//! PE-cycles per second, and each size's PE-cycle rate relative to the
//! first size. Verilator builds of 128x128 and larger take too long to be
//! part of a speed run (`scripts/lint_large.sh` lints them).

#[path = "../args.rs"]
#[allow(dead_code)] // the groups the benchmark does not take
mod args;
#[path = "../sim_speed_args.rs"]
mod sim_speed_args;

use clap::Parser;
use sim_speed_args::{SimSpeedArgs, SpeedWorkload};
use std::path::Path;
use std::time::Instant;
use sysgrad_config::float::{FloatFormat, FloatKind, Rounding};
use sysgrad_config::{ArrayConfig, Backward, Numbers, Pipelining};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{fast, Array, CycleInput, Driver, Stats};
use sysgrad_isa::Mode;
use sysgrad_rng::Rng;
use sysgrad_testbench::verilator::{self, BuildOptions};
use sysgrad_testbench::{icarus, stimulus};

/// A recorded stimulus and, where there is one, the fast mode's time for it.
struct Workload {
    name: String,
    cfg: ArrayConfig,
    inputs: Vec<CycleInput>,
    fast_seconds: Option<f64>,
}

/// The float format of the float workload: the FP8 training mix, with
/// stochastic rounding of the bf16 weights.
const FLOAT: FloatFormat = FloatFormat {
    weights: FloatKind::Bf16,
    activations: FloatKind::E4M3,
    gradients: FloatKind::E5M2,
    rounding: Rounding::Stochastic,
    seed: 1,
};

/// A `size` x `size` matrix of data words of `cfg`'s format for operand
/// `kind` (fixed point: full-range values; float: values within a few
/// binades of one, random sign and mantissa, so that the sums stay finite).
fn operand(
    cfg: &ArrayConfig,
    kind: fn(&FloatFormat) -> FloatKind,
    size: usize,
    rng: &mut Rng,
) -> ndarray::Array2<i64> {
    match cfg.numbers() {
        Numbers::Fixed(f) => rng.matrix(size, size, f.widths.in_bits),
        Numbers::Float(f) => {
            let e = kind(&f).encoding();
            ndarray::Array2::from_shape_simple_fn((size, size), || {
                let exp = e.bias as u32 - 3 + rng.below(7) as u32;
                let man = rng.below(1 << e.man_bits) as u32;
                let sign = if rng.below(2) == 0 { 0 } else { e.sign_mask() };
                i64::from(sign | exp << e.man_bits | man)
            })
        }
    }
}

/// One interleaved backward pass of a `size`^3 layer on the default array
/// with `pipelining`, in `numbers` (the default array's if `None`).
fn backward_pass(
    size: usize,
    pipelining: Pipelining,
    numbers: Option<Numbers>,
) -> Result<Workload, String> {
    let mut cfg = ArrayConfig::default_16x16()
        .with_pipelining(pipelining)
        .map_err(|e| e.to_string())?;
    if let Some(n) = numbers {
        cfg = cfg.with_numbers(n).map_err(|e| e.to_string())?;
    }
    let mut rng = Rng::new(7);
    let (w, x, dy) = (
        operand(&cfg, |f| f.weights, size, &mut rng),
        operand(&cfg, |f| f.activations, size, &mut rng),
        operand(&cfg, |f| f.gradients, size, &mut rng),
    );
    let sink = DwSink::Update { lr_shift: 8 };
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
    let fast_seconds = t.elapsed().as_secs_f64();
    assert_eq!(
        stats, rec.stats,
        "fast mode counters differ from the cycle-accurate ones"
    );
    Ok(Workload {
        name: format!("{} backward pass of a {size}^3 layer", cfg.tag()),
        cfg,
        inputs: rec.recording.take().unwrap().inputs,
        fast_seconds: Some(fast_seconds),
    })
}

/// One training step of the CNN example on its first batch of digits.
fn cnn_step() -> Result<Workload, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = sysgrad_workloads::model::load_model(&root.join("workloads/models/cnn.toml"))
        .map_err(|e| e.to_string())?;
    let samples = sysgrad_workloads::data::load(&sysgrad_workloads::model::default_data_path())
        .map_err(|e| e.to_string())?;
    let rec = sysgrad_workloads::train::record_training_step(&model, &samples)
        .map_err(|e| e.to_string())?;
    let mut cfg = model.cfg;
    cfg = cfg.with_backward(Backward::Interleaved);
    Ok(Workload {
        name: format!(
            "{} one CNN training step (batch {})",
            cfg.tag(),
            model.spec.training.batch_size
        ),
        cfg,
        inputs: rec.inputs,
        fast_seconds: None,
    })
}

/// The workloads, or with `--only` one of them (to profile one without
/// building the others).
fn workloads(size: usize, only: Option<SpeedWorkload>) -> Result<Vec<Workload>, String> {
    let wanted = |w: SpeedWorkload| only.is_none_or(|o| o == w);
    let mut all = Vec::new();
    if wanted(SpeedWorkload::None) {
        all.push(backward_pass(size, Pipelining::None, None)?);
    }
    if wanted(SpeedWorkload::Dense) {
        all.push(backward_pass(size, Pipelining::Dense, None)?);
    }
    // Its Verilator model takes minutes to build: only when asked for.
    if only == Some(SpeedWorkload::Float) {
        let float = Some(Numbers::Float(FLOAT));
        all.push(backward_pass(size, Pipelining::None, float)?);
    }
    if wanted(SpeedWorkload::Cnn) {
        all.push(cnn_step()?);
    }
    Ok(all)
}

/// The shortest of `runs` timings: the run least disturbed by the rest of
/// the machine.
fn best_of(runs: usize, mut f: impl FnMut() -> Result<f64, String>) -> Result<f64, String> {
    (0..runs).try_fold(f64::INFINITY, |best, _| Ok(best.min(f()?)))
}

/// A recorded stimulus held the way the Verilator harness holds it
/// (`testbench/cpp/tb_sa_top.cpp`): each cycle's lanes packed back to back
/// in one array, copied into the model's input ports cycle by cycle. Both
/// harnesses then read their stimulus in order from one block of memory,
/// so neither model's time includes waiting on scattered allocations.
struct PackedStimulus {
    /// Each cycle's input without its lanes.
    controls: Vec<CycleInput>,
    /// x, w and dy of every cycle, back to back (data is at most 16 bits:
    /// a signed value, or a float format's bit pattern).
    lanes: Vec<i16>,
    /// Whether a lane holds a bit pattern (zero-extended when read back).
    patterns: bool,
}

impl PackedStimulus {
    fn new(cfg: &ArrayConfig, inputs: &[CycleInput]) -> Self {
        let patterns = cfg.numbers().float().is_some();
        let mut lanes = Vec::new();
        let controls = inputs
            .iter()
            .map(|inp| {
                let words = inp.x.iter().chain(&inp.w).chain(&inp.dy);
                lanes.extend(words.map(|&v| {
                    let bits = if patterns {
                        u16::try_from(v).map(|b| b as i16).ok()
                    } else {
                        i16::try_from(v).ok()
                    };
                    bits.expect("data of at most 16 bits")
                }));
                CycleInput {
                    x: Vec::new(),
                    w: Vec::new(),
                    dy: Vec::new(),
                    ..inp.clone()
                }
            })
            .collect();
        PackedStimulus {
            controls,
            lanes,
            patterns,
        }
    }

    /// Steps `array` through every cycle, reusing one input's lanes.
    fn run(&self, array: &mut Array) {
        let (r, c) = (array.rows(), array.cols());
        let mut ports = CycleInput::zeros(&array.cfg(), Mode::Idle);
        for (control, lanes) in self.controls.iter().zip(self.lanes.chunks_exact(r + 2 * c)) {
            let (x, rest) = lanes.split_at(r);
            let (w, dy) = rest.split_at(c);
            for (port, words) in [(&mut ports.x, x), (&mut ports.w, w), (&mut ports.dy, dy)] {
                for (p, &v) in port.iter_mut().zip(words) {
                    *p = if self.patterns {
                        (v as u16).into()
                    } else {
                        v.into()
                    };
                }
            }
            (ports.rst, ports.mode, ports.lr_shift) = (control.rst, control.mode, control.lr_shift);
            (ports.dy_valid, ports.wave) = (control.dy_valid, control.wave);
            array.step(&ports);
        }
    }
}

/// The cycle-accurate emulator's time for `w`'s stimulus, best of 5.
fn emulator_seconds(w: &Workload) -> Result<f64, String> {
    let stimulus = PackedStimulus::new(&w.cfg, &w.inputs);
    // The packed stimulus drives the model exactly as the recording does.
    let (mut packed, mut recorded) = (Array::new(w.cfg), Array::new(w.cfg));
    stimulus.run(&mut packed);
    for inp in &w.inputs {
        recorded.step(inp);
    }
    if packed != recorded {
        return Err(format!(
            "{}: the packed stimulus ends in another state",
            w.name
        ));
    }
    best_of(5, || {
        let t = Instant::now();
        let mut array = Array::new(w.cfg);
        stimulus.run(&mut array);
        std::hint::black_box(&array);
        Ok(t.elapsed().as_secs_f64())
    })
}

fn report(w: &Workload, icarus_cycles: usize, work: &Path) -> Result<(), String> {
    let cycles = w.inputs.len() as f64;
    let emu = emulator_seconds(w)?;

    let stim = stimulus::render(&w.cfg, &w.inputs);
    let mut verilator_s = Vec::new();
    for threads in [1, 2] {
        eprintln!("{}: Verilator, {threads} thread(s) ...", w.name);
        let model =
            verilator::build(&w.cfg, BuildOptions::speed(threads)).map_err(|e| e.to_string())?;
        verilator_s.push(
            model
                .run_timed(&stim, &work.join(format!("t{threads}")))
                .map_err(|e| e.to_string())?,
        );
    }
    eprintln!("{}: Icarus on the first {icarus_cycles} cycles ...", w.name);
    let n_ic = icarus_cycles.min(w.inputs.len());
    let t = Instant::now();
    icarus::run_icarus(
        &w.cfg,
        &stimulus::render(&w.cfg, &w.inputs[..n_ic]),
        &work.join("icarus"),
    )
    .map_err(|e| e.to_string())?;
    let ic = t.elapsed().as_secs_f64();

    let v1 = cycles / verilator_s[0];
    println!("\n# {}: {} cycles\n", w.name, w.inputs.len());
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
    if let Some(f) = w.fast_seconds {
        row("emulator, fast exact (per tile)", cycles, f);
    }
    row("Verilator -O3, 1 thread", cycles, verilator_s[0]);
    row("Verilator -O3, --threads 2", cycles, verilator_s[1]);
    row("Icarus (incl. compile and I/O)", n_ic as f64, ic);
    Ok(())
}

/// The cycle-accurate emulator on an `n` x `n` array: an `n`^3 interleaved
/// backward pass with update, best of 3.
fn emulator_at(n: usize) -> Result<(usize, f64), String> {
    let cfg = ArrayConfig::new(
        n,
        n,
        Backward::Interleaved,
        ArrayConfig::default_16x16().format(),
    )
    .map_err(|e| e.to_string())?;
    let mut rng = Rng::new(11);
    let bits = cfg.format().in_bits;
    let (w, x, dy) = (
        rng.matrix(n, n, bits),
        rng.matrix(n, n, bits),
        rng.matrix(n, n, bits),
    );
    let mut rec = Driver::recording(cfg, false);
    let sink = DwSink::Update { lr_shift: 8 };
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
    let secs = best_of(3, || {
        let t = Instant::now();
        let mut array = Array::new(cfg);
        for inp in &inputs {
            array.step(inp);
        }
        std::hint::black_box(&array);
        Ok(t.elapsed().as_secs_f64())
    })?;
    Ok((inputs.len(), secs))
}

fn array_size_report(sizes: &[usize]) -> Result<(), String> {
    println!(
        "| array | simulated cycles | seconds | cycles/s | PE-cycles/s | PE-cycle rate vs {}x{} |",
        sizes[0], sizes[0]
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut first = None;
    for &n in sizes {
        eprintln!("{n}x{n}: emulator ...");
        let (cycles, secs) = emulator_at(n)?;
        let pe_rate = (cycles * n * n) as f64 / secs;
        let base = *first.get_or_insert(pe_rate);
        println!(
            "| {n}x{n} | {cycles} | {secs:.4} | {:.3e} | {pe_rate:.3e} | {:.2}x |",
            cycles as f64 / secs,
            pe_rate / base
        );
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let a = SimSpeedArgs::parse();
    match run(&a) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(a: &SimSpeedArgs) -> Result<(), String> {
    if !a.array_sizes.is_empty() {
        return array_size_report(&a.array_sizes);
    }
    let work = a.out.or(verilator::cache_root().join("speed"));
    let workloads = workloads(a.size, a.only)?;
    if a.emulator_only {
        // For profiling the emulator: no Verilator or Icarus builds.
        for w in &workloads {
            let secs = emulator_seconds(w)?;
            let cycles = w.inputs.len() as f64;
            println!(
                "{}: {cycles} cycles, {secs:.4} s, {:.3e} cycles/s",
                w.name,
                cycles / secs
            );
        }
        return Ok(());
    }
    for (k, w) in workloads.iter().enumerate() {
        report(w, a.icarus_cycles, &work.join(k.to_string()))?;
    }
    Ok(())
}
