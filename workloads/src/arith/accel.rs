//! The products of a network on the whole accelerator (`sysgrad_accel`):
//! commands, buffers, DMA and a host link, instead of the bare array. Each
//! layer's weights live in their own lines of the weight buffer
//! ([`crate::compile`] places them) and go over the DMA only when the
//! host's copy changed (first use, a momentum step on the host); weights
//! updated in the PEs stay there (read back only by the per-step check,
//! which a step's cost leaves out). Dense layers the compiler made
//! resident ([`Placement`]) keep X and dY in regions of their own for the
//! whole step and pass outputs and gradients to their neighbours by ACT
//! (`sysgrad_accel::resident`): the host is handed those values through
//! the same uncounted debug read, and data it hands back that the region
//! already holds is not sent again, so only the per-step check sees them.
//! Other products send X and dY and read the results over the DMA. The
//! bits equal those of
//! `sysgrad_emulator::gemm` (`accel/tests/schedule.rs`), so training on
//! this engine gives the weights of the array engine after every step.

use crate::error::{Result, WorkloadError};
use ndarray::{Array2, ArrayView2, ArrayView4};
use serde::Serialize;
use std::collections::BTreeMap;
use sysgrad_accel::conv::{self, ConvLayer};
use sysgrad_accel::resident::{self, BackwardEnd, ForwardEnd, Regions};
use sysgrad_accel::schedule::{self, Arena, BackwardOperands, Output, ScheduleError};
use sysgrad_accel::{
    Accelerator, BackwardMode, Blocked, BufferId, Device, DeviceError, HostCounters, HostLink,
    Traffic,
};
use sysgrad_config::{fixed, ArrayConfig};
use sysgrad_emulator::gemm::{BackwardResult, DwSink};
use sysgrad_emulator::{Counters, Driver, Phase, Stats};

/// The accelerator a network trains on: its configuration (array, number
/// format, buffer depths, pipelining) and the host link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccelOptions {
    pub cfg: ArrayConfig,
    pub link: HostLink,
    /// Record every array input for a replay on the RTL (memory-hungry).
    pub record_trace: bool,
}

/// Where a network's data lives on chip ([`crate::compile`] decides).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// First weight line of each layer's W.
    pub weight_bases: BTreeMap<usize, usize>,
    /// The dense layers whose X and dY stay on chip for the step.
    pub resident: BTreeMap<usize, ResidentLayer>,
    /// The convolutions run on the address generator (`sysgrad_accel::conv`):
    /// their image and dY stay on chip for the step like a resident
    /// layer's X and dY.
    pub convolutions: BTreeMap<usize, ConvLayer>,
    /// The lines every other product may use (`None`: all of them).
    pub arena: Option<Arena>,
}

/// A resident layer's regions and its neighbours on chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResidentLayer {
    pub regions: Regions,
    /// The layer whose X region the forward pass fills by `ACT relu`.
    pub relu_into: Option<usize>,
    /// The layer whose dY region the backward pass fills by `ACT relu_grad`.
    pub gate_into: Option<usize>,
}

/// A copy of what a resident layer's regions hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    pub x: Option<Array2<i64>>,
    pub dy: Option<Array2<i64>>,
}

/// One of a resident layer's two regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Region {
    /// X with its bias row, in the activation buffer.
    X,
    /// dY, in the gradient buffer.
    Dy,
}

impl Region {
    fn of(self, r: &Regions) -> Blocked {
        match self {
            Region::X => r.x,
            Region::Dy => r.dy,
        }
    }
    fn buffer(self) -> BufferId {
        match self {
            Region::X => BufferId::Activations,
            Region::Dy => BufferId::Gradients,
        }
    }
    /// The traffic the host's data for the region is charged as.
    fn traffic_in(self) -> Traffic {
        match self {
            Region::X => Traffic::InputsIn,
            Region::Dy => Traffic::GradientsIn,
        }
    }
}

