//! What both controllers do with a command word alike: the constants
//! they compare with (opcodes, error codes, the array's shape in the
//! widths of the fields, the buffers' depths), the word's fields and
//! opcode flags, the checks of `docs/COMMANDS.md` (Errors) in their
//! priority order, and how a decode cycle ends.
//!
//! Opcodes, field positions, reserved bits, mode and error codes all come
//! from `sysgrad_isa`; nothing here is a number of the command format.

use super::sizes::*;
use super::window::{Limits, LIMIT_BITS};
use crate::array::core::Modes;
use crate::ir::*;
use crate::params::{
    A_DEPTH, C, G_DEPTH, INTERLEAVED, LR_FIXED, LR_SHIFT, MUL_REG, R, W_DEPTH, X_DEPTH,
};
use sysgrad_isa::command::{field, opcode, ActFunction, Format, FORMATS};
use sysgrad_isa::timing::Cycles;
use sysgrad_isa::{BackwardMode, DataBuffer, ErrorCode, Mode};

/// The part of a cycle count that does not depend on N, over the
/// parameters `R`, `C` and `MUL_REG` (e.g. `R + C + MUL_REG - 1` for a
/// pass).
pub(super) fn fixed_part(c: Cycles) -> Expr {
    let terms = [(c.row_coef, R), (c.col_coef, C), (c.mul_reg_coef, MUL_REG)];
    let mut e: Option<Expr> = None;
    for (coef, p) in terms.into_iter().filter(|(coef, _)| *coef != 0) {
        let term = if coef == 1 { p.e() } else { coef * p.e() };
        e = Some(match e {
            None => term,
            Some(e) => e + term,
        });
    }
    match (e, c.constant) {
        (None, k) => int(k),
        (Some(e), 0) => e,
        (Some(e), k) if k > 0 => e + k,
        (Some(e), k) => e - (-k),
    }
}

/// `name`: the fixed part of `c` in `bits` bits, as a localparam (and
/// its integer `name_I`).
pub(super) fn cycles_const(m: &mut Scope, name: &str, bits: u32, c: Cycles) -> (Const, Const) {
    sized_const(m, name, bits, fixed_part(c))
}

/// `mode_field == m`: a BACKWARD mode field selects `m`.
pub(super) fn field_selects(mode_field: impl Into<Expr>, m: BackwardMode) -> Expr {
    mode_field.into().equals(lit(MODE_FIELD_BITS, m.code()))
}

/// The array mode of pass `second` of a BACKWARD whose mode field is
/// `mode_field`, from the mode table.
pub(super) fn pass_mode_of(modes: &Modes, mode_field: Net, second: impl Into<Expr>) -> Expr {
    let mode = |m: Mode| modes.of(m).e();
    let sel = |m: BackwardMode| field_selects(mode_field, m);
    let sequential = BackwardMode::Sequential.passes();
    cond(
        sel(BackwardMode::Dx),
        mode(BackwardMode::Dx.passes()[0]),
        cond(
            sel(BackwardMode::Dw),
            mode(BackwardMode::Dw.passes()[0]),
            cond(
                sel(BackwardMode::Interleaved),
                mode(BackwardMode::Interleaved.passes()[0]),
                cond(second, mode(sequential[1]), mode(sequential[0])),
            ),
        ),
    )
}

/// What both controllers compare with.
pub(super) struct CommandConsts {
    opcodes: Vec<(u8, Const)>,
    errors: Vec<(ErrorCode, Const)>,
    pub max_k: Const,
    pub max_m: Const,
    pub acc_lanes: Const,
    pub lr_constant: Const,
    /// `RESULT_LATENCY_I` and `RESULT_LATENCY`.
    pub result_latency: (Const, Const),
    /// `<B>_DEPTH_SPAN` of the weights, activations, gradients and
    /// accumulators.
    pub spans: [Const; 4],
}

impl CommandConsts {
    pub fn opcode(&self, op: u8) -> Const {
        self.opcodes
            .iter()
            .find(|(o, _)| *o == op)
            .expect("a localparam per opcode")
            .1
    }
    pub fn error(&self, e: ErrorCode) -> Const {
        self.errors
            .iter()
            .find(|(c, _)| *c == e)
            .expect("a localparam per error code")
            .1
    }
}

