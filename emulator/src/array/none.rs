//! The array without pipelining (`pipelining = "none"`): one global mode
//! per cycle for every PE, optionally a multiplier register in each PE
//! (`docs/ARCHITECTURE.md`, Multiplier register) and deferred saturation.
//!
//! [`NoneArray::step`] computes every PE from the register values before
//! the edge: the arithmetic of a mode reads the neighbours' old rows
//! first, and the shifting registers (`x` east, `d`/`dv` south, `w`
//! south, `dw` east) move afterwards, each as one block copy. One loop
//! per mode, over whole rows, so the mode and edge tests are out of the
//! PE loop; `step` allocates nothing.

use super::arith::{PeArith, Product};
use super::core::{sums_east, sums_south, Core, Mesh};
use super::ports::CycleInput;
use sysgrad_config::{ArrayConfig, MAX_DIM};
use sysgrad_isa::Mode;

/// The registers of an array without pipelining, in number format `N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoneArray<N: PeArith> {
    pub core: Core,
    /// The weight each PE presents to its multipliers and its south
    /// neighbour ([`PeArith::shown`] of `w`): with deferred saturation `w`
    /// holds the exact difference an UPDATE left (DW+2 bits); without,
    /// the two are equal. Not a register: refreshed whenever `w` changes.
    pub w_sat: Vec<i64>,
    /// The product registers of a PE with a multiplier register: the
    /// product entering `psv`/`psh`, and the one entering `dw`. Empty
    /// without one (zero product stages).
    pub prod_sum: Vec<i64>,
    pub prod_dw: Vec<i64>,
    /// Each PE's SGD generator (`sr_state`).
    pub sr_state: Vec<N::Generator>,
    arith: N,
}

impl<N: PeArith> Mesh for NoneArray<N> {
    type Arith = N;

    fn new(cfg: ArrayConfig, arith: N) -> Self {
        let pes = cfg.rows() * cfg.cols();
        NoneArray {
            core: Core::new(cfg),
            w_sat: vec![0; pes],
            prod_sum: vec![0; pes * cfg.product_stages()],
            prod_dw: vec![0; pes * cfg.product_stages()],
            sr_state: generators(&cfg, arith),
            arith,
        }
    }

    fn core(&self) -> &Core {
        &self.core
    }

    #[inline(always)]
    fn arith(&self) -> N {
        self.arith
    }

    fn reset(&mut self) {
        self.core.clear();
        for v in [&mut self.w_sat, &mut self.prod_sum, &mut self.prod_dw] {
            v.fill(0);
        }
        self.sr_state = generators(&self.core.cfg, self.arith);
    }

    /// The south row's weights as the PEs present them.
    fn w_out(&self) -> &[i64] {
        let (r, c) = (self.core.rows(), self.core.cols());
        &self.w_sat[(r - 1) * c..]
    }

    fn sr_state(&self, k: usize) -> Option<u32> {
        N::sr_state(&self.sr_state[k])
    }

    #[inline(always)]
    fn step(&mut self, inp: &CycleInput) {
        let (r, c) = (self.core.rows(), self.core.cols());
        debug_assert_eq!((inp.x.len(), inp.w.len(), inp.dy.len()), (r, c, c));
        let arith = self.arith;
        self.core.sample_outputs(arith);
        let mode = match inp.mode.mode() {
            Mode::BwdIl if !self.core.cfg.interleaved() => Mode::Idle,
            m => m,
        };
        match mode {
            Mode::Idle | Mode::Stream => {}
            Mode::Load => self.load(&inp.w),
            Mode::Fwd => self.forward(inp),
            Mode::BwdDx | Mode::BwdDw | Mode::BwdIl => self.backward(mode, inp),
            Mode::Update => self.update(inp.lr_shift),
            Mode::Drain => self.drain(),
        }
        self.core.shift_input_skews(inp);
    }
}