/// What the products of one layer and phase cost on the accelerator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AccelCost {
    /// The controller's run cycles per array phase; decode, REQUANT and
    /// waiting cycles are phase `idle`.
    #[serde(skip)]
    pub array: Stats,
    pub decode_cycles: u64,
    pub requant_cycles: u64,
    pub act_cycles: u64,
    /// DMA and host-link traffic.
    pub host: HostCounters,
}

impl AccelCost {
    pub fn run_cycles(&self) -> u64 {
        self.array.total().cycles
    }
    /// Run cycles in which the array computes, loads, drains or updates.
    pub fn array_cycles(&self) -> u64 {
        self.run_cycles() - self.array.phase(Phase::Idle).cycles
    }
    /// Run cycles in which the array idles: the controller's own work.
    pub fn controller_cycles(&self) -> u64 {
        self.array.phase(Phase::Idle).cycles
    }
    /// Everything, end to end: the runs and the host link, one after the
    /// other (the RTL accepts no DMA while the controller runs).
    pub fn total_cycles(&self) -> u64 {
        self.run_cycles() + self.host.link_cycles()
    }
}

impl std::ops::AddAssign<&AccelCost> for AccelCost {
    fn add_assign(&mut self, o: &AccelCost) {
        self.array += &o.array;
        self.decode_cycles += o.decode_cycles;
        self.requant_cycles += o.requant_cycles;
        self.act_cycles += o.act_cycles;
        self.host += &o.host;
    }
}

fn counters_since(now: &Counters, then: &Counters) -> Counters {
    Counters {
        cycles: now.cycles - then.cycles,
        macs: now.macs - then.macs,
        w_reads: now.w_reads - then.w_reads,
        x_reads: now.x_reads - then.x_reads,
        dy_reads: now.dy_reads - then.dy_reads,
        w_writes: now.w_writes - then.w_writes,
        y_writes: now.y_writes - then.y_writes,
        dx_writes: now.dx_writes - then.dx_writes,
        dw_writes: now.dw_writes - then.dw_writes,
        acc_reads: now.acc_reads - then.acc_reads,
        acc_writes: now.acc_writes - then.acc_writes,
    }
}

fn stats_since(now: &Stats, then: &Stats) -> Stats {
    let mut s = Stats::default();
    for p in Phase::ALL {
        *s.phase_mut(p) = counters_since(now.phase(p), then.phase(p));
    }
    s
}

/// A snapshot of the device's counters, to charge what happened since.
#[derive(Debug, Clone, Default)]
struct Mark {
    array: Stats,
    decode: u64,
    requant: u64,
    act: u64,
    host: HostCounters,
}

/// One network's accelerator and what the host knows about its buffers.
pub struct AccelEngine {
    pub dev: Device,
    /// BACKWARD mode of every backward product.
    mode: BackwardMode,
    /// First weight line of each layer's W.
    weight_bases: BTreeMap<usize, usize>,
    /// The weights each layer has on chip now (the host's copy of them).
    on_chip: BTreeMap<usize, (Blocked, Array2<i64>)>,
    resident: BTreeMap<usize, ResidentLayer>,
    convs: BTreeMap<usize, ConvLayer>,
    /// What each resident layer's regions hold now (as read back or
    /// written), so equal host data is not sent again.
    held: BTreeMap<(usize, Region), Array2<i64>>,
    arena: Arena,
    mark: Mark,
}

impl AccelEngine {
    /// An engine whose layers keep their W and resident data where
    /// `placement` says.
    pub fn new(opts: &AccelOptions, mode: BackwardMode, placement: Placement) -> Self {
        let driver = if opts.record_trace {
            Driver::recording(opts.cfg, false)
        } else {
            Driver::new(opts.cfg)
        };
        // Each product's program is kept at its own words of command
        // memory and sent once, while the step's programs fit together.
        let mut dev = Device::new(Accelerator::with_driver(driver), opts.link);
        dev.keep_programs();
        AccelEngine {
            dev,
            mode,
            weight_bases: placement.weight_bases,
            on_chip: BTreeMap::new(),
            resident: placement.resident,
            convs: placement.convolutions,
            held: BTreeMap::new(),
            arena: placement.arena.unwrap_or_else(|| Arena::whole(&opts.cfg)),
            mark: Mark::default(),
        }
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.dev.cfg()
    }

