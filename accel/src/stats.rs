//! Controller counters, beside the array's per-phase [`sysgrad_emulator::Stats`]
//! (which the driver keeps, including the words each phase moved).

use std::collections::BTreeMap;

/// How often a command ran and the cycles it took (decode included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandCounters {
    pub count: u64,
    pub cycles: u64,
}

/// Cycles and words the controller spends outside the array's phases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControlStats {
    /// One per command word fetched (the array idles meanwhile).
    pub decode_cycles: u64,
    /// One per REQUANT line (the array idles meanwhile).
    pub requant_cycles: u64,
    /// Accumulator words read by REQUANT (as many data words are written).
    pub requant_words: u64,
    /// One per ACT line (the array idles meanwhile).
    pub act_cycles: u64,
    /// Data words written by ACT (`lanes` per line).
    pub act_words: u64,
    /// SYNC commands executed.
    pub syncs: u64,
    /// Per mnemonic, successfully executed commands only.
    pub per_command: BTreeMap<&'static str, CommandCounters>,
}

impl ControlStats {
    pub(crate) fn record(&mut self, name: &'static str, cycles: u64) {
        let c = self.per_command.entry(name).or_default();
        c.count += 1;
        c.cycles += cycles;
    }

    /// Commands executed (faulting ones excluded).
    pub fn commands(&self) -> u64 {
        self.per_command.values().map(|c| c.count).sum()
    }
}
