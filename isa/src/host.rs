//! The host interface of the accelerator (`sa_accel`): AXI4-Lite register
//! offsets, DMA targets, status bits and the hardware counters. The
//! generator builds its register decoder from these tables, the emulator
//! computes the same counters and the testbench drives the same offsets,
//! so the register map is written down once. `docs/HOST.md` explains it.

use sysgrad_config::float::{FloatKind, FP32};
use sysgrad_config::{ArrayConfig, Numbers};

/// Width of an AXI4-Lite register and of its data bus.
pub const AXIL_DATA_BITS: u32 = 32;
/// Byte-address bits of the AXI4-Lite port.
pub const AXIL_ADDR_BITS: u32 = 12;
/// `TDATA` width of both AXI4-Streams: one buffer word or command per beat.
pub const STREAM_BITS: u32 = crate::command::WORD_BITS;
/// Read-only `ID` register value: "SG" and interface version 6 (version 2
/// widened the `SHAPE` fields for arrays up to 256 x 256, version 3 added
/// `COUNTER_WIDTH`, version 4 `PROG_START`, version 5 WINDOW, version 6
/// `FORMAT` and the float formats).
pub const ID_VALUE: u32 = 0x5347_0006;

/// Bits a counter register pair can show: the widest counter
/// (`host.counter_bits` in the config), read as bits 31:0 and 47:32.
pub const MAX_COUNTER_BITS: u32 = *sysgrad_config::COUNTER_BITS.end();

/// What a counter register of `cfg` reads after `count` events: the count
/// modulo `2^counter_bits` (0 without counters). The emulator and the
/// host-side counts go through this to be compared with the RTL's.
pub fn counter_register(cfg: &ArrayConfig, count: u64) -> u64 {
    count & ((1u64 << cfg.counter_bits()) - 1)
}

/// The fields of the read-only `SHAPE` register, low to high, each as wide
/// as the largest value it holds.
pub mod shape {
    use crate::command::{Field, TILE_BITS};
    use sysgrad_config::{ArrayConfig, ACC_BITS, IN_BITS};

    const fn above(f: Field, bits: u32) -> Field {
        Field {
            lo: f.lo + f.bits,
            bits,
        }
    }
    /// Rows R (1..=MAX_DIM).
    pub const ROWS: Field = Field {
        lo: 0,
        bits: TILE_BITS,
    };
    /// Columns C.
    pub const COLS: Field = above(ROWS, TILE_BITS);
    /// Data width DW.
    pub const IN_BITS_FIELD: Field = above(COLS, (*IN_BITS.end()).ilog2() + 1);
    /// Accumulator width AW.
    pub const ACC_BITS_FIELD: Field = above(IN_BITS_FIELD, (*ACC_BITS.end()).ilog2() + 1);
    /// 1 if the array has the interleaved PE.
    pub const INTERLEAVED: Field = above(ACC_BITS_FIELD, 1);
    /// 1 if the array is densely pipelined.
    pub const DENSE: Field = above(INTERLEAVED, 1);
    /// 1 if the PEs have a multiplier register (every pass and result
    /// latency one cycle longer).
    pub const MUL_REG: Field = above(DENSE, 1);
    /// Every field, high to low, with its name in the RTL.
    pub const FIELDS: [(&str, Field); 7] = [
        ("mul_reg", MUL_REG),
        ("dense", DENSE),
        ("interleaved", INTERLEAVED),
        ("acc_bits", ACC_BITS_FIELD),
        ("in_bits", IN_BITS_FIELD),
        ("cols", COLS),
        ("rows", ROWS),
    ];
    const _: () = assert!(MUL_REG.lo + MUL_REG.bits <= super::AXIL_DATA_BITS);

    /// The register's value for `cfg`.
    pub fn value(cfg: &ArrayConfig) -> u32 {
        let f = cfg.format();
        let v = ROWS.put(cfg.rows() as u64)
            | COLS.put(cfg.cols() as u64)
            | IN_BITS_FIELD.put(f.in_bits.into())
            | ACC_BITS_FIELD.put(f.acc_bits.into())
            | INTERLEAVED.put(cfg.interleaved().into())
            | DENSE.put(cfg.dense().into())
            | MUL_REG.put(cfg.multiplier_register().into());
        v as u32
    }
}

