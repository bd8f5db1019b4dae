//! Command words (`docs/COMMANDS.md`, Command words): the opcodes, where
//! each field sits, which fields each command has and how it spells them
//! in the assembler. The emulator's encoder and decoder, the assembler and
//! the RTL decoder are all derived from [`FORMATS`].
//!
//! Fields sit at a few shared positions ([`field`]), so the RTL slices each
//! position once and every command reads its arguments from there.

/// Width of a command word (and of a DMA beat).
pub const WORD_BITS: u32 = 64;

/// Bits of a tile size (LOAD_W `m`, `k`): enough for `MAX_DIM`.
pub const TILE_BITS: u32 = sysgrad_config::MAX_DIM.ilog2() + 1;

/// `bits` bits of a command word starting at bit `lo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Field {
    pub lo: u32,
    pub bits: u32,
}

impl Field {
    /// The highest bit of the field.
    pub const fn hi(self) -> u32 {
        self.lo + self.bits - 1
    }
    /// The field's bits set, all others clear.
    pub const fn mask(self) -> u64 {
        (u64::MAX >> (64 - self.bits)) << self.lo
    }
    /// The largest value the field holds.
    pub const fn max(self) -> u64 {
        u64::MAX >> (64 - self.bits)
    }
    pub fn get(self, word: u64) -> u64 {
        (word & self.mask()) >> self.lo
    }
    /// `value` in place. Values wider than the field are a caller's bug.
    pub fn put(self, value: u64) -> u64 {
        debug_assert!(value <= self.max(), "{value} does not fit {self:?}");
        (value << self.lo) & self.mask()
    }
}

/// The field positions.
pub mod field {
    use super::Field;

    /// Bits 63..56: the opcode (word 0 only).
    pub const OPCODE: Field = Field { lo: 56, bits: 8 };
    /// The first line address: LOAD_W `addr`, FORWARD `x`, BACKWARD `dy`,
    /// DRAIN `dw`, REQUANT `src`.
    pub const ADDR_A: Field = Field { lo: 0, bits: 16 };
    /// The second line address: FORWARD `y`, BACKWARD `dx`, REQUANT `addr`.
    pub const ADDR_B: Field = Field { lo: 16, bits: 16 };
    /// Stream length: FORWARD / BACKWARD `n`, REQUANT `count`.
    pub const LENGTH: Field = Field { lo: 32, bits: 16 };
    /// FORWARD / BACKWARD `acc`, REQUANT `dst`.
    pub const FLAG: Field = Field { lo: 48, bits: 1 };
    /// BACKWARD `mode` ([`super::BackwardMode`]).
    pub const BACKWARD_MODE: Field = Field { lo: 49, bits: 2 };
    /// LOAD_W tile rows of W (array columns used).
    pub const TILE_M: Field = Field {
        lo: 16,
        bits: super::TILE_BITS,
    };
    /// LOAD_W tile columns of W (array rows used), right above `m`.
    pub const TILE_K: Field = Field {
        lo: TILE_M.lo + TILE_M.bits,
        bits: super::TILE_BITS,
    };
    /// UPDATE `lr` (at most 63: the array's port is 6 bits).
    pub const LR_SHIFT: Field = Field { lo: 0, bits: 8 };
    /// BACKWARD's second word: the X line address.
    pub const X_ADDR: Field = Field { lo: 0, bits: 16 };
    /// ACT `func` ([`super::ActFunction`]): BACKWARD's `mode` bits, so the
    /// RTL slices one position for both.
    pub const ACT_FUNC: Field = BACKWARD_MODE;
    /// ACT's second word: the mask's line address (activations).
    pub const MASK_ADDR: Field = X_ADDR;
    /// ACT's second word: lanes written, at LOAD_W `m`'s bits.
    pub const LANES: Field = TILE_M;
    /// FORWARD / BACKWARD `win`: X (and BACKWARD's dX) lines follow the
    /// window set by WINDOW instead of `base + t`.
    pub const WIN: Field = Field { lo: 51, bits: 1 };
    /// WINDOW: the input image's width and height in pixels.
    pub const WIN_W: Field = Field { lo: 0, bits: 10 };
    pub const WIN_H: Field = Field { lo: 10, bits: 10 };
    /// WINDOW: the output's width and height (positions per image).
    pub const WIN_OW: Field = Field { lo: 20, bits: 10 };
    pub const WIN_OH: Field = Field { lo: 30, bits: 10 };
    /// WINDOW: the stride, the kernel element's row and column, the padding.
    pub const WIN_STRIDE: Field = Field { lo: 40, bits: 4 };
    pub const WIN_KY: Field = Field { lo: 44, bits: 4 };
    pub const WIN_KX: Field = Field { lo: 48, bits: 4 };
    pub const WIN_PAD: Field = Field { lo: 52, bits: 4 };
    /// WINDOW's second word: images in the stream.
    pub const WIN_IMAGES: Field = X_ADDR;
}

