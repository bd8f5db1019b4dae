//! `sa_top` of a dense array (`docs/ARCHITECTURE.md`, Dense pipelining):
//! the mesh of dense `sa_pe`, the `none` array's x and dy skews and y and
//! dX deskews, and three banks only a dense array has: the control skew
//! (the wave's control word, row i delayed i cycles, so the control
//! travels with the data), the w skew (the slots' weights, column j
//! delayed j) and the w deskew before the `w_q` output registers (so the
//! weights a wave's slot evicts leave all columns together).

use crate::ctl;
use crate::dense_pe::data_state;
use crate::ir::*;
use crate::top::{
    array_params, bank, cell, input_skews, mesh_net, modes_line, north, output_registers, ports,
    west,
};
use sysgrad_config::ArrayConfig;
use sysgrad_isa::mode::{load_row_bits, Mode, MODE_BITS};
use sysgrad_isa::wave::WaveField;

/// The wave inputs, after `dy_valid`: every field of the control word but
/// the learning-rate shift, which is the `lr_shift` port.
fn wave_ports() -> Vec<Port> {
    WaveField::wave_inputs()
        .map(|f| input(f.port(), ctl::field_width(f)))
        .collect()
}

/// The control word of this cycle's wave and the control skew.
fn control_skew() -> Vec<Item> {
    let stream = Mode::Stream;
    let cw = ctl::word_bits;
    vec![
        localparam(
            &stream.verilog_name(),
            Width::of(MODE_BITS),
            lit(MODE_BITS, stream.code().into()),
        ),
        Item::Comment(
            "The control word {op, swap, update, lr, load, load_row} of this cycle's wave: the"
                .into(),
        ),
        Item::Comment(
            "wave inputs in STREAM cycles, a bubble (all zeros) in every other mode. Row i's lane"
                .into(),
        ),
        Item::Comment(
            "of the control skew delays it by i cycles, as the x skew does the data.".into(),
        ),
        wire("ctl_word", Width::of(cw()))
            .init(cond(
                id("mode").equals(id(&stream.verilog_name())),
                ctl::pack(|f| id(f.port())),
                zeros(cw()),
            ))
            .item(),
        wire("ctl_cat", Width::of(id("R") * cw()))
            .init(repeat("R", "ctl_word"))
            .item(),
        wire("ctl_sk", Width::of(id("R") * cw())).item(),
        bank("ctlskew", "R", cw(), false, "ctl_cat", "ctl_sk"),
    ]
}

fn w_skew() -> Vec<Item> {
    vec![
        Item::Comment(
            "w skew: column j of w_in (an exchange slot's weights) is delayed by j cycles.".into(),
        ),
        wire("w_sk", Width::of(id("C") * "DW")).item(),
        bank("wskew", "C", id("DW"), false, "w_in", "w_sk"),
    ]
}

/// The PE at (i, j) with its west and north edge rules.
fn pe_cell() -> Vec<Item> {
    let (j, dy_lane) = (id("j"), id("DW") + 1);
    let mut items: Vec<Item> = data_state()
        .into_iter()
        .map(|(n, width, _)| wire(&format!("{n}_i"), width).item())
        .collect();
    items.extend([
        wire("c_i", Width::of(ctl::word_bits())).item(),
        west("x", id("x_sk").lane("i", "DW")),
        west("psh", zeros("AW")),
        west("dw", zeros("AW")),
        west("c", id("ctl_sk").lane("i", ctl::word_bits())),
        north("d", id("dy_sk").part(j.clone() * dy_lane.clone(), "DW")),
        north("dv", id("dy_sk").at(j * dy_lane + "DW")),
        north("psv", zeros("AW")),
        north("wp", id("w_sk").lane("j", "DW")),
        Item::Comment("The PE compares the row of a slot with its own.".into()),
        localparam("ROW", Width::of(ctl::RB), id("i")),
    ]);
    let mut conns = vec![
        conn("clk", "clk"),
        conn("rst", "rst"),
        conn("mode", "mode"),
        conn("lr_shift", "lr_shift"),
        conn("row", "ROW"),
    ];
    let nets: Vec<&str> = data_state().iter().map(|(n, ..)| *n).chain(["c"]).collect();
    for n in &nets {
        conns.push(conn(&format!("{n}_in"), id(&format!("{n}_i"))));
    }
    for n in &nets {
        conns.push(conn(
            &format!("{n}_out"),
            id(&format!("{n}_o")).at(cell(0, 0)),
        ));
    }
    items.push(Item::Instance(Instance {
        module: "sa_pe".into(),
        name: "u_pe".into(),
        params: crate::top::PE_PARAMS
            .iter()
            .chain(&[ctl::RB])
            .map(|p| (p.to_string(), id(p)))
            .collect(),
        conns,
    }));
    items
}

