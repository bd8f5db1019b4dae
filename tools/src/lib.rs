//! Running the external simulators, with errors that say what to install.

use std::path::Path;
use std::process::{Command, Output};

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("`{tool}` was not found on PATH; install the Debian package `{package}` (scripts/setup.sh does)")]
    Missing { tool: String, package: String },
    #[error("`{command}` failed ({status}):\n{stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The Debian package that ships `tool`.
fn package_of(tool: &str) -> &str {
    match tool {
        "iverilog" | "vvp" => "iverilog",
        "yosys" => "yosys",
        "verilator" => "verilator",
        other => other,
    }
}

/// Fails with [`ToolError::Missing`] unless `tool` runs.
pub fn require(tool: &str) -> Result<(), ToolError> {
    let found = Command::new(tool)
        .arg(if tool == "vvp" { "-V" } else { "--version" })
        .output()
        .is_ok();
    if found {
        Ok(())
    } else {
        Err(ToolError::Missing {
            tool: tool.to_string(),
            package: package_of(tool).to_string(),
        })
    }
}

/// Runs `cmd` in `dir`, turning a non-zero exit into [`ToolError::Failed`].
pub fn run(cmd: &mut Command, dir: &Path) -> Result<Output, ToolError> {
    let program = cmd.get_program().to_string_lossy().to_string();
    if !program.contains('/') {
        require(&program)?;
    }
    let out = cmd.current_dir(dir).output()?;
    if !out.status.success() {
        let mut stderr = String::from_utf8_lossy(&out.stderr).to_string();
        stderr.push_str(&String::from_utf8_lossy(&out.stdout));
        return Err(ToolError::Failed {
            command: format!("{cmd:?}"),
            status: out.status.to_string(),
            stderr,
        });
    }
    Ok(out)
}

/// FNV-1a, a stable hash for cache keys (std's hasher may change between releases).
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain(&[0xff]) {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