/// Opcodes (bits 63..56). 0x00 and 0x0C..=0xFF are invalid, so that running
/// into zeroed command memory stops the controller.
pub mod opcode {
    pub const LOAD_W: u8 = 0x01;
    pub const FLUSH_W: u8 = 0x02;
    pub const FORWARD: u8 = 0x03;
    pub const BACKWARD: u8 = 0x04;
    pub const DRAIN: u8 = 0x05;
    pub const UPDATE: u8 = 0x06;
    pub const REQUANT: u8 = 0x07;
    pub const SYNC: u8 = 0x08;
    pub const HALT: u8 = 0x09;
    pub const ACT: u8 = 0x0A;
    pub const WINDOW: u8 = 0x0B;
}

/// One argument of a command: its assembler name, the word it is in and
/// its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    pub name: &'static str,
    pub word: usize,
    pub field: Field,
}

const fn arg(name: &'static str, field: Field) -> Arg {
    Arg {
        name,
        word: 0,
        field,
    }
}

/// The layout of one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub opcode: u8,
    /// As in `docs/COMMANDS.md` and the assembler.
    pub mnemonic: &'static str,
    pub args: &'static [Arg],
}

impl Format {
    /// Words of the command: one, or two if an argument lives in word 1.
    pub fn words(&self) -> usize {
        1 + self.args.iter().map(|a| a.word).max().unwrap_or(0)
    }

    /// The bits of `word` that may be set: the opcode (word 0) and the
    /// arguments' fields. Every other bit is reserved and must be 0.
    pub fn used_bits(&self, word: usize) -> u64 {
        let opcode = if word == 0 { field::OPCODE.mask() } else { 0 };
        self.args
            .iter()
            .filter(|a| a.word == word)
            .fold(opcode, |m, a| m | a.field.mask())
    }

    /// The argument called `name`.
    pub fn arg(&self, name: &str) -> Option<&'static Arg> {
        self.args.iter().find(|a| a.name == name)
    }

    /// The name used for the opcode in the Verilog, e.g. `OP_LOAD_W`.
    pub fn verilog_name(&self) -> String {
        format!("OP_{}", self.mnemonic)
    }
}

use field::*;

/// Every command, in opcode order.
pub const FORMATS: [Format; 11] = [
    Format {
        opcode: opcode::LOAD_W,
        mnemonic: "LOAD_W",
        args: &[arg("addr", ADDR_A), arg("m", TILE_M), arg("k", TILE_K)],
    },
    Format {
        opcode: opcode::FLUSH_W,
        mnemonic: "FLUSH_W",
        args: &[],
    },
    Format {
        opcode: opcode::FORWARD,
        mnemonic: "FORWARD",
        args: &[
            arg("x", ADDR_A),
            arg("y", ADDR_B),
            arg("n", LENGTH),
            arg("acc", FLAG),
            arg("win", WIN),
        ],
    },
    Format {
        opcode: opcode::BACKWARD,
        mnemonic: "BACKWARD",
        args: &[
            arg("mode", BACKWARD_MODE),
            arg("dy", ADDR_A),
            Arg {
                name: "x",
                word: 1,
                field: X_ADDR,
            },
            arg("dx", ADDR_B),
            arg("n", LENGTH),
            arg("acc", FLAG),
            arg("win", WIN),
        ],
    },
    Format {
        opcode: opcode::DRAIN,
        mnemonic: "DRAIN",
        args: &[arg("dw", ADDR_A)],
    },
    Format {
        opcode: opcode::UPDATE,
        mnemonic: "UPDATE",
        args: &[arg("lr", LR_SHIFT)],
    },
    Format {
        opcode: opcode::REQUANT,
        mnemonic: "REQUANT",
        args: &[
            arg("src", ADDR_A),
            arg("dst", FLAG),
            arg("addr", ADDR_B),
            arg("count", LENGTH),
        ],
    },
    Format {
        opcode: opcode::SYNC,
        mnemonic: "SYNC",
        args: &[],
    },
    Format {
        opcode: opcode::HALT,
        mnemonic: "HALT",
        args: &[],
    },
    Format {
        opcode: opcode::ACT,
        mnemonic: "ACT",
        args: &[
            arg("func", ACT_FUNC),
            arg("src", ADDR_A),
            arg("dst", FLAG),
            arg("addr", ADDR_B),
            arg("count", LENGTH),
            Arg {
                name: "mask",
                word: 1,
                field: MASK_ADDR,
            },
            Arg {
                name: "lanes",
                word: 1,
                field: LANES,
            },
        ],
    },
    Format {
        opcode: opcode::WINDOW,
        mnemonic: "WINDOW",
        args: &[
            arg("w", WIN_W),
            arg("h", WIN_H),
            arg("ow", WIN_OW),
            arg("oh", WIN_OH),
            arg("stride", WIN_STRIDE),
            arg("ky", WIN_KY),
            arg("kx", WIN_KX),
            arg("pad", WIN_PAD),
            Arg {
                name: "images",
                word: 1,
                field: WIN_IMAGES,
            },
        ],
    },
];

