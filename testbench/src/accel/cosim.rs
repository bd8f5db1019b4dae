//! Running host scripts on the harness, and the co-simulation of a
//! program on the RTL and the emulator.

use super::*;

/// A fresh folder for one harness run under the co-simulation cache.
pub fn work_dir(cfg: &ArrayConfig, what: &str) -> PathBuf {
    cache_root()
        .join("accel-runs")
        .join(format!("{}-{what}-{}", cfg.tag(), unique_suffix()))
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
        collect(script, &out, &trace, &String::from_utf8_lossy(&done.stderr))
    }

    /// [`cosim_program`] on this model.
    pub fn cosim(
        &self,
        setup: &Setup,
        program: &[u64],
        seed: u64,
        gap_percent: u32,
    ) -> Result<AccelReport, AccelError> {
        self.cosim_runs(setup, &[program], seed, gap_percent)
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
        cosim_on(
            &self.cfg,
            setup,
            programs,
            &format!("s{seed}-g{gap_percent}"),
            |script, work| self.run(script, seed, gap_percent, work),
        )
    }
}

/// Reads what a harness wrote: `out` and `trace` in the formats of
/// `cpp/tb_sa_accel.cpp`, and `cycles N` somewhere in `log`.
pub(super) fn collect(
    script: &HostScript,
    out: &Path,
    trace: &Path,
    log: &str,
) -> Result<HostResult, AccelError> {
    let mut res = parse_out(&std::fs::read_to_string(out)?)?;
    res.trace = std::fs::read_to_string(trace)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    res.cycles = log
        .split_whitespace()
        .skip_while(|w| *w != "cycles")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| AccelError::Output(format!("no `cycles N` in the harness log: {log}")))?;
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

// ------------------------------------------------------------ co-simulation

/// Which simulator plays the RTL side of a co-simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simulator {
    /// The Verilator harness (`cpp/tb_sa_accel.cpp`, cached build) with
    /// random back-pressure from `seed` at `gap_percent`.
    Verilator { seed: u64, gap_percent: u32 },
    /// A generated Icarus Verilog testbench ([`icarus_testbench`]), no
    /// back-pressure.
    Icarus,
}

/// [`AccelModel::cosim_runs`] on the RTL for `cfg`, simulated by `sim`.
pub fn cosim_runs_on(
    sim: Simulator,
    cfg: &ArrayConfig,
    setup: &Setup,
    programs: &[&[u64]],
) -> Result<AccelReport, AccelError> {
    cosim_files_on(sim, cfg, &sysgrad_hdl::generate(cfg), setup, programs)
}

/// [`cosim_runs_on`] of the given Verilog files (which must contain
/// `sa_accel.v`), e.g. with a fault injected.
pub fn cosim_files_on(
    sim: Simulator,
    cfg: &ArrayConfig,
    files: &[VerilogFile],
    setup: &Setup,
    programs: &[&[u64]],
) -> Result<AccelReport, AccelError> {
    match sim {
        Simulator::Verilator { seed, gap_percent } => {
            build_files(cfg, files)?.cosim_runs(setup, programs, seed, gap_percent)
        }
        Simulator::Icarus => cosim_runs_icarus_files(cfg, files, setup, programs),
    }
}

/// The Icarus co-simulation of the given Verilog files (which must contain
/// `sa_accel.v`), e.g. with a fault injected.
pub fn cosim_runs_icarus_files(
    cfg: &ArrayConfig,
    files: &[VerilogFile],
    setup: &Setup,
    programs: &[&[u64]],
) -> Result<AccelReport, AccelError> {
    cosim_on(cfg, setup, programs, "icarus", |script, work| {
        run_icarus_script(files, script, work)
    })
}

/// [`cosim_program`] with Icarus Verilog instead of Verilator.
pub fn cosim_program_icarus(
    cfg: &ArrayConfig,
    setup: &Setup,
    program: &[u64],
) -> Result<AccelReport, AccelError> {
    cosim_runs_on(Simulator::Icarus, cfg, setup, &[program])
}

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

