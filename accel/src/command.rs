//! The command stream: [`Command`] <-> 64-bit words, through the layout
//! table of `sysgrad_isa::command` (the same table the RTL decoder is
//! generated from; `docs/COMMANDS.md` shows it).
//!
//! Field widths equal the Rust field types but for the 9-bit tile sizes
//! (LOAD_W `m`, `k`) and ACT `lanes`, held in `u16` (a 256-wide array
//! loads `m = 256`), so every `Command` whose values fit their fields
//! encodes and decodes back to itself; range checks that depend on the
//! configuration (tile sizes, addresses, `lr_shift <= 63`) happen when the
//! command is executed, not here.

pub use sysgrad_isa::command::ActFunction;
use sysgrad_isa::command::{self as isa, field, format, opcode, Format};
pub use sysgrad_isa::{BackwardMode, DataBuffer, ErrorCode};

pub use crate::window::Window;

/// One controller command. Addresses are line addresses in the buffer the
/// field names (see `docs/COMMANDS.md` for the line layouts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// Shift the m x k W tile at weight lines `addr..addr+k` into the array;
    /// the previous tile, if UPDATE changed it, goes back where it came from.
    /// `m` and `k` are 9 bits (`field::TILE_M`, `TILE_K`): up to 256.
    LoadW { addr: u16, m: u16, k: u16 },
    /// Shift zeros in: writes back the resident tile if changed, leaves none.
    FlushW,
    /// Stream X lines `x_addr..+n` through the tile; Y to accumulator lines
    /// `y_addr..+n`, added to what is there if `accumulate`. With `window`,
    /// X line t is `x_addr` + the window's line of t (zero at padding).
    Forward {
        x_addr: u16,
        y_addr: u16,
        n: u16,
        accumulate: bool,
        window: bool,
    },
    /// Stream dY (gradient lines `dy_addr..+n`) and, for dW, X (activation
    /// lines `x_addr..+n`); dX to accumulator lines `dx_addr..+n`. With
    /// `window`, X and dX lines follow the window (as FORWARD's X).
    Backward {
        mode: BackwardMode,
        dy_addr: u16,
        x_addr: u16,
        dx_addr: u16,
        n: u16,
        accumulate: bool,
        window: bool,
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
    /// The activation unit: accumulator lines `src..+count` requantized,
    /// then `func` applied (for `relu_grad`, gated by activation lines
    /// `mask..+count`), into lanes `0..lanes` of `dst` lines
    /// `dst_addr..+count`; the other lanes keep their words.
    Act {
        func: ActFunction,
        src: u16,
        dst: DataBuffer,
        dst_addr: u16,
        count: u16,
        mask: u16,
        /// 9 bits (`field::LANES`): up to 256 lanes and one more code.
        lanes: u16,
    },
    /// Sets the window that windowed FORWARD and BACKWARD stream through
    /// (the convolution address generator, [`Window`]).
    Window(Window),
    /// Fence: counts a sync point the host can observe; no other effect.
    Sync,
    /// Stop; the controller reports `halted`.
    Halt,
}