impl<N: PeArith> NoneArray<N> {
    /// LOAD: each PE takes its north neighbour's weight as that one
    /// presents it (clamped, with deferred saturation), so every loaded
    /// weight is in range.
    #[inline(always)]
    fn load(&mut self, w_north: &[i64]) {
        let (r, c) = (self.core.rows(), self.core.cols());
        self.w_sat.copy_within(0..(r - 1) * c, c);
        self.w_sat[..c].copy_from_slice(w_north);
        self.core.w.copy_from_slice(&self.w_sat);
    }

    /// FWD: x moves east, psv south and takes `w * x_in`.
    #[inline(always)]
    fn forward(&mut self, inp: &CycleInput) {
        let r = self.core.rows();
        let x_west = self.core.x_west(inp);
        if self.core.cfg.multiplier_register() {
            self.fwd_with_product_registers(&x_west);
            self.shift_x_east(&x_west[..r]);
        } else {
            // x and psv move first: each PE's new x is its x_in, its
            // psv the sum it adds to.
            self.shift_x_east(&x_west[..r]);
            let core = &mut self.core;
            sums_south(&mut core.psv, 0..r, core.cfg.cols());
            self.arith
                .accumulate(Product::Forward, &mut core.psv, &self.w_sat, &core.x, None);
        }
    }

    /// BWD_DX, BWD_DW or BWD_IL: d and dv move south, x east (if dW is
    /// computed); psh moves east and takes `w * d_in`, dw takes
    /// `d_in * x_in` where dy is valid.
    #[inline(always)]
    fn backward(&mut self, mode: Mode, inp: &CycleInput) {
        let (r, c) = (self.core.rows(), self.core.cols());
        let x_west = self.core.x_west(inp);
        let (mut d_north, mut dv_north) = ([0i64; MAX_DIM], [false; MAX_DIM]);
        for j in 0..c {
            let (v, d) = self.core.dy_skew.output(j, (inp.dy_valid, inp.dy[j]));
            (d_north[j], dv_north[j]) = (d, v);
        }
        let mul_reg = self.core.cfg.multiplier_register();
        if mul_reg {
            self.bwd_with_product_registers(mode, &x_west, &d_north, &dv_north);
        }
        if mode.computes_dw() {
            self.shift_x_east(&x_west[..r]);
        }
        let core = &mut self.core;
        core.d.copy_within(0..(r - 1) * c, c);
        core.d[..c].copy_from_slice(&d_north[..c]);
        core.dv.copy_within(0..(r - 1) * c, c);
        core.dv[..c].copy_from_slice(&dv_north[..c]);
        if !mul_reg {
            // The moving registers moved first: each PE's new d, dv and x
            // are its inputs.
            let arith = self.arith;
            if mode.computes_dx() {
                sums_east(&mut core.psh, 0..r, c);
                arith.accumulate(Product::Dx, &mut core.psh, &self.w_sat, &core.d, None);
            }
            if mode.computes_dw() {
                arith.accumulate(Product::Dw, &mut core.dw, &core.d, &core.x, Some(&core.dv));
            }
        }
    }

    /// UPDATE: `w -= step(dw)` in every PE, `dw` cleared.
    #[inline(always)]
    fn update(&mut self, lr_port: u32) {
        // A PE built with a constant shift ignores the port.
        let lr = self.core.cfg.pe_lr_shift(lr_port);
        let arith = self.arith;
        let core = &mut self.core;
        if core.cfg.multiplier_register() {
            // The rounded step waits a cycle in prod_dw (ARCHITECTURE.md,
            // Multiplier register): w takes the one registered before.
            for k in 0..core.w.len() {
                let r = arith.draw(&mut self.sr_state[k]);
                core.w[k] = arith.minus_step(self.w_sat[k], self.prod_dw[k], r);
                self.prod_dw[k] = arith.step(core.dw[k], lr, r);
                core.dw[k] = 0;
            }
        } else {
            for k in 0..core.w.len() {
                let r = arith.draw(&mut self.sr_state[k]);
                core.w[k] = arith.sgd(self.w_sat[k], core.dw[k], lr, r);
                core.dw[k] = 0;
            }
        }
        for (shown, &w) in self.w_sat.iter_mut().zip(&core.w) {
            *shown = arith.shown(w);
        }
    }

