//! Hierarchical names of the registers below `sa_top`, so that the
//! co-simulation can find each emulator register in a waveform: the PEs'
//! ([`pe_registers`], [`pe_reg_name`]), the delay banks' ([`delay_banks`]
//! and, on a dense array, [`dense_delay_banks`]; [`delay_reg_name`]) and
//! the output registers' ([`output_reg_name`]).

use crate::skew::lane_len;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::wave::{control_bits, WaveField};

/// The registers of every PE with their widths in bits, in declaration
/// order: `w, x, d, dv, psv, psh, dw` on a `none` array; on a dense one
/// `w` (active), `ws` (shadow), `wp` (weight stream), `x, d, dv, psv, psh,
/// dw` and the control of the last wave, `c_op .. c_row` (see
/// [`control_reg_name`]).
pub fn pe_registers(cfg: &ArrayConfig) -> Vec<(&'static str, u32)> {
    let f = cfg.format();
    let (dw, aw) = (f.in_bits, f.acc_bits);
    // Deferred saturation keeps the accumulators' exact AW+1-bit sums and
    // the weight's exact DW+2-bit difference.
    let deferred = u32::from(cfg.deferred_saturation());
    let (sum, w) = (aw + deferred, dw + 2 * deferred);
    let weights: &[&'static str] = if cfg.dense() {
        &["w", "ws", "wp"]
    } else {
        &["w"]
    };
    let mut regs: Vec<(&'static str, u32)> = weights.iter().map(|r| (*r, w)).collect();
    regs.extend([
        ("x", dw),
        ("d", dw),
        ("dv", 1),
        ("psv", sum),
        ("psh", sum),
        ("dw", sum),
    ]);
    if cfg.dense() {
        for field in WaveField::ALL {
            regs.push((control_reg_name(field), field.bits(cfg.rows())));
        }
    }
    if cfg.multiplier_register() {
        regs.extend([(PROD_SUM, aw), (PROD_DW, aw)]);
    }
    regs
}

/// The product registers of a PE with `MUL_REG = 1`, below the PE (they
/// live in its `g_prod` generate block).
pub const PROD_SUM: &str = "g_prod.prod_sum";
pub const PROD_DW: &str = "g_prod.prod_dw";

/// Register `reg` of PE(i, j), e.g. `g_row[1].g_col[2].u_pe.psv`.
pub fn pe_reg_name(i: usize, j: usize, reg: &str) -> String {
    format!("g_row[{i}].g_col[{j}].u_pe.{reg}")
}

/// The PE register holding `field` of the wave the PE took last (dense
/// arrays).
pub fn control_reg_name(field: WaveField) -> &'static str {
    match field {
        WaveField::Op => "c_op",
        WaveField::Swap => "c_swap",
        WaveField::Update => "c_upd",
        WaveField::Lr => "c_lr",
        WaveField::Load => "c_ld",
        WaveField::LoadRow => "c_row",
    }
}

/// A bank of delay lines (an `sa_skew` instance) below `sa_top`.
pub trait Bank: Copy {
    /// The instance path; every bank sits in a generate-if, since a
    /// one-lane bank is a wire.
    fn instance(self) -> &'static str;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelayBank {
    XSkew,
    DySkew,
    YDeskew,
    DxDeskew,
}

impl Bank for DelayBank {
    fn instance(self) -> &'static str {
        match self {
            DelayBank::XSkew => "g_xskew.u_xskew",
            DelayBank::DySkew => "g_dyskew.u_dyskew",
            DelayBank::YDeskew => "g_ydeskew.u_ydeskew",
            DelayBank::DxDeskew => "g_dxdeskew.u_dxdeskew",
        }
    }
}

impl DelayBank {
    /// Bits per register: x DW, dy DW+1 (`{valid, dy}`), y and dX AW.
    pub fn width(self, cfg: &ArrayConfig) -> u32 {
        let f = cfg.format();
        match self {
            DelayBank::XSkew => f.in_bits,
            DelayBank::DySkew => f.in_bits + 1,
            DelayBank::YDeskew | DelayBank::DxDeskew => f.acc_bits,
        }
    }
}

/// The banks only a dense array has (a separate type, so that code
/// matching on [`DelayBank`] for the `none` array stays exhaustive).
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
    fn instance(self) -> &'static str {
        match self {
            DenseBank::CtlSkew => "g_ctlskew.u_ctlskew",
            DenseBank::WSkew => "g_wskew.u_wskew",
            DenseBank::WDeskew => "g_wdeskew.u_wdeskew",
        }
    }
}

impl DenseBank {
    /// Bits per register: the control word (lane bits packed as
    /// [`WaveField::lsb`] says) or DW.
    pub fn width(self, cfg: &ArrayConfig) -> u32 {
        match self {
            DenseBank::CtlSkew => control_bits(cfg.rows()),
            DenseBank::WSkew | DenseBank::WDeskew => cfg.format().in_bits,
        }
    }
}

/// The dense banks with the number of delay registers per lane (none for
/// a `none` array; the output registers `w_q` are not included).
pub fn dense_delay_banks(cfg: &ArrayConfig) -> Vec<(DenseBank, Vec<usize>)> {
    if !cfg.dense() {
        return Vec::new();
    }
    let (r, c) = (cfg.rows(), cfg.cols());
    let lanes = |n: usize, deskew: bool| (0..n).map(|k| lane_len(n, k, deskew)).collect();
    vec![
        (DenseBank::CtlSkew, lanes(r, false)),
        (DenseBank::WSkew, lanes(c, false)),
        (DenseBank::WDeskew, lanes(c, true)),
    ]
}

