//! Register-level comparison: every register of the emulator's [`Array`]
//! against the same register in a Verilator VCD, cycle by cycle. The names
//! are the RTL's hierarchical names below `sa_top`.

use crate::compare::Mismatch;
use crate::vcd::Waveform;
use std::collections::HashMap;
use sysgrad_emulator::Array;

pub enum RegError {
    Missing(String),
    Mismatch(Mismatch),
}

/// One register: its RTL name below `sa_top`, its width and how to read it
/// from the model.
pub(crate) struct Reg {
    pub name: String,
    pub width: u32,
    pub read: Box<dyn Fn(&Array) -> i64>,
}

/// Every register of the array, named as the generator names it.
pub(crate) fn registers(a: &Array) -> Vec<Reg> {
    let (r, c) = (a.rows(), a.cols());
    let (dw, aw) = (a.cfg.format().in_bits, a.cfg.format().acc_bits);
    let mut regs = Vec::new();
    let mut add = |name: String, width: u32, read: Box<dyn Fn(&Array) -> i64>| {
        regs.push(Reg { name, width, read })
    };
    for i in 0..r {
        for j in 0..c {
            let k = i * c + j;
            let pe = format!("g_row[{i}].g_col[{j}].u_pe");
            add(format!("{pe}.w"), dw, Box::new(move |a| a.w[k]));
            add(format!("{pe}.x"), dw, Box::new(move |a| a.x[k]));
            add(format!("{pe}.d"), dw, Box::new(move |a| a.d[k]));
            add(format!("{pe}.dv"), 1, Box::new(move |a| a.dv[k] as i64));
            add(format!("{pe}.psv"), aw, Box::new(move |a| a.psv[k]));
            add(format!("{pe}.psh"), aw, Box::new(move |a| a.psh[k]));
            add(format!("{pe}.dw"), aw, Box::new(move |a| a.dw[k]));
        }
    }
    for (bank, lanes) in sysgrad_hdl::delay_banks(&a.cfg) {
        use sysgrad_hdl::DelayBank::*;
        let width = match bank {
            XSkew => dw,
            DySkew => dw + 1, // {valid, dy}
            YDeskew | DxDeskew => aw,
        };
        for (lane, len) in lanes.iter().enumerate() {
            for stage in 0..*len {
                let name = sysgrad_hdl::delay_reg_name(bank, lane, stage);
                add(
                    name,
                    width,
                    Box::new(move |a| delay_value(a, bank, lane, stage)),
                );
            }
        }
    }
    for j in 0..c {
        add(
            sysgrad_hdl::output_reg_name(&a.cfg, "y", j),
            aw,
            Box::new(move |a| a.y_q[j]),
        );
    }
    for i in 0..r {
        add(
            sysgrad_hdl::output_reg_name(&a.cfg, "dx", i),
            aw,
            Box::new(move |a| a.dx_q[i]),
        );
    }
    regs
}

fn delay_value(a: &Array, bank: sysgrad_hdl::DelayBank, lane: usize, stage: usize) -> i64 {
    use sysgrad_hdl::DelayBank::*;
    match bank {
        XSkew => a.x_skew.lane(lane)[stage],
        DySkew => {
            let (v, d) = a.dy_skew.lane(lane)[stage];
            let bits = a.cfg.format().in_bits;
            // The RTL stores {valid, dy} in one register of DW+1 bits.
            crate::stimulus::from_bits(
                ((v as u64) << bits) | crate::stimulus::to_bits(d, bits),
                bits + 1,
            )
        }
        YDeskew => a.y_deskew.lane(lane)[stage],
        DxDeskew => a.dx_deskew.lane(lane)[stage],
    }
}

/// Compares every register in every cycle; returns the number of samples.
pub fn compare(wave: &Waveform, snapshots: &[Array]) -> Result<usize, RegError> {
    let Some(first) = snapshots.first() else {
        return Ok(0);
    };
    // VCD names below sa_top, e.g. "g_row[0].g_col[1].u_pe.w".
    let index: HashMap<&str, &str> = wave
        .names()
        .filter_map(|full| full.split_once("sa_top.").map(|(_, rel)| (rel, full)))
        .collect();
    let regs = registers(first);
    let mut resolved = Vec::with_capacity(regs.len());
    for reg in &regs {
        let full = index
            .get(reg.name.as_str())
            .ok_or_else(|| RegError::Missing(format!("register {} is not in the VCD", reg.name)))?;
        resolved.push((reg, *full));
    }
    for (t, snap) in snapshots.iter().enumerate() {
        for (reg, full) in &resolved {
            let got = wave.sample(full, 10 * t as u64).unwrap_or(0);
            let expected = (reg.read)(snap);
            if got != expected {
                return Err(RegError::Mismatch(Mismatch {
                    cycle: t,
                    signal: reg.name.clone(),
                    expected,
                    got,
                }));
            }
        }
    }
    Ok(snapshots.len() * resolved.len())
}
