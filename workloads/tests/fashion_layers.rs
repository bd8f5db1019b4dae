//! What the Fashion-MNIST ResNet-8 and spiking CNN need of the layers:
//! convolutions with a stride (above the kernel too, as a 1x1 projection
//! with stride 2 is) against finite differences in f32 and against f32 in
//! fixed point; LIF neurons on multi-channel maps (`(C, T*B, H, W)`)
//! against the same neurons run one at a time; max pooling after LIF
//! against a backward written here from the definitions.

use ndarray::{Array2, Array4};
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_rng::Rng;
use sysgrad_workloads::arith::{Arith, FixedArith, FloatArith, Site, Step};
use sysgrad_workloads::model::{LifOutput, Reset, Surrogate};
use sysgrad_workloads::net::lif::{self, Lif, LifParams};
use sysgrad_workloads::net::{Conv2d, ConvGeom, MaxPool, Tensor};

/// lr 1 and no momentum: a backward step is `W -= dL/dW`.
const STEP: Step = Step {
    lr_shift: 0,
    momentum: None,
};

fn fixed() -> FixedArith {
    let fmt = NumberFormat {
        in_bits: 16,
        acc_bits: 40,
        frac_bits: 10,
    };
    FixedArith::new(
        ArrayConfig::new(4, 4, Backward::Interleaved, fmt).unwrap(),
        STEP,
    )
}

const TRAIN: Site = Site {
    layer: 1,
    training: true,
};

fn random(dims: (usize, usize, usize, usize), seed: u64, bound: f64) -> Array4<f32> {
    let mut rng = Rng::new(seed);
    Array4::from_shape_simple_fn(dims, || rng.symmetric(bound) as f32)
}

/// Strided geometries: ResNet-8's stride-2 3x3 convolution and stride-2
/// 1x1 projection, and a stride larger than the kernel on an odd map.
fn strided() -> Vec<ConvGeom> {
    let g = |c_in, h, w, kernel, stride, padding| ConvGeom {
        c_in,
        h,
        w,
        kernel,
        stride,
        padding,
    };
    vec![
        g(3, 7, 7, 3, 2, 1),
        g(4, 6, 6, 1, 2, 0),
        g(2, 9, 8, 2, 3, 0),
    ]
}

fn conv_f32(g: ConvGeom, w: &Array2<f32>, x: &Tensor<f32>) -> Tensor<f32> {
    let mut fl = FloatArith::new(STEP);
    let site = Site {
        layer: 1,
        training: false,
    };
    Conv2d::new(g, w.clone(), false)
        .forward(&mut fl, site, x)
        .unwrap()
}

/// `sum(r * y)`, in f64.
fn dot(y: &Tensor<f32>, r: &Tensor<f32>) -> f64 {
    y.iter().zip(r).map(|(a, b)| *a as f64 * *b as f64).sum()
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 2e-3 * (1.0 + want.abs()),
        "{what}: backward {got} vs finite difference {want}"
    );
}

#[test]
fn strided_convolution_backward_is_the_finite_difference_in_f32() {
    let h = 1e-2f32;
    for (t, g) in strided().into_iter().enumerate() {
        let (co, n) = (3, 2);
        let x = random((g.c_in, n, g.h, g.w), 10 + t as u64, 1.0);
        let w = random((co, g.patch_len() + 1, 1, 1), 20 + t as u64, 0.5)
            .into_shape_with_order((co, g.patch_len() + 1))
            .unwrap();
        let r = random((co, n, g.out_h(), g.out_w()), 30 + t as u64, 1.0);
        let mut fl = FloatArith::new(STEP);
        let mut conv = Conv2d::new(g, w.clone(), false);
        conv.forward(&mut fl, TRAIN, &x).unwrap();
        let dx = conv.backward(&mut fl, 1, &r, true).unwrap().unwrap();
        for idx in ndarray::indices(x.dim()) {
            let (mut up, mut down) = (x.clone(), x.clone());
            up[idx] += h;
            down[idx] -= h;
            let num = (dot(&conv_f32(g, &w, &up), &r) - dot(&conv_f32(g, &w, &down), &r))
                / (2.0 * h as f64);
            close(dx[idx] as f64, num, &format!("{g:?} dX{idx:?}"));
        }
        // W -= dW with lr 1: the step is the gradient (the bias column too).
        for idx in ndarray::indices(w.dim()) {
            let (mut up, mut down) = (w.clone(), w.clone());
            up[idx] += h;
            down[idx] -= h;
            let num = (dot(&conv_f32(g, &up, &x), &r) - dot(&conv_f32(g, &down, &x), &r))
                / (2.0 * h as f64);
            close(
                (w[idx] - conv.w[idx]) as f64,
                num,
                &format!("{g:?} dW{idx:?}"),
            );
        }
    }
}