/// Opcodes, error codes, the array's shape in the widths of the fields
/// compared with it, the result latency and the buffers' depths.
/// `result_latency` is `timing::RESULT_LATENCY`, on a dense array without
/// its product-stage term; `la` the accumulator lanes.
pub(super) fn command_constants(m: &mut Scope, result_latency: Cycles, la: Const) -> CommandConsts {
    let opcodes = FORMATS
        .iter()
        .map(|f| {
            let c = m.localparam(
                &f.verilog_name(),
                Width::of(OP_BITS),
                lit(OP_BITS, f.opcode.into()),
            );
            (f.opcode, c)
        })
        .collect();
    let errors = ErrorCode::ALL
        .iter()
        .map(|e| {
            let c = m.localparam(
                &e.verilog_name(),
                Width::of(ERROR_BITS),
                lit(ERROR_BITS, e.code().into()),
            );
            (*e, c)
        })
        .collect();
    // The array's shape in the widths of the fields compared with it.
    let (_, max_k) = sized_const(m, "MAX_K", TILE_BITS, R.e());
    let (_, max_m) = sized_const(m, "MAX_M", TILE_BITS, C.e());
    let (_, acc_lanes) = sized_const(m, "ACC_LANES", TILE_BITS, la.e());
    let (_, lr_constant) = sized_const(m, "LR_CONSTANT", LR_FIELD_BITS, LR_SHIFT.e());
    let result_latency = cycles_const(m, "RESULT_LATENCY", WAIT_BITS, result_latency);
    let spans = [W_DEPTH, X_DEPTH, G_DEPTH, A_DEPTH]
        .map(|depth| sized_const(m, &format!("{}_SPAN", depth.name()), SPAN_BITS, depth.e()).1);
    CommandConsts {
        opcodes,
        errors,
        max_k,
        max_m,
        acc_lanes,
        lr_constant,
        result_latency,
        spans,
    }
}

/// Where the decoder's words come from: the command memory's read data
/// in the cycle that fetches word 0 (`in_dec`) or word 1 (`in_dec2`),
/// else the latched words.
pub(super) struct WordSource {
    pub in_dec: Net,
    pub in_dec2: Net,
    pub c_rdata: Net,
    pub cmd_q: Net,
    pub cmd2_q: Net,
}

/// The command: its words, its fields and which command it is.
pub(super) struct Fields {
    pub w0: Net,
    pub w1: Net,
    pub op: Net,
    pub f_addr_a: Net,
    pub f_addr_b: Net,
    pub f_len: Net,
    pub f_flag: Net,
    pub f_mode: Net,
    pub f_lr: Net,
    pub f_m: Net,
    pub f_k: Net,
    pub f_x_addr: Net,
    /// FORWARD's and BACKWARD's `win`: X (and dX) lines follow the window.
    pub f_win: Net,
    /// ACT's function, mask line (word 1) and lanes (word 1).
    pub f_func: Net,
    pub f_mask: Net,
    pub f_lanes: Net,
    /// The command has a second word (`Format::words`).
    pub two_words: Net,
    /// ACT reads a mask line (`ActFunction::reads_mask`).
    pub reads_mask: Net,
    /// The lanes of REQUANT's and ACT's destination (`dst`): C of the
    /// gradients, R of the activations, in the width of `lanes`.
    pub dst_lanes: Net,
    is: Vec<(u8, Net)>,
}

impl Fields {
    /// `is_<mnemonic>`: the decoded opcode is `op` (`sysgrad_isa::command::opcode`).
    pub fn is(&self, op: u8) -> Net {
        self.is
            .iter()
            .find(|(o, _)| *o == op)
            .expect("a flag per opcode")
            .1
    }
    /// `f_mode == m`: BACKWARD's mode field selects `m`.
    pub fn mode_is(&self, m: BackwardMode) -> Expr {
        field_selects(self.f_mode, m)
    }
    /// The command's words, `PC_BITS` wide (`Format::words`: 1 or 2).
    pub fn words(&self) -> Expr {
        cond(self.two_words, lit(PC_BITS, 2), lit(PC_BITS, 1))
    }
}

/// `func == f`: ACT's function field selects `f`.
pub(super) fn func_is(func: impl Into<Expr>, f: ActFunction) -> Expr {
    func.into().equals(lit(field::ACT_FUNC.bits, f.code()))
}

