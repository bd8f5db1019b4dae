//! The products of a network on the whole accelerator (`sysgrad_accel`):
//! commands, buffers, DMA and a host link, instead of the bare array. Each
//! layer's weights live in their own lines of the weight buffer
//! ([`crate::compile`] places them) and go over the DMA only when the
//! host's copy changed (first use, a momentum step on the host); weights
//! updated in the PEs stay there (read back only by the per-step check,
//! which a step's cost leaves out); X, dY and the results cross the DMA
//! for every product. The bits equal those of
//! `sysgrad_emulator::gemm` (`accel/tests/schedule.rs`), so training on
//! this engine gives the weights of the array engine after every step.

use crate::error::{Result, WorkloadError};
use ndarray::{Array2, ArrayView2};
use serde::Serialize;
use std::collections::BTreeMap;
use sysgrad_accel::schedule::{self, Arena, BackwardOperands, Output, ScheduleError};
use sysgrad_accel::{Accelerator, BackwardMode, Blocked, Device, HostCounters, HostLink};
use sysgrad_config::ArrayConfig;
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

/// What the products of one layer and phase cost on the accelerator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AccelCost {
    /// The controller's run cycles per array phase; decode, REQUANT and
    /// waiting cycles are phase `idle`.
    #[serde(skip)]
    pub array: Stats,
    pub decode_cycles: u64,
    pub requant_cycles: u64,
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
    arena: Arena,
    mark: Mark,
}

impl AccelEngine {
    /// An engine whose layers keep their W from `weight_bases[layer]` on.
    pub fn new(
        opts: &AccelOptions,
        mode: BackwardMode,
        weight_bases: BTreeMap<usize, usize>,
    ) -> Self {
        let driver = if opts.record_trace {
            Driver::recording(opts.cfg, false)
        } else {
            Driver::new(opts.cfg)
        };
        AccelEngine {
            dev: Device::new(Accelerator::with_driver(driver), opts.link),
            mode,
            weight_bases,
            on_chip: BTreeMap::new(),
            arena: Arena::whole(&opts.cfg),
            mark: Mark::default(),
        }
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.dev.cfg()
    }

    /// The cost of everything since the last call.
    pub fn take_cost(&mut self) -> AccelCost {
        let acc = &self.dev.acc;
        let now = Mark {
            array: acc.driver().stats.clone(),
            decode: acc.control().decode_cycles,
            requant: acc.control().requant_cycles,
            host: self.dev.host.clone(),
        };
        let cost = AccelCost {
            array: stats_since(&now.array, &self.mark.array),
            decode_cycles: now.decode - self.mark.decode,
            requant_cycles: now.requant - self.mark.requant,
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
        let (m, k) = w.dim();
        let base = self.weight_bases.get(&layer).copied().unwrap_or(0);
        let lay = schedule::weights_layout(&self.cfg(), base, m, k);
        if let Some((l, held)) = self.on_chip.get(&layer) {
            if *l == lay && held.view() == w {
                return Ok(lay);
            }
        }
        schedule::load_weights(&mut self.dev, &lay, w)
            .map_err(|e| Self::err(layer, "weights")(e.into()))?;
        self.on_chip
            .retain(|_, (l, _)| l.end() <= lay.base || lay.end() <= l.base);
        self.on_chip.insert(layer, (lay, w.to_owned()));
        Ok(lay)
    }

    /// Puts `w` into `layer`'s lines without DMA, transcript or counters:
    /// for a baseline that must start from the main run's weights but is
    /// charged for its backward pass only.
    pub fn place_weights(&mut self, layer: usize, w: ArrayView2<i64>) {
        let (m, k) = w.dim();
        let base = self.weight_bases.get(&layer).copied().unwrap_or(0);
        let lay = schedule::weights_layout(&self.cfg(), base, m, k);
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

    /// `Y = W X`, raw or requantized (on chip when the buffers allow).
    pub fn forward(
        &mut self,
        layer: usize,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        out: Output,
    ) -> Result<Array2<i64>> {
        let lay = self.weights(layer, w)?;
        schedule::forward(&mut self.dev, &lay, x, &self.arena, out)
            .map_err(Self::err(layer, "forward"))
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
        let ops = BackwardOperands {
            w: lay,
            x: x.view(),
            dy: dy.view(),
        };
        let g = schedule::backward(&mut self.dev, &ops, &self.arena, self.mode, sink, out)
            .map_err(Self::err(layer, "backward"))?;
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
