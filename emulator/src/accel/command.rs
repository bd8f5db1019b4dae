//! The command stream: [`Command`] <-> 64-bit words.
//!
//! Every command word carries its opcode in bits 63..56 and fixed fields
//! below it (`docs/COMMANDS.md` has the table). Field widths equal the Rust
//! field types, so every `Command` value encodes and decodes back to itself;
//! range checks that depend on the configuration (tile sizes, addresses,
//! `lr_shift <= 63`) happen when the command is executed, not here.

use super::error::ErrorCode;

/// Which backward passes one BACKWARD command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackwardMode {
    /// dX = W^T dY only (array mode BWD_DX). Ignores `x_addr`.
    Dx = 0,
    /// dW += dY X^T only (array mode BWD_DW). Ignores `dx_addr`, `accumulate`.
    Dw = 1,
    /// Sequential baseline: a BWD_DX pass, then a BWD_DW pass (dY read twice).
    Sequential = 2,
    /// One BWD_IL pass computing both (interleaved arrays only).
    Interleaved = 3,
}

impl BackwardMode {
    pub const ALL: [BackwardMode; 4] = [
        BackwardMode::Dx,
        BackwardMode::Dw,
        BackwardMode::Sequential,
        BackwardMode::Interleaved,
    ];
    pub fn computes_dx(self) -> bool {
        self != BackwardMode::Dw
    }
    pub fn computes_dw(self) -> bool {
        self != BackwardMode::Dx
    }
}

/// The data buffer a REQUANT writes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataBuffer {
    /// The activation buffer (the next layer's X).
    Activations = 0,
    /// The gradient buffer (the previous layer's dY).
    Gradients = 1,
}

/// One controller command. Addresses are line addresses in the buffer the
/// field names (see `docs/COMMANDS.md` for the line layouts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// Shift the m x k W tile at weight lines `addr..addr+k` into the array;
    /// the previous tile, if UPDATE changed it, goes back where it came from.
    LoadW { addr: u16, m: u8, k: u8 },
    /// Shift zeros in: writes back the resident tile if changed, leaves none.
    FlushW,
    /// Stream X lines `x_addr..+n` through the tile; Y to accumulator lines
    /// `y_addr..+n`, added to what is there if `accumulate`.
    Forward {
        x_addr: u16,
        y_addr: u16,
        n: u16,
        accumulate: bool,
    },
    /// Stream dY (gradient lines `dy_addr..+n`) and, for dW, X (activation
    /// lines `x_addr..+n`); dX to accumulator lines `dx_addr..+n`.
    Backward {
        mode: BackwardMode,
        dy_addr: u16,
        x_addr: u16,
        dx_addr: u16,
        n: u16,
        accumulate: bool,
    },
    /// Shift dW of the resident m x k tile out to accumulator lines
    /// `dw_addr..+m` (line j = dW row j, lanes 0..k), clearing it.
    Drain { dw_addr: u16 },
    /// `w -= 2^-lr_shift dW` in every PE, dW cleared; marks the tile changed.
    Update { lr_shift: u8 },
    /// Requantize accumulator lines `src..+count` into `dst` lines
    /// `dst_addr..+count`, one lane per lane, the destination's lane count.
    Requant {
        src: u16,
        dst: DataBuffer,
        dst_addr: u16,
        count: u16,
    },
    /// Fence: counts a sync point the host can observe; no other effect.
    Sync,
    /// Stop; the controller reports `halted`.
    Halt,
}

/// Opcodes, defined with the host interface in the config crate (the
/// generator's decoder uses the same constants).
pub mod opcode {
    pub use sysgrad_config::host::opcode::*;
}

/// A field of `bits` bits at bit `lo`.
#[derive(Clone, Copy)]
struct Field {
    lo: u32,
    bits: u32,
}

const A0: Field = Field { lo: 0, bits: 16 };
const A1: Field = Field { lo: 16, bits: 16 };
const N: Field = Field { lo: 32, bits: 16 };
const FLAG: Field = Field { lo: 48, bits: 1 };
const BWD_MODE: Field = Field { lo: 49, bits: 2 };
const BYTE0: Field = Field { lo: 0, bits: 8 };
const BYTE1: Field = Field { lo: 16, bits: 8 };
const BYTE2: Field = Field { lo: 24, bits: 8 };

impl Field {
    fn mask(self) -> u64 {
        ((1u64 << self.bits) - 1) << self.lo
    }
    fn get(self, word: u64) -> u64 {
        (word & self.mask()) >> self.lo
    }
    fn put(self, value: u64) -> u64 {
        debug_assert!(value < 1 << self.bits);
        value << self.lo
    }
}

fn op(code: u8) -> u64 {
    (code as u64) << 56
}

