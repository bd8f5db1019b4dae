//! On-chip buffers. A buffer is `lanes` banks of `sa_buffer` sharing one
//! line address: line `a`, lane `l` is word `a * lanes + l`. The controller
//! moves whole or partial lines (lanes `0..n`) in one cycle, so a tile
//! never needs two accesses to one bank in a cycle.

use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::{DmaTarget, Word};

/// The four buffers around the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BufferId {
    /// W tiles, `cols` lanes of data.
    Weights,
    /// X, `rows` lanes of data.
    Activations,
    /// dY, `cols` lanes of data.
    Gradients,
    /// Y, dX and dW, `max(rows, cols)` lanes of accumulators.
    Accumulators,
}

impl BufferId {
    pub const ALL: [BufferId; 4] = [
        BufferId::Weights,
        BufferId::Activations,
        BufferId::Gradients,
        BufferId::Accumulators,
    ];

    /// The RTL's DMA target holding this buffer; its geometry (lanes,
    /// depth, word width) is defined there.
    pub fn target(self) -> DmaTarget {
        match self {
            BufferId::Weights => DmaTarget::Weights,
            BufferId::Activations => DmaTarget::Activations,
            BufferId::Gradients => DmaTarget::Gradients,
            BufferId::Accumulators => DmaTarget::Accumulators,
        }
    }
}

/// A host access outside the buffer or with a value its words cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("line {line}, lane {lane} is outside a buffer of {depth} lines x {lanes} lanes")]
    OutOfRange {
        line: usize,
        lane: usize,
        depth: usize,
        lanes: usize,
    },
    #[error("{value} is not a buffer word ({word})")]
    ValueRange { value: i64, word: String },
}

/// One buffer: its words and how many the controller read and wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    words: Vec<i64>,
    lanes: usize,
    /// Stored width of a word.
    bits: u32,
    /// What a word is (a signed value, or a float format's pattern);
    /// every stored value is one (the controller only writes saturated or
    /// rounded values, the host is checked), so the array's operand range
    /// checks can never fail halfway through a command.
    word: Word,
    reads: u64,
    writes: u64,
}

impl Buffer {
    /// `depth` lines of `lanes` `bits`-bit words that are `word`s.
    pub fn new(depth: usize, lanes: usize, bits: u32, word: Word) -> Self {
        Buffer {
            words: vec![0; depth * lanes],
            lanes,
            bits,
            word,
            reads: 0,
            writes: 0,
        }
    }

    /// The buffer `id` of an accelerator with configuration `cfg`.
    pub fn for_config(cfg: &ArrayConfig, id: BufferId) -> Self {
        let t = id.target();
        Buffer::new(t.depth(cfg), t.lanes(cfg), t.word_bits(cfg), t.word(cfg))
    }

    pub fn depth(&self) -> usize {
        self.words.len() / self.lanes
    }
    pub fn lanes(&self) -> usize {
        self.lanes
    }
    /// Stored width of a word (DW or AW).
    pub fn bits(&self) -> u32 {
        self.bits
    }
    /// What a word is.
    pub fn word(&self) -> Word {
        self.word
    }
    /// Words the controller read / wrote (host accesses are not counted).
    pub fn reads(&self) -> u64 {
        self.reads
    }
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Whether lines `addr..addr + len` exist (computed without wrap-around).
    pub fn holds(&self, addr: usize, len: usize) -> bool {
        addr + len <= self.depth()
    }

    /// Controller read of lanes `0..n` of `line`.
    pub(crate) fn read(&mut self, line: usize, n: usize) -> &[i64] {
        self.reads += n as u64;
        let s = line * self.lanes;
        &self.words[s..s + n]
    }

    /// Controller write of lanes `0..values.len()` of `line`; other lanes keep
    /// their value (per-bank write enables).
    pub(crate) fn write(&mut self, line: usize, values: &[i64]) {
        debug_assert!(values.iter().all(|v| self.word.fits(*v)));
        self.writes += values.len() as u64;
        let s = line * self.lanes;
        self.words[s..s + values.len()].copy_from_slice(values);
    }

    fn index(&self, line: usize, lane: usize) -> Result<usize, HostError> {
        if line >= self.depth() || lane >= self.lanes {
            return Err(HostError::OutOfRange {
                line,
                lane,
                depth: self.depth(),
                lanes: self.lanes,
            });
        }
        Ok(line * self.lanes + lane)
    }

    /// Host read (not counted).
    pub fn get(&self, line: usize, lane: usize) -> Result<i64, HostError> {
        Ok(self.words[self.index(line, lane)?])
    }

    /// Host write (not counted), refused if `value` does not fit a word.
    pub fn set(&mut self, line: usize, lane: usize, value: i64) -> Result<(), HostError> {
        if !self.word.fits(value) {
            return Err(HostError::ValueRange {
                value,
                word: self.word.to_string(),
            });
        }
        let i = self.index(line, lane)?;
        self.words[i] = value;
        Ok(())
    }
}
