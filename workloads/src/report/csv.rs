//! Minimal CSV writing (fields with commas or quotes are quoted).

use crate::error::{Result, WorkloadError};
use std::path::Path;

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn to_string<S: AsRef<str>>(header: &[&str], rows: &[Vec<S>]) -> String {
    let mut out = header
        .iter()
        .map(|h| field(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for r in rows {
        out.push_str(
            &r.iter()
                .map(|f| field(f.as_ref()))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
    }
    out
}

pub fn write<S: AsRef<str>>(path: &Path, header: &[&str], rows: &[Vec<S>]) -> Result<()> {
    write_text(path, &to_string(header, rows))
}

/// Writes through a temporary file and a rename, so an interrupted run
/// never leaves a half-written report.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    sysgrad_config::files::write_atomically(path, text).map_err(|e| WorkloadError::output(path, e))
}

pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| WorkloadError::output(path, e))?;
    write_text(path, &text)
}
