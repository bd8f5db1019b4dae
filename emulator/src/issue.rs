//! The issue rules of a dense array (`docs/COMMANDS.md`, Dense controller,
//! Issue), written once: the accelerator's controller feeds this engine
//! from its decoder, and `gemm` feeds it a layer's entries directly, so
//! both schedule waves exactly alike.
//!
//! Each cycle the [`Issuer`] lets its two engines act on the queue's
//! entries: the *load engine* exchanges the next weight tile into the
//! PEs' shadow registers (R slots), the *data engine* streams passes,
//! swaps tiles in, applies updates and drains. From their actions it
//! builds the array's input for the cycle; the data each wave needs and
//! where its results go are the caller's ([`Waves`]).

use crate::array::{Array, CycleInput};
use crate::driver::Driver;
use crate::stats::Phase;
use std::collections::VecDeque;
use std::ops::Range;
use sysgrad_isa::{timing, Mode};

/// A weight tile: `m` rows of M (array columns) by `k` columns of K (array
/// rows), the weight lines its rows go back to (for the write-back hazard;
/// `None` if they never overlap another tile's), and the caller's tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tile<T> {
    pub m: usize,
    pub k: usize,
    pub lines: Option<Range<usize>>,
    pub tag: T,
}

/// One queue entry (`docs/COMMANDS.md`, Decoder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry<T> {
    /// Exchange `tile` into the shadow registers (zero weights if `zero`).
    Load { tile: Tile<T>, zero: bool },
    /// The waves of `passes` (modes FWD, BWD_DX, BWD_DW, BWD_IL), `n` each.
    Stream {
        passes: Vec<Mode>,
        n: usize,
        marks: Marks,
        tag: T,
    },
    /// FLUSH_W's middle entry: a bubble wave carrying a swap.
    Swap { evict_update: Option<u8> },
    /// C DRAIN cycles once every wave is out.
    Drain { marks: Marks, tag: T },
    /// `count` REQUANT cycles once every result is written.
    Requant { count: usize, tag: T },
    /// HALT or a fault: stop once everything is written, after one UPDATE
    /// cycle (`lr`) if an update is still pending for the tile in the PEs.
    Stop { update_first: Option<u8> },
}

impl<T> Entry<T> {
    /// A load of zero weights, tagged `tag`: it swaps out, or sends out of
    /// the array, the tile before it.
    pub fn zero_load(tag: T) -> Self {
        Entry::Load {
            tile: Tile {
                m: 0,
                k: 0,
                lines: None,
                tag,
            },
            zero: true,
        }
    }
}

/// What the decoder attached to a data entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    /// The entry's first wave swaps in the tile the last load exchanged.
    pub swap: bool,
    /// The swap carries the update of the tile it swaps out (`lr`).
    pub evict_update: Option<u8>,
    /// One UPDATE cycle (`lr`) before the entry's waves.
    pub update_first: Option<u8>,
}

/// What the issuer needs from its caller: the data of each wave and slot
/// as they issue, and the results, weights and dW as they come out.
pub trait Waves<T> {
    /// The weights of `row` of `tile` into `w` (C lanes, 0 outside the tile).
    fn slot(&mut self, tile: &Tile<T>, row: usize, w: &mut [i64]);
    /// The data of wave `t` of pass `pass` (mode `mode`) of stream `tag` on
    /// a tile of `shape` (m, k): x (R lanes) and dy (C lanes), 0 outside
    /// the tile; returns `dy_valid`.
    #[allow(clippy::too_many_arguments)]
    fn column(
        &mut self,
        tag: &T,
        mode: Mode,
        pass: usize,
        t: usize,
        shape: (usize, usize),
        x: &mut [i64],
        dy: &mut [i64],
    ) -> bool;
    /// The result of that wave (Y for FWD, dX for BWD_DX and BWD_IL) on
    /// `array`'s outputs.
    fn result(&mut self, tag: &T, mode: Mode, t: usize, shape: (usize, usize), array: &Array);
    /// A row of a dirty tile that left the array, on `array`'s `w_out`.
    fn evicted(&mut self, tile: &Tile<T>, row: usize, array: &Array);
    /// DRAIN cycle `step` of the resident tile of `shape`, on `dw_out`.
    fn drained(&mut self, tag: &T, shape: (usize, usize), step: usize, array: &Array);
    /// REQUANT cycle `t`.
    fn requant(&mut self, tag: &T, t: usize);
}

