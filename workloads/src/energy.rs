//! A per-action energy model in the spirit of Accelergy: every counted
//! action (a multiply, an accumulate, a register write, a buffer word, an
//! off-chip word) costs an energy that scales with its width and, for a
//! buffer, with its size. Dynamic energy only: no leakage, no clock tree,
//! no control logic.
//!
//! The default table is the 45 nm figures of Horowitz (ISSCC 2014,
//! "Computing's energy problem"): 8-bit integer multiply 0.2 pJ, 32-bit
//! add 0.1 pJ, a 64-bit read of an 8 KB SRAM 10 pJ (32 KB: 20 pJ, 1 MB:
//! 100 pJ), a 64-bit DRAM access 1.3-2.6 nJ (the middle, 1.95 nJ, is used).
//! The register figure is not from that paper: a flip-flop write of about
//! 5 fJ per bit is assumed. Scaling rules: a multiply grows with the
//! square of the operand width (an array multiplier; 32 bits -> 3.2 pJ,
//! Horowitz 3.1), an add linearly with its width, an SRAM word linearly
//! with its width and with the square root of the buffer size (which
//! reproduces Horowitz's 8 KB / 32 KB / 1 MB points within 15%), DRAM and
//! registers linearly with bits.
//!
//! Floating-point formats (`[format] kind = "float"`) cost a
//! floating-point multiply and an fp32 add per MAC instead, from the same
//! paper: 16-bit FP multiply 1.1 pJ, add 0.4 pJ; 32-bit FP multiply 3.7
//! pJ, add 0.9 pJ. Between and below those widths a power law through
//! the two points is used (multiply `1.1 * (bits/16)^1.75`, so an FP8
//! multiply is 0.33 pJ; add `0.4 * (bits/16)^1.17`), an extrapolation,
//! not a measurement; a multiply is charged at the data word's width
//! (the widest of the three formats), which overstates a bf16 x E4M3
//! product. Data registers and buffer words are the data word wide,
//! accumulators 32 bits.
//!
//! Own tables: a TOML file with the fields of [`EnergyTable`] (in pJ; the
//! four floating-point fields are optional and default to the figures
//! above, the others required), e.g.
//!
//! ```toml
//! mult_8bit_pj = 0.2
//! add_32bit_pj = 0.1
//! register_bit_pj = 0.005
//! sram_64bit_pj = 10.0
//! sram_reference_kb = 8.0
//! dram_64bit_pj = 1950.0
//! ```

use crate::error::{Result, WorkloadError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use sysgrad_config::{ArrayConfig, Numbers};
use sysgrad_emulator::{Counters, Phase, Stats};

/// Energies of the reference actions, in pJ.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnergyTable {
    /// An 8 x 8-bit integer multiply.
    pub mult_8bit_pj: f64,
    /// A 32-bit integer add.
    pub add_32bit_pj: f64,
    /// Writing one bit of a pipeline register.
    pub register_bit_pj: f64,
    /// Reading or writing 64 bits of an SRAM of `sram_reference_kb`.
    pub sram_64bit_pj: f64,
    pub sram_reference_kb: f64,
    /// Reading or writing 64 bits off chip.
    pub dram_64bit_pj: f64,
    /// A 16-bit floating-point multiply.
    #[serde(default = "horowitz::fmult_16bit")]
    pub fmult_16bit_pj: f64,
    /// A 32-bit floating-point multiply.
    #[serde(default = "horowitz::fmult_32bit")]
    pub fmult_32bit_pj: f64,
    /// A 16-bit floating-point add.
    #[serde(default = "horowitz::fadd_16bit")]
    pub fadd_16bit_pj: f64,
    /// A 32-bit floating-point add.
    #[serde(default = "horowitz::fadd_32bit")]
    pub fadd_32bit_pj: f64,
}

/// Horowitz's floating-point figures (ISSCC 2014, 45 nm), the defaults of
/// the optional fields.
mod horowitz {
    pub fn fmult_16bit() -> f64 {
        1.1
    }
    pub fn fmult_32bit() -> f64 {
        3.7
    }
    pub fn fadd_16bit() -> f64 {
        0.4
    }
    pub fn fadd_32bit() -> f64 {
        0.9
    }
}

