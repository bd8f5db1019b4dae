//! The network, written once over [`Arith`] and instantiated in fixed point
//! on the array and in f32.

pub mod activity;
pub mod conv;
pub mod dense;
pub mod lif;
pub mod loss;
pub mod pool;
pub mod tensor;

pub use activity::Activity;
pub use conv::{Conv2d, ConvGeom};
pub use dense::Dense;
pub use lif::{Lif, LifParams};
pub use loss::BatchResult;
pub use pool::{AvgPool, MaxPool, Relu};
pub use tensor::Tensor;

use crate::arith::{Arith, Site};
use crate::error::Result;
use crate::model::{Graph, LayerSpec, Model, OptimizerKind};
use ndarray::{Array2, Array4};
use sysgrad_config::fixed;
use sysgrad_rng::Rng;

#[derive(Clone)]
pub enum Layer<V> {
    Dense(Dense<V>),
    Conv2d(Conv2d<V>),
    Relu(Relu),
    MaxPool(MaxPool),
    /// Remembers the input dims for the backward pass.
    Flatten(Option<pool::Dims4>),
    Lif(Lif<V>),
    /// Average pooling, or global average pooling.
    AvgPool(AvgPool),
    /// Residual addition of the layer's two inputs (see [`add`]).
    Add,
}

/// `a + b` element-wise, saturating in fixed point.
pub fn add<A: Arith>(ar: &A, a: &Tensor<A::V>, b: &Tensor<A::V>) -> Tensor<A::V> {
    let mut y = a.clone();
    y.zip_mut_with(b, |y, &b| *y = ar.add(*y, b));
    y
}

impl<V> Layer<V> {
    /// Whether the layer has weights (and so needs its dY).
    pub fn has_weights(&self) -> bool {
        matches!(self, Layer::Dense(_) | Layer::Conv2d(_))
    }

    pub fn activity(&self) -> Option<Activity> {
        match self {
            Layer::Dense(d) => Some(d.activity),
            Layer::Conv2d(c) => Some(c.activity),
            Layer::Lif(l) => Some(Activity {
                neuron_steps: l.neuron_steps,
                spikes: l.spikes,
                ..Activity::default()
            }),
            _ => None,
        }
    }
}

impl<V: Copy + PartialEq + PartialOrd + Default + std::fmt::Debug + Send + Sync + 'static>
    Layer<V>
{
    /// The layer's forward pass on `x` (model layer `site.layer`); a
    /// training pass keeps what the backward pass needs.
    pub fn forward<A: Arith<V = V>>(
        &mut self,
        ar: &mut A,
        site: Site,
        x: &Tensor<V>,
        steps: usize,
    ) -> Result<Tensor<V>> {
        let training = site.training;
        Ok(match self {
            Layer::Dense(d) => d.forward(ar, site, x)?,
            Layer::Conv2d(c) => c.forward(ar, site, x)?,
            Layer::Relu(r) => r.forward(ar, x, training),
            Layer::MaxPool(p) => p.forward::<A>(x, training),
            Layer::AvgPool(p) => p.forward(ar, x, training),
            // Both inputs are added by the network (see `Network::forward`).
            Layer::Add => x.clone(),
            Layer::Flatten(dims) => {
                *dims = Some(x.dim());
                tensor::flatten(x)
            }
            Layer::Lif(l) => l.forward(ar, x, steps, training),
        })
    }

    /// The backward pass of model layer `index` given the gradient of its
    /// output: the gradient of its input, or `None` when nothing upstream
    /// needs it (`need_dx` false: no earlier layer learns; a dense or
    /// convolution layer then skips dX). The weight step is the
    /// arithmetic's (see [`Arith::backward`]).
    pub fn backward<A: Arith<V = V>>(
        &mut self,
        ar: &mut A,
        (index, need_dx): (usize, bool),
        g: &Tensor<V>,
        steps: usize,
    ) -> Result<Option<Tensor<V>>> {
        let missing = || dense::missing_forward(index);
        Ok(Some(match self {
            Layer::Dense(d) => return d.backward(ar, index, g, need_dx),
            Layer::Conv2d(c) => return c.backward(ar, index, g, need_dx),
            Layer::Relu(r) => r.backward(ar, g).ok_or_else(missing)?,
            Layer::MaxPool(p) => p.backward(ar, g).ok_or_else(missing)?,
            Layer::AvgPool(p) => p.backward(ar, g).ok_or_else(missing)?,
            // The gradient of a sum reaches both inputs unchanged.
            Layer::Add => g.clone(),
            Layer::Flatten(dims) => tensor::unflatten(g, dims.ok_or_else(missing)?),
            Layer::Lif(l) => l.backward(ar, g, steps).ok_or_else(missing)?,
        }))
    }

    /// The weights (with the bias column) and the momentum of a dense or
    /// convolution layer.
    pub fn weights_mut(&mut self) -> Option<(&mut Array2<V>, Option<&mut Array2<V>>)> {
        match self {
            Layer::Dense(d) => Some((&mut d.w, d.velocity.as_mut())),
            Layer::Conv2d(c) => Some((&mut c.w, c.velocity.as_mut())),
            _ => None,
        }
    }

    pub fn weights(&self) -> Option<&Array2<V>> {
        match self {
            Layer::Dense(d) => Some(&d.w),
            Layer::Conv2d(c) => Some(&c.w),
            _ => None,
        }
    }
}

