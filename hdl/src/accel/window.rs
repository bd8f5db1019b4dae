//! The convolution address generator (`docs/COMMANDS.md`, WINDOW and
//! Windowed FORWARD and BACKWARD), shared by both controllers: the window
//! as WINDOW sets it ([`Window`], with the products it needs computed
//! once when it is decoded, never per position), what the checks compare
//! with ([`Limits`]), and the generator itself ([`generator`]): counters
//! that walk the output positions and a running line register, so a
//! position costs adds and compares only.
//!
//! A controller owns the window registers ([`registers`]) and runs one
//! generator per stream that follows the window: the `none` controller one
//! for the X reads and one for the write-back's dX lines; the dense
//! controller one in its data engine, whose line and inside flag then
//! ride down the result delay line. A variant of the generator (another
//! walk order, dilation) changes this file only.

use super::sizes::*;
use crate::ir::*;
use crate::params::WINDOW;
use sysgrad_isa::command::{field, Field};

/// A generator's coordinates: `ix`, `iy` (two's complement, negative in
/// the top and left padding) and the line registers, in the address
/// width. Lines are kept modulo `2^ADDR_BITS`: an inside position's line
/// is below the activation buffer's depth (ADDRESS_RANGE), so its value
/// is exact however far padding positions wrapped on the way.
const COORD_BITS: u32 = ADDR_BITS;
/// The checks' products `images * h * w` and `images * oh * ow`, clamped
/// to one bit more than a length: any value at the clamp is past every
/// buffer and unequal to every `n`, and `past_end`'s sum stays inside its
/// width.
pub(super) const LIMIT_BITS: u32 = ADDR_BITS + 1;
/// `h * w` and `oh * ow` before the clamp.
const AREA_BITS: u32 = 2 * field::WIN_W.bits;

// The coordinates hold every position of the largest window:
// `15 * 1022 + 15 < 2^15`.
const _: () = assert!(
    field::WIN_STRIDE.max() * (field::WIN_OW.max() - 1) + field::WIN_KX.max()
        < 1 << (COORD_BITS - 1)
);

/// The window's fields and what the generator derives from them once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    W,
    H,
    Ow,
    Oh,
    Stride,
    Ky,
    Kx,
    Pad,
    /// `h * w`: an image's lines (modulo the address width).
    Hw,
    /// `stride * w`: the lines from one output row to the next.
    StrideW,
    /// `(ky - pad) * w + (kx - pad)`: position 0's line (modulo).
    Start,
}

/// The window's parts in their packed order (most significant first),
/// each with its width and, for a command field, where WINDOW holds it.
const PARTS: [(Part, &str, u32, Option<Field>); 11] = [
    (Part::W, "w", field::WIN_W.bits, Some(field::WIN_W)),
    (Part::H, "h", field::WIN_H.bits, Some(field::WIN_H)),
    (Part::Ow, "ow", field::WIN_OW.bits, Some(field::WIN_OW)),
    (Part::Oh, "oh", field::WIN_OH.bits, Some(field::WIN_OH)),
    (
        Part::Stride,
        "stride",
        field::WIN_STRIDE.bits,
        Some(field::WIN_STRIDE),
    ),
    (Part::Ky, "ky", field::WIN_KY.bits, Some(field::WIN_KY)),
    (Part::Kx, "kx", field::WIN_KX.bits, Some(field::WIN_KX)),
    (Part::Pad, "pad", field::WIN_PAD.bits, Some(field::WIN_PAD)),
    (Part::Hw, "hw", COORD_BITS, None),
    (Part::StrideW, "stride_w", COORD_BITS, None),
    (Part::Start, "start", COORD_BITS, None),
];

/// The width of a packed window (a dense queue entry carries one).
pub(super) const BITS: u32 = {
    let mut total = 0;
    let mut i = 0;
    while i < PARTS.len() {
        total += PARTS[i].2;
        i += 1;
    }
    total
};

