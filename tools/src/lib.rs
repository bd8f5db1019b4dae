//! Running the external simulators, with errors that say what to install.

use std::path::Path;
use std::process::{Command, Output};

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("`{tool}` was not found on PATH; install the Debian package `{package}` (scripts/setup.sh does)")]
    Missing { tool: String, package: String },
    /// A tool that comes from PyPI into the project's virtualenv, not from Debian.
    #[error("`{tool}` was found neither in {looked} nor on PATH; run `{script}` (it installs the PyPI package `{package}` into {looked})")]
    MissingFromVenv {
        tool: String,
        package: String,
        looked: String,
        script: String,
    },
    #[error("`{command}` failed ({status}):\n{stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The Debian package that ships `tool`.
fn package_of(tool: &str) -> &str {
    match tool {
        "iverilog" | "vvp" => "iverilog",
        "yosys" => "yosys",
        "verilator" => "verilator",
        "yosys-smtbmc" => "yosys",
        "nextpnr-ice40" => "nextpnr-ice40",
        "icepack" | "icetime" => "fpga-icestorm",
        other => other,
    }
}

/// `tool` in the virtualenv folder `venv` (its `bin/`), else on the PATH;
/// [`ToolError::MissingFromVenv`] naming `package` and the install
/// `script` when it is in neither.
pub fn find_in_venv(
    tool: &str,
    package: &str,
    venv: &Path,
    script: &str,
) -> Result<std::path::PathBuf, ToolError> {
    let local = venv.join("bin").join(tool);
    if local.is_file() {
        // Absolute, since tools run in their own working folders. Not
        // canonicalised: a virtualenv's python is a symlink it must keep.
        return Ok(std::env::current_dir()?.join(local));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
    });
    on_path.ok_or_else(|| ToolError::MissingFromVenv {
        tool: tool.to_string(),
        package: package.to_string(),
        looked: format!("{}/bin", venv.display()),
        script: script.to_string(),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_venv_tool_names_the_package_and_the_script() {
        let e = find_in_venv(
            "no-such-tool-sysgrad",
            "no-such-package",
            Path::new("/nonexistent/venv"),
            "scripts/setup-fpga.sh",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`no-such-tool-sysgrad`"), "{e}");
        assert!(e.contains("/nonexistent/venv/bin"), "{e}");
        assert!(
            e.contains("scripts/setup-fpga.sh") && e.contains("no-such-package"),
            "{e}"
        );
    }

    #[test]
    fn debian_packages_of_the_fpga_tools() {
        assert_eq!(package_of("icetime"), "fpga-icestorm");
        assert_eq!(package_of("yosys-smtbmc"), "yosys");
        assert_eq!(package_of("z3"), "z3");
    }
}