/// Initial weights (W | bias column) of every layer that has them, drawn
/// He-uniform from the model's seed and rounded to the data format's grid,
/// so that the fixed-point and float networks start from the same values.
/// A model imported from ONNX starts from its initializers, rounded to the
/// same grid.
pub fn initial_weights(model: &Model) -> Vec<Option<Array2<f64>>> {
    let mut rng = Rng::derive(model.spec.training.seed, "init");
    let f = model.cfg.format();
    let grid = |v: f64| fixed::to_f64(fixed::from_f64(v, f.frac_bits, f.in_bits), f.frac_bits);
    if let Some(imported) = &model.onnx {
        return crate::onnx::exact_weights(imported)
            .into_iter()
            .map(|w| w.map(|w| w.mapv(grid)))
            .collect();
    }
    model
        .spec
        .layers
        .iter()
        .enumerate()
        .map(|(i, layer)| {
            let input = model.input_shape(i);
            let (m, k) = match *layer {
                LayerSpec::Dense { units } => (units, input.size()),
                LayerSpec::Conv2d {
                    filters, kernel, ..
                } => (filters, input.c * kernel * kernel),
                _ => return None,
            };
            let bound = (6.0 / k as f64).sqrt();
            // The bias column starts at zero.
            Some(Array2::from_shape_fn((m, k + 1), |(_, j)| {
                if j < k {
                    grid(rng.symmetric(bound))
                } else {
                    0.0
                }
            }))
        })
        .collect()
}

pub struct Network<A: Arith> {
    pub arith: A,
    pub layers: Vec<Layer<A::V>>,
    /// Which values each layer reads (the chain for a list-form model).
    pub graph: Graph,
    pub time_steps: usize,
    pub grad_scale_shift: u32,
}

impl<A: Arith> Network<A> {
    pub fn new(model: &Model, arith: A, init: &[Option<Array2<f64>>]) -> Self {
        let momentum = model.spec.optimizer.kind == OptimizerKind::Momentum;
        let layers = model
            .spec
            .layers
            .iter()
            .enumerate()
            .zip(init)
            .map(|((i, spec), w)| {
                let input = model.input_shape(i);
                let w = || {
                    w.as_ref()
                        .expect("weights for every dense/conv layer")
                        .mapv(|v| arith.quantize(v))
                };
                match *spec {
                    LayerSpec::Dense { .. } => Layer::Dense(Dense::new(w(), momentum)),
                    LayerSpec::Conv2d {
                        kernel,
                        stride,
                        padding,
                        ..
                    } => {
                        let geom = ConvGeom {
                            c_in: input.c,
                            h: input.h,
                            w: input.w,
                            kernel,
                            stride,
                            padding,
                        };
                        Layer::Conv2d(Conv2d::new(geom, w(), momentum))
                    }
                    LayerSpec::Relu => Layer::Relu(Relu::default()),
                    LayerSpec::MaxPool { size, stride } => {
                        Layer::MaxPool(MaxPool::new(size, stride.unwrap_or(size)))
                    }
                    LayerSpec::Flatten => Layer::Flatten(None),
                    LayerSpec::AvgPool { size, stride } => {
                        Layer::AvgPool(AvgPool::new(size, stride.unwrap_or(size)))
                    }
                    LayerSpec::GlobalAvgPool => Layer::AvgPool(AvgPool::global()),
                    LayerSpec::Add => Layer::Add,
                    LayerSpec::Lif {
                        beta,
                        threshold,
                        reset,
                        surrogate,
                        slope,
                        output,
                    } => Layer::Lif(Lif::new(LifParams {
                        beta,
                        threshold,
                        reset,
                        surrogate,
                        slope,
                        output,
                    })),
                }
            })
            .collect();
        Network {
            arith,
            layers,
            graph: model.graph.clone(),
            time_steps: model.spec.input.time_steps,
            grad_scale_shift: model.spec.optimizer.grad_scale_shift,
        }
    }

