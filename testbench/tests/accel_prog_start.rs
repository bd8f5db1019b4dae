//! Programs kept in command memory (`PROG_START`, docs/HOST.md): a host
//! session of the emulator (`Device::run_at`) replayed on Verilator, RTL
//! against emulator every run cycle (array inputs), STATUS and PC
//! (absolute word indices), every counter and the buffers read back, on
//! both controllers. Command memory keeps two programs side by side: a
//! short one at word 0 and the co-simulated training step of
//! `common::training_step` at a nonzero `PROG_START`; each is sent once and
//! run twice, and `PROG_START = PROG_LEN` faults `PROGRAM_END` at the
//! first fetch (PC = `PROG_START`) without changing anything.

mod common;

use sysgrad_accel::*;
use sysgrad_emulator::Driver;
use sysgrad_isa::host::{reg, status};
use sysgrad_testbench::accel::{HostScript, Setup};

/// Where the training step is kept: past the short program, with a gap.
const STEP_AT: usize = 5;

fn session(cfg: sysgrad_config::ArrayConfig, setup: &Setup, step: &[u64]) -> Device {
    let mut dev = Device::new(
        Accelerator::with_driver(Driver::recording(cfg, false)),
        HostLink::default(),
    );
    dev.start_transcript();
    for f in &setup.fills {
        let words = f.lines.iter().map(|l| l.len() as u64).sum();
        dev.write_lines(f.buffer, f.addr, f.lines.clone(), words, Traffic::InputsIn)
            .unwrap();
    }
    let short = encode_program(&[Command::Sync, Command::Halt]);
    dev.run_at(0, &short).unwrap();
    dev.run_at(STEP_AT, step).unwrap();
    dev.run_at(0, &short).unwrap();
    dev.checkpoint_counters();
    // PROG_START = PROG_LEN: nothing to fetch.
    let end = STEP_AT + step.len();
    let fault = dev.run_at(end, &[]).unwrap_err();
    assert!(
        matches!(fault, DeviceError::Fault(f) if f.code == ErrorCode::ProgramEnd && f.pc == end),
        "{fault:?}"
    );
    dev.run_at(STEP_AT, step).unwrap();
    for r in &setup.compare {
        dev.read_lines(r.buffer, r.addr, r.count, 0, Traffic::ResultsOut)
            .unwrap();
    }
    dev.checkpoint_counters();
    dev
}

#[test]
#[ignore = "needs verilator"]
fn programs_kept_in_command_memory_run_from_prog_start() {
    for cfg in [common::square(), common::dense(common::square())] {
        let (setup, step) = common::training_step(&cfg);
        let mut dev = session(cfg, &setup, &step);
        // Each program went in once: 2 + the step's words.
        let sent = dev.host.flow(Traffic::ProgramIn);
        assert_eq!(
            (sent.transfers, sent.words),
            (2, 2 + step.len() as u64),
            "{sent:?}"
        );
        assert_eq!(dev.host.runs, 5);
        let transcript = dev.take_transcript();
        let rec = dev.acc.driver().recording.as_ref();
        let rep = common::model(cfg)
            .replay(&transcript, rec, 5, 20)
            .unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
        assert_eq!(rep.runs, 5, "{}", cfg.tag());
        assert_eq!(rep.checkpoints, 2, "{}", cfg.tag());
        assert!(rep.words_compared > 0);
    }
}

/// `PROG_START` past `PROG_LEN` (not only equal) faults `PROGRAM_END` at
/// the first fetch with PC = `PROG_START`, on both controllers; the
/// register reads back, and a write while nothing runs but larger than
/// command memory is refused like `PROG_LEN`'s.
#[test]
#[ignore = "needs verilator"]
fn prog_start_past_prog_len_faults_program_end() {
    for cfg in [common::square(), common::dense(common::square())] {
        let m = common::model(cfg);
        let depth = cfg.buffers().commands as u32;
        let mut s = HostScript::new(&cfg);
        s.load_program(&encode_program(&[Command::Sync, Command::Halt]))
            .write_reg(reg::PROG_START, 7)
            .start()
            .poll();
        let st = s.read_reg(reg::STATUS);
        let pc = s.read_reg(reg::PC);
        let back = s.read_reg(reg::PROG_START);
        s.write_reg(reg::PROG_START, depth + 1);
        let still = s.read_reg(reg::PROG_START);
        let res = m
            .run(
                &s,
                3,
                0,
                &sysgrad_testbench::accel::work_dir(&cfg, "prog_start"),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let st = res.value(st).unwrap();
        assert_ne!(st & status::FAULTED, 0, "{st:#x}");
        assert_eq!(
            (st >> status::ERROR_SHIFT) & 0xff,
            u32::from(ErrorCode::ProgramEnd.code())
        );
        assert_eq!(res.value(pc), Some(7));
        assert_eq!(res.value(back), Some(7));
        assert_eq!(res.write_errors, [(reg::PROG_START, 2)], "SLVERR");
        assert_eq!(res.value(still), Some(7));
        // The emulator agrees.
        let mut acc = Accelerator::new(cfg);
        let f = acc
            .run_from(&encode_program(&[Command::Sync, Command::Halt]), 7)
            .unwrap_err();
        assert_eq!((f.code, f.pc), (ErrorCode::ProgramEnd, 7));
    }
}
