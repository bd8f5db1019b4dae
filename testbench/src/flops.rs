//! The flip-flops of `sa_top` as the RTL defines them, independently of the
//! emulator, so that the register comparison can prove it checks all of
//! them (see [`crate::registers::check_coverage`]).
//!
//! Why Yosys: `proc` turns every clocked `always` block into `$dff`-type
//! cells, so the list is what the Verilog's semantics make state, not what
//! a declaration says (`reg` is also used for combinational logic) nor what
//! one simulator happens to dump (Verilator's VCD marks registers and nets
//! alike as `wire`). `flatten` then names each cell's `Q` net by its full
//! hierarchical name below `sa_top`, the names Verilator's VCD uses, e.g.
//! `g_row[0].g_col[1].u_pe.w`. No `opt` pass runs: it would delete flops
//! whose outputs nothing reads (the `d`/`dv` of the bottom row, the `x` of
//! the east column), which are registers of the RTL all the same.
//!
//! One artefact is left out: when a clocked block calls a function
//! (`sat_add` in `sa_pe`), Yosys' frontend gives the function's variables
//! process-local signals, and `proc` gives those flops as well, named
//! `<function>$func$<file>:<line>$<n>.<variable>`. They hold no state in
//! Verilog (each call assigns them before reading them) or in any
//! simulator, and nothing reads their outputs; [`is_function_temporary`]
//! recognises them by that name.
//!
//! Memories (`memory` in RTLIL) are state too: they are listed under their
//! name with the word width, so that one appearing in `sa_top` fails the
//! comparison instead of going unchecked.

use crate::verilator::cache_root;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use sysgrad_config::files::unique_suffix;
use sysgrad_hdl::VerilogFile;
use sysgrad_tools::{fnv1a, run, ToolError};

/// One register of the RTL: its hierarchical name below `sa_top` and its
/// width in bits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RtlRegister {
    pub name: String,
    pub width: u32,
}

/// Cell types that hold state (Yosys' coarse-grain cells, which is what
/// `proc` produces).
const STATE_CELLS: &[&str] = &[
    "$dff",
    "$dffe",
    "$adff",
    "$adffe",
    "$sdff",
    "$sdffe",
    "$sdffce",
    "$aldff",
    "$aldffe",
    "$dffsr",
    "$dffsre",
    "$dlatch",
    "$adlatch",
    "$dlatchsr",
    "$sr",
    "$ff",
    "$mem",
    "$mem_v2",
];

const SCRIPT: &str = "hierarchy -check -top sa_top; proc; flatten; write_rtlil sa_top.il";

/// Every register of `sa_top` in `files` (sorted by name). Results are
/// cached under `<cache>/flops/` by a hash of the files, the script and the
/// Yosys version.
pub fn flip_flops(files: &[VerilogFile]) -> Result<Vec<RtlRegister>, ToolError> {
    let version = run(Command::new("yosys").arg("-V"), Path::new("."))?;
    let mut parts: Vec<&[u8]> = vec![&version.stdout, SCRIPT.as_bytes()];
    for f in files {
        parts.push(f.name.as_bytes());
        parts.push(f.text.as_bytes());
    }
    let key = format!("{:016x}", fnv1a(&parts));
    let dir = cache_root().join("flops");
    let cached = dir.join(format!("{key}.txt"));
    if let Some(regs) = std::fs::read_to_string(&cached)
        .ok()
        .and_then(|t| read_list(&t))
    {
        return Ok(regs);
    }
    let scratch = format!("{key}.{}", unique_suffix());
    let regs = run_yosys(files, &dir.join(&scratch))?;
    // Written through a rename, so a concurrent reader never sees half a list.
    let tmp = dir.join(format!("{scratch}.tmp"));
    std::fs::write(&tmp, write_list(&regs))?;
    std::fs::rename(&tmp, &cached)?;
    Ok(regs)
}

