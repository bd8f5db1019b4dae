//! SCALE-Sim `.cfg` files, read as SCALE-Sim 3.0 reads them
//! (`scalesim/scale_config.py`: Python's configparser, keys
//! case-insensitive, `key: value` or `key = value`, `#`/`;` comments).
//!
//! Every section and key of SCALE-Sim 3.0 is accepted: `[general]`,
//! `[architecture_presets]`, `[layout]`, `[sparsity]`, `[run_presets]`
//! (Ramulator and bandwidth keys), `[network_presets]`. SCALE-Sim requires
//! most of them; here only the array size and the dataflow are required
//! and the others default to SCALE-Sim's own defaults (`scale_config`'s
//! constructor), so older v2 files still load. Keys this crate does not
//! know are kept in [`ScaleConfig::unused`] and reported, never an error
//! (SCALE-Sim ignores them too). [`ScaleConfig::to_cfg`] writes a file
//! that SCALE-Sim 3.0 loads: every key its reader asks for.

use crate::error::{Result, WorkloadError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// `InterfaceBandwidth` of `[run_presets]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum BandwidthMode {
    /// Off-chip bandwidth as large as the array asks for: no stalls, the
    /// bandwidth needed is reported.
    Calc,
    /// `Bandwidth` words per cycle: the array stalls when prefetches fall
    /// behind.
    User,
}

/// The off-chip memory and on-chip buffers a config describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryConfig {
    /// On-chip SRAM sizes in KiB (SCALE-Sim's 1-byte words).
    pub ifmap_sram_kb: usize,
    pub filter_sram_kb: usize,
    pub ofmap_sram_kb: usize,
    pub ifmap_offset: u64,
    pub filter_offset: u64,
    pub ofmap_offset: u64,
    pub interface_bandwidth: BandwidthMode,
    /// `Bandwidth`: words per cycle (SCALE-Sim 3.0 reads a comma list and
    /// uses the first value for the OFMAP).
    pub bandwidth: Vec<usize>,
    pub read_request_buffer: usize,
    pub write_request_buffer: usize,
    pub memory_banks: usize,
    pub use_ramulator_trace: bool,
    /// `[sysgrad] OffChipLatency`: cycles from a request to its first word
    /// (SCALE-Sim has no such key; 0 when absent).
    pub off_chip_latency: u64,
}

/// `[layout]`: SCALE-Sim 3.0's SRAM bank model. Recorded and written back;
/// the sysgrad buffers are banked per lane and do not model conflicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutConfig {
    pub ifmap_custom_layout: bool,
    pub ifmap_sram_bank_bandwidth: usize,
    pub ifmap_sram_bank_num: usize,
    pub ifmap_sram_bank_port: usize,
    pub filter_custom_layout: bool,
    pub filter_sram_bank_bandwidth: usize,
    pub filter_sram_bank_num: usize,
    pub filter_sram_bank_port: usize,
}

/// `[sparsity]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SparsityConfig {
    pub support: bool,
    pub representation: String,
    pub optimized_mapping: bool,
    pub block_size: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScaleConfig {
    pub run_name: String,
    /// Rows of the array (sysgrad: the reduction dimension K).
    pub array_height: usize,
    /// Columns (sysgrad: the outputs M).
    pub array_width: usize,
    /// `os`, `ws` or `is`, as written; sysgrad always runs weight
    /// stationary forward / dX and output stationary dW.
    pub dataflow: String,
    pub memory: MemoryConfig,
    pub layout: LayoutConfig,
    pub sparsity: SparsityConfig,
    /// `[network_presets] TopologyCsvLoc`, if given.
    pub topology_csv: Option<String>,
    /// `[section] key` of every entry this crate does not read.
    pub unused: Vec<String>,
}

/// (section, key) -> (value, line)
type Entries = BTreeMap<(String, String), (String, usize)>;

