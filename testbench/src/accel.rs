//! Co-simulation of the whole accelerator (`sa_accel`, `docs/HOST.md`)
//! against the emulator's [`Accelerator`].
//!
//! A [`HostScript`] is what a host does over the accelerator's ports:
//! AXI4-Lite register writes and reads, DMA transfers over the two
//! AXI4-Streams and polling of `STATUS`. The Verilator harness
//! (`cpp/tb_sa_accel.cpp`) plays it with seeded random back-pressure and
//! writes the array's inputs in every cycle the controller runs, in the
//! stimulus format of [`stimulus::render`]. [`cosim_program`] puts the same
//! data into the emulator's buffers and the RTL's, runs one program on both
//! and compares the array's inputs cycle by cycle, `STATUS` and `PC`, every
//! counter and the buffer lines asked for.
//!
//! Every offset, bit and code comes from [`sysgrad_config::host`].

use crate::stimulus;
use crate::tools::{run, ToolError};
use crate::verilator::cache_root;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use sysgrad_config::host::{self, reg, status, Counter, DmaTarget, DMA_READ, DMA_WRITE};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::accel::{Accelerator, Blocked, BufferId, State};
use sysgrad_emulator::Driver;
use sysgrad_hdl::VerilogFile;

/// The C++ host of `sa_accel`.
pub const HARNESS: &str = include_str!("../cpp/tb_sa_accel.cpp");
/// First line of a host script.
pub const MAGIC: &str = "sysgrad-host 1";

/// Beats per `i` line of a script (any number works; this keeps lines short).
const BEATS_PER_LINE: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum AccelError {
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the Verilog files have no `{top}.v` (files: {files})")]
    NoTop { top: &'static str, files: String },
    #[error("unreadable harness output: {0}")]
    Output(String),
    #[error("bad co-simulation setup: {0}")]
    Setup(String),
    #[error("RTL and emulator differ ({} findings; files kept in {}):\n  {}", .findings.len(), .work.display(), .findings.join("\n  "))]
    Mismatch {
        work: PathBuf,
        findings: Vec<String>,
    },
}

// ---------------------------------------------------------------- building

/// A built Verilator simulator of `sa_accel` for one configuration.
#[derive(Debug, Clone)]
pub struct AccelModel {
    pub exe: PathBuf,
    pub cfg: ArrayConfig,
}

/// Generates the RTL for `cfg` and builds (or reuses) its `sa_accel` simulator.
pub fn build(cfg: &ArrayConfig) -> Result<AccelModel, AccelError> {
    build_files(cfg, &sysgrad_hdl::generate(cfg))
}

/// The Verilator command line (without files), part of the cache key.
fn verilator_args() -> Vec<String> {
    let busy = status::RUNNING | status::DMA_BUSY;
    [
        "--cc",
        "--exe",
        "--build",
        "-O3",
        "-j",
        "2",
        "-Wno-fatal",
        "--public-flat-rw",
        "--top-module",
        sysgrad_hdl::accel_top_name(),
        "-Mdir",
        "obj",
        "-o",
        "Vsa_accel",
        "-CFLAGS",
        "-O1",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        "-CFLAGS".to_string(),
        format!("-DSG_REG_STATUS={:#x}", reg::STATUS),
        "-CFLAGS".to_string(),
        format!("-DSG_STATUS_BUSY={busy:#x}"),
    ])
    .collect()
}

/// Builds (or reuses) a simulator of the given Verilog files (which must
/// contain `sa_accel.v`), cached like [`crate::verilator::build_files`]:
/// keyed by the harness, the Verilog, the flags and the Verilator version.
pub fn build_files(cfg: &ArrayConfig, files: &[VerilogFile]) -> Result<AccelModel, AccelError> {
    let top = sysgrad_hdl::accel_top_name();
    if !files.iter().any(|f| f.name == format!("{top}.v")) {
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        return Err(AccelError::NoTop {
            top,
            files: names.join(", "),
        });
    }
    let exe = crate::verilator::cached_build(&crate::verilator::CachedBuild {
        label: format!("accel-{}", cfg.tag()),
        files,
        harness: ("tb_sa_accel.cpp", HARNESS),
        args: &verilator_args(),
        exe: "Vsa_accel",
    })?;
    Ok(AccelModel { exe, cfg: *cfg })
}