/// A window: one net per part.
pub(super) struct Window(Vec<(Part, Net)>);

impl Window {
    fn get(&self, p: Part) -> Net {
        self.0.iter().find(|(q, _)| *q == p).expect("every part").1
    }
    /// The window packed into [`BITS`] bits, [`PARTS`] order.
    pub fn packed(&self) -> Expr {
        Expr::Concat(self.0.iter().map(|(_, n)| n.e()).collect())
    }
    /// `<prefix>_<part>` wires unpacking `packed`.
    pub fn unpack(m: &mut Scope, prefix: &str, packed: Net) -> Window {
        let mut lsb = BITS as i64;
        let nets = PARTS
            .iter()
            .map(|(p, name, bits, _)| {
                lsb -= *bits as i64;
                let v = packed.bits(lsb + *bits as i64 - 1, lsb);
                (*p, m.wire_of(&format!("{prefix}_{name}"), *bits, v))
            })
            .collect();
        Window(nets)
    }
}

/// Whether the generator is built (`units.window`). Without it WINDOW
/// faults NO_GENERATOR and no window is ever set, so a windowed pass
/// never runs: every place that follows a pass's `win` bit into a
/// generator reads it through this, and the window registers load only
/// through it, which leaves synthesis constants where the generator was.
pub(super) fn present() -> Expr {
    WINDOW.differs(0)
}

/// What the checks compare with: whether a WINDOW has been decoded since
/// reset, its `images * h * w` (the X and dX lines a windowed pass spans)
/// and its `images * oh * ow` (the `n` it must have), both clamped to
/// [`LIMIT_BITS`].
pub(super) struct Limits {
    pub valid: Net,
    pub x_lines: Net,
    pub positions: Net,
}

/// The products of WINDOW's word 0, registered by its first decode cycle
/// (whatever the word is: they are read only in the second decode cycle
/// of a WINDOW), so no product of products stands in one cycle; and where
/// its limits come from.
pub(super) struct Staged {
    hw: Net,
    stride_w: Net,
    start: Net,
    limits: LimitsFrom,
}

/// Where a controller's WINDOW forms its limits (`images * h * w`,
/// `images * oh * ow`), the one multiplication whose result a check reads.
enum LimitsFrom {
    /// In the second decode cycle, from the images of word 1 (`w1`, read
    /// then) and `oh * ow` staged with the others: the dense decoder,
    /// whose checks read the window registers that the limits load.
    SecondCycle { ohow: Net, w1: Net },
    /// Registered in the first decode cycle: the `none` controller, whose
    /// pre-check of the command after a WINDOW reads them in WINDOW's
    /// second decode cycle (a multiplier there was the accelerator's
    /// critical path, into `pre_go`).
    FirstCycle { x_lines: Net, positions: Net },
}

/// `part` of WINDOW's word 0 `w0`.
fn part_of(w0: Net, f: Field) -> Expr {
    slice(w0, f)
}

/// `{pad'b0, e}` of a `bits`-wide `e` in `to` bits.
fn widen(e: Expr, bits: u32, to: u32) -> Expr {
    if bits == to {
        e
    } else {
        zext(to - bits, e)
    }
}

/// Field `fl` of word 0 `w0`, widened to `to` bits.
fn field_of(w0: Net, fl: Field, to: u32) -> Expr {
    widen(part_of(w0, fl), fl.bits, to)
}

/// `h * w` and `oh * ow` of word 0 `w0`.
fn areas_of(w0: Net) -> (Expr, Expr) {
    let f = |fl| field_of(w0, fl, AREA_BITS);
    (
        f(field::WIN_H) * f(field::WIN_W),
        f(field::WIN_OH) * f(field::WIN_OW),
    )
}