    /// DRAIN: each PE takes its west neighbour's dw as that one presents
    /// it (clamped), the west edge a zero.
    #[inline(always)]
    fn drain(&mut self) {
        let (arith, c) = (self.arith, self.core.cols());
        for row in self.core.dw.chunks_exact_mut(c) {
            for j in (1..c).rev() {
                row[j] = arith.read(row[j - 1]);
            }
            row[0] = 0;
        }
    }

    /// FWD on PEs with a multiplier register: each adds the product it
    /// registered the cycle before and registers this cycle's. Bottom row
    /// first, so that every PE reads its north neighbour's old `psv`.
    fn fwd_with_product_registers(&mut self, x_west: &[i64; MAX_DIM]) {
        let (r, c) = (self.core.rows(), self.core.cols());
        let (arith, core) = (self.arith, &mut self.core);
        for i in (0..r).rev() {
            for j in 0..c {
                let k = i * c + j;
                let above = if i == 0 { 0 } else { core.psv[k - c] };
                let x_in = if j == 0 { x_west[i] } else { core.x[k - 1] };
                core.psv[k] = arith.add(above, self.prod_sum[k]);
                self.prod_sum[k] = arith.product(Product::Forward, self.w_sat[k], x_in);
            }
        }
    }

    /// A BWD_DX, BWD_DW or BWD_IL cycle on PEs with a multiplier register,
    /// before the moving registers move: `d_north`/`dv_north` are row 0's
    /// north inputs and `x_west` the rows' west x.
    fn bwd_with_product_registers(
        &mut self,
        mode: Mode,
        x_west: &[i64; MAX_DIM],
        d_north: &[i64; MAX_DIM],
        dv_north: &[bool; MAX_DIM],
    ) {
        let (r, c) = (self.core.rows(), self.core.cols());
        for (i, &x_edge) in x_west[..r].iter().enumerate() {
            let (mut d_row, mut dv_row) = (*d_north, *dv_north);
            if i > 0 {
                let above = (i - 1) * c..i * c;
                d_row[..c].copy_from_slice(&self.core.d[above.clone()]);
                dv_row[..c].copy_from_slice(&self.core.dv[above]);
            }
            self.bwd_row_with_product_registers(i, mode, x_edge, &d_row, &dv_row);
        }
    }

    /// Row `i` of a BWD_DX, BWD_DW or BWD_IL cycle on PEs with a
    /// multiplier register; `d_in`/`dv_in` are the row's north inputs
    /// and `x_edge` its west x.
    fn bwd_row_with_product_registers(
        &mut self,
        i: usize,
        mode: Mode,
        x_edge: i64,
        d_in: &[i64; MAX_DIM],
        dv_in: &[bool; MAX_DIM],
    ) {
        let c = self.core.cols();
        let (arith, core) = (self.arith, &mut self.core);
        if mode.computes_dx() {
            // psh moves east: carry the west neighbour's old value.
            let mut west = 0;
            for (j, &d) in d_in[..c].iter().enumerate() {
                let k = i * c + j;
                let old = core.psh[k];
                core.psh[k] = arith.add(west, self.prod_sum[k]);
                self.prod_sum[k] = arith.product(Product::Dx, self.w_sat[k], d);
                west = old;
            }
        }
        if mode.computes_dw() {
            for j in 0..c {
                let k = i * c + j;
                let x_in = if j == 0 { x_edge } else { core.x[k - 1] };
                core.dw[k] = arith.add(core.dw[k], self.prod_dw[k]);
                self.prod_dw[k] = if dv_in[j] {
                    arith.product(Product::Dw, d_in[j], x_in)
                } else {
                    0
                };
            }
        }
    }