/// The fields of the read-only `FORMAT` register, low to high: what the
/// words mean (`docs/HOST.md`), which `SHAPE`'s widths do not say.
pub mod format {
    use crate::command::Field;
    use sysgrad_config::float::FloatKind;
    use sysgrad_config::{ArrayConfig, Numbers, IN_BITS};

    const fn above(f: Field, bits: u32) -> Field {
        Field {
            lo: f.lo + f.bits,
            bits,
        }
    }
    /// 0 fixed point, 1 floating point.
    pub const KIND: Field = Field { lo: 0, bits: 1 };
    /// 1 if the in-PE update rounds stochastically.
    pub const STOCHASTIC: Field = above(KIND, 1);
    /// Fixed point's fractional bits (0 in float).
    pub const FRAC: Field = above(STOCHASTIC, (*IN_BITS.end() - 1).ilog2() + 1);
    /// The weights' float format ([`kind_code`]; 0 in fixed point).
    pub const WEIGHTS: Field = above(FRAC, 2);
    /// The activations' float format.
    pub const ACTIVATIONS: Field = above(WEIGHTS, 2);
    /// The gradients' float format.
    pub const GRADIENTS: Field = above(ACTIVATIONS, 2);
    /// Every field, high to low, with its name in the RTL.
    pub const FIELDS: [(&str, Field); 6] = [
        ("gradients", GRADIENTS),
        ("activations", ACTIVATIONS),
        ("weights", WEIGHTS),
        ("frac_bits", FRAC),
        ("stochastic", STOCHASTIC),
        ("kind", KIND),
    ];
    const _: () = assert!(GRADIENTS.lo + GRADIENTS.bits <= super::AXIL_DATA_BITS);

    /// A float format's code in the register: its place in
    /// [`FloatKind::ALL`] (bf16 0, E4M3 1, E5M2 2).
    pub fn kind_code(k: FloatKind) -> u64 {
        FloatKind::ALL
            .iter()
            .position(|&x| x == k)
            .expect("a float format") as u64
    }

    /// The register's value for `cfg`.
    pub fn value(cfg: &ArrayConfig) -> u32 {
        let n = cfg.numbers();
        let stochastic = STOCHASTIC.put(n.stochastic_seed().is_some().into());
        let v = match n {
            Numbers::Fixed(f) => FRAC.put(f.widths.frac_bits.into()),
            Numbers::Float(f) => {
                KIND.put(1)
                    | WEIGHTS.put(kind_code(f.weights))
                    | ACTIVATIONS.put(kind_code(f.activations))
                    | GRADIENTS.put(kind_code(f.gradients))
            }
        };
        (v | stochastic) as u32
    }
}

/// What a buffer word is as an integer (`docs/COMMANDS.md`, Buffers): a
/// two's-complement value in fixed point, an unsigned bit pattern of the
/// buffer's format in floating point. The emulator's buffers, the DMA's
/// value check and the testbench's reading of RTL words all go through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// A signed value of this many bits.
    Signed(u32),
    /// A bit pattern of this many bits (never negative).
    Pattern(u32),
}

impl std::fmt::Display for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Word::Signed(bits) => write!(f, "a signed {bits}-bit value"),
            Word::Pattern(bits) => write!(f, "a {bits}-bit pattern, 0..2^{bits}"),
        }
    }
}

impl Word {
    /// Whether `v` is a word.
    pub fn fits(self, v: i64) -> bool {
        match self {
            Word::Signed(bits) => sysgrad_config::fixed::fits(v, bits),
            Word::Pattern(bits) => bits >= 63 || (0..1i64 << bits).contains(&v),
        }
    }

    /// What a DMA write of `v` stores: `v` if it fits, else saturated
    /// (signed) or its low bits (a pattern).
    pub fn stored(self, v: i64) -> i64 {
        match self {
            Word::Signed(bits) => sysgrad_config::fixed::sat(v, bits),
            // A pattern keeps its low bits, whatever is above them.
            Word::Pattern(_) => self.from_raw(v as u64),
        }
    }