impl Command {
    /// The command's layout in the table.
    pub fn format(&self) -> &'static Format {
        let op = match self {
            Command::LoadW { .. } => opcode::LOAD_W,
            Command::FlushW => opcode::FLUSH_W,
            Command::Forward { .. } => opcode::FORWARD,
            Command::Backward { .. } => opcode::BACKWARD,
            Command::Drain { .. } => opcode::DRAIN,
            Command::Update { .. } => opcode::UPDATE,
            Command::Requant { .. } => opcode::REQUANT,
            Command::Act { .. } => opcode::ACT,
            Command::Window(_) => opcode::WINDOW,
            Command::Sync => opcode::SYNC,
            Command::Halt => opcode::HALT,
        };
        format(op).expect("every command has a format")
    }

    /// The assembler mnemonic, as in `docs/COMMANDS.md`.
    pub fn name(&self) -> &'static str {
        self.format().mnemonic
    }

    /// The value of argument `name` (as the table names it).
    pub fn arg(&self, name: &str) -> u64 {
        let u = |v: u16| u64::from(v);
        match (*self, name) {
            (Command::LoadW { addr, .. }, "addr") => u(addr),
            (Command::LoadW { m, .. }, "m") => u(m),
            (Command::LoadW { k, .. }, "k") => u(k),
            (Command::Forward { x_addr, .. }, "x") => u(x_addr),
            (Command::Forward { y_addr, .. }, "y") => u(y_addr),
            (Command::Forward { n, .. } | Command::Backward { n, .. }, "n") => u(n),
            (Command::Forward { accumulate, .. } | Command::Backward { accumulate, .. }, "acc") => {
                accumulate.into()
            }
            (Command::Forward { window, .. } | Command::Backward { window, .. }, "win") => {
                window.into()
            }
            (Command::Backward { mode, .. }, "mode") => mode.code(),
            (Command::Backward { dy_addr, .. }, "dy") => u(dy_addr),
            (Command::Backward { x_addr, .. }, "x") => u(x_addr),
            (Command::Backward { dx_addr, .. }, "dx") => u(dx_addr),
            (Command::Drain { dw_addr }, "dw") => u(dw_addr),
            (Command::Update { lr_shift }, "lr") => lr_shift.into(),
            (Command::Requant { src, .. } | Command::Act { src, .. }, "src") => u(src),
            (Command::Requant { dst, .. } | Command::Act { dst, .. }, "dst") => dst.code(),
            (Command::Requant { dst_addr, .. } | Command::Act { dst_addr, .. }, "addr") => {
                u(dst_addr)
            }
            (Command::Requant { count, .. } | Command::Act { count, .. }, "count") => u(count),
            (Command::Act { func, .. }, "func") => func.code(),
            (Command::Act { mask, .. }, "mask") => u(mask),
            (Command::Act { lanes, .. }, "lanes") => u(lanes),
            (Command::Window(w), name) => w.arg(name),
            (cmd, name) => panic!("{} has no argument {name}", cmd.name()),
        }
    }

    /// The command built from its format and argument values (each value
    /// fits its field, which fits the Rust field type; an ACT `func` is a
    /// valid code, which [`Command::decode`] and the assembler check first).
    pub fn from_args(f: &Format, value: impl Fn(&str) -> u64) -> Command {
        let a16 = |n: &str| value(n) as u16;
        match f.opcode {
            opcode::LOAD_W => Command::LoadW {
                addr: a16("addr"),
                m: a16("m"),
                k: a16("k"),
            },
            opcode::FLUSH_W => Command::FlushW,
            opcode::FORWARD => Command::Forward {
                x_addr: a16("x"),
                y_addr: a16("y"),
                n: a16("n"),
                accumulate: value("acc") == 1,
                window: value("win") == 1,
            },
            opcode::BACKWARD => Command::Backward {
                mode: BackwardMode::from_code(value("mode")),
                dy_addr: a16("dy"),
                x_addr: a16("x"),
                dx_addr: a16("dx"),
                n: a16("n"),
                accumulate: value("acc") == 1,
                window: value("win") == 1,
            },
            opcode::DRAIN => Command::Drain { dw_addr: a16("dw") },
            opcode::UPDATE => Command::Update {
                lr_shift: value("lr") as u8,
            },
            opcode::REQUANT => Command::Requant {
                src: a16("src"),
                dst: DataBuffer::from_code(value("dst")),
                dst_addr: a16("addr"),
                count: a16("count"),
            },
            opcode::ACT => Command::Act {
                func: ActFunction::from_code(value("func")).expect("a valid function code"),
                src: a16("src"),
                dst: DataBuffer::from_code(value("dst")),
                dst_addr: a16("addr"),
                count: a16("count"),
                mask: a16("mask"),
                lanes: a16("lanes"),
            },
            opcode::WINDOW => Command::Window(Window::from_args(value)),
            opcode::SYNC => Command::Sync,
            opcode::HALT => Command::Halt,
            other => unreachable!("opcode {other:#04x} has no command"),
        }
    }

    /// The command's words (one, or two for BACKWARD, ACT and WINDOW).
    pub fn encode(&self) -> Vec<u64> {
        self.format().encode(|name| self.arg(name))
    }

    /// Decodes the command starting at `words[0]`; returns it and how many
    /// words it used. Fails, in this order, on an unknown opcode, a command
    /// cut off by the end of `words`, a set bit outside the opcode's
    /// fields (word 0, then word 1), or ACT's invalid function code 3
    /// (`BAD_FUNCTION`: the first of the checks, and the only one that
    /// needs nothing but the words, so it is made here and a [`Command`]
    /// always holds a valid function).
    pub fn decode(words: &[u64]) -> Result<(Command, usize), ErrorCode> {
        let &w0 = words.first().ok_or(ErrorCode::ProgramEnd)?;
        let f = format(field::OPCODE.get(w0) as u8).ok_or(ErrorCode::UnknownOpcode)?;
        // All words of the opcode are fetched before any field is checked.
        let words = words.get(..f.words()).ok_or(ErrorCode::ProgramEnd)?;
        for (i, &w) in words.iter().enumerate() {
            if w & !f.used_bits(i) != 0 {
                return Err(ErrorCode::ReservedBits);
            }
        }
        if f.opcode == opcode::ACT && ActFunction::from_code(f.value(words, "func")).is_none() {
            return Err(ErrorCode::BadFunction);
        }
        Ok((
            Command::from_args(f, |name| f.value(words, name)),
            f.words(),
        ))
    }
}

