//! The controller of an array without pipelining: it fetches, decodes
//! and checks one command at a time, then executes it on the
//! cycle-accurate driver's tile operations, moving tiles between the
//! buffers and the array.
//!
//! Every cycle goes through the driver, so `driver.recording` (if enabled)
//! is exactly the `sa_top` stimulus the RTL controller must produce: decode,
//! REQUANT and ACT cycles appear as IDLE cycles.

use crate::buffer::BufferId;
use crate::command::{BackwardMode, Command, DataBuffer};
use crate::controller::{
    act_line, count_result, requant_line, store_result, ActLines, Controller, Core, Resident,
};
use crate::error::{ErrorCode, Fault};
use crate::window::Lines;
use ndarray::{Array2, ArrayView2};
use sysgrad_emulator::Phase;
use sysgrad_isa::command::words_of;
use sysgrad_isa::timing;

/// Why the driver's own operand checks cannot fail once `check` passed:
/// sizes and modes are checked, and buffers only hold in-range words.
const CHECKED: &str = "checked before execution";

/// The controller of a `none` array: it keeps nothing beyond the [`Core`].
pub(crate) struct NoneControl;

impl Controller for NoneControl {
    fn run(&mut self, core: &mut Core, program: &[u64], start: usize) -> Result<(), Fault> {
        let mut pc = start;
        loop {
            let (cmd, len) = match core.fetch(program, pc) {
                Ok(ok) => ok,
                Err(code) => return core.stop(Err(Core::fault_at(code, program, pc))),
            };
            if let Err(code) = core.check(&cmd) {
                return core.stop(Err(Core::fault_at(code, program, pc)));
            }
            let start = core.driver.cycle();
            core.execute(&cmd);
            let cycles = core.driver.cycle() - start + len as u64;
            core.control.record(cmd.name(), cycles);
            if cmd == Command::Halt {
                return core.stop(Ok(()));
            }
            pc += len;
        }
    }

    /// One LOAD cycle per weight row taken.
    fn load_slots(&self, core: &Core) -> u64 {
        core.driver.stats.phase(Phase::Load).cycles
    }
}

impl Core {
    /// Decodes the command at `pc`, spending one IDLE cycle per word its
    /// opcode has, even if decoding then fails: the RTL spends a decode
    /// cycle on a word before it can tell that the word is past the program.
    fn fetch(&mut self, program: &[u64], pc: usize) -> Result<(Command, usize), ErrorCode> {
        let rest = program.get(pc..).unwrap_or(&[]);
        let words = rest.first().map_or(1, |&w| words_of(w));
        let cycles = self.cost(timing::DECODE, words);
        self.driver.idle(cycles);
        self.control.decode_cycles += cycles as u64;
        Command::decode(rest)
    }

    /// Runs a command that passed [`Core::check`].
    fn execute(&mut self, cmd: &Command) {
        match *cmd {
            Command::LoadW { addr, m, k } => {
                let (addr, m, k) = (addr as usize, m as usize, k as usize);
                // All reads happen before the write-back (read-first banks).
                let w = self.read_tile(BufferId::Weights, Lines::Run(addr), k, m);
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
                window,
            } => {
                let t = self.resident.expect(CHECKED);
                let x_lines = self.lines(x_addr, window);
                let x = self.read_tile(BufferId::Activations, x_lines, n as usize, t.k);
                let y = self.driver.forward(x.view()).expect(CHECKED);
                let y = y.slice(ndarray::s![..t.m, ..]);
                self.write_acc(Phase::Forward, Lines::Run(y_addr.into()), y, accumulate);
            }
            Command::Backward {
                mode,
                dy_addr,
                x_addr,
                dx_addr,
                n,
                accumulate,
                window,
            } => {
                let lines = [dy_addr, x_addr, dx_addr].map(|a| self.lines(a, window));
                // dY lines follow the stream, never the window.
                let lines = [Lines::Run(dy_addr.into()), lines[1], lines[2]];
                self.backward(mode, lines, n, accumulate)
            }
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
            Command::Act { .. } => {
                let (lines, count) = ActLines::of(cmd).expect("an ACT");
                self.act(&lines, count);
            }
            Command::Window(win) => self.window = Some(win),
            Command::Sync => self.control.syncs += 1,
            Command::Halt => {}
        }
    }

    /// The passes of `mode` over dY, X and dX `lines`.
    fn backward(&mut self, mode: BackwardMode, lines: [Lines; 3], n: u16, accumulate: bool) {
        let [dy_lines, x_lines, dx_lines] = lines;
        let t = self.resident.expect(CHECKED);
        let n = n as usize;
        let mut dx = None;
        for &pass in mode.passes() {
            // Each pass streams dY from the buffer again: the sequential
            // schedule reads it twice, which is the cost interleaving saves.
            let dy = self.read_tile(BufferId::Gradients, dy_lines, n, t.m);
            let x = pass
                .computes_dw()
                .then(|| self.read_tile(BufferId::Activations, x_lines, n, t.k));
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
            self.write_acc(phase, dx_lines, dx, accumulate);
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

    /// Lanes `0..lanes` of the lines of positions `0..n` as a `lanes x n`
    /// matrix (element [lane, position]); zeros where a window's padding
    /// reads nothing.
    fn read_tile(&mut self, id: BufferId, lines: Lines, n: usize, lanes: usize) -> Array2<i64> {
        let buf = self.buffer_mut(id);
        let mut t = Array2::zeros((lanes, n));
        for pos in 0..n {
            let Some(line) = lines.at(pos) else { continue };
            for (lane, v) in buf.read(line, lanes).iter().enumerate() {
                t[[lane, pos]] = *v;
            }
        }
        t
    }

    /// Writes a `lanes x n` result tile into the accumulator lines of its
    /// positions (none at a window's padding), or adds it (saturating, like
    /// the PEs) to what is there, and counts the access as `gemm` does
    /// (padding included: the counters follow the stream).
    fn write_acc(&mut self, phase: Phase, lines: Lines, part: ArrayView2<i64>, accumulate: bool) {
        for (pos, col) in part.columns().into_iter().enumerate() {
            let Some(line) = lines.at(pos) else { continue };
            store_result(
                &mut self.buffers,
                line,
                &col.to_vec(),
                accumulate,
                &*self.arith,
            );
        }
        count_result(&mut self.driver.stats, phase, part.len() as u64, accumulate);
    }

    /// One line per cycle through the requantizer; the array idles.
    fn requant(&mut self, src: usize, dst: DataBuffer, dst_addr: usize, count: usize) {
        let mut words = 0;
        for line in 0..count {
            let arith = &*self.arith;
            words += requant_line(&mut self.buffers, src + line, dst, dst_addr + line, arith);
        }
        let cycles = self.cost(timing::REQUANT, count);
        self.driver.idle(cycles);
        self.control.requant_cycles += cycles as u64;
        self.control.requant_words += words as u64;
    }

    /// One line per cycle through the activation unit; the array idles.
    fn act(&mut self, lines: &ActLines, count: usize) {
        let words: usize = (0..count)
            .map(|t| act_line(&mut self.buffers, lines, t, &*self.arith))
            .sum();
        let cycles = self.cost(timing::REQUANT, count);
        self.driver.idle(cycles);
        self.control.act_cycles += cycles as u64;
        self.control.act_words += words as u64;
    }
}
