//! Replaying a host session of the emulated accelerator
//! ([`sysgrad_accel::Transcript`]: DMA writes, program loads, runs, DMA
//! reads, counter checkpoints) on the RTL through the same host harness,
//! and comparing everything that comes back: every line read (results,
//! weights, dW), `STATUS` and `PC` after every run, every counter at every
//! checkpoint (the DMA beat counts included) and, given the emulator's
//! recording, the array's inputs in every run cycle.
//!
//! The host's work between runs (ReLU, softmax, im2col, ...) depends on
//! what came back; the emulator computed it, and the RTL is fed the same
//! data. If every read matches, the RTL computed what the emulator did, so
//! the whole session (a training step) is the RTL's too.

use super::*;
use sysgrad_accel::{HostOp, Transcript};
use sysgrad_emulator::Recording;

/// What a replay compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    pub runs: usize,
    /// Cycles the controller ran (trace lines).
    pub run_cycles: usize,
    /// Cycles of the whole host script (reset excluded).
    pub host_cycles: u64,
    /// Cycles of the script spent on the counter checkpoints' reads (a
    /// check, not the session's work).
    pub checkpoint_cycles: u64,
    pub words_compared: usize,
    pub checkpoints: usize,
    pub counters_compared: usize,
    pub beats_in: u64,
    pub beats_out: u64,
    /// The RTL's counters at the last checkpoint.
    pub counters: Vec<(Counter, u64)>,
}

/// What the script will read back, and what the emulator saw there.
enum Expect {
    Lines {
        label: String,
        target: DmaTarget,
        addr: usize,
        read: StreamRead,
        lines: Vec<Vec<i64>>,
    },
    Run {
        label: String,
        state: State,
        /// Command memory as the run found it, and `PROG_START`.
        program: Vec<u64>,
        start: usize,
        status: RegRead,
        pc: RegRead,
    },
    Counters {
        label: String,
        reads: CounterReads,
        values: Vec<(Counter, u64)>,
    },
}

/// The harness script of a transcript and what to compare.
fn script_of(cfg: &ArrayConfig, t: &Transcript) -> (HostScript, Vec<Expect>, Vec<usize>) {
    let mut script = HostScript::new(cfg);
    script.set_packed(true);
    let (mut expect, mut ends) = (Vec::new(), Vec::new());
    let mut label = "start".to_string();
    // Command memory as the host wrote it, and the registers it set.
    let (mut memory, mut regs) = (Vec::new(), (0, 0));
    for op in t {
        match op {
            HostOp::Mark(l) => label = l.clone(),
            HostOp::Write {
                target,
                addr,
                lines,
            } => {
                script.dma_write_lines(*target, *addr, lines);
            }
            HostOp::Program { at, words } => {
                script.write_program(*at, words);
                if memory.len() < at + words.len() {
                    memory.resize(at + words.len(), 0);
                }
                memory[*at..at + words.len()].copy_from_slice(words);
                // The device writes PROG_LEN after every load.
                regs.1 = usize::MAX;
            }
            HostOp::Run {
                start,
                end,
                state,
                cycle,
            } => {
                if regs.0 != *start {
                    script.write_reg(reg::PROG_START, *start as u32);
                }
                if regs.1 != *end {
                    script.write_reg(reg::PROG_LEN, *end as u32);
                }
                regs = (*start, *end);
                script.start().poll();
                let (status, pc) = (script.read_reg(reg::STATUS), script.read_reg(reg::PC));
                ends.push(*cycle as usize);
                expect.push(Expect::Run {
                    label: label.clone(),
                    state: *state,
                    program: memory[..*end].to_vec(),
                    start: *start,
                    status,
                    pc,
                });
            }
            HostOp::Read {
                target,
                addr,
                lines,
            } => {
                let read = script.dma_read(*target, *addr, lines.len());
                expect.push(Expect::Lines {
                    label: label.clone(),
                    target: *target,
                    addr: *addr,
                    read,
                    lines: lines.clone(),
                });
            }
            HostOp::Counters(values) => expect.push(Expect::Counters {
                label: label.clone(),
                reads: script.read_counters(),
                values: values.clone(),
            }),
        }
    }
    (script, expect, ends)
}

