//! What running a program on the emulated accelerator needs, estimated
//! before it runs ([`sysgrad_config::budget`]): the buffers in memory, and
//! the cycles of its commands clocked through the cycle-accurate array.
//!
//! A program has no jumps (docs/COMMANDS.md), so it ends; but one command
//! streams up to 65,535 lines, a program holds up to 65,536 words and the
//! array up to 256 x 256 PEs: about 3e14 PE-cycles, days of emulation.

use crate::command::Command;
use sysgrad_config::budget::{f, Estimate};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::budget::PE_CYCLES_PER_SECOND;

/// Bytes of one buffer word in the emulator (`i64`).
const WORD: f64 = 8.0;

/// The four data buffers and the command memory, as the emulator holds them.
pub fn buffer_bytes(cfg: &ArrayConfig) -> f64 {
    let b = cfg.buffers();
    let (r, c) = (f(cfg.rows()), f(cfg.cols()));
    WORD * (f(b.weights) * c
        + f(b.activations) * r
        + f(b.gradients) * c
        + f(b.accumulators) * r.max(c)
        + f(b.commands))
}

/// Cycles of one command, from above: the lines it streams, shifts or
/// writes, plus the array's fill and drain (R + C) twice and a few cycles
/// of issue. Within a small factor of the exact count (docs/COMMANDS.md,
/// Cycles) for every command, which is all a budget needs.
fn command_cycles(cfg: &ArrayConfig, cmd: &Command) -> f64 {
    let lines = match *cmd {
        Command::LoadW { k, .. } => f(usize::from(k)),
        Command::FlushW => f(cfg.rows()),
        Command::Forward { n, .. } | Command::Backward { n, .. } => f(usize::from(n)),
        Command::Drain { .. } => f(cfg.cols().max(cfg.rows())),
        Command::Requant { count, .. } | Command::Act { count, .. } => f(usize::from(count)),
        Command::Update { .. } | Command::Window(_) | Command::Sync | Command::Halt => 1.0,
    };
    lines + 2.0 * f(cfg.rows() + cfg.cols()) + 8.0
}

/// Cycles of the commands of `program` up to the first word the
/// controller would refuse (it stops there) or `HALT`.
pub fn program_cycles(cfg: &ArrayConfig, program: &[u64]) -> f64 {
    let mut cycles = 0.0;
    let mut pc = 0;
    while let Ok((cmd, words)) = Command::decode(&program[pc..]) {
        cycles += command_cycles(cfg, &cmd);
        pc += words;
        if cmd == Command::Halt {
            break;
        }
    }
    cycles
}

/// Running `program` on the emulated accelerator of `cfg`.
pub fn program(cfg: &ArrayConfig, program: &[u64]) -> Estimate {
    run(cfg, program.len(), program_cycles(cfg, program))
}

/// Running a program of `words` words and `cycles` cycles (its
/// [`program_cycles`]) on the emulated accelerator of `cfg`.
pub fn run(cfg: &ArrayConfig, words: usize, cycles: f64) -> Estimate {
    let pe_cycles = cycles * f(cfg.rows() * cfg.cols());
    Estimate::new(
        format!(
            "the program of {words} words on the {}x{} accelerator",
            cfg.rows(),
            cfg.cols()
        ),
        buffer_bytes(cfg),
        pe_cycles / PE_CYCLES_PER_SECOND,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::assemble;

    #[test]
    fn a_long_stream_on_a_large_array_is_days() {
        let cfg = ArrayConfig::default_16x16().with_size(256, 256).unwrap();
        let pass = "FORWARD x=0 y=0 n=65535 acc=0\n".repeat(20000) + "HALT\n";
        let e = program(&cfg, &assemble(&pass).unwrap());
        assert!(e.seconds > 86_400.0, "{e:?}");
    }

    #[test]
    fn the_estimate_bounds_a_real_run() {
        let cfg = ArrayConfig::default_16x16();
        let text = "LOAD_W addr=0 m=16 k=16\nFORWARD x=0 y=0 n=64 acc=0\n\
                    BACKWARD mode=interleaved dy=0 x=0 dx=100 n=64 acc=0\n\
                    DRAIN dw=200\nUPDATE lr=6\nFLUSH_W\nHALT\n";
        let program = assemble(text).unwrap();
        let mut acc = crate::Accelerator::new(cfg);
        acc.run(&program).unwrap();
        let exact = acc.driver().cycle() as f64;
        let estimate = program_cycles(&cfg, &program);
        assert!(
            estimate >= exact && estimate <= 4.0 * exact,
            "{estimate} against {exact}"
        );
    }

    #[test]
    fn a_refused_word_ends_the_estimate() {
        let cfg = ArrayConfig::default_16x16();
        let mut program = assemble("FORWARD x=0 y=0 n=100 acc=0\n").unwrap();
        program.push(u64::MAX);
        program.extend(assemble("FORWARD x=0 y=0 n=60000 acc=0\n").unwrap());
        assert!(program_cycles(&cfg, &program) < 200.0);
    }
}