// ----------------------------------------------------------------- scripts

/// Lanes (beats per line) of a DMA target: weights and gradients C,
/// activations R, accumulators max(R, C), commands 1.
pub fn lanes(cfg: &ArrayConfig, target: DmaTarget) -> usize {
    let (r, c) = (cfg.rows(), cfg.cols());
    match target {
        DmaTarget::Commands => 1,
        DmaTarget::Weights | DmaTarget::Gradients => c,
        DmaTarget::Activations => r,
        DmaTarget::Accumulators => r.max(c),
    }
}

/// Depth in lines of a DMA target.
pub fn depth(cfg: &ArrayConfig, target: DmaTarget) -> usize {
    let b = &cfg.buffers;
    match target {
        DmaTarget::Commands => b.commands,
        DmaTarget::Weights => b.weights,
        DmaTarget::Activations => b.activations,
        DmaTarget::Gradients => b.gradients,
        DmaTarget::Accumulators => b.accumulators,
    }
}

/// Word width of a DMA target.
pub fn word_bits(cfg: &ArrayConfig, target: DmaTarget) -> u32 {
    match target {
        DmaTarget::Commands => 64,
        DmaTarget::Accumulators => cfg.format.acc_bits,
        _ => cfg.format.in_bits,
    }
}

/// A packed beat: value `i` of `group` in bits `[i*bits +: bits]`.
pub fn pack(group: &[i64], bits: u32) -> u64 {
    group.iter().enumerate().fold(0, |beat, (i, v)| {
        beat | (stimulus::to_bits(*v, bits) << (i as u32 * bits))
    })
}

/// The `per` signed values of a packed beat.
pub fn unpack(beat: u64, per: usize, bits: u32) -> Vec<i64> {
    (0..per as u32)
        .map(|i| stimulus::from_bits(beat >> (i * bits), bits))
        .collect()
}

/// The DMA target holding an emulator buffer.
pub fn target_of(id: BufferId) -> DmaTarget {
    match id {
        BufferId::Weights => DmaTarget::Weights,
        BufferId::Activations => DmaTarget::Activations,
        BufferId::Gradients => DmaTarget::Gradients,
        BufferId::Accumulators => DmaTarget::Accumulators,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
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
    /// Packed reads: (lanes per beat, word bits).
    packing: Option<(usize, u32)>,
}

/// The reads of every counter; see [`HostResult::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterReads(usize);

/// What the host does, in order. Every op waits for its handshakes
/// (a register write for its response, a stream for its last beat).
#[derive(Debug, Clone)]
pub struct HostScript {
    cfg: ArrayConfig,
    /// Data-buffer transfers pack several lanes into a beat (DMA_PACKED).
    packed: bool,
    ops: Vec<Op>,
    reads: usize,
    streams: usize,
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
        let lanes = lanes(&self.cfg, target);
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
            host::lanes_per_beat(word_bits(&self.cfg, target))
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
        let (lanes, per) = (lanes(&self.cfg, target), self.per_beat(target));
        let bits = word_bits(&self.cfg, target);
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
        let (lanes, per) = (lanes(&self.cfg, target), self.per_beat(target));
        let ctrl = DMA_READ | if self.packed { host::DMA_PACKED } else { 0 };
        self.dma_request(target.code(), addr as u32, count as u32, ctrl);
        let mut s = self.take(count * lanes.div_ceil(per), lanes);
        s.beats = lanes.div_ceil(per);
        s.packing = self.packed.then(|| (per, word_bits(&self.cfg, target)));
        self.poll();
        s
    }

    /// DMA of `words` to command memory from word 0, and `PROG_LEN`.
    pub fn load_program(&mut self, words: &[u64]) -> &mut Self {
        self.dma_write_beats(DmaTarget::Commands, 0, words.len(), words)
            .write_reg(reg::PROG_LEN, words.len() as u32)
    }

    /// `CTRL.START` (does not wait; see [`HostScript::poll`]).
    pub fn start(&mut self) -> &mut Self {
        self.write_reg(reg::CTRL, 1)
    }

    /// `CTRL.CLEAR`: zero every counter.
    pub fn clear_counters(&mut self) -> &mut Self {
        self.write_reg(reg::CTRL, 2)
    }

    /// Reads both halves of every counter, in [`Counter::ALL`] order.
    pub fn read_counters(&mut self) -> CounterReads {
        let first = self.reads;
        for c in Counter::ALL {
            self.read_reg(c.offset());
            self.read_reg(c.offset() + 4);
        }
        CounterReads(first)
    }

    /// The script as the harness reads it.
    pub fn render(&self) -> String {
        let (f, r, c) = (self.cfg.format, self.cfg.rows(), self.cfg.cols());
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
    /// A DMA read's beats as lines of signed words.
    pub fn lines(&self, s: StreamRead) -> Option<Vec<Vec<i64>>> {
        let st = self.stream(s)?;
        Some(
            st.beats
                .chunks(s.beats.max(1))
                .map(|line| match s.packing {
                    None => line.iter().map(|b| *b as i64).collect(),
                    Some((per, bits)) => line
                        .iter()
                        .flat_map(|b| unpack(*b, per, bits))
                        .take(s.lanes)
                        .collect(),
                })
                .collect(),
        )
    }
    /// Every counter's value (`None` if a read was refused or a high half
    /// has bits above the counter's width).
    pub fn counters(&self, c: CounterReads) -> Option<Vec<(Counter, u64)>> {
        let high_bits = sysgrad_config::host::COUNTER_BITS - 32;
        Counter::ALL
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let lo = self.value(RegRead(c.0 + 2 * i))?;
                let hi = self.value(RegRead(c.0 + 2 * i + 1))?;
                (hi >> high_bits == 0).then_some((k, (u64::from(hi) << 32) | u64::from(lo)))
            })
            .collect()
    }
}