/// The staged products of `w0` (`<prefix>_st_*`), loaded when `load`;
/// the limits formed in the second decode cycle from word 1 `w1` (the
/// dense decoder).
pub(super) fn staged(m: &mut Scope, prefix: &str, rst: Net, w0: Net, load: Net, w1: Net) -> Staged {
    let n = |s: &str| format!("{prefix}_st_{s}");
    let (hw_now, ohow_now) = areas_of(w0);
    let ([hw, ohow], reset) = m.registers([
        (n("hw").as_str(), int(AREA_BITS as i64)),
        (n("ohow").as_str(), int(AREA_BITS as i64)),
    ]);
    let hw_w = m.wire_of(&n("hw_next"), AREA_BITS, hw_now);
    let ohow_w = m.wire_of(&n("ohow_next"), AREA_BITS, ohow_now);
    m.clocked(vec![if_else(
        rst,
        reset,
        vec![when(load, vec![set(hw, hw_w), set(ohow, ohow_w)])],
    )]);
    let (stride_w, start) = staged_walk(m, prefix, rst, w0, load);
    Staged {
        hw,
        stride_w,
        start,
        limits: LimitsFrom::SecondCycle { ohow, w1 },
    }
}

/// What the `none` controller's pre-check reads a cycle ahead of a
/// WINDOW's first decode cycle and in it.
pub(super) struct Ahead {
    /// The word the pre-check takes as the next decode cycle's word 0:
    /// in the cycle before a command's first decode cycle, its word 0.
    pub w0_next: Net,
    /// In a two-word command's first decode cycle, its word 1 as the
    /// pre-check reads it (the memory's read data: no forwarding mux in
    /// front of the multiplier, whose path from the block RAM's output is
    /// the longest this leaves).
    pub w1: Net,
    /// A two-word command's first decode cycle.
    pub first_of_two: Net,
}

/// The staged products of word 0 `w0` (loaded when `load`), and the
/// limits registered in WINDOW's first decode cycle: `h * w` and
/// `oh * ow` (`<prefix>_ah_*`) are formed from `a.w0_next` in every cycle
/// but a two-word command's first decode one, which keeps its own for
/// the second; in that cycle word 1's images multiply them.
pub(super) fn staged_ahead(
    m: &mut Scope,
    prefix: &str,
    rst: Net,
    w0: Net,
    load: Net,
    a: &Ahead,
) -> Staged {
    m.comment("WINDOW: its areas a cycle ahead, its limits in its first decode cycle.");
    let n = |s: &str| format!("{prefix}_ah_{s}");
    let (hw_now, ohow_now) = areas_of(a.w0_next);
    let ([hw, hw_lim, ohow_lim, x_lines, positions], reset) = m.registers([
        // The generator's `h * w`, modulo the address width.
        (n("hw").as_str(), int(COORD_BITS as i64)),
        (n("hw_lim").as_str(), int(LIMIT_BITS as i64)),
        (n("ohow_lim").as_str(), int(LIMIT_BITS as i64)),
        (n("x_lines").as_str(), int(LIMIT_BITS as i64)),
        (n("positions").as_str(), int(LIMIT_BITS as i64)),
    ]);
    let hw_w = m.wire_of(&n("hw_next"), AREA_BITS, hw_now);
    let ohow_w = m.wire_of(&n("ohow_next"), AREA_BITS, ohow_now);
    // An area clamped to the limit's all ones gives the same clamped
    // product (images >= 1 where it is read; 0 faults ZERO_SIZE), and
    // `images * area` then fits one 18 x 18 multiplier with no adder.
    let areas = [
        m.wire_of(&n("hw_clamped"), LIMIT_BITS, clamp(hw_w, AREA_BITS)),
        m.wire_of(&n("ohow_clamped"), LIMIT_BITS, clamp(ohow_w, AREA_BITS)),
    ];
    let (lines_w, positions_w) = limits_of(m, &n("next_"), a.w1, [hw_lim, ohow_lim], LIMIT_BITS);
    m.clocked(vec![if_else(
        rst,
        reset,
        vec![if_else(
            a.first_of_two,
            vec![set(x_lines, lines_w), set(positions, positions_w)],
            vec![
                set(hw, hw_w.bits(COORD_BITS as i64 - 1, 0)),
                set(hw_lim, areas[0]),
                set(ohow_lim, areas[1]),
            ],
        )],
    )]);
    let (stride_w, start) = staged_walk(m, prefix, rst, w0, load);
    Staged {
        hw,
        stride_w,
        start,
        limits: LimitsFrom::FirstCycle { x_lines, positions },
    }
}