#[test]
fn strided_convolution_in_fixed_point_is_f32_within_half_an_lsb() {
    let mut fx = fixed();
    let lsb = fx.real(1);
    for (t, g) in strided().into_iter().enumerate() {
        let co = 4;
        // Values on the fixed-point grid, so both networks see the same.
        let on_grid = |v: f32| fx.real(fx.quantize(v as f64)) as f32;
        let x = random((g.c_in, 3, g.h, g.w), 40 + t as u64, 1.0).mapv(on_grid);
        let w = random((co, g.patch_len() + 1, 1, 1), 50 + t as u64, 0.5)
            .into_shape_with_order((co, g.patch_len() + 1))
            .unwrap()
            .mapv(on_grid);
        let yf = conv_f32(g, &w, &x);
        let site = Site {
            layer: 1,
            training: false,
        };
        let (wi, xi) = (
            w.mapv(|v| fx.quantize(v as f64)),
            x.mapv(|v| fx.quantize(v as f64)),
        );
        let yi = Conv2d::new(g, wi, false)
            .forward(&mut fx, site, &xi)
            .unwrap();
        assert_eq!(yi.dim(), yf.dim(), "{g:?}");
        // The accumulator is exact and rounded once: half an lsb, plus
        // f32's own rounding of a sum of a few dozen products.
        for (a, b) in yi.iter().zip(&yf) {
            let d = (fx.real(*a) - *b as f64).abs();
            assert!(d <= lsb / 2.0 + 1e-4, "{g:?}: {} vs {b}", fx.real(*a));
        }
    }
}

fn lif_params(output: LifOutput) -> LifParams {
    LifParams {
        beta: 0.5,
        threshold: 1.0,
        reset: Reset::Subtract,
        surrogate: Surrogate::FastSigmoid,
        slope: 25.0,
        output,
    }
}

/// Currents on a 1/64 grid, so that beta = 0.5 keeps membranes exact in
/// Q.10 for several steps (fixed point and f32 then spike alike).
fn currents<A: Arith>(ar: &A, dims: (usize, usize, usize, usize), seed: u64) -> Tensor<A::V> {
    let mut rng = Rng::new(seed);
    Array4::from_shape_simple_fn(dims, || ar.quantize((rng.below(129) as f64 - 32.0) / 64.0))
}

/// One neuron's column of `(C, T*B, H, W)` as a `(1, T, 1, 1)` tensor.
fn neuron<V: Copy>(
    x: &Tensor<V>,
    (c, b, y, xx): (usize, usize, usize, usize),
    batch: usize,
) -> Tensor<V> {
    let steps = x.dim().1 / batch;
    Array4::from_shape_fn((1, steps, 1, 1), |(_, t, _, _)| {
        x[[c, t * batch + b, y, xx]]
    })
}

/// A LIF layer on a multi-channel map is the same neurons run one by one,
/// forward and backward, in both number systems.
fn lif_on_maps_is_lif_per_neuron<A: Arith>(ar: &A)
where
    A::V: Copy + PartialEq + PartialOrd + Default + std::fmt::Debug,
{
    let (c, steps, batch, h, w) = (3, 6, 2, 4, 5);
    let dims = (c, steps * batch, h, w);
    for output in [LifOutput::Spikes, LifOutput::Membrane] {
        let p = lif_params(output);
        let cur = currents(ar, dims, 7);
        let g = currents(ar, dims, 8);
        let mut layer = Lif::new(p);
        let out = layer.forward(ar, &cur, steps, true);
        let d_cur = layer.backward(ar, &g, steps).unwrap();
        let mut spiked = 0;
        for ci in 0..c {
            for b in 0..batch {
                for y in 0..h {
                    for x in 0..w {
                        let at = (ci, b, y, x);
                        let mut one = Lif::new(p);
                        let o = one.forward(ar, &neuron(&cur, at, batch), steps, true);
                        let d = one.backward(ar, &neuron(&g, at, batch), steps).unwrap();
                        assert_eq!(neuron(&out, at, batch), o, "{output:?} forward {at:?}");
                        assert_eq!(neuron(&d_cur, at, batch), d, "{output:?} backward {at:?}");
                        spiked += lif::run(ar, &p, &neuron(&cur, at, batch), steps)
                            .1
                            .iter()
                            .filter(|&&s| s == ar.quantize(1.0))
                            .count();
                    }
                }
            }
        }
        // The inputs make some neurons spike and others not.
        assert!(
            spiked > 10 && spiked < c * batch * h * w * steps / 2,
            "{spiked}"
        );
    }
}

