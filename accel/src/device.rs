//! The accelerator as a host sees it: buffers reached only through DMA
//! transfers, programs loaded into command memory, runs started and waited
//! for (`docs/HOST.md`). [`Device`] wraps the emulated [`Accelerator`],
//! counts the beats and host-link cycles every operation costs
//! ([`crate::link`]) and can record a [`Transcript`] of what it did, with
//! the data that came back, so that the same host operations can be played
//! on the RTL (`sysgrad-testbench`) or through the C driver and compared.

use crate::buffer::BufferId;
use crate::controller::State;
use crate::error::Fault;
use crate::layout::Blocked;
use crate::link::{dma_beats, HostLink};
use crate::machine::Accelerator;
use ndarray::{Array2, ArrayView2};
use serde::Serialize;
use std::collections::BTreeMap;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::{Counter, DmaTarget};

/// What a DMA transfer carries, for the traffic report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Traffic {
    /// Weights into the weight buffer (first use, or after a host update).
    WeightsIn,
    /// Updated weights read back because the host asks for them (the end
    /// of training, a checkpoint).
    WeightsOut,
    /// Weights read back only to check them, every step, against a
    /// reference (a debug read: the hardware counts its beats, a step's
    /// cost leaves it out; [`HostCounters::costed`]).
    CheckOut,
    /// X (activations, im2col patches) into the activation buffer.
    InputsIn,
    /// dY into the gradient buffer.
    GradientsIn,
    /// Y and dX read out (requantized data or raw accumulators).
    ResultsOut,
    /// Partial sums moved out and back in when a layer is split.
    PartialsIn,
    PartialsOut,
    /// dW drained for an optimizer on the host.
    WeightGradientsOut,
    /// Command words into command memory.
    ProgramIn,
}

impl Traffic {
    pub const ALL: [Traffic; 10] = [
        Traffic::WeightsIn,
        Traffic::WeightsOut,
        Traffic::CheckOut,
        Traffic::InputsIn,
        Traffic::GradientsIn,
        Traffic::ResultsOut,
        Traffic::PartialsIn,
        Traffic::PartialsOut,
        Traffic::WeightGradientsOut,
        Traffic::ProgramIn,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Traffic::WeightsIn => "weights_in",
            Traffic::WeightsOut => "weights_out",
            Traffic::CheckOut => "check_out",
            Traffic::InputsIn => "inputs_in",
            Traffic::GradientsIn => "gradients_in",
            Traffic::ResultsOut => "results_out",
            Traffic::PartialsIn => "partials_in",
            Traffic::PartialsOut => "partials_out",
            Traffic::WeightGradientsOut => "weight_gradients_out",
            Traffic::ProgramIn => "program_in",
        }
    }
    /// Whether the host sends (true) or receives.
    pub fn inbound(self) -> bool {
        matches!(
            self,
            Traffic::WeightsIn
                | Traffic::InputsIn
                | Traffic::GradientsIn
                | Traffic::PartialsIn
                | Traffic::ProgramIn
        )
    }
}

/// One kind of traffic: transfers, words (lanes with data) and beats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flow {
    pub transfers: u64,
    pub words: u64,
    pub beats: u64,
    /// Host-link cycles of these transfers (set-up and polling included).
    pub cycles: u64,
}

impl std::ops::AddAssign for Flow {
    fn add_assign(&mut self, o: Flow) {
        self.transfers += o.transfers;
        self.words += o.words;
        self.beats += o.beats;
        self.cycles += o.cycles;
    }
}

/// Everything the host spent outside the controller's runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostCounters {
    pub flows: BTreeMap<Traffic, Flow>,
    /// Programs run, and the register accesses around them (`PROG_LEN`
    /// and `PROG_START` where they change, `START`, the final `STATUS`
    /// read) in host-link cycles.
    pub runs: u64,
    pub run_overhead_cycles: u64,
}