fn parse_hex(s: &str, what: &str) -> Result<u64, AccelError> {
    u64::from_str_radix(s, 16).map_err(|e| AccelError::Output(format!("{what} `{s}`: {e}")))
}

fn parse_out(text: &str) -> Result<HostResult, AccelError> {
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

static RUNS: AtomicUsize = AtomicUsize::new(0);

/// A fresh folder for one harness run under the co-simulation cache.
pub fn work_dir(cfg: &ArrayConfig, what: &str) -> PathBuf {
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    cache_root()
        .join("accel-runs")
        .join(format!("{}-{what}-{}-{n}", cfg.tag(), std::process::id()))
}

impl AccelModel {
    /// Plays `script` in folder `work` with back-pressure from `seed` and
    /// `gap_percent` (0..=100).
    pub fn run(
        &self,
        script: &HostScript,
        seed: u64,
        gap_percent: u32,
        work: &Path,
    ) -> Result<HostResult, AccelError> {
        if gap_percent >= 100 {
            return Err(AccelError::Setup(format!(
                "gap_percent {gap_percent}: nothing would ever move (0..=99)"
            )));
        }
        if script.cfg != self.cfg {
            return Err(AccelError::Setup(
                "the script was written for another configuration".into(),
            ));
        }
        std::fs::create_dir_all(work)?;
        let work = &work.canonicalize()?;
        let (path, out, trace) = (
            work.join("script.txt"),
            work.join("out.txt"),
            work.join("trace.txt"),
        );
        std::fs::write(&path, script.render())?;
        let done = run(
            Command::new(&self.exe)
                .arg(&path)
                .arg(&out)
                .arg(&trace)
                .arg(seed.to_string())
                .arg(gap_percent.to_string()),
            work,
        )?;
        let mut res = parse_out(&std::fs::read_to_string(&out)?)?;
        res.trace = std::fs::read_to_string(&trace)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        let err = String::from_utf8_lossy(&done.stderr);
        res.cycles = err
            .split_whitespace()
            .skip_while(|w| *w != "cycles")
            .nth(1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| AccelError::Output(format!("no `cycles N` on stderr: {err}")))?;
        if res.reads.len() != script.reads || res.streams.len() != script.streams {
            return Err(AccelError::Output(format!(
                "{} register reads and {} stream reads answered, the script has {} and {}",
                res.reads.len(),
                res.streams.len(),
                script.reads,
                script.streams
            )));
        }
        Ok(res)
    }

    /// [`cosim_program`] on this model.
    pub fn cosim(
        &self,
        setup: &Setup,
        program: &[u64],
        seed: u64,
        gap_percent: u32,
    ) -> Result<AccelReport, AccelError> {
        cosim_on(self, setup, &[program], seed, gap_percent)
    }

    /// [`AccelModel::cosim`] of several runs one after the other: each
    /// program is loaded, started and waited for, with the buffers, the
    /// resident tile and the counters carried over (as
    /// [`Accelerator::run`] does); STATUS and PC are compared after each
    /// run, the rest after the last.
    pub fn cosim_runs(
        &self,
        setup: &Setup,
        programs: &[&[u64]],
        seed: u64,
        gap_percent: u32,
    ) -> Result<AccelReport, AccelError> {
        cosim_on(self, setup, programs, seed, gap_percent)
    }
}

// ------------------------------------------------------------ co-simulation

/// Lines written into a buffer before the run (padded with zeros to the
/// buffer's lanes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fill {
    pub buffer: BufferId,
    pub addr: usize,
    pub lines: Vec<Vec<i64>>,
}

