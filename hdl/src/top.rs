//! `sa_top`: the R x C mesh of `sa_pe` with its input skews, output
//! deskews and output registers. Neighbour nets are arrays indexed `i*C+j`
//! by the PE that drives them; the edges of the mesh are wired here by
//! generate-if. PE(i,j) is `g_row[i].g_col[j].u_pe`.

use crate::ir::*;
use sysgrad_config::{ArrayConfig, LR_SHIFT_BITS};
use sysgrad_isa::mode::{Mode, MODE_BITS};

/// `e + k` for any sign of `k`, printing `e-1` rather than `e+-1`.
fn offset(e: Expr, k: i64) -> Expr {
    match k {
        0 => e,
        k if k > 0 => e + k,
        k => e - (-k),
    }
}

/// Index of PE(i+di, j+dj) in the mesh net arrays: `(i+di)*C + j+dj`.
pub(crate) fn cell(di: i64, dj: i64) -> Expr {
    offset(offset(id("i"), di) * "C" + "j", dj)
}

/// A skew or deskew bank of `lanes` lanes. With one lane it has no
/// registers (and would leave clk/rst unused), so it is a wire instead.
pub(crate) fn bank(name: &str, lanes: &str, width: Expr, deskew: bool, d: &str, q: &str) -> Item {
    let inst = Item::Instance(Instance {
        module: "sa_skew".into(),
        name: format!("u_{name}"),
        params: vec![
            ("LANES".into(), id(lanes)),
            ("W".into(), width),
            ("DESKEW".into(), int(deskew as i64)),
        ],
        conns: vec![
            conn("clk", "clk"),
            conn("rst", "rst"),
            conn("d", d),
            conn("q", q),
        ],
    });
    gen_if(
        id(lanes).greater(1),
        &format!("g_{name}"),
        vec![inst],
        vec![assign(q, d)],
    )
}

/// PE(i,j)'s input `<net>_i`: `edge` in column 0, else the west
/// neighbour's `<net>_o`.
pub(crate) fn west(net: &str, edge: Expr) -> Item {
    gen_if(
        id("j").equals(0),
        &format!("g_w_{net}"),
        vec![assign(id(&format!("{net}_i")), edge)],
        vec![assign(
            id(&format!("{net}_i")),
            id(&format!("{net}_o")).at(cell(0, -1)),
        )],
    )
}

/// PE(i,j)'s input `<net>_i`: `edge` in row 0, else the north
/// neighbour's `<net>_o`.
pub(crate) fn north(net: &str, edge: Expr) -> Item {
    gen_if(
        id("i").equals(0),
        &format!("g_n_{net}"),
        vec![assign(id(&format!("{net}_i")), edge)],
        vec![assign(
            id(&format!("{net}_i")),
            id(&format!("{net}_o")).at(cell(-1, 0)),
        )],
    )
}

/// The PE at (i, j) with its west and north edge rules.
fn pe_cell() -> Vec<Item> {
    let (j, dy_lane) = (id("j"), id("DW") + 1);
    let mut items = vec![
        wire("x_i", Width::of("DW")).item(),
        wire("w_i", Width::of("DW")).item(),
        wire("d_i", Width::of("DW")).item(),
        wire("dv_i", Width::bit()).item(),
        wire("psv_i", Width::of("AW")).item(),
        wire("psh_i", Width::of("AW")).item(),
        wire("dw_i", Width::of("AW")).item(),
        west("x", id("x_sk").lane("i", "DW")),
        west("psh", zeros("AW")),
        west("dw", zeros("AW")),
        north("w", id("w_in").lane("j", "DW")),
        north("d", id("dy_sk").part(j.clone() * dy_lane.clone(), "DW")),
        north("dv", id("dy_sk").at(j * dy_lane + "DW")),
        north("psv", zeros("AW")),
    ];
    let mut conns = vec![
        conn("clk", "clk"),
        conn("rst", "rst"),
        conn("mode", "mode"),
        conn("lr_shift", "lr_shift"),
    ];
    let nets = ["w", "x", "d", "dv", "psv", "psh", "dw"];
    for n in nets {
        conns.push(conn(&format!("{n}_in"), id(&format!("{n}_i"))));
    }
    for n in nets {
        conns.push(conn(
            &format!("{n}_out"),
            id(&format!("{n}_o")).at(cell(0, 0)),
        ));
    }
    items.push(Item::Instance(Instance {
        module: "sa_pe".into(),
        name: "u_pe".into(),
        params: PE_PARAMS
            .iter()
            .chain(&["MUL_REG"])
            .map(|p| (p.to_string(), id(p)))
            .collect(),
        conns,
    }));
    items
}