impl HostCounters {
    pub fn flow(&self, t: Traffic) -> Flow {
        self.flows.get(&t).copied().unwrap_or_default()
    }
    pub fn beats_in(&self) -> u64 {
        self.total(true).beats
    }
    pub fn beats_out(&self) -> u64 {
        self.total(false).beats
    }
    /// All flows in one direction.
    pub fn total(&self, inbound: bool) -> Flow {
        let mut f = Flow::default();
        for (t, v) in &self.flows {
            if t.inbound() == inbound {
                f += *v;
            }
        }
        f
    }
    /// The counters without the debug reads ([`Traffic::CheckOut`]): what
    /// the work itself cost.
    pub fn costed(&self) -> HostCounters {
        let mut c = self.clone();
        c.flows.remove(&Traffic::CheckOut);
        c
    }
    /// Host-link cycles: every transfer and the register accesses of runs.
    pub fn link_cycles(&self) -> u64 {
        self.total(true).cycles + self.total(false).cycles + self.run_overhead_cycles
    }
    /// `self - earlier`, for the cost of what happened in between.
    pub fn since(&self, earlier: &HostCounters) -> HostCounters {
        let mut flows = BTreeMap::new();
        for (t, f) in &self.flows {
            let e = earlier.flow(*t);
            flows.insert(
                *t,
                Flow {
                    transfers: f.transfers - e.transfers,
                    words: f.words - e.words,
                    beats: f.beats - e.beats,
                    cycles: f.cycles - e.cycles,
                },
            );
        }
        HostCounters {
            flows,
            runs: self.runs - earlier.runs,
            run_overhead_cycles: self.run_overhead_cycles - earlier.run_overhead_cycles,
        }
    }
}

impl std::ops::AddAssign<&HostCounters> for HostCounters {
    fn add_assign(&mut self, o: &HostCounters) {
        for (t, f) in &o.flows {
            *self.flows.entry(*t).or_default() += *f;
        }
        self.runs += o.runs;
        self.run_overhead_cycles += o.run_overhead_cycles;
    }
}

/// One host operation and, for reads and runs, what came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostOp {
    /// DMA write of whole lines from `addr` (packed beats).
    Write {
        target: DmaTarget,
        addr: usize,
        lines: Vec<Vec<i64>>,
    },
    /// DMA read of `lines.len()` lines from `addr`; `lines` is what the
    /// emulator's buffer held.
    Read {
        target: DmaTarget,
        addr: usize,
        lines: Vec<Vec<i64>>,
    },
    /// DMA of a program's words into command memory from word `at`.
    Program { at: usize, words: Vec<u64> },
    /// `PROG_START = start` and `PROG_LEN = end` (each written if it
    /// changed), `START`, then wait; `state` is how the emulator's run
    /// ended and `cycle` the controller's cycle count (all runs) at its end.
    Run {
        start: usize,
        end: usize,
        state: State,
        cycle: u64,
    },
    /// Every counter the emulator knows, as it stood here.
    Counters(Vec<(Counter, u64)>),
    /// A label for messages (e.g. `step 2`).
    Mark(String),
}

/// The host operations of a session, in order.
pub type Transcript = Vec<HostOp>;

/// Why the device refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("DMA of lines {addr}..{end} of the {buffer} buffer, which has {depth} lines")]
    Range {
        buffer: &'static str,
        addr: usize,
        end: usize,
        depth: usize,
    },
    #[error("{buffer} buffer line {line} lane {lane}: {value} is not a word of it ({word})")]
    Value {
        buffer: &'static str,
        line: usize,
        lane: usize,
        value: i64,
        word: sysgrad_isa::host::Word,
    },
    #[error("a program of {words} words at word {at} does not fit the command memory ({depth} words, buffers.commands)")]
    ProgramSize {
        at: usize,
        words: usize,
        depth: usize,
    },
    #[error("the controller stopped")]
    Fault(#[from] Fault),
}