#[test]
fn lif_on_multi_channel_maps_is_lif_per_neuron() {
    lif_on_maps_is_lif_per_neuron(&fixed());
    lif_on_maps_is_lif_per_neuron(&FloatArith::new(STEP));
}

#[test]
fn lif_on_maps_in_fixed_point_is_f32() {
    // On the 1/64 grid with beta = 0.5 the membranes are exact in both;
    // the surrogate gradient is rounded to the data format in fixed point.
    let fx = fixed();
    let fl = FloatArith::new(STEP);
    let (steps, batch) = (5, 2);
    let dims = (2, steps * batch, 3, 3);
    let p = lif_params(LifOutput::Spikes);
    let (ci, cf) = (currents(&fx, dims, 3), currents(&fl, dims, 3));
    let (gi, gf) = (currents(&fx, dims, 4), currents(&fl, dims, 4));
    let (mut li, mut lf) = (Lif::new(p), Lif::new(p));
    let si = li.forward(&fx, &ci, steps, true);
    let sf = lf.forward(&fl, &cf, steps, true);
    assert_eq!(si.mapv(|v| fx.real(v) as f32), sf, "spikes");
    let di = li.backward(&fx, &gi, steps).unwrap();
    let df = lf.backward(&fl, &gf, steps).unwrap();
    // Each step rounds a product or two (half an lsb each), carried back
    // through at most `steps` decays of 0.5: under 2 lsb in all.
    let lsb = fx.real(1);
    for (a, b) in di.iter().zip(&df) {
        let d = (fx.real(*a) - *b as f64).abs();
        assert!(d <= 2.0 * lsb, "{} vs {b}", fx.real(*a));
    }
}

/// Max pooling after LIF: the pooled spike is the OR of the window, and
/// the gradient of each window goes to its first maximum (the first
/// spike, or the window's first neuron when none spiked), then back
/// through that neuron's BPTT.
#[test]
fn max_pooling_after_lif_routes_the_gradient_to_one_spike() {
    let fl = FloatArith::new(STEP);
    let (steps, batch) = (6, 2);
    let dims = (2, steps * batch, 4, 4);
    let p = lif_params(LifOutput::Spikes);
    let cur = currents(&fl, dims, 11);
    let mut lif_layer = Lif::new(p);
    let mut pool = MaxPool::new(2, 2);
    let spikes = lif_layer.forward(&fl, &cur, steps, true);
    let pooled = pool.forward::<FloatArith>(&spikes, true);
    let g = currents(&fl, pooled.dim(), 12);
    let d_spikes = pool.backward(&fl, &g).unwrap();
    let d_cur = lif_layer.backward(&fl, &d_spikes, steps).unwrap();

    // The definitions, written out.
    let mut want_ds = Array4::<f32>::zeros(dims);
    for ((c, n, oy, ox), out) in pooled.indexed_iter() {
        let window: Vec<(usize, usize)> = (0..2)
            .flat_map(|i| (0..2).map(move |j| (2 * oy + i, 2 * ox + j)))
            .collect();
        let or = window.iter().any(|&(y, x)| spikes[[c, n, y, x]] == 1.0);
        assert_eq!(*out, if or { 1.0 } else { 0.0 }, "OR of the window");
        let first = window
            .iter()
            .copied()
            .find(|&(y, x)| spikes[[c, n, y, x]] == 1.0)
            .unwrap_or(window[0]);
        want_ds[[c, n, first.0, first.1]] += g[[c, n, oy, ox]];
    }
    assert_eq!(d_spikes, want_ds, "max pool backward");
    let (mem, spk) = lif::run(&fl, &p, &cur, steps);
    for idx in ndarray::indices((dims.0, batch, dims.2, dims.3)) {
        let (c, b, y, x) = idx;
        // BPTT of one neuron: dmem_t = dS_t * surrogate(mem_t - thr)
        // + beta * dmem_{t+1} (the reset is detached).
        let mut carry = 0.0f64;
        for t in (0..steps).rev() {
            let col = t * batch + b;
            let u = mem[[c, col, y, x]] as f64 - p.threshold;
            let sg = 1.0 / (1.0 + p.slope * u.abs()).powi(2);
            carry = want_ds[[c, col, y, x]] as f64 * sg + p.beta * carry;
            let got = d_cur[[c, col, y, x]] as f64;
            assert!(
                (got - carry).abs() <= 1e-5 * (1.0 + carry.abs()),
                "{idx:?} t {t}: {got} vs {carry} (spike {})",
                spk[[c, col, y, x]]
            );
        }
    }
}
