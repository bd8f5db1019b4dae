//! The C host driver of `sa_accel`, generated with the RTL: `sa_accel.h`
//! (register offsets, status and control bits, DMA codes, counter indices,
//! opcodes and command encoders, error-code names, the configuration's
//! shape and number format, and what its words are: signed values or a
//! float format's patterns) and `sa_accel.c` (DMA in and out, program load, start, wait with
//! a timeout, fault decoding, counter read-out). Every number comes from
//! the isa crate's tables, the ones the RTL is generated from; the driver
//! reaches the hardware only through two functions the user supplies (a
//! 32-bit register access and stream I/O), so the same code runs against
//! Verilator and on an SoC. `docs/HOST.md` describes its use.

use crate::files::VerilogFile;
use std::fmt::Write;
use sysgrad_config::float::FloatKind;
use sysgrad_config::{ArrayConfig, Numbers};
use sysgrad_isa::command::{ActFunction, Field, Format, FORMATS, WORD_BITS};
use sysgrad_isa::error::CODE_BITS;
use sysgrad_isa::host::{
    self, ctrl, format, lanes_per_beat, reg, shape, status, Counter, DmaError, DmaTarget, Word,
    DMA_PACKED, DMA_READ, DMA_WRITE, ID_VALUE,
};
use sysgrad_isa::{BackwardMode, DataBuffer, ErrorCode};

/// The name of the header.
pub const HEADER: &str = "sa_accel.h";
/// The name of the driver's source.
pub const SOURCE: &str = "sa_accel.c";

/// The driver's code, configuration-independent apart from the tables
/// spliced in at `@TABLES@`.
const DRIVER_TEMPLATE: &str = include_str!("c/sa_accel.c");

/// `sa_accel.h` and `sa_accel.c` for `cfg`.
pub fn files(cfg: &ArrayConfig) -> Vec<VerilogFile> {
    vec![
        VerilogFile {
            name: HEADER.into(),
            text: header(cfg),
        },
        VerilogFile {
            name: SOURCE.into(),
            text: source(),
        },
    ]
}

fn define(out: &mut String, name: &str, value: impl std::fmt::Display, what: &str) {
    let _ = writeln!(out, "#define {name:<32} {value:<12} /* {what} */");
}

fn hex(v: u64) -> String {
    format!("0x{v:X}u")
}

fn upper(s: &str) -> String {
    s.to_ascii_uppercase()
}

fn target_name(t: DmaTarget) -> String {
    upper(&format!("{t:?}"))
}

fn dma_error_name(e: DmaError) -> String {
    let n = match e {
        DmaError::BadTarget => "BAD_TARGET",
        DmaError::Range => "RANGE",
        DmaError::Value => "VALUE",
        DmaError::Busy => "BUSY",
    };
    n.to_string()
}

const DMA_ERRORS: [DmaError; 4] = [
    DmaError::BadTarget,
    DmaError::Range,
    DmaError::Value,
    DmaError::Busy,
];