impl AccelReport {
    /// The RTL's value of counter `c`.
    pub fn counter(&self, c: Counter) -> Option<u64> {
        self.counters.iter().find(|(k, _)| *k == c).map(|p| p.1)
    }
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
pub(super) fn halt_pc(program: &[u64], start: usize) -> usize {
    use sysgrad_isa::command::{field, opcode, words_of};
    let mut pc = start;
    while let Some(&w) = program.get(pc) {
        if field::OPCODE.get(w) == u64::from(opcode::HALT) {
            break;
        }
        pc += words_of(w);
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
        i if i < 3 + r + 2 * c => format!("dy_in[{}]", i - 3 - r - c),
        i => wave_fields()
            .get(i - 3 - r - 2 * c)
            .map_or_else(|| format!("field {i}"), |f| f.to_string()),
    }
}

/// The wave's control at the end of a dense array's trace line: every
/// wave port but the learning-rate shift, which is field 1.
fn wave_fields() -> Vec<&'static str> {
    use sysgrad_isa::wave::WaveField;
    WaveField::wave_inputs().map(|f| f.port()).collect()
}

fn parse_line(line: &str) -> Option<Vec<u64>> {
    line.split_whitespace()
        .map(|t| u64::from_str_radix(t, 16).ok())
        .collect()
}