/// Lines of a buffer compared after the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub buffer: BufferId,
    pub addr: usize,
    pub count: usize,
}

/// The data both sides start from and what is compared at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    pub fills: Vec<Fill>,
    pub compare: Vec<Region>,
    /// Move the buffers' data in packed beats (`DMA_PACKED`).
    pub packed: bool,
}

impl Setup {
    pub fn fill(&mut self, buffer: BufferId, addr: usize, lines: Vec<Vec<i64>>) -> &mut Self {
        self.fills.push(Fill {
            buffer,
            addr,
            lines,
        });
        self
    }

    /// The lines of matrix `m` (`layout.rows x layout.cols`) in `layout`;
    /// lanes past the last row of a partial block are 0.
    pub fn fill_blocked(
        &mut self,
        buffer: BufferId,
        layout: &Blocked,
        m: ndarray::ArrayView2<i64>,
    ) -> &mut Self {
        self.fill_blocked_padded(buffer, layout, m, 0)
    }

    /// [`Setup::fill_blocked`] with `pad` in the lanes past the last row of
    /// a partial block: no command reads or writes them, so a controller
    /// that does shows up in the array's inputs or the buffers read back.
    pub fn fill_blocked_padded(
        &mut self,
        buffer: BufferId,
        layout: &Blocked,
        m: ndarray::ArrayView2<i64>,
        pad: i64,
    ) -> &mut Self {
        let mut lines = vec![vec![pad; layout.lanes]; layout.lines()];
        for ((r, c), &v) in m.indexed_iter() {
            if r < layout.rows && c < layout.cols {
                let line = layout.line(r - r % layout.lanes, c) - layout.base;
                lines[line][r % layout.lanes] = v;
            }
        }
        self.fill(buffer, layout.base, lines)
    }

    pub fn compare(&mut self, buffer: BufferId, addr: usize, count: usize) -> &mut Self {
        self.compare.push(Region {
            buffer,
            addr,
            count,
        });
        self
    }

    /// Compares the lines `layout` occupies.
    pub fn compare_blocked(&mut self, buffer: BufferId, layout: &Blocked) -> &mut Self {
        self.compare(buffer, layout.base, layout.lines())
    }
}

/// What a successful [`cosim_program`] compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelReport {
    /// Cycles the controller ran (trace lines compared).
    pub run_cycles: usize,
    /// Cycles of the whole host script.
    pub host_cycles: u64,
    /// The emulator's (and so the RTL's) state after the last run.
    pub state: State,
    /// `STATUS` and `PC` as the RTL answered after the last run.
    pub status: u32,
    pub pc: u32,
    /// Every counter of the RTL.
    pub counters: Vec<(Counter, u64)>,
    /// Counters compared with the emulator or with the script.
    pub counters_compared: usize,
    /// Buffer words read back and compared.
    pub words_compared: usize,
    pub beats_in: u64,
    pub beats_out: u64,
}