fn config_section(cfg: &ArrayConfig, out: &mut String) {
    let f = cfg.format();
    // A float format's words are patterns, not signed values.
    let signed = match DmaTarget::Accumulators.word(cfg) {
        Word::Signed(_) => "signed ",
        Word::Pattern(_) => "",
    };
    out.push_str("/* ---- The configuration this accelerator was generated for. ---- */\n");
    define(
        out,
        "SA_CONFIG_TAG",
        format!("\"{}\"", cfg.tag()),
        "config tag",
    );
    define(
        out,
        "SA_ROWS",
        format!("{}u", cfg.rows()),
        "array rows (K of a tile)",
    );
    define(
        out,
        "SA_COLS",
        format!("{}u", cfg.cols()),
        "array columns (M of a tile)",
    );
    define(
        out,
        "SA_IN_BITS",
        format!("{}u", f.in_bits),
        &format!("{signed}data width"),
    );
    define(
        out,
        "SA_ACC_BITS",
        format!("{}u", f.acc_bits),
        &format!("{signed}accumulator width"),
    );
    define(
        out,
        "SA_FRAC_BITS",
        format!("{}u", f.frac_bits),
        "fractional bits of data",
    );
    define(
        out,
        "SA_INTERLEAVED",
        format!("{}u", u8::from(cfg.interleaved())),
        "BACKWARD interleaved allowed",
    );
    define(
        out,
        "SA_DENSE",
        format!("{}u", u8::from(cfg.dense())),
        "dense pipelining",
    );
    define(
        out,
        "SA_WINDOW",
        format!("{}u", u8::from(cfg.has_window())),
        "the address generator: WINDOW allowed",
    );
    let (stochastic, seed) = match cfg.numbers().stochastic_seed() {
        Some(seed) => (1, seed),
        None => (0, 0),
    };
    define(
        out,
        "SA_STOCHASTIC_ROUNDING",
        format!("{stochastic}u"),
        "1: the PEs round UPDATE's step stochastically (ARCHITECTURE.md)",
    );
    define(
        out,
        "SA_SR_SEED",
        format!("{seed}u"),
        "their generators' seed (0 without)",
    );
    define(
        out,
        "SA_SHAPE_VALUE",
        hex(shape::value(cfg).into()),
        "what SHAPE reads",
    );
    format_section(cfg, out);
    out.push('\n');
    for t in DmaTarget::ALL {
        let n = target_name(t);
        define(
            out,
            &format!("SA_DEPTH_{n}"),
            format!("{}u", t.depth(cfg)),
            "lines",
        );
        define(
            out,
            &format!("SA_LANES_{n}"),
            format!("{}u", t.lanes(cfg)),
            "lanes (words) per line",
        );
        define(
            out,
            &format!("SA_WORD_BITS_{n}"),
            format!("{}u", t.word_bits(cfg)),
            word_bits_meaning(t.word(cfg)),
        );
        define(
            out,
            &format!("SA_PATTERN_BITS_{n}"),
            format!("{}u", pattern_bits(t.word(cfg))),
            "bits of a word's pattern, zero-extended (0: a signed word)",
        );
        define(
            out,
            &format!("SA_PACK_{n}"),
            format!("{}u", lanes_per_beat(t.word_bits(cfg))),
            "lanes per packed beat",
        );
    }
    out.push('\n');
}

/// The bits of a pattern word, 0 for a signed one.
fn pattern_bits(w: Word) -> u32 {
    match w {
        Word::Signed(_) => 0,
        Word::Pattern(bits) => bits,
    }
}

fn word_bits_meaning(w: Word) -> &'static str {
    match w {
        Word::Signed(_) => "signed word width",
        Word::Pattern(_) => "word width (a pattern in its low SA_PATTERN_BITS_* bits)",
    }
}

/// The number format: what `FORMAT` reads, its tag, whether buffer words
/// are patterns, and in a float format each data role's format (a
/// `SA_FLOAT_*` code and its name).
fn format_section(cfg: &ArrayConfig, out: &mut String) {
    let n = cfg.numbers();
    define(
        out,
        "SA_FORMAT_VALUE",
        hex(format::value(cfg).into()),
        "what FORMAT reads (sa_open checks it)",
    );
    define(
        out,
        "SA_FORMAT_TAG",
        format!("\"{}\"", n.tag()),
        "the number format",
    );
    let patterns = DmaTarget::ALL
        .iter()
        .any(|t| matches!(t.word(cfg), Word::Pattern(_)));
    define(
        out,
        "SA_WORDS_ARE_PATTERNS",
        format!("{}u", u8::from(patterns)),
        "1: data words are float patterns (SA_PATTERN_BITS_*), never negative",
    );
    let Numbers::Float(f) = n else {
        return;
    };
    for (role, k) in [
        ("WEIGHTS", f.weights),
        ("ACTIVATIONS", f.activations),
        ("GRADIENTS", f.gradients),
    ] {
        define(
            out,
            &format!("SA_FORMAT_{role}"),
            format!("{}u", format::kind_code(k)),
            &format!("SA_FLOAT_{}", upper(k.name())),
        );
        define(
            out,
            &format!("SA_FORMAT_{role}_NAME"),
            format!("\"{}\"", k.name()),
            "its float format",
        );
    }
}

fn field_define(out: &mut String, prefix: &str, f: Field, what: &str) {
    define(out, &format!("{prefix}_LO"), format!("{}u", f.lo), what);
    define(out, &format!("{prefix}_BITS"), format!("{}u", f.bits), what);
}