/// Output registers `<reg>` of `width` bits in `g_<reg-stem>_out[k]`,
/// loading lane k of `src` every cycle and driving lane k of the output
/// port `out`.
pub(crate) fn output_registers(
    var: &str,
    lanes: &str,
    reg: &str,
    width: &str,
    src: &str,
    out: &str,
) -> Item {
    let mut body = plain_register(reg, Width::of(width), id(src).lane(var, width));
    body.push(assign(id(out).lane(var, width), reg));
    let stem = reg.trim_end_matches("_q");
    gen_for(var, lanes, &format!("g_{stem}_out"), body)
}

pub(crate) fn mesh_net(name: &str, width: Width) -> Item {
    wire(name, width).array(id("R") * "C").item()
}

/// The x and dy input skews, into `x_sk` and `dy_sk` (`{dy_valid, dy}`
/// lanes of DW+1 bits).
pub(crate) fn input_skews() -> Vec<Item> {
    vec![
        Item::Comment(
            "Input skews: row i of x and column j of {dy_valid, dy} are delayed by i and j cycles."
                .into(),
        ),
        wire("x_sk", Width::of(id("R") * "DW")).item(),
        wire("dy_cat", Width::of(id("C") * (id("DW") + 1))).item(),
        wire("dy_sk", Width::of(id("C") * (id("DW") + 1))).item(),
        gen_for(
            "j",
            "C",
            "g_dy_cat",
            vec![assign(
                id("dy_cat").lane("j", id("DW") + 1),
                cat([id("dy_valid"), id("dy_in").lane("j", "DW")]),
            )],
        ),
        bank("xskew", "R", id("DW"), false, "x_in", "x_sk"),
        bank("dyskew", "C", id("DW") + 1, false, "dy_cat", "dy_sk"),
    ]
}

fn items() -> Vec<Item> {
    let (i, j) = (|| id("i"), || id("j"));
    let south = || id("R") - 1;
    let east = || i() * "C" + "C" - 1;
    let mut items = input_skews();
    items.extend([
        Item::Comment("Mesh nets, driven by PE(i,j) at index i*C+j.".into()),
        mesh_net("w_o", Width::of("DW")),
        mesh_net("x_o", Width::of("DW")),
        mesh_net("d_o", Width::of("DW")),
        mesh_net("dv_o", Width::bit()),
        mesh_net("psv_o", Width::of("AW")),
        mesh_net("psh_o", Width::of("AW")),
        mesh_net("dw_o", Width::of("AW")),
        gen_for(
            "i",
            "R",
            "g_row",
            vec![gen_for("j", "C", "g_col", pe_cell())],
        ),
        Item::Comment(
            "South and east edges. x leaves the east edge and d/dv the south edge".into(),
        ),
        Item::Comment("unread: the *_unused wires (Verilator's --unused-regexp) say so.".into()),
        wire("y_south", Width::of(id("C") * "AW")).item(),
        wire("dx_east", Width::of(id("R") * "AW")).item(),
        gen_for(
            "j",
            "C",
            "g_south",
            vec![
                assign(
                    id("y_south").lane("j", "AW"),
                    id("psv_o").at(south() * "C" + j()),
                ),
                assign(
                    id("w_out").lane("j", "DW"),
                    id("w_o").at(south() * "C" + j()),
                ),
                wire("d_unused", Width::of("DW"))
                    .init(id("d_o").at(south() * "C" + j()))
                    .item(),
                wire("dv_unused", Width::bit())
                    .init(id("dv_o").at(south() * "C" + j()))
                    .item(),
            ],
        ),
        gen_for(
            "i",
            "R",
            "g_east",
            vec![
                assign(id("dx_east").lane("i", "AW"), id("psh_o").at(east())),
                assign(id("dw_out").lane("i", "AW"), id("dw_o").at(east())),
                wire("x_unused", Width::of("DW"))
                    .init(id("x_o").at(east()))
                    .item(),
            ],
        ),
        Item::Comment(
            "Output deskews: column j of y waits C-1-j cycles, row i of dX R-1-i,".into(),
        ),
        Item::Comment("then every lane has its output register (y_q, dx_q).".into()),
        wire("y_dsk", Width::of(id("C") * "AW")).item(),
        wire("dx_dsk", Width::of(id("R") * "AW")).item(),
        bank("ydeskew", "C", id("AW"), true, "y_south", "y_dsk"),
        bank("dxdeskew", "R", id("AW"), true, "dx_east", "dx_dsk"),
        output_registers("j", "C", "y_q", "AW", "y_dsk", "y_out"),
        output_registers("i", "R", "dx_q", "AW", "dx_dsk", "dx_out"),
    ]);
    items
}

