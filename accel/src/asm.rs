//! A text form of command programs, so that programs can be written,
//! saved and edited by hand: one command per line as in `docs/COMMANDS.md`,
//! arguments as `name=value`, `#` comments, and `.word 0x...` for a raw
//! command word (to try the controller's own checks).
//!
//! ```text
//! LOAD_W addr=0 m=8 k=8
//! FORWARD x=0 y=0 n=16 acc=0
//! BACKWARD mode=interleaved dy=0 x=0 dx=208 n=16 acc=0
//! UPDATE lr=6
//! FLUSH_W
//! HALT
//! ```
//!
//! [`disassemble`] writes the same form, so `assemble(disassemble(p)) == p`.

use super::command::{ActFunction, BackwardMode, Command, DataBuffer};
use std::collections::BTreeMap;
use std::fmt;
use sysgrad_isa::command::{format_named, opcode, Arg, FORMATS};

/// Why a program text was refused: the line and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct AsmError {
    pub line: usize,
    pub msg: String,
}

/// The mnemonics of the command table, for error messages.
fn mnemonics() -> String {
    let mut names: Vec<&str> = FORMATS.iter().map(|f| f.mnemonic).collect();
    names.push(".word");
    names.join(", ")
}

/// How an argument is written: by name for the enumerated fields, as a
/// number otherwise.
fn named_values(arg: &str) -> Option<Vec<(&'static str, u64)>> {
    match arg {
        "mode" => Some(BackwardMode::ALL.map(|m| (m.name(), m.code())).to_vec()),
        "dst" => Some(DataBuffer::ALL.map(|d| (d.name(), d.code())).to_vec()),
        "func" => Some(ActFunction::ALL.map(|f| (f.name(), f.code())).to_vec()),
        _ => None,
    }
}

/// The `name=value` arguments of one line, each used exactly once.
struct Args<'a> {
    line: usize,
    mnemonic: &'a str,
    values: BTreeMap<&'a str, &'a str>,
}

impl<'a> Args<'a> {
    fn parse(line: usize, mnemonic: &'a str, words: &[&'a str]) -> Result<Self, AsmError> {
        let mut values = BTreeMap::new();
        for w in words {
            let (k, v) = w.split_once('=').ok_or_else(|| AsmError {
                line,
                msg: format!("`{w}` is not name=value"),
            })?;
            if values.insert(k, v).is_some() {
                return Err(AsmError {
                    line,
                    msg: format!("{k}= given twice"),
                });
            }
        }
        Ok(Args {
            line,
            mnemonic,
            values,
        })
    }

    fn err(&self, msg: String) -> AsmError {
        AsmError {
            line: self.line,
            msg,
        }
    }

    fn take(&mut self, key: &str) -> Result<&'a str, AsmError> {
        self.values
            .remove(key)
            .ok_or_else(|| self.err(format!("{} needs {key}=", self.mnemonic)))
    }

    /// An unsigned number (decimal or 0x hex) below `2^bits`.
    fn num(&mut self, key: &str, bits: u32) -> Result<u64, AsmError> {
        let text = self.take(key)?;
        let parsed = match text.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => text.parse(),
        };
        let v = parsed.map_err(|_| self.err(format!("{key}={text} is not a number")))?;
        if v >> bits != 0 {
            return Err(self.err(format!(
                "{key}={v} does not fit its {bits}-bit field (at most {})",
                (1u64 << bits) - 1
            )));
        }
        Ok(v)
    }

    /// A value written by name (`mode=interleaved`), one of `options`.
    fn choice(&mut self, key: &str, options: &[(&str, u64)]) -> Result<u64, AsmError> {
        let text = self.take(key)?;
        options
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(text))
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|o| o.0).collect();
                self.err(format!("{key}={text} is not one of {}", names.join(", ")))
            })
    }

    /// The value of argument `arg` of the command being read.
    fn value(&mut self, arg: &Arg) -> Result<u64, AsmError> {
        match named_values(arg.name) {
            Some(options) => self.choice(arg.name, &options),
            None => self.num(arg.name, arg.field.bits),
        }
    }

    fn done(self) -> Result<(), AsmError> {
        match self.values.keys().next() {
            Some(k) => Err(self.err(format!("{} has no argument {k}=", self.mnemonic))),
            None => Ok(()),
        }
    }
}

/// Whether BACKWARD in `mode` ignores argument `name` (it may be left out,
/// `docs/COMMANDS.md`): x without a dW pass, dx and acc without a dX pass.
fn ignored(mode: BackwardMode, name: &str) -> bool {
    match name {
        "x" => !mode.computes_dw(),
        "dx" | "acc" => !mode.computes_dx(),
        _ => false,
    }
}

fn command(a: &mut Args) -> Result<Command, AsmError> {
    let f = format_named(a.mnemonic).ok_or_else(|| {
        a.err(format!(
            "unknown mnemonic `{}` (one of {})",
            a.mnemonic,
            mnemonics()
        ))
    })?;
    let mut values = BTreeMap::new();
    for arg in f.args {
        let left_out = !a.values.contains_key(arg.name);
        // `win` left out is 0: a plain stream (`docs/COMMANDS.md`).
        let skip = left_out
            && (arg.name == "win"
                || match f.opcode {
                    opcode::BACKWARD => values
                        .get("mode")
                        .is_some_and(|&m| ignored(BackwardMode::from_code(m), arg.name)),
                    // Only the gradient gate reads a mask.
                    opcode::ACT => {
                        arg.name == "mask"
                            && values.get("func") != Some(&ActFunction::ReluGrad.code())
                    }
                    _ => false,
                });
        let v = if skip { 0 } else { a.value(arg)? };
        values.insert(arg.name, v);
    }
    Ok(Command::from_args(f, |name| values[name]))
}

