//! `sa_accel` driven by the generated C driver (`sa_accel.c`, compiled
//! with gcc as C99, warnings as errors): a Verilator build whose harness
//! (`cpp/tb_c_host.cpp`) gives the driver its two hardware functions
//! over the Verilated ports and plays a [`Transcript`] through the
//! driver's calls only (DMA in and out, program load, start and wait,
//! counter read-out), comparing what comes back with what the emulator
//! saw.

use super::*;
use sysgrad_accel::{Device, DeviceError, HostLink, HostOp, Traffic, Transcript};

/// The C++ side of the C-driver harness.
pub const C_HARNESS: &str = include_str!("../../cpp/tb_c_host.cpp");
/// First line of a job.
pub const JOB_MAGIC: &str = "sysgrad-job 2";

/// A Verilator build of `sa_accel` with the C driver linked in.
#[derive(Debug, Clone)]
pub struct CHostModel {
    pub exe: PathBuf,
    pub cfg: ArrayConfig,
}

/// What a job compared, as the harness reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CHostReport {
    pub runs: u64,
    pub words_compared: u64,
    pub counters_compared: u64,
    pub checkpoints: u64,
    /// Cycles of the whole session (reset excluded), register accesses,
    /// beats and back-pressure included.
    pub cycles: u64,
    pub beats_in: u64,
    pub beats_out: u64,
    /// Beats that came with `m_axis_tlast`.
    pub tlast: u64,
}

/// Builds (or reuses) the C-driver harness of `cfg`'s accelerator.
pub fn build_c_host(cfg: &ArrayConfig) -> Result<CHostModel, AccelError> {
    let files = sysgrad_hdl::generate(cfg);
    require_top(&files)?;
    let driver = sysgrad_hdl::host_driver(cfg);
    let exe = crate::verilator::cached_build(&crate::verilator::CachedBuild {
        label: format!("chost-{}", cfg.tag()),
        files: &files,
        harness: ("tb_c_host.cpp", C_HARNESS),
        args: &c_host_args(),
        exe: "Vsa_c_host",
        c_files: &driver,
    })?;
    Ok(CHostModel { exe, cfg: *cfg })
}

fn c_host_args() -> Vec<String> {
    [
        "--cc",
        "--exe",
        "--build",
        "-O3",
        "-j",
        "2",
        "-Wno-fatal",
        "--top-module",
        sysgrad_hdl::accel_top_name(),
        "-Mdir",
        "obj",
        "-o",
        "Vsa_c_host",
        "-CFLAGS",
        "-O1",
    ]
    .map(String::from)
    .to_vec()
}

/// The job text of `transcript` (see `cpp/tb_c_host.cpp`).
pub fn job_of(cfg: &ArrayConfig, transcript: &Transcript) -> String {
    let mut out = format!("{JOB_MAGIC}\n");
    // Command memory as the host wrote it.
    let mut memory: Vec<u64> = Vec::new();
    let lines_text = |out: &mut String, target: DmaTarget, lines: &[Vec<i64>]| {
        let lanes = target.lanes(cfg);
        for line in lines {
            for l in 0..lanes {
                let _ = write!(out, " {}", line.get(l).copied().unwrap_or(0));
            }
        }
    };
    for op in transcript {
        match op {
            HostOp::Mark(l) => {
                let _ = writeln!(out, "mark {}", l.replace('\n', " "));
            }
            HostOp::Write {
                target,
                addr,
                lines,
            }
            | HostOp::Read {
                target,
                addr,
                lines,
            } => {
                let kind = if matches!(op, HostOp::Write { .. }) {
                    "write"
                } else {
                    "read"
                };
                let _ = write!(out, "{kind} {} {addr} {}", target.code(), lines.len());
                lines_text(&mut out, *target, lines);
                out.push('\n');
            }
            HostOp::Program { at, words } => {
                let _ = write!(out, "program {at} {}", words.len());
                for w in words {
                    let _ = write!(out, " {w:x}");
                }
                out.push('\n');
                if memory.len() < at + words.len() {
                    memory.resize(at + words.len(), 0);
                }
                memory[*at..at + words.len()].copy_from_slice(words);
            }
            HostOp::Run {
                start, end, state, ..
            } => {
                let (halted, code, pc) = match state {
                    State::Faulted(f) => (0, f.code.code(), f.pc),
                    _ => (1, 0, halt_pc(&memory[..*end], *start)),
                };
                let _ = writeln!(out, "run {start} {end} {halted} {code} {pc}");
            }
            HostOp::Counters(values) => {
                let _ = write!(out, "counters {}", values.len());
                for (c, v) in values {
                    let _ = write!(out, " {} {v}", c.index());
                }
                out.push('\n');
            }
        }
    }
    out
}