impl Format {
    /// The command's words from its argument values, given by name in
    /// `value` (every argument of the format is asked for once).
    pub fn encode(&self, value: impl Fn(&str) -> u64) -> Vec<u64> {
        let mut words = vec![0u64; self.words()];
        words[0] = field::OPCODE.put(self.opcode.into());
        for a in self.args {
            words[a.word] |= a.field.put(value(a.name));
        }
        words
    }

    /// The value of argument `name` in `words` (which hold the whole command).
    pub fn value(&self, words: &[u64], name: &str) -> u64 {
        let a = self
            .arg(name)
            .unwrap_or_else(|| panic!("{} has no argument {name}", self.mnemonic));
        a.field.get(words[a.word])
    }
}

/// The format of `opcode`, if it is one.
pub fn format(opcode: u8) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.opcode == opcode)
}

/// The format called `mnemonic` (any case).
pub fn format_named(mnemonic: &str) -> Option<&'static Format> {
    FORMATS
        .iter()
        .find(|f| f.mnemonic.eq_ignore_ascii_case(mnemonic))
}

/// Words the controller fetches for a command starting with `word`: the
/// opcode's length, or one for an invalid opcode.
pub fn words_of(word: u64) -> usize {
    format(field::OPCODE.get(word) as u8).map_or(1, Format::words)
}

/// The command table of `docs/COMMANDS.md` (a test keeps the page in step):
/// opcode, mnemonic with its assembler arguments, words, and each field's bits.
pub fn markdown_table() -> String {
    let mut s = String::from("| opcode | command | words | fields (bits) |\n|---|---|---|---|\n");
    for f in &FORMATS {
        let names: Vec<&str> = f.args.iter().map(|a| a.name).collect();
        let command = [f.mnemonic]
            .into_iter()
            .chain(names)
            .collect::<Vec<_>>()
            .join(" ");
        let field = |a: &Arg| match a.field.bits {
            1 => format!("{} [{}]", a.name, a.field.lo),
            _ => format!("{} [{}:{}]", a.name, a.field.hi(), a.field.lo),
        };
        let word = |w: usize| {
            let v: Vec<String> = f.args.iter().filter(|a| a.word == w).map(field).collect();
            v.join(", ")
        };
        let fields = match f.words() {
            _ if f.args.is_empty() => "none".to_string(),
            1 => word(0),
            n => (0..n)
                .map(|w| format!("word {w}: {}", word(w)))
                .collect::<Vec<_>>()
                .join("; "),
        };
        s.push_str(&format!(
            "| `0x{:02X}` | `{command}` | {} | {fields} |\n",
            f.opcode,
            f.words()
        ));
    }
    s
}

/// Which passes one BACKWARD command runs (its `mode` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackwardMode {
    /// dX = W^T dY only (array mode BWD_DX). Ignores `x`.
    Dx = 0,
    /// dW += dY X^T only (array mode BWD_DW). Ignores `dx` and `acc`.
    Dw = 1,
    /// Sequential baseline: a BWD_DX pass, then a BWD_DW pass (dY read twice).
    Sequential = 2,
    /// One BWD_IL pass computing both (interleaved arrays only).
    Interleaved = 3,
}

