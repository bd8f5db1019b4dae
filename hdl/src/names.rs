//! Hierarchical names of the registers outside the PEs, below `sa_top`, so
//! that the co-simulation can find each emulator register in a waveform.

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
    fn instance(self) -> &'static str {
        match self {
            // Input skews sit inside a generate-if (a 1-lane skew is a wire).
            DelayBank::XSkew => "g_xskew.u_xskew",
            DelayBank::DySkew => "g_dyskew.u_dyskew",
            DelayBank::YDeskew => "u_ydeskew",
            DelayBank::DxDeskew => "u_dxdeskew",
        }
    }
}

/// Each bank with the number of delay registers per lane (the deskews'
/// output registers not included: see [`output_reg_name`]).
pub fn delay_banks(cfg: &ArrayConfig) -> Vec<(DelayBank, Vec<usize>)> {
    let (r, c) = (cfg.rows(), cfg.cols());
    vec![
        (
            DelayBank::XSkew,
            (0..r).map(|k| lane_len(r, k, false, 0)).collect(),
        ),
        (
            DelayBank::DySkew,
            (0..c).map(|k| lane_len(c, k, false, 0)).collect(),
        ),
        (
            DelayBank::YDeskew,
            (0..c).map(|k| lane_len(c, k, true, 0)).collect(),
        ),
        (
            DelayBank::DxDeskew,
            (0..r).map(|k| lane_len(r, k, true, 0)).collect(),
        ),
    ]
}

/// Register `stage` (0 = nearest the input) of `lane` in `bank`.
pub fn delay_reg_name(bank: DelayBank, lane: usize, stage: usize) -> String {
    format!("{}.g_lane[{lane}].g_stage[{stage}].r", bank.instance())
}

/// The output register of lane `k` of the `"y"` or `"dx"` deskew: the last
/// stage of that lane.
pub fn output_reg_name(cfg: &ArrayConfig, which: &str, k: usize) -> String {
    let (bank, lanes) = match which {
        "y" => (DelayBank::YDeskew, cfg.cols()),
        "dx" => (DelayBank::DxDeskew, cfg.rows()),
        other => panic!("no output register bank {other}"),
    };
    delay_reg_name(bank, k, lane_len(lanes, k, true, 0))
}