impl Default for EnergyTable {
    /// Horowitz, ISSCC 2014, 45 nm (register: assumed, see the module).
    fn default() -> Self {
        EnergyTable {
            mult_8bit_pj: 0.2,
            add_32bit_pj: 0.1,
            register_bit_pj: 0.005,
            sram_64bit_pj: 10.0,
            sram_reference_kb: 8.0,
            dram_64bit_pj: 1950.0,
            fmult_16bit_pj: horowitz::fmult_16bit(),
            fmult_32bit_pj: horowitz::fmult_32bit(),
            fadd_16bit_pj: horowitz::fadd_16bit(),
            fadd_32bit_pj: horowitz::fadd_32bit(),
        }
    }
}

impl EnergyTable {
    pub fn load(path: &Path) -> Result<EnergyTable> {
        let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::io(path, e))?;
        let t: EnergyTable = toml::from_str(&text).map_err(|e| WorkloadError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        t.check().map_err(|field| WorkloadError::Parse {
            path: path.to_path_buf(),
            message: format!("{field} must be a positive number of pJ (or KB)"),
        })?;
        Ok(t)
    }

    /// The first field that is not a positive finite number.
    fn check(&self) -> std::result::Result<(), &'static str> {
        for (name, v) in [
            ("mult_8bit_pj", self.mult_8bit_pj),
            ("add_32bit_pj", self.add_32bit_pj),
            ("register_bit_pj", self.register_bit_pj),
            ("sram_64bit_pj", self.sram_64bit_pj),
            ("sram_reference_kb", self.sram_reference_kb),
            ("dram_64bit_pj", self.dram_64bit_pj),
            ("fmult_16bit_pj", self.fmult_16bit_pj),
            ("fmult_32bit_pj", self.fmult_32bit_pj),
            ("fadd_16bit_pj", self.fadd_16bit_pj),
            ("fadd_32bit_pj", self.fadd_32bit_pj),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(name);
            }
        }
        Ok(())
    }

    /// A `bits` x `bits` multiply.
    pub fn multiply(&self, bits: u32) -> f64 {
        self.mult_8bit_pj * (bits as f64 / 8.0).powi(2)
    }
    /// A `bits`-wide add.
    pub fn add(&self, bits: u32) -> f64 {
        self.add_32bit_pj * bits as f64 / 32.0
    }
    /// A `bits`-wide floating-point multiply: the power law through the
    /// 16- and 32-bit figures.
    pub fn float_multiply(&self, bits: u32) -> f64 {
        power_law(self.fmult_16bit_pj, self.fmult_32bit_pj, bits)
    }
    /// A `bits`-wide floating-point add (power law, as the multiply).
    pub fn float_add(&self, bits: u32) -> f64 {
        power_law(self.fadd_16bit_pj, self.fadd_32bit_pj, bits)
    }
    /// One `bits`-wide word of an SRAM of `kb` KB.
    pub fn sram_word(&self, bits: u32, kb: f64) -> f64 {
        self.sram_64bit_pj * bits as f64 / 64.0 * (kb / self.sram_reference_kb).sqrt()
    }
    /// One `bits`-wide word off chip.
    pub fn dram_word(&self, bits: u32) -> f64 {
        self.dram_64bit_pj * bits as f64 / 64.0
    }
}

/// `at16 * (bits / 16)^k` with `k` such that it gives `at32` at 32 bits.
fn power_law(at16: f64, at32: f64, bits: u32) -> f64 {
    at16 * (f64::from(bits) / 16.0).powf((at32 / at16).log2())
}

/// What one MAC costs in a number format: its multiply and its add.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct MacEnergy {
    multiply_pj: f64,
    accumulate_pj: f64,
}

