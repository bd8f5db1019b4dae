//! Cycle, MAC and memory-access counters, kept per phase of training.
//!
//! A run on data adds to them with plain `+=` (its operands are in memory,
//! so no counter can reach 2^64: see `sysgrad_isa::count`); counters from
//! sizes alone (the shape ledger, SCALE-Sim topologies, pipeline costs)
//! are added with [`Stats::checked_add`], which also keeps every total
//! (`total`, `reads`, `writes`, `accesses`) within `u64`.

use serde::Serialize;
use std::ops::AddAssign;
use sysgrad_isa::count::{Count, Overflow};

/// What the array is doing; every cycle is charged to exactly one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Shifting a weight tile in (and the previous one out).
    Load,
    Forward,
    /// Sequential baseline: the dX pass.
    BackwardDx,
    /// Sequential baseline: the dW pass (re-streams dY).
    BackwardDw,
    /// Interleaved: one pass computing dX and dW.
    BackwardInterleaved,
    /// Shifting dW out of the PEs.
    Drain,
    Update,
    Idle,
}

impl Phase {
    pub const ALL: [Phase; 8] = [
        Phase::Load,
        Phase::Forward,
        Phase::BackwardDx,
        Phase::BackwardDw,
        Phase::BackwardInterleaved,
        Phase::Drain,
        Phase::Update,
        Phase::Idle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Forward => "forward",
            Phase::BackwardDx => "backward_dx",
            Phase::BackwardDw => "backward_dw",
            Phase::BackwardInterleaved => "backward_interleaved",
            Phase::Drain => "drain",
            Phase::Update => "update",
            Phase::Idle => "idle",
        }
    }

    fn index(self) -> usize {
        Phase::ALL.iter().position(|p| *p == self).unwrap()
    }
}

/// Counters of one phase. Reads and writes count data words moved between
/// the array and its on-chip buffers (padding of partial tiles excluded);
/// `acc_*` are the read-modify-write of partial sums across tiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub cycles: u64,
    /// Useful multiply-accumulates (padding excluded).
    pub macs: u64,
    pub w_reads: u64,
    pub x_reads: u64,
    pub dy_reads: u64,
    pub w_writes: u64,
    pub y_writes: u64,
    pub dx_writes: u64,
    pub dw_writes: u64,
    pub acc_reads: u64,
    pub acc_writes: u64,
}

impl Counters {
    pub fn reads(&self) -> u64 {
        self.w_reads + self.x_reads + self.dy_reads + self.acc_reads
    }
    pub fn writes(&self) -> u64 {
        self.w_writes + self.y_writes + self.dx_writes + self.dw_writes + self.acc_writes
    }
    /// All buffer accesses, reads plus writes.
    pub fn accesses(&self) -> u64 {
        self.reads() + self.writes()
    }
}

impl Counters {
    /// Every counter, named, in declaration order.
    fn fields_mut(&mut self) -> [(&'static str, &mut u64); 11] {
        [
            ("cycles", &mut self.cycles),
            ("MACs", &mut self.macs),
            ("weight reads", &mut self.w_reads),
            ("X reads", &mut self.x_reads),
            ("dY reads", &mut self.dy_reads),
            ("weight writes", &mut self.w_writes),
            ("Y writes", &mut self.y_writes),
            ("dX writes", &mut self.dx_writes),
            ("dW writes", &mut self.dw_writes),
            ("partial-sum reads", &mut self.acc_reads),
            ("partial-sum writes", &mut self.acc_writes),
        ]
    }

    /// `self + o`, every counter checked, and the reads, writes and
    /// accesses of the sum within `u64` too.
    pub fn checked_add(&self, o: &Counters) -> Result<Counters, Overflow> {
        let mut sum = *self;
        let mut o = *o;
        for ((what, a), (_, b)) in sum.fields_mut().into_iter().zip(o.fields_mut()) {
            *a = (Count::from(*a) + *b).get(format!("the {what}"))?;
        }
        sum.checked_totals()?;
        Ok(sum)
    }

    /// Checks that the reads, writes and accesses fit in `u64`.
    pub fn checked_totals(&self) -> Result<(), Overflow> {
        let reads = Count::from(self.w_reads) + self.x_reads + self.dy_reads + self.acc_reads;
        let writes = Count::from(self.w_writes)
            + self.y_writes
            + self.dx_writes
            + self.dw_writes
            + self.acc_writes;
        reads.get("the buffer reads")?;
        writes.get("the buffer writes")?;
        (reads + writes).get("the buffer accesses")?;
        Ok(())
    }
}

impl AddAssign for Counters {
    fn add_assign(&mut self, mut o: Counters) {
        for ((_, a), (_, b)) in self.fields_mut().into_iter().zip(o.fields_mut()) {
            *a += *b;
        }
    }
}

/// Counters for every phase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    per_phase: [Counters; 8],
}

