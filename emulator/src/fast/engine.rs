//! One interface over the cycle-accurate driver and the fast exact mode, so
//! that training workloads pick the mode with a single flag and get the
//! same numbers and counters either way.

use super::exact;
use crate::driver::{DriveError, Driver};
use crate::gemm::{self, BackwardResult, DwSink};
use crate::stats::Stats;
use ndarray::{Array2, ArrayView2};
use sysgrad_config::float::StochasticBits;
use sysgrad_config::{ArrayConfig, Backward};

/// Layer-level products on the array, accumulating per-phase counters.
pub trait Engine: Send {
    fn cfg(&self) -> ArrayConfig;
    /// The counters of everything run so far.
    fn stats(&self) -> &Stats;
    fn stats_mut(&mut self) -> &mut Stats;
    /// Returns the counters so far and starts again from zero.
    fn take_stats(&mut self) -> Stats {
        std::mem::take(self.stats_mut())
    }
    /// `Y = W X` as raw accumulators (see [`gemm::forward`]).
    fn forward(
        &mut self,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>, DriveError>;
    /// dX, and dW drained or applied (see [`gemm::backward`]).
    fn backward(
        &mut self,
        schedule: Backward,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
        sink: DwSink,
    ) -> Result<BackwardResult, DriveError>;
}

impl Engine for Driver {
    fn cfg(&self) -> ArrayConfig {
        Driver::cfg(self)
    }
    fn stats(&self) -> &Stats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut Stats {
        &mut self.stats
    }
    fn forward(
        &mut self,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>, DriveError> {
        gemm::forward(self, w, x)
    }
    fn backward(
        &mut self,
        schedule: Backward,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
        sink: DwSink,
    ) -> Result<BackwardResult, DriveError> {
        gemm::backward(self, schedule, w, x, dy, sink)
    }
}

/// The fast exact mode: a configuration and its counters, no array state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastEngine {
    pub cfg: ArrayConfig,
    pub stats: Stats,
    /// The PEs' stochastic-rounding generators, stepped as the array
    /// steps them (empty in fixed point).
    pub generators: Vec<StochasticBits>,
}

impl FastEngine {
    pub fn new(cfg: ArrayConfig) -> Self {
        FastEngine {
            cfg,
            stats: Stats::default(),
            generators: exact::generators(&cfg),
        }
    }
}

impl Engine for FastEngine {
    fn cfg(&self) -> ArrayConfig {
        self.cfg
    }
    fn stats(&self) -> &Stats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut Stats {
        &mut self.stats
    }
    fn forward(
        &mut self,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>, DriveError> {
        exact::forward(&mut self.stats, &self.cfg, w, x)
    }
    fn backward(
        &mut self,
        schedule: Backward,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
        sink: DwSink,
    ) -> Result<BackwardResult, DriveError> {
        let gens = &mut self.generators;
        exact::backward_on(&mut self.stats, &self.cfg, gens, schedule, w, x, dy, sink)
    }
}

/// Which engine to run: the flag a command line or workload exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EngineKind {
    /// Clock the register-level model (slow; what co-simulation checks).
    #[default]
    Cycle,
    /// Compute results and counters directly (same bits, same counters).
    Fast,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Cycle => "cycle",
            EngineKind::Fast => "fast",
        }
    }

    pub fn engine(self, cfg: ArrayConfig) -> Box<dyn Engine> {
        match self {
            EngineKind::Cycle => Box::new(Driver::new(cfg)),
            EngineKind::Fast => Box::new(FastEngine::new(cfg)),
        }
    }
}

/// An engine name [`EngineKind`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine {0:?} (expected cycle or fast)")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for EngineKind {
    type Err = UnknownEngine;
    fn from_str(s: &str) -> Result<Self, UnknownEngine> {
        match s {
            "cycle" | "cycle-accurate" => Ok(EngineKind::Cycle),
            "fast" => Ok(EngineKind::Fast),
            _ => Err(UnknownEngine(s.to_string())),
        }
    }
}
