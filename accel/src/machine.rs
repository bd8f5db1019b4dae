//! The accelerator: the array, its four buffers and the controller of the
//! array's pipelining, chosen once from the configuration when it is built
//! (`none.rs` or `dense.rs`, over the common core of `controller.rs`).

use crate::buffer::{Buffer, BufferId};
use crate::controller::{Controller, Core, Resident, State};
use crate::dense::DenseControl;
use crate::error::Fault;
use crate::none::NoneControl;
use crate::stats::ControlStats;
use sysgrad_config::{ArrayConfig, Pipelining};
use sysgrad_emulator::{Driver, Phase};

/// The array, its four buffers and the controller state.
pub struct Accelerator {
    core: Core,
    controller: Box<dyn Controller + Send>,
}

/// The controller of `cfg`'s pipelining.
fn controller(cfg: &ArrayConfig) -> Box<dyn Controller + Send> {
    match cfg.pipelining() {
        Pipelining::None => Box::new(NoneControl),
        Pipelining::Dense => Box::new(DenseControl::new(cfg)),
    }
}

impl Accelerator {
    /// The accelerator of `cfg`, in its pipelining and number format.
    pub fn new(cfg: ArrayConfig) -> Self {
        Accelerator::with_driver(Driver::new(cfg))
    }

    /// Around a given driver, e.g. [`Driver::recording`].
    pub fn with_driver(driver: Driver) -> Self {
        Accelerator {
            controller: controller(&driver.cfg()),
            core: Core::new(driver),
        }
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.core.cfg()
    }
    pub fn state(&self) -> State {
        self.core.state
    }
    pub fn resident(&self) -> Option<Resident> {
        self.core.resident
    }
    pub fn buffer(&self, id: BufferId) -> &Buffer {
        self.core.buffer(id)
    }
    pub fn buffer_mut(&mut self, id: BufferId) -> &mut Buffer {
        self.core.buffer_mut(id)
    }

    /// The array's driver: its cycle count, counters and recording.
    pub fn driver(&self) -> &Driver {
        &self.core.driver
    }
    pub fn driver_mut(&mut self) -> &mut Driver {
        &mut self.core.driver
    }

    /// The controller's own counters.
    pub fn control(&self) -> &ControlStats {
        &self.core.control
    }

    /// Cycles the array spent in a mode other than IDLE.
    pub fn busy_cycles(&self) -> u64 {
        self.driver().stats.total().cycles - self.idle_cycles()
    }
    /// Cycles the array idled (decode, REQUANT, SYNC and HALT cycles).
    pub fn idle_cycles(&self) -> u64 {
        self.driver().stats.phase(Phase::Idle).cycles
    }

    /// The cycles the array spent taking weights: LOAD cycles, or a dense
    /// array's exchange slots.
    pub fn load_slots(&self) -> u64 {
        self.controller.load_slots(&self.core)
    }

    /// Runs `program` from word 0 until HALT or the first bad command.
    /// Buffers and array state carry over from earlier runs.
    pub fn run(&mut self, program: &[u64]) -> Result<(), Fault> {
        self.run_from(program, 0)
    }

    /// Runs the command memory `memory` (its words `0..PROG_LEN`) from
    /// word `start` (`PROG_START`), as START does; fault and HALT word
    /// indices count from word 0 of `memory`.
    pub fn run_from(&mut self, memory: &[u64], start: usize) -> Result<(), Fault> {
        self.controller.run(&mut self.core, memory, start)
    }
}