/// `stride * w` and position 0's line of `w0` (`<prefix>_st_*`), loaded
/// when `load`: what the generator walks by.
fn staged_walk(m: &mut Scope, prefix: &str, rst: Net, w0: Net, load: Net) -> (Net, Net) {
    m.comment("WINDOW: its products from word 0, in its first decode cycle.");
    let n = |s: &str| format!("{prefix}_st_{s}");
    let f = |fl: Field| field_of(w0, fl, COORD_BITS);
    let stride_w_now = f(field::WIN_STRIDE) * f(field::WIN_W);
    // (ky - pad) * w + kx - pad, modulo 2^COORD_BITS (two's complement).
    let start_now = (f(field::WIN_KY) - f(field::WIN_PAD)) * f(field::WIN_W) + f(field::WIN_KX)
        - f(field::WIN_PAD);
    let ([stride_w, start], reset) = m.registers([
        (n("stride_w").as_str(), int(COORD_BITS as i64)),
        (n("start").as_str(), int(COORD_BITS as i64)),
    ]);
    let sw_w = m.wire_of(&n("stride_w_next"), COORD_BITS, stride_w_now);
    let start_w = m.wire_of(&n("start_next"), COORD_BITS, start_now);
    m.clocked(vec![if_else(
        rst,
        reset,
        vec![when(load, vec![set(stride_w, sw_w), set(start, start_w)])],
    )]);
    (stride_w, start)
}

/// `v` (`bits` wide) clamped to [`LIMIT_BITS`]: all ones if any bit above
/// them is set.
fn clamp(v: Net, bits: u32) -> Expr {
    let hi = v.bits(bits as i64 - 1, LIMIT_BITS as i64).any();
    cond(
        hi,
        ones(LIMIT_BITS as i64),
        v.bits(LIMIT_BITS as i64 - 1, 0),
    )
}

/// The limits (`<prefix>lines_full`, ...) of the images of word 1 `w1`
/// over the areas `hw` and `ohow`: clamped, and 0 without the generator
/// (the pre-check reads them for a WINDOW just before a pass, so they
/// are gated here as well as at the registers).
fn limits_of(m: &mut Scope, prefix: &str, w1: Net, areas: [Net; 2], area_bits: u32) -> (Net, Net) {
    let n = |s: &str| format!("{prefix}{s}");
    let prod_bits = field::WIN_IMAGES.bits + area_bits;
    let images = || {
        widen(
            slice(w1, field::WIN_IMAGES),
            field::WIN_IMAGES.bits,
            prod_bits,
        )
    };
    let wide = |v: Net| zext(prod_bits - area_bits, v);
    let [hw, ohow] = areas;
    let lines = m.wire_of(&n("lines_full"), prod_bits, images() * wide(hw));
    let positions = m.wire_of(&n("positions_full"), prod_bits, images() * wide(ohow));
    let built = |v: Expr| cond(present(), v, lit(LIMIT_BITS, 0));
    let x_lines = m.wire_of(&n("x_lines"), LIMIT_BITS, built(clamp(lines, prod_bits)));
    let positions = m.wire_of(
        &n("positions"),
        LIMIT_BITS,
        built(clamp(positions, prod_bits)),
    );
    (x_lines, positions)
}

