//! The controller: fetches and decodes commands, checks each one completely
//! against the configuration and its own state, then executes it on the
//! cycle-accurate [`Driver`], moving tiles between the buffers and the array.
//!
//! Every cycle goes through the driver, so `driver.recording` (if enabled)
//! is exactly the `sa_top` stimulus the RTL controller must produce: decode
//! and REQUANT cycles appear as IDLE cycles.

use super::buffer::{Buffer, BufferId};
use super::command::{BackwardMode, Command, DataBuffer};
use super::error::{ErrorCode, Fault};
use super::stats::ControlStats;
use ndarray::{Array2, ArrayView2};
use sysgrad_config::{fixed, ArrayConfig};
use sysgrad_emulator::{Counters, Driver, Phase};
use sysgrad_isa::timing;

/// Why the driver's own operand checks cannot fail once `check` passed:
/// sizes and modes are checked, and buffers only hold in-range words.
const CHECKED: &str = "checked before execution";

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

/// The array, its four buffers and the controller state.
pub struct Accelerator {
    pub driver: Driver,
    pub(crate) buffers: [Buffer; 4],
    /// The logical resident tile (the latest LOAD_W), which the checks use.
    pub(crate) resident: Option<Resident>,
    pub control: ControlStats,
    pub(crate) state: State,
    /// The dense controller's state (dense arrays only).
    pub(crate) dense: Option<crate::dense::DenseControl>,
}

impl Accelerator {
    pub fn new(cfg: ArrayConfig) -> Self {
        Accelerator::with_driver(Driver::new(cfg))
    }

    /// Around a given driver, e.g. [`Driver::recording`].
    pub fn with_driver(driver: Driver) -> Self {
        let cfg = driver.cfg();
        Accelerator {
            buffers: BufferId::ALL.map(|id| Buffer::for_config(&cfg, id)),
            driver,
            resident: None,
            control: ControlStats::default(),
            state: State::Ready,
            dense: cfg.dense().then(|| crate::dense::DenseControl::new(&cfg)),
        }
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.driver.cfg()
    }
    pub fn state(&self) -> State {
        self.state
    }
    pub fn resident(&self) -> Option<Resident> {
        self.resident
    }
    pub fn buffer(&self, id: BufferId) -> &Buffer {
        &self.buffers[id as usize]
    }
    pub fn buffer_mut(&mut self, id: BufferId) -> &mut Buffer {
        &mut self.buffers[id as usize]
    }

    /// Cycles the array spent in a mode other than IDLE.
    pub fn busy_cycles(&self) -> u64 {
        self.driver.stats.total().cycles - self.idle_cycles()
    }
    /// Cycles the array idled (decode, REQUANT, SYNC and HALT cycles).
    pub fn idle_cycles(&self) -> u64 {
        self.driver.stats.phase(Phase::Idle).cycles
    }

    /// Runs `program` from word 0 until HALT or the first bad command.
    /// Buffers and array state carry over from earlier runs.
    pub fn run(&mut self, program: &[u64]) -> Result<(), Fault> {
        if self.dense.is_some() {
            return self.run_dense(program);
        }
        let mut pc = 0;
        loop {
            let (cmd, len) = match self.fetch(program, pc) {
                Ok(ok) => ok,
                Err(code) => return self.fault(code, program, pc),
            };
            if let Err(code) = self.check(&cmd) {
                return self.fault(code, program, pc);
            }
            let start = self.driver.cycle();
            self.execute(&cmd);
            let cycles = self.driver.cycle() - start + len as u64;
            self.control.record(cmd.name(), cycles);
            if cmd == Command::Halt {
                self.state = State::Halted;
                return Ok(());
            }
            pc += len;
        }
    }

    /// Decodes the command at `pc`, spending one IDLE cycle per word its
    /// opcode has, even if decoding then fails: the RTL spends a decode
    /// cycle on a word before it can tell that the word is past the program.
    fn fetch(&mut self, program: &[u64], pc: usize) -> Result<(Command, usize), ErrorCode> {
        let rest = program.get(pc..).unwrap_or(&[]);
        let words = rest.first().map_or(1, |&w| super::command::words_of(w));
        let cycles = self.cost(timing::DECODE, words);
        self.driver.idle(cycles);
        self.control.decode_cycles += cycles as u64;
        Command::decode(rest)
    }

    /// `cycles` for this array and `n` (stream columns, lines or words).
    fn cost(&self, cycles: timing::Cycles, n: usize) -> usize {
        let cfg = self.cfg();
        cycles.eval(&cfg, n) as usize
    }

    fn fault(&mut self, code: ErrorCode, program: &[u64], pc: usize) -> Result<(), Fault> {
        let fault = Fault {
            code,
            pc,
            word: program.get(pc).copied().unwrap_or(0),
        };
        self.state = State::Faulted(fault);
        Err(fault)
    }

    /// Everything that can go wrong, in the documented priority order,
    /// before any effect.
    pub(crate) fn check(&self, cmd: &Command) -> Result<(), ErrorCode> {
        match ErrorCode::CHECK_ORDER
            .into_iter()
            .find(|&code| self.violates(cmd, code))
        {
            Some(code) => Err(code),
            None => Ok(()),
        }
    }