/// `Modes: 0 IDLE, 1 LOAD, ...` for a module header.
pub(crate) fn modes_line(modes: &[Mode], rest: &str) -> String {
    let list: Vec<String> = modes
        .iter()
        .map(|m| format!("{} {}", m.code(), m.name()))
        .collect();
    format!("Modes: {}{rest}", list.join(", "))
}

/// The array's parameters with `cfg`'s values as defaults; `sa_accel`
/// has the same ones (and passes them down).
pub(crate) fn array_params(cfg: &ArrayConfig) -> Vec<Param> {
    let f = cfg.format();
    vec![
        param("R", cfg.rows() as i64, "PE rows (reduction dimension K)"),
        param("C", cfg.cols() as i64, "PE columns (output dimension M)"),
        param("DW", f.in_bits.into(), "data width"),
        param("AW", f.acc_bits.into(), "accumulator width"),
        param("FRAC", f.frac_bits.into(), "fractional bits of data"),
        param(
            "INTERLEAVED",
            cfg.interleaved().into(),
            "1: interleaved backward PEs",
        ),
    ]
    .into_iter()
    .chain(lr_params(cfg.fixed_lr_shift()))
    .chain((!cfg.dense()).then(|| mul_reg_param(cfg.multiplier_register())))
    .collect()
}

/// `MUL_REG` with `on` as its default: the `none` array's, and its PE's
/// (which the array overrides) with `false`. The dense array has none.
pub(crate) fn mul_reg_param(on: bool) -> Param {
    param(
        "MUL_REG",
        on.into(),
        "1: a register after each multiplier (every result one cycle later)",
    )
}

/// `LR_FIXED` and `LR_SHIFT` with `fixed`'s values as defaults: the
/// array's, and a PE's (which its array overrides) with `None`.
pub(crate) fn lr_params(fixed: Option<u32>) -> [Param; 2] {
    [
        param(
            "LR_FIXED",
            fixed.is_some().into(),
            "1: the SGD shift is the constant LR_SHIFT (no barrel shifter; the lr_shift port is ignored)",
        ),
        param(
            "LR_SHIFT",
            fixed.unwrap_or(0).into(),
            "the constant SGD shift when LR_FIXED = 1 (0..63)",
        ),
    ]
}

/// The parameters every PE takes from its array.
pub(crate) const PE_PARAMS: [&str; 6] = ["DW", "AW", "FRAC", "INTERLEAVED", "LR_FIXED", "LR_SHIFT"];

/// The ports of the `none` array (a dense one has the wave inputs too).
pub(crate) fn ports() -> Vec<Port> {
    vec![
        input("clk", Width::bit()),
        input("rst", Width::bit()),
        input("mode", Width::of(MODE_BITS)),
        input("lr_shift", Width::of(LR_SHIFT_BITS)),
        input("x_in", Width::of(id("R") * "DW")),
        input("w_in", Width::of(id("C") * "DW")),
        input("dy_in", Width::of(id("C") * "DW")),
        input("dy_valid", Width::bit()),
        output("y_out", Width::of(id("C") * "AW")),
        output("dx_out", Width::of(id("R") * "AW")),
        output("dw_out", Width::of(id("R") * "AW")),
        output("w_out", Width::of(id("C") * "DW")),
    ]
}

pub fn module(cfg: &ArrayConfig) -> Module {
    Module {
        name: "sa_top".into(),
        doc: vec![
            "sa_top: R x C systolic training array (gradient interleaving) with input skews,"
                .into(),
            "output deskews and output registers. PE(i,j) is g_row[i].g_col[j].u_pe.".into(),
            modes_line(&Mode::ALL, "."),
        ],
        params: array_params(cfg),
        ports: ports(),
        genvars: vec!["i".into(), "j".into()],
        items: items(),
    }
}
