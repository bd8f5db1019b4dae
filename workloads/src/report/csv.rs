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

/// Writes the table row by row into the file's temporary (never the whole
/// table as text).
pub fn write<S: AsRef<str>>(path: &Path, header: &[&str], rows: &[Vec<S>]) -> Result<()> {
    let line = |out: &mut dyn std::io::Write, fields: &mut dyn Iterator<Item = &str>| {
        let text: Vec<String> = fields.map(field).collect();
        writeln!(out, "{}", text.join(","))
    };
    sysgrad_config::files::write_streamed(path, |out| {
        line(out, &mut header.iter().copied())?;
        for r in rows {
            line(out, &mut r.iter().map(|f| f.as_ref()))?;
        }
        Ok(())
    })
    .map_err(|e| WorkloadError::output(path, e))
}

/// Writes through a temporary file and a rename, so an interrupted run
/// never leaves a half-written report.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    sysgrad_config::files::write_atomically(path, text).map_err(|e| WorkloadError::output(path, e))
}

/// Pretty JSON, streamed into the file's temporary as it is serialized.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    sysgrad_config::files::write_streamed(path, |out| Ok(serde_json::to_writer_pretty(out, value)?))
        .map_err(|e| WorkloadError::output(path, e))
}
