//! `sa_top` of a dense array (`docs/ARCHITECTURE.md`, Dense pipelining):
//! the mesh of dense `sa_pe`, the x and dy skews and y and dX deskews
//! both arrays have, and three banks only a dense array has: the control
//! skew (the wave's control word, row i delayed i cycles, so the control
//! travels with the data), the w skew (the slots' weights, column j
//! delayed j) and the w deskew before the `w_q` output registers (so the
//! weights a wave's slot evicts leave all columns together).

use super::ctl;
use super::pe::data_state;
use crate::array::core::*;
use crate::ir::*;
use crate::params::{AW, C, DW, I, J, R, RB};
use sysgrad_config::ArrayConfig;
use sysgrad_isa::mode::{load_row_bits, Mode};
use sysgrad_isa::wave::WaveField;

/// The banks only a dense array has (a separate type, so that code
/// matching on [`DelayBank`] for both arrays stays exhaustive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenseBank {
    /// Row i delays the control word `{op, swap, update, lr, load,
    /// load_row}` by i cycles.
    CtlSkew,
    /// Column j delays `w_in[j]` by j cycles.
    WSkew,
    /// Column j delays `wp` of PE(R-1, j) by C-1-j cycles, before `w_q[j]`.
    WDeskew,
}

impl Bank for DenseBank {
    fn stem(self) -> &'static str {
        match self {
            DenseBank::CtlSkew => "ctlskew",
            DenseBank::WSkew => "wskew",
            DenseBank::WDeskew => "wdeskew",
        }
    }
    fn edge(self) -> Edge {
        match self {
            DenseBank::CtlSkew => Edge::Rows,
            DenseBank::WSkew | DenseBank::WDeskew => Edge::Cols,
        }
    }
    fn deskew(self) -> bool {
        self == DenseBank::WDeskew
    }
}

/// The wave inputs, after `dy_valid`: every field of the control word but
/// the learning-rate shift, which is the `lr_shift` port.
fn wave_ports() -> Vec<Port> {
    WaveField::wave_inputs()
        .map(|f| Port {
            dir: Dir::Input,
            net: wave_port(f),
            width: ctl::field_width(f),
            signed: false,
        })
        .collect()
}

/// The array's input port of a wave field (the dense controller drives
/// it): named by `sysgrad_isa::wave`.
pub(crate) fn wave_port(f: WaveField) -> Net {
    Net::named(f.port())
}

/// The control word of this cycle's wave and the control skew.
fn control_skew(m: &mut Scope, ports: &TopPorts, waves: &[Port]) -> Net {
    let stream = Mode::Stream;
    let cw = ctl::word_bits;
    let m_stream = mode_constants(m, &[stream]).of(stream);
    m.comment("The control word {op, swap, update, lr, load, load_row} of this cycle's wave: the");
    m.comment(
        "wave inputs in STREAM cycles, a bubble (all zeros) in every other mode. Row i's lane",
    );
    m.comment("of the control skew delays it by i cycles, as the x skew does the data.");
    let field_port = |f: WaveField| {
        if f == WaveField::Lr {
            return ports.lr_shift.e();
        }
        let port = wave_port(f);
        assert!(
            waves.iter().any(|p| p.net == port),
            "a wave input per field"
        );
        port.e()
    };
    let ctl_word = m.wire_of(
        "ctl_word",
        cw(),
        cond(
            ports.mode.equals(m_stream),
            ctl::pack(field_port),
            zeros(cw()),
        ),
    );
    let ctl_cat = m.wire_of("ctl_cat", R * cw(), repeat(R, ctl_word));
    let ctl_sk = m.wire("ctl_sk", Width::of(R * cw()));
    bank(m, ports, DenseBank::CtlSkew, cw(), ctl_cat, ctl_sk);
    ctl_sk
}

/// PE(i,j) with its west and north edge rules.
/// `skews`: the x, dy, control and w skews' outputs.
fn pe_cell(pe: &Module, ports: &TopPorts, mesh: &Mesh, skews: [Net; 4]) -> Scope {
    let [x_sk, dy_sk, ctl_sk, w_sk] = skews;
    let flows: Vec<(Flow, Width)> = super::pe::flows()
        .into_iter()
        .map(|(f, w, _)| (f, w))
        .collect();
    let mut cell = Cell::new(mesh, &flows);
    cell.data_west(x_sk);
    cell.west(Flow::C, ctl_sk.lane(I, ctl::word_bits()));
    cell.data_north(dy_sk);
    cell.north(Flow::Wp, w_sk.lane(J, DW));
    let m = cell.scope();
    m.comment("The PE compares the row of a slot with its own.");
    let row = m.localparam("ROW", Width::of(RB), I);
    cell.pe(pe, ports, &[(super::pe::row_port(), row.e())])
}