/// The buffer's name as in the config's `[buffers]` section.
pub fn buffer_name(id: BufferId) -> &'static str {
    match id {
        BufferId::Weights => "weights",
        BufferId::Activations => "activations",
        BufferId::Gradients => "gradients",
        BufferId::Accumulators => "accumulators",
    }
}

/// Command memory as the host wrote it, with `PROG_LEN` and `PROG_START`.
#[derive(Default)]
struct CommandMemory {
    /// Words `0..len` written so far (zero where never written, as the
    /// emulator and Verilator start command memory).
    words: Vec<u64>,
    prog_len: usize,
    prog_start: usize,
}

impl CommandMemory {
    fn holds(&self, at: usize, program: &[u64]) -> bool {
        self.words.get(at..at + program.len()) == Some(program)
    }
    /// Words `0..end` exist (zero where never written).
    fn cover(&mut self, end: usize) {
        if self.words.len() < end {
            self.words.resize(end, 0);
        }
    }
    fn write(&mut self, at: usize, program: &[u64]) {
        let end = at + program.len();
        self.cover(end);
        self.words[at..end].copy_from_slice(program);
    }
}

/// The emulated accelerator behind its host interface.
pub struct Device {
    pub acc: Accelerator,
    pub link: HostLink,
    pub host: HostCounters,
    /// What command memory holds (a program run twice is loaded once;
    /// several may be kept at their own words) and the registers that say
    /// which one START runs.
    commands: CommandMemory,
    /// Where [`Device::run`] puts a program: `None` at word 0 (sent again
    /// whenever it differs from the last), or each kept at its own words.
    kept: Option<KeptPrograms>,
    transcript: Option<Transcript>,
}

/// Programs kept side by side in command memory ([`Device::keep_programs`]):
/// each distinct program gets the next free words and is sent once; one
/// that does not fit in what is left empties the table and goes to word 0
/// (the programs of a step that do not fit together are sent again).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KeptPrograms {
    #[serde(skip)]
    at: std::collections::HashMap<Vec<u64>, usize>,
    /// The first free word.
    pub words: usize,
    /// Programs held now.
    pub programs: usize,
    /// Times the table was emptied for a program that did not fit.
    pub overflows: u64,
}

impl KeptPrograms {
    /// The word `program` runs from, placing it if it is new.
    fn place(&mut self, program: &[u64], depth: usize) -> usize {
        if let Some(&at) = self.at.get(program) {
            return at;
        }
        if self.words + program.len() > depth {
            self.overflows += 1;
            self.at.clear();
            (self.words, self.programs) = (0, 0);
        }
        let at = self.words;
        self.at.insert(program.to_vec(), at);
        self.words += program.len();
        self.programs += 1;
        at
    }
}

impl Device {
    pub fn new(acc: Accelerator, link: HostLink) -> Self {
        Device {
            acc,
            link,
            host: HostCounters::default(),
            commands: CommandMemory::default(),
            kept: None,
            transcript: None,
        }
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.acc.cfg()
    }