    /// Whether `cmd` fails the check of `code` (`docs/COMMANDS.md`, Errors);
    /// [`Accelerator::check`] asks in the documented priority order, so a
    /// check may assume that the ones before it passed.
    fn violates(&self, cmd: &Command, code: ErrorCode) -> bool {
        use ErrorCode::*;
        let cfg = self.cfg();
        let outside =
            |id: BufferId, addr: u16, len: usize| !self.buffer(id).holds(addr.into(), len);
        match (code, *cmd) {
            (ZeroSize, Command::LoadW { m, k, .. }) => m == 0 || k == 0,
            (ZeroSize, Command::Forward { n, .. } | Command::Backward { n, .. }) => n == 0,
            (ZeroSize, Command::Requant { count, .. }) => count == 0,
            (TileTooLarge, Command::LoadW { m, k, .. }) => {
                usize::from(m) > cfg.cols() || usize::from(k) > cfg.rows()
            }
            (LrShift, Command::Update { lr_shift }) => !cfg.accepts_lr_shift(lr_shift.into()),
            (NotInterleaved, Command::Backward { mode, .. }) => {
                mode == BackwardMode::Interleaved && !cfg.interleaved()
            }
            (
                NoTile,
                Command::Forward { .. }
                | Command::Backward { .. }
                | Command::Drain { .. }
                | Command::Update { .. },
            ) => self.resident.is_none(),
            (AddressRange, _) => self.out_of_range(cmd, outside),
            (WeightOverlap, Command::LoadW { addr, k, .. }) => {
                self.resident.filter(|t| t.dirty).is_some_and(|old| {
                    let (a, k) = (usize::from(addr), usize::from(k));
                    let overlap = a < old.addr + old.k && old.addr < a + k;
                    overlap && a != old.addr
                })
            }
            _ => false,
        }
    }

    /// ADDRESS_RANGE: whether a line range the command names runs past its
    /// buffer (`outside`), operands in the documented order.
    fn out_of_range(&self, cmd: &Command, outside: impl Fn(BufferId, u16, usize) -> bool) -> bool {
        use BufferId::*;
        match *cmd {
            Command::LoadW { addr, k, .. } => outside(Weights, addr, k.into()),
            Command::Forward {
                x_addr, y_addr, n, ..
            } => outside(Activations, x_addr, n.into()) || outside(Accumulators, y_addr, n.into()),
            Command::Backward {
                mode,
                dy_addr,
                x_addr,
                dx_addr,
                n,
                ..
            } => {
                let n = n.into();
                outside(Gradients, dy_addr, n)
                    || (mode.computes_dw() && outside(Activations, x_addr, n))
                    || (mode.computes_dx() && outside(Accumulators, dx_addr, n))
            }
            Command::Drain { dw_addr } => self
                .resident
                .is_some_and(|t| outside(Accumulators, dw_addr, t.m)),
            Command::Requant {
                src,
                dst,
                dst_addr,
                count,
            } => {
                outside(Accumulators, src, count.into())
                    || outside(dst_buffer(dst), dst_addr, count.into())
            }
            Command::FlushW | Command::Update { .. } | Command::Sync | Command::Halt => false,
        }
    }

    /// Runs a command that passed [`Accelerator::check`].
    fn execute(&mut self, cmd: &Command) {
        match *cmd {
            Command::LoadW { addr, m, k } => {
                let (addr, m, k) = (addr as usize, m as usize, k as usize);
                // All reads happen before the write-back (read-first banks).
                let w = self.read_tile(BufferId::Weights, addr, k, m);
                self.swap_tile(w.view());
                self.resident = Some(Resident {
                    addr,
                    m,
                    k,
                    dirty: false,
                });
            }
            Command::FlushW => {
                self.swap_tile(Array2::zeros((0, 0)).view());
                self.resident = None;
            }
            Command::Forward {
                x_addr,
                y_addr,
                n,
                accumulate,
            } => {
                let t = self.resident.expect(CHECKED);
                let x = self.read_tile(BufferId::Activations, x_addr as usize, n as usize, t.k);
                let y = self.driver.forward(x.view()).expect(CHECKED);
                let y = y.slice(ndarray::s![..t.m, ..]);
                self.write_acc(Phase::Forward, y_addr as usize, y, accumulate, |c| {
                    &mut c.y_writes
                });
            }
            Command::Backward {
                mode,
                dy_addr,
                x_addr,
                dx_addr,
                n,
                accumulate,
            } => self.backward(mode, dy_addr, x_addr, dx_addr, n, accumulate),
            Command::Drain { dw_addr } => {
                let t = self.resident.expect(CHECKED);
                let dw = self.driver.drain();
                for j in 0..t.m {
                    let row = dw.row(j);
                    let row = row.as_slice().expect("standard layout");
                    self.buffer_mut(BufferId::Accumulators)
                        .write(dw_addr as usize + j, &row[..t.k]);
                }
            }
            Command::Update { lr_shift } => {
                self.driver.update(lr_shift.into()).expect(CHECKED);
                self.resident.as_mut().expect(CHECKED).dirty = true;
            }
            Command::Requant {
                src,
                dst,
                dst_addr,
                count,
            } => self.requant(src as usize, dst, dst_addr as usize, count as usize),
            Command::Sync => self.control.syncs += 1,
            Command::Halt => {}
        }
    }