/// A WINDOW being decoded, in its second decode cycle: word 0 `w0` and
/// the staged products: the window it sets and its limits
/// (`<prefix>_new_*`), valid.
pub(super) struct Decoded {
    window: Vec<(Part, Expr)>,
    pub x_lines: Net,
    pub positions: Net,
}

pub(super) fn decoded(m: &mut Scope, prefix: &str, w0: Net, st: &Staged) -> Decoded {
    m.comment("WINDOW: the window and its limits, in its second decode cycle.");
    let (x_lines, positions) = match st.limits {
        LimitsFrom::SecondCycle { ohow, w1 } => {
            limits_of(m, &format!("{prefix}_new_"), w1, [st.hw, ohow], AREA_BITS)
        }
        LimitsFrom::FirstCycle { x_lines, positions } => (x_lines, positions),
    };
    let window = PARTS
        .iter()
        .map(|(p, _, _, fl)| {
            let v = match (p, fl) {
                (_, Some(fl)) => part_of(w0, *fl),
                (Part::Hw, None) => st.hw.bits(COORD_BITS as i64 - 1, 0),
                (Part::StrideW, None) => st.stride_w.e(),
                (Part::Start, None) => st.start.e(),
                _ => unreachable!("a derived part"),
            };
            (*p, v)
        })
        .collect();
    Decoded {
        window,
        x_lines,
        positions,
    }
}

/// The window registers `<prefix>_*` and their limits, loaded from `d`
/// when `load` (a WINDOW that goes).
pub(super) fn registers(
    m: &mut Scope,
    prefix: &str,
    rst: Net,
    d: &Decoded,
    load: Net,
) -> (Window, Limits) {
    m.comment("The window (WINDOW's fields and products) and its limits.");
    let mut reset = Vec::new();
    let mut parts = Vec::new();
    for (p, name, bits, _) in PARTS {
        let net = m.reg_of(&format!("{prefix}_{name}"), bits as i64);
        reset.push(set(net, lit(bits, 0)));
        parts.push((p, net));
    }
    let ([valid, x_lines, positions], r2) = m.registers([
        (format!("{prefix}_valid").as_str(), int(1)),
        (format!("{prefix}_x_lines").as_str(), int(LIMIT_BITS as i64)),
        (
            format!("{prefix}_positions").as_str(),
            int(LIMIT_BITS as i64),
        ),
    ]);
    reset.extend(r2);
    let mut loads: Vec<Stmt> = parts
        .iter()
        .zip(&d.window)
        .map(|((_, net), (_, v))| set(*net, v.clone()))
        .collect();
    loads.push(set(valid, lit(1, 1)));
    loads.push(set(x_lines, d.x_lines));
    loads.push(set(positions, d.positions));
    m.clocked(vec![if_else(
        rst,
        reset,
        vec![when(load.and(present()), loads)],
    )]);
    (
        Window(parts),
        Limits {
            valid,
            x_lines,
            positions,
        },
    )
}

/// Where a generator is: the position's line (relative to the stream's
/// base, modulo the address width) and whether it is inside the image.
pub(super) struct Position {
    pub line: Net,
    pub inside: Net,
}

