//! Writing output files so that an interrupted run never leaves a
//! half-written one: write a temporary file beside the target (same file
//! system, so the rename is atomic), then rename it into place. Shared by
//! the generator, the CLI reports and the training reports.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A name part no other caller gets while this machine runs: the process
/// id tells processes apart, a counter the threads of one process (the
/// tests of one binary run in threads, and two of them may build or write
/// the same thing at once).
pub fn unique_suffix() -> String {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    format!("{}.{call}", std::process::id())
}

/// The temporary name used for `path`: hidden, beside it, and unique (see
/// [`unique_suffix`]) so that concurrent writers do not clash.
pub fn temp_path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", unique_suffix()))
}

/// Moves a finished temporary file onto `path`, removing it if that fails.
pub fn commit_temp(tmp: &Path, path: &Path) -> io::Result<()> {
    std::fs::rename(tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(tmp);
    })
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomically(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let tmp = temp_path_for(path);
    std::fs::write(&tmp, bytes).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    commit_temp(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_the_file_and_leave_no_temporary() {
        let dir = std::env::temp_dir().join(format!("sysgrad-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.txt");
        write_atomically(&path, "one").unwrap();
        write_atomically(&path, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert!(!temp_path_for(&path).exists());
        assert!(write_atomically(&dir.join("missing/out.txt"), "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