    fn backward(
        &mut self,
        mode: BackwardMode,
        dy_addr: u16,
        x_addr: u16,
        dx_addr: u16,
        n: u16,
        accumulate: bool,
    ) {
        let t = self.resident.expect(CHECKED);
        let n = n as usize;
        let mut dx = None;
        for &pass in mode.passes() {
            // Each pass streams dY from the buffer again: the sequential
            // schedule reads it twice, which is the cost interleaving saves.
            let dy = self.read_tile(BufferId::Gradients, dy_addr as usize, n, t.m);
            let x = pass
                .computes_dw()
                .then(|| self.read_tile(BufferId::Activations, x_addr as usize, n, t.k));
            let out = self
                .driver
                .backward(pass, dy.view(), x.as_ref().map(|x| x.view()))
                .expect(CHECKED);
            dx = dx.or(out);
        }
        if let Some(dx) = dx {
            let phase = if mode == BackwardMode::Interleaved {
                Phase::BackwardInterleaved
            } else {
                Phase::BackwardDx
            };
            let dx = dx.slice(ndarray::s![..t.k, ..]);
            self.write_acc(phase, dx_addr as usize, dx, accumulate, |c| {
                &mut c.dx_writes
            });
        }
    }

    /// LOAD cycles shifting `w` in; the tile shifted out goes back to its
    /// lines if UPDATE changed it (as `gemm` stores updated tiles).
    fn swap_tile(&mut self, w: ArrayView2<i64>) {
        let old = self.driver.load(w).expect(CHECKED);
        if let Some(t) = self.resident.filter(|t| t.dirty) {
            for i in 0..t.k {
                let col: Vec<i64> = old.column(i).iter().take(t.m).copied().collect();
                self.buffer_mut(BufferId::Weights).write(t.addr + i, &col);
            }
            self.driver.stats.phase_mut(Phase::Load).w_writes += (t.m * t.k) as u64;
        }
    }

    /// Lanes `0..lanes` of lines `addr..addr+lines` as a `lanes x lines`
    /// matrix (element [lane, line]).
    fn read_tile(&mut self, id: BufferId, addr: usize, lines: usize, lanes: usize) -> Array2<i64> {
        let buf = self.buffer_mut(id);
        let mut t = Array2::zeros((lanes, lines));
        for line in 0..lines {
            for (lane, v) in buf.read(addr + line, lanes).iter().enumerate() {
                t[[lane, line]] = *v;
            }
        }
        t
    }

    /// Writes a `lanes x lines` result tile into the accumulator buffer, or
    /// adds it (saturating, like the PEs) to what is there, and counts the
    /// access as `gemm` does.
    fn write_acc(
        &mut self,
        phase: Phase,
        addr: usize,
        part: ArrayView2<i64>,
        accumulate: bool,
        first_write: fn(&mut Counters) -> &mut u64,
    ) {
        let aw = self.cfg().format().acc_bits;
        let buf = self.buffer_mut(BufferId::Accumulators);
        for (line, col) in part.columns().into_iter().enumerate() {
            let mut v: Vec<i64> = col.to_vec();
            if accumulate {
                let old = buf.read(addr + line, v.len());
                v.iter_mut()
                    .zip(old)
                    .for_each(|(p, a)| *p = fixed::acc_add(*a, *p, aw));
            }
            buf.write(addr + line, &v);
        }
        let st = self.driver.stats.phase_mut(phase);
        let words = part.len() as u64;
        if accumulate {
            st.acc_reads += words;
            st.acc_writes += words;
        } else {
            *first_write(st) += words;
        }
    }

    /// One line per cycle through the requantizer; the array idles.
    fn requant(&mut self, src: usize, dst: DataBuffer, dst_addr: usize, count: usize) {
        let f = self.cfg().format();
        let lanes = self.buffer(dst_buffer(dst)).lanes();
        for line in 0..count {
            let q: Vec<i64> = self
                .buffer_mut(BufferId::Accumulators)
                .read(src + line, lanes)
                .iter()
                .map(|&a| fixed::requantize(a, f.frac_bits, f.in_bits, f.acc_bits))
                .collect();
            self.buffer_mut(dst_buffer(dst)).write(dst_addr + line, &q);
        }
        let cycles = self.cost(timing::REQUANT, count);
        self.driver.idle(cycles);
        self.control.requant_cycles += cycles as u64;
        self.control.requant_words += (count * lanes) as u64;
    }
}

fn dst_buffer(dst: DataBuffer) -> BufferId {
    match dst {
        DataBuffer::Activations => BufferId::Activations,
        DataBuffer::Gradients => BufferId::Gradients,
    }
}