/// Whether the function field `func` reads a mask line.
pub(super) fn reads_mask_of(func: Net) -> Expr {
    any_of(
        ActFunction::ALL
            .iter()
            .filter(|f| f.reads_mask())
            .map(|f| func_is(func, *f))
            .collect(),
    )
}

/// Command fields: from the command memory in decode, latched after.
pub(super) fn fields(m: &mut Scope, src: &WordSource, consts: &CommandConsts) -> Fields {
    m.comment("The command: word 0 (and a two-word command's word 1) and its fields.");
    let w0 = cond(src.in_dec, src.c_rdata, src.cmd_q);
    let w1 = cond(src.in_dec2, src.c_rdata, src.cmd2_q);
    fields_of(m, "", w0, w1, consts)
}

/// The fields of the words `w0` and `w1`, each net named `<prefix><name>`
/// (the decoder's own with no prefix).
pub(super) fn fields_of(
    m: &mut Scope,
    prefix: &str,
    w0: Expr,
    w1: Expr,
    consts: &CommandConsts,
) -> Fields {
    let n = |name: &str| format!("{prefix}{name}");
    let w0 = m.wire_of(&n("w0"), WORD, w0);
    let w1 = m.wire_of(&n("w1"), WORD, w1);
    let mut f = Fields {
        w0,
        w1,
        op: m.wire_of(&n("op"), OP_BITS, slice(w0, field::OPCODE)),
        f_addr_a: m.wire_of(&n("f_addr_a"), ADDR_BITS, slice(w0, field::ADDR_A)),
        f_addr_b: m.wire_of(&n("f_addr_b"), ADDR_BITS, slice(w0, field::ADDR_B)),
        f_len: m.wire_of(&n("f_len"), LEN_BITS, slice(w0, field::LENGTH)),
        f_flag: m.flag(&n("f_flag"), w0.at(field::FLAG.lo)),
        f_mode: m.wire_of(
            &n("f_mode"),
            MODE_FIELD_BITS,
            slice(w0, field::BACKWARD_MODE),
        ),
        f_lr: m.wire_of(&n("f_lr"), LR_FIELD_BITS, slice(w0, field::LR_SHIFT)),
        f_m: m.wire_of(&n("f_m"), TILE_BITS, slice(w0, field::TILE_M)),
        f_k: m.wire_of(&n("f_k"), TILE_BITS, slice(w0, field::TILE_K)),
        f_x_addr: m.wire_of(&n("f_x_addr"), ADDR_BITS, slice(w1, field::X_ADDR)),
        f_win: m.flag(&n("f_win"), w0.at(field::WIN.lo)),
        f_func: m.wire_of(
            &n("f_func"),
            field::ACT_FUNC.bits,
            slice(w0, field::ACT_FUNC),
        ),
        f_mask: m.wire_of(&n("f_mask"), ADDR_BITS, slice(w1, field::MASK_ADDR)),
        f_lanes: m.wire_of(&n("f_lanes"), TILE_BITS, slice(w1, field::LANES)),
        two_words: Net::named(&n("two_words")),
        reads_mask: Net::named(&n("reads_mask")),
        dst_lanes: Net::named(&n("dst_lanes")),
        is: Vec::new(),
    };
    for fmt in &FORMATS {
        let flag = m.flag(
            &n(&format!("is_{}", fmt.mnemonic.to_lowercase())),
            f.op.equals(consts.opcode(fmt.opcode)),
        );
        f.is.push((fmt.opcode, flag));
    }
    // The RTL fetches at most one word after the opcode's.
    debug_assert!(FORMATS.iter().all(|fmt| fmt.words() <= 2));
    let long: Vec<Expr> = FORMATS
        .iter()
        .filter(|fmt| fmt.words() > 1)
        .map(|fmt| f.is(fmt.opcode).e())
        .collect();
    m.define(wire_for(f.two_words, Width::bit()).init(any_of(long)));
    m.define(wire_for(f.reads_mask, Width::bit()).init(reads_mask_of(f.f_func)));
    let lanes = cond(f.f_flag, consts.max_m, consts.max_k);
    m.define(wire_for(f.dst_lanes, Width::of(TILE_BITS)).init(lanes));
    f
}

