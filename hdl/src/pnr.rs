//! The place-and-route wrapper (`sg_pnr_wrap`) of a generated top, built
//! through the IR: its inputs come from one shift register fed by a
//! single pin and its outputs go into registers folded by an XOR tree into
//! one output pin. So every path of the design is timed from a register
//! to a register (as it is inside a larger FPGA design), no logic can be
//! optimised away (every output is observable, every input controllable),
//! and the design fits the pins of any package. `sysgrad-synth` places it
//! (`pnr`), given its text and [`PnrWrapper::registers`].

use crate::files::VerilogFile;
use crate::ir::*;
use sysgrad_config::ArrayConfig;

/// The wrapper's module name.
pub const WRAPPER_TOP: &str = "sg_pnr_wrap";

/// Why a module cannot be wrapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WrapperError {
    #[error("`{0}` is not a module of this configuration")]
    NoModule(String),
    #[error("`{0}` has no 1-bit input `clk` to time")]
    NoClock(String),
    #[error("`{0}` has no outputs: nothing would be placed")]
    NoOutputs(String),
}

/// The wrapper of a top, ready for synthesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnrWrapper {
    /// `sg_pnr_wrap.v`.
    pub file: VerilogFile,
    /// Its module name, the top to synthesise.
    pub top: &'static str,
    /// The registers it adds (input shift register, output registers and
    /// the output pin's).
    pub registers: usize,
}

/// The wrapper's register of port `p`: `in_<port>` or `out_<port>`, so
/// that a critical path from or to the wrapper names the port.
fn port_register(p: &Port) -> String {
    let dir = if p.dir == Dir::Input { "in" } else { "out" };
    format!("{dir}_{}", p.name())
}

/// The wrapper of module `top` of `cfg` (see the module documentation):
/// `clk` is the design's clock; every other input port is fed by its own
/// register `in_<port>`, the registers chained into one shift register
/// from pin `sin`; every output port goes into a register `out_<port>`,
/// all of them XOR-folded into `sout`. Port widths are the module's at
/// `cfg`'s parameter values.
pub fn wrapper(cfg: &ArrayConfig, top: &str) -> Result<PnrWrapper, WrapperError> {
    let module = crate::modules(cfg)
        .into_iter()
        .find(|m| m.name == top)
        .ok_or_else(|| WrapperError::NoModule(top.into()))?;
    let bits = |p: &Port| {
        p.width
            .eval(&|n| module.param_value(n))
            .unwrap_or_else(|| panic!("the width of {top}.{} is not constant", p.name()))
    };
    let clk = module
        .ports
        .iter()
        .find(|p| p.name() == "clk" && p.dir == Dir::Input && bits(p) == 1)
        .ok_or_else(|| WrapperError::NoClock(top.into()))?;
    let ins: Vec<&Port> = module
        .ports
        .iter()
        .filter(|p| p.dir == Dir::Input && p.net != clk.net)
        .collect();
    let outs: Vec<&Port> = module
        .ports
        .iter()
        .filter(|p| p.dir != Dir::Input)
        .collect();
    if outs.is_empty() {
        return Err(WrapperError::NoOutputs(top.into()));
    }
    let pin_clk = input("clk", Width::bit());
    let sin = input("sin", Width::bit());
    let sout = Port {
        dir: Dir::OutputReg,
        ..output("sout", Width::bit())
    };
    let mut m = Scope::new();
    let mut shifts = Vec::new();
    let mut prev = sin.net.e();
    let mut conns = Vec::new();
    for p in &ins {
        let w = bits(p);
        let r = m.reg(&port_register(p), Width::of(w));
        let next = if w == 1 {
            prev.clone()
        } else {
            cat([r.bits(w - 2, 0), prev.clone()])
        };
        shifts.push(set(r, next));
        prev = r.at(w - 1);
        conns.push((p.net, r));
    }
    let mut folds = Vec::new();
    for p in &outs {
        let w = bits(p);
        let q = m.wire(&format!("q_{}", p.name()), Width::of(w));
        let r = m.reg(&port_register(p), Width::of(w));
        shifts.push(set(r, q));
        folds.push(r.e().parity());
        conns.push((p.net, q));
    }
    let fold = folds
        .into_iter()
        .reduce(|a, b| a.bit_xor(b))
        .expect("an output");
    shifts.push(set(sout.net, fold));
    m.clocked(shifts);
    m.instance(Instance {
        module: top.into(),
        name: "u_dut".into(),
        params: vec![],
        conns: module
            .ports
            .iter()
            .map(|p| {
                let e = if p.net == clk.net {
                    pin_clk.net
                } else {
                    conns
                        .iter()
                        .find(|(n, _)| *n == p.net)
                        .expect("every port")
                        .1
                };
                (p.name().to_string(), e.e())
            })
            .collect(),
    });
    let registers = ins
        .iter()
        .chain(&outs)
        .map(|p| bits(p) as usize)
        .sum::<usize>()
        + 1;
    let wrap = Module {
        name: WRAPPER_TOP.into(),
        doc: vec![
            format!(
                "Place-and-route wrapper of {top}: every input from its own register (one shift"
            ),
            "register from pin sin), every output into a register (XOR-folded onto pin sout),"
                .into(),
            format!("so that every path of {top} is timed register to register."),
        ],
        params: vec![],
        ports: vec![pin_clk, sin, sout],
        genvars: vec![],
        items: m.into_items(),
    };
    Ok(PnrWrapper {
        file: VerilogFile {
            name: format!("{WRAPPER_TOP}.v"),
            text: crate::emit::module(&wrap),
        },
        top: WRAPPER_TOP,
        registers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_feeds_every_input_and_folds_every_output() {
        let cfg = ArrayConfig::default_16x16();
        let w = wrapper(&cfg, crate::top_name()).unwrap();
        let text = &w.file.text;
        let (r, c, dw, aw) = (16, 16, 16, 40);
        // rst, mode (4), lr_shift (6), x_in, w_in, dy_in, dy_valid; the
        // four outputs; the output pin.
        let ins = 1 + 4 + 6 + r * dw + c * dw + c * dw + 1;
        let outs = c * aw + r * aw + r * aw + c * dw;
        assert_eq!(w.registers, ins + outs + 1);
        for needle in [
            "output reg sout",
            ".clk(clk),",
            ".rst(in_rst),",
            ".mode(in_mode),",
            ".y_out(q_y_out),",
            "in_rst <= sin;",
            "in_mode <= {in_mode[2:0], in_rst[0]};",
            "in_lr_shift <= {in_lr_shift[4:0], in_mode[3]};",
            "out_y_out <= q_y_out;",
            "sout <= ^out_y_out ^ ^out_dx_out ^ ^out_dw_out ^ ^out_w_out;",
            "reg [0:0] in_rst;",
            "wire [639:0] q_y_out;",
        ] {
            assert!(text.contains(needle), "{needle} not in\n{text}");
        }
        assert_eq!(
            wrapper(&cfg, "sa_nothing").unwrap_err().to_string(),
            "`sa_nothing` is not a module of this configuration"
        );
    }

    #[test]
    fn the_accelerator_is_wrapped_as_the_array_is() {
        let w = wrapper(&ArrayConfig::default_16x16(), crate::accel_top_name()).unwrap();
        assert!(w.file.text.contains("sa_accel u_dut ("));
        assert!(w.file.text.contains(".s_axil_awaddr(in_s_axil_awaddr),"));
    }
}