impl MacEnergy {
    fn of(t: &EnergyTable, cfg: &ArrayConfig) -> Self {
        let (d, a) = (cfg.format().in_bits, cfg.format().acc_bits);
        match cfg.numbers() {
            Numbers::Fixed(_) => MacEnergy {
                multiply_pj: t.multiply(d),
                accumulate_pj: t.add(a),
            },
            Numbers::Float(_) => MacEnergy {
                multiply_pj: t.float_multiply(d),
                accumulate_pj: t.float_add(a),
            },
        }
    }
}

/// Sizes of the on-chip buffers, in KB (the SCALE-Sim config's SRAMs:
/// weights = filter, activations = ifmap, gradients and accumulators =
/// ofmap).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BufferSizes {
    pub weights_kb: f64,
    pub activations_kb: f64,
    pub gradients_kb: f64,
    pub accumulators_kb: f64,
}

/// Energy of some counters, by kind of action, in pJ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Energy {
    pub multiply_pj: f64,
    pub accumulate_pj: f64,
    pub register_pj: f64,
    pub buffer_pj: f64,
    pub off_chip_pj: f64,
}

impl Energy {
    pub fn total_pj(&self) -> f64 {
        self.multiply_pj + self.accumulate_pj + self.register_pj + self.buffer_pj + self.off_chip_pj
    }
    /// Energy on chip (all but off-chip accesses).
    pub fn on_chip_pj(&self) -> f64 {
        self.total_pj() - self.off_chip_pj
    }
}

impl std::ops::AddAssign for Energy {
    fn add_assign(&mut self, o: Energy) {
        self.multiply_pj += o.multiply_pj;
        self.accumulate_pj += o.accumulate_pj;
        self.register_pj += o.register_pj;
        self.buffer_pj += o.buffer_pj;
        self.off_chip_pj += o.off_chip_pj;
    }
}

/// The energy model of one array and its buffers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EnergyModel {
    pub table: EnergyTable,
    pub buffers: BufferSizes,
    in_bits: u32,
    acc_bits: u32,
    mac: MacEnergy,
    pes: u64,
}

impl EnergyModel {
    pub fn new(table: EnergyTable, cfg: &ArrayConfig, buffers: BufferSizes) -> Self {
        EnergyModel {
            table,
            buffers,
            in_bits: cfg.format().in_bits,
            acc_bits: cfg.format().acc_bits,
            mac: MacEnergy::of(&table, cfg),
            pes: (cfg.rows() * cfg.cols()) as u64,
        }
    }

    /// The energy of one phase's counters. A MAC is a multiply of two data
    /// words and an add at accumulator width; it writes one data register
    /// (the operand passed on) and one accumulator register. Every LOAD
    /// cycle shifts every PE's weight register, every DRAIN cycle every
    /// PE's dW register. Buffer words are data-wide except the partial
    /// sums and results in the accumulator buffer.
    pub fn phase(&self, phase: Phase, c: &Counters) -> Energy {
        let t = &self.table;
        let (d, a) = (self.in_bits, self.acc_bits);
        let b = &self.buffers;
        // Bit counts in f64, like the energies: cycles x PEs x width can
        // pass 2^64 for counters that fit (the figures are energies, not
        // counts; below 2^53 bits the products are exact either way).
        let shifted_bits = match phase {
            Phase::Load => c.cycles as f64 * self.pes as f64 * f64::from(d),
            Phase::Drain => c.cycles as f64 * self.pes as f64 * f64::from(a),
            _ => 0.0,
        };
        let reg_bits = c.macs as f64 * f64::from(d + a) + shifted_bits;
        let word = |bits: u32, kb: f64, n: u64| n as f64 * t.sram_word(bits, kb);
        let buffer_pj = word(d, b.weights_kb, c.w_reads + c.w_writes)
            + word(d, b.activations_kb, c.x_reads)
            + word(d, b.gradients_kb, c.dy_reads)
            + word(
                a,
                b.accumulators_kb,
                c.y_writes + c.dx_writes + c.dw_writes + c.acc_reads + c.acc_writes,
            );
        Energy {
            multiply_pj: c.macs as f64 * self.mac.multiply_pj,
            accumulate_pj: c.macs as f64 * self.mac.accumulate_pj,
            register_pj: reg_bits * t.register_bit_pj,
            buffer_pj,
            off_chip_pj: 0.0,
        }
    }

