//! Register-level model of `sa_top`: the PE mesh with its skew and deskew
//! lines. One call to [`Array::step`] is one rising clock edge.
//!
//! The configuration chooses two things once, when the array is built:
//!
//! * the pipelining, a type implementing [`Mesh`] over the registers every
//!   array has ([`Core`]): [`NoneArray`] (`none.rs`) or [`DenseArray`]
//!   (`dense.rs`), which never use each other;
//! * the number format, a type implementing [`PeArith`] that the mesh is
//!   generic over: [`Fixed`] (`fixed.rs`), with deferred saturation or
//!   without, or [`Float`] (`float.rs`); `arith.rs` says how to add one.
//!
//! [`Array`] is the one enum over the combinations, so its users (the
//! driver, the issue engine, the co-simulation) hold one type and call
//! one `step`, and every mesh's hot loops are compiled for its format.

mod arith;
mod core;
mod delay;
mod dense;
mod fixed;
pub(crate) mod float;
mod none;
mod ports;

pub use self::core::{Core, Mesh};
pub use arith::PeArith;
pub use delay::DelayLines;
pub use dense::DenseArray;
pub use fixed::Fixed;
pub use float::Float;
pub use none::NoneArray;
pub use ports::{CycleInput, CycleOutput, Wave};
use sysgrad_config::{ArrayConfig, Numbers, Pipelining};

/// The state of every register in `sa_top`, of the configured pipelining
/// and number format.
// Every variant is a few hundred bytes of vector headers, held in place
// and stepped without indirection; none is worth boxing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Array {
    /// `pipelining = "none"`, fixed point.
    None(NoneArray<Fixed>),
    /// `pipelining = "none"`, fixed point with deferred saturation.
    NoneDeferred(NoneArray<Fixed<true>>),
    /// `pipelining = "dense"`, fixed point (which has no deferred
    /// saturation).
    Dense(DenseArray<Fixed>),
    /// `pipelining = "none"`, floating point.
    NoneFloat(NoneArray<Float>),
    /// `pipelining = "dense"`, floating point.
    DenseFloat(DenseArray<Float>),
}

/// `$body` with `$mesh` bound to the array's mesh, whichever it is.
macro_rules! each_mesh {
    ($array:expr, $mesh:ident => $body:expr) => {
        match $array {
            Array::None($mesh) => $body,
            Array::NoneDeferred($mesh) => $body,
            Array::Dense($mesh) => $body,
            Array::NoneFloat($mesh) => $body,
            Array::DenseFloat($mesh) => $body,
        }
    };
}

impl Array {
    /// The array right after reset: every register 0.
    pub fn new(cfg: ArrayConfig) -> Self {
        let f = match cfg.numbers() {
            Numbers::Fixed(f) => f,
            Numbers::Float(f) => {
                // `ArrayConfig` refuses deferred saturation with a float format.
                return match cfg.pipelining() {
                    Pipelining::None => Array::NoneFloat(NoneArray::new(cfg, Float::new(f))),
                    Pipelining::Dense => Array::DenseFloat(DenseArray::new(cfg, Float::new(f))),
                };
            }
        };
        match (cfg.pipelining(), cfg.deferred_saturation()) {
            (Pipelining::None, false) => Array::None(NoneArray::new(cfg, Fixed::new(f))),
            (Pipelining::None, true) => Array::NoneDeferred(NoneArray::new(cfg, Fixed::new(f))),
            // `ArrayConfig` refuses deferred saturation on a dense array.
            (Pipelining::Dense, _) => Array::Dense(DenseArray::new(cfg, Fixed::new(f))),
        }
    }

    /// The registers every array has.
    pub fn core(&self) -> &Core {
        each_mesh!(self, m => m.core())
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.core().cfg
    }

    pub fn rows(&self) -> usize {
        self.core().rows()
    }

    pub fn cols(&self) -> usize {
        self.core().cols()
    }

    /// What a reset edge does: every register to 0 (the state of [`Array::new`]).
    pub fn reset(&mut self) {
        each_mesh!(self, m => m.reset())
    }

