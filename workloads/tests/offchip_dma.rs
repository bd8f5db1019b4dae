//! The off-chip memory model (`scalesim::offchip`, SCALE-Sim's policy)
//! against the DMA traffic the accelerator emulator really moves, on one
//! FC training step (forward, interleaved backward, dW applied in place):
//! random layers on random arrays, the accelerator's buffers large enough
//! for every operand, the model's SRAM either as large (every operand
//! fits half of it) or too small for X, dY and dX.
//!
//! Word for word, per operand:
//! * X (forward and the dW pass), dY, Y and dX: equal when the model's
//!   operands fit; otherwise the model fetches X once per M tile, dY once
//!   per K tile and writes dX (reading it back) once per tile, which the
//!   accelerator, holding them, does not;
//! * W: the model fetches it for each pass and writes the updated tiles;
//!   the accelerator keeps the layer's weights in its weight buffer (one
//!   load before the first step, no weight DMA in a step) and sends them
//!   out only when the host reads them back.
//!
//! Both sides are checked against the closed forms written here, so the
//! test shares no counting code with either.

use ndarray::Array2;
use proptest::prelude::*;
use sysgrad_accel::schedule::{self, Arena, BackwardOperands, Output};
use sysgrad_accel::{Accelerator, BackwardMode, Device, HostLink, Traffic};
use sysgrad_config::{ArrayConfig, Backward, BufferDepths, NumberFormat};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_rng::Rng;
use sysgrad_workloads::scalesim::config::BandwidthMode;
use sysgrad_workloads::scalesim::offchip::{self, Pass};
use sysgrad_workloads::scalesim::{Gemm, OffChipRun, ScaleConfig};

const FORMAT: NumberFormat = NumberFormat {
    in_bits: 8,
    acc_bits: 24,
    frac_bits: 4,
};

/// An array whose buffers hold every operand of an m x k x n layer.
fn roomy(rows: usize, cols: usize, g: Gemm) -> ArrayConfig {
    let lines = |rows_of: usize, lanes: usize| rows_of.div_ceil(lanes) * g.n;
    let c = ArrayConfig::new(rows, cols, Backward::Interleaved, FORMAT).unwrap();
    c.with_buffers(BufferDepths {
        weights: g.m.div_ceil(cols) * g.k,
        activations: lines(g.k, rows),
        gradients: lines(g.m, cols),
        accumulators: lines(g.m, cols) + lines(g.k, rows),
        ..c.buffers()
    })
    .unwrap()
}

/// Words moved on the accelerator: (weights loaded before the step, the
/// step's flows, the weights read back after it).
fn accelerator(cfg: ArrayConfig, g: Gemm, seed: u64) -> (u64, sysgrad_accel::HostCounters, u64) {
    let mut rng = Rng::new(seed);
    let bits = FORMAT.in_bits;
    let (w, x, dy): (Array2<i64>, _, _) = (
        rng.matrix(g.m, g.k, bits),
        rng.matrix(g.k, g.n, bits),
        rng.matrix(g.m, g.n, bits),
    );
    let mut dev = Device::new(Accelerator::new(cfg), HostLink::default());
    let arena = Arena::whole(&cfg);
    let wl = schedule::weights_layout(&cfg, 0, g.m, g.k);
    schedule::load_weights(&mut dev, &wl, w.view()).unwrap();
    let loaded = dev.host.flow(Traffic::WeightsIn).words;
    let before = dev.host.clone();
    schedule::forward(&mut dev, &wl, x.view(), &arena, Output::Raw).unwrap();
    let ops = BackwardOperands {
        w: wl,
        x: x.view(),
        dy: dy.view(),
    };
    let sink = DwSink::Update { lr_shift: 3 };
    let mode = BackwardMode::Interleaved;
    schedule::backward(&mut dev, &ops, &arena, mode, sink, Output::Raw).unwrap();
    let step = dev.host.since(&before);
    let at_step_end = dev.host.clone();
    schedule::read_weights(&mut dev, &wl).unwrap();
    let read_back = dev.host.since(&at_step_end).flow(Traffic::WeightsOut).words;
    (loaded, step, read_back)
}

/// The model's forward and backward passes with SRAMs of `kb` KiB each.
fn model(cfg: &ArrayConfig, g: Gemm, kb: usize) -> (OffChipRun, OffChipRun) {
    let mut mem = ScaleConfig::for_array("t", cfg.rows(), cfg.cols()).memory;
    mem.interface_bandwidth = BandwidthMode::Calc;
    (mem.ifmap_sram_kb, mem.filter_sram_kb, mem.ofmap_sram_kb) = (kb, kb, kb);
    let run = |pass| offchip::run(cfg, g, pass, &mem, 1000).unwrap();
    (run(Pass::Forward), run(Pass::Backward))
}

