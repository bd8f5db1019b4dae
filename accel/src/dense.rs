//! The dense controller (`docs/COMMANDS.md`, Dense controller): a decoder
//! that fetches one word per cycle into a two-entry queue, and the shared
//! issue engine (`sysgrad_emulator::issue`) that streams the queue's
//! entries into the array, reading and writing the buffers as waves issue
//! and results come out.

use crate::buffer::{Buffer, BufferId};
use crate::command::{Command, DataBuffer};
use crate::controller::{
    act_line, count_result, requant_line, store_result, ActLines, Controller, Core, Resident,
};
use crate::error::{ErrorCode, Fault};
use crate::numbers::LineArith;
use crate::stats::ControlStats;
use crate::window::Lines;
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::issue::{Entry, Issuer, Marks, Tile, Waves};
use sysgrad_emulator::{Array, Phase, Stats};
use sysgrad_isa::command::words_of;
use sysgrad_isa::Mode;

/// Entries the decoder may have waiting in the queue.
pub const QUEUE_DEPTH: usize = 2;

/// What a data entry reads and writes: the command it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// A weight tile at weight lines `addr..addr+k` (loads).
    Tile {
        addr: usize,
    },
    /// X lines (through the window as it stood at decode, if windowed),
    /// Y lines from `y`.
    Forward {
        x: Lines,
        y: usize,
        acc: bool,
    },
    Backward {
        dy: usize,
        x: Lines,
        dx: Lines,
        acc: bool,
    },
    Drain {
        dw: usize,
    },
    Requant {
        src: usize,
        dst: DataBuffer,
        dst_addr: usize,
    },
    /// ACT rides the REQUANT engine (`docs/COMMANDS.md`: "ACT: as REQUANT").
    Act(ActLines),
    /// Zero loads and swaps read nothing.
    None,
}

/// The dense controller's state beside the [`Core`].
#[derive(Debug, Clone)]
pub(crate) struct DenseControl {
    issuer: Issuer<Tag>,
    /// An update waiting for the tile in the PEs (`lr`).
    active_pending: Option<u8>,
    /// Whether the logical resident tile is the one in the PEs (no load
    /// since the last swap mark).
    resident_active: bool,
    /// Entries of a FLUSH_W or a stop still to be queued.
    backlog: Vec<Entry<Tag>>,
}

impl DenseControl {
    pub fn new(cfg: &ArrayConfig) -> Self {
        DenseControl {
            issuer: Issuer::new(cfg.rows(), cfg.cols()),
            active_pending: None,
            resident_active: true,
            backlog: Vec::new(),
        }
    }

    /// The marks of the next data entry that uses the resident tile: a
    /// swap if it waits in the shadow (carrying the pending update of the
    /// tile it replaces), else any update pending for it.
    fn marks(&mut self) -> Marks {
        let swap = !self.resident_active;
        self.resident_active = true;
        let pending = self.active_pending.take();
        Marks {
            swap,
            evict_update: pending.filter(|_| swap),
            update_first: pending.filter(|_| !swap),
        }
    }
}

/// Where the decoder is in the program.
struct Decoder {
    pc: usize,
    /// Words of the command being fetched.
    words: Vec<u64>,
    /// The stop (HALT or fault) has been queued.
    done: bool,
    stop: Option<Result<(), Fault>>,
}

impl Controller for DenseControl {
    /// One cycle at a time, decoder and issuer side by side.
    fn run(&mut self, core: &mut Core, program: &[u64], start: usize) -> Result<(), Fault> {
        let mut dec = Decoder {
            pc: start,
            words: Vec::new(),
            done: false,
            stop: None,
        };
        let mut words = Stats::default();
        loop {
            // The queue as it was at the start of the cycle decides whether
            // the decoder may go on (its entry appears the next cycle).
            let room = self.issuer.queue.len() < QUEUE_DEPTH;
            let mut io = Io {
                buffers: &mut core.buffers,
                stats: &mut words,
                control: &mut core.control,
                arith: &*core.arith,
            };
            let stopped = self.issuer.cycle(&mut core.driver, &mut io);
            if stopped {
                break;
            }
            if room {
                self.decode_cycle(core, program, &mut dec);
            }
        }
        core.driver.stats += &words;
        core.stop(dec.stop.expect("the run stopped at its stop entry"))
    }