    /// Every phase of `stats` that did something, and their sum.
    pub fn stats(&self, stats: &Stats) -> (Vec<(Phase, Energy)>, Energy) {
        let mut total = Energy::default();
        let phases = Phase::ALL
            .iter()
            .filter(|p| stats.phase(**p).cycles > 0)
            .map(|p| {
                let e = self.phase(*p, stats.phase(*p));
                total += e;
                (*p, e)
            })
            .collect();
        (phases, total)
    }

    /// `words` data words moved off chip.
    pub fn off_chip(&self, words: u64) -> Energy {
        Energy {
            off_chip_pj: words as f64 * self.table.dram_word(self.in_bits),
            ..Energy::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scaling rules land on Horowitz's other published points.
    #[test]
    fn default_table_reproduces_the_published_points() {
        let t = EnergyTable::default();
        assert!((t.multiply(32) - 3.1).abs() / 3.1 < 0.05);
        assert!((t.add(8) - 0.03).abs() / 0.03 < 0.2);
        assert!((t.sram_word(64, 32.0) - 20.0).abs() / 20.0 < 0.01);
        assert!((t.sram_word(64, 1024.0) - 100.0).abs() / 100.0 < 0.15);
        assert!((1300.0..=2600.0).contains(&t.dram_word(64)));
        assert_eq!(t.float_multiply(16), 1.1);
        assert!((t.float_multiply(32) - 3.7).abs() < 1e-12);
        assert!((t.float_add(32) - 0.9).abs() < 1e-12);
    }

    /// A float configuration's MAC is a float multiply of the data word
    /// and an fp32 add; everything else counts as the widths say.
    #[test]
    fn a_float_format_charges_float_macs() {
        let text = "[array]\nrows = 4\ncols = 4\nbackward = \"interleaved\"\n[format]\nkind = \"float\"\nweights = \"bf16\"\nactivations = \"bf16\"\ngradients = \"bf16\"\n";
        let cfg =
            sysgrad_config::parse_config(text, false, std::path::Path::new("f.toml")).unwrap();
        let buffers = BufferSizes {
            weights_kb: 8.0,
            activations_kb: 8.0,
            gradients_kb: 8.0,
            accumulators_kb: 8.0,
        };
        let m = EnergyModel::new(EnergyTable::default(), &cfg, buffers);
        let c = Counters {
            macs: 10,
            ..Counters::default()
        };
        let e = m.phase(Phase::Forward, &c);
        assert!((e.multiply_pj - 11.0).abs() < 1e-9, "{e:?}");
        assert!((e.accumulate_pj - 9.0).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn own_tables_load_and_bad_ones_name_the_field() {
        let dir = std::env::temp_dir().join(format!("sysgrad-energy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("t.toml");
        std::fs::write(
            &good,
            "mult_8bit_pj = 0.4\nadd_32bit_pj = 0.1\nregister_bit_pj = 0.01\nsram_64bit_pj = 5.0\nsram_reference_kb = 8.0\ndram_64bit_pj = 640.0\n",
        )
        .unwrap();
        assert_eq!(EnergyTable::load(&good).unwrap().multiply(16), 1.6);
        let bad = dir.join("b.toml");
        std::fs::write(
            &bad,
            "mult_8bit_pj = -1\nadd_32bit_pj = 0.1\nregister_bit_pj = 0.01\nsram_64bit_pj = 5.0\nsram_reference_kb = 8.0\ndram_64bit_pj = 640.0\n",
        )
        .unwrap();
        let e = EnergyTable::load(&bad).unwrap_err().to_string();
        assert!(e.contains("mult_8bit_pj") && e.contains("b.toml"), "{e}");
        std::fs::write(&bad, "mult_8bit_pj = 0.2\n").unwrap();
        let e = EnergyTable::load(&bad).unwrap_err().to_string();
        assert!(e.contains("missing field"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
