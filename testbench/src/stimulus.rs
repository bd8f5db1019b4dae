//! The text formats shared with the HDL harnesses: a stimulus file (one line
//! of input ports per cycle) and a port trace (one line of output ports per
//! cycle). Values are lane-wise hex of the two's-complement bits.

use sysgrad_config::ArrayConfig;
use sysgrad_emulator::{CycleInput, CycleOutput};

/// The low `bits` of `v`, as an unsigned number.
pub fn to_bits(v: i64, bits: u32) -> u64 {
    (v as u64) & (u64::MAX >> (64 - bits))
}

/// Sign-extends the low `bits` of `u`.
pub fn from_bits(u: u64, bits: u32) -> i64 {
    ((u << (64 - bits)) as i64) >> (64 - bits)
}

/// First word of a stimulus file; the format version follows it.
pub const MAGIC: &str = "sysgrad-stimulus";
/// Version 2 added the `rst` column; the harnesses still read version 1
/// files (no `rst` column: reset low in every cycle).
pub const VERSION: u32 = 2;
/// The version of stimulus files for dense arrays: each line ends with the
/// wave's control, `op swap update load load_row`.
pub const DENSE_VERSION: u32 = 3;

/// The stimulus version written for `cfg`.
pub fn version(cfg: &ArrayConfig) -> u32 {
    if cfg.dense() {
        DENSE_VERSION
    } else {
        VERSION
    }
}

/// Renders the stimulus for `inputs`: the header
/// `sysgrad-stimulus 2 R C DW AW`, then one line per cycle,
/// `mode lr_shift dy_valid rst x[0..R] w[0..C] dy[0..C]` in hex.
pub fn render(cfg: &ArrayConfig, inputs: &[CycleInput]) -> String {
    let f = cfg.format();
    let mut s = format!(
        "{MAGIC} {} {} {} {} {}\n",
        version(cfg),
        cfg.rows(),
        cfg.cols(),
        f.in_bits,
        f.acc_bits
    );
    for inp in inputs {
        push_line(&mut s, cfg, inp, true);
        s.push('\n');
    }
    s
}

/// One cycle's inputs the way the accelerator harnesses trace the array's
/// inputs: a stimulus line without the `rst` column. The array's reset is
/// the accelerator's reset, which is low whenever the controller runs,
/// and they trace only then.
pub fn render_traced_line(cfg: &ArrayConfig, inp: &CycleInput) -> String {
    let mut s = String::new();
    push_line(&mut s, cfg, inp, false);
    s
}

fn push_line(s: &mut String, cfg: &ArrayConfig, inp: &CycleInput, with_rst: bool) {
    use std::fmt::Write;
    let bits = cfg.format().in_bits;
    write!(
        s,
        "{:x} {:x} {:x}",
        inp.mode.code(),
        inp.lr_shift,
        inp.dy_valid as u8
    )
    .unwrap();
    if with_rst {
        write!(s, " {:x}", inp.rst as u8).unwrap();
    }
    for v in inp.x.iter().chain(&inp.w).chain(&inp.dy) {
        write!(s, " {:x}", to_bits(*v, bits)).unwrap();
    }
    if cfg.dense() {
        let w = &inp.wave;
        write!(
            s,
            " {:x} {:x} {:x} {:x} {:x}",
            w.op, w.swap as u8, w.update as u8, w.load as u8, w.load_row
        )
        .unwrap();
    }
}

/// Parses a port trace written by a harness.
pub fn parse_ports(cfg: &ArrayConfig, text: &str) -> Result<Vec<CycleOutput>, String> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(t, line)| {
            let vals: Vec<u64> = line
                .split_whitespace()
                .map(|h| u64::from_str_radix(h, 16))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("port trace line {}: {e}", t + 1))?;
            if vals.len() != 2 * c + 2 * r {
                return Err(format!(
                    "port trace line {}: {} values, expected {}",
                    t + 1,
                    vals.len(),
                    2 * c + 2 * r
                ));
            }
            let lanes = |from: usize, n: usize, bits| {
                vals[from..from + n]
                    .iter()
                    .map(|u| from_bits(*u, bits))
                    .collect()
            };
            Ok(CycleOutput {
                y: lanes(0, c, aw),
                dx: lanes(c, r, aw),
                dw: lanes(c + r, r, aw),
                w: lanes(c + 2 * r, c, dw),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn bits_round_trip(bits in 2u32..=63, v in any::<i64>()) {
            let v = sysgrad_config::fixed::sat(v, bits);
            prop_assert_eq!(from_bits(to_bits(v, bits), bits), v);
        }
    }
}

/// Renders a port trace (one line per cycle), the format the harnesses write.
pub fn render_ports(cfg: &ArrayConfig, outputs: &[CycleOutput]) -> String {
    use std::fmt::Write;
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    let mut s = String::new();
    for o in outputs {
        let lanes = o.y.iter().chain(&o.dx).chain(&o.dw).map(|v| (*v, aw));
        for (v, bits) in lanes.chain(o.w.iter().map(|v| (*v, dw))) {
            write!(s, " {:x}", to_bits(v, bits)).unwrap();
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod port_trace_tests {
    use super::*;

    #[test]
    fn port_traces_round_trip() {
        let cfg = ArrayConfig::default_16x16();
        let (rec, _) = crate::scenario::training_step(&cfg, 3, false);
        let text = render_ports(&cfg, &rec.outputs);
        assert_eq!(parse_ports(&cfg, &text).unwrap(), rec.outputs);
    }
}