/// Builds `sa_accel` for `cfg` (cached), fills the emulator's and the RTL's
/// buffers with `setup`, runs `program` on both (the RTL with random
/// back-pressure from `seed` at `gap_percent`) and compares:
///
/// * the array's inputs in every run cycle (first mismatching cycle, field
///   and lane) and the number of run cycles;
/// * `STATUS` (halted / faulted, error code, no DMA error) and `PC` with
///   the emulator's [`State`];
/// * every counter the emulator computes; `DmaInBeats` / `DmaOutBeats`
///   with the beats the script moved;
/// * the buffer lines `setup.compare` names, read back over `m_axis`.
///
/// All differences found are listed in [`AccelError::Mismatch`].
pub fn cosim_program(
    cfg: &ArrayConfig,
    setup: &Setup,
    program: &[u64],
    seed: u64,
    gap_percent: u32,
) -> Result<AccelReport, AccelError> {
    build(cfg)?.cosim(setup, program, seed, gap_percent)
}

/// The PC of the HALT that a program which ran without fault stopped at.
fn halt_pc(program: &[u64]) -> usize {
    use sysgrad_config::host::opcode;
    let mut pc = 0;
    while let Some(w) = program.get(pc) {
        match (w >> 56) as u8 {
            opcode::HALT => break,
            opcode::BACKWARD => pc += 2,
            _ => pc += 1,
        }
    }
    pc
}

fn field_name(cfg: &ArrayConfig, i: usize) -> String {
    let (r, c) = (cfg.rows(), cfg.cols());
    match i {
        0 => "mode".into(),
        1 => "lr_shift".into(),
        2 => "dy_valid".into(),
        i if i < 3 + r => format!("x_in[{}]", i - 3),
        i if i < 3 + r + c => format!("w_in[{}]", i - 3 - r),
        i => format!("dy_in[{}]", i - 3 - r - c),
    }
}

fn parse_line(line: &str) -> Option<Vec<u64>> {
    line.split_whitespace()
        .map(|t| u64::from_str_radix(t, 16).ok())
        .collect()
}

/// The first difference between two traces of stimulus lines; `ends[i]`
/// is the emulator's cycle count at the end of run `i`.
fn compare_traces(
    cfg: &ArrayConfig,
    want: &[&str],
    got: &[String],
    ends: &[usize],
) -> Option<String> {
    let fields = 3 + cfg.rows() + 2 * cfg.cols();
    let at = |t: usize| {
        let run = ends.iter().take_while(|e| **e <= t).count();
        let start = run.checked_sub(1).map_or(0, |r| ends[r]);
        format!("run {run}, cycle {} (trace line {})", t - start, t + 1)
    };
    for (t, (w, g)) in want.iter().zip(got).enumerate() {
        let (wv, gv) = (parse_line(w), parse_line(g));
        let Some(gv) = gv.filter(|v| v.len() == fields) else {
            return Some(format!(
                "array input, {}: unreadable RTL trace line `{g}` ({fields} hex fields expected)",
                at(t)
            ));
        };
        let wv = wv.unwrap_or_default();
        if let Some(i) = (0..fields).find(|&i| wv.get(i) != gv.get(i)) {
            return Some(format!(
                "array input, {}: {} is {:#x} in the RTL, {:#x} in the emulator\n    emulator: {w}\n    RTL:      {g}",
                at(t),
                field_name(cfg, i),
                gv[i],
                wv.get(i).copied().unwrap_or(0),
            ));
        }
    }
    (want.len() != got.len()).then(|| {
        format!(
            "run length: the controller ran {} cycles in the RTL, {} in the emulator (runs end at {ends:?})",
            got.len(),
            want.len()
        )
    })
}

