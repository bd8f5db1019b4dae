//! What the controller is whatever the array's pipelining: the array's
//! driver, the four buffers, the logical resident tile, the counters and
//! the status ([`Core`], whose command checks are in `checks.rs`), and the
//! [`Controller`] trait each pipelining's controller implements over it:
//! `none.rs` runs one command after the other on the driver's tile
//! operations, `dense.rs` decodes and issues waves side by side.

use crate::buffer::{Buffer, BufferId};
use crate::command::{ActFunction, Command, DataBuffer};
use crate::error::{ErrorCode, Fault};
use crate::numbers::{self, LineArith};
use crate::stats::ControlStats;
use crate::window::{Lines, Window};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::{Driver, Phase, Stats};
use sysgrad_isa::timing;

/// The weight tile in the array: where it came from and whether UPDATE
/// changed it (only a changed tile is written back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    pub addr: usize,
    pub m: usize,
    pub k: usize,
    pub dirty: bool,
}

/// The controller's status output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Reset, or between runs.
    Ready,
    /// Stopped at a HALT.
    Halted,
    /// Stopped at a bad command, which had no effect.
    Faulted(Fault),
}

/// The array, its four buffers and the controller state both controllers
/// keep.
pub(crate) struct Core {
    pub driver: Driver,
    pub buffers: [Buffer; 4],
    /// The logical resident tile (the latest LOAD_W), which the checks use.
    pub resident: Option<Resident>,
    /// The window of the latest WINDOW (none since reset), which the checks
    /// and windowed streams use.
    pub window: Option<Window>,
    pub control: ControlStats,
    pub state: State,
    /// The number format's write-back, REQUANT and ReLU.
    pub arith: Box<dyn LineArith>,
}

/// One pipelining's controller: how it runs a program on the [`Core`].
pub(crate) trait Controller {
    /// Runs `program` (command memory's words `0..PROG_LEN`) from word
    /// `start` (`PROG_START`) until HALT or the first bad command; a
    /// `start` at or past the end is `PROGRAM_END` at the first fetch.
    /// Buffers and array state carry over from earlier runs.
    fn run(&mut self, core: &mut Core, program: &[u64], start: usize) -> Result<(), Fault>;

    /// The `load_slots` counter: the cycles the array spent taking weights.
    fn load_slots(&self, core: &Core) -> u64;
}

impl Core {
    /// Around `driver`, every buffer empty.
    pub fn new(driver: Driver) -> Self {
        let cfg = driver.cfg();
        Core {
            buffers: BufferId::ALL.map(|id| Buffer::for_config(&cfg, id)),
            driver,
            resident: None,
            window: None,
            control: ControlStats::default(),
            state: State::Ready,
            arith: numbers::for_config(&cfg),
        }
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.driver.cfg()
    }

    pub fn buffer(&self, id: BufferId) -> &Buffer {
        &self.buffers[id as usize]
    }

    pub fn buffer_mut(&mut self, id: BufferId) -> &mut Buffer {
        &mut self.buffers[id as usize]
    }

    /// `cycles` for this array and `n` (stream columns, lines or words).
    pub fn cost(&self, cycles: timing::Cycles, n: usize) -> usize {
        cycles.eval(&self.cfg(), n) as usize
    }

    /// The lines a stream from `base` touches: `base + t`, or through the
    /// window (checked to exist) if `windowed`.
    pub fn lines(&self, base: u16, windowed: bool) -> Lines {
        match self.window.filter(|_| windowed) {
            Some(win) => Lines::Window(base.into(), win),
            None => Lines::Run(base.into()),
        }
    }

    /// The fault of `code` at the command starting at word `pc`.
    pub fn fault_at(code: ErrorCode, program: &[u64], pc: usize) -> Fault {
        Fault {
            code,
            pc,
            word: program.get(pc).copied().unwrap_or(0),
        }
    }

    /// The status after a run that ended at a HALT (`Ok`) or a fault.
    pub fn stop(&mut self, end: Result<(), Fault>) -> Result<(), Fault> {
        self.state = match end {
            Ok(()) => State::Halted,
            Err(f) => State::Faulted(f),
        };
        end
    }
}

