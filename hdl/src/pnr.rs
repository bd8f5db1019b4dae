//! The place-and-route wrapper (`sg_pnr_wrap`) of a generated top, built
//! through the IR: its inputs come from one shift register fed by a
//! single pin and its outputs go into registers folded by a registered
//! XOR tree into one output pin. So every path of the design is timed
//! from a register to a register (as it is inside a larger FPGA design),
//! no logic can be optimised away (every output is observable, every
//! input controllable), and the design fits the pins of any package.
//! `sysgrad-synth` places it (`pnr`), given its text and
//! [`PnrWrapper::registers`].
//!
//! The wrapper must never be the critical path, or Fmax measures it and
//! not the design. So no wrapper path has more than one LUT between two
//! registers: the input shift register is register to register (no
//! logic), and the fold is a tree of registered levels, each register the
//! parity of at most [`FOLD_FAN_IN`] bits of the level below (one 4-input
//! LUT on ECP5 and iCE40), down to `sout`. A fold in one cycle (every
//! output bit into one XOR, about 750 bits on a 4x4 array with 16-bit
//! data: a tree of five LUT levels and their routing) limited a 4x4 array
//! that reaches 142 MHz by hand-restructured PEs to 111 MHz (issue 32).

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
    /// the fold's levels, the output pin's included).
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
/// all of them folded into `sout` by the registered XOR tree of
/// [`fold_levels`]. Port widths are the module's at
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
    let mut outs_regs = Vec::new();
    for p in &outs {
        let w = bits(p);
        let q = m.wire(&format!("q_{}", p.name()), Width::of(w));
        let r = m.reg(&port_register(p), Width::of(w));
        shifts.push(set(r, q));
        outs_regs.push(r.e());
        conns.push((p.net, q));
    }
    m.clocked(shifts);
    let out_bits: usize = outs.iter().map(|p| bits(p) as usize).sum();
    let fold_ffs = fold_tree(&mut m, Expr::Concat(outs_regs), out_bits, sout.net);
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
    let registers = ins.iter().map(|p| bits(p) as usize).sum::<usize>() + out_bits + fold_ffs;
    let wrap = Module {
        name: WRAPPER_TOP.into(),
        doc: vec![
            format!(
                "Place-and-route wrapper of {top}: every input from its own register (one shift"
            ),
            "register from pin sin), every output into a register, folded onto pin sout by a"
                .into(),
            format!(
                "tree of registered {FOLD_FAN_IN}-input XORs, so that every path of {top} is timed"
            ),
            "register to register and no wrapper path has more than one LUT.".into(),
        ],
        params: vec![],
        ports: vec![pin_clk, sin, sout],
        genvars: vec![FOLD_GENVAR.name().into()],
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

/// Bits of the level below that one register of the output fold XORs:
/// one 4-input LUT on ECP5 and iCE40.
pub const FOLD_FAN_IN: usize = 4;

/// The generate variable of the fold's loops.
const FOLD_GENVAR: P = P::new("g");

/// The widths of the fold's register levels over `bits` output bits, the
/// first level first, down to the one register `sout` (the last level):
/// each register XORs at most [`FOLD_FAN_IN`] bits of the level below.
pub fn fold_levels(bits: usize) -> Vec<usize> {
    let mut levels = Vec::new();
    let mut n = bits;
    loop {
        n = n.div_ceil(FOLD_FAN_IN);
        levels.push(n);
        if n == 1 {
            return levels;
        }
    }
}

/// Folds `outs` (`bits` bits, the output registers) onto `sout` through
/// the register levels of [`fold_levels`]: level `l` is `fold_<l>`, whose
/// register `g` is the parity of bits `FOLD_FAN_IN*g` and up of the level
/// below (`fold_0`, the output registers side by side). Returns the
/// registers added (`sout` included).
fn fold_tree(m: &mut Scope, outs: Expr, bits: usize, sout: Net) -> usize {
    let g = FOLD_GENVAR;
    let mut below = m.wire_of("fold_0", bits as i64, outs);
    let mut below_bits = bits;
    let levels = fold_levels(bits);
    for (l, &n) in (1..).zip(&levels) {
        if l == levels.len() {
            // At most FOLD_FAN_IN bits left: one LUT into the pin's register.
            m.clocked(vec![set(sout, below.e().parity())]);
            break;
        }
        let reg = m.reg(&format!("fold_{l}"), Width::of(n as i64));
        let (full, rest) = (below_bits / FOLD_FAN_IN, below_bits % FOLD_FAN_IN);
        if full > 0 {
            let k = FOLD_FAN_IN as i64;
            let mut body = Scope::new();
            body.clocked(vec![set(reg.at(g), below.part(g.e() * k, k).parity())]);
            m.gen_for(g.name(), full as i64, &format!("g_fold_{l}"), body);
        }
        if rest > 0 {
            // The last register of the level takes the bits left over.
            let lsb = (full * FOLD_FAN_IN) as i64;
            let top_bit = below_bits as i64 - 1;
            m.clocked(vec![set(
                reg.at(full as i64),
                below.bits(top_bit, lsb).parity(),
            )]);
        }
        below = reg;
        below_bits = n;
    }
    levels.iter().sum()
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
        // The fold: 2176 output bits in registers of 4 into 544, 136, 34,
        // 9, 3 and the pin's 1.
        assert_eq!(fold_levels(outs), [544, 136, 34, 9, 3, 1]);
        assert_eq!(w.registers, ins + outs + 544 + 136 + 34 + 9 + 3 + 1);
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
            "wire [2175:0] fold_0 = {out_y_out, out_dx_out, out_dw_out, out_w_out};",
            "reg [543:0] fold_1;",
            "for (g = 0; g < 544; g = g + 1) begin : g_fold_1",
            "fold_1[g] <= ^fold_0[g*4 +: 4];",
            "fold_4[8] <= ^fold_3[33:32];",
            "sout <= ^fold_5;",
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