/// The first difference between the lines read back and the emulator's.
fn compare_lines(
    label: &str,
    (target, addr): (DmaTarget, usize),
    got: Option<Vec<Vec<i64>>>,
    want: &[Vec<i64>],
    findings: &mut Vec<String>,
) -> usize {
    let Some(got) = got else {
        findings.push(format!(
            "{label}: no stream for the read of {target:?} line {addr}"
        ));
        return 0;
    };
    let mut compared = 0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        compared += w.len();
        if let Some(lane) = (0..w.len()).find(|&l| g.get(l) != w.get(l)) {
            findings.push(format!(
                "{label}: {target:?} line {} lane {lane} reads {:?} from the RTL, {} in the emulator",
                addr + i,
                g.get(lane),
                w[lane]
            ));
            return compared;
        }
    }
    compared
}

fn compare_checkpoint(
    label: &str,
    rtl: Option<Vec<(Counter, u64)>>,
    want: &[(Counter, u64)],
    findings: &mut Vec<String>,
) -> (usize, Vec<(Counter, u64)>) {
    let Some(rtl) = rtl else {
        findings.push(format!("{label}: a counter read was refused"));
        return (0, Vec::new());
    };
    for (c, w) in want {
        let got = rtl.iter().find(|(k, _)| k == c).map(|p| p.1);
        if got != Some(*w) {
            findings.push(format!(
                "{label}: counter {} is {got:?} in the RTL, {w} in the emulator",
                c.name()
            ));
        }
    }
    (want.len(), rtl)
}

impl AccelModel {
    /// Plays `transcript` on this model (back-pressure from `seed` at
    /// `gap_percent`) and compares it; with `recording`, the array's
    /// inputs in every run cycle too.
    pub fn replay(
        &self,
        transcript: &Transcript,
        recording: Option<&Recording>,
        seed: u64,
        gap_percent: u32,
    ) -> Result<ReplayReport, AccelError> {
        let cfg = self.cfg;
        let (script, expect, ends) = script_of(&cfg, transcript);
        let work = work_dir(&cfg, "replay");
        let res = self.run(&script, seed, gap_percent, &work)?;
        let mut findings = Vec::new();
        if let Some(rec) = recording {
            let lines: Vec<String> = rec
                .inputs
                .iter()
                .map(|i| stimulus::render_traced_line(&cfg, i))
                .collect();
            let want: Vec<&str> = lines.iter().map(String::as_str).collect();
            findings.extend(compare_traces(&cfg, &want, &res.trace, &ends));
        }
        let mut report = ReplayReport {
            runs: ends.len(),
            run_cycles: res.trace.len(),
            host_cycles: res.cycles,
            checkpoint_cycles: 0,
            words_compared: 0,
            checkpoints: 0,
            counters_compared: 0,
            beats_in: script.beats_in(),
            beats_out: script.beats_out(),
            counters: Vec::new(),
        };
        let mut run = 0;
        for e in &expect {
            match e {
                Expect::Lines {
                    label,
                    target,
                    addr,
                    read,
                    lines,
                } => {
                    report.words_compared += compare_lines(
                        label,
                        (*target, *addr),
                        res.lines(*read),
                        lines,
                        &mut findings,
                    )
                }
                Expect::Run {
                    label,
                    state,
                    program,
                    start,
                    status,
                    pc,
                } => {
                    let mut f = Vec::new();
                    let (st, p) = (res.value(*status), res.value(*pc));
                    check_status(run, *state, (program, *start), st, p, &mut f);
                    findings.extend(f.into_iter().map(|m| format!("{label}: {m}")));
                    run += 1;
                }
                Expect::Counters {
                    label,
                    reads,
                    values,
                } => {
                    let (n, rtl) =
                        compare_checkpoint(label, res.counters(*reads), values, &mut findings);
                    report.counters_compared += n;
                    report.checkpoints += 1;
                    report.counters = rtl;
                    // Two reads per counter, each a request and a response cycle.
                    report.checkpoint_cycles += 4 * Counter::ALL.len() as u64;
                }
            }
        }
        host_interface_findings(&res, &mut findings);
        if !findings.is_empty() {
            return Err(AccelError::Mismatch { work, findings });
        }
        let _ = std::fs::remove_dir_all(&work);
        Ok(report)
    }
}