    /// The word whose low bits are `raw`'s (bits above them ignored):
    /// sign-extended, or zero-extended for a pattern.
    pub fn from_raw(self, raw: u64) -> i64 {
        match self {
            Word::Signed(bits) if bits >= 64 => raw as i64,
            Word::Signed(bits) => ((raw << (64 - bits)) as i64) >> (64 - bits),
            Word::Pattern(bits) if bits >= 64 => raw as i64,
            Word::Pattern(bits) => (raw & ((1u64 << bits) - 1)) as i64,
        }
    }
}

/// Byte offsets of the control and status registers.
pub mod reg {
    /// R: [`super::ID_VALUE`].
    pub const ID: u32 = 0x000;
    /// R: rows [8:0], cols [17:9], in_bits [22:18], acc_bits [28:23],
    /// interleaved [29], dense [30], mul_reg [31] (see [`super::shape`]).
    pub const SHAPE: u32 = 0x004;
    /// W: bit 0 START (run the program from word `PROG_START`), bit 1 CLEAR (zero every counter).
    pub const CTRL: u32 = 0x008;
    /// R: see [`super::status`].
    pub const STATUS: u32 = 0x00C;
    /// R: word index of the faulting command (or of the HALT that stopped
    /// the run), from word 0 of command memory.
    pub const PC: u32 = 0x010;
    /// RW: number of valid words in command memory; fetching past it is `PROGRAM_END`.
    pub const PROG_LEN: u32 = 0x014;
    /// R: width of every counter, `host.counter_bits` (0: no counters,
    /// every counter register reads 0).
    pub const COUNTER_WIDTH: u32 = 0x018;
    /// RW: the word START runs from (reset 0). `PROG_LEN` stays the
    /// absolute end, so `PROG_START >= PROG_LEN` is `PROGRAM_END` at the
    /// first fetch. Written as `PROG_LEN` is (not while running, at most
    /// the command memory's depth).
    pub const PROG_START: u32 = 0x01C;
    /// RW: DMA target, see [`super::DmaTarget`].
    pub const DMA_TARGET: u32 = 0x020;
    /// RW: first line (command word) of the transfer.
    pub const DMA_ADDR: u32 = 0x024;
    /// RW: lines (command words) to transfer.
    pub const DMA_COUNT: u32 = 0x028;
    /// W: 1 = write (s_axis -> target), 2 = read (target -> m_axis).
    pub const DMA_CTRL: u32 = 0x02C;
    /// R: depth of the DMA target currently selected, in lines.
    pub const DMA_DEPTH: u32 = 0x030;
    /// R: the number format, see [`super::format`].
    pub const FORMAT: u32 = 0x034;
    /// First counter: counter `i` is at `COUNTERS + 8 i` (bits 31:0) and `+ 4` (bits 47:32).
    pub const COUNTERS: u32 = 0x100;
}

/// Bits of the `CTRL` register.
pub mod ctrl {
    /// Run the program from word `PROG_START` (refused while running or during a DMA).
    pub const START: u32 = 1 << 0;
    /// Zero every counter.
    pub const CLEAR: u32 = 1 << 1;
}

/// `DMA_CTRL` values: the direction, optionally with [`DMA_PACKED`].
pub const DMA_WRITE: u32 = 1;
pub const DMA_READ: u32 = 2;
/// `DMA_CTRL` bit 2: pack [`lanes_per_beat`] lanes into each beat.
pub const DMA_PACKED: u32 = 4;

/// Lanes a packed DMA beat carries for words of `word_bits`: as many as
/// fit 64 bits (4 of 16-bit data, 1 of a 40-bit accumulator, 1 command).
pub fn lanes_per_beat(word_bits: u32) -> usize {
    (STREAM_BITS / word_bits).max(1) as usize
}