/// Words in half of a `kb` KiB SRAM (the part the model's double buffer
/// fills while the array reads the other).
fn half(kb: usize) -> usize {
    kb * 1024 * 8 / FORMAT.in_bits as usize / 2
}

fn check(rows: usize, cols: usize, g: Gemm, kb: usize, seed: u64) -> Result<(), TestCaseError> {
    let cfg = roomy(rows, cols, g);
    let (loaded, step, read_back) = accelerator(cfg, g, seed);
    let words = |t| step.flow(t).words as usize;
    let (fwd, bwd) = model(&cfg, g, kb);
    let (m, k, n) = (g.m, g.k, g.n);
    let (m_tiles, k_tiles) = (m.div_ceil(cols), k.div_ceil(rows));

    // The accelerator, holding every operand: each moves once per pass.
    prop_assert_eq!(
        words(Traffic::InputsIn),
        2 * k * n,
        "X, forward and dW pass"
    );
    prop_assert_eq!(words(Traffic::GradientsIn), m * n, "dY");
    prop_assert_eq!(words(Traffic::ResultsOut), m * n + k * n, "Y and dX");
    prop_assert_eq!(words(Traffic::PartialsIn) + words(Traffic::PartialsOut), 0);
    prop_assert_eq!(words(Traffic::WeightsIn) + words(Traffic::WeightsOut), 0);
    prop_assert_eq!((loaded as usize, read_back as usize), (m * k, m * k));

    // The model: the same words where its half-buffers hold the operand,
    // its refetch factor where they do not.
    let fits = |words: usize| words <= half(kb);
    let x_factor = if fits(k * n) { 1 } else { m_tiles };
    prop_assert_eq!(fwd.x_reads as usize, k * n * x_factor, "model X, forward");
    prop_assert_eq!(bwd.x_reads as usize, k * n * x_factor, "model X, dW pass");
    // Per M block of the model's tiles: dY once if it fits, else once per
    // K tile; Y written once if it fits, else per K tile and read back.
    let mut dy = 0;
    let mut y = (0, 0);
    for i in 0..m_tiles {
        let block = tile(m, cols, i) * n;
        if fits(block) {
            dy += block;
            y.0 += block;
        } else {
            dy += block * k_tiles;
            y = (y.0 + block * k_tiles, y.1 + block * (k_tiles - 1));
        }
    }
    prop_assert_eq!(bwd.dy_reads as usize, dy, "model dY");
    prop_assert_eq!((fwd.writes as usize, fwd.acc_reads as usize), y, "model Y");
    let dx_factor = if fits(k * n) { 1 } else { m_tiles };
    prop_assert_eq!(
        bwd.writes as usize,
        m * k + k * n * dx_factor,
        "model W and dX"
    );
    prop_assert_eq!(
        bwd.acc_reads as usize,
        k * n * (dx_factor - 1),
        "model dX read back"
    );
    // Weights: once per pass in the model, never within a step on the
    // accelerator.
    prop_assert_eq!((fwd.w_reads as usize, bwd.w_reads as usize), (m * k, m * k));

    // Where every operand fits the model's half-buffers, its X, dY, Y and
    // dX words are the accelerator's DMA words.
    if fits(k * n) && dy == m * n && y == (m * n, 0) {
        let model_words = fwd.x_reads + bwd.x_reads + bwd.dy_reads + fwd.writes + bwd.writes;
        let accel_words =
            words(Traffic::InputsIn) + words(Traffic::GradientsIn) + words(Traffic::ResultsOut);
        prop_assert_eq!(model_words as usize - m * k, accel_words, "X, dY, Y and dX");
    }
    Ok(())
}

/// Rows (or columns) of tile `i` when `len` is cut into tiles of `size`.
fn tile(len: usize, size: usize, i: usize) -> usize {
    size.min(len - i * size)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// SRAMs of 1 KiB hold 512 8-bit words per half: the larger layers
    /// here spill, the smaller do not; 1024 KiB hold every layer.
    #[test]
    fn model_words_match_the_accelerators_dma(
        rows in 1usize..=6,
        cols in 1usize..=6,
        (m, k, n) in (1usize..=30, 1usize..=30, 1usize..=40),
        small_sram in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let kb = if small_sram { 1 } else { 1024 };
        check(rows, cols, Gemm { m, k, n }, kb, seed)?;
    }
}

/// One case of each regime by hand: everything fits; X spills.
#[test]
fn both_regimes() {
    check(4, 4, Gemm { m: 8, k: 8, n: 10 }, 1024, 1).unwrap();
    // 8 x 100 words of X > 512: the model fetches X for both M tiles.
    check(4, 4, Gemm { m: 8, k: 8, n: 100 }, 1, 2).unwrap();
}