    /// The input tensor in this network's number format.
    pub fn input(&self, real: &Array4<f64>) -> Tensor<A::V> {
        real.mapv(|v| self.arith.quantize(v))
    }

    pub fn forward(&mut self, x: Tensor<A::V>, training: bool) -> Result<Tensor<A::V>> {
        let steps = self.time_steps;
        if self.graph.is_chain() {
            let mut x = x;
            for (i, layer) in self.layers.iter_mut().enumerate() {
                let site = Site { layer: i, training };
                x = layer.forward(&mut self.arith, site, &x, steps)?;
            }
            return Ok(x);
        }
        // Every value is kept until its last reader has run.
        let last_use = self.graph.last_use();
        let mut values: Vec<Option<Tensor<A::V>>> = vec![None; self.layers.len() + 1];
        values[0] = Some(x);
        for (i, layer) in self.layers.iter_mut().enumerate() {
            let site = Site { layer: i, training };
            let ins = &self.graph.inputs[i];
            let get = |v: usize| {
                values[v]
                    .as_ref()
                    .expect("a validated graph reads earlier values")
            };
            let y = match layer {
                Layer::Add => add(&self.arith, get(ins[0]), get(ins[1])),
                _ => layer.forward(&mut self.arith, site, get(ins[0]), steps)?,
            };
            for &v in ins {
                if last_use[v] == Some(i) {
                    values[v] = None;
                }
            }
            values[i + 1] = Some(y);
        }
        Ok(values.pop().flatten().expect("the last layer's output"))
    }

    /// Backpropagates `dy` (gradient of the output) and applies the
    /// optimizer step to every weight. Where a value feeds several layers
    /// their gradients are added (saturating in fixed point).
    pub fn backward(&mut self, dy: Tensor<A::V>) -> Result<()> {
        let steps = self.time_steps;
        let n = self.layers.len();
        // dX is only needed while some layer upstream has weights to learn.
        let mut learns_upstream = vec![false; n + 1];
        for (i, ins) in self.graph.inputs.iter().enumerate() {
            learns_upstream[i + 1] =
                self.layers[i].has_weights() || ins.iter().any(|&v| learns_upstream[v]);
        }
        let mut grads: Vec<Option<Tensor<A::V>>> = vec![None; n + 1];
        grads[n] = Some(dy);
        for (i, layer) in self.layers.iter_mut().enumerate().rev() {
            let Some(g) = grads[i + 1].take() else {
                continue;
            };
            let ins = &self.graph.inputs[i];
            let need_dx = ins.iter().any(|&v| learns_upstream[v]);
            let Some(dx) = layer.backward(&mut self.arith, (i, need_dx), &g, steps)? else {
                continue;
            };
            for &v in ins {
                grads[v] = Some(match grads[v].take() {
                    Some(other) => add(&self.arith, &other, &dx),
                    None => dx.clone(),
                });
            }
        }
        Ok(())
    }

    /// One training step on a batch: forward, loss, backward, update.
    pub fn train_step(&mut self, x: Tensor<A::V>, labels: &[u8]) -> Result<BatchResult> {
        let out = self.forward(x, true)?;
        let (res, dy) = loss::softmax_xent(
            &self.arith,
            &out,
            labels,
            self.time_steps,
            self.grad_scale_shift,
        );
        self.backward(dy)?;
        Ok(res)
    }

    pub fn evaluate(&mut self, x: Tensor<A::V>, labels: &[u8]) -> Result<BatchResult> {
        let out = self.forward(x, false)?;
        Ok(loss::score(&self.arith, &out, labels, self.time_steps))
    }
}