/// Bits of the `STATUS` register.
pub mod status {
    /// The controller is running a program.
    pub const RUNNING: u32 = 1 << 0;
    /// The last run stopped at a HALT.
    pub const HALTED: u32 = 1 << 1;
    /// The last run stopped at a bad command; the code is in [`ERROR_SHIFT`].
    pub const FAULTED: u32 = 1 << 2;
    /// A DMA transfer is in progress.
    pub const DMA_BUSY: u32 = 1 << 3;
    /// Command error code (`docs/COMMANDS.md`), bits 15:8.
    pub const ERROR_SHIFT: u32 = 8;
    /// DMA error code ([`super::DmaError`]), bits 23:16; cleared by the next DMA start.
    pub const DMA_ERROR_SHIFT: u32 = 16;
}

/// Where a DMA transfer reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DmaTarget {
    Commands = 0,
    Weights = 1,
    Activations = 2,
    Gradients = 3,
    Accumulators = 4,
}

impl DmaTarget {
    pub const ALL: [DmaTarget; 5] = [
        DmaTarget::Commands,
        DmaTarget::Weights,
        DmaTarget::Activations,
        DmaTarget::Gradients,
        DmaTarget::Accumulators,
    ];
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Lanes (banks) of a line: weights and gradients `cols`, activations
    /// `rows`, accumulators `max(rows, cols)`, commands 1.
    pub fn lanes(self, cfg: &ArrayConfig) -> usize {
        let (r, c) = (cfg.rows(), cfg.cols());
        match self {
            DmaTarget::Commands => 1,
            DmaTarget::Weights | DmaTarget::Gradients => c,
            DmaTarget::Activations => r,
            DmaTarget::Accumulators => r.max(c),
        }
    }

    /// Depth in lines, from the config's `[buffers]` section.
    pub fn depth(self, cfg: &ArrayConfig) -> usize {
        let b = cfg.buffers();
        match self {
            DmaTarget::Commands => b.commands,
            DmaTarget::Weights => b.weights,
            DmaTarget::Activations => b.activations,
            DmaTarget::Gradients => b.gradients,
            DmaTarget::Accumulators => b.accumulators,
        }
    }

    /// Stored width of a word: data `in_bits` (DW), accumulators
    /// `acc_bits` (AW), commands 64.
    pub fn word_bits(self, cfg: &ArrayConfig) -> u32 {
        match self {
            DmaTarget::Commands => STREAM_BITS,
            DmaTarget::Accumulators => cfg.format().acc_bits,
            _ => cfg.format().in_bits,
        }
    }

    /// What a word of this target is: a signed value of
    /// [`DmaTarget::word_bits`] in fixed point (commands: the 64-bit word),
    /// in a float format a pattern of the target's format (fp32 for the
    /// accumulators).
    pub fn word(self, cfg: &ArrayConfig) -> Word {
        let Numbers::Float(f) = cfg.numbers() else {
            return Word::Signed(self.word_bits(cfg));
        };
        let bits = |k: FloatKind| k.encoding().bits();
        match self {
            DmaTarget::Commands => Word::Signed(STREAM_BITS),
            DmaTarget::Weights => Word::Pattern(bits(f.weights)),
            DmaTarget::Activations => Word::Pattern(bits(f.activations)),
            DmaTarget::Gradients => Word::Pattern(bits(f.gradients)),
            DmaTarget::Accumulators => Word::Pattern(FP32.bits()),
        }
    }
}

/// Why a DMA request was refused or a beat was not stored as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DmaError {
    /// `DMA_TARGET` is not a [`DmaTarget`]; nothing moved.
    BadTarget = 1,
    /// `DMA_COUNT` is 0 or `DMA_ADDR + DMA_COUNT` passes the target's depth; nothing moved.
    Range = 2,
    /// A written beat did not fit the target's word width: it was stored
    /// saturated and the transfer went on.
    Value = 3,
    /// `DMA_CTRL` was written while the controller runs or a DMA is busy; ignored.
    Busy = 4,
}

/// Declares [`Counter`] from one list: each counter's name and what it
/// counts (the register map's text), in register order.
macro_rules! counters {
    ($($name:ident => $meaning:literal,)*) => {
        /// One hardware counter. Counters count from reset or CLEAR and are
        /// read as two 32-bit registers; read them while nothing runs (they
        /// may move between the two reads otherwise).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Counter {
            $($name,)*
        }

        impl Counter {
            /// Every counter, in register order.
            pub const ALL: [Counter; [$(stringify!($name)),*].len()] = [$(Counter::$name),*];

            /// One line for the register map.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Counter::$name => $meaning,)*
                }
            }
        }
    };
}

