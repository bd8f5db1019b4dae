//! The hardware counters of `sa_accel` (listed in
//! `sysgrad_isa::host::Counter`) as the emulator computes them, so the
//! co-simulation can read the RTL's over AXI4-Lite and compare.

use super::machine::Accelerator;
use sysgrad_emulator::Phase;
use sysgrad_isa::host::Counter;

impl Accelerator {
    /// The value counter `c` of the RTL shows after the same runs: the
    /// [`Accelerator::count`] modulo `2^host.counter_bits`, or `None` for
    /// the host-interface counters, which depend on the host's timing
    /// rather than on the program.
    pub fn counter(&self, c: Counter) -> Option<u64> {
        let count = self.count(c)?;
        Some(sysgrad_isa::host::counter_register(&self.cfg(), count))
    }

    /// What counter `c` counts, however wide the hardware's counters are
    /// (for statistics), or `None` for the host-interface counters.
    pub fn count(&self, c: Counter) -> Option<u64> {
        use Counter::*;
        use Phase::*;
        let st = &self.driver().stats;
        let p = |phase: Phase| st.phase(phase);
        let ctl = self.control();
        Some(match c {
            RunCycles => st.total().cycles,
            IdleCycles => p(Idle).cycles,
            LoadCycles => p(Load).cycles,
            FwdCycles => p(Forward).cycles,
            DxCycles => p(BackwardDx).cycles,
            DwCycles => p(BackwardDw).cycles,
            IlCycles => p(BackwardInterleaved).cycles,
            UpdateCycles => p(Update).cycles,
            DrainCycles => p(Drain).cycles,
            FwdMacs => p(Forward).macs,
            DxMacs => p(BackwardDx).macs,
            DwMacs => p(BackwardDw).macs,
            IlMacs => p(BackwardInterleaved).macs,
            LoadWReads => p(Load).w_reads,
            LoadWWrites => p(Load).w_writes,
            FwdXReads => p(Forward).x_reads,
            FwdYWrites => p(Forward).y_writes,
            FwdAccReads => p(Forward).acc_reads,
            FwdAccWrites => p(Forward).acc_writes,
            DxDyReads => p(BackwardDx).dy_reads,
            DxDxWrites => p(BackwardDx).dx_writes,
            DxAccReads => p(BackwardDx).acc_reads,
            DxAccWrites => p(BackwardDx).acc_writes,
            DwDyReads => p(BackwardDw).dy_reads,
            DwXReads => p(BackwardDw).x_reads,
            IlDyReads => p(BackwardInterleaved).dy_reads,
            IlXReads => p(BackwardInterleaved).x_reads,
            IlDxWrites => p(BackwardInterleaved).dx_writes,
            IlAccReads => p(BackwardInterleaved).acc_reads,
            IlAccWrites => p(BackwardInterleaved).acc_writes,
            DrainDwWrites => p(Drain).dw_writes,
            DecodeCycles => ctl.decode_cycles,
            RequantCycles => ctl.requant_cycles,
            RequantWords => ctl.requant_words,
            Syncs => ctl.syncs,
            Commands => ctl.commands(),
            LoadSlots => self.load_slots(),
            ActCycles => ctl.act_cycles,
            ActWords => ctl.act_words,
            DmaInBeats | DmaOutBeats | DmaInStalls | DmaOutStalls | HostIdleCycles => return None,
        })
    }
}