fn parse_report(stdout: &str) -> Option<CHostReport> {
    let line = stdout.lines().find(|l| l.starts_with("done "))?;
    let tok: Vec<&str> = line.split_whitespace().collect();
    let get = |key: &str| -> Option<u64> {
        let i = tok.iter().position(|t| *t == key)?;
        tok.get(i + 1)?.parse().ok()
    };
    Some(CHostReport {
        runs: get("runs")?,
        words_compared: get("words")?,
        counters_compared: get("counters")?,
        checkpoints: get("checkpoints")?,
        cycles: get("cycles")?,
        beats_in: get("beats_in")?,
        beats_out: get("beats_out")?,
        tlast: get("tlast")?,
    })
}

impl CHostModel {
    /// Plays `transcript` through the C driver (back-pressure from `seed`
    /// at `gap_percent`) and compares every read, run and counter.
    pub fn play(
        &self,
        transcript: &Transcript,
        seed: u64,
        gap_percent: u32,
    ) -> Result<CHostReport, AccelError> {
        let work = work_dir(&self.cfg, "chost");
        std::fs::create_dir_all(&work)?;
        let job = work.join("job.txt");
        std::fs::write(&job, job_of(&self.cfg, transcript))?;
        let out = Command::new(&self.exe)
            .arg(&job)
            .arg(seed.to_string())
            .arg(gap_percent.to_string())
            .current_dir(&work)
            .output()?;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let mut findings: Vec<String> = stdout
            .lines()
            .filter(|l| l.starts_with("mismatch ") || l.starts_with("driver "))
            .map(String::from)
            .collect();
        let report = parse_report(&stdout);
        let reads = transcript
            .iter()
            .filter(|op| matches!(op, HostOp::Read { .. }))
            .count() as u64;
        match report {
            Some(r) if r.tlast != reads => findings.push(format!(
                "m_axis_tlast came with {} beats for {reads} DMA reads",
                r.tlast
            )),
            None if findings.is_empty() => {
                return Err(AccelError::Output(format!(
                    "{} exited with {} without a report: {}{}",
                    self.exe.display(),
                    out.status,
                    stdout,
                    String::from_utf8_lossy(&out.stderr)
                )))
            }
            _ => {}
        }
        if !findings.is_empty() || !out.status.success() {
            return Err(AccelError::Mismatch { work, findings });
        }
        let _ = std::fs::remove_dir_all(&work);
        Ok(report.expect("checked above"))
    }
}

/// The host session of one program on the emulator behind its host
/// interface: `setup`'s fills written, the program loaded and run, the
/// compared regions read back, every counter checkpointed.
pub fn setup_transcript(
    cfg: &ArrayConfig,
    setup: &Setup,
    program: &[u64],
) -> Result<Transcript, DeviceError> {
    let mut dev = Device::new(Accelerator::new(*cfg), HostLink::default());
    dev.start_transcript();
    for f in &setup.fills {
        let words = f.lines.iter().map(|l| l.len() as u64).sum();
        dev.write_lines(f.buffer, f.addr, f.lines.clone(), words, Traffic::InputsIn)?;
    }
    let ran = dev.run(program);
    if ran.is_ok() {
        for r in &setup.compare {
            dev.read_lines(r.buffer, r.addr, r.count, 0, Traffic::ResultsOut)?;
        }
    }
    dev.checkpoint_counters();
    Ok(dev.take_transcript())
}
