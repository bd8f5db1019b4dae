//! Host scripts: what the host does over `sa_accel`'s ports, as the
//! harness reads it, and what the harness answers.

use super::*;

/// A packed beat: value `i` of `group` in bits `[i*bits +: bits]`.
pub fn pack(group: &[i64], bits: u32) -> u64 {
    group.iter().enumerate().fold(0, |beat, (i, v)| {
        beat | (stimulus::to_bits(*v, bits) << (i as u32 * bits))
    })
}

/// The `per` words of a packed beat, `bits` apart (sign-extended, or a
/// float format's patterns: `word`).
pub fn unpack(beat: u64, per: usize, bits: u32, word: host::Word) -> Vec<i64> {
    (0..per as u32)
        .map(|i| word.from_raw(beat >> (i * bits)))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Op {
    Write(u32, u32),
    Read(u32),
    In(Vec<u64>),
    Out(usize),
    Poll,
}

/// A register read of a script; look its answer up in [`HostResult::reg`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegRead(usize);

/// Beats taken from `m_axis`; see [`HostResult::stream`] and [`HostResult::lines`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRead {
    index: usize,
    /// Lanes of a line.
    lanes: usize,
    /// Beats of a line.
    beats: usize,
    /// Packed reads: (lanes per beat, field bits, what a word is).
    packing: Option<(usize, u32, host::Word)>,
}

/// The reads of every counter; see [`HostResult::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterReads {
    /// Index of the first read.
    first: usize,
    /// The counters' width (`host.counter_bits`): no bit above it may be set.
    bits: u32,
}

/// What the host does, in order. Every op waits for its handshakes
/// (a register write for its response, a stream for its last beat).
#[derive(Debug, Clone)]
pub struct HostScript {
    pub(super) cfg: ArrayConfig,
    /// Data-buffer transfers pack several lanes into a beat (DMA_PACKED).
    packed: bool,
    pub(super) ops: Vec<Op>,
    pub(super) reads: usize,
    pub(super) streams: usize,
    beats_in: u64,
    beats_out: u64,
}

impl HostScript {
    pub fn new(cfg: &ArrayConfig) -> Self {
        HostScript {
            cfg: *cfg,
            packed: false,
            ops: Vec::new(),
            reads: 0,
            streams: 0,
            beats_in: 0,
            beats_out: 0,
        }
    }

    /// Beats the script pushes into `s_axis` in all.
    pub fn beats_in(&self) -> u64 {
        self.beats_in
    }
    /// Beats the script takes from `m_axis` in all.
    pub fn beats_out(&self) -> u64 {
        self.beats_out
    }

    /// AXI4-Lite write (a non-OKAY response is in [`HostResult::write_errors`]).
    pub fn write_reg(&mut self, addr: u32, data: u32) -> &mut Self {
        self.ops.push(Op::Write(addr, data));
        self
    }

    /// AXI4-Lite read.
    pub fn read_reg(&mut self, addr: u32) -> RegRead {
        self.ops.push(Op::Read(addr));
        self.reads += 1;
        RegRead(self.reads - 1)
    }

    /// Pushes raw beats into `s_axis` (the op ends when all are taken).
    pub fn push_beats(&mut self, beats: &[u64]) -> &mut Self {
        for chunk in beats.chunks(BEATS_PER_LINE) {
            self.ops.push(Op::In(chunk.to_vec()));
        }
        self.beats_in += beats.len() as u64;
        self
    }

    /// Takes `n` raw beats from `m_axis` (one lane a line for [`HostResult::lines`]).
    pub fn take_beats(&mut self, n: usize) -> StreamRead {
        self.take(n, 1)
    }

    fn take(&mut self, n: usize, lanes: usize) -> StreamRead {
        self.ops.push(Op::Out(n));
        self.beats_out += n as u64;
        self.streams += 1;
        StreamRead {
            index: self.streams - 1,
            lanes,
            beats: lanes,
            packing: None,
        }
    }

    /// Reads `STATUS` until neither RUNNING nor DMA_BUSY is set.
    pub fn poll(&mut self) -> &mut Self {
        self.ops.push(Op::Poll);
        self
    }

    /// The register writes of a DMA request, nothing else (for requests
    /// that are meant to be refused, or with beats pushed separately).
    pub fn dma_request(&mut self, target: u32, addr: u32, count: u32, ctrl: u32) -> &mut Self {
        self.write_reg(reg::DMA_TARGET, target)
            .write_reg(reg::DMA_ADDR, addr)
            .write_reg(reg::DMA_COUNT, count)
            .write_reg(reg::DMA_CTRL, ctrl)
    }