/// The entries of an INI file as SCALE-Sim's reader (Python's
/// `configparser`, strict) takes them: keys case-insensitive, a section
/// or a key within a section given twice refused, naming both lines.
/// Section names are compared case-insensitively too, since they are
/// read that way here (configparser would keep `[General]` and
/// `[general]` apart, and then miss one of them).
fn parse_ini(text: &str, path: &Path) -> Result<Entries> {
    let err = |line: usize, message: String| WorkloadError::Parse {
        path: path.to_path_buf(),
        message: format!("line {line}: {message}"),
    };
    let mut section: Option<String> = None;
    let mut out = Entries::new();
    let mut sections = BTreeMap::<String, usize>::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| err(line, format!("`{l}`: a section header needs a closing `]`")))?;
            let name = name.trim().to_ascii_lowercase();
            if let Some(first) = sections.insert(name.clone(), line) {
                return Err(err(
                    line,
                    format!(
                        "section [{name}] already appeared at line {first} \
                         (SCALE-Sim's configparser refuses a repeated section)"
                    ),
                ));
            }
            section = Some(name);
            continue;
        }
        let at = l.find([':', '=']).ok_or_else(|| {
            err(
                line,
                format!("`{l}` is neither a [section] nor a `key: value` line"),
            )
        })?;
        let sec = section
            .clone()
            .ok_or_else(|| err(line, format!("`{l}` comes before any [section]")))?;
        let key = l[..at].trim().to_ascii_lowercase();
        if key.is_empty() {
            return Err(err(
                line,
                format!("`{l}` has no key before `{}`", &l[at..at + 1]),
            ));
        }
        if let Some((_, first)) = out.get(&(sec.clone(), key.clone())) {
            return Err(err(
                line,
                format!(
                    "[{sec}] `{key}` is already set at line {first} \
                     (SCALE-Sim's configparser refuses a repeated key)"
                ),
            ));
        }
        out.insert((sec, key), (l[at + 1..].trim().to_string(), line));
    }
    Ok(out)
}

pub fn load_config(path: &Path) -> Result<ScaleConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::io(path, e))?;
    parse_config(&text, path)
}

/// Typed reads of the entries, with errors naming line, section and key;
/// every key read is marked so that the rest can be reported unused.
struct Reader<'a> {
    entries: &'a Entries,
    path: &'a Path,
    read: std::cell::RefCell<Vec<(String, String)>>,
}

impl Reader<'_> {
    fn perr(&self, message: String) -> WorkloadError {
        WorkloadError::Parse {
            path: self.path.to_path_buf(),
            message,
        }
    }

    fn raw(&self, sec: &str, key: &str) -> Option<&(String, usize)> {
        let k = (sec.to_string(), key.to_ascii_lowercase());
        self.read.borrow_mut().push(k.clone());
        self.entries.get(&k)
    }

    fn required(&self, sec: &str, key: &str) -> Result<&(String, usize)> {
        self.raw(sec, key)
            .ok_or_else(|| self.perr(format!("missing `{key}` in [{sec}]")))
    }

    fn bad(&self, sec: &str, key: &str, (v, line): &(String, usize), what: &str) -> WorkloadError {
        self.perr(format!("line {line}: [{sec}] {key} = `{v}` {what}"))
    }

    fn number<T: std::str::FromStr + PartialOrd + From<u8>>(
        &self,
        sec: &str,
        key: &str,
        default: T,
        min: u8,
    ) -> Result<T> {
        let Some(e) = self.raw(sec, key) else {
            return Ok(default);
        };
        e.0.parse::<T>()
            .ok()
            .filter(|n| *n >= T::from(min))
            .ok_or_else(|| {
                let what = if min == 0 {
                    "is not a non-negative integer"
                } else {
                    "is not a positive integer"
                };
                self.bad(sec, key, e, what)
            })
    }

    /// configparser's `getboolean` spellings.
    fn boolean(&self, sec: &str, key: &str, default: bool) -> Result<bool> {
        let Some(e) = self.raw(sec, key) else {
            return Ok(default);
        };
        match e.0.to_ascii_lowercase().as_str() {
            "1" | "yes" | "true" | "on" => Ok(true),
            "0" | "no" | "false" | "off" => Ok(false),
            _ => Err(self.bad(
                sec,
                key,
                e,
                "is not a boolean (true/false, yes/no, on/off, 1/0)",
            )),
        }
    }

    fn text(&self, sec: &str, key: &str) -> Option<String> {
        self.raw(sec, key)
            .map(|(v, _)| v.trim_matches('"').to_string())
    }

    fn unused(&self) -> Vec<String> {
        let read = self.read.borrow();
        self.entries
            .keys()
            .filter(|k| !read.contains(k))
            .map(|(s, k)| format!("[{s}] {k}"))
            .collect()
    }
}

const ARCH: &str = "architecture_presets";
const RUN: &str = "run_presets";
const LAYOUT: &str = "layout";
const SPARSITY: &str = "sparsity";
const SYSGRAD: &str = "sysgrad";