/// The resident tile the checks compare with.
pub(super) struct Resident {
    pub valid: Net,
    pub dirty: Net,
    pub addr: Net,
    pub m: Net,
    pub k: Net,
}

/// What the checks read besides the command: the resident tile, the
/// command's place in the program and which word is being decoded.
pub(super) struct CheckIn<'a> {
    pub fields: &'a Fields,
    pub consts: &'a CommandConsts,
    pub resident: &'a Resident,
    /// The window the command would stream through.
    pub window: &'a Limits,
    pub pc: Net,
    pub prog_len: Net,
    pub in_dec: Net,
    pub in_dec2: Net,
}

/// What a command's own checks read: its fields, the resident tile and
/// the window.
pub(super) struct WordIn<'a> {
    pub fields: &'a Fields,
    pub consts: &'a CommandConsts,
    pub resident: &'a Resident,
    pub window: &'a Limits,
}

impl CheckIn<'_> {
    fn word(&self) -> WordIn<'_> {
        WordIn {
            fields: self.fields,
            consts: self.consts,
            resident: self.resident,
            window: self.window,
        }
    }
}

/// What a command's own checks decide: whether its opcode is known,
/// each check's verdict in priority order, and whether any fails.
pub(super) struct WordChecks {
    pub known_op: Net,
    pub bad: Vec<(ErrorCode, Net)>,
    pub chk_bad: Net,
}

/// The code of the first failing check of `bad` (in priority order), 0
/// if none fails.
pub(super) fn first_failing(consts: &CommandConsts, bad: &[(ErrorCode, Expr)]) -> Expr {
    let mut e = lit(ERROR_BITS, 0);
    for (code, flag) in bad.iter().rev() {
        e = cond(flag.clone(), consts.error(*code), e);
    }
    e
}

/// What the checks decide.
pub(super) struct Checks {
    pub known_op: Net,
    pub chk_bad: Net,
    pub end0: Net,
    pub end1: Net,
    pub dec_err: Net,
}

/// Whether a bit outside the command's fields is set: `w0` and, for a
/// two-word command, `w1`. Every command's mask comes from the table.
fn reserved_bits(f: &Fields) -> Expr {
    let stray = |w: Net, fmt: &Format, word_no: usize| {
        // The opcode byte is part of word 0's used bits; it is checked
        // separately (an unknown opcode is its own error).
        let reserved = !fmt.used_bits(word_no) & !field::OPCODE.mask();
        w.bit_and(hex(WORD, reserved)).any()
    };
    let mut e = lit(1, 0);
    for fmt in FORMATS.iter().rev() {
        let mut test = stray(f.w0, fmt, 0);
        if fmt.words() > 1 {
            test = test.or(stray(f.w1, fmt, 1));
        }
        e = cond(f.is(fmt.opcode), test, e);
    }
    e
}

/// `past_end(a, len, limit)`: whether `a + len > limit` (all `SPAN_BITS`
/// wide), as the carry out of the one sum `a + len + ~limit`, which is
/// `a + len - limit - 1` plus `2^SPAN_BITS`. Yosys maps it to a layer of
/// LUTs and one carry chain, where an add and then a compare were two
/// chains in a row; the checks decide every decode cycle, the
/// accelerator's critical path.
pub(super) fn past_end_function(m: &mut Scope) -> Function {
    let span = || Width::of(SPAN_BITS);
    let [a, len, limit] = ["a", "len", "limit"].map(Net::named);
    let sum = zext(1, a) + zext(1, len) + zext(1, !limit);
    m.function(Function {
        name: "past_end",
        width: Width::of(1),
        signed: false,
        inputs: [a, len, limit]
            .iter()
            .map(|n| (*n, span(), false))
            .collect(),
        locals: vec![],
        // The carry out: bit SPAN_BITS of the sum, its only bit used.
        body: vec![blocking(
            Function::result("past_end"),
            (sum >> int(SPAN_BITS as i64)).any(),
        )],
    })
}

/// Whether lines `a .. a + len` reach past `limit` (`a + len > limit`).
fn past(past_end: &Function, a: Net, a_bits: u32, len: Net, len_bits: u32, limit: Expr) -> Expr {
    past_end.call([
        zext(SPAN_BITS - a_bits, a),
        zext(SPAN_BITS - len_bits, len),
        limit,
    ])
}