fn mesh() -> Vec<Item> {
    let mut items = vec![Item::Comment(
        "Mesh nets, driven by PE(i,j) at index i*C+j.".into(),
    )];
    for (n, width, _) in data_state() {
        items.push(mesh_net(&format!("{n}_o"), width));
    }
    items.push(mesh_net("c_o", Width::of(ctl::word_bits())));
    items.push(gen_for(
        "i",
        "R",
        "g_row",
        vec![gen_for("j", "C", "g_col", pe_cell())],
    ));
    items
}

/// What leaves the south and east edges, and the output side.
fn edges_and_outputs() -> Vec<Item> {
    let south = |net: &str| id(net).at((id("R") - 1) * "C" + "j");
    let east = |net: &str| id(net).at(id("i") * "C" + "C" - 1);
    vec![
        Item::Comment(
            "South and east edges. x and the control leave the east edge and d/dv the south".into(),
        ),
        Item::Comment(
            "edge unread: the *_unused wires (Verilator's --unused-regexp) say so.".into(),
        ),
        wire("y_south", Width::of(id("C") * "AW")).item(),
        wire("w_south", Width::of(id("C") * "DW")).item(),
        wire("dx_east", Width::of(id("R") * "AW")).item(),
        gen_for(
            "j",
            "C",
            "g_south",
            vec![
                assign(id("y_south").lane("j", "AW"), south("psv_o")),
                assign(id("w_south").lane("j", "DW"), south("wp_o")),
                wire("d_unused", Width::of("DW")).init(south("d_o")).item(),
                wire("dv_unused", Width::bit()).init(south("dv_o")).item(),
            ],
        ),
        gen_for(
            "i",
            "R",
            "g_east",
            vec![
                assign(id("dx_east").lane("i", "AW"), east("psh_o")),
                // As on the `none` array (the dense section keeps dw_out).
                assign(id("dw_out").lane("i", "AW"), east("dw_o")),
                wire("x_unused", Width::of("DW")).init(east("x_o")).item(),
                wire("c_unused", Width::of(ctl::word_bits()))
                    .init(east("c_o"))
                    .item(),
            ],
        ),
        Item::Comment(
            "Output deskews: column j of y and of the weight stream waits C-1-j cycles, row i"
                .into(),
        ),
        Item::Comment(
            "of dX R-1-i, then every lane has its output register (y_q, dx_q, w_q).".into(),
        ),
        wire("y_dsk", Width::of(id("C") * "AW")).item(),
        wire("dx_dsk", Width::of(id("R") * "AW")).item(),
        wire("w_dsk", Width::of(id("C") * "DW")).item(),
        bank("ydeskew", "C", id("AW"), true, "y_south", "y_dsk"),
        bank("dxdeskew", "R", id("AW"), true, "dx_east", "dx_dsk"),
        bank("wdeskew", "C", id("DW"), true, "w_south", "w_dsk"),
        output_registers("j", "C", "y_q", "AW", "y_dsk", "y_out"),
        output_registers("i", "R", "dx_q", "AW", "dx_dsk", "dx_out"),
        output_registers("j", "C", "w_q", "DW", "w_dsk", "w_out"),
    ]
}

/// ARCHITECTURE.md names an `sa_top` parameter `DENSE = 1`; this text has
/// none: the dense array is its own module text (a `DENSE` no logic read
/// would be an unused parameter for `verilator -Wall`, and 0 could mean
/// nothing here). `RB` is a parameter whose default comes from R.
pub fn module(cfg: &ArrayConfig) -> Module {
    let mut ports = ports();
    let after_valid = ports.iter().position(|p| p.name == "dy_valid").unwrap() + 1;
    ports.splice(after_valid..after_valid, wave_ports());
    let mut params = array_params(cfg);
    params.push(param(
        ctl::RB,
        load_row_bits(cfg.rows()).into(),
        "bits of wave_load_row: max(1, ceil(log2 R))",
    ));
    let mut items = control_skew();
    items.extend(input_skews());
    items.extend(w_skew());
    items.extend(mesh());
    items.extend(edges_and_outputs());
    Module {
        name: "sa_top".into(),
        doc: vec![
            "sa_top (dense): R x C systolic training array streaming waves, with control, x, dy"
                .into(),
            "and w skews, y, dX and w deskews and output registers. PE(i,j) is g_row[i].g_col[j].u_pe."
                .into(),
            modes_line(&Mode::DENSE, "; every other code is a bubble."),
        ],
        params,
        ports,
        genvars: vec!["i".into(), "j".into()],
        items,
    }
}
