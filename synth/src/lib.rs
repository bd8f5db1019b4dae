//! FPGA resource reports: Yosys synthesis of the generated RTL for a
//! generic gate library, Xilinx 7-series (`synth_xilinx`) and Lattice iCE40
//! (`synth_ice40 -dsp`), with the cell counts grouped into LUTs, FFs, DSPs
//! and BRAMs; and ([`pnr`]) place and route with timing on real parts
//! (nextpnr for ECP5 and iCE40): Fmax, critical path, utilization.

#[cfg(feature = "clap")]
mod cli;
pub mod formal;
pub mod pnr;
pub mod report;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use sysgrad_config::ArrayConfig;
use sysgrad_tools::{run, ToolError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Generic,
    Xilinx,
    Ice40,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Generic, Target::Xilinx, Target::Ice40];

    pub fn name(self) -> &'static str {
        match self {
            Target::Generic => "generic",
            Target::Xilinx => "xilinx",
            Target::Ice40 => "ice40",
        }
    }

    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }

    fn script(self, top: &str) -> String {
        match self {
            Target::Generic => format!("synth -top {top}"),
            Target::Xilinx => format!("synth_xilinx -top {top} -flatten"),
            Target::Ice40 => format!("synth_ice40 -top {top} -dsp"),
        }
    }
}

/// Cell counts of one synthesis run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    pub target: Target,
    pub cells: BTreeMap<String, u64>,
}

impl Resources {
    fn sum(&self, pred: impl Fn(&str) -> bool) -> u64 {
        self.cells
            .iter()
            .filter(|(k, _)| pred(k))
            .map(|(_, v)| v)
            .sum()
    }
    pub fn luts(&self) -> u64 {
        self.sum(|c| {
            c.starts_with("LUT") || c == "SB_LUT4" || c.starts_with("$_") && !c.contains("DFF")
        })
    }
    pub fn ffs(&self) -> u64 {
        self.sum(|c| c.starts_with("FD") || c.starts_with("SB_DFF") || c.contains("DFF"))
    }
    pub fn dsps(&self) -> u64 {
        self.sum(|c| c.starts_with("DSP48") || c == "SB_MAC16")
    }
    pub fn brams(&self) -> u64 {
        self.sum(|c| c.starts_with("RAMB") || c.starts_with("SB_RAM40"))
    }
    pub fn carries(&self) -> u64 {
        self.sum(|c| c.starts_with("CARRY") || c == "SB_CARRY")
    }
}

/// Parses the cell table of Yosys' final `stat` (the last "Number of cells" block).
pub fn parse_stat(log: &str) -> BTreeMap<String, u64> {
    let mut cells = BTreeMap::new();
    let mut in_block = false;
    for line in log.lines() {
        let t = line.trim();
        if t.starts_with("Number of cells:") {
            cells.clear();
            in_block = true;
            continue;
        }
        if in_block {
            let mut parts = t.split_whitespace();
            match (parts.next(), parts.next(), parts.next()) {
                (Some(name), Some(n), None) if n.chars().all(|c| c.is_ascii_digit()) => {
                    cells.insert(name.to_string(), n.parse().unwrap());
                }
                _ => in_block = false,
            }
        }
    }
    cells
}

/// A Verilog source file: its name and its text.
pub type Source<'a> = (&'a str, &'a str);

/// Synthesises module `top` (`sa_top`, or `sa_accel` for the whole
/// accelerator) of the Verilog `sources` for `target` in folder `work`.
pub fn synthesize(
    sources: &[Source],
    target: Target,
    top: &str,
    work: &Path,
) -> Result<Resources, ToolError> {
    std::fs::create_dir_all(work)?;
    let mut reads = String::new();
    for (name, text) in sources {
        std::fs::write(work.join(name), text)?;
        reads.push_str(&format!("read_verilog {name}; "));
    }
    let script = format!("{reads}{}; stat", target.script(top));
    let out = run(
        Command::new("yosys").args(["-q", "-p", &script, "-l", "yosys.log"]),
        work,
    )?;
    drop(out);
    let log = std::fs::read_to_string(work.join("yosys.log"))?;
    Ok(Resources {
        target,
        cells: parse_stat(&log),
    })
}

/// One CSV line per (config, resources): the header is [`CSV_HEADER`].
pub const CSV_HEADER: &str =
    "config,top,rows,cols,in_bits,acc_bits,backward,target,luts,ffs,dsps,brams,carries";

pub fn csv_row(cfg: &ArrayConfig, top: &str, r: &Resources) -> String {
    format!(
        "{},{top},{},{},{},{},{},{},{},{},{},{},{}",
        cfg.tag(),
        cfg.rows(),
        cfg.cols(),
        cfg.format().in_bits,
        cfg.format().acc_bits,
        cfg.backward().name(),
        r.target.name(),
        r.luts(),
        r.ffs(),
        r.dsps(),
        r.brams(),
        r.carries()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_table_is_parsed() {
        let log = "   Number of wires: 3\n   Number of cells:                 12\n     FDRE                            8\n     LUT2                            3\n     DSP48E1                         1\n\n";
        let cells = parse_stat(log);
        let r = Resources {
            target: Target::Xilinx,
            cells,
        };
        assert_eq!((r.ffs(), r.luts(), r.dsps()), (8, 3, 1));
    }
}