fn register_section(out: &mut String) {
    out.push_str("/* ---- AXI4-Lite registers (byte offsets) and their bits. ---- */\n");
    define(out, "SA_ID_VALUE", hex(ID_VALUE.into()), "what ID reads");
    for (name, off) in [
        ("ID", reg::ID),
        ("SHAPE", reg::SHAPE),
        ("CTRL", reg::CTRL),
        ("STATUS", reg::STATUS),
        ("PC", reg::PC),
        ("PROG_LEN", reg::PROG_LEN),
        ("COUNTER_WIDTH", reg::COUNTER_WIDTH),
        ("PROG_START", reg::PROG_START),
        ("DMA_TARGET", reg::DMA_TARGET),
        ("DMA_ADDR", reg::DMA_ADDR),
        ("DMA_COUNT", reg::DMA_COUNT),
        ("DMA_CTRL", reg::DMA_CTRL),
        ("DMA_DEPTH", reg::DMA_DEPTH),
        ("FORMAT", reg::FORMAT),
        ("COUNTERS", reg::COUNTERS),
    ] {
        define(
            out,
            &format!("SA_REG_{name}"),
            format!("0x{off:03X}u"),
            "register",
        );
    }
    define(out, "SA_CTRL_START", hex(ctrl::START.into()), "CTRL bit");
    define(out, "SA_CTRL_CLEAR", hex(ctrl::CLEAR.into()), "CTRL bit");
    for (name, bit) in [
        ("RUNNING", status::RUNNING),
        ("HALTED", status::HALTED),
        ("FAULTED", status::FAULTED),
        ("DMA_BUSY", status::DMA_BUSY),
    ] {
        define(
            out,
            &format!("SA_STATUS_{name}"),
            hex(bit.into()),
            "STATUS bit",
        );
    }
    define(
        out,
        "SA_STATUS_ERROR_SHIFT",
        format!("{}u", status::ERROR_SHIFT),
        "command error code",
    );
    define(
        out,
        "SA_STATUS_DMA_ERROR_SHIFT",
        format!("{}u", status::DMA_ERROR_SHIFT),
        "DMA error code",
    );
    define(
        out,
        "SA_STATUS_CODE_MASK",
        hex((1u64 << CODE_BITS) - 1),
        "either code",
    );
    for (name, f) in shape::FIELDS.iter().rev() {
        field_define(out, &format!("SA_SHAPE_{}", upper(name)), *f, "SHAPE field");
    }
    for (name, f) in format::FIELDS.iter().rev() {
        field_define(
            out,
            &format!("SA_FORMAT_{}", upper(name)),
            *f,
            "FORMAT field",
        );
    }
    for k in FloatKind::ALL {
        define(
            out,
            &format!("SA_FLOAT_{}", upper(k.name())),
            format!("{}u", format::kind_code(k)),
            "FORMAT's code of a float format",
        );
    }
    out.push('\n');
    out.push_str("/* DMA: DMA_CTRL values, targets and error codes. */\n");
    define(
        out,
        "SA_DMA_WRITE",
        format!("{DMA_WRITE}u"),
        "s_axis -> target",
    );
    define(
        out,
        "SA_DMA_READ",
        format!("{DMA_READ}u"),
        "target -> m_axis",
    );
    define(
        out,
        "SA_DMA_PACKED",
        format!("{DMA_PACKED}u"),
        "added: lanes packed into beats",
    );
    define(
        out,
        "SA_STREAM_BITS",
        format!("{}u", host::STREAM_BITS),
        "TDATA width",
    );
    for t in DmaTarget::ALL {
        define(
            out,
            &format!("SA_TARGET_{}", target_name(t)),
            format!("{}u", t.code()),
            "DMA_TARGET",
        );
    }
    define(
        out,
        "SA_TARGET_COUNT",
        format!("{}u", DmaTarget::ALL.len()),
        "targets",
    );
    for e in DMA_ERRORS {
        define(
            out,
            &format!("SA_DMA_ERR_{}", dma_error_name(e)),
            format!("{}u", e as u32),
            "DMA error",
        );
    }
    out.push('\n');
}

fn counter_section(cfg: &ArrayConfig, out: &mut String) {
    out.push_str("/* ---- Hardware counters: index i is read at SA_REG_COUNTERS + SA_COUNTER_STRIDE i\n   (bits 31:0) and + 4 (the high bits). ---- */\n");
    let stride = Counter::ALL[1].offset() - Counter::ALL[0].offset();
    define(
        out,
        "SA_COUNTER_STRIDE",
        format!("{stride}u"),
        "bytes per counter",
    );
    define(
        out,
        "SA_COUNTER_BITS",
        format!("{}u", cfg.counter_bits()),
        "width of a counter (it counts modulo 2^bits; 0: none, all read 0)",
    );
    define(
        out,
        "SA_COUNTER_COUNT",
        format!("{}u", Counter::ALL.len()),
        "counters",
    );
    for c in Counter::ALL {
        let host = if c.host_only() { " (host side)" } else { "" };
        define(
            out,
            &format!("SA_COUNTER_{}", upper(&c.name())),
            format!("{}u", c.index()),
            &format!("{}{host}", c.name()),
        );
    }
    out.push('\n');
}

