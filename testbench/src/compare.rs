//! Cycle-by-cycle comparison of a simulator's port trace with the emulator's.

use std::fmt;
use sysgrad_emulator::CycleOutput;

/// The first difference found: which cycle, signal and lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub cycle: usize,
    pub signal: String,
    pub expected: i64,
    pub got: i64,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "cycle {}: {} is {} in the RTL, {} in the emulator",
            self.cycle, self.signal, self.got, self.expected
        )
    }
}

/// Compares two port traces; `Err` names the first mismatch.
pub fn ports(expected: &[CycleOutput], got: &[CycleOutput]) -> Result<(), Mismatch> {
    for (t, (e, g)) in expected.iter().zip(got).enumerate() {
        let fields = [
            ("y_out", &e.y, &g.y),
            ("dx_out", &e.dx, &g.dx),
            ("dw_out", &e.dw, &g.dw),
            ("w_out", &e.w, &g.w),
        ];
        for (name, ev, gv) in fields {
            if let Some(lane) = (0..ev.len()).find(|&k| ev[k] != gv[k]) {
                return Err(Mismatch {
                    cycle: t,
                    signal: format!("{name}[{lane}]"),
                    expected: ev[lane],
                    got: gv[lane],
                });
            }
        }
    }
    if expected.len() != got.len() {
        return Err(Mismatch {
            cycle: expected.len().min(got.len()),
            signal: "trace length".into(),
            expected: expected.len() as i64,
            got: got.len() as i64,
        });
    }
    Ok(())
}