impl Stats {
    pub fn phase(&self, p: Phase) -> &Counters {
        &self.per_phase[p.index()]
    }
    pub fn phase_mut(&mut self, p: Phase) -> &mut Counters {
        &mut self.per_phase[p.index()]
    }
    pub fn total(&self) -> Counters {
        let mut t = Counters::default();
        for c in &self.per_phase {
            t += *c;
        }
        t
    }
    /// `self += o`, checked: every counter of every phase, of the total
    /// and of the backward phases together, and their reads and writes,
    /// stay within `u64`; on overflow `self` is unchanged.
    pub fn checked_add(&mut self, o: &Stats) -> Result<(), Overflow> {
        let mut sum = self.clone();
        for (a, b) in sum.per_phase.iter_mut().zip(o.per_phase.iter()) {
            *a = a.checked_add(b)?;
        }
        sum.checked_totals()?;
        *self = sum;
        Ok(())
    }

    /// Checks that [`Stats::total`] and [`Stats::backward`], with their
    /// reads, writes and accesses, fit in `u64`.
    pub fn checked_totals(&self) -> Result<(), Overflow> {
        self.per_phase
            .iter()
            .try_fold(Counters::default(), |t, c| t.checked_add(c))?;
        Ok(())
    }

    /// The backward phases together (dX, dW, interleaved, drain, update).
    pub fn backward(&self) -> Counters {
        let mut t = Counters::default();
        for p in [
            Phase::BackwardDx,
            Phase::BackwardDw,
            Phase::BackwardInterleaved,
            Phase::Drain,
            Phase::Update,
        ] {
            t += *self.phase(p);
        }
        t
    }
    /// Multiply-accumulate slots a PE offers per cycle in `phase`: an
    /// interleaved pass uses both multipliers of the PE, every other phase one.
    pub fn mac_slots(phase: Phase) -> u64 {
        if phase == Phase::BackwardInterleaved {
            sysgrad_config::Backward::Interleaved.multipliers_per_pe() as u64
        } else {
            1
        }
    }
    /// The fewest cycles the counted MACs need on `pes` PEs: every MAC slot
    /// of every cycle busy ([`Stats::mac_slots`] per PE in each phase).
    pub fn mac_bound(&self, pes: usize) -> u64 {
        self.iter()
            .map(|(p, c)| c.macs.div_ceil(Stats::mac_slots(p) * pes as u64))
            .sum()
    }
    /// The fewest cycles the counted weight reads need when weights stream
    /// in at `cols` words a cycle (each weight word read once per use).
    pub fn weight_load_bound(&self, cols: usize) -> u64 {
        self.total().w_reads.div_ceil(cols as u64)
    }
    /// Useful MACs over (cycles x PEs) of the given counters: one MAC slot
    /// per PE and cycle (see [`Stats::phase_utilization`] for two-multiplier passes).
    pub fn utilization(c: &Counters, pes: usize) -> f64 {
        if c.cycles == 0 {
            0.0
        } else {
            c.macs as f64 / (c.cycles as f64 * pes as f64)
        }
    }
    /// Utilisation of `phase` (or of the whole run for `None`): useful MACs
    /// over the MAC slots of the cycles spent.
    pub fn phase_utilization(&self, phase: Option<Phase>, pes: usize) -> f64 {
        let (macs, slots) = self
            .iter()
            .filter(|(p, _)| phase.is_none_or(|q| q == *p))
            .fold((0, 0), |(m, s), (p, c)| {
                (m + c.macs, s + c.cycles * Stats::mac_slots(p) * pes as u64)
            });
        if slots == 0 {
            0.0
        } else {
            macs as f64 / slots as f64
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = (Phase, &Counters)> {
        Phase::ALL.iter().map(|p| (*p, self.phase(*p)))
    }
}

impl AddAssign<&Stats> for Stats {
    fn add_assign(&mut self, o: &Stats) {
        for (a, b) in self.per_phase.iter_mut().zip(o.per_phase.iter()) {
            *a += *b;
        }
    }
}

/// A Markdown table of the per-phase counters of several runs side by side
/// (phases with no cycles in any run are left out), with a total row.
pub fn markdown_table(runs: &[(&str, &Stats)], pes: usize) -> String {
    use std::fmt::Write;
    let mut s = String::from("| run | phase | cycles | MACs | utilization | reads | writes |\n|---|---|---:|---:|---:|---:|---:|\n");
    for (name, st) in runs {
        let rows = st
            .iter()
            .filter(|(_, c)| c.cycles > 0)
            .map(|(p, c)| (p.name(), *c, st.phase_utilization(Some(p), pes)))
            .chain(std::iter::once((
                "total",
                st.total(),
                st.phase_utilization(None, pes),
            )));
        for (phase, c, util) in rows {
            writeln!(
                s,
                "| {name} | {phase} | {} | {} | {:.1}% | {} | {} |",
                c.cycles,
                c.macs,
                100.0 * util,
                c.reads(),
                c.writes()
            )
            .unwrap();
        }
    }
    s
}