/// A tile in or leaving the PEs, and whether it was updated.
#[derive(Debug, Clone)]
struct Held<T> {
    tile: Tile<T>,
    dirty: bool,
}

/// What the shadow registers hold.
#[derive(Debug, Clone)]
enum Shadow<T> {
    /// Nothing anyone will write back or swap in.
    Junk,
    /// A loaded tile, not swapped in yet.
    Loaded(Tile<T>),
    /// The tile the last swap sent there, waiting to be sent out.
    Evicted(Held<T>),
}

/// A result or weight row due at the outputs.
#[derive(Debug, Clone)]
enum Due<T> {
    Result {
        tag: T,
        mode: Mode,
        t: usize,
        shape: (usize, usize),
    },
    Evicted {
        tile: Tile<T>,
        row: usize,
    },
}

/// The data engine's entry and how far it has got.
#[derive(Debug, Clone)]
struct DataJob<T> {
    entry: Entry<T>,
    steps: VecDeque<Step>,
}

/// What the data engine does next for its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// A bubble wave carrying the swap.
    SwapBubble,
    /// Wait until the array is empty, then one UPDATE cycle.
    UpdateFirst(u8),
    /// Wave `t` of pass `pass`; `swap` on the first wave of a marked stream.
    Wave {
        pass: usize,
        t: usize,
        swap: bool,
    },
    /// Wait until the array is empty, then DRAIN cycle 0, 1, ...
    Drain(usize),
    /// Wait until every accumulator write has landed, then REQUANT cycle
    /// 0, 1, ...
    Requant(usize),
    /// One cycle for the last REQUANT line's write to land before the
    /// next entry's waves read it.
    Settle,
    Stop,
}