fn error_section(out: &mut String) {
    out.push_str("/* ---- Command error codes (STATUS[15:8]), in code order. ---- */\n");
    for e in ErrorCode::ALL {
        define(
            out,
            &format!("SA_ERR_{}", e.name()),
            format!("0x{:02X}u", e.code()),
            e.message(),
        );
    }
    out.push('\n');
}

/// The C parameter list of a command's encoder.
fn params(f: &Format) -> String {
    let p: Vec<String> = f
        .args
        .iter()
        .map(|a| format!("uint64_t {}", a.name))
        .collect();
    p.join(", ")
}

fn encoder(out: &mut String, f: &Format) {
    let name = f.mnemonic.to_ascii_lowercase();
    let word = |w: usize| {
        let mut terms = Vec::new();
        if w == 0 {
            terms.push(format!(
                "sa_field(SA_OP_{}, SA_FIELD_OPCODE_LO, SA_FIELD_OPCODE_BITS)",
                f.mnemonic
            ));
        }
        for a in f.args.iter().filter(|a| a.word == w) {
            let n = format!("SA_{}_{}", f.mnemonic, upper(a.name));
            terms.push(format!("sa_field({}, {n}_LO, {n}_BITS)", a.name));
        }
        if terms.is_empty() {
            terms.push("0".into());
        }
        terms.join("\n        | ")
    };
    let args: Vec<&str> = f.args.iter().map(|a| a.name).collect();
    let _ = writeln!(
        out,
        "/* {} {}: {} word(s). */",
        f.mnemonic,
        args.join(" "),
        f.words()
    );
    if f.words() == 1 {
        let p = if f.args.is_empty() {
            "void".into()
        } else {
            params(f)
        };
        let _ = writeln!(
            out,
            "static inline uint64_t sa_cmd_{name}({p})\n{{\n    return {};\n}}\n",
            word(0)
        );
    } else {
        let _ = writeln!(
            out,
            // `words`, not `w`: WINDOW has a field named w.
            "static inline void sa_cmd_{name}(uint64_t words[{}], {})\n{{",
            f.words(),
            params(f)
        );
        for w in 0..f.words() {
            let _ = writeln!(out, "    words[{w}] = {};", word(w));
        }
        out.push_str("}\n\n");
    }
}

fn command_section(out: &mut String) {
    let op = sysgrad_isa::command::field::OPCODE;
    out.push_str(
        "/* ---- Command words (docs/COMMANDS.md): opcodes, argument fields, encoders. ---- */\n",
    );
    define(out, "SA_WORD_BITS", format!("{WORD_BITS}u"), "command word");
    field_define(out, "SA_FIELD_OPCODE", op, "opcode field");
    for f in &FORMATS {
        define(
            out,
            &format!("SA_OP_{}", f.mnemonic),
            format!("0x{:02X}u", f.opcode),
            "opcode",
        );
        define(
            out,
            &format!("SA_WORDS_{}", f.mnemonic),
            format!("{}u", f.words()),
            "words",
        );
        for a in f.args {
            let n = format!("SA_{}_{}", f.mnemonic, upper(a.name));
            define(
                out,
                &format!("{n}_WORD"),
                format!("{}u", a.word),
                "word of the field",
            );
            field_define(out, &n, a.field, "field");
        }
    }
    for m in BackwardMode::ALL {
        define(
            out,
            &format!("SA_BACKWARD_{}", upper(m.name())),
            format!("{}u", m.code()),
            "BACKWARD mode",
        );
    }
    for command in ["REQUANT", "ACT"] {
        for d in DataBuffer::ALL {
            define(
                out,
                &format!("SA_{command}_TO_{}", upper(d.name())),
                format!("{}u", d.code()),
                &format!("{command} dst"),
            );
        }
    }
    for f in ActFunction::ALL {
        define(
            out,
            &format!("SA_ACT_{}", upper(f.name())),
            format!("{}u", f.code()),
            "ACT func",
        );
    }
    out.push_str(
        "\n/* v masked to `bits` bits at bit `lo`. The encoders mask every argument to its\n   \
         field; check ranges with the SA_<COMMAND>_<ARG>_BITS macros if they may not fit. */\n\
         static inline uint64_t sa_field(uint64_t v, unsigned lo, unsigned bits)\n{\n    \
         return (v & (bits >= 64u ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1u)) << lo;\n}\n\n",
    );
    for f in &FORMATS {
        encoder(out, f);
    }
}

const API: &str = include_str!("c/sa_accel_api.h");

