//! Randomised work for co-simulation. [`training_step`]: a forward pass,
//! an interleaved (or, on a sequential array, sequential) backward pass
//! with an in-place update, a sequential backward pass with dW drained, and
//! a few cycles of unsupported or idle modes, all on one random layer that
//! spans several tiles, with the format's extreme values mixed in.
//! [`random_cycles`]: no workload at all, every port random in every cycle,
//! resets included, for what no driver would ever do.

use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{CycleInput, Driver, Mode, ModeCode, Phase, Recording, Wave};
use sysgrad_rng::Rng;

/// The shape of one scenario: layer M x K x N, learning-rate shift, and the
/// seed of its data. Drawn from a seed by [`Spec::from_seed`]; shrinkable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub lr_shift: u32,
    pub seed: u64,
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "layer M={} K={} N={} lr_shift {} (data seed {})",
            self.m, self.k, self.n, self.lr_shift, self.seed
        )
    }
}

impl Spec {
    /// A layer of up to two tiles in each dimension and a batch of 1..=6.
    pub fn from_seed(cfg: &ArrayConfig, seed: u64) -> Spec {
        let mut rng = Rng::new(seed);
        let (r, c) = (cfg.rows() as i64, cfg.cols() as i64);
        Spec {
            m: rng.range(1, 2 * c) as usize,
            k: rng.range(1, 2 * r) as usize,
            n: rng.range(1, 6) as usize,
            // The array's constant shift, if it was built with one.
            lr_shift: cfg.pe_lr_shift(rng.range(0, 20) as u32),
            seed,
        }
    }
}

/// Runs the scenario of `seed` on the emulator, recording ports (and
/// registers with `snapshots`). Returns the recording and a description.
pub fn training_step(cfg: &ArrayConfig, seed: u64, snapshots: bool) -> (Recording, String) {
    run_spec(cfg, &Spec::from_seed(cfg, seed), snapshots)
}

/// Runs the scenario `spec` on the emulator (see [`training_step`]).
pub fn run_spec(cfg: &ArrayConfig, spec: &Spec, snapshots: bool) -> (Recording, String) {
    let mut rng = Rng::new(spec.seed.rotate_left(17) ^ 0xda7a);
    let (m, k, n, lr_shift) = (spec.m, spec.k, spec.n, spec.lr_shift);
    let bits = cfg.format().in_bits;
    let (w, x, dy) = (
        rng.matrix(m, k, bits),
        rng.matrix(k, n, bits),
        rng.matrix(m, n, bits),
    );

    let mut drv = Driver::recording(*cfg, snapshots);
    let mut run = |drv: &mut Driver| -> Result<(), sysgrad_emulator::DriveError> {
        gemm::forward(drv, w.view(), x.view())?;
        gemm::backward(
            drv,
            cfg.backward(),
            w.view(),
            x.view(),
            dy.view(),
            DwSink::Update { lr_shift },
        )?;
        drv.idle(2);
        gemm::backward(
            drv,
            Backward::Sequential,
            w.view(),
            x.view(),
            dy.view(),
            DwSink::Drain,
        )?;
        // Mode 5 with live data: computes on an interleaved array, holds on
        // a sequential one. On a dense array (where 5 is a bubble) also
        // STREAM cycles of random waves, IL ones among them.
        for t in 0..3 {
            let mut inp = CycleInput::zeros(cfg, Mode::BwdIl);
            inp.dy = (0..cfg.cols()).map(|_| rng.value(bits)).collect();
            inp.x = (0..cfg.rows()).map(|_| rng.value(bits)).collect();
            inp.dy_valid = t != 1;
            if cfg.dense() {
                drv.clock(inp.clone(), Phase::Idle);
                inp.mode = Mode::Stream.into();
                inp.wave = random_wave(cfg, &mut rng);
            }
            drv.clock(inp, Phase::Idle);
        }
        drv.drain();
        Ok(())
    };
    run(&mut drv).expect("scenario inputs are in range by construction");
    let what = format!("{spec}, {} cycles", drv.cycle());
    (drv.recording.take().unwrap(), what)
}

/// About one cycle in this many raises `rst` in [`random_cycles`].
pub const RESET_EVERY: usize = 64;