    /// DMA write of `values`, lane after lane and line after line from line
    /// `addr` of `target`; a partial last line is padded with zeros. Each
    /// value is sign-extended to a 64-bit beat. Waits for the DMA to end.
    pub fn dma_write(&mut self, target: DmaTarget, addr: usize, values: &[i64]) -> &mut Self {
        let lanes = target.lanes(&self.cfg);
        let count = values.len().div_ceil(lanes);
        let mut beats: Vec<u64> = values.iter().map(|v| *v as u64).collect();
        beats.resize(count * lanes, 0);
        self.dma_write_beats(target, addr, count, &beats)
    }

    /// Whether the buffer transfers that follow ([`HostScript::dma_write_lines`],
    /// [`HostScript::dma_read`]) pack lanes into beats (`DMA_PACKED`).
    pub fn set_packed(&mut self, packed: bool) -> &mut Self {
        self.packed = packed;
        self
    }

    /// Lanes per beat of a transfer to or from `target`.
    fn per_beat(&self, target: DmaTarget) -> usize {
        if self.packed {
            host::lanes_per_beat(target.word_bits(&self.cfg))
        } else {
            1
        }
    }

    /// [`HostScript::dma_write`] of whole lines; each is padded with zeros
    /// (or cut) to the target's lanes. Packed (see [`HostScript::set_packed`]),
    /// a beat carries the next lanes of the line in `W`-bit fields.
    pub fn dma_write_lines(
        &mut self,
        target: DmaTarget,
        addr: usize,
        lines: &[Vec<i64>],
    ) -> &mut Self {
        let (lanes, per) = (target.lanes(&self.cfg), self.per_beat(target));
        let bits = target.word_bits(&self.cfg);
        let mut beats = Vec::with_capacity(lines.len() * lanes);
        for line in lines {
            let padded: Vec<i64> = (0..lanes)
                .map(|l| line.get(l).copied().unwrap_or(0))
                .collect();
            if self.packed {
                beats.extend(padded.chunks(per).map(|group| pack(group, bits)));
            } else {
                // One lane per beat, sign-extended.
                beats.extend(padded.iter().map(|v| *v as u64));
            }
        }
        let ctrl = DMA_WRITE | if self.packed { host::DMA_PACKED } else { 0 };
        self.dma_request(target.code(), addr as u32, lines.len() as u32, ctrl)
            .push_beats(&beats)
            .poll()
    }

    fn dma_write_beats(
        &mut self,
        target: DmaTarget,
        addr: usize,
        count: usize,
        beats: &[u64],
    ) -> &mut Self {
        self.dma_request(target.code(), addr as u32, count as u32, DMA_WRITE)
            .push_beats(beats)
            .poll()
    }

    /// DMA read of lines `addr..addr + count` of `target`; waits for the DMA to end.
    pub fn dma_read(&mut self, target: DmaTarget, addr: usize, count: usize) -> StreamRead {
        let (lanes, per) = (target.lanes(&self.cfg), self.per_beat(target));
        let ctrl = DMA_READ | if self.packed { host::DMA_PACKED } else { 0 };
        self.dma_request(target.code(), addr as u32, count as u32, ctrl);
        let mut s = self.take(count * lanes.div_ceil(per), lanes);
        s.beats = lanes.div_ceil(per);
        s.packing = self
            .packed
            .then(|| (per, target.word_bits(&self.cfg), target.word(&self.cfg)));
        self.poll();
        s
    }

    /// DMA of `words` to command memory from word 0, and `PROG_LEN`.
    pub fn load_program(&mut self, words: &[u64]) -> &mut Self {
        self.write_program(0, words)
            .write_reg(reg::PROG_LEN, words.len() as u32)
    }

    /// DMA of `words` to command memory from word `at` (no register).
    pub fn write_program(&mut self, at: usize, words: &[u64]) -> &mut Self {
        self.dma_write_beats(DmaTarget::Commands, at, words.len(), words)
    }

    /// `CTRL.START` (does not wait; see [`HostScript::poll`]).
    pub fn start(&mut self) -> &mut Self {
        self.write_reg(reg::CTRL, host::ctrl::START)
    }

    /// `CTRL.CLEAR`: zero every counter.
    pub fn clear_counters(&mut self) -> &mut Self {
        self.write_reg(reg::CTRL, host::ctrl::CLEAR)
    }

    /// Reads both halves of every counter, in [`Counter::ALL`] order.
    pub fn read_counters(&mut self) -> CounterReads {
        let first = self.reads;
        for c in Counter::ALL {
            self.read_reg(c.offset());
            self.read_reg(c.offset() + 4);
        }
        CounterReads {
            first,
            bits: self.cfg.counter_bits(),
        }
    }

