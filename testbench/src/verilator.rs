//! Building and running the Verilator model of `sa_top`.
//!
//! Builds are cached under `<cache>/<config tag>-<hash>/`, keyed by a hash
//! of the Verilog, the C++ harness, the build flags and the Verilator
//! version, so a changed generator always rebuilds and an unchanged one
//! never does. A build happens in a scratch folder renamed into place, so
//! tests building the same model at once do not trip over each other.

use std::path::{Path, PathBuf};
use std::process::Command;
use sysgrad_config::files::unique_suffix;
use sysgrad_config::ArrayConfig;
use sysgrad_hdl::VerilogFile;
use sysgrad_tools::{fnv1a, run, ToolError};

pub const HARNESS: &str = include_str!("../cpp/tb_sa_top.cpp");

/// Options of a Verilator build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildOptions {
    /// Compile in VCD tracing (needed for register-level comparison).
    pub trace: bool,
    /// `--threads N` of the model (1 = single-threaded).
    pub threads: u32,
    /// Optimise the C++ for speed (-O2) rather than for build time (-O1).
    pub fast_cxx: bool,
}

impl Default for BuildOptions {
    /// Co-simulation: VCD tracing, one thread, quick C++ build.
    fn default() -> Self {
        BuildOptions {
            trace: true,
            threads: 1,
            fast_cxx: false,
        }
    }
}

impl BuildOptions {
    /// Benchmarking: no tracing, optimised C++, `threads` model threads.
    pub fn speed(threads: u32) -> Self {
        BuildOptions {
            trace: false,
            threads,
            fast_cxx: true,
        }
    }
}

/// The environment variable that sets where co-simulation builds live.
pub const COSIM_DIR_VAR: &str = "SYSGRAD_COSIM_DIR";

/// Where co-simulation builds and runs live: `$SYSGRAD_COSIM_DIR`; else
/// `cosim/` in the cargo target folder the running program was built in
/// (`target/release/sysgrad` and the tests in `target/release/deps` both
/// give the current checkout's `target/cosim`), found at run time, not
/// fixed when the program was compiled; else (a program copied out of
/// its target folder) `sysgrad-cosim` in the system's temporary folder.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os(COSIM_DIR_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| target_dir_of(&exe))
        .map(|t| t.join("cosim"))
        .unwrap_or_else(|| std::env::temp_dir().join("sysgrad-cosim"))
}

/// The cargo target folder holding `exe` (`<target>/<profile>/exe` or
/// `<target>/<profile>/deps/exe`): the profile folder is the one cargo
/// keeps its `.fingerprint` in.
pub fn target_dir_of(exe: &Path) -> Option<PathBuf> {
    let mut dir = exe.parent()?;
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("deps" | "examples")
    ) {
        dir = dir.parent()?;
    }
    let profile = dir;
    profile
        .join(".fingerprint")
        .is_dir()
        .then(|| profile.parent().map(Path::to_path_buf))
        .flatten()
}

/// A built Verilator simulator of one configuration.
#[derive(Debug, Clone)]
pub struct VerilatorModel {
    pub exe: PathBuf,
    pub cfg: ArrayConfig,
}