/// The first difference between two traces of stimulus lines; `ends[i]`
/// is the emulator's cycle count at the end of run `i`.
pub(super) fn compare_traces(
    cfg: &ArrayConfig,
    want: &[&str],
    got: &[String],
    ends: &[usize],
) -> Option<String> {
    let wave = if cfg.dense() { wave_fields().len() } else { 0 };
    let fields = 3 + cfg.rows() + 2 * cfg.cols() + wave;
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
pub(super) fn check_status(
    run: usize,
    state: State,
    (program, start): (&[u64], usize),
    status_v: Option<u32>,
    pc_v: Option<u32>,
    findings: &mut Vec<String>,
) {
    let (want_halted, want_fault) = match state {
        State::Halted => (true, None),
        State::Faulted(f) => (false, Some(f)),
        State::Ready => (false, None),
    };
    let want_pc = want_fault.map_or_else(|| halt_pc(program, start), |f| f.pc) as u32;
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

/// The emulator side of a co-simulation: `setup`'s data in its buffers,
/// then every program run in turn; the state after each run and the cycle
/// count at its end.
fn run_emulator(
    cfg: &ArrayConfig,
    setup: &Setup,
    programs: &[&[u64]],
) -> Result<(Accelerator, Vec<State>, Vec<usize>), AccelError> {
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
    let (states, ends) = programs
        .iter()
        .map(|p| {
            let _ = emu.run(p);
            (emu.state(), emu.driver().cycle() as usize)
        })
        .unzip();
    Ok((emu, states, ends))
}

/// The host script of a co-simulation, and what it reads back: STATUS and
/// PC after each run, the compared regions, every counter.
struct CosimScript {
    script: HostScript,
    after_run: Vec<(RegRead, RegRead)>,
    regions: Vec<(Region, StreamRead)>,
    counters: CounterReads,
}

/// The same data into the RTL's buffers, each program loaded, started and
/// waited for, then the regions and the counters read back.
fn host_script(cfg: &ArrayConfig, setup: &Setup, programs: &[&[u64]]) -> CosimScript {
    let mut script = HostScript::new(cfg);
    script.set_packed(setup.packed);
    for f in &setup.fills {
        script.dma_write_lines(f.buffer.target(), f.addr, &f.lines);
    }
    let after_run = programs
        .iter()
        .map(|p| {
            script.load_program(p).start().poll();
            (script.read_reg(reg::STATUS), script.read_reg(reg::PC))
        })
        .collect();
    let regions = setup
        .compare
        .iter()
        .map(|r| (*r, script.dma_read(r.buffer.target(), r.addr, r.count)))
        .collect();
    let counters = script.read_counters();
    CosimScript {
        script,
        after_run,
        regions,
        counters,
    }
}

/// Every counter the RTL reported against the emulator's (or, for the
/// host-side beat counts, the script's); returns how many were compared.
fn compare_counters(
    emu: &Accelerator,
    rtl: &[(Counter, u64)],
    (beats_in, beats_out): (u64, u64),
    findings: &mut Vec<String>,
) -> usize {
    if rtl.is_empty() {
        findings.push("a counter read was refused or has bits above the counters' width".into());
    }
    let mut compared = 0;
    for &(c, v) in rtl {
        let wrap = |count| sysgrad_isa::host::counter_register(&emu.driver().cfg(), count);
        let want = match c {
            Counter::DmaInBeats => Some(wrap(beats_in)),
            Counter::DmaOutBeats => Some(wrap(beats_out)),
            c => emu.counter(c),
        };
        let Some(w) = want else { continue };
        compared += 1;
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
    compared
}

/// The buffer regions read back against the emulator's buffers; returns
/// how many words were compared.
fn compare_buffers(
    emu: &Accelerator,
    res: &HostResult,
    regions: &[(Region, StreamRead)],
    findings: &mut Vec<String>,
) -> Result<usize, AccelError> {
    let mut words_compared = 0;
    for (r, s) in regions {
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
    Ok(words_compared)
}

/// Refused writes and reads and handshake violations of the host interface.
pub(super) fn host_interface_findings(res: &HostResult, findings: &mut Vec<String>) {
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
}

/// The co-simulation with `run` playing the host script in a work folder
/// named after `label`.
fn cosim_on(
    cfg: &ArrayConfig,
    setup: &Setup,
    programs: &[&[u64]],
    label: &str,
    run: impl FnOnce(&HostScript, &Path) -> Result<HostResult, AccelError>,
) -> Result<AccelReport, AccelError> {
    if programs.is_empty() {
        return Err(AccelError::Setup("no program to run".into()));
    }
    if let Some(p) = programs.iter().find(|p| p.len() > cfg.buffers().commands) {
        return Err(AccelError::Setup(format!(
            "a program has {} words, command memory {}",
            p.len(),
            cfg.buffers().commands
        )));
    }
    let (emu, states, ends) = run_emulator(cfg, setup, programs)?;
    let cs = host_script(cfg, setup, programs);
    let beats = (cs.script.beats_in(), cs.script.beats_out());
    let work = work_dir(cfg, label);
    let res = run(&cs.script, &work)?;
    let mut findings = Vec::new();

    // (a) The array's inputs, cycle by cycle.
    let rec = emu
        .driver()
        .recording
        .as_ref()
        .ok_or_else(|| AccelError::Setup("the emulator did not record".into()))?;
    if let Some(t) = rec.inputs.iter().position(|i| i.rst) {
        findings.push(format!(
            "the emulator reset the array in cycle {t}, which a controller run cannot do"
        ));
    }
    let lines: Vec<String> = rec
        .inputs
        .iter()
        .map(|i| stimulus::render_traced_line(cfg, i))
        .collect();
    let want: Vec<&str> = lines.iter().map(String::as_str).collect();
    findings.extend(compare_traces(cfg, &want, &res.trace, &ends));

    // (b) STATUS and PC after each run.
    for (i, ((p, state), (st, pc))) in programs.iter().zip(&states).zip(&cs.after_run).enumerate() {
        check_status(
            i,
            *state,
            (p, 0),
            res.value(*st),
            res.value(*pc),
            &mut findings,
        );
    }
    let state = *states.last().expect("at least one program");
    let (st, pc) = *cs.after_run.last().expect("at least one program");

    // (c) Counters, (d) buffers, and the host interface itself.
    let rtl_counters = res.counters(cs.counters).unwrap_or_default();
    let counters_compared = compare_counters(&emu, &rtl_counters, beats, &mut findings);
    let words_compared = compare_buffers(&emu, &res, &cs.regions, &mut findings)?;
    host_interface_findings(&res, &mut findings);

    if !findings.is_empty() {
        return Err(AccelError::Mismatch { work, findings });
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(AccelReport {
        run_cycles: res.trace.len(),
        host_cycles: res.cycles,
        state,
        status: res.value(st).unwrap_or(0),
        pc: res.value(pc).unwrap_or(0),
        counters: rtl_counters,
        counters_compared,
        words_compared,
        beats_in: beats.0,
        beats_out: beats.1,
    })
}