impl BackwardMode {
    /// Every mode, in code order (the field has no invalid value).
    pub const ALL: [BackwardMode; 4] = [
        BackwardMode::Dx,
        BackwardMode::Dw,
        BackwardMode::Sequential,
        BackwardMode::Interleaved,
    ];
    pub fn code(self) -> u64 {
        self as u64
    }
    pub fn from_code(code: u64) -> BackwardMode {
        BackwardMode::ALL[code as usize & 3]
    }
    /// The assembler's name.
    pub fn name(self) -> &'static str {
        match self {
            BackwardMode::Dx => "dx",
            BackwardMode::Dw => "dw",
            BackwardMode::Sequential => "sequential",
            BackwardMode::Interleaved => "interleaved",
        }
    }
    pub fn computes_dx(self) -> bool {
        self != BackwardMode::Dw
    }
    pub fn computes_dw(self) -> bool {
        self != BackwardMode::Dx
    }
    /// The array mode of each pass, in order.
    pub fn passes(self) -> &'static [crate::Mode] {
        use crate::Mode;
        match self {
            BackwardMode::Dx => &[Mode::BwdDx],
            BackwardMode::Dw => &[Mode::BwdDw],
            BackwardMode::Sequential => &[Mode::BwdDx, Mode::BwdDw],
            BackwardMode::Interleaved => &[Mode::BwdIl],
        }
    }
}

/// What ACT's activation unit applies to each requantized word (its `func`
/// field; code 3 is invalid: `BAD_FUNCTION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActFunction {
    /// The requantized word itself (REQUANT restricted to `lanes`).
    Identity = 0,
    /// `max(v, 0)`: a ReLU layer's forward output.
    Relu = 1,
    /// `v` where the mask word (the ReLU's output, in the activation
    /// buffer) is positive, else 0: a ReLU layer's backward pass. Writes
    /// the gradient buffer only.
    ReluGrad = 2,
}

impl ActFunction {
    /// Every valid function, in code order.
    pub const ALL: [ActFunction; 3] = [
        ActFunction::Identity,
        ActFunction::Relu,
        ActFunction::ReluGrad,
    ];
    pub fn code(self) -> u64 {
        self as u64
    }
    /// The function of `code`, `None` for the invalid code 3.
    pub fn from_code(code: u64) -> Option<ActFunction> {
        ActFunction::ALL.into_iter().find(|f| f.code() == code)
    }
    /// The assembler's name.
    pub fn name(self) -> &'static str {
        match self {
            ActFunction::Identity => "identity",
            ActFunction::Relu => "relu",
            ActFunction::ReluGrad => "relu_grad",
        }
    }
    /// Whether it reads a mask line from the activation buffer.
    pub fn reads_mask(self) -> bool {
        self == ActFunction::ReluGrad
    }
    /// Whether it may write `dst` (a gradient gate writes gradients only).
    pub fn may_write(self, dst: DataBuffer) -> bool {
        !(self.reads_mask() && dst == DataBuffer::Activations)
    }
}

/// The data buffer a REQUANT writes into (its `dst` flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataBuffer {
    /// The activation buffer (the next layer's X).
    Activations = 0,
    /// The gradient buffer (the previous layer's dY).
    Gradients = 1,
}

impl DataBuffer {
    pub const ALL: [DataBuffer; 2] = [DataBuffer::Activations, DataBuffer::Gradients];
    pub fn code(self) -> u64 {
        self as u64
    }
    pub fn from_code(code: u64) -> DataBuffer {
        DataBuffer::ALL[code as usize & 1]
    }
    /// The assembler's name.
    pub fn name(self) -> &'static str {
        match self {
            DataBuffer::Activations => "activations",
            DataBuffer::Gradients => "gradients",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_in_opcode_order_and_fields_do_not_overlap() {
        for (i, f) in FORMATS.iter().enumerate() {
            assert_eq!(usize::from(f.opcode), i + 1, "{}", f.mnemonic);
            for word in 0..f.words() {
                let mut seen = if word == 0 { OPCODE.mask() } else { 0 };
                for a in f.args.iter().filter(|a| a.word == word) {
                    assert_eq!(seen & a.field.mask(), 0, "{} {}", f.mnemonic, a.name);
                    seen |= a.field.mask();
                }
            }
        }
        assert_eq!(format(opcode::BACKWARD).unwrap().words(), 2);
        assert_eq!(format(opcode::ACT).unwrap().words(), 2);
        // No command is longer than two words (the RTL fetches at most
        // one word after the opcode's).
        assert!(FORMATS.iter().all(|f| f.words() <= 2));
        assert_eq!(words_of(0), 1);
    }

    #[test]
    fn commands_md_shows_the_table() {
        let doc = include_str!("../../docs/COMMANDS.md");
        assert!(
            doc.contains(&markdown_table()),
            "docs/COMMANDS.md is out of date; its command table should read:\n{}",
            markdown_table()
        );
    }

    #[test]
    fn fields_put_and_get() {
        assert_eq!(LENGTH.mask(), 0xffff << 32);
        assert_eq!(LENGTH.get(LENGTH.put(0xbeef) | 1), 0xbeef);
        assert_eq!(OPCODE.hi(), 63);
        assert_eq!(FLAG.max(), 1);
    }
}