pub fn parse_config(text: &str, path: &Path) -> Result<ScaleConfig> {
    let entries = parse_ini(text, path)?;
    let r = Reader {
        entries: &entries,
        path,
        read: Default::default(),
    };
    let array_height = r.number(ARCH, "ArrayHeight", 0usize, 1)?;
    let array_width = r.number(ARCH, "ArrayWidth", 0usize, 1)?;
    for key in ["ArrayHeight", "ArrayWidth"] {
        r.required(ARCH, key)?;
    }
    let (dataflow, dline) = r.required(ARCH, "Dataflow")?;
    let dataflow = dataflow.to_ascii_lowercase();
    if !["os", "ws", "is"].contains(&dataflow.as_str()) {
        return Err(r.perr(format!(
            "line {dline}: [{ARCH}] Dataflow = `{dataflow}` (allowed: os, ws, is)"
        )));
    }
    let memory = memory_config(&r)?;
    let layout = layout_config(&r)?;
    let sparsity = sparsity_config(&r, array_height)?;
    Ok(ScaleConfig {
        run_name: r
            .text("general", "run_name")
            .unwrap_or_else(|| "sysgrad_run".into()),
        array_height,
        array_width,
        dataflow,
        memory,
        layout,
        sparsity,
        topology_csv: r.text("network_presets", "TopologyCsvLoc"),
        unused: r.unused(),
    })
}

/// SCALE-Sim's default SRAM sizes (KiB) when a key is absent.
const DEFAULT_SRAM_KB: (usize, usize, usize) = (256, 256, 128);

fn memory_config(r: &Reader) -> Result<MemoryConfig> {
    let mode = match r.raw(RUN, "InterfaceBandwidth") {
        None => BandwidthMode::Calc,
        Some(e) => match e.0.as_str() {
            "CALC" => BandwidthMode::Calc,
            "USER" => BandwidthMode::User,
            _ => {
                return Err(r.bad(
                    RUN,
                    "InterfaceBandwidth",
                    e,
                    "(allowed: USER, CALC, upper case as SCALE-Sim reads it)",
                ))
            }
        },
    };
    let bandwidth = match r.raw(ARCH, "Bandwidth") {
        None if mode == BandwidthMode::User => {
            return Err(r.perr(format!(
                "[{RUN}] InterfaceBandwidth = USER needs `Bandwidth` in [{ARCH}] (words per cycle)"
            )))
        }
        None => Vec::new(),
        Some(e) => {
            e.0.split(',')
                .map(|v| v.trim().parse::<usize>().ok().filter(|b| *b >= 1))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    r.bad(
                        ARCH,
                        "Bandwidth",
                        e,
                        "is not a comma list of positive integers (words per cycle)",
                    )
                })?
        }
    };
    let (i, f, o) = DEFAULT_SRAM_KB;
    Ok(MemoryConfig {
        ifmap_sram_kb: r.number(ARCH, "IfmapSramSzkB", i, 1)?,
        filter_sram_kb: r.number(ARCH, "FilterSramSzkB", f, 1)?,
        ofmap_sram_kb: r.number(ARCH, "OfmapSramSzkB", o, 1)?,
        ifmap_offset: r.number(ARCH, "IfmapOffset", 0, 0)?,
        filter_offset: r.number(ARCH, "FilterOffset", 10_000_000, 0)?,
        ofmap_offset: r.number(ARCH, "OfmapOffset", 20_000_000, 0)?,
        interface_bandwidth: mode,
        bandwidth,
        read_request_buffer: r.number(ARCH, "ReadRequestBuffer", 60, 1)?,
        write_request_buffer: r.number(ARCH, "WriteRequestBuffer", 60, 1)?,
        memory_banks: r.number(ARCH, "MemoryBanks", 1, 1)?,
        use_ramulator_trace: r.boolean(RUN, "UseRamulatorTrace", false)?,
        off_chip_latency: r.number(SYSGRAD, "OffChipLatency", 0, 0)?,
    })
}

fn layout_config(r: &Reader) -> Result<LayoutConfig> {
    Ok(LayoutConfig {
        ifmap_custom_layout: r.boolean(LAYOUT, "IfmapCustomLayout", false)?,
        ifmap_sram_bank_bandwidth: r.number(LAYOUT, "IfmapSRAMBankBandwidth", 10, 1)?,
        ifmap_sram_bank_num: r.number(LAYOUT, "IfmapSRAMBankNum", 10, 1)?,
        ifmap_sram_bank_port: r.number(LAYOUT, "IfmapSRAMBankPort", 2, 1)?,
        filter_custom_layout: r.boolean(LAYOUT, "FilterCustomLayout", false)?,
        filter_sram_bank_bandwidth: r.number(LAYOUT, "FilterSRAMBankBandwidth", 10, 1)?,
        filter_sram_bank_num: r.number(LAYOUT, "FilterSRAMBankNum", 10, 1)?,
        filter_sram_bank_port: r.number(LAYOUT, "FilterSRAMBankPort", 2, 1)?,
    })
}

/// SCALE-Sim's representations of a sparse filter.
pub const SPARSE_REPRESENTATIONS: [&str; 3] = ["csr", "csc", "ellpack_block"];

