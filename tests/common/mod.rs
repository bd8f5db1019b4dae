//! What the command-line tests share: running the built `sysgrad`.

use std::process::Command;

/// `sysgrad SUBCOMMAND ARGS...` from the repository's root: whether it
/// succeeded, its standard output and its standard error.
pub fn sysgrad(subcommand: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sysgrad"))
        .arg(subcommand)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