/// `cycles` cycles of random port values, recorded (with `snapshots`, every
/// register too): each cycle one of the 16 mode codes (reserved ones
/// included; half the time the previous cycle's code again, so that runs
/// of one mode carry data across the array), random x, w and dy with the
/// format's extremes mixed in, random `dy_valid` and `lr_shift` (0..=63),
/// and a reset in about one cycle of [`RESET_EVERY`]. Returns the
/// recording and a description.
pub fn random_cycles(
    cfg: &ArrayConfig,
    seed: u64,
    cycles: usize,
    snapshots: bool,
) -> (Recording, String) {
    let mut rng = Rng::new(seed ^ 0x7a9d_0c7c_1e55_0000);
    let mut drv = Driver::recording(*cfg, snapshots);
    let mut code = ModeCode::from(Mode::Idle);
    for _ in 0..cycles {
        if rng.below(2) == 0 {
            code = random_code(cfg, &mut rng);
        }
        drv.clock(random_input(cfg, &mut rng, code), Phase::Idle);
    }
    let rec = drv.recording.take().expect("recording driver");
    let resets = rec.inputs.iter().filter(|i| i.rst).count();
    let what = format!("random stimulus (seed {seed}): {cycles} cycles, {resets} resets");
    (rec, what)
}

/// Any of the 16 mode codes; on a dense array STREAM half the time, so
/// that waves fill the array.
fn random_code(cfg: &ArrayConfig, rng: &mut Rng) -> ModeCode {
    let codes = 1usize << sysgrad_isa::mode::MODE_BITS;
    if cfg.dense() && rng.below(2) == 0 {
        Mode::Stream.into()
    } else {
        ModeCode::new(rng.below(codes) as u8).expect("a code of MODE_BITS bits fits the port")
    }
}

/// A wave with every control field random over its whole port width
/// (bubble codes, BWD_IL on a sequential array and load rows past the
/// last row included). Its learning-rate shift is the `lr_shift` port's.
pub fn random_wave(cfg: &ArrayConfig, rng: &mut Rng) -> Wave {
    use sysgrad_isa::wave::WaveField;
    let mut field = |f: WaveField| rng.below(1 << f.bits(cfg.rows()));
    Wave {
        op: field(WaveField::Op) as u8,
        swap: field(WaveField::Swap) == 1,
        update: field(WaveField::Update) == 1,
        lr: 0,
        load: field(WaveField::Load) == 1,
        load_row: field(WaveField::LoadRow) as u16,
    }
}

/// A random bit pattern of format `kind`: one in four an edge value
/// (signed zeros, the smallest and largest subnormal, the smallest
/// normal, one, the largest finite value, infinity, NaN), one in eight
/// any pattern, the rest of either sign with an exponent within 4 of 1.0's
/// (sums that round rather than overflow).
pub fn float_word(rng: &mut Rng, kind: sysgrad_config::float::FloatKind) -> i64 {
    let e = kind.encoding();
    let man_mask = (1u32 << e.man_bits) - 1;
    let sign = if rng.below(2) == 0 { 0 } else { e.sign_mask() };
    let one = (e.bias as u32) << e.man_bits;
    let edges = [
        0,
        1,
        man_mask,
        man_mask + 1,
        one,
        e.max_finite,
        e.nan,
        if e.has_infinity {
            e.max_finite + 1
        } else {
            e.max_finite - 1
        },
    ];
    let bits = match rng.below(8) {
        0 | 1 => sign | edges[rng.below(edges.len())],
        2 => rng.next_u64() as u32 & ((1 << e.bits()) - 1),
        _ => {
            let exp = (e.bias + rng.range(-4, 4) as i32) as u32;
            sign | exp << e.man_bits | (rng.next_u64() as u32 & man_mask)
        }
    };
    // NaNs are one pattern; a negative one is still a NaN the PE must
    // canonicalise.
    i64::from(bits)
}

/// One cycle of random inputs in mode `code` (on a dense array with a
/// random wave).
fn random_input(cfg: &ArrayConfig, rng: &mut Rng, code: ModeCode) -> CycleInput {
    let bits = cfg.format().in_bits;
    let mut inp = CycleInput::zeros(cfg, code);
    match cfg.numbers().float() {
        None => {
            for v in inp.x.iter_mut().chain(&mut inp.w).chain(&mut inp.dy) {
                *v = rng.value(bits);
            }
        }
        Some(f) => {
            for (lanes, kind) in [
                (&mut inp.x, f.activations),
                (&mut inp.w, f.weights),
                (&mut inp.dy, f.gradients),
            ] {
                for v in lanes.iter_mut() {
                    *v = float_word(rng, kind);
                }
            }
        }
    }
    inp.dy_valid = rng.below(2) == 0;
    inp.lr_shift = rng.below(1 << sysgrad_config::LR_SHIFT_BITS) as u32;
    inp.rst = rng.below(RESET_EVERY) == 0;
    if cfg.dense() {
        inp.wave = random_wave(cfg, rng);
    }
    inp
}