    /// The products' programs kept in command memory.
    pub fn kept_programs(&self) -> Option<&sysgrad_accel::KeptPrograms> {
        self.dev.kept_programs()
    }

    /// The cost of everything since the last call.
    pub fn take_cost(&mut self) -> AccelCost {
        let acc = &self.dev.acc;
        let now = Mark {
            array: acc.driver().stats.clone(),
            decode: acc.control().decode_cycles,
            requant: acc.control().requant_cycles,
            act: acc.control().act_cycles,
            host: self.dev.host.clone(),
        };
        let cost = AccelCost {
            array: stats_since(&now.array, &self.mark.array),
            decode_cycles: now.decode - self.mark.decode,
            requant_cycles: now.requant - self.mark.requant,
            act_cycles: now.act - self.mark.act,
            // The per-step check's reads are not part of the work.
            host: now.host.since(&self.mark.host).costed(),
        };
        self.mark = now;
        cost
    }

    fn err(layer: usize, what: &'static str) -> impl Fn(ScheduleError) -> WorkloadError {
        move |e| WorkloadError::Accel {
            layer,
            what,
            message: e.to_string(),
        }
    }

    /// The layout of `layer`'s W, sent over the DMA unless the chip holds
    /// exactly `w` there already. Layers sharing lines evict each other.
    fn weights(&mut self, layer: usize, w: ArrayView2<i64>) -> Result<Blocked> {
        let lay = self.weights_layout(layer, w);
        self.weights_at(layer, lay, w)?;
        Ok(lay)
    }

    /// Where `layer`'s W (the host's matrix `w`) lives: the product's
    /// layout, or for a convolution on the address generator its layer's.
    fn weights_layout(&self, layer: usize, w: ArrayView2<i64>) -> Blocked {
        let (m, k) = w.dim();
        let base = self.weight_bases.get(&layer).copied().unwrap_or(0);
        schedule::weights_layout(&self.cfg(), base, m, k)
    }

    /// Sends `w` to `lay` unless the chip holds exactly it there already.
    fn weights_at(&mut self, layer: usize, lay: Blocked, w: ArrayView2<i64>) -> Result<()> {
        if let Some((l, held)) = self.on_chip.get(&layer) {
            if *l == lay && held.view() == w {
                return Ok(());
            }
        }
        schedule::load_weights(&mut self.dev, &lay, w)
            .map_err(|e| Self::err(layer, "weights")(e.into()))?;
        self.on_chip
            .retain(|_, (l, _)| l.end() <= lay.base || lay.end() <= l.base);
        self.on_chip.insert(layer, (lay, w.to_owned()));
        Ok(())
    }

    /// Puts `w` into `layer`'s lines without DMA, transcript or counters:
    /// for a baseline that must start from the main run's weights but is
    /// charged for its backward pass only.
    pub fn place_weights(&mut self, layer: usize, w: ArrayView2<i64>) {
        let (lay, w) = match self.convs.get(&layer) {
            Some(l) => (l.w, l.chip_weights(w)),
            None => (self.weights_layout(layer, w), w.to_owned()),
        };
        let w = w.view();
        if self
            .on_chip
            .get(&layer)
            .is_some_and(|(l, h)| *l == lay && h.view() == w)
        {
            return;
        }
        lay.store(self.dev.acc.buffer_mut(sysgrad_accel::BufferId::Weights), w)
            .expect("weights fit their lines and their word width");
        self.on_chip
            .retain(|_, (l, _)| l.end() <= lay.base || lay.end() <= l.base);
        self.on_chip.insert(layer, (lay, w.to_owned()));
    }

    /// What `layer`'s X and dY regions hold now (for a baseline engine that
    /// must start its pass from the same chip, [`AccelEngine::place_held`]).
    pub fn held(&self, layer: usize) -> Held {
        Held {
            x: self.held.get(&(layer, Region::X)).cloned(),
            dy: self.held.get(&(layer, Region::Dy)).cloned(),
        }
    }