    /// Records every operation from now on.
    pub fn start_transcript(&mut self) {
        self.transcript = Some(Vec::new());
    }
    /// The operations recorded since [`Device::start_transcript`] (or
    /// since the last take); recording goes on.
    pub fn take_transcript(&mut self) -> Transcript {
        self.transcript
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
    pub fn recording(&self) -> bool {
        self.transcript.is_some()
    }
    fn record(&mut self, op: impl FnOnce() -> HostOp) {
        if let Some(t) = &mut self.transcript {
            t.push(op());
        }
    }
    /// A label in the transcript.
    pub fn mark(&mut self, label: &str) {
        self.record(|| HostOp::Mark(label.to_string()));
    }
    /// Every counter the emulator computes, into the transcript.
    pub fn checkpoint_counters(&mut self) {
        if self.recording() {
            let values = self.counters();
            self.record(|| HostOp::Counters(values));
        }
    }

    /// Counter `c` as the RTL's would read: the controller's from the
    /// emulator, the DMA beat counts from the host's own count; `None` for
    /// the ones that depend on the host's timing (stalls, idle cycles).
    pub fn counter(&self, c: Counter) -> Option<u64> {
        let wrap = |count| sysgrad_isa::host::counter_register(&self.acc.cfg(), count);
        match c {
            Counter::DmaInBeats => Some(wrap(self.host.beats_in())),
            Counter::DmaOutBeats => Some(wrap(self.host.beats_out())),
            c => self.acc.counter(c),
        }
    }
    pub fn counters(&self) -> Vec<(Counter, u64)> {
        Counter::ALL
            .iter()
            .filter_map(|&c| self.counter(c).map(|v| (c, v)))
            .collect()
    }

    fn charge(&mut self, t: Traffic, words: u64, beats: u64) {
        let f = self.host.flows.entry(t).or_default();
        f.transfers += 1;
        f.words += words;
        f.beats += beats;
        f.cycles += self.link.dma_cycles(beats);
    }

    fn check_range(&self, id: BufferId, addr: usize, count: usize) -> Result<(), DeviceError> {
        let depth = self.acc.buffer(id).depth();
        if count == 0 || addr + count > depth {
            return Err(DeviceError::Range {
                buffer: buffer_name(id),
                addr,
                end: addr + count,
                depth,
            });
        }
        Ok(())
    }

    /// DMA write of whole lines (each padded with zeros to the buffer's
    /// lanes) from line `addr`; `words` of them carry data (for the report).
    pub fn write_lines(
        &mut self,
        id: BufferId,
        addr: usize,
        lines: Vec<Vec<i64>>,
        words: u64,
        t: Traffic,
    ) -> Result<(), DeviceError> {
        self.check_range(id, addr, lines.len())?;
        let buf = self.acc.buffer_mut(id);
        let (lanes, word) = (buf.lanes(), buf.word());
        let mut lines = lines;
        for (i, line) in lines.iter_mut().enumerate() {
            line.resize(lanes, 0);
            for (lane, &v) in line.iter().enumerate() {
                buf.set(addr + i, lane, v).map_err(|_| DeviceError::Value {
                    buffer: buffer_name(id),
                    line: addr + i,
                    lane,
                    value: v,
                    word,
                })?;
            }
        }
        let beats = dma_beats(&self.cfg(), id.target(), lines.len(), true);
        self.charge(t, words, beats);
        self.record(|| HostOp::Write {
            target: id.target(),
            addr,
            lines,
        });
        Ok(())
    }

    /// DMA read of lines `addr..addr + count`.
    pub fn read_lines(
        &mut self,
        id: BufferId,
        addr: usize,
        count: usize,
        words: u64,
        t: Traffic,
    ) -> Result<Vec<Vec<i64>>, DeviceError> {
        self.check_range(id, addr, count)?;
        let buf = self.acc.buffer(id);
        let lines: Vec<Vec<i64>> = (0..count)
            .map(|i| {
                (0..buf.lanes())
                    .map(|lane| buf.get(addr + i, lane).expect("range checked"))
                    .collect()
            })
            .collect();
        let beats = dma_beats(&self.cfg(), id.target(), count, true);
        self.charge(t, words, beats);
        let copy = self.recording().then(|| lines.clone());
        self.record(|| HostOp::Read {
            target: id.target(),
            addr,
            lines: copy.expect("recording"),
        });
        Ok(lines)
    }

    /// DMA write of matrix `m` in the blocked `layout` of buffer `id`.
    pub fn write_matrix(
        &mut self,
        id: BufferId,
        layout: &Blocked,
        m: ArrayView2<i64>,
        t: Traffic,
    ) -> Result<(), DeviceError> {
        assert_eq!(m.dim(), (layout.rows, layout.cols), "matrix shape");
        let lanes = self.acc.buffer(id).lanes();
        let mut lines = vec![vec![0; lanes]; layout.lines()];
        for ((r, c), &v) in m.indexed_iter() {
            lines[layout.line(r - r % layout.lanes, c) - layout.base][r % layout.lanes] = v;
        }
        self.write_lines(id, layout.base, lines, m.len() as u64, t)
    }

    /// DMA read of the matrix in the blocked `layout` of buffer `id`.
    pub fn read_matrix(
        &mut self,
        id: BufferId,
        layout: &Blocked,
        t: Traffic,
    ) -> Result<Array2<i64>, DeviceError> {
        let words = (layout.rows * layout.cols) as u64;
        let lines = self.read_lines(id, layout.base, layout.lines(), words, t)?;
        Ok(Array2::from_shape_fn(
            (layout.rows, layout.cols),
            |(r, c)| lines[layout.line(r - r % layout.lanes, c) - layout.base][r % layout.lanes],
        ))
    }

    /// Loads `program` (unless command memory holds it already: at word 0,
    /// or with [`Device::keep_programs`] at the words it was given), starts
    /// it and waits for the HALT.
    pub fn run(&mut self, program: &[u64]) -> Result<(), DeviceError> {
        let depth = self.cfg().buffers().commands;
        let at = match &mut self.kept {
            Some(k) if program.len() <= depth => k.place(program, depth),
            _ => 0,
        };
        self.run_at(at, program)
    }

    /// From now on [`Device::run`] keeps each program at its own words of
    /// command memory (`PROG_START`), so a program run again is not sent
    /// again while the programs fit together.
    pub fn keep_programs(&mut self) {
        self.kept.get_or_insert_with(KeptPrograms::default);
    }

    /// The programs kept, with [`Device::keep_programs`].
    pub fn kept_programs(&self) -> Option<&KeptPrograms> {
        self.kept.as_ref()
    }

    /// Runs `program` kept at words `at..at + len` of command memory:
    /// sends its words only if command memory does not hold them there,
    /// writes `PROG_LEN` after a load or where it changes and `PROG_START`
    /// where it changes, then `START` and waits for the HALT.
    pub fn run_at(&mut self, at: usize, program: &[u64]) -> Result<(), DeviceError> {
        let depth = self.cfg().buffers().commands;
        let end = at + program.len();
        if end > depth {
            return Err(DeviceError::ProgramSize {
                at,
                words: program.len(),
                depth,
            });
        }
        let reg = self.link.register_cycles();
        // An empty program sends nothing (PROG_START = PROG_LEN: the run
        // ends at its first fetch, PROGRAM_END).
        let loaded = !program.is_empty() && !self.commands.holds(at, program);
        if loaded {
            self.charge(
                Traffic::ProgramIn,
                program.len() as u64,
                program.len() as u64,
            );
            self.commands.write(at, program);
            self.record(|| HostOp::Program {
                at,
                words: program.to_vec(),
            });
        }
        let writes = u64::from(loaded || self.commands.prog_len != end)
            + u64::from(self.commands.prog_start != at);
        (self.commands.prog_len, self.commands.prog_start) = (end, at);
        // The register writes, START, and the STATUS read that finds the
        // run over.
        self.host.runs += 1;
        self.host.run_overhead_cycles += (writes + 2) * reg;
        self.commands.cover(end);
        let outcome = self.acc.run_from(&self.commands.words[..end], at);
        let (state, cycle) = (self.acc.state(), self.acc.driver().cycle());
        self.record(|| HostOp::Run {
            start: at,
            end,
            state,
            cycle,
        });
        outcome.map_err(DeviceError::from)
    }

    /// Cycles the controller ran, all runs together.
    pub fn run_cycles(&self) -> u64 {
        self.acc.driver().stats.total().cycles
    }
}
