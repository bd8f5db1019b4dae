//! `sa_top`: the R x C mesh of `sa_pe` with its input skews and output
//! deskews. Neighbour nets are arrays indexed `i*C + j` by the PE that
//! drives them; the edges of the mesh are wired here by generate-if.

use crate::ir::*;
use sysgrad_config::ArrayConfig;

fn w(s: &str) -> Width {
    Width::of(s)
}

fn skew(name: &str, lanes: &str, width: &str, deskew: u8, extra: u8, d: &str, q: &str) -> Item {
    Item::Instance(Instance {
        module: "sa_skew".into(),
        name: name.into(),
        params: vec![
            ("LANES".into(), lanes.into()),
            ("W".into(), width.into()),
            ("DESKEW".into(), deskew.to_string().into()),
            ("EXTRA".into(), extra.to_string().into()),
        ],
        conns: vec![
            conn("clk", "clk"),
            conn("rst", "rst"),
            conn("d", d),
            conn("q", q),
        ],
    })
}

/// An input skew; with one lane it has no registers and is just a wire.
fn input_skew(lanes: &str, name: &str, width: &str, d: &str, q: &str) -> Item {
    Item::GenIf {
        cond: format!("{lanes} > 1").into(),
        label: format!("g_{}", &name[2..]),
        then: vec![skew(name, lanes, width, 0, 0, d, q)],
        els: vec![assign(q, d)],
    }
}

/// The PE at (i, j) with its west and north edge rules.
fn pe_cell() -> Vec<Item> {
    let here = "i*C+j";
    let west = |net: &str, edge: Expr| Item::GenIf {
        cond: "j == 0".into(),
        label: format!("g_w_{net}"),
        then: vec![assign(format!("{net}_i"), edge)],
        els: vec![assign(format!("{net}_i"), format!("{net}_o[i*C+j-1]"))],
    };
    let north = |net: &str, edge: Expr| Item::GenIf {
        cond: "i == 0".into(),
        label: format!("g_n_{net}"),
        then: vec![assign(format!("{net}_i"), edge)],
        els: vec![assign(format!("{net}_i"), format!("{net}_o[(i-1)*C+j]"))],
    };
    let mut items = vec![
        wire("x_i", w("DW")).item(),
        wire("w_i", w("DW")).item(),
        wire("d_i", w("DW")).item(),
        wire("dv_i", Width::bit()).item(),
        wire("psv_i", w("AW")).item(),
        wire("psh_i", w("AW")).item(),
        wire("dw_i", w("AW")).item(),
        west("x", Expr::lane("x_sk", "i", "DW")),
        west("psh", Expr::zeros("AW")),
        west("dw", Expr::zeros("AW")),
        north("w", Expr::lane("w_in", "j", "DW")),
        north("d", Expr::new("dy_sk[j*(DW+1) +: DW]")),
        north("dv", Expr::new("dy_sk[j*(DW+1) + DW]")),
        north("psv", Expr::zeros("AW")),
    ];
    let mut conns = vec![
        conn("clk", "clk"),
        conn("rst", "rst"),
        conn("mode", "mode"),
        conn("lr_shift", "lr_shift"),
    ];
    for n in ["w", "x", "d", "dv", "psv", "psh", "dw"] {
        conns.push(conn(&format!("{n}_in"), format!("{n}_i")));
    }
    for n in ["w", "x", "d", "dv", "psv", "psh", "dw"] {
        conns.push(conn(&format!("{n}_out"), format!("{n}_o[{here}]")));
    }
    items.push(Item::Instance(Instance {
        module: "sa_pe".into(),
        name: "u_pe".into(),
        params: ["DW", "AW", "FRAC", "INTERLEAVED"]
            .iter()
            .map(|p| (p.to_string(), Expr::from(*p)))
            .collect(),
        conns,
    }));
    items
}