/// Each bank with the number of delay registers per lane (the output
/// registers after the deskews are not included: see [`output_reg_name`]).
pub fn delay_banks(cfg: &ArrayConfig) -> Vec<(DelayBank, Vec<usize>)> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let lanes = |n: usize, deskew: bool| (0..n).map(|k| lane_len(n, k, deskew)).collect();
    vec![
        (DelayBank::XSkew, lanes(r, false)),
        (DelayBank::DySkew, lanes(c, false)),
        (DelayBank::YDeskew, lanes(c, true)),
        (DelayBank::DxDeskew, lanes(r, true)),
    ]
}

/// Register `stage` (0 = nearest the input) of `lane` in `bank` (a
/// [`DelayBank`] or a [`DenseBank`]).
pub fn delay_reg_name(bank: impl Bank, lane: usize, stage: usize) -> String {
    format!("{}.g_lane[{lane}].g_stage[{stage}].r", bank.instance())
}

/// The output register of lane `k` of `"y"` (`y_q[k]`, after the y
/// deskew), `"dx"` (`dx_q[k]`) or, on a dense array, `"w"` (`w_q[k]`,
/// after the w deskew; DW bits, the others AW).
pub fn output_reg_name(cfg: &ArrayConfig, which: &str, k: usize) -> String {
    let lanes = match which {
        "y" => cfg.cols(),
        "dx" => cfg.rows(),
        "w" if cfg.dense() => cfg.cols(),
        other => panic!("no output register bank {other} on {}", cfg.tag()),
    };
    assert!(k < lanes, "{which} has {lanes} lanes, not {}", k + 1);
    format!("g_{which}_out[{k}].{which}_q")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_generated_hierarchy() {
        let cfg = ArrayConfig::default_16x16();
        let text = crate::generate(&cfg);
        let top = &text.iter().find(|f| f.name == "sa_top.v").unwrap().text;
        let skew = &text.iter().find(|f| f.name == "sa_skew.v").unwrap().text;
        for needle in [
            "begin : g_y_out",
            "reg [AW-1:0] y_q;",
            "begin : g_dx_out",
            "reg [AW-1:0] dx_q;",
        ] {
            assert!(top.contains(needle), "sa_top lacks {needle}");
        }
        for bank in ["g_xskew", "g_dyskew", "g_ydeskew", "g_dxdeskew"] {
            let inst = format!("u_{}", &bank[2..]);
            assert!(
                top.contains(&format!("begin : {bank}")) && top.contains(&format!(") {inst} ("))
            );
        }
        for needle in ["begin : g_lane", "begin : g_stage", "reg [W-1:0] r;"] {
            assert!(skew.contains(needle), "sa_skew lacks {needle}");
        }
        assert_eq!(output_reg_name(&cfg, "dx", 3), "g_dx_out[3].dx_q");
        let banks = delay_banks(&cfg);
        assert_eq!(banks[0].1[15], 15);
        assert_eq!(banks[2].1[0], 15);
        assert_eq!(
            delay_reg_name(DelayBank::YDeskew, 0, 14),
            "g_ydeskew.u_ydeskew.g_lane[0].g_stage[14].r"
        );
    }

    #[test]
    fn dense_names_are_the_contract_s() {
        use sysgrad_config::Pipelining;
        let none = ArrayConfig::default_16x16();
        let cfg = none.with_pipelining(Pipelining::Dense).unwrap();
        let regs: Vec<(&str, u32)> = pe_registers(&cfg);
        assert_eq!(
            regs,
            [
                ("w", 16),
                ("ws", 16),
                ("wp", 16),
                ("x", 16),
                ("d", 16),
                ("dv", 1),
                ("psv", 40),
                ("psh", 40),
                ("dw", 40),
                ("c_op", 3),
                ("c_swap", 1),
                ("c_upd", 1),
                ("c_lr", 6),
                ("c_ld", 1),
                ("c_row", 4),
            ]
        );
        let plain: Vec<&str> = pe_registers(&none).iter().map(|r| r.0).collect();
        assert_eq!(plain, ["w", "x", "d", "dv", "psv", "psh", "dw"]);
        assert_eq!(pe_reg_name(2, 3, "c_op"), "g_row[2].g_col[3].u_pe.c_op");
        assert!(dense_delay_banks(&none).is_empty());
        let banks = dense_delay_banks(&cfg);
        assert_eq!(banks[0].0, DenseBank::CtlSkew);
        assert_eq!(banks[0].1[15], 15);
        assert_eq!(banks[2].1[0], 15);
        assert_eq!(DenseBank::CtlSkew.width(&cfg), 16);
        assert_eq!(
            delay_reg_name(DenseBank::WDeskew, 1, 2),
            "g_wdeskew.u_wdeskew.g_lane[1].g_stage[2].r"
        );
        assert_eq!(output_reg_name(&cfg, "w", 15), "g_w_out[15].w_q");
        let text = crate::generate(&cfg);
        let top = &text.iter().find(|f| f.name == "sa_top.v").unwrap().text;
        let pe = &text.iter().find(|f| f.name == "sa_pe.v").unwrap().text;
        for bank in ["g_ctlskew", "g_wskew", "g_wdeskew"] {
            let inst = format!("u_{}", &bank[2..]);
            assert!(
                top.contains(&format!("begin : {bank}")) && top.contains(&format!(") {inst} ("))
            );
        }
        assert!(top.contains("begin : g_w_out") && top.contains("reg [DW-1:0] w_q;"));
        for (reg, _) in regs {
            assert!(pe.contains(&format!(" {reg};")), "sa_pe lacks {reg}");
        }
    }

    #[test]
    #[should_panic(expected = "no output register bank w")]
    fn a_none_array_has_no_w_q() {
        output_reg_name(&ArrayConfig::default_16x16(), "w", 0);
    }
}