    /// Puts `held` into `layer`'s regions without DMA, transcript or
    /// counters (as [`AccelEngine::place_weights`] does for weights).
    pub fn place_held(&mut self, layer: usize, held: Held) {
        let Some(regions) = self.regions(layer) else {
            return;
        };
        for (m, region) in [(held.x, Region::X), (held.dy, Region::Dy)] {
            let key = (layer, region);
            // What the main run's chip did not hold, this one forgets too.
            let Some(m) = m else {
                self.held.remove(&key);
                continue;
            };
            region
                .of(&regions)
                .store(self.dev.acc.buffer_mut(region.buffer()), m.view())
                .expect("held data fits its region and its word width");
            self.held.insert(key, m);
        }
    }

    /// `Y = W X`, raw or requantized (on chip when the buffers allow).
    pub fn forward(
        &mut self,
        layer: usize,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        out: Output,
    ) -> Result<Array2<i64>> {
        let lay = self.weights(layer, w)?;
        if let Some(res) = self.resident_for(layer, x, out) {
            return self
                .forward_resident(layer, &lay, &res, x)
                .map_err(|e| Self::err(layer, "forward")(e.into()));
        }
        schedule::forward(&mut self.dev, &lay, x, &self.arena, out)
            .map_err(Self::err(layer, "forward"))
    }

    /// The layer's residency, if this product can use it: the training
    /// batch's shape, and data (not raw accumulators) asked for.
    fn resident_for(&self, layer: usize, x: ArrayView2<i64>, out: Output) -> Option<ResidentLayer> {
        let res = self.resident.get(&layer)?;
        let shape = (res.regions.x.rows, res.regions.x.cols);
        (x.dim() == shape && out != Output::Raw).then_some(*res)
    }

    /// Makes `layer`'s `region` hold `m`, sending only the blocks that
    /// differ from what it holds.
    fn put(&mut self, layer: usize, region: Region, m: ArrayView2<i64>) -> Result<(), DeviceError> {
        let key = (layer, region);
        let lay = region.of(&self.regions(layer).expect("a layer with regions"));
        let blocks = resident::changed_blocks(&lay, self.held.get(&key), m);
        for (sub, rows) in blocks {
            let part = m.slice(ndarray::s![rows, ..]);
            self.dev
                .write_matrix(region.buffer(), &sub, part, region.traffic_in())?;
        }
        self.held.insert(key, m.to_owned());
        Ok(())
    }

    /// The regions `layer` keeps on chip: a resident layer's X and dY, or
    /// a convolution's image (with its ones channel) and dY.
    fn regions(&self, layer: usize) -> Option<Regions> {
        if let Some(l) = self.convs.get(&layer) {
            return Some(Regions {
                x: l.image,
                dy: l.dy,
            });
        }
        self.resident.get(&layer).map(|r| r.regions)
    }

    /// Whether `layer`'s convolution of an image of `dim` (channels,
    /// images, height, width) runs on the address generator: a
    /// convolution placed there, on a batch of the size it was placed for.
    pub fn convolves(&self, layer: usize, dim: (usize, usize, usize, usize)) -> bool {
        self.convs.get(&layer).is_some_and(|l| {
            let s = l.shape;
            dim == (s.c_in, s.images, s.h, s.w)
        })
    }

    /// `layer`'s convolution (placed by [`AccelEngine::convolves`]): the
    /// host's W in the layer's layout, the image into its region (blocks
    /// it holds already are not sent again), Y requantized into the dY
    /// region and read from there.
    pub fn conv_forward(
        &mut self,
        layer: usize,
        w: ArrayView2<i64>,
        x: ArrayView4<i64>,
    ) -> Result<Array2<i64>> {
        let l = self.convs[&layer];
        let cfg = self.cfg();
        self.weights_at(layer, l.w, l.chip_weights(w).view())?;
        let f = cfg.format();
        let one = fixed::from_f64(1.0, f.frac_bits, f.in_bits);
        let run = |e: &mut Self| -> std::result::Result<Array2<i64>, DeviceError> {
            e.put(layer, Region::X, l.image_rows(x, one).view())?;
            schedule::run_commands(&mut e.dev, &conv::forward_program(&cfg, &l))?;
            e.held.remove(&(layer, Region::Dy));
            e.dev
                .read_matrix(BufferId::Gradients, &l.dy, Traffic::ResultsOut)
        };
        run(self).map_err(|e| Self::err(layer, "forward")(e.into()))
    }