/// ADDRESS_RANGE: every line range the command names, in the order of
/// `docs/COMMANDS.md`.
fn address_range(c: &WordIn, past_end: &Function, dst_span: Net) -> Expr {
    let f = c.fields;
    let [w_span, x_span, g_span, a_span] = c.consts.spans;
    let range =
        |a: Net, l: Net, l_bits: u32, depth: Expr| past(past_end, a, ADDR_BITS, l, l_bits, depth);
    let stream = |a: Net, depth: Expr| range(a, f.f_len, LEN_BITS, depth);
    // A windowed pass's X and dX span the window's images, not `n`.
    let windowed = |a: Net, depth: Expr| {
        cond(
            f.f_win,
            range(a, c.window.x_lines, LIMIT_BITS, depth.clone()),
            stream(a, depth),
        )
    };
    let is = |op: u8| f.is(op);
    cond(
        is(opcode::LOAD_W),
        range(f.f_addr_a, f.f_k, TILE_BITS, w_span.e()),
        cond(
            is(opcode::FORWARD),
            windowed(f.f_addr_a, x_span.e()).or(stream(f.f_addr_b, a_span.e())),
            cond(
                is(opcode::BACKWARD),
                any_of(vec![
                    stream(f.f_addr_a, g_span.e()),
                    (!f.mode_is(BackwardMode::Dx)).and(windowed(f.f_x_addr, x_span.e())),
                    (!f.mode_is(BackwardMode::Dw)).and(windowed(f.f_addr_b, a_span.e())),
                ]),
                cond(
                    is(opcode::DRAIN),
                    range(f.f_addr_a, c.resident.m, TILE_BITS, a_span.e()),
                    cond(
                        is(opcode::REQUANT),
                        stream(f.f_addr_a, a_span.e()).or(stream(f.f_addr_b, dst_span.e())),
                        is(opcode::ACT).and(any_of(vec![
                            stream(f.f_addr_a, a_span.e()),
                            stream(f.f_addr_b, dst_span.e()),
                            f.reads_mask.and(stream(f.f_mask, x_span.e())),
                        ])),
                    ),
                ),
            ),
        ),
    )
}

/// WEIGHT_OVERLAP: LOAD_W's lines overlap a dirty resident tile's at
/// another address: each range ends past the other's start.
fn weight_overlap(c: &WordIn, past_end: &Function) -> Expr {
    let (f, res) = (c.fields, c.resident);
    let ends_past = |a: Net, k: Net, other: Net| {
        past(
            past_end,
            a,
            ADDR_BITS,
            k,
            TILE_BITS,
            zext(SPAN_BITS - ADDR_BITS, other),
        )
    };
    f.is(opcode::LOAD_W)
        .and(res.valid)
        .and(res.dirty)
        .and(f.f_addr_a.differs(res.addr))
        .and(ends_past(res.addr, res.k, f.f_addr_a))
        .and(ends_past(f.f_addr_a, f.f_k, res.addr))
}

/// BAD_FUNCTION: ACT's function code is none of `ActFunction`'s, or the
/// function may not write the destination (`ActFunction::may_write`).
fn bad_function(f: &Fields) -> Expr {
    let known = any_of(
        ActFunction::ALL
            .iter()
            .map(|func| func_is(f.f_func, *func))
            .collect(),
    );
    let mut refused = Vec::new();
    for func in ActFunction::ALL {
        for dst in DataBuffer::ALL.into_iter().filter(|d| !func.may_write(*d)) {
            let to_dst = f.f_flag.equals(lit(1, dst.code()));
            refused.push(func_is(f.f_func, func).and(to_dst));
        }
    }
    let refused = refused.into_iter().reduce(|a, b| a.or(b));
    let bad = match refused {
        Some(r) => (!known).or(r),
        None => !known,
    };
    f.is(opcode::ACT).and(bad)
}

/// A FORWARD or BACKWARD with `win` = 1.
fn streams_windowed(f: &Fields) -> Expr {
    f.is(opcode::FORWARD)
        .or(f.is(opcode::BACKWARD))
        .and(f.f_win)
}

