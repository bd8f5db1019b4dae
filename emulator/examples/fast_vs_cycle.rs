//! How fast are the two modes? One interleaved backward pass (dX, dW, SGD
//! update) of a 256x256x256 layer on the default 16x16 array, run
//! cycle-accurately and in the fast exact mode, against plain i64 GEMMs of
//! the same size. Run with
//! `cargo run --release -p sysgrad-emulator --example fast_vs_cycle`.

use ndarray::Array2;
use std::hint::black_box;
use std::time::{Duration, Instant};
use sysgrad_config::{fixed, ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::fast::{Engine, FastEngine};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::Driver;

const SIZE: usize = 256;
const SINK: DwSink = DwSink::Update { lr_shift: 4 };

/// Full-range random data of `bits` bits (xorshift, fixed seed).
fn random(rows: usize, cols: usize, bits: u32, seed: &mut u64) -> Array2<i64> {
    let span = (fixed::max_of(bits) - fixed::min_of(bits) + 1) as u64;
    Array2::from_shape_simple_fn((rows, cols), || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        fixed::min_of(bits) + (*seed % span) as i64
    })
}

/// The fastest of `reps` runs (the machine is shared, so the minimum is
/// the least disturbed).
fn best_of<T>(reps: usize, mut f: impl FnMut() -> T) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// i-k-j loop over contiguous row-major i64: the plain cache-friendly GEMM.
fn naive_gemm(a: &[i64], b: &[i64], n: usize) -> Vec<i64> {
    let mut c = vec![0i64; n * n];
    for i in 0..n {
        let c_row = &mut c[i * n..(i + 1) * n];
        for k in 0..n {
            let s = a[i * n + k];
            for (c, &b) in c_row.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                *c += s * b;
            }
        }
    }
    c
}

fn main() {
    let cfg = ArrayConfig::default_16x16();
    let pes = (cfg.rows() * cfg.cols()) as f64;
    let bits = cfg.format().in_bits;
    let mut seed = 0x2545_f491_4f6c_dd1d;
    let w = random(SIZE, SIZE, bits, &mut seed);
    let x = random(SIZE, SIZE, bits, &mut seed);
    let dy = random(SIZE, SIZE, bits, &mut seed);
    let run = |e: &mut dyn Engine| {
        e.backward(Backward::Interleaved, w.view(), x.view(), dy.view(), SINK)
            .unwrap()
    };
    println!("layer {SIZE}x{SIZE}x{SIZE}, array {}", cfg.tag());

    let mut drv = Driver::new(cfg);
    let t = Instant::now();
    let cycle_res = run(&mut drv);
    let cycle_time = t.elapsed().as_secs_f64();
    let cycles = drv.stats.total().cycles as f64;
    println!(
        "cycle-accurate backward: {:.3} s, {cycles} simulated cycles, {:.3e} cycles/s, {:.3e} PE-updates/s",
        cycle_time,
        cycles / cycle_time,
        cycles * pes / cycle_time
    );

    let mut fast = FastEngine::new(cfg);
    let fast_res = run(&mut fast);
    assert_eq!(
        fast_res, cycle_res,
        "fast mode must equal the cycle-accurate one"
    );
    assert_eq!(fast.stats, drv.stats, "and count the same");
    let fast_time = best_of(5, || run(&mut FastEngine::new(cfg))).as_secs_f64();
    println!(
        "fast backward (no saturation possible): {:.3} ms",
        fast_time * 1e3
    );

    // Worst case for the fast mode: every row may saturate (32-bit
    // accumulators, all-extreme data), so all of it takes the clamped fold.
    let narrow = cfg
        .with_format(NumberFormat {
            acc_bits: 32,
            ..cfg.format()
        })
        .expect("32-bit accumulators fit 16-bit data");
    let ext = Array2::from_elem((SIZE, SIZE), fixed::min_of(bits));
    let sat_time = best_of(3, || {
        FastEngine::new(narrow).backward(
            Backward::Interleaved,
            ext.view(),
            ext.view(),
            ext.view(),
            SINK,
        )
    })
    .as_secs_f64();
    println!(
        "fast backward (every row clamped): {:.3} ms",
        sat_time * 1e3
    );

    let fwd_time = best_of(5, || FastEngine::new(cfg).forward(w.view(), x.view())).as_secs_f64();
    println!("fast forward: {:.3} ms", fwd_time * 1e3);

    let dot_time = best_of(3, || w.dot(&x)).as_secs_f64();
    let (wf, xf) = (w.as_slice().unwrap(), x.as_slice().unwrap());
    let naive_time = best_of(3, || naive_gemm(wf, xf, SIZE)).as_secs_f64();
    assert_eq!(
        naive_gemm(wf, xf, SIZE),
        w.dot(&x).into_raw_vec_and_offset().0
    );
    println!(
        "i64 GEMM {SIZE}^3: ndarray dot {:.3} ms, naive i-k-j loop {:.3} ms",
        dot_time * 1e3,
        naive_time * 1e3
    );

    // A backward pass is two GEMMs of this size (dX and dW).
    let plain = naive_time.min(dot_time);
    println!("ratios:");
    println!(
        "  cycle-accurate / fast backward      {:>10.0}x",
        cycle_time / fast_time
    );
    println!(
        "  fast backward / (2 x best i64 GEMM) {:>10.2}",
        fast_time / (2.0 * plain)
    );
    println!(
        "  clamped backward / (2 x best GEMM)  {:>10.2}",
        sat_time / (2.0 * plain)
    );
    println!(
        "  fast forward / best i64 GEMM        {:>10.2}",
        fwd_time / plain
    );
    println!(
        "  cycle-accurate / (2 x best GEMM)    {:>10.0}x",
        cycle_time / (2.0 * plain)
    );
}