fn sparsity_config(r: &Reader, rows: usize) -> Result<SparsityConfig> {
    let support = r.boolean(SPARSITY, "SparsitySupport", false)?;
    let representation = r
        .text(SPARSITY, "SparseRep")
        .unwrap_or_else(|| "ellpack_block".into());
    if support && !SPARSE_REPRESENTATIONS.contains(&representation.as_str()) {
        let e = r.raw(SPARSITY, "SparseRep").expect("read above");
        return Err(r.bad(
            SPARSITY,
            "SparseRep",
            e,
            &format!("(allowed: {})", SPARSE_REPRESENTATIONS.join(", ")),
        ));
    }
    let block_size = r.number(SPARSITY, "BlockSize", 4, 1)?;
    let optimized_mapping = r.boolean(SPARSITY, "OptimizedMapping", false)?;
    if support && optimized_mapping && block_size > rows {
        let e = r.raw(SPARSITY, "BlockSize").expect("read above");
        return Err(r.bad(
            SPARSITY,
            "BlockSize",
            e,
            &format!("is larger than ArrayHeight {rows} (SCALE-Sim: invalid block size)"),
        ));
    }
    Ok(SparsityConfig {
        support,
        representation,
        optimized_mapping,
        block_size,
        seed: r.number(SPARSITY, "RandomNumberGeneratorSeed", 40, 0)?,
    })
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

impl ScaleConfig {
    /// A config for an `rows` x `cols` array with SCALE-Sim's defaults.
    pub fn for_array(run_name: &str, rows: usize, cols: usize) -> ScaleConfig {
        let text = format!(
            "[general]\nrun_name = {run_name}\n[architecture_presets]\nArrayHeight: {rows}\nArrayWidth: {cols}\nDataflow: ws\n"
        );
        parse_config(&text, Path::new("(built in)")).expect("a built-in config parses")
    }

    /// The config as a `.cfg` that SCALE-Sim 3.0 loads: every key its
    /// `read_conf_file` asks for, plus the `[sysgrad]` keys it ignores.
    pub fn to_cfg(&self) -> String {
        let m = &self.memory;
        let l = &self.layout;
        let s = &self.sparsity;
        let mut t = String::new();
        let bandwidth = if m.bandwidth.is_empty() {
            // SCALE-Sim reads `Bandwidth` only in USER mode; CALC ignores it.
            "10".to_string()
        } else {
            m.bandwidth
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let mode = match m.interface_bandwidth {
            BandwidthMode::Calc => "CALC",
            BandwidthMode::User => "USER",
        };
        let _ = write!(
            t,
            "[general]\nrun_name = {}\n\n[architecture_presets]\nArrayHeight: {}\nArrayWidth: {}\n\
             IfmapSramSzkB: {}\nFilterSramSzkB: {}\nOfmapSramSzkB: {}\n\
             IfmapOffset: {}\nFilterOffset: {}\nOfmapOffset: {}\nBandwidth: {bandwidth}\n\
             Dataflow: {}\nMemoryBanks: {}\nReadRequestBuffer: {}\nWriteRequestBuffer: {}\n\n",
            self.run_name,
            self.array_height,
            self.array_width,
            m.ifmap_sram_kb,
            m.filter_sram_kb,
            m.ofmap_sram_kb,
            m.ifmap_offset,
            m.filter_offset,
            m.ofmap_offset,
            self.dataflow,
            m.memory_banks,
            m.read_request_buffer,
            m.write_request_buffer,
        );
        let _ = write!(
            t,
            "[layout]\nIfmapCustomLayout: {}\nIfmapSRAMBankBandwidth: {}\nIfmapSRAMBankNum: {}\n\
             IfmapSRAMBankPort: {}\nFilterCustomLayout: {}\nFilterSRAMBankBandwidth: {}\n\
             FilterSRAMBankNum: {}\nFilterSRAMBankPort: {}\n\n",
            py_bool(l.ifmap_custom_layout),
            l.ifmap_sram_bank_bandwidth,
            l.ifmap_sram_bank_num,
            l.ifmap_sram_bank_port,
            py_bool(l.filter_custom_layout),
            l.filter_sram_bank_bandwidth,
            l.filter_sram_bank_num,
            l.filter_sram_bank_port,
        );
        let _ = write!(
            t,
            "[sparsity]\nSparsitySupport: {}\nSparseRep: {}\nOptimizedMapping: {}\nBlockSize: {}\n\
             RandomNumberGeneratorSeed: {}\n\n[run_presets]\nInterfaceBandwidth: {mode}\n\
             UseRamulatorTrace: {}\n\n[sysgrad]\nOffChipLatency: {}\n",
            py_bool(s.support).to_ascii_lowercase(),
            s.representation,
            py_bool(s.optimized_mapping).to_ascii_lowercase(),
            s.block_size,
            s.seed,
            py_bool(m.use_ramulator_trace),
            m.off_chip_latency,
        );
        t
    }
}