/// What leaves the south and east edges, and the output side.
fn edges_and_outputs(m: &mut Scope, ports: &TopPorts, mesh: &Mesh) {
    let south = |f: Flow| mesh.out(f).at((R - 1) * C + J);
    let east = |f: Flow| mesh.out(f).at(I * C + C - 1);
    m.comment("South and east edges. x and the control leave the east edge and d/dv the south");
    m.comment("edge unread: the *_unused wires (Verilator's --unused-regexp) say so.");
    let y_south = m.wire("y_south", Width::of(C * AW));
    let w_south = m.wire("w_south", Width::of(C * DW));
    let dx_east = m.wire("dx_east", Width::of(R * AW));
    let mut s = Scope::new();
    s.assign(y_south.lane(J, AW), south(Flow::Psv));
    s.assign(w_south.lane(J, DW), south(Flow::Wp));
    s.add(wire("d_unused", Width::of(DW)).init(south(Flow::D)));
    s.add(wire("dv_unused", Width::bit()).init(south(Flow::Dv)));
    m.gen_for(J.name(), C, "g_south", s);
    let mut e = Scope::new();
    e.assign(dx_east.lane(I, AW), east(Flow::Psh));
    // As on the `none` array (the dense section keeps dw_out).
    e.assign(ports.dw_out.lane(I, AW), east(Flow::Dw));
    e.add(wire("x_unused", Width::of(DW)).init(east(Flow::X)));
    e.add(wire("c_unused", Width::of(ctl::word_bits())).init(east(Flow::C)));
    m.gen_for(I.name(), R, "g_east", e);
    m.comment("Output deskews: column j of y and of the weight stream waits C-1-j cycles, row i");
    m.comment("of dX R-1-i, then every lane has its output register (y_q, dx_q, w_q).");
    let y_dsk = m.wire("y_dsk", Width::of(C * AW));
    let dx_dsk = m.wire("dx_dsk", Width::of(R * AW));
    let w_dsk = m.wire("w_dsk", Width::of(C * DW));
    bank(m, ports, DelayBank::YDeskew, AW.e(), y_south, y_dsk);
    bank(m, ports, DelayBank::DxDeskew, AW.e(), dx_east, dx_dsk);
    bank(m, ports, DenseBank::WDeskew, DW.e(), w_south, w_dsk);
    output_registers(m, ports.rst, Edge::Cols, "y", AW, y_dsk, ports.y_out);
    output_registers(m, ports.rst, Edge::Rows, "dx", AW, dx_dsk, ports.dx_out);
    output_registers(m, ports.rst, Edge::Cols, "w", DW, w_dsk, ports.w_out);
}

/// ARCHITECTURE.md names an `sa_top` parameter `DENSE = 1`; this text has
/// none: the dense array is its own module text (a `DENSE` no logic read
/// would be an unused parameter for `verilator -Wall`, and 0 could mean
/// nothing here). `RB` is a parameter whose default comes from R.
pub(crate) fn module(cfg: &ArrayConfig, pe: &Module) -> Module {
    let ports = TopPorts::new();
    let waves = wave_ports();
    let mut m = Scope::new();
    let ctl_sk = control_skew(&mut m, &ports, &waves);
    let (x_sk, dy_sk) = input_skews(&mut m, &ports);
    m.comment("w skew: column j of w_in (an exchange slot's weights) is delayed by j cycles.");
    let w_sk = m.wire("w_sk", Width::of(C * DW));
    bank(&mut m, &ports, DenseBank::WSkew, DW.e(), ports.w_in, w_sk);
    m.comment("Mesh nets, driven by PE(i,j) at index i*C+j.");
    let flows: Vec<(Flow, Width)> = super::pe::flows()
        .into_iter()
        .map(|(f, w, _)| (f, w))
        .collect();
    let mesh = Mesh::declare(&mut m, &flows);
    debug_assert_eq!(data_state().len() + 1, flows.len());
    mesh_loops(
        &mut m,
        pe_cell(pe, &ports, &mesh, [x_sk, dy_sk, ctl_sk, w_sk]),
    );
    edges_and_outputs(&mut m, &ports, &mesh);
    let mut params = array_params(cfg, pe);
    params.push(param(
        RB.name(),
        load_row_bits(cfg.rows()).into(),
        "bits of wave_load_row: max(1, ceil(log2 R))",
    ));
    Module {
        name: TOP_MODULE.into(),
        doc: vec![
            "sa_top (dense): R x C systolic training array streaming waves, with control, x, dy"
                .into(),
            format!(
                "and w skews, y, dX and w deskews and output registers. {}",
                pe_path_doc()
            ),
            modes_line(&Mode::DENSE, "; every other code is a bubble."),
        ],
        params,
        ports: ports.ports(waves),
        genvars: vec![I.name().into(), J.name().into()],
        items: m.into_items(),
    }
}