impl Command {
    /// The assembler mnemonic, as in `docs/COMMANDS.md`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::LoadW { .. } => "LOAD_W",
            Command::FlushW => "FLUSH_W",
            Command::Forward { .. } => "FORWARD",
            Command::Backward { .. } => "BACKWARD",
            Command::Drain { .. } => "DRAIN",
            Command::Update { .. } => "UPDATE",
            Command::Requant { .. } => "REQUANT",
            Command::Sync => "SYNC",
            Command::Halt => "HALT",
        }
    }

    /// The command's words (one, or two for BACKWARD).
    pub fn encode(&self) -> Vec<u64> {
        use opcode::*;
        let u = |v: u16| v as u64;
        match *self {
            Command::LoadW { addr, m, k } => {
                vec![op(LOAD_W) | A0.put(u(addr)) | BYTE1.put(m as u64) | BYTE2.put(k as u64)]
            }
            Command::FlushW => vec![op(FLUSH_W)],
            Command::Forward {
                x_addr,
                y_addr,
                n,
                accumulate,
            } => vec![
                op(FORWARD)
                    | A0.put(u(x_addr))
                    | A1.put(u(y_addr))
                    | N.put(u(n))
                    | FLAG.put(accumulate as u64),
            ],
            Command::Backward {
                mode,
                dy_addr,
                x_addr,
                dx_addr,
                n,
                accumulate,
            } => vec![
                op(BACKWARD)
                    | A0.put(u(dy_addr))
                    | A1.put(u(dx_addr))
                    | N.put(u(n))
                    | FLAG.put(accumulate as u64)
                    | BWD_MODE.put(mode as u64),
                A0.put(u(x_addr)),
            ],
            Command::Drain { dw_addr } => vec![op(DRAIN) | A0.put(u(dw_addr))],
            Command::Update { lr_shift } => vec![op(UPDATE) | BYTE0.put(lr_shift as u64)],
            Command::Requant {
                src,
                dst,
                dst_addr,
                count,
            } => vec![
                op(REQUANT)
                    | A0.put(u(src))
                    | A1.put(u(dst_addr))
                    | N.put(u(count))
                    | FLAG.put(dst as u64),
            ],
            Command::Sync => vec![op(SYNC)],
            Command::Halt => vec![op(HALT)],
        }
    }

    /// Decodes the command starting at `words[0]`; returns it and how many
    /// words it used. Fails, in this order, on an unknown opcode, a command
    /// cut off by the end of `words`, or a set bit outside the opcode's
    /// fields.
    pub fn decode(words: &[u64]) -> Result<(Command, usize), ErrorCode> {
        use opcode::*;
        let &w = words.first().ok_or(ErrorCode::ProgramEnd)?;
        let fields: &[Field] = match (w >> 56) as u8 {
            LOAD_W => &[A0, BYTE1, BYTE2],
            FLUSH_W | SYNC | HALT => &[],
            FORWARD | REQUANT => &[A0, A1, N, FLAG],
            BACKWARD => &[A0, A1, N, FLAG, BWD_MODE],
            DRAIN => &[A0],
            UPDATE => &[BYTE0],
            _ => return Err(ErrorCode::UnknownOpcode),
        };
        // All words of the opcode are fetched before any field is checked.
        let w1 = if (w >> 56) as u8 == BACKWARD {
            Some(*words.get(1).ok_or(ErrorCode::ProgramEnd)?)
        } else {
            None
        };
        check_reserved(w, 0xff << 56, fields)?;
        if let Some(w1) = w1 {
            // The second word has no opcode: all bits but x_addr are 0.
            check_reserved(w1, 0, &[A0])?;
        }
        let a0 = A0.get(w) as u16;
        let a1 = A1.get(w) as u16;
        let n = N.get(w) as u16;
        let flag = FLAG.get(w) == 1;
        let cmd = match (w >> 56) as u8 {
            LOAD_W => Command::LoadW {
                addr: a0,
                m: BYTE1.get(w) as u8,
                k: BYTE2.get(w) as u8,
            },
            FLUSH_W => Command::FlushW,
            FORWARD => Command::Forward {
                x_addr: a0,
                y_addr: a1,
                n,
                accumulate: flag,
            },
            BACKWARD => {
                let cmd = Command::Backward {
                    mode: BackwardMode::ALL[BWD_MODE.get(w) as usize],
                    dy_addr: a0,
                    x_addr: A0.get(w1.unwrap_or(0)) as u16,
                    dx_addr: a1,
                    n,
                    accumulate: flag,
                };
                return Ok((cmd, 2));
            }
            DRAIN => Command::Drain { dw_addr: a0 },
            UPDATE => Command::Update {
                lr_shift: BYTE0.get(w) as u8,
            },
            REQUANT => Command::Requant {
                src: a0,
                dst: if flag {
                    DataBuffer::Gradients
                } else {
                    DataBuffer::Activations
                },
                dst_addr: a1,
                count: n,
            },
            SYNC => Command::Sync,
            _ => Command::Halt,
        };
        Ok((cmd, 1))
    }
}