    /// `x <= x_in` in every PE: each row moves one PE east.
    #[inline(always)]
    fn shift_x_east(&mut self, west: &[i64]) {
        let c = self.core.cols();
        for (row, &v) in self.core.x.chunks_exact_mut(c).zip(west) {
            row.copy_within(0..c - 1, 1);
            row[0] = v;
        }
    }
}

/// Every PE's SGD generator after reset, PE (i, j) at `i * cols + j`.
pub(crate) fn generators<N: PeArith>(cfg: &ArrayConfig, arith: N) -> Vec<N::Generator> {
    let c = cfg.cols();
    (0..cfg.rows() * c)
        .map(|k| arith.generator(k / c, k % c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixed::Fixed;
    use super::super::tests::config;
    use super::*;
    use sysgrad_config::fixed;
    use sysgrad_rng::Rng;

    /// One clock edge: a reset edge is [`Mesh::reset`].
    fn edge<N: PeArith>(a: &mut NoneArray<N>, inp: &CycleInput) {
        if inp.rst {
            a.reset()
        } else {
            a.step(inp)
        }
    }

    /// The output ports: y, dx, dw and w.
    fn ports<N: PeArith>(a: &NoneArray<N>) -> [Vec<i64>; 4] {
        let dw = (0..a.core.rows()).map(|i| a.dw_east(i)).collect();
        let (y, dx) = (a.core.y_q.clone(), a.core.dx_q.clone());
        [y, dx, dw, a.w_out().to_vec()]
    }

    /// Deferred saturation changes what the accumulator and weight
    /// registers hold, not what anything reads from them: on random
    /// stimulus (16-bit sums of 8-bit products, which overflow) the
    /// outputs are the same every cycle, every register reads the same
    /// clamped, and some sum and some weight do leave their widths.
    #[test]
    fn deferred_saturation_changes_no_output() {
        for mul_reg in [false, true] {
            let at_once = config().with_multiplier_register(mul_reg).unwrap();
            let deferred = at_once.with_deferred_saturation(true).unwrap();
            let mut a = NoneArray::<Fixed>::new(at_once, Fixed::new(at_once.format().into()));
            let mut b =
                NoneArray::<Fixed<true>>::new(deferred, Fixed::new(deferred.format().into()));
            let (aw, dw_bits) = (at_once.format().acc_bits, at_once.format().in_bits);
            let mut rng = Rng::new(0xdefe);
            let (mut overflowed, mut weight_left) = (false, false);
            for _ in 0..3000 {
                let inp = CycleInput::random(&at_once, &mut rng, 500);
                assert_eq!(ports(&a), ports(&b));
                edge(&mut a, &inp);
                edge(&mut b, &inp);
                let sums = |x: &Core| [x.psv.clone(), x.psh.clone(), x.dw.clone()];
                for (held, raw) in sums(&a.core).iter().zip(sums(&b.core).iter()) {
                    for (&h, &v) in held.iter().zip(raw) {
                        assert_eq!(h, fixed::sat(v, aw));
                        overflowed |= !fixed::fits(v, aw);
                    }
                }
                for (&h, &v) in a.core.w.iter().zip(&b.core.w) {
                    assert_eq!(h, fixed::sat(v, dw_bits));
                    weight_left |= !fixed::fits(v, dw_bits);
                }
                assert_eq!(a.core.w, b.w_sat);
                let moving = |x: &Core| (x.x.clone(), x.d.clone(), x.dv.clone());
                assert_eq!(moving(&a.core), moving(&b.core));
            }
            assert!(overflowed, "no sum left AW bits (mul_reg {mul_reg})");
            assert!(weight_left, "no weight left DW bits (mul_reg {mul_reg})");
        }
    }
}
