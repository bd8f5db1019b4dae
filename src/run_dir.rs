//! The subcommands' output folders as whole runs
//! (`sysgrad_config::outdir`): [`start`] before a run writes into a
//! folder (created, a file there refused naming it, temporaries of killed
//! runs swept, the older run its manifest lists removed), [`finish`] after
//! its last file (`MANIFEST.json`: the files written, their sizes, the
//! command line, the version, `completed: true`). Working folders
//! (`cosim`, `formal`) are started, so their errors name them, but hold
//! builds and logs rather than a run's reports, so they get no manifest.
//! [`cleanup_on_signals`] removes the temporaries of a run interrupted by
//! SIGINT or SIGTERM.

use anyhow::Result;
use std::path::Path;
use sysgrad_config::outdir::OutputDir;

/// Prepares `dir` for a run (see the module's documentation).
pub fn start(dir: &Path) -> Result<OutputDir> {
    Ok(OutputDir::prepare(dir)?)
}

/// Writes the manifest of what this run wrote into `out`, last.
pub fn finish(out: &OutputDir) -> Result<()> {
    out.finish_written(command_line(), env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// This process's command line, the program named `sysgrad` (not the path
/// it was started by, which differs from machine to machine).
pub fn command_line() -> Vec<String> {
    std::iter::once("sysgrad".to_string())
        .chain(
            std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned()),
        )
        .collect()
}

/// On SIGINT or SIGTERM: remove this run's temporary files and exit with
/// 128 + the signal (130, 143), as a shell reports a process the signal
/// ended. The handler is a thread woken by the signal (signal-hook), so it
/// may take locks and touch the file system. Where signals cannot be
/// caught, runs keep the default behaviour and the next run into the
/// folder sweeps what they leave.
pub fn cleanup_on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            sysgrad_config::files::remove_temporaries_and_exit(128 + signal);
        }
    });
}