/// Every bit of `w` outside `fixed` and `fields` must be 0.
fn check_reserved(w: u64, fixed: u64, fields: &[Field]) -> Result<(), ErrorCode> {
    let used = fields.iter().fold(fixed, |m, f| m | f.mask());
    if w & !used != 0 {
        return Err(ErrorCode::ReservedBits);
    }
    Ok(())
}

/// The words of a whole program.
pub fn encode_program(cmds: &[Command]) -> Vec<u64> {
    cmds.iter().flat_map(Command::encode).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn command() -> impl Strategy<Value = Command> {
        let mode = proptest::sample::select(BackwardMode::ALL.to_vec());
        let dst = prop_oneof![Just(DataBuffer::Activations), Just(DataBuffer::Gradients)];
        prop_oneof![
            (any::<u16>(), any::<u8>(), any::<u8>()).prop_map(|(addr, m, k)| Command::LoadW {
                addr,
                m,
                k
            }),
            Just(Command::FlushW),
            (any::<u16>(), any::<u16>(), any::<u16>(), any::<bool>()).prop_map(
                |(x_addr, y_addr, n, accumulate)| Command::Forward {
                    x_addr,
                    y_addr,
                    n,
                    accumulate
                }
            ),
            (mode, any::<[u16; 4]>(), any::<bool>()).prop_map(|(mode, a, accumulate)| {
                Command::Backward {
                    mode,
                    dy_addr: a[0],
                    x_addr: a[1],
                    dx_addr: a[2],
                    n: a[3],
                    accumulate,
                }
            }),
            any::<u16>().prop_map(|dw_addr| Command::Drain { dw_addr }),
            any::<u8>().prop_map(|lr_shift| Command::Update { lr_shift }),
            (any::<u16>(), dst, any::<u16>(), any::<u16>()).prop_map(
                |(src, dst, dst_addr, count)| Command::Requant {
                    src,
                    dst,
                    dst_addr,
                    count
                }
            ),
            Just(Command::Sync),
            Just(Command::Halt),
        ]
    }

    proptest! {
        #[test]
        fn every_command_round_trips(cmd in command()) {
            let words = cmd.encode();
            prop_assert_eq!(Command::decode(&words), Ok((cmd, words.len())));
            // Cutting a command short is always detected.
            prop_assert_eq!(
                Command::decode(&words[..words.len() - 1]),
                Err(ErrorCode::ProgramEnd)
            );
        }

        /// The assembler text of a command assembles back to its words,
        /// and any word sequence survives disassembly and assembly.
        #[test]
        fn text_form_round_trips(cmd in command(), junk in any::<[u64; 3]>()) {
            use crate::accel::asm::{assemble, disassemble};
            prop_assert_eq!(assemble(&cmd.to_string()), Ok(cmd.encode()));
            prop_assert_eq!(assemble(&disassemble(&junk)), Ok(junk.to_vec()));
        }

        /// Any word either decodes to a command that encodes back to the
        /// same word, or is refused: the encoding has no aliases.
        #[test]
        fn decoding_is_injective(w in any::<u64>(), w1 in any::<u64>()) {
            if let Ok((cmd, len)) = Command::decode(&[w, w1]) {
                prop_assert_eq!(cmd.encode(), [w, w1][..len].to_vec());
            }
        }
    }

    #[test]
    fn opcode_zero_and_reserved_bits_are_refused() {
        // A zeroed command memory must not run as a no-op.
        assert_eq!(Command::decode(&[0]), Err(ErrorCode::UnknownOpcode));
        assert_eq!(
            Command::decode(&[0xff << 56]),
            Err(ErrorCode::UnknownOpcode)
        );
        let load = Command::LoadW {
            addr: 1,
            m: 2,
            k: 3,
        }
        .encode()[0];
        assert_eq!(
            Command::decode(&[load | 1 << 40]),
            Err(ErrorCode::ReservedBits)
        );
        let bwd = Command::Backward {
            mode: BackwardMode::Interleaved,
            dy_addr: 0,
            x_addr: 0,
            dx_addr: 0,
            n: 1,
            accumulate: false,
        }
        .encode();
        // The second word may hold nothing but x_addr (no opcode byte).
        assert_eq!(
            Command::decode(&[bwd[0], bwd[1] | op(opcode::BACKWARD)]),
            Err(ErrorCode::ReservedBits)
        );
    }
}