/// A generator `<prefix>_*` over `win`: the position is position 0 when
/// `at_zero`, else the one in its registers; `advance` loads the position
/// after it. Per position: `ox` and `oy` count the output column and row,
/// `ix`/`iy` the input pixel (stepping by `stride`, back to `kx - pad` /
/// `ky - pad` at a wrap), `line` runs by `stride`, `row` (line of the
/// row's first position) by `stride * w`, `img` (line of the image's
/// pixel 0) by `h * w`: no multiply and no divide.
pub(super) fn generator(
    m: &mut Scope,
    prefix: &str,
    rst: Net,
    win: &Window,
    at_zero: Expr,
    advance: Expr,
) -> Position {
    let n = |s: &str| format!("{prefix}_{s}");
    let cb = COORD_BITS;
    let xy = field::WIN_OW.bits;
    let g = |p: Part| win.get(p);
    let to_c = |p: Part, bits: u32| widen(g(p).e(), bits, cb);
    m.comment(format!(
        "Address generator {prefix}: output position (ox, oy), input pixel (ix, iy), lines."
    ));
    let x0 = m.wire_of(
        &n("x0"),
        cb,
        to_c(Part::Kx, field::WIN_KX.bits) - to_c(Part::Pad, field::WIN_PAD.bits),
    );
    let y0 = m.wire_of(
        &n("y0"),
        cb,
        to_c(Part::Ky, field::WIN_KY.bits) - to_c(Part::Pad, field::WIN_PAD.bits),
    );
    let ([ox_q, oy_q, ix_q, iy_q, line_q, row_q, img_q], reset) = m.registers([
        (n("ox_q").as_str(), int(xy as i64)),
        (n("oy_q").as_str(), int(xy as i64)),
        (n("ix_q").as_str(), int(cb as i64)),
        (n("iy_q").as_str(), int(cb as i64)),
        (n("line_q").as_str(), int(cb as i64)),
        (n("row_q").as_str(), int(cb as i64)),
        (n("img_q").as_str(), int(cb as i64)),
    ]);
    // The current position: position 0 from the window, else registered.
    let zero = m.flag(&n("at_zero"), at_zero);
    let pick = |m: &mut Scope, name: &str, bits: u32, first: Expr, q: Net| {
        m.wire_of(&n(name), bits, cond(zero, first, q))
    };
    let ox = pick(m, "ox", xy, lit(xy, 0), ox_q);
    let oy = pick(m, "oy", xy, lit(xy, 0), oy_q);
    let ix = pick(m, "ix", cb, x0.e(), ix_q);
    let iy = pick(m, "iy", cb, y0.e(), iy_q);
    let line = pick(m, "line", cb, g(Part::Start).e(), line_q);
    let row = pick(m, "row", cb, g(Part::Start).e(), row_q);
    let img = pick(m, "img", cb, lit(cb, 0), img_q);
    // Inside: 0 <= ix < w and 0 <= iy < h (the sign bit is the `< 0`).
    let within = |c: Net, p: Part| (!c.at(cb as i64 - 1)).and(c.less(to_c(p, field::WIN_W.bits)));
    let inside = m.flag(&n("inside"), within(ix, Part::W).and(within(iy, Part::H)));
    // The position after: the next column, else the next row's first,
    // else the next image's first.
    let one = || lit(xy, 1);
    let last_x = m.flag(&n("last_x"), ox.equals(g(Part::Ow) - one()));
    let last_y = m.flag(&n("last_y"), oy.equals(g(Part::Oh) - one()));
    let stride = to_c(Part::Stride, field::WIN_STRIDE.bits);
    let img_next = m.wire_of(&n("img_next"), cb, img + g(Part::Hw));
    let row_next = m.wire_of(
        &n("row_next"),
        cb,
        cond(last_y, img_next + g(Part::Start), row + g(Part::StrideW)),
    );
    let step = vec![
        set(ox_q, cond(last_x, lit(xy, 0), ox + one())),
        set(ix_q, cond(last_x, x0.e(), ix + stride.clone())),
        set(line_q, cond(last_x, row_next.e(), line + stride.clone())),
        set(
            oy_q,
            cond(last_x, cond(last_y, lit(xy, 0), oy + one()), oy.e()),
        ),
        set(
            iy_q,
            cond(last_x, cond(last_y, y0.e(), iy + stride), iy.e()),
        ),
        set(row_q, cond(last_x, row_next.e(), row.e())),
        set(img_q, cond(last_x.and(last_y), img_next.e(), img.e())),
    ];
    m.clocked(vec![if_else(rst, reset, vec![when(advance, step)])]);
    Position { line, inside }
}