/// The command words of a program text.
pub fn assemble(text: &str) -> Result<Vec<u64>, AsmError> {
    let mut words = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        let mut parts = body.split_whitespace();
        let Some(mnemonic) = parts.next() else {
            continue;
        };
        let rest: Vec<&str> = parts.collect();
        if mnemonic == ".word" {
            let [w] = rest[..] else {
                return Err(AsmError {
                    line,
                    msg: ".word takes one 64-bit hex value".into(),
                });
            };
            let hex = w.strip_prefix("0x").unwrap_or(w).replace('_', "");
            let v = u64::from_str_radix(&hex, 16).map_err(|_| AsmError {
                line,
                msg: format!(".word {w} is not a 64-bit hex number"),
            })?;
            words.push(v);
            continue;
        }
        let mut args = Args::parse(line, mnemonic, &rest)?;
        let cmd = command(&mut args)?;
        args.done()?;
        words.extend(cmd.encode());
    }
    Ok(words)
}

impl fmt::Display for Command {
    /// The assembler form of the command (all fields written out, in the
    /// table's order).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let format = self.format();
        f.write_str(format.mnemonic)?;
        for arg in format.args {
            let v = self.arg(arg.name);
            // Plain streams read as they did before windows existed.
            if arg.name == "win" && v == 0 {
                continue;
            }
            let name = named_values(arg.name)
                .and_then(|opts| opts.into_iter().find(|o| o.1 == v))
                .map(|o| o.0.to_string());
            write!(f, " {}={}", arg.name, name.unwrap_or_else(|| v.to_string()))?;
        }
        Ok(())
    }
}

/// A program as text, one command per line; words that do not decode are
/// written as `.word`.
pub fn disassemble(words: &[u64]) -> String {
    let mut out = String::new();
    let mut pc = 0;
    while pc < words.len() {
        match Command::decode(&words[pc..]) {
            Ok((cmd, len)) => {
                out.push_str(&format!("{cmd}\n"));
                pc += len;
            }
            Err(_) => {
                out.push_str(&format!(".word 0x{:016x}\n", words[pc]));
                pc += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::strategy::command;
    use proptest::prelude::*;

    proptest! {
        /// The assembler text of a command assembles back to its words,
        /// and any word sequence survives disassembly and assembly.
        #[test]
        fn text_form_round_trips(cmd in command(), junk in any::<[u64; 3]>()) {
            prop_assert_eq!(assemble(&cmd.to_string()), Ok(cmd.encode()));
            prop_assert_eq!(assemble(&disassemble(&junk)), Ok(junk.to_vec()));
        }
    }

    #[test]
    fn round_trip_and_errors() {
        let text = "LOAD_W addr=0 m=8 k=8  # a tile\n\
                    FORWARD x=0 y=0 n=16 acc=0\n\
                    BACKWARD mode=interleaved dy=0 x=0 dx=208 n=16 acc=1\n\
                    BACKWARD mode=dw dy=0 x=4 dx=0 n=16 acc=0\n\
                    DRAIN dw=352\nUPDATE lr=6\n\
                    REQUANT src=0 dst=gradients addr=3 count=2\nSYNC\nFLUSH_W\n\
                    ACT func=relu src=0 dst=activations addr=64 count=16 lanes=12\n\
                    ACT func=relu_grad src=1 dst=gradients addr=2 count=3 mask=4 lanes=5\nHALT\n\
                    .word 0x0b00000000000000\n";
        let words = assemble(text).unwrap();
        assert_eq!(assemble(&disassemble(&words)).unwrap(), words);
        assert!(disassemble(&words).ends_with(".word 0x0b00000000000000\n"));
        // One past the largest m the field holds.
        let m_field = sysgrad_isa::command::field::TILE_M;
        let too_big = m_field.max() + 1;
        let big_m = format!("LOAD_W addr=0 m={too_big} k=1");
        let big_m_says = format!("m={too_big} does not fit its {}-bit field", m_field.bits);
        for (bad, says) in [
            ("LOADW addr=0 m=1 k=1", "unknown mnemonic `LOADW`"),
            ("LOAD_W addr=0 m=1", "LOAD_W needs k="),
            (big_m.as_str(), big_m_says.as_str()),
            (
                "FORWARD x=0 y=0 n=1 acc=0 z=1",
                "FORWARD has no argument z=",
            ),
            ("BACKWARD mode=both dy=0 n=1", "mode=both is not one of"),
            ("UPDATE lr=x", "lr=x is not a number"),
            (
                "ACT func=gelu src=0 dst=activations addr=0 count=1 lanes=1",
                "func=gelu is not one of identity, relu, relu_grad",
            ),
            (
                "ACT func=relu_grad src=0 dst=gradients addr=0 count=1 lanes=1",
                "ACT needs mask=",
            ),
            ("SYNC\n.word 12 13", "line 2: .word takes one"),
        ] {
            let e = assemble(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