/// What STATUS and PC must show after a run that left the emulator in `state`.
fn check_status(
    run: usize,
    state: State,
    program: &[u64],
    status_v: Option<u32>,
    pc_v: Option<u32>,
    findings: &mut Vec<String>,
) {
    let (want_halted, want_fault) = match state {
        State::Halted => (true, None),
        State::Faulted(f) => (false, Some(f)),
        State::Ready => (false, None),
    };
    let want_pc = want_fault.map_or_else(|| halt_pc(program), |f| f.pc) as u32;
    let want_code = want_fault.map_or(0, |f| u32::from(f.code.code()));
    match status_v {
        None => findings.push(format!("run {run}: the STATUS read was refused")),
        Some(s) => {
            let bit = |b: u32| s & b != 0;
            let err = (s >> status::ERROR_SHIFT) & 0xff;
            let dma_err = (s >> status::DMA_ERROR_SHIFT) & 0xff;
            let mut bad = Vec::new();
            if bit(status::RUNNING) || bit(status::DMA_BUSY) {
                bad.push("RUNNING or DMA_BUSY still set".to_string());
            }
            if bit(status::HALTED) != want_halted {
                bad.push(format!("HALTED is {}", bit(status::HALTED)));
            }
            if bit(status::FAULTED) != want_fault.is_some() {
                bad.push(format!("FAULTED is {}", bit(status::FAULTED)));
            }
            if err != want_code {
                bad.push(format!("error code {err:#04x}, expected {want_code:#04x}"));
            }
            if dma_err != 0 {
                bad.push(format!("DMA error {dma_err}"));
            }
            if !bad.is_empty() {
                findings.push(format!(
                    "run {run}: STATUS {s:#010x}: {} (emulator: {state:?})",
                    bad.join(", ")
                ));
            }
        }
    }
    match pc_v {
        Some(p) if p == want_pc => {}
        other => findings.push(format!(
            "run {run}: PC is {other:?} in the RTL, {want_pc} in the emulator ({state:?})"
        )),
    }
}