fn run_yosys(files: &[VerilogFile], work: &Path) -> Result<Vec<RtlRegister>, ToolError> {
    std::fs::create_dir_all(work)?;
    let mut script = String::from("read_verilog");
    for f in files {
        std::fs::write(work.join(&f.name), &f.text)?;
        script.push(' ');
        script.push_str(&f.name);
    }
    script.push_str("; ");
    script.push_str(SCRIPT);
    run(Command::new("yosys").args(["-q", "-p", &script]), work)?;
    let rtlil = std::fs::read_to_string(work.join("sa_top.il"))?;
    let _ = std::fs::remove_dir_all(work);
    registers_of_rtlil(&rtlil).map_err(|e| ToolError::Failed {
        command: format!("yosys -p '{script}'"),
        status: "unexpected RTLIL".into(),
        stderr: e,
    })
}

fn write_list(regs: &[RtlRegister]) -> String {
    regs.iter()
        .map(|r| format!("{} {}\n", r.name, r.width))
        .collect()
}

fn read_list(text: &str) -> Option<Vec<RtlRegister>> {
    text.lines()
        .map(|l| {
            let (name, width) = l.rsplit_once(' ')?;
            Some(RtlRegister {
                name: name.to_string(),
                width: width.parse().ok()?,
            })
        })
        .collect()
}

/// Whether `name` is a function's variable turned into a signal by Yosys'
/// frontend (see the module comment), not a register of the design.
pub fn is_function_temporary(name: &str) -> bool {
    name.rsplit_once('.')
        .map_or(name, |(scope, _)| scope)
        .contains("$func$")
}

/// The registers of a flattened module in RTLIL text: the nets driven by
/// the `Q` of every state cell, with the number of bits driven, and every
/// memory. Function temporaries are left out.
pub fn registers_of_rtlil(text: &str) -> Result<Vec<RtlRegister>, String> {
    let mut wire_width: BTreeMap<&str, u32> = BTreeMap::new();
    let mut bits: BTreeMap<String, u32> = BTreeMap::new();
    let mut in_state_cell = false;
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        match words.as_slice() {
            ["wire", .., name] => {
                let width = words
                    .iter()
                    .position(|w| *w == "width")
                    .and_then(|k| words.get(k + 1)?.parse().ok())
                    .unwrap_or(1);
                wire_width.insert(name, width);
            }
            ["memory", .., name] => {
                let width = words
                    .iter()
                    .position(|w| *w == "width")
                    .and_then(|k| words.get(k + 1)?.parse().ok())
                    .unwrap_or(1);
                bits.insert(unescape(name).to_string(), width);
            }
            ["process", ..] => return Err(format!("a process is left after `proc`: {line}")),
            ["cell", kind, ..] if !kind.starts_with('$') => {
                // A submodule `flatten` left alone: its registers would go unseen.
                return Err(format!("an instance of {kind} was not flattened: {line}"));
            }
            ["cell", kind, ..] => in_state_cell = STATE_CELLS.contains(kind),
            ["end"] => in_state_cell = false,
            ["connect", "\\Q", spec @ ..] if in_state_cell => {
                for (wire, n) in sigspec_bits(spec, &wire_width)? {
                    *bits.entry(unescape(wire).to_string()).or_default() += n;
                }
            }
            _ => {}
        }
    }
    Ok(bits
        .into_iter()
        .filter(|(name, _)| !is_function_temporary(name))
        .map(|(name, width)| RtlRegister { name, width })
        .collect())
}

/// RTLIL public names start with `\`.
fn unescape(name: &str) -> &str {
    name.strip_prefix('\\').unwrap_or(name)
}