/// WINDOW's sizes of which one is 0: w, h, ow, oh, stride, images.
fn window_zero(f: &Fields) -> Expr {
    let zero = |w: Net, fl: sysgrad_isa::command::Field| slice(w, fl).equals(lit(fl.bits, 0));
    any_of(vec![
        zero(f.w0, field::WIN_W),
        zero(f.w0, field::WIN_H),
        zero(f.w0, field::WIN_OW),
        zero(f.w0, field::WIN_OH),
        zero(f.w0, field::WIN_STRIDE),
        zero(f.w1, field::WIN_IMAGES),
    ])
}

/// The test for one checked error code.
fn violates(code: ErrorCode, c: &WordIn, past_end: &Function, dst_span: Net) -> Expr {
    let f = c.fields;
    let is = |op: u8| f.is(op);
    let zero = |n: Net, bits: u32| n.equals(lit(bits, 0));
    match code {
        ErrorCode::ReservedBits => reserved_bits(f),
        ErrorCode::BadFunction => bad_function(f),
        ErrorCode::ZeroSize => cond(
            is(opcode::LOAD_W),
            zero(f.f_m, TILE_BITS).or(zero(f.f_k, TILE_BITS)),
            any_of(vec![
                is(opcode::FORWARD).e(),
                is(opcode::BACKWARD).e(),
                is(opcode::REQUANT).e(),
                is(opcode::ACT).e(),
            ])
            .and(zero(f.f_len, LEN_BITS))
            .or(is(opcode::ACT).and(zero(f.f_lanes, TILE_BITS)))
            .or(is(opcode::WINDOW).and(window_zero(f))),
        ),
        ErrorCode::TileTooLarge => cond(
            is(opcode::LOAD_W),
            f.f_m
                .greater(c.consts.max_m)
                .or(f.f_k.greater(c.consts.max_k)),
            // A gate reads its mask in the activations' R lanes.
            is(opcode::ACT).and(
                f.f_lanes
                    .greater(f.dst_lanes)
                    .or(f.reads_mask.and(f.f_lanes.greater(c.consts.max_k))),
            ),
        ),
        ErrorCode::LrShift => {
            // ArrayConfig::accepts_lr_shift: fits the port and, on an
            // array built with a constant shift, is that constant.
            let max = (1u64 << sysgrad_config::LR_SHIFT_BITS) - 1;
            let too_large = f.f_lr.greater(lit(LR_FIELD_BITS, max));
            let not_constant = LR_FIXED
                .differs(0)
                .and(f.f_lr.differs(c.consts.lr_constant));
            is(opcode::UPDATE).and(too_large.or(not_constant))
        }
        ErrorCode::NotInterleaved => is(opcode::BACKWARD)
            .and(f.mode_is(BackwardMode::Interleaved))
            .and(INTERLEAVED.equals(0)),
        ErrorCode::NoGenerator => is(opcode::WINDOW).and(!super::window::present()),
        ErrorCode::NoTile => any_of(vec![
            is(opcode::FORWARD).e(),
            is(opcode::BACKWARD).e(),
            is(opcode::DRAIN).e(),
            is(opcode::UPDATE).e(),
        ])
        .and(!c.resident.valid),
        ErrorCode::NoWindow => streams_windowed(f).and(!c.window.valid),
        ErrorCode::WindowLength => streams_windowed(f)
            .and(zext(LIMIT_BITS - LEN_BITS, f.f_len).differs(c.window.positions)),
        ErrorCode::AddressRange => address_range(c, past_end, dst_span),
        ErrorCode::WeightOverlap => weight_overlap(c, past_end),
        ErrorCode::UnknownOpcode | ErrorCode::ProgramEnd => {
            unreachable!("found while fetching, not by the checks")
        }
    }
}