fn verilator_version() -> Result<String, ToolError> {
    let out = run(Command::new("verilator").arg("--version"), Path::new("."))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Generates the RTL for `cfg` and builds (or reuses) its simulator.
pub fn build(cfg: &ArrayConfig, opts: BuildOptions) -> Result<VerilatorModel, ToolError> {
    build_files(cfg, &sysgrad_hdl::generate(cfg), opts)
}

/// Builds (or reuses) a simulator of the given Verilog files, e.g. RTL
/// with a fault injected on purpose.
pub fn build_files(
    cfg: &ArrayConfig,
    files: &[VerilogFile],
    opts: BuildOptions,
) -> Result<VerilatorModel, ToolError> {
    let mut args: Vec<String> = ["--cc", "--exe", "--build", "-O3", "-j", "2", "-Wno-fatal"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(
        [
            "--top-module",
            sysgrad_hdl::top_name(),
            "-Mdir",
            "obj",
            "-o",
            "Vsa_top",
            "-CFLAGS",
            if opts.fast_cxx { "-O2" } else { "-O1" },
        ]
        .map(String::from),
    );
    if opts.trace {
        args.push("--trace".into());
    }
    if cfg.dense() {
        // The harness drives the wave ports only a dense array has.
        args.extend(["-CFLAGS".into(), "-DSG_DENSE=1".into()]);
    }
    if opts.threads > 1 {
        args.extend(["--threads".into(), opts.threads.to_string()]);
    }
    let exe = cached_build(&CachedBuild {
        label: cfg.tag(),
        files,
        harness: ("tb_sa_top.cpp", HARNESS),
        args: &args,
        exe: "Vsa_top",
        c_files: &[],
    })?;
    Ok(VerilatorModel { exe, cfg: *cfg })
}

/// One Verilator build: Verilog files, a C++ harness, the command line.
pub(crate) struct CachedBuild<'a> {
    /// Start of the cache folder's name (e.g. the config's tag).
    pub label: String,
    pub files: &'a [VerilogFile],
    /// File name and text of the harness.
    pub harness: (&'a str, &'a str),
    /// Verilator's arguments without the files (`-o` must name `exe`).
    pub args: &'a [String],
    pub exe: &'a str,
    /// C99 sources and headers of the harness (the generated host
    /// driver): each `.c` is compiled with gcc warning-free and linked in.
    pub c_files: &'a [VerilogFile],
}

/// Runs a [`CachedBuild`] unless the same one exists, and returns the
/// simulator's path. The key hashes the harness, the Verilog, the
/// arguments and the Verilator version; a build happens in a scratch
/// folder renamed into place, so concurrent identical builds are safe.
pub(crate) fn cached_build(b: &CachedBuild) -> Result<PathBuf, ToolError> {
    let version = verilator_version()?;
    let flags = b.args.join(" ");
    let mut parts: Vec<&[u8]> = vec![b.harness.1.as_bytes(), version.as_bytes(), flags.as_bytes()];
    for f in b.files.iter().chain(b.c_files) {
        parts.push(f.name.as_bytes());
        parts.push(f.text.as_bytes());
    }
    let key = format!("{}-{:016x}", b.label, fnv1a(&parts));
    let root = cache_root();
    let dir = root.join(&key);
    let exe = dir.join("obj").join(b.exe);
    if exe.exists() {
        return Ok(exe);
    }
    std::fs::create_dir_all(&root)?;
    let scratch = root.join(format!("{key}.tmp{}", unique_suffix()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let mut cmd = Command::new("verilator");
    cmd.args(b.args);
    for f in b.files {
        std::fs::write(scratch.join(&f.name), &f.text)?;
        cmd.arg(&f.name);
    }
    std::fs::write(scratch.join(b.harness.0), b.harness.1)?;
    cmd.arg(b.harness.0);
    for obj in compile_c(b.c_files, &scratch)? {
        cmd.arg(obj);
    }
    if !b.c_files.is_empty() {
        // make runs in obj/; the headers are next to the harness.
        cmd.args(["-CFLAGS", "-I.."]);
    }
    run(&mut cmd, &scratch)?;
    // Another process may have finished the same build first; either copy is good.
    if std::fs::rename(&scratch, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Ok(exe)
}

/// The flags every C file of a harness compiles with (and
/// `testbench/tests/c_driver.rs` checks the driver with).
pub const C_FLAGS: [&str; 5] = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"];

/// Writes `files` into `dir` and compiles each `.c` with gcc and
/// [`C_FLAGS`]; the objects' absolute paths.
fn compile_c(files: &[VerilogFile], dir: &Path) -> Result<Vec<PathBuf>, ToolError> {
    for f in files {
        std::fs::write(dir.join(&f.name), &f.text)?;
    }
    let dir = dir.canonicalize()?;
    let mut objects = Vec::new();
    for f in files.iter().filter(|f| f.name.ends_with(".c")) {
        let obj = dir.join(f.name.replace(".c", ".o"));
        let mut cmd = Command::new("gcc");
        cmd.args(C_FLAGS)
            .args(["-O2", "-c", &f.name, "-o"])
            .arg(&obj);
        run(&mut cmd, &dir)?;
        objects.push(obj);
    }
    Ok(objects)
}

impl VerilatorModel {
    /// Runs `stimulus` (text) in `work`; returns the port trace text and,
    /// with `vcd`, the path of the waveform.
    pub fn run(
        &self,
        stimulus: &str,
        work: &Path,
        vcd: bool,
    ) -> Result<(String, Option<PathBuf>), ToolError> {
        std::fs::create_dir_all(work)?;
        let work = &work.canonicalize()?;
        let stim = work.join("stimulus.txt");
        let ports = work.join("ports_verilator.txt");
        std::fs::write(&stim, stimulus)?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg(&stim).arg(&ports);
        let wave = vcd.then(|| work.join("verilator.vcd"));
        if let Some(w) = &wave {
            cmd.arg(w);
        }
        run(&mut cmd, work)?;
        Ok((std::fs::read_to_string(&ports)?, wave))
    }

    /// Runs `stimulus` without sampling the outputs and returns the seconds
    /// the harness spent in its simulation loop (parsing excluded).
    pub fn run_timed(&self, stimulus: &str, work: &Path) -> Result<f64, ToolError> {
        std::fs::create_dir_all(work)?;
        let stim = work.canonicalize()?.join("stimulus.txt");
        std::fs::write(&stim, stimulus)?;
        let out = run(Command::new(&self.exe).arg(&stim).arg("-"), work)?;
        let err = String::from_utf8_lossy(&out.stderr);
        err.split_whitespace()
            .skip_while(|w| *w != "sim_seconds")
            .nth(1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| ToolError::Failed {
                command: format!("{:?}", self.exe),
                status: "no sim_seconds line".into(),
                stderr: err.to_string(),
            })
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    /// Issue 28: the cache is found from the running program, not from the
    /// path the crate was compiled at.
    #[test]
    fn the_cache_is_in_the_running_programs_target_folder() {
        let exe = std::env::current_exe().unwrap();
        let target = target_dir_of(&exe).expect("tests run from a cargo target folder");
        assert!(exe.starts_with(&target), "{}", target.display());
        let copied = std::env::temp_dir().join("sysgrad");
        assert_eq!(target_dir_of(&copied), None);
        if std::env::var_os(COSIM_DIR_VAR).is_none() {
            assert_eq!(cache_root(), target.join("cosim"));
        }
    }
}