/// Words the controller fetches for the command starting with `word`.
pub fn words_of(word: u64) -> usize {
    isa::words_of(word)
}

/// The words of a whole program.
pub fn encode_program(cmds: &[Command]) -> Vec<u64> {
    cmds.iter().flat_map(Command::encode).collect()
}

/// Random commands, for property tests.
#[cfg(test)]
pub(crate) mod strategy {
    use super::*;
    use proptest::prelude::*;

    /// Any command, every field over its whole range.
    pub(crate) fn command() -> impl Strategy<Value = Command> {
        let mode = proptest::sample::select(BackwardMode::ALL.to_vec());
        let dst = || prop_oneof![Just(DataBuffer::Activations), Just(DataBuffer::Gradients)];
        let tile = || 0..=field::TILE_M.max() as u16;
        prop_oneof![
            (any::<u16>(), tile(), tile()).prop_map(|(addr, m, k)| Command::LoadW { addr, m, k }),
            Just(Command::FlushW),
            (any::<[u16; 3]>(), any::<[bool; 2]>()).prop_map(|(a, [accumulate, window])| {
                Command::Forward {
                    x_addr: a[0],
                    y_addr: a[1],
                    n: a[2],
                    accumulate,
                    window,
                }
            }),
            (mode, any::<[u16; 4]>(), any::<[bool; 2]>()).prop_map(
                |(mode, a, [accumulate, window])| Command::Backward {
                    mode,
                    dy_addr: a[0],
                    x_addr: a[1],
                    dx_addr: a[2],
                    n: a[3],
                    accumulate,
                    window,
                }
            ),
            crate::window::strategy::window().prop_map(Command::Window),
            any::<u16>().prop_map(|dw_addr| Command::Drain { dw_addr }),
            any::<u8>().prop_map(|lr_shift| Command::Update { lr_shift }),
            (any::<u16>(), dst(), any::<u16>(), any::<u16>()).prop_map(
                |(src, dst, dst_addr, count)| Command::Requant {
                    src,
                    dst,
                    dst_addr,
                    count
                }
            ),
            (
                proptest::sample::select(ActFunction::ALL.to_vec()),
                any::<[u16; 4]>(),
                dst(),
                0..=field::LANES.max() as u16
            )
                .prop_map(|(func, a, dst, lanes)| Command::Act {
                    func,
                    src: a[0],
                    dst,
                    dst_addr: a[1],
                    count: a[2],
                    mask: a[3],
                    lanes,
                }),
            Just(Command::Sync),
            Just(Command::Halt),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::strategy::command;
    use super::*;
    use proptest::prelude::*;

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
            window: false,
        }
        .encode();
        let act = Command::Act {
            func: ActFunction::Relu,
            src: 0,
            dst: DataBuffer::Activations,
            dst_addr: 0,
            count: 1,
            mask: 0,
            lanes: 1,
        }
        .encode();
        assert_eq!(
            Command::decode(&[act[0] | field::ACT_FUNC.put(3), act[1]]),
            Err(ErrorCode::BadFunction)
        );
        // Reserved bits come first, and a cut-off command before either.
        assert_eq!(
            Command::decode(&[act[0] | field::ACT_FUNC.put(3), act[1] | 1 << 40]),
            Err(ErrorCode::ReservedBits)
        );
        assert_eq!(
            Command::decode(&[act[0] | field::ACT_FUNC.put(3)]),
            Err(ErrorCode::ProgramEnd)
        );
        // The second word may hold nothing but x_addr (no opcode byte).
        assert_eq!(
            Command::decode(&[bwd[0], bwd[1] | field::OPCODE.put(opcode::BACKWARD.into())]),
            Err(ErrorCode::ReservedBits)
        );
    }
}