    /// The backward pass of `layer`'s convolution: dX of the image (`c_in
    /// x (n h w)`) requantized over the image's region and read from
    /// there (zeros if `out` discards it), dW drained tap by tap or W
    /// updated in the PEs (read back by the uncounted check).
    pub fn conv_backward(
        &mut self,
        layer: usize,
        w: ArrayView2<i64>,
        (x, dy): (ArrayView4<i64>, ArrayView2<i64>),
        sink: DwSink,
        out: Output,
    ) -> Result<BackwardResult> {
        let l = self.convs[&layer];
        let cfg = self.cfg();
        self.weights_at(layer, l.w, l.chip_weights(w).view())?;
        let f = cfg.format();
        let one = fixed::from_f64(1.0, f.frac_bits, f.in_bits);
        let keep_dx = out != Output::Discard;
        let mode = self.mode;
        let run = |e: &mut Self| -> std::result::Result<BackwardResult, DeviceError> {
            e.put(layer, Region::X, l.image_rows(x, one).view())?;
            e.put(layer, Region::Dy, dy)?;
            let prog = conv::backward_program(&cfg, &l, (mode, sink), keep_dx);
            schedule::run_commands(&mut e.dev, &prog)?;
            let s = l.shape;
            let dx = if keep_dx {
                let lay = Blocked {
                    rows: s.c_in,
                    ..l.image
                };
                let dx = e
                    .dev
                    .read_matrix(BufferId::Activations, &lay, Traffic::ResultsOut)?;
                // The region now holds dX over the blocks of input channels;
                // a ones channel in a block of its own is still there (and
                // is not sent again), one beside them was overwritten.
                let key = (layer, Region::X);
                match e.held.get_mut(&key) {
                    Some(held) if s.c_in.is_multiple_of(l.image.lanes) => {
                        held.slice_mut(ndarray::s![..s.c_in, ..]).assign(&dx)
                    }
                    _ => {
                        e.held.remove(&key);
                    }
                }
                dx
            } else {
                Array2::zeros((s.c_in, s.pixels()))
            };
            let dw = match sink {
                DwSink::Drain => {
                    let mut taps = Vec::new();
                    for t in l.taps(&cfg) {
                        let lay = l.dw_tap(&cfg, &t);
                        let part = e.dev.read_matrix(
                            BufferId::Accumulators,
                            &lay,
                            Traffic::WeightGradientsOut,
                        )?;
                        taps.push(part);
                    }
                    Some(l.host_dw(&cfg, |t| taps[t.index].clone()))
                }
                DwSink::Update { .. } => None,
            };
            let w_new = match sink {
                DwSink::Update { .. } => {
                    let chip = schedule::check_weights(&mut e.dev, &l.w)?;
                    let host = l.host_weights(chip.view());
                    e.on_chip.insert(layer, (l.w, chip));
                    Some(host)
                }
                DwSink::Drain => None,
            };
            Ok(BackwardResult { dx, dw, w: w_new })
        };
        run(self).map_err(|e| Self::err(layer, "backward")(e.into()))
    }

    /// Region `lay` of buffer `id` as the host's copy: the debug read
    /// ([`Traffic::CheckOut`]) the per-step check uses, not part of a step.
    fn check_read(&mut self, id: BufferId, lay: &Blocked) -> Result<Array2<i64>, DeviceError> {
        self.dev.read_matrix(id, lay, Traffic::CheckOut)
    }