/// The checks of `docs/COMMANDS.md` that read the command itself and the
/// resident tile, in priority order, each net named `<prefix><name>`.
pub(super) fn word_checks(
    m: &mut Scope,
    prefix: &str,
    past_end: &Function,
    c: &WordIn,
) -> WordChecks {
    let (f, consts) = (c.fields, c.consts);
    let n = |name: &str| format!("{prefix}{name}");
    let [_, x_span, g_span, _] = consts.spans;
    let dst_span = m.wire_of(&n("dst_span"), SPAN_BITS, cond(f.f_flag, g_span, x_span));
    // The opcodes are 1, 2, .. in table order (`sysgrad_isa`'s tests), so
    // a known one is a nonzero one up to the last.
    let last_opcode = FORMATS.iter().map(|f| f.opcode).max().expect("commands");
    debug_assert!(FORMATS.iter().zip(1..).all(|(f, k)| f.opcode == k));
    let known_op = m.flag(
        &n("known_op"),
        f.op.differs(lit(OP_BITS, 0))
            .and(f.op.at_most(consts.opcode(last_opcode))),
    );
    let order: Vec<ErrorCode> = std::iter::once(ErrorCode::ReservedBits)
        .chain(ErrorCode::CHECK_ORDER)
        .collect();
    let bad: Vec<(ErrorCode, Net)> = order
        .iter()
        .map(|code| {
            let net = n(&format!("bad_{}", code.name().to_lowercase()));
            (*code, m.flag(&net, violates(*code, c, past_end, dst_span)))
        })
        .collect();
    // Whether any check fails, without the priority that picks the
    // code: what decides between executing and faulting (only
    // `err_code` needs the code).
    let chk_bad = m.flag(
        &n("chk_bad"),
        any_of(bad.iter().map(|(_, n)| n.e()).collect()),
    );
    WordChecks {
        known_op,
        bad,
        chk_bad,
    }
}

/// The checks of `docs/COMMANDS.md`, in priority order, into `dec_err`,
/// against the resident tile, the command at `pc` and `prog_len`.
pub(super) fn checks(m: &mut Scope, c: &CheckIn) -> Checks {
    let (f, consts) = (c.fields, c.consts);
    let no_error = || lit(ERROR_BITS, 0);
    m.comment("Checks, each complete before the command has any effect.");
    let past_end = past_end_function(m);
    let WordChecks {
        known_op,
        bad,
        chk_bad,
    } = word_checks(m, "", &past_end, &c.word());
    let bad: Vec<(ErrorCode, Expr)> = bad.into_iter().map(|(c, n)| (c, n.e())).collect();
    let chk_err = m.wire_of("chk_err", ERROR_BITS, first_failing(consts, &bad));
    let pc_plus = |k: u64| c.pc + lit(PC_BITS, k);
    let end0 = m.flag("end0", c.pc.at_least(c.prog_len));
    let end1 = m.flag("end1", pc_plus(1).at_least(c.prog_len));
    let dec_err = m.wire_of(
        "dec_err",
        ERROR_BITS,
        cond(
            c.in_dec,
            cond(
                end0,
                consts.error(ErrorCode::ProgramEnd),
                cond(
                    !known_op,
                    consts.error(ErrorCode::UnknownOpcode).e(),
                    cond(f.two_words, no_error(), chk_err),
                ),
            ),
            cond(
                c.in_dec2,
                cond(end1, consts.error(ErrorCode::ProgramEnd), chk_err),
                no_error(),
            ),
        ),
    );
    Checks {
        known_op,
        chk_bad,
        end0,
        end1,
        dec_err,
    }
}

/// How a decode cycle ends.
pub(super) struct Outcome {
    /// The command's last word.
    pub dec_final: Net,
    /// Checked: it goes.
    pub dec_go: Net,
    /// A check failed or a word is missing.
    pub dec_fault: Net,
}

/// How a decode cycle ends: `dec_final`, `dec_fault`, `dec_go`.
pub(super) fn decode_outcome(
    m: &mut Scope,
    in_dec: Net,
    in_dec2: Net,
    f: &Fields,
    c: &Checks,
) -> Outcome {
    let dec_final = m.flag(
        "dec_final",
        in_dec
            .and(any_of(vec![c.end0.e(), !c.known_op, !f.two_words]))
            .or(in_dec2),
    );
    // `dec_err` is nonzero exactly when the final decode cycle does
    // not go; `dec_go` says so from the failing checks directly, not
    // through `dec_err`'s priority.
    let dec_go = m.flag(
        "dec_go",
        in_dec
            .and(!c.end0)
            .and(c.known_op)
            .and(!f.two_words)
            .and(!c.chk_bad)
            .or(in_dec2.and(!c.end1).and(!c.chk_bad)),
    );
    let dec_fault = m.flag("dec_fault", dec_final.and(!dec_go));
    Outcome {
        dec_final,
        dec_go,
        dec_fault,
    }
}
