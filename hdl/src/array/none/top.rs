//! `sa_top` of the `none` array: the R x C mesh of `sa_pe` with its
//! input skews, output deskews and output registers (the pieces both
//! arrays share are in [`crate::array::core`]).

use super::pe::state;
use crate::array::core::*;
use crate::ir::*;
use crate::params::{AW, C, DW, I, J, R};
use sysgrad_config::ArrayConfig;
use sysgrad_isa::mode::Mode;

/// PE(i,j) with its west and north edge rules.
fn pe_cell(pe: &Module, ports: &TopPorts, mesh: &Mesh, x_sk: Net, dy_sk: Net) -> Scope {
    let widths = state().map(|(f, w, _)| (f, w));
    let width = |flow: Flow| widths.iter().find(|(f, _)| *f == flow).unwrap().1.clone();
    let order = [
        Flow::X,
        Flow::W,
        Flow::D,
        Flow::Dv,
        Flow::Psv,
        Flow::Psh,
        Flow::Dw,
    ];
    let mut cell = Cell::new(mesh, &order.map(|f| (f, width(f))));
    cell.data_west(x_sk);
    cell.north(Flow::W, ports.w_in.lane(J, DW));
    cell.data_north(dy_sk);
    cell.pe(pe, ports, &[])
}

/// The south and east edges: what leaves the mesh.
fn edges(m: &mut Scope, ports: &TopPorts, mesh: &Mesh) -> (Net, Net) {
    let south = || (R - 1) * C + J;
    let east = || I * C + C - 1;
    m.comment("South and east edges. x leaves the east edge and d/dv the south edge");
    m.comment("unread: the *_unused wires (Verilator's --unused-regexp) say so.");
    let y_south = m.wire("y_south", Width::of(C * AW));
    let dx_east = m.wire("dx_east", Width::of(R * AW));
    let mut s = Scope::new();
    s.assign(y_south.lane(J, AW), mesh.out(Flow::Psv).at(south()));
    s.assign(ports.w_out.lane(J, DW), mesh.out(Flow::W).at(south()));
    s.add(wire("d_unused", Width::of(DW)).init(mesh.out(Flow::D).at(south())));
    s.add(wire("dv_unused", Width::bit()).init(mesh.out(Flow::Dv).at(south())));
    m.gen_for(J.name(), C, "g_south", s);
    let mut e = Scope::new();
    e.assign(dx_east.lane(I, AW), mesh.out(Flow::Psh).at(east()));
    e.assign(ports.dw_out.lane(I, AW), mesh.out(Flow::Dw).at(east()));
    e.add(wire("x_unused", Width::of(DW)).init(mesh.out(Flow::X).at(east())));
    m.gen_for(I.name(), R, "g_east", e);
    (y_south, dx_east)
}

pub(crate) fn module(cfg: &ArrayConfig, pe: &Module) -> Module {
    let ports = TopPorts::new();
    let mut m = Scope::new();
    let (x_sk, dy_sk) = input_skews(&mut m, &ports);
    m.comment("Mesh nets, driven by PE(i,j) at index i*C+j.");
    let mesh = Mesh::declare(&mut m, &state().map(|(f, w, _)| (f, w)));
    mesh_loops(&mut m, pe_cell(pe, &ports, &mesh, x_sk, dy_sk));
    let (y_south, dx_east) = edges(&mut m, &ports, &mesh);
    m.comment("Output deskews: column j of y waits C-1-j cycles, row i of dX R-1-i,");
    m.comment("then every lane has its output register (y_q, dx_q).");
    let y_dsk = m.wire("y_dsk", Width::of(C * AW));
    let dx_dsk = m.wire("dx_dsk", Width::of(R * AW));
    bank(&mut m, &ports, DelayBank::YDeskew, AW.e(), y_south, y_dsk);
    bank(&mut m, &ports, DelayBank::DxDeskew, AW.e(), dx_east, dx_dsk);
    output_registers(&mut m, ports.rst, Edge::Cols, "y", AW, y_dsk, ports.y_out);
    output_registers(
        &mut m,
        ports.rst,
        Edge::Rows,
        "dx",
        AW,
        dx_dsk,
        ports.dx_out,
    );
    Module {
        name: TOP_MODULE.into(),
        doc: vec![
            "sa_top: R x C systolic training array (gradient interleaving) with input skews,"
                .into(),
            format!("output deskews and output registers. {}", pe_path_doc()),
            modes_line(&Mode::ALL, "."),
        ],
        params: array_params(cfg, pe)
            .into_iter()
            .chain([mul_reg_param(cfg.multiplier_register())])
            .collect(),
        ports: ports.ports(vec![]),
        genvars: vec![I.name().into(), J.name().into()],
        items: m.into_items(),
    }
}