    /// The exchange slots issued.
    fn load_slots(&self, _: &Core) -> u64 {
        self.issuer.slots
    }
}

impl DenseControl {
    /// One decoder cycle: a queued FLUSH_W part, or the next word.
    fn decode_cycle(&mut self, core: &mut Core, program: &[u64], dec: &mut Decoder) {
        if let Some(e) = self.backlog.pop() {
            self.issuer.queue.push_back(e);
            return;
        }
        if dec.done {
            return;
        }
        let at = dec.pc + dec.words.len();
        core.control.decode_cycles += 1;
        let Some(&w) = program.get(at) else {
            return self.stop(dec, program, Err(ErrorCode::ProgramEnd));
        };
        dec.words.push(w);
        if dec.words.len() < words_of(dec.words[0]) {
            return;
        }
        let decoded = Command::decode(&dec.words).map(|(cmd, _)| cmd);
        let checked = decoded.and_then(|cmd| core.check(&cmd).map(|_| cmd));
        match checked {
            Err(code) => self.stop(dec, program, Err(code)),
            Ok(cmd) => {
                let len = dec.words.len();
                core.control.record(cmd.name(), len as u64);
                if cmd == Command::Halt {
                    return self.stop(dec, program, Ok(()));
                }
                self.enqueue(core, &cmd);
                dec.pc += len;
                dec.words.clear();
            }
        }
    }

    /// Queues the stop entry for a HALT (`Ok`) or a fault at the command
    /// being fetched.
    fn stop(&mut self, dec: &mut Decoder, program: &[u64], why: Result<(), ErrorCode>) {
        dec.stop = Some(why.map_err(|code| Core::fault_at(code, program, dec.pc)));
        dec.done = true;
        self.queue_stop();
    }

    /// The queue entries of a command that passed its checks, and the
    /// logical resident tile after it.
    fn enqueue(&mut self, core: &mut Core, cmd: &Command) {
        match *cmd {
            Command::LoadW { addr, m, k } => {
                let (addr, m, k) = (addr.into(), m.into(), k.into());
                let load = Entry::Load {
                    tile: Tile {
                        m,
                        k,
                        lines: Some(addr..addr + k),
                        tag: Tag::Tile { addr },
                    },
                    zero: false,
                };
                // A tile loaded but never used is swapped in first, as
                // `none` switched it in: the tile it replaces (maybe dirty,
                // maybe with an update pending) then leaves the PEs and is
                // written back before this load reads lines it may share.
                if self.resident_active {
                    self.issuer.queue.push_back(load);
                } else {
                    let evict_update = self.marks().evict_update;
                    self.issuer.queue.push_back(Entry::Swap { evict_update });
                    self.backlog = vec![load];
                }
                self.resident_active = false;
                core.resident = Some(Resident {
                    addr,
                    m,
                    k,
                    dirty: false,
                });
            }
            Command::FlushW => {
                let marks = self.marks_for_flush();
                self.issuer.queue.push_back(zero_load());
                // The rest goes in over the next cycles, one entry each.
                self.backlog = vec![
                    zero_load(),
                    Entry::Swap {
                        evict_update: marks,
                    },
                ];
                core.resident = None;
            }
            Command::Forward {
                x_addr,
                y_addr,
                n,
                accumulate,
                window,
            } => {
                let marks = self.marks();
                self.queue_stream(
                    vec![Mode::Fwd],
                    n.into(),
                    marks,
                    Tag::Forward {
                        x: core.lines(x_addr, window),
                        y: y_addr.into(),
                        acc: accumulate,
                    },
                );
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
                let marks = self.marks();
                let tag = Tag::Backward {
                    dy: dy_addr.into(),
                    x: core.lines(x_addr, window),
                    dx: core.lines(dx_addr, window),
                    acc: accumulate,
                };
                self.queue_stream(mode.passes().to_vec(), n.into(), marks, tag);
            }
            Command::Drain { dw_addr } => {
                let marks = self.marks();
                self.issuer.queue.push_back(Entry::Drain {
                    marks,
                    tag: Tag::Drain { dw: dw_addr.into() },
                });
            }
            Command::Update { lr_shift } => {
                // A tile still waiting in the shadow registers is swapped
                // in first, so the update has a tile in the PEs to apply to.
                if !self.resident_active {
                    let evict_update = self.marks().evict_update;
                    self.issuer.queue.push_back(Entry::Swap { evict_update });
                }
                self.active_pending.get_or_insert(lr_shift);
                if let Some(t) = &mut core.resident {
                    t.dirty = true;
                }
            }
            Command::Requant {
                src,
                dst,
                dst_addr,
                count,
            } => self.issuer.queue.push_back(Entry::Requant {
                count: count.into(),
                tag: Tag::Requant {
                    src: src.into(),
                    dst,
                    dst_addr: dst_addr.into(),
                },
            }),
            Command::Act { .. } => {
                let (lines, count) = ActLines::of(cmd).expect("an ACT");
                self.issuer.queue.push_back(Entry::Requant {
                    count,
                    tag: Tag::Act(lines),
                });
            }
            // The entries decoded from here on carry the new window.
            Command::Window(win) => core.window = Some(win),
            Command::Sync => core.control.syncs += 1,
            Command::Halt => unreachable!("HALT is the stop entry"),
        }
    }

