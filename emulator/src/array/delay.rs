//! Delay lines: the skews and deskews around the PE mesh, each lane a
//! chain of registers.

/// A bank of delay lines (a skew or deskew): lane k delays its input by
/// `delay(k)` cycles, each cycle one register.
///
/// It keeps the inputs of the last `depth` cycles (a power of two above
/// the longest delay) in a ring, one slot per cycle: a clock edge writes
/// one slot and moves nothing, and lane k's register s (s = 0 nearest
/// the input) is the input of s + 1 cycles ago. Two banks are equal when
/// their registers are; inputs older than a lane's delay are not
/// registers and are not compared.
#[derive(Debug, Clone)]
pub struct DelayLines<T> {
    delays: Vec<usize>,
    /// `depth` slots of one input per lane.
    history: Vec<T>,
    /// `depth - 1`: slot numbers wrap by masking.
    mask: usize,
    /// The slot the next clock edge writes.
    now: usize,
}

impl<T: Copy + Default + PartialEq> DelayLines<T> {
    pub(crate) fn new(delays: impl Iterator<Item = usize>) -> Self {
        let delays: Vec<usize> = delays.collect();
        let depth = (delays.iter().max().copied().unwrap_or(0) + 1).next_power_of_two();
        DelayLines {
            history: vec![T::default(); depth * delays.len()],
            delays,
            mask: depth - 1,
            now: 0,
        }
    }

    pub fn lanes(&self) -> usize {
        self.delays.len()
    }

    /// Lane `k`'s register `stage` (0 nearest the input), `stage` below
    /// the lane's delay.
    pub fn stage(&self, k: usize, stage: usize) -> T {
        assert!(
            stage < self.delays[k],
            "lane {k} has {} registers",
            self.delays[k]
        );
        self.at(k, stage + 1)
    }

    /// The input lane `k` took `ago` cycles before the next edge.
    #[inline(always)]
    fn at(&self, k: usize, ago: usize) -> T {
        let slot = self.now.wrapping_sub(ago) & self.mask;
        self.history[slot * self.delays.len() + k]
    }

    /// What lane `k` presents at its output this cycle: its last register,
    /// or `input` itself where the lane has none (a wire).
    #[inline(always)]
    pub(crate) fn output(&self, k: usize, input: T) -> T {
        match self.delays[k] {
            0 => input,
            delay => self.at(k, delay),
        }
    }

    /// One clock edge of every lane: each lane's input goes into this
    /// cycle's slot. Read the outputs first.
    #[inline(always)]
    pub(crate) fn shift_all(&mut self, input: impl Fn(usize) -> T) {
        let lanes = self.delays.len();
        let slot = &mut self.history[self.now * lanes..(self.now + 1) * lanes];
        for (k, v) in slot.iter_mut().enumerate() {
            *v = input(k);
        }
        self.now = (self.now + 1) & self.mask;
    }

    /// Every register to its reset value.
    pub(crate) fn clear(&mut self) {
        self.history.fill(T::default());
        self.now = 0;
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for DelayLines<T> {
    fn eq(&self, other: &Self) -> bool {
        self.delays == other.delays
            && (0..self.lanes())
                .all(|k| (0..self.delays[k]).all(|s| self.stage(k, s) == other.stage(k, s)))
    }
}

impl<T: Copy + Default + PartialEq> Eq for DelayLines<T> {}