/// The wires an RTLIL signal spec names and how many bits of each:
/// `\w` (all of it), `\w [3]`, `\w [7:4]`, concatenations `{ .. }`;
/// constants drive nothing.
fn sigspec_bits<'a>(
    spec: &[&'a str],
    wire_width: &BTreeMap<&str, u32>,
) -> Result<Vec<(&'a str, u32)>, String> {
    let mut out: Vec<(&str, u32)> = Vec::new();
    for tok in spec.iter().filter(|t| !matches!(**t, "{" | "}")) {
        if let Some(range) = tok.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            let last = out
                .last_mut()
                .ok_or_else(|| format!("bit range {tok} without a wire"))?;
            last.1 = range_len(range).ok_or_else(|| format!("bad bit range {tok}"))?;
        } else if tok.starts_with(['\\', '$']) {
            let width = *wire_width
                .get(tok)
                .ok_or_else(|| format!("Q drives {tok}, which is not declared"))?;
            out.push((tok, width));
        } else if !tok.contains('\'') {
            return Err(format!("unexpected signal {tok}"));
        }
    }
    Ok(out)
}

/// The number of bits of `7:4` or `3`.
fn range_len(range: &str) -> Option<u32> {
    match range.split_once(':') {
        Some((hi, lo)) => {
            let (hi, lo): (u32, u32) = (hi.parse().ok()?, lo.parse().ok()?);
            Some(hi.abs_diff(lo) + 1)
        }
        None => range.parse::<u32>().ok().map(|_| 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTLIL: &str = r"
module \sa_top
  wire width 8 \g_row[0].g_col[0].u_pe.w
  wire \g_row[0].g_col[0].u_pe.dv
  wire width 9 \g_dyskew.u_dyskew.g_lane[1].g_stage[0].r
  wire width 25 \g_row[0].g_col[0].u_pe.sat_add$func$sa_pe.v:107$144.s
  wire width 16 \half
  memory width 16 size 4 \buf
  cell $dff $flatten\x.$procdff$1
    parameter \WIDTH 8
    connect \Q \g_row[0].g_col[0].u_pe.w
  end
  cell $sdff $2
    connect \Q { \g_dyskew.u_dyskew.g_lane[1].g_stage[0].r [8:1] \g_row[0].g_col[0].u_pe.dv }
  end
  cell $dff $3
    connect \Q \g_dyskew.u_dyskew.g_lane[1].g_stage[0].r [0]
  end
  cell $dff $4
    connect \Q \g_row[0].g_col[0].u_pe.sat_add$func$sa_pe.v:107$144.s
  end
  cell $mux $5
    connect \Y \half
  end
end
";

    #[test]
    fn state_cells_and_memories_are_registers_function_temporaries_are_not() {
        let regs = registers_of_rtlil(RTLIL).unwrap();
        let list: Vec<(&str, u32)> = regs.iter().map(|r| (r.name.as_str(), r.width)).collect();
        assert_eq!(
            list,
            [
                ("buf", 16),
                ("g_dyskew.u_dyskew.g_lane[1].g_stage[0].r", 9),
                ("g_row[0].g_col[0].u_pe.dv", 1),
                ("g_row[0].g_col[0].u_pe.w", 8),
            ]
        );
    }

    #[test]
    fn leftover_processes_and_unknown_nets_are_errors() {
        assert!(registers_of_rtlil("module \\m\n  process $p\n  end\nend\n").is_err());
        let undeclared = "module \\m\n  cell $dff $1\n    connect \\Q \\nowhere\n  end\nend\n";
        assert!(registers_of_rtlil(undeclared)
            .unwrap_err()
            .contains("nowhere"));
        let hierarchical = "module \\m\n  cell \\sa_pe \\u_pe\n  end\nend\n";
        assert!(registers_of_rtlil(hierarchical)
            .unwrap_err()
            .contains("not flattened"));
    }

    #[test]
    fn cached_lists_read_back() {
        let regs = vec![
            RtlRegister {
                name: "g_y_out[0].y_q".into(),
                width: 24,
            },
            RtlRegister {
                name: "g_row[1].g_col[0].u_pe.dv".into(),
                width: 1,
            },
        ];
        assert_eq!(read_list(&write_list(&regs)), Some(regs));
    }
}