    /// The stop entry, and before it what the `none` controller would
    /// have done already: a tile loaded but not used yet is swapped in
    /// (carrying the update pending for the tile it replaces) and that tile
    /// is sent out with a load of zeros, as FLUSH_W's last two entries do;
    /// an update still pending for the tile in the PEs is applied by the
    /// stop entry. So a run ends with the buffers, PEs and resident tile
    /// of the `none` controller.
    fn queue_stop(&mut self) {
        let mut entries = Vec::new();
        if !self.resident_active {
            let evict_update = self.marks().evict_update;
            entries.extend([Entry::Swap { evict_update }, zero_load()]);
        }
        entries.push(Entry::Stop {
            update_first: self.active_pending.take(),
        });
        // One entry now, the rest one per cycle from the backlog's end.
        entries.reverse();
        self.issuer
            .queue
            .push_back(entries.pop().expect("the stop entry"));
        self.backlog = entries;
    }

    /// Queues the waves of `passes`, `n` each, on the resident tile.
    fn queue_stream(&mut self, passes: Vec<Mode>, n: usize, marks: Marks, tag: Tag) {
        self.issuer.queue.push_back(Entry::Stream {
            passes,
            n,
            marks,
            tag,
        });
    }

    /// FLUSH_W's swap carries the update pending for the tile in the PEs;
    /// the resident tile, if it never got into the PEs, is dropped (it is
    /// clean: an UPDATE would have swapped it in).
    fn marks_for_flush(&mut self) -> Option<u8> {
        self.resident_active = true;
        self.active_pending.take()
    }
}

fn zero_load() -> Entry<Tag> {
    Entry::zero_load(Tag::None)
}

/// The buffers as the issuer's waves see them, with the words they move.
struct Io<'a> {
    buffers: &'a mut [Buffer; 4],
    stats: &'a mut Stats,
    control: &'a mut ControlStats,
    arith: &'a dyn LineArith,
}

impl Io<'_> {
    fn buffer(&mut self, id: BufferId) -> &mut Buffer {
        &mut self.buffers[id as usize]
    }

    /// Writes `values` to accumulator line `line`, or adds them to what is
    /// there (as the PEs add), charged to `phase` as the `none` controller does.
    fn write_acc(&mut self, phase: Phase, line: usize, values: &[i64], acc: bool) {
        store_result(self.buffers, line, values, acc, self.arith);
        count_result(self.stats, phase, values.len() as u64, acc);
    }
}

