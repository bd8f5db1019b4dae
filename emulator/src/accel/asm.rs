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

use super::command::{BackwardMode, Command, DataBuffer};
use std::collections::BTreeMap;
use std::fmt;

/// Why a program text was refused: the line and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct AsmError {
    pub line: usize,
    pub msg: String,
}

const MNEMONICS: &str =
    "LOAD_W, FLUSH_W, FORWARD, BACKWARD, DRAIN, UPDATE, REQUANT, SYNC, HALT, .word";

const MODES: [(&str, BackwardMode); 4] = [
    ("dx", BackwardMode::Dx),
    ("dw", BackwardMode::Dw),
    ("sequential", BackwardMode::Sequential),
    ("interleaved", BackwardMode::Interleaved),
];

const DSTS: [(&str, DataBuffer); 2] = [
    ("activations", DataBuffer::Activations),
    ("gradients", DataBuffer::Gradients),
];

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

    fn flag(&mut self, key: &str) -> Result<bool, AsmError> {
        Ok(self.num(key, 1)? == 1)
    }

    fn choice<T: Copy>(&mut self, key: &str, options: &[(&str, T)]) -> Result<T, AsmError> {
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

    fn done(self) -> Result<(), AsmError> {
        match self.values.keys().next() {
            Some(k) => Err(self.err(format!("{} has no argument {k}=", self.mnemonic))),
            None => Ok(()),
        }
    }
}

fn command(a: &mut Args) -> Result<Command, AsmError> {
    fn a16(a: &mut Args, k: &str) -> Result<u16, AsmError> {
        a.num(k, 16).map(|v| v as u16)
    }
    Ok(match a.mnemonic.to_ascii_uppercase().as_str() {
        "LOAD_W" => Command::LoadW {
            addr: a16(a, "addr")?,
            m: a.num("m", 8)? as u8,
            k: a.num("k", 8)? as u8,
        },
        "FLUSH_W" => Command::FlushW,
        "FORWARD" => Command::Forward {
            x_addr: a16(a, "x")?,
            y_addr: a16(a, "y")?,
            n: a16(a, "n")?,
            accumulate: a.flag("acc")?,
        },
        "BACKWARD" => {
            let mode = a.choice("mode", &MODES)?;
            // Ignored fields may be left out (docs/COMMANDS.md).
            let opt = |a: &mut Args, k: &str, used: bool| {
                if used || a.values.contains_key(k) {
                    a16(a, k)
                } else {
                    Ok(0)
                }
            };
            Command::Backward {
                mode,
                dy_addr: a16(a, "dy")?,
                x_addr: opt(a, "x", mode.computes_dw())?,
                dx_addr: opt(a, "dx", mode.computes_dx())?,
                n: a16(a, "n")?,
                accumulate: if mode.computes_dx() || a.values.contains_key("acc") {
                    a.flag("acc")?
                } else {
                    false
                },
            }
        }
        "DRAIN" => Command::Drain {
            dw_addr: a16(a, "dw")?,
        },
        "UPDATE" => Command::Update {
            lr_shift: a.num("lr", 8)? as u8,
        },
        "REQUANT" => Command::Requant {
            src: a16(a, "src")?,
            dst: a.choice("dst", &DSTS)?,
            dst_addr: a16(a, "addr")?,
            count: a16(a, "count")?,
        },
        "SYNC" => Command::Sync,
        "HALT" => Command::Halt,
        other => return Err(a.err(format!("unknown mnemonic `{other}` (one of {MNEMONICS})"))),
    })
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
    /// The assembler form of the command (all fields written out).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let mode_name = |m: BackwardMode| MODES.iter().find(|p| p.1 == m).map_or("?", |p| p.0);
        let dst_name = |d: DataBuffer| DSTS.iter().find(|p| p.1 == d).map_or("?", |p| p.0);
        match *self {
            Command::LoadW { addr, m, k } => write!(f, "LOAD_W addr={addr} m={m} k={k}"),
            Command::Forward {
                x_addr,
                y_addr,
                n,
                accumulate,
            } => write!(
                f,
                "FORWARD x={x_addr} y={y_addr} n={n} acc={}",
                accumulate as u8
            ),
            Command::Backward {
                mode,
                dy_addr,
                x_addr,
                dx_addr,
                n,
                accumulate,
            } => write!(
                f,
                "BACKWARD mode={} dy={dy_addr} x={x_addr} dx={dx_addr} n={n} acc={}",
                mode_name(mode),
                accumulate as u8
            ),
            Command::Drain { dw_addr } => write!(f, "DRAIN dw={dw_addr}"),
            Command::Update { lr_shift } => write!(f, "UPDATE lr={lr_shift}"),
            Command::Requant {
                src,
                dst,
                dst_addr,
                count,
            } => write!(
                f,
                "REQUANT src={src} dst={} addr={dst_addr} count={count}",
                dst_name(dst)
            ),
            other => f.write_str(other.name()),
        }
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

    #[test]
    fn round_trip_and_errors() {
        let text = "LOAD_W addr=0 m=8 k=8  # a tile\n\
                    FORWARD x=0 y=0 n=16 acc=0\n\
                    BACKWARD mode=interleaved dy=0 x=0 dx=208 n=16 acc=1\n\
                    BACKWARD mode=dw dy=0 x=4 dx=0 n=16 acc=0\n\
                    DRAIN dw=352\nUPDATE lr=6\n\
                    REQUANT src=0 dst=gradients addr=3 count=2\nSYNC\nFLUSH_W\nHALT\n\
                    .word 0x0a00000000000000\n";
        let words = assemble(text).unwrap();
        assert_eq!(assemble(&disassemble(&words)).unwrap(), words);
        assert!(disassemble(&words).ends_with(".word 0x0a00000000000000\n"));
        for (bad, says) in [
            ("LOADW addr=0 m=1 k=1", "unknown mnemonic `LOADW`"),
            ("LOAD_W addr=0 m=1", "LOAD_W needs k="),
            (
                "LOAD_W addr=0 m=300 k=1",
                "m=300 does not fit its 8-bit field",
            ),
            (
                "FORWARD x=0 y=0 n=1 acc=0 z=1",
                "FORWARD has no argument z=",
            ),
            ("BACKWARD mode=both dy=0 n=1", "mode=both is not one of"),
            ("UPDATE lr=x", "lr=x is not a number"),
            ("SYNC\n.word 12 13", "line 2: .word takes one"),
        ] {
            let e = assemble(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