/// The buffer a REQUANT writes.
pub(crate) fn dst_buffer(dst: DataBuffer) -> BufferId {
    match dst {
        DataBuffer::Activations => BufferId::Activations,
        DataBuffer::Gradients => BufferId::Gradients,
    }
}

/// Writes a result line `values` to accumulator line `line`, or with
/// `acc` adds it (as the PEs add: saturating in fixed point) to what is
/// there.
pub(crate) fn store_result(
    buffers: &mut [Buffer; 4],
    line: usize,
    values: &[i64],
    acc: bool,
    arith: &dyn LineArith,
) {
    let buf = &mut buffers[BufferId::Accumulators as usize];
    let mut v = values.to_vec();
    if acc {
        let old = buf.read(line, v.len());
        v.iter_mut()
            .zip(old)
            .for_each(|(p, a)| *p = arith.acc_add(*a, *p));
    }
    buf.write(line, &v);
}

/// Counts `words` result words of `phase` stored as `gemm` counts the
/// accumulator buffer: written (Y, or dX), or read and written again when
/// added to a partial sum.
pub(crate) fn count_result(stats: &mut Stats, phase: Phase, words: u64, acc: bool) {
    let st = stats.phase_mut(phase);
    if acc {
        st.acc_reads += words;
        st.acc_writes += words;
    } else if phase == Phase::Forward {
        st.y_writes += words;
    } else {
        st.dx_writes += words;
    }
}

/// One REQUANT line: accumulator line `src` requantized into line `dst`
/// of `to`; returns the words it moved (the lanes of `to`). It is the
/// activation unit's identity on every lane of `to`, as in the RTL.
pub(crate) fn requant_line(
    buffers: &mut [Buffer; 4],
    src: usize,
    to: DataBuffer,
    dst: usize,
    arith: &dyn LineArith,
) -> usize {
    let line = ActLines {
        func: ActFunction::Identity,
        src,
        dst: to,
        dst_addr: dst,
        mask: 0,
        lanes: buffers[dst_buffer(to) as usize].lanes(),
    };
    act_line(buffers, &line, 0, arith)
}

/// ACT's operands beside its line offset: what one line through the
/// activation unit reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActLines {
    pub func: ActFunction,
    pub src: usize,
    pub dst: DataBuffer,
    pub dst_addr: usize,
    pub mask: usize,
    pub lanes: usize,
}

impl ActLines {
    /// The operands of an ACT command and its line count.
    pub fn of(cmd: &Command) -> Option<(ActLines, usize)> {
        let Command::Act {
            func,
            src,
            dst,
            dst_addr,
            count,
            mask,
            lanes,
        } = *cmd
        else {
            return None;
        };
        let lines = ActLines {
            func,
            src: src.into(),
            dst,
            dst_addr: dst_addr.into(),
            mask: mask.into(),
            lanes: lanes.into(),
        };
        Some((lines, count.into()))
    }
}

/// Line `t` of an ACT: accumulator line `src + t` requantized, the
/// function applied lane by lane (the gate reads activation line
/// `mask + t`), into lanes `0..lanes` of line `dst_addr + t`; returns the
/// words written.
pub(crate) fn act_line(
    buffers: &mut [Buffer; 4],
    a: &ActLines,
    t: usize,
    arith: &dyn LineArith,
) -> usize {
    let q: Vec<i64> = buffers[BufferId::Accumulators as usize]
        .read(a.src + t, a.lanes)
        .iter()
        .map(|&acc| arith.requantize(acc, a.dst))
        .collect();
    // A lane that is not kept becomes 0: +0 in every format.
    let out: Vec<i64> = match a.func {
        ActFunction::Identity => q,
        ActFunction::Relu => q
            .into_iter()
            .map(|v| if arith.positive(v, a.dst) { v } else { 0 })
            .collect(),
        ActFunction::ReluGrad => {
            let mask = buffers[BufferId::Activations as usize].read(a.mask + t, a.lanes);
            q.into_iter()
                .zip(mask)
                .map(|(v, &m)| {
                    if arith.positive(m, DataBuffer::Activations) {
                        v
                    } else {
                        0
                    }
                })
                .collect()
        }
    };
    buffers[dst_buffer(a.dst) as usize].write(a.dst_addr + t, &out);
    a.lanes
}