    fn forward_resident(
        &mut self,
        layer: usize,
        w: &Blocked,
        res: &ResidentLayer,
        x: ArrayView2<i64>,
    ) -> std::result::Result<Array2<i64>, DeviceError> {
        self.put(layer, Region::X, x)?;
        let m = w.rows;
        match res.relu_into {
            Some(next) => {
                let next_x = self.resident[&next].regions.x;
                resident::forward(&mut self.dev, w, &res.regions, &ForwardEnd::Relu { next_x })?;
                // ReLU(Y), which the host's ReLU leaves as it is.
                let held = self.check_read(BufferId::Activations, &next_x)?;
                let y = held.slice(ndarray::s![..m, ..]).to_owned();
                self.held.insert((next, Region::X), held);
                Ok(y)
            }
            None => {
                resident::forward(&mut self.dev, w, &res.regions, &ForwardEnd::Requant)?;
                self.held.remove(&(layer, Region::Dy));
                self.dev
                    .read_matrix(BufferId::Gradients, &res.regions.dy, Traffic::ResultsOut)
            }
        }
    }

    fn backward_resident(
        &mut self,
        layer: usize,
        w: &Blocked,
        res: &ResidentLayer,
        (x, dy): (ArrayView2<i64>, ArrayView2<i64>),
        (lr_shift, out): (u8, Output),
    ) -> std::result::Result<Array2<i64>, DeviceError> {
        self.put(layer, Region::X, x)?;
        self.put(layer, Region::Dy, dy)?;
        let prev = res.gate_into.map(|p| self.resident[&p].regions.dy);
        let end = match (out, prev) {
            (Output::Discard, _) => BackwardEnd::Discard,
            (_, Some(prev_dy)) => BackwardEnd::ReluGrad { prev_dy },
            _ => BackwardEnd::Requant,
        };
        let how = (self.mode, lr_shift);
        resident::backward(&mut self.dev, w, &res.regions, how, &end)?;
        let (k, n) = x.dim();
        Ok(match end {
            BackwardEnd::ReluGrad { prev_dy } => {
                // The gated dX, which the host's ReLU leaves as it is; the
                // bias row's gradient is dropped by the host.
                let held = self.check_read(BufferId::Gradients, &prev_dy)?;
                let mut dx = Array2::zeros((k, n));
                dx.slice_mut(ndarray::s![..prev_dy.rows, ..]).assign(&held);
                let p = res.gate_into.expect("a gate has a previous layer");
                self.held.insert((p, Region::Dy), held);
                dx
            }
            BackwardEnd::Requant => {
                self.held.remove(&(layer, Region::X));
                self.dev
                    .read_matrix(BufferId::Activations, &res.regions.x, Traffic::ResultsOut)?
            }
            BackwardEnd::Discard => Array2::zeros((k, n)),
        })
    }

    /// dX (as `out` asks) and dW drained, or W updated in place. The
    /// updated weights stay on chip; they are read back here only for the
    /// per-step check against the array engine, as a debug read that the
    /// step's cost leaves out ([`sysgrad_accel::Traffic::CheckOut`]).
    pub fn backward(
        &mut self,
        layer: usize,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
        sink: DwSink,
        out: Output,
    ) -> Result<BackwardResult> {
        let lay = self.weights(layer, w)?;
        let res = self.resident_for(layer, x, out);
        let g = match (res, sink) {
            (Some(res), DwSink::Update { lr_shift }) if lr_shift <= 63 => {
                let dx = self
                    .backward_resident(layer, &lay, &res, (x, dy), (lr_shift as u8, out))
                    .map_err(|e| Self::err(layer, "backward")(e.into()))?;
                schedule::Gradients { dx, dw: None }
            }
            _ => {
                let ops = BackwardOperands {
                    w: lay,
                    x: x.view(),
                    dy: dy.view(),
                };
                schedule::backward(&mut self.dev, &ops, &self.arena, self.mode, sink, out)
                    .map_err(Self::err(layer, "backward"))?
            }
        };
        let w_new = match sink {
            DwSink::Update { .. } => {
                let w_new = schedule::check_weights(&mut self.dev, &lay)
                    .map_err(|e| Self::err(layer, "weights")(e.into()))?;
                self.on_chip.insert(layer, (lay, w_new.clone()));
                Some(w_new)
            }
            DwSink::Drain => None,
        };
        Ok(BackwardResult {
            dx: g.dx,
            dw: g.dw,
            w: w_new,
        })
    }
}