counters! {
    RunCycles => "cycles the controller ran (decode and execute)",
    IdleCycles => "run cycles in which the array neither computes, loads, updates nor drains (none: decode, REQUANT and ACT; dense: bubbles and waits)",
    LoadCycles => "cycles that only load weights (none: LOAD cycles; dense: slots without a data wave)",
    FwdCycles => "FWD cycles (dense: FWD waves)",
    DxCycles => "BWD_DX cycles (DX and the first SEQUENTIAL pass; dense: waves)",
    DwCycles => "BWD_DW cycles (DW and the second SEQUENTIAL pass; dense: waves)",
    IlCycles => "BWD_IL cycles (INTERLEAVED; dense: waves)",
    UpdateCycles => "UPDATE cycles",
    DrainCycles => "DRAIN cycles",
    FwdMacs => "useful MACs of FWD (m k per streamed column)",
    DxMacs => "useful MACs of BWD_DX",
    DwMacs => "useful MACs of BWD_DW",
    IlMacs => "useful MACs of BWD_IL (dX and dW: 2 m k per column)",
    LoadWReads => "weight words read by LOAD_W",
    LoadWWrites => "weight words written back (dirty tile)",
    FwdXReads => "activation words read by FORWARD",
    FwdYWrites => "accumulator words written by FORWARD (acc = 0)",
    FwdAccReads => "accumulator words read by FORWARD acc = 1",
    FwdAccWrites => "accumulator words written by FORWARD acc = 1",
    DxDyReads => "gradient words read by BWD_DX passes",
    DxDxWrites => "accumulator words written by BWD_DX passes (acc = 0)",
    DxAccReads => "accumulator words read by BWD_DX passes, acc = 1",
    DxAccWrites => "accumulator words written by BWD_DX passes, acc = 1",
    DwDyReads => "gradient words read by BWD_DW passes",
    DwXReads => "activation words read by BWD_DW passes",
    IlDyReads => "gradient words read by BWD_IL passes",
    IlXReads => "activation words read by BWD_IL passes",
    IlDxWrites => "accumulator words written by BWD_IL passes (acc = 0)",
    IlAccReads => "accumulator words read by BWD_IL passes, acc = 1",
    IlAccWrites => "accumulator words written by BWD_IL passes, acc = 1",
    DrainDwWrites => "accumulator words written by DRAIN",
    DecodeCycles => "decode cycles (one per command word; dense: overlapping the array's work)",
    RequantCycles => "REQUANT cycles (one per line)",
    RequantWords => "words requantized (accumulator reads = data writes)",
    Syncs => "SYNC commands executed",
    Commands => "commands executed (not the faulting one)",
    DmaInBeats => "beats taken from s_axis",
    DmaOutBeats => "beats sent on m_axis",
    DmaInStalls => "cycles a DMA write waited for s_axis_tvalid",
    DmaOutStalls => "cycles m_axis_tvalid waited for m_axis_tready",
    HostIdleCycles => "cycles with neither a run nor a DMA",
    LoadSlots => "weight rows exchanged into the array (none: LOAD cycles; dense: slots, hidden or not)",
    ActCycles => "ACT cycles (one per line through the activation unit)",
    ActWords => "words written by ACT (lanes per line)",
}

impl Counter {
    pub fn index(self) -> usize {
        self as usize
    }

    /// Byte offset of the low half; the high half is at `+ 4`.
    pub fn offset(self) -> u32 {
        reg::COUNTERS + 8 * self as u32
    }

    /// snake_case name, as in the Verilog (`cnt_<name>`) and in reports.
    pub fn name(self) -> String {
        let debug = format!("{self:?}");
        let mut s = String::new();
        for (i, ch) in debug.chars().enumerate() {
            if ch.is_ascii_uppercase() && i > 0 {
                s.push('_');
            }
            s.push(ch.to_ascii_lowercase());
        }
        s
    }