pub fn module(cfg: &ArrayConfig) -> Module {
    let f = cfg.format;
    let mesh_nets = vec![
        wire("x_o", w("DW")).array("R*C").item(),
        wire("d_o", w("DW")).array("R*C").item(),
        wire("dv_o", Width::bit()).array("R*C").item(),
    ];
    let items = vec![
        Item::Comment("Input skews: row i of x and column j of {dy_valid, dy} are delayed by i and j cycles.".into()),
        wire("x_sk", w("R*DW")).item(),
        wire("dy_cat", w("C*(DW+1)")).item(),
        wire("dy_sk", w("C*(DW+1)")).item(),
        Item::GenFor {
            var: "j".into(),
            count: "C".into(),
            label: "g_dy_cat".into(),
            body: vec![assign("dy_cat[j*(DW+1) +: DW+1]", "{dy_valid, dy_in[j*DW +: DW]}")],
        },
        input_skew("R", "u_xskew", "DW", "x_in", "x_sk"),
        input_skew("C", "u_dyskew", "DW+1", "dy_cat", "dy_sk"),
        Item::Comment("Mesh nets, driven by PE(i,j) at index i*C+j.".into()),
        wire("w_o", w("DW")).array("R*C").item(),
        wire("psv_o", w("AW")).array("R*C").item(),
        wire("psh_o", w("AW")).array("R*C").item(),
        wire("dw_o", w("AW")).array("R*C").item(),
        Item::LintOff {
            rule: "UNUSEDSIGNAL".into(),
            why: "x leaves the east edge and d/dv the south edge of the mesh unused.".into(),
            items: mesh_nets,
        },
        Item::GenFor {
            var: "i".into(),
            count: "R".into(),
            label: "g_row".into(),
            body: vec![Item::GenFor { var: "j".into(), count: "C".into(), label: "g_col".into(), body: pe_cell() }],
        },
        Item::Comment("Output deskews: column j of y waits C-1-j cycles, row i of dX R-1-i, then an output register.".into()),
        wire("y_raw", w("C*AW")).item(),
        wire("dx_raw", w("R*AW")).item(),
        Item::GenFor {
            var: "j".into(),
            count: "C".into(),
            label: "g_south".into(),
            body: vec![
                assign(Expr::lane("y_raw", "j", "AW"), "psv_o[(R-1)*C+j]"),
                assign(Expr::lane("w_out", "j", "DW"), "w_o[(R-1)*C+j]"),
            ],
        },
        Item::GenFor {
            var: "i".into(),
            count: "R".into(),
            label: "g_east".into(),
            body: vec![
                assign(Expr::lane("dx_raw", "i", "AW"), "psh_o[i*C+C-1]"),
                assign(Expr::lane("dw_out", "i", "AW"), "dw_o[i*C+C-1]"),
            ],
        },
        skew("u_ydeskew", "C", "AW", 1, 1, "y_raw", "y_out"),
        skew("u_dxdeskew", "R", "AW", 1, 1, "dx_raw", "dx_out"),
    ];
    Module {
        name: "sa_top".into(),
        doc: vec![
            format!(
                "sa_top: {}x{} gradient-interleaving systolic training array with skew/deskew.",
                cfg.rows(),
                cfg.cols()
            ),
            "Modes: 0 IDLE, 1 LOAD, 2 FWD, 3 BWD_DX, 4 BWD_DW, 5 BWD_IL, 6 UPDATE, 7 DRAIN.".into(),
        ],
        params: vec![
            param("R", cfg.rows() as i64, "PE rows (reduction dimension K)"),
            param("C", cfg.cols() as i64, "PE columns (output dimension M)"),
            param("DW", f.in_bits as i64, "data width"),
            param("AW", f.acc_bits as i64, "accumulator width"),
            param("FRAC", f.frac_bits as i64, "fractional bits of data"),
            param(
                "INTERLEAVED",
                cfg.interleaved() as i64,
                "1: interleaved backward PEs",
            ),
        ],
        ports: vec![
            input("clk", Width::bit()),
            input("rst", Width::bit()),
            input("mode", w("4")),
            input("lr_shift", w("6")),
            input("x_in", w("R*DW")),
            input("w_in", w("C*DW")),
            input("dy_in", w("C*DW")),
            input("dy_valid", Width::bit()),
            output("y_out", w("C*AW")),
            output("dx_out", w("R*AW")),
            output("dw_out", w("R*AW")),
            output("w_out", w("C*DW")),
        ],
        genvars: vec!["i".into(), "j".into()],
        items,
    }
}