fn header(cfg: &ArrayConfig) -> String {
    let mut out = format!(
        "/* sa_accel.h: the host interface of sa_accel for {}, generated by `sysgrad gen`\n   \
         from the tables of the isa crate (the ones the RTL is generated from). Do not edit.\n   \
         C99; the driver is sa_accel.c; docs/HOST.md describes both. */\n\
         #ifndef SA_ACCEL_H\n#define SA_ACCEL_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n\
         #ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n",
        cfg.tag()
    );
    config_section(cfg, &mut out);
    register_section(&mut out);
    counter_section(cfg, &mut out);
    error_section(&mut out);
    command_section(&mut out);
    out.push_str(API);
    out.push_str("\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* SA_ACCEL_H */\n");
    out
}

fn c_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The name tables of the driver's source.
fn tables() -> String {
    let mut out = String::new();
    out.push_str("static const char *const counter_names[SA_COUNTER_COUNT] = {\n");
    for c in Counter::ALL {
        let _ = writeln!(out, "    {},", c_string(&c.name()));
    }
    out.push_str("};\n\nstatic const char *const counter_meanings[SA_COUNTER_COUNT] = {\n");
    for c in Counter::ALL {
        let _ = writeln!(out, "    {},", c_string(c.meaning()));
    }
    out.push_str("};\n\n/* Whether a counter depends on the host's timing (not modelled by the emulator). */\nstatic const unsigned char counter_host_only[SA_COUNTER_COUNT] = {\n");
    for c in Counter::ALL {
        let _ = writeln!(out, "    {},", u8::from(c.host_only()));
    }
    out.push_str("};\n\nstruct code_name {\n    unsigned code;\n    const char *name;\n    const char *message;\n};\n\n");
    out.push_str("static const struct code_name error_names[] = {\n");
    for e in ErrorCode::ALL {
        let _ = writeln!(
            out,
            "    {{SA_ERR_{}, {}, {}}},",
            e.name(),
            c_string(e.name()),
            c_string(e.message())
        );
    }
    out.push_str("};\n\nstatic const struct code_name dma_error_names[] = {\n");
    for e in DMA_ERRORS {
        let n = dma_error_name(e);
        let what = match e {
            DmaError::BadTarget => "DMA_TARGET names no buffer; nothing moved",
            DmaError::Range => {
                "DMA_COUNT is 0 or the lines run past the target's depth; nothing moved"
            }
            DmaError::Value => {
                "a written beat did not fit the target's word and was stored saturated \
                 (a pattern: with the bits above it cleared)"
            }
            DmaError::Busy => {
                "DMA_CTRL written while the controller runs or a DMA is busy; ignored"
            }
        };
        let _ = writeln!(
            out,
            "    {{SA_DMA_ERR_{n}, {}, {}}},",
            c_string(&n),
            c_string(what)
        );
    }
    out.push_str("};\n\nstatic const char *const target_names[SA_TARGET_COUNT] = {\n");
    for t in DmaTarget::ALL {
        let _ = writeln!(
            out,
            "    {},",
            c_string(&format!("{t:?}").to_ascii_lowercase())
        );
    }
    out.push_str("};\n\nstatic const unsigned target_lanes[SA_TARGET_COUNT] = {\n");
    for t in DmaTarget::ALL {
        let _ = writeln!(out, "    SA_LANES_{},", target_name(t));
    }
    out.push_str("};\n\nstatic const unsigned target_bits[SA_TARGET_COUNT] = {\n");
    for t in DmaTarget::ALL {
        let _ = writeln!(out, "    SA_WORD_BITS_{},", target_name(t));
    }
    out.push_str("};\n\nstatic const unsigned target_pattern[SA_TARGET_COUNT] = {\n");
    for t in DmaTarget::ALL {
        let _ = writeln!(out, "    SA_PATTERN_BITS_{},", target_name(t));
    }
    out.push_str("};\n\nstatic const unsigned target_pack[SA_TARGET_COUNT] = {\n");
    for t in DmaTarget::ALL {
        let _ = writeln!(out, "    SA_PACK_{},", target_name(t));
    }
    out.push_str("};\n\nstatic const unsigned target_depth[SA_TARGET_COUNT] = {\n");
    for t in DmaTarget::ALL {
        let _ = writeln!(out, "    SA_DEPTH_{},", target_name(t));
    }
    out.push_str("};\n");
    out
}

fn source() -> String {
    assert!(DRIVER_TEMPLATE.contains("@TABLES@"));
    DRIVER_TEMPLATE.replace("/* @TABLES@ */\n", &tables())
}