    /// One rising clock edge with `inp` applied.
    pub fn step(&mut self, inp: &CycleInput) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU was just checked to support AVX2.
            return unsafe { self.step_avx2(inp) };
        }
        self.step_portable(inp)
    }

    /// [`Array::step`] compiled with AVX2, which has the 64-bit compares
    /// that let the saturating multiply-add loops vectorise.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn step_avx2(&mut self, inp: &CycleInput) {
        self.step_portable(inp)
    }

    #[inline(always)]
    fn step_portable(&mut self, inp: &CycleInput) {
        if inp.rst {
            return self.reset();
        }
        each_mesh!(self, m => m.step(inp))
    }

    /// The `y_out` port this cycle (C lanes).
    pub fn y_out(&self) -> &[i64] {
        &self.core().y_q
    }

    /// The `dx_out` port this cycle (R lanes).
    pub fn dx_out(&self) -> &[i64] {
        &self.core().dx_q
    }

    /// The `w_out` port this cycle (C lanes).
    pub fn w_out(&self) -> &[i64] {
        each_mesh!(self, m => m.w_out())
    }

    /// The dW that row `i`'s east PE presents on the `dw_out` port (its
    /// `dw` register clamped, with deferred saturation).
    pub fn dw_east(&self, i: usize) -> i64 {
        each_mesh!(self, m => m.dw_east(i))
    }

    /// PE (`i`, `j`)'s stochastic-rounding generator, the RTL's `sr_state`
    /// register (32 bits; reset to `StochasticBits::new(seed, i, j).state`),
    /// or `None` for a format without one (fixed point).
    pub fn sr_state(&self, i: usize, j: usize) -> Option<u32> {
        // A PE that rounds to nearest has no generator register (the
        // emulator's steps unread).
        self.cfg().numbers().stochastic_seed()?;
        let k = i * self.cols() + j;
        each_mesh!(self, m => m.sr_state(k))
    }

    /// The product registers (`prod_sum`, `prod_dw`, PE (i, j) at
    /// `i * cols + j`) of an array without pipelining, whatever its
    /// number format; `None` on a dense array.
    pub fn product_registers(&self) -> Option<(&[i64], &[i64])> {
        match self {
            Array::None(n) => Some((&n.prod_sum, &n.prod_dw)),
            Array::NoneDeferred(n) => Some((&n.prod_sum, &n.prod_dw)),
            Array::NoneFloat(n) => Some((&n.prod_sum, &n.prod_dw)),
            Array::Dense(_) | Array::DenseFloat(_) => None,
        }
    }

    /// The registers only a dense array has (`ws`, `wp` and the wave
    /// control each PE took, PE (i, j) at `i * cols + j`), whatever its
    /// number format; `None` on an array without pipelining.
    pub fn dense_registers(&self) -> Option<(&[i64], &[i64], &[Wave])> {
        match self {
            Array::Dense(d) => Some((&d.ws, &d.wp, &d.ctl)),
            Array::DenseFloat(d) => Some((&d.ws, &d.wp, &d.ctl)),
            Array::None(_) | Array::NoneDeferred(_) | Array::NoneFloat(_) => None,
        }
    }

    /// The output ports as seen during the current cycle.
    pub fn outputs(&self) -> CycleOutput {
        CycleOutput {
            y: self.y_out().to_vec(),
            dx: self.dx_out().to_vec(),
            dw: (0..self.rows()).map(|i| self.dw_east(i)).collect(),
            w: self.w_out().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sysgrad_config::float::{FloatFormat, FloatKind, Rounding, StochasticBits};
    use sysgrad_config::{Backward, FixedFormat, NumberFormat, Numbers};
    use sysgrad_isa::{Mode, ModeCode};
    use sysgrad_rng::Rng;

    /// A small non-square array; also the `none` mesh's tests' array.
    pub(super) fn config() -> ArrayConfig {
        let fmt = NumberFormat {
            in_bits: 8,
            acc_bits: 16,
            frac_bits: 3,
        };
        ArrayConfig::new(5, 3, Backward::Interleaved, fmt).unwrap()
    }

    /// The configurations the tests step: both pipelinings, and without
    /// pipelining every combination of multiplier register and deferred
    /// saturation.
    fn configs() -> Vec<ArrayConfig> {
        let mut v = vec![config().with_pipelining(Pipelining::Dense).unwrap()];
        for (mul_reg, deferred) in [(false, false), (true, false), (false, true), (true, true)] {
            let cfg = config()
                .with_multiplier_register(mul_reg)
                .unwrap()
                .with_deferred_saturation(deferred)
                .unwrap();
            v.push(cfg);
        }
        // Floating point, both pipelinings, with and without the multiplier
        // register, stochastic rounding and mixed formats.
        let float = FloatFormat {
            weights: FloatKind::Bf16,
            activations: FloatKind::E4M3,
            gradients: FloatKind::E5M2,
            rounding: Rounding::Stochastic,
            seed: 7,
        };
        let f = config().with_numbers(Numbers::Float(float)).unwrap();
        v.push(f);
        v.push(f.with_multiplier_register(true).unwrap());
        v.push(f.with_pipelining(Pipelining::Dense).unwrap());
        // Fixed point with stochastic rounding, on every mesh.
        let sr = FixedFormat {
            widths: config().format(),
            rounding: Rounding::Stochastic,
            seed: 11,
        };
        let s = config().with_numbers(Numbers::Fixed(sr)).unwrap();
        v.push(s);
        v.push(s.with_multiplier_register(true).unwrap());
        v.push(s.with_deferred_saturation(true).unwrap());
        v.push(s.with_pipelining(Pipelining::Dense).unwrap());
        v
    }

    /// The AVX2 build of `step` and the portable one agree register for
    /// register on random stimulus in every mode code, resets included
    /// (only one of them runs in the other tests, depending on the CPU).
    #[test]
    fn dispatched_and_portable_steps_agree() {
        for cfg in configs() {
            let (mut a, mut b) = (Array::new(cfg), Array::new(cfg));
            let mut rng = Rng::new(0x1234_5678);
            for _ in 0..2000 {
                let inp = CycleInput::random(&cfg, &mut rng, 100);
                a.step(&inp);
                b.step_portable(&inp);
                assert_eq!(a, b, "{}", cfg.tag());
            }
        }
    }

    /// Whether the array decodes `code` as IDLE: a reserved code, and on a
    /// dense array every code it does not have.
    fn decodes_as_idle(cfg: &ArrayConfig, code: ModeCode) -> bool {
        match cfg.pipelining() {
            Pipelining::None => code.is_reserved(),
            Pipelining::Dense => Mode::dense_from_code(code.code()) == Mode::Idle,
        }
    }

    /// A reset edge clears every register whatever the mode and data, as
    /// the RTL's synchronous reset does; a code the array does not have
    /// holds every register IDLE holds.
    #[test]
    fn reset_clears_everything_and_reserved_codes_hold() {
        for cfg in configs() {
            let mut a = Array::new(cfg);
            let mut rng = Rng::new(99);
            for _ in 0..300 {
                let mut inp = CycleInput::random(&cfg, &mut rng, usize::MAX);
                let before = a.clone();
                if decodes_as_idle(&cfg, inp.mode) {
                    let mut idle = inp.clone();
                    idle.mode = Mode::Idle.into();
                    let (mut held, mut idled) = (a.clone(), a.clone());
                    held.step(&inp);
                    idled.step(&idle);
                    assert_eq!(held, idled, "code {} differs from IDLE", inp.mode.code());
                }
                a.step(&inp);
                if a != before && rng.below(10) == 0 {
                    inp.rst = true;
                    let mut r = a.clone();
                    r.step(&inp);
                    assert_eq!(r, Array::new(cfg));
                }
            }
            assert_ne!(a, Array::new(cfg), "random stimulus left the array empty");
        }
    }

    /// The array is the mesh of its configuration's pipelining, in its
    /// arithmetic.
    #[test]
    fn the_configuration_chooses_the_mesh() {
        let none = config();
        assert!(matches!(Array::new(none), Array::None(_)));
        let deferred = none.with_deferred_saturation(true).unwrap();
        assert!(matches!(Array::new(deferred), Array::NoneDeferred(_)));
        let dense = none.with_pipelining(Pipelining::Dense).unwrap();
        assert!(matches!(Array::new(dense), Array::Dense(_)));
        let float = configs()
            .into_iter()
            .find(|c| c.numbers().float().is_some() && c.dense())
            .unwrap();
        assert!(matches!(Array::new(float), Array::DenseFloat(_)));
        let float = float.with_pipelining(Pipelining::None).unwrap();
        assert!(matches!(Array::new(float), Array::NoneFloat(_)));
    }

    /// `sr_state` starts at `StochasticBits::new(seed, i, j)` and steps once
    /// per cycle that writes the PE's weight: each UPDATE cycle (two with
    /// the multiplier register), nothing else; a PE that rounds to
    /// nearest has none.
    #[test]
    fn every_update_cycle_steps_each_pes_generator_once() {
        let cfgs = configs();
        assert_eq!(Array::new(cfgs[0]).sr_state(0, 0), None);
        for cfg in cfgs {
            let Some(seed) = cfg.numbers().stochastic_seed() else {
                continue;
            };
            let mut a = Array::new(cfg);
            let (r, c) = (cfg.rows(), cfg.cols());
            let mut rng = Rng::new(5);
            let mut steps = 0;
            for _ in 0..200 {
                let mut inp = CycleInput::random(&cfg, &mut rng, usize::MAX);
                if cfg.dense() {
                    // Global modes only: the waves' updates are the
                    // co-simulation's to check.
                    inp.wave = Default::default();
                }
                steps += usize::from(decodes_as_update(&cfg, inp.mode));
                a.step(&inp);
                for (i, j) in [(0, 0), (r - 1, c - 1), (r / 2, c - 1)] {
                    let mut g = StochasticBits::new(seed, i, j);
                    for _ in 0..steps {
                        g.draw();
                    }
                    assert_eq!(a.sr_state(i, j), Some(g.state), "{} ({i}, {j})", cfg.tag());
                }
            }
            assert!(steps > 5, "{steps} updates");
        }
    }

    /// Whether the array runs `code` as UPDATE.
    fn decodes_as_update(cfg: &ArrayConfig, code: ModeCode) -> bool {
        let mode = match cfg.pipelining() {
            Pipelining::None if code.is_reserved() => Mode::Idle,
            Pipelining::None => code.mode(),
            Pipelining::Dense => Mode::dense_from_code(code.code()),
        };
        mode == Mode::Update
    }
}
