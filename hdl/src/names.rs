//! Hierarchical names of the registers outside the PEs, below `sa_top`, so
//! that the co-simulation can find each emulator register in a waveform.
//! PE registers are `g_row[i].g_col[j].u_pe.{w,x,d,dv,psv,psh,dw}`.

use crate::skew::lane_len;
use sysgrad_config::ArrayConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelayBank {
    XSkew,
    DySkew,
    YDeskew,
    DxDeskew,
}

impl DelayBank {
    /// Every bank sits in a generate-if, since a one-lane bank is a wire.
    fn instance(self) -> &'static str {
        match self {
            DelayBank::XSkew => "g_xskew.u_xskew",
            DelayBank::DySkew => "g_dyskew.u_dyskew",
            DelayBank::YDeskew => "g_ydeskew.u_ydeskew",
            DelayBank::DxDeskew => "g_dxdeskew.u_dxdeskew",
        }
    }
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

/// Register `stage` (0 = nearest the input) of `lane` in `bank`.
pub fn delay_reg_name(bank: DelayBank, lane: usize, stage: usize) -> String {
    format!("{}.g_lane[{lane}].g_stage[{stage}].r", bank.instance())
}

/// The output register of lane `k` of `"y"` (`y_q[k]`, after the y
/// deskew) or `"dx"` (`dx_q[k]`).
pub fn output_reg_name(cfg: &ArrayConfig, which: &str, k: usize) -> String {
    let lanes = match which {
        "y" => cfg.cols(),
        "dx" => cfg.rows(),
        other => panic!("no output register bank {other}"),
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
}