/// The load engine's entry and how far it has got.
#[derive(Debug, Clone)]
struct LoadJob<T> {
    /// `None`: only send a dirty shadow tile out (before a stop).
    tile: Option<Tile<T>>,
    zero: bool,
    phase: LoadPhase,
    /// The tile the slots are sending out.
    outgoing: Option<Held<T>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadPhase {
    /// Zero slots sending a dirty shadow tile out first (write-back hazard).
    PushOut(usize),
    /// Waiting until no dirty tile is in transit.
    WaitClean,
    Slots(usize),
}

/// What the data engine does in a cycle.
#[derive(Debug, Clone, Copy, Default)]
struct DataAction {
    /// A data wave: (mode, pass, t).
    wave: Option<(Mode, usize, usize)>,
    swap: bool,
    evict_update: Option<u8>,
    /// A global UPDATE (lr) or DRAIN (step) cycle.
    update: Option<u8>,
    drain: Option<usize>,
    requant: Option<usize>,
    /// Before the stop: send the dirty tile in the shadow registers out.
    push_out: bool,
    stop: bool,
    /// The entry is done after this cycle.
    done: bool,
}

impl DataAction {
    fn global(&self) -> bool {
        self.update.is_some() || self.drain.is_some()
    }
}

/// The dense issue engine of one array.
#[derive(Debug, Clone)]
pub struct Issuer<T> {
    pub queue: VecDeque<Entry<T>>,
    rows: usize,
    cols: usize,
    data: Option<DataJob<T>>,
    load: Option<LoadJob<T>>,
    active: Option<Held<T>>,
    shadow: Shadow<T>,
    /// The last cycle that decided a wave that was not a bubble.
    last_wave: Option<u64>,
    /// The cycle in which the latest accumulator write lands (a result
    /// line or a DRAIN line).
    last_acc_write: Option<u64>,
    /// Results and weight rows on their way to the outputs, by due cycle.
    pipe: VecDeque<(u64, Due<T>)>,
    /// The issue register: this cycle's decision reaches the array in the
    /// next cycle (`None`: IDLE).
    staged: Option<CycleInput>,
    /// A DRAIN cycle decided in the last cycle: its line is on `dw_out`
    /// in this one.
    staged_drain: Option<(T, (usize, usize), usize)>,
    /// Weight rows written back in this cycle: they count as written once
    /// the cycle's decisions are made (a load may read them from the next).
    rows_landing: usize,
    /// Rows of dirty tiles swapped out but not written yet, and the hull
    /// of their lines.
    dirty_rows: usize,
    hull: Option<Range<usize>>,
    /// Exchange slots issued (the `load_slots` counter).
    pub slots: u64,
}

/// The steps of a data entry, in order.
fn steps_of<T>(entry: &Entry<T>) -> VecDeque<Step> {
    let mut steps = VecDeque::new();
    match entry {
        Entry::Stream {
            passes, n, marks, ..
        } => {
            // A swap rides on the first wave, unless an update comes between.
            let bubble = marks.swap && marks.update_first.is_some();
            if bubble {
                steps.push_back(Step::SwapBubble);
            }
            if let Some(lr) = marks.update_first {
                steps.push_back(Step::UpdateFirst(lr));
            }
            for pass in 0..passes.len() {
                for t in 0..*n {
                    let swap = marks.swap && !bubble && pass == 0 && t == 0;
                    steps.push_back(Step::Wave { pass, t, swap });
                }
            }
        }
        Entry::Drain { marks, .. } => {
            if marks.swap {
                steps.push_back(Step::SwapBubble);
            }
            if let Some(lr) = marks.update_first {
                steps.push_back(Step::UpdateFirst(lr));
            }
            steps.push_back(Step::Drain(0));
        }
        Entry::Swap { .. } => steps.push_back(Step::SwapBubble),
        Entry::Requant { .. } => steps.push_back(Step::Requant(0)),
        Entry::Stop { update_first } => {
            if let Some(lr) = update_first {
                steps.push_back(Step::UpdateFirst(*lr));
            }
            steps.push_back(Step::Stop);
        }
        Entry::Load { .. } => unreachable!("loads go to the load engine"),
    }
    steps
}

pub(crate) fn phase_of(mode: Mode) -> Phase {
    match mode {
        Mode::Fwd => Phase::Forward,
        Mode::BwdDx => Phase::BackwardDx,
        Mode::BwdDw => Phase::BackwardDw,
        Mode::BwdIl => Phase::BackwardInterleaved,
        other => unreachable!("{other:?} is not a streaming mode"),
    }
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

impl<T: Clone> Issuer<T> {
    /// The engine of an array of `rows` x `cols`, after reset.
    pub fn new(rows: usize, cols: usize) -> Self {
        Issuer {
            queue: VecDeque::new(),
            rows,
            cols,
            data: None,
            load: None,
            active: None,
            shadow: Shadow::Junk,
            last_wave: None,
            last_acc_write: None,
            pipe: VecDeque::new(),
            staged: None,
            staged_drain: None,
            rows_landing: 0,
            dirty_rows: 0,
            hull: None,
            slots: 0,
        }
    }

    /// Whether both engines are idle and the queue is empty.
    pub fn idle(&self) -> bool {
        self.data.is_none() && self.load.is_none() && self.queue.is_empty()
    }

    /// The result latency R + C.
    fn latency(&self) -> u64 {
        // A dense array has no multiplier register (`ArrayConfig` refuses one).
        timing::RESULT_LATENCY.eval_dims(self.rows, self.cols, 0, 0)
    }

    /// The cycles from a decision to its results at the array's outputs:
    /// one in the issue register, R + C in the array.
    fn due(&self, now: u64) -> u64 {
        now + 1 + self.latency()
    }

    /// Whether `now` is more than R + C cycles past the last wave: a global
    /// cycle decided now reaches an empty array, and everything that wave
    /// sent out is written by the end of this cycle.
    fn quiet(&self, now: u64) -> bool {
        self.last_wave.is_none_or(|t| now > t + self.latency())
    }

    /// Whether every accumulator write has landed before this cycle (so
    /// REQUANT may read the lines).
    fn acc_written(&self, now: u64) -> bool {
        self.last_acc_write.is_none_or(|t| now > t)
    }

    /// One cycle: the results due are delivered, the engines decide, the
    /// array is clocked once with the last cycle's decision (the issue
    /// register) and this one's is staged. Returns true in the cycle a
    /// Stop entry completes (the run's last cycle).
    pub fn cycle(&mut self, drv: &mut Driver, src: &mut impl Waves<T>) -> bool {
        let now = drv.cycle();
        self.deliver(now, drv, src);
        self.take_data();
        let act = self.data_action(now);
        let cfg = drv.cfg();
        let mut inp = CycleInput::zeros(&cfg, Mode::Idle);
        let mut phase = Phase::Idle;
        if act.swap {
            self.swap(act.evict_update);
            inp.wave.swap = true;
            if let Some(lr) = act.evict_update {
                inp.wave.update = true;
                inp.wave.lr = lr;
                inp.lr_shift = lr.into();
            }
        }
        // After the swap: a load taken in the swap's cycle sees the tile
        // just switched out (dirty or not) in the shadow registers.
        self.take_load(&act);
        let shape = self.shape();
        if let Some((mode, pass, t)) = act.wave {
            phase = phase_of(mode);
            self.issue_wave(now, (mode, pass, t), &mut inp, drv, src);
        }
        let slot = self.slot(now, &mut inp, src);
        if slot && act.wave.is_none() {
            phase = Phase::Load;
        }
        if let Some(lr) = act.update {
            inp.mode = Mode::Update.into();
            inp.lr_shift = lr.into();
            phase = Phase::Update;
            if let Some(h) = &mut self.active {
                h.dirty = true;
            }
        } else if let Some(step) = act.drain {
            inp.mode = Mode::Drain.into();
            phase = Phase::Drain;
            self.staged_drain = Some((self.data_tag(), shape, step));
            self.last_acc_write = Some(now + 1);
        } else if act.wave.is_some() || act.swap || slot {
            inp.mode = Mode::Stream.into();
            self.last_wave = Some(now);
        }
        if let Some(t) = act.requant {
            src.requant(&self.data_tag(), t);
        }
        self.land_rows();
        let apply = self.staged.replace(inp);
        drv.clock(
            apply.unwrap_or_else(|| CycleInput::zeros(&cfg, Mode::Idle)),
            phase,
        );
        if act.done {
            self.data = None;
        }
        act.stop
    }

    /// The active tile's (m, k), or (0, 0).
    fn shape(&self) -> (usize, usize) {
        self.active
            .as_ref()
            .map_or((0, 0), |h| (h.tile.m, h.tile.k))
    }

    /// The data engine takes the queue head if it is idle and the head is
    /// not a load (the load engine may then take the entry behind it in
    /// the same cycle).
    fn take_data(&mut self) {
        let head_is_data = self
            .queue
            .front()
            .is_some_and(|e| !matches!(e, Entry::Load { .. }));
        if self.data.is_some() || !head_is_data {
            return;
        }
        let entry = self.queue.pop_front().expect("a head");
        self.data = Some(DataJob {
            steps: steps_of(&entry),
            entry,
        });
    }

    fn data_tag(&self) -> T {
        match &self.data.as_ref().expect("a data entry").entry {
            Entry::Stream { tag, .. } | Entry::Drain { tag, .. } | Entry::Requant { tag, .. } => {
                tag.clone()
            }
            _ => unreachable!("only streams, drains and requants have tags"),
        }
    }

    /// Results and weight rows due in cycle `now`, read off the outputs
    /// before the edge.
    fn deliver(&mut self, now: u64, drv: &Driver, src: &mut impl Waves<T>) {
        while self.pipe.front().is_some_and(|(due, _)| *due == now) {
            let (_, due) = self.pipe.pop_front().expect("a due entry");
            match due {
                Due::Result {
                    tag,
                    mode,
                    t,
                    shape,
                } => src.result(&tag, mode, t, shape, &drv.array),
                Due::Evicted { tile, row } => {
                    src.evicted(&tile, row, &drv.array);
                    self.rows_landing += 1;
                }
            }
        }
        if let Some((tag, shape, step)) = self.staged_drain.take() {
            src.drained(&tag, shape, step, &drv.array);
        }
    }

    /// The weight rows written in this cycle count as written from the next.
    fn land_rows(&mut self) {
        self.dirty_rows -= std::mem::take(&mut self.rows_landing);
        if self.dirty_rows == 0 {
            self.hull = None;
        }
    }

    /// What the data engine does this cycle; its steps advance.
    fn data_action(&mut self, now: u64) -> DataAction {
        let mut act = DataAction::default();
        let load_idle = self.load.is_none();
        let (quiet, written) = (self.quiet(now), self.acc_written(now));
        let queue_empty = self.queue.is_empty();
        let shadow_dirty = matches!(&self.shadow, Shadow::Evicted(h) if h.dirty);
        let cols = self.cols;
        let Some(job) = &mut self.data else {
            return act;
        };
        let step = *job.steps.front().expect("a job has steps");
        let evict_update = match &job.entry {
            Entry::Stream { marks, .. } | Entry::Drain { marks, .. } => marks.evict_update,
            Entry::Swap { evict_update } => *evict_update,
            _ => None,
        };
        let next = match step {
            Step::SwapBubble if load_idle => {
                (act.swap, act.evict_update) = (true, evict_update);
                Some(None)
            }
            Step::UpdateFirst(lr) if load_idle && quiet => {
                act.update = Some(lr);
                Some(None)
            }
            Step::Wave { pass, t, swap } if !swap || load_idle => {
                let Entry::Stream { passes, .. } = &job.entry else {
                    unreachable!("waves belong to streams")
                };
                act.wave = Some((passes[pass], pass, t));
                if swap {
                    (act.swap, act.evict_update) = (true, evict_update);
                }
                Some(None)
            }
            Step::Drain(k) if k > 0 || (load_idle && quiet) => {
                act.drain = Some(k);
                Some((k + 1 < cols).then_some(Step::Drain(k + 1)))
            }
            Step::Requant(t) if t > 0 || written => {
                let Entry::Requant { count, .. } = &job.entry else {
                    unreachable!("requant steps belong to REQUANT")
                };
                act.requant = Some(t);
                Some(Some(if t + 1 < *count {
                    Step::Requant(t + 1)
                } else {
                    Step::Settle
                }))
            }
            Step::Settle => Some(None),
            Step::Stop if load_idle && queue_empty && shadow_dirty => {
                act.push_out = true;
                None
            }
            Step::Stop if load_idle && queue_empty && quiet => {
                act.stop = true;
                Some(None)
            }
            // Waiting.
            _ => None,
        };
        if let Some(then) = next {
            job.steps.pop_front();
            if let Some(s) = then {
                job.steps.push_front(s);
            }
        }
        act.done = job.steps.is_empty();
        act
    }

    /// Whether the data engine, after this cycle's action, still waits to
    /// swap in a loaded tile or for a global cycle (then no load may start).
    fn data_blocks_loads(&self, act: &DataAction) -> bool {
        if act.global() {
            return true;
        }
        let Some(job) = &self.data else {
            return false;
        };
        // Waiting to swap a loaded tile in, or for a global cycle.
        matches!(
            job.steps.front(),
            Some(Step::SwapBubble)
                | Some(Step::Wave { swap: true, .. })
                | Some(Step::UpdateFirst(_))
                | Some(Step::Drain(0))
        )
    }

    /// The load engine takes a load at the queue head (`docs/COMMANDS.md`,
    /// Load engine).
    fn take_load(&mut self, act: &DataAction) {
        if act.push_out {
            self.load = Some(LoadJob {
                tile: None,
                zero: true,
                phase: LoadPhase::PushOut(0),
                outgoing: None,
            });
            return;
        }
        if self.load.is_some() || self.data_blocks_loads(act) {
            return;
        }
        let Some(Entry::Load { .. }) = self.queue.front() else {
            return;
        };
        let Some(Entry::Load { tile, zero }) = self.queue.pop_front() else {
            unreachable!("checked above")
        };
        let hazard = self.dirty_rows > 0
            && tile
                .lines
                .as_ref()
                .zip(self.hull.as_ref())
                .is_some_and(|(a, b)| overlaps(a, b));
        let phase = match (hazard, &self.shadow) {
            (false, _) => LoadPhase::Slots(0),
            (true, Shadow::Evicted(h)) if h.dirty => LoadPhase::PushOut(0),
            (true, _) => LoadPhase::WaitClean,
        };
        self.load = Some(LoadJob {
            tile: Some(tile),
            zero,
            phase,
            outgoing: None,
        });
    }

    /// The load engine's slot in this cycle, if any (into `inp`).
    fn slot(&mut self, now: u64, inp: &mut CycleInput, src: &mut impl Waves<T>) -> bool {
        let rows = self.rows;
        let due = self.due(now);
        let Some(job) = &mut self.load else {
            return false;
        };
        if job.phase == LoadPhase::WaitClean {
            if self.dirty_rows > 0 {
                return false;
            }
            job.phase = LoadPhase::Slots(0);
        }
        let (row, real) = match job.phase {
            LoadPhase::PushOut(r) => (r, false),
            LoadPhase::Slots(r) => (r, !job.zero),
            LoadPhase::WaitClean => unreachable!("handled above"),
        };
        if row == 0 {
            job.outgoing = match std::mem::replace(&mut self.shadow, Shadow::Junk) {
                Shadow::Evicted(h) => Some(h),
                _ => None,
            };
        }
        if let Some(out) = job.outgoing.as_ref().filter(|h| h.dirty && row < h.tile.k) {
            let row_out = Due::Evicted {
                tile: out.tile.clone(),
                row,
            };
            self.pipe.push_back((due, row_out));
        }
        if let Some(tile) = job.tile.as_ref().filter(|_| real) {
            src.slot(tile, row, &mut inp.w);
        }
        inp.wave.load = true;
        inp.wave.load_row = row as u16;
        self.slots += 1;
        let last = row + 1 == rows;
        job.phase = match (job.phase, last) {
            (LoadPhase::PushOut(_), true) if job.tile.is_none() => LoadPhase::Slots(rows),
            (LoadPhase::PushOut(_), true) => LoadPhase::WaitClean,
            (LoadPhase::PushOut(r), false) => LoadPhase::PushOut(r + 1),
            (_, false) => LoadPhase::Slots(row + 1),
            (_, true) => LoadPhase::Slots(rows),
        };
        if job.phase == LoadPhase::Slots(rows) {
            let job = self.load.take().expect("a load");
            self.shadow = job.tile.map_or(Shadow::Junk, Shadow::Loaded);
        }
        true
    }

    /// A swap: the loaded tile becomes active, the active one goes to the
    /// shadow registers (updated if `evict_update`), counted for write-back
    /// if dirty.
    fn swap(&mut self, evict_update: Option<u8>) {
        let incoming = match std::mem::replace(&mut self.shadow, Shadow::Junk) {
            Shadow::Loaded(t) => t,
            _ => unreachable!("a swap needs a loaded tile in the shadow registers"),
        };
        let outgoing = self.active.replace(Held {
            tile: incoming,
            dirty: false,
        });
        if let Some(mut h) = outgoing {
            h.dirty |= evict_update.is_some();
            if h.dirty {
                self.dirty_rows += h.tile.k;
                if let Some(lines) = &h.tile.lines {
                    self.hull = Some(match self.hull.take() {
                        None => lines.clone(),
                        Some(u) => u.start.min(lines.start)..u.end.max(lines.end),
                    });
                }
            }
            self.shadow = Shadow::Evicted(h);
        }
    }

    /// A data wave: its column from the caller, its MACs, its result due.
    fn issue_wave(
        &mut self,
        now: u64,
        (mode, pass, t): (Mode, usize, usize),
        inp: &mut CycleInput,
        drv: &mut Driver,
        src: &mut impl Waves<T>,
    ) {
        let tag = self.data_tag();
        let shape = self.shape();
        inp.wave.op = mode.code();
        inp.dy_valid = src.column(&tag, mode, pass, t, shape, &mut inp.x, &mut inp.dy);
        let (m, k) = (shape.0 as u64, shape.1 as u64);
        let slots = if mode == Mode::BwdIl { 2 } else { 1 };
        drv.stats.phase_mut(phase_of(mode)).macs += slots * m * k;
        if mode != Mode::BwdDw {
            let due = Due::Result {
                tag,
                mode,
                t,
                shape,
            };
            let at = self.due(now);
            self.pipe.push_back((at, due));
            self.last_acc_write = Some(at);
        }
    }
}