fn cosim_on(
    model: &AccelModel,
    setup: &Setup,
    programs: &[&[u64]],
    seed: u64,
    gap_percent: u32,
) -> Result<AccelReport, AccelError> {
    let cfg = &model.cfg;
    if programs.is_empty() {
        return Err(AccelError::Setup("no program to run".into()));
    }
    if let Some(p) = programs.iter().find(|p| p.len() > cfg.buffers.commands) {
        return Err(AccelError::Setup(format!(
            "a program has {} words, command memory {}",
            p.len(),
            cfg.buffers.commands
        )));
    }

    // The emulator.
    let mut emu = Accelerator::with_driver(Driver::recording(*cfg, false));
    for f in &setup.fills {
        let buf = emu.buffer_mut(f.buffer);
        let lanes = buf.lanes();
        for (i, line) in f.lines.iter().enumerate() {
            if line.len() > lanes {
                return Err(AccelError::Setup(format!(
                    "{:?} line {}: {} values for {lanes} lanes",
                    f.buffer,
                    f.addr + i,
                    line.len()
                )));
            }
            for lane in 0..lanes {
                let v = line.get(lane).copied().unwrap_or(0);
                buf.set(f.addr + i, lane, v).map_err(|e| {
                    AccelError::Setup(format!("{:?} line {}: {e}", f.buffer, f.addr + i))
                })?;
            }
        }
    }
    let (states, ends): (Vec<State>, Vec<usize>) = programs
        .iter()
        .map(|p| {
            let _ = emu.run(p);
            (emu.state(), emu.driver.cycle() as usize)
        })
        .unzip();

    // The RTL: the same data, each program loaded, started and waited for.
    let mut script = HostScript::new(cfg);
    script.set_packed(setup.packed);
    for f in &setup.fills {
        script.dma_write_lines(target_of(f.buffer), f.addr, &f.lines);
    }
    let after_run: Vec<(RegRead, RegRead)> = programs
        .iter()
        .map(|p| {
            script.load_program(p).start().poll();
            (script.read_reg(reg::STATUS), script.read_reg(reg::PC))
        })
        .collect();
    let regions: Vec<(Region, StreamRead)> = setup
        .compare
        .iter()
        .map(|r| (*r, script.dma_read(target_of(r.buffer), r.addr, r.count)))
        .collect();
    let (beats_in, beats_out) = (script.beats_in(), script.beats_out());
    let counters = script.read_counters();

    let work = work_dir(cfg, &format!("s{seed}-g{gap_percent}"));
    let res = model.run(&script, seed, gap_percent, &work)?;
    let mut findings = Vec::new();

    // (a) The array's inputs, cycle by cycle.
    let rec = emu
        .driver
        .recording
        .as_ref()
        .ok_or_else(|| AccelError::Setup("the emulator did not record".into()))?;
    let text = stimulus::render(cfg, &rec.inputs);
    let want: Vec<&str> = text.lines().skip(1).collect();
    findings.extend(compare_traces(cfg, &want, &res.trace, &ends));

    // (b) STATUS and PC after each run.
    for (i, ((p, state), (st, pc))) in programs.iter().zip(&states).zip(&after_run).enumerate() {
        check_status(i, *state, p, res.value(*st), res.value(*pc), &mut findings);
    }
    let state = *states.last().expect("at least one program");
    let (st, pc) = *after_run.last().expect("at least one program");
    let (status_v, pc_v) = (res.value(st), res.value(pc));

    // (c) Counters.
    let mut counters_compared = 0;
    let rtl_counters = res.counters(counters).unwrap_or_default();
    if rtl_counters.is_empty() {
        findings.push("a counter read was refused or has bits above bit 47".into());
    }
    for &(c, v) in &rtl_counters {
        let want = match c {
            Counter::DmaInBeats => Some(beats_in),
            Counter::DmaOutBeats => Some(beats_out),
            c => emu.counter(c),
        };
        if let Some(w) = want {
            counters_compared += 1;
            if w != v {
                let whose = if c.host_only() {
                    "the script"
                } else {
                    "the emulator"
                };
                findings.push(format!(
                    "counter {}: {v} in the RTL, {w} in {whose}",
                    c.name()
                ));
            }
        }
    }

    // (d) Buffers.
    let mut words_compared = 0;
    for (r, s) in &regions {
        let Some(lines) = res.lines(*s) else {
            findings.push(format!("no stream for {r:?}"));
            continue;
        };
        if res.stream(*s).is_some_and(|st| !st.tlast_ok) {
            findings.push(format!("{r:?}: m_axis_tlast not exactly on the last beat"));
        }
        let buf = emu.buffer(r.buffer);
        let mut first = None;
        let mut differ = 0;
        for (i, line) in lines.iter().enumerate() {
            for (lane, &got) in line.iter().enumerate() {
                let want = buf.get(r.addr + i, lane).map_err(|e| {
                    AccelError::Setup(format!("region {r:?} is outside the buffer: {e}"))
                })?;
                words_compared += 1;
                if got != want {
                    differ += 1;
                    first.get_or_insert((r.addr + i, lane, got, want));
                }
            }
        }
        if let Some((line, lane, got, want)) = first {
            findings.push(format!(
                "{:?} line {line} lane {lane}: {got} ({:#x}) in the RTL, {want} in the emulator; {differ} words of lines {}..{} differ",
                r.buffer,
                got as u64,
                r.addr,
                r.addr + r.count
            ));
        }
    }

    // The host interface itself.
    for (addr, resp) in &res.write_errors {
        findings.push(format!("write to {addr:#05x} answered {resp}"));
    }
    for r in &res.reads {
        if r.resp != 0 {
            findings.push(format!("read of {:#05x} answered {}", r.addr, r.resp));
        }
    }
    for p in &res.protocol_errors {
        findings.push(format!("protocol: {p}"));
    }

    if !findings.is_empty() {
        return Err(AccelError::Mismatch { work, findings });
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(AccelReport {
        run_cycles: res.trace.len(),
        host_cycles: res.cycles,
        state,
        status: status_v.unwrap_or(0),
        pc: pc_v.unwrap_or(0),
        counters: rtl_counters,
        counters_compared,
        words_compared,
        beats_in,
        beats_out,
    })
}