    /// The script as the harness reads it.
    pub fn render(&self) -> String {
        let (f, r, c) = (self.cfg.format(), self.cfg.rows(), self.cfg.cols());
        let mut s = format!("{MAGIC} {r} {c} {} {}\n", f.in_bits, f.acc_bits);
        for op in &self.ops {
            match op {
                Op::Write(a, d) => writeln!(s, "w {a:x} {d:x}"),
                Op::Read(a) => writeln!(s, "r {a:x}"),
                Op::In(beats) => {
                    s.push('i');
                    for b in beats {
                        write!(s, " {b:x}").expect("writing to a String");
                    }
                    writeln!(s)
                }
                Op::Out(n) => writeln!(s, "o {n:x}"),
                Op::Poll => writeln!(s, "p"),
            }
            .expect("writing to a String");
        }
        s
    }
}

// ----------------------------------------------------------------- results

/// One register read: address, data and response (0 OKAY, 2 SLVERR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegValue {
    pub addr: u32,
    pub data: u32,
    pub resp: u32,
}

/// Beats taken from `m_axis` by one `o` op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    pub beats: Vec<u64>,
    /// `m_axis_tlast` was set on the last beat and on no other.
    pub tlast_ok: bool,
}

/// What the harness reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostResult {
    /// Every register read, in script order.
    pub reads: Vec<RegValue>,
    /// Every stream read, in script order.
    pub streams: Vec<Stream>,
    /// `(address, response)` of each write answered with other than OKAY.
    pub write_errors: Vec<(u32, u32)>,
    /// Handshake rule violations the harness saw on the outputs.
    pub protocol_errors: Vec<String>,
    /// The array's inputs in each cycle the controller ran (stimulus lines).
    pub trace: Vec<String>,
    /// Cycles the script took (reset excluded).
    pub cycles: u64,
}

impl HostResult {
    pub fn reg(&self, r: RegRead) -> Option<RegValue> {
        self.reads.get(r.0).copied()
    }
    /// The data of a read, if it was answered OKAY.
    pub fn value(&self, r: RegRead) -> Option<u32> {
        self.reg(r).filter(|v| v.resp == 0).map(|v| v.data)
    }
    pub fn stream(&self, s: StreamRead) -> Option<&Stream> {
        self.streams.get(s.index)
    }
    /// A DMA read's beats as lines of words.
    pub fn lines(&self, s: StreamRead) -> Option<Vec<Vec<i64>>> {
        let st = self.stream(s)?;
        Some(
            st.beats
                .chunks(s.beats.max(1))
                .map(|line| match s.packing {
                    None => line.iter().map(|b| *b as i64).collect(),
                    Some((per, bits, word)) => line
                        .iter()
                        .flat_map(|b| unpack(*b, per, bits, word))
                        .take(s.lanes)
                        .collect(),
                })
                .collect(),
        )
    }
    /// Every counter's value (`None` if a read was refused or a high half
    /// has bits above the counter's width).
    pub fn counters(&self, c: CounterReads) -> Option<Vec<(Counter, u64)>> {
        Counter::ALL
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let lo = self.value(RegRead(c.first + 2 * i))?;
                let hi = self.value(RegRead(c.first + 2 * i + 1))?;
                let value = (u64::from(hi) << 32) | u64::from(lo);
                (value >> c.bits == 0).then_some((k, value))
            })
            .collect()
    }
}

pub(super) fn parse_hex(s: &str, what: &str) -> Result<u64, AccelError> {
    u64::from_str_radix(s, 16).map_err(|e| AccelError::Output(format!("{what} `{s}`: {e}")))
}

pub(super) fn parse_out(text: &str) -> Result<HostResult, AccelError> {
    let mut res = HostResult::default();
    for (no, line) in text.lines().enumerate() {
        let mut tok = line.split_whitespace();
        let bad = || AccelError::Output(format!("out.txt line {}: `{line}`", no + 1));
        let num = |t: Option<&str>| -> Result<u64, AccelError> {
            parse_hex(t.ok_or_else(bad)?, &format!("out.txt line {}", no + 1))
        };
        match tok.next() {
            None => {}
            Some("r") => {
                let (addr, data, resp) = (num(tok.next())?, num(tok.next())?, num(tok.next())?);
                res.reads.push(RegValue {
                    addr: addr as u32,
                    data: data as u32,
                    resp: resp as u32,
                });
            }
            Some("b") => {
                let (addr, resp) = (num(tok.next())?, num(tok.next())?);
                res.write_errors.push((addr as u32, resp as u32));
            }
            Some("o") => {
                let beats = tok.map(|t| num(Some(t))).collect::<Result<_, _>>()?;
                res.streams.push(Stream {
                    beats,
                    tlast_ok: true,
                });
            }
            Some("tlast_error") => res.streams.last_mut().ok_or_else(bad)?.tlast_ok = false,
            Some("x") => res
                .protocol_errors
                .push(line.get(2..).unwrap_or("").to_string()),
            Some(_) => return Err(bad()),
        }
    }
    Ok(res)
}