    /// One line for the register map.
    /// The counter rows of the register map in `docs/HOST.md`.
    pub fn markdown_table() -> String {
        let mut s = String::from("| # | offset | counter | counts |\n|---|---|---|---|\n");
        for c in Counter::ALL {
            let host = if c.host_only() {
                " (host side, RTL only)"
            } else {
                ""
            };
            s.push_str(&format!(
                "| {} | `0x{:03X}` | `{}` | {}{host} |\n",
                c.index(),
                c.offset(),
                c.name(),
                c.meaning()
            ));
        }
        s
    }

    /// Whether the counter is about the host interface, which the
    /// emulator does not model (its figures depend on the host's timing).
    pub fn host_only(self) -> bool {
        use Counter::*;
        matches!(
            self,
            DmaInBeats | DmaOutBeats | DmaInStalls | DmaOutStalls | HostIdleCycles
        )
    }

    /// What a co-simulation checks the RTL's value against.
    pub fn reference(self) -> CounterReference {
        use Counter::*;
        match self {
            DmaInBeats | DmaOutBeats => CounterReference::HostTally,
            c if c.host_only() => CounterReference::Unchecked,
            _ => CounterReference::Emulator,
        }
    }
}

/// Where the expected value of a counter comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterReference {
    /// The emulator computes it (`Accelerator::counter`).
    Emulator,
    /// The host counts what it sent and took itself (the DMA beats).
    HostTally,
    /// It depends on the host's timing (stalls, idle cycles): not compared.
    Unchecked,
}

impl CounterReference {
    /// How many of the counters a co-simulation checks against `self`.
    pub fn count(self) -> usize {
        Counter::ALL
            .iter()
            .filter(|c| c.reference() == self)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_listed_in_index_order_and_fit_the_address_space() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
        let last = Counter::ALL.last().unwrap().offset() + 4;
        assert!(last < 1 << AXIL_ADDR_BITS);
        assert_eq!(Counter::DxDyReads.name(), "dx_dy_reads");
    }

    #[test]
    fn host_doc_gives_the_shape_fields() {
        let bits = |f: crate::command::Field| match f.bits {
            1 => format!("[{}]", f.lo),
            _ => format!("[{}:{}]", f.hi(), f.lo),
        };
        let row = format!(
            "rows {}, cols {}, in_bits {}, acc_bits {}, interleaved {}, dense {}, mul_reg {}",
            bits(shape::ROWS),
            bits(shape::COLS),
            bits(shape::IN_BITS_FIELD),
            bits(shape::ACC_BITS_FIELD),
            bits(shape::INTERLEAVED),
            bits(shape::DENSE),
            bits(shape::MUL_REG)
        );
        assert!(include_str!("../../docs/HOST.md").contains(&row), "{row}");
        let cfg = ArrayConfig::default_16x16();
        let v = shape::value(&cfg);
        assert_eq!(shape::ROWS.get(v.into()), 16);
        assert_eq!(
            shape::ACC_BITS_FIELD.get(v.into()),
            u64::from(cfg.format().acc_bits)
        );
    }

    #[test]
    fn host_doc_lists_every_counter() {
        let doc = include_str!("../../docs/HOST.md");
        assert!(
            doc.contains(&Counter::markdown_table()),
            "docs/HOST.md is out of date; its counter table should read:\n{}",
            Counter::markdown_table()
        );
    }

    #[test]
    fn host_doc_counts_the_counters_it_compares() {
        let doc = include_str!("../../docs/HOST.md");
        let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        let host = Counter::ALL.iter().filter(|c| c.host_only()).count();
        let emu = CounterReference::Emulator.count();
        let checked = emu + CounterReference::HostTally.count();
        for phrase in [
            format!("Of the {} counters, all but the", Counter::ALL.len()),
            format!("{} host-side ones ({emu})", words(host)),
            format!("so {checked} in all"),
        ] {
            assert!(doc.contains(&phrase), "docs/HOST.md should say: {phrase}");
        }
    }

    fn words(n: usize) -> &'static str {
        ["zero", "one", "two", "three", "four", "five", "six"][n]
    }
}