fn phase_of(mode: Mode) -> Phase {
    match mode {
        Mode::Fwd => Phase::Forward,
        Mode::BwdDx => Phase::BackwardDx,
        Mode::BwdDw => Phase::BackwardDw,
        _ => Phase::BackwardInterleaved,
    }
}

impl Waves<Tag> for Io<'_> {
    fn slot(&mut self, tile: &Tile<Tag>, row: usize, w: &mut [i64]) {
        let Tag::Tile { addr } = tile.tag else {
            return;
        };
        if row < tile.k {
            let m = tile.m;
            w[..m].copy_from_slice(self.buffer(BufferId::Weights).read(addr + row, m));
            self.stats.phase_mut(Phase::Load).w_reads += m as u64;
        }
    }

    fn column(
        &mut self,
        tag: &Tag,
        mode: Mode,
        _pass: usize,
        t: usize,
        (m, k): (usize, usize),
        x: &mut [i64],
        dy: &mut [i64],
    ) -> bool {
        let phase = phase_of(mode);
        let (x_lines, dy_line) = match *tag {
            Tag::Forward { x, .. } => (x, None),
            Tag::Backward { dy, x, .. } => (x, Some(dy)),
            _ => unreachable!("only streams have columns"),
        };
        if mode.streams_x() {
            // A window's padding reads nothing: zeros (counted as read: the
            // counters follow the stream).
            match x_lines.at(t) {
                Some(line) => {
                    x[..k].copy_from_slice(self.buffer(BufferId::Activations).read(line, k))
                }
                None => x[..k].fill(0),
            }
            self.stats.phase_mut(phase).x_reads += k as u64;
        }
        let Some(dy_line) = dy_line else {
            return false;
        };
        dy[..m].copy_from_slice(self.buffer(BufferId::Gradients).read(dy_line + t, m));
        self.stats.phase_mut(phase).dy_reads += m as u64;
        true
    }

    fn result(&mut self, tag: &Tag, mode: Mode, t: usize, (m, k): (usize, usize), array: &Array) {
        match *tag {
            Tag::Forward { y, acc, .. } => {
                self.write_acc(Phase::Forward, y + t, &array.y_out()[..m], acc);
            }
            Tag::Backward { dx, acc, .. } => {
                let phase = phase_of(mode);
                let dx_out = &array.dx_out()[..k];
                match dx.at(t) {
                    Some(line) => self.write_acc(phase, line, dx_out, acc),
                    // Padding: nothing written, counted as written.
                    None => count_result(self.stats, phase, k as u64, acc),
                }
            }
            _ => unreachable!("only streams have results"),
        }
    }

    fn evicted(&mut self, tile: &Tile<Tag>, row: usize, array: &Array) {
        let Tag::Tile { addr } = tile.tag else {
            return;
        };
        let w_out = &array.w_out()[..tile.m];
        self.buffer(BufferId::Weights).write(addr + row, w_out);
        self.stats.phase_mut(Phase::Load).w_writes += tile.m as u64;
    }

    fn drained(&mut self, tag: &Tag, (m, k): (usize, usize), step: usize, array: &Array) {
        let Tag::Drain { dw } = *tag else {
            unreachable!("only drains drain")
        };
        let c = array.cols();
        let j = c - 1 - step;
        if j < m {
            let v: Vec<i64> = (0..k).map(|i| array.dw_east(i)).collect();
            self.buffer(BufferId::Accumulators).write(dw + j, &v);
            self.stats.phase_mut(Phase::Drain).dw_writes += k as u64;
        }
    }

    fn requant(&mut self, tag: &Tag, t: usize) {
        let arith = self.arith;
        match tag {
            Tag::Requant { src, dst, dst_addr } => {
                let words = requant_line(self.buffers, src + t, *dst, dst_addr + t, arith);
                self.control.requant_cycles += 1;
                self.control.requant_words += words as u64;
            }
            Tag::Act(lines) => {
                let words = act_line(self.buffers, lines, t, arith);
                self.control.act_cycles += 1;
                self.control.act_words += words as u64;
            }
            _ => unreachable!("only REQUANT and ACT requantize"),
        }
    }
}
