//! SCALE-Sim `.cfg` files (INI: `[general]`, `[architecture_presets]`,
//! `key: value` or `key = value`, keys case-insensitive as Python's
//! configparser reads them, `#`/`;` comments).

use crate::error::{Result, WorkloadError};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScaleConfig {
    pub run_name: String,
    /// Rows of the array (sysgrad: the reduction dimension K).
    pub array_height: usize,
    /// Columns (sysgrad: the outputs M).
    pub array_width: usize,
    pub ifmap_sram_kb: Option<usize>,
    pub filter_sram_kb: Option<usize>,
    pub ofmap_sram_kb: Option<usize>,
    /// `os`, `ws` or `is`, as written; sysgrad always runs weight
    /// stationary forward / dX and output stationary dW.
    pub dataflow: String,
}

/// (section, key) -> (value, line)
type Entries = HashMap<(String, String), (String, usize)>;

fn parse_ini(text: &str, path: &Path) -> Result<Entries> {
    let err = |line: usize, message: String| WorkloadError::Parse {
        path: path.to_path_buf(),
        message: format!("line {line}: {message}"),
    };
    let mut section: Option<String> = None;
    let mut out = Entries::new();
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
            section = Some(name.trim().to_ascii_lowercase());
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
        out.insert((sec, key), (l[at + 1..].trim().to_string(), line));
    }
    Ok(out)
}

pub fn load_config(path: &Path) -> Result<ScaleConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::io(path, e))?;
    parse_config(&text, path)
}

pub fn parse_config(text: &str, path: &Path) -> Result<ScaleConfig> {
    let e = parse_ini(text, path)?;
    let perr = |message: String| WorkloadError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let get = |sec: &str, key: &str| e.get(&(sec.to_string(), key.to_ascii_lowercase()));
    let required = |sec: &str, key: &str| {
        get(sec, key).ok_or_else(|| perr(format!("missing `{key}` in [{sec}]")))
    };
    let number = |sec: &str, key: &str, (v, line): &(String, usize)| {
        v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            perr(format!(
                "line {line}: [{sec}] {key} = `{v}` is not a positive integer"
            ))
        })
    };
    const ARCH: &str = "architecture_presets";
    let run_name = get("general", "run_name")
        .map(|(v, _)| v.trim_matches('"').to_string())
        .unwrap_or_else(|| "sysgrad_run".into());
    let array_height = number(ARCH, "ArrayHeight", required(ARCH, "ArrayHeight")?)?;
    let array_width = number(ARCH, "ArrayWidth", required(ARCH, "ArrayWidth")?)?;
    let optional = |key: &str| get(ARCH, key).map(|v| number(ARCH, key, v)).transpose();
    let (dataflow, dline) = required(ARCH, "Dataflow")?;
    let dataflow = dataflow.to_ascii_lowercase();
    if !["os", "ws", "is"].contains(&dataflow.as_str()) {
        return Err(perr(format!(
            "line {dline}: [{ARCH}] Dataflow = `{dataflow}` (allowed: os, ws, is)"
        )));
    }
    Ok(ScaleConfig {
        run_name,
        array_height,
        array_width,
        ifmap_sram_kb: optional("IfmapSramSzkB")?,
        filter_sram_kb: optional("FilterSramSzkB")?,
        ofmap_sram_kb: optional("OfmapSramSzkB")?,
        dataflow,
    })
}
