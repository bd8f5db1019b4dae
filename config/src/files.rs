//! Writing output files so that an interrupted run never leaves a
//! half-written one: write a temporary file beside the target (same file
//! system, so the rename is atomic), then rename it into place. Shared by
//! the generator, the CLI reports and the training reports.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The temporary files of this process not yet renamed into place, so that
/// a signal handler can remove them ([`remove_temporaries_and_exit`]). A
/// temporary is registered and created under this lock, and renamed under
/// it, so the handler (which takes the lock and never gives it back) sees
/// each one either listed and on disk, or not at all.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Every file this process has renamed into place ([`commit_temp`]): what
/// an output folder's manifest lists ([`crate::outdir`]).
static COMMITTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The files this process has written atomically under `dir`, in order.
pub fn committed_under(dir: &Path) -> Vec<PathBuf> {
    let list = COMMITTED.lock().unwrap_or_else(|e| e.into_inner());
    list.iter()
        .filter(|p| p.starts_with(dir))
        .cloned()
        .collect()
}

fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic elsewhere while holding the lock leaves the list intact.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every temporary file this process has not yet renamed into
/// place and exits with `code`: what a SIGINT or SIGTERM handler calls
/// (from an ordinary thread, not the signal context). The lock is held
/// until the process ends, so no writer creates a new temporary meanwhile.
pub fn remove_temporaries_and_exit(code: i32) -> ! {
    let guard = live();
    for tmp in guard.iter() {
        let _ = std::fs::remove_file(tmp);
    }
    std::process::exit(code)
}

/// The temporaries of this process not yet renamed (for tests).
pub fn live_temporaries() -> Vec<PathBuf> {
    live().clone()
}

/// Whether `name` is a temporary file name of [`temp_path_for`]
/// (`.NAME.<pid>.<n>.tmp`), and the process id that made it.
pub fn temp_owner(name: &str) -> Option<u32> {
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = inner.rsplitn(3, '.');
    let _call: u64 = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    parts.next().filter(|n| !n.is_empty())?;
    Some(pid)
}

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
/// [`unique_suffix`]) so that concurrent writers do not clash. The name is
/// registered, so that a signal removes the file if it exists by then
/// ([`remove_temporaries_and_exit`]); [`commit_temp`] or [`discard_temp`]
/// ends it.
pub fn temp_path_for(path: &Path) -> PathBuf {
    let tmp = temp_name(path);
    live().push(tmp.clone());
    tmp
}

fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", unique_suffix()))
}

/// Creates the temporary file for `path` ([`temp_path_for`]), registered
/// and created at once so that a signal never misses it.
pub fn create_temp(path: &Path) -> io::Result<(PathBuf, std::fs::File)> {
    let tmp = temp_name(path);
    let mut guard = live();
    let file = std::fs::File::create(&tmp)?;
    guard.push(tmp.clone());
    Ok((tmp, file))
}

fn forget(list: &mut Vec<PathBuf>, tmp: &Path) {
    if let Some(i) = list.iter().rposition(|p| p == tmp) {
        list.swap_remove(i);
    }
}

/// Moves a finished temporary file onto `path`, removing it if that fails.
pub fn commit_temp(tmp: &Path, path: &Path) -> io::Result<()> {
    let mut guard = live();
    let renamed = std::fs::rename(tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(tmp);
    });
    forget(&mut guard, tmp);
    if renamed.is_ok() {
        let mut list = COMMITTED.lock().unwrap_or_else(|e| e.into_inner());
        list.push(path.to_path_buf());
    }
    renamed
}

/// Removes a temporary file that will not be renamed into place.
pub fn discard_temp(tmp: &Path) {
    let mut guard = live();
    let _ = std::fs::remove_file(tmp);
    forget(&mut guard, tmp);
}

/// Writes to `path` atomically what `fill` writes, as it writes it: a
/// large report never has to be held whole in memory.
pub fn write_streamed(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let (tmp, file) = create_temp(path)?;
    let mut out = io::BufWriter::new(file);
    let written = fill(&mut out).and_then(|()| out.flush());
    drop(out);
    if let Err(e) = written {
        discard_temp(&tmp);
        return Err(e);
    }
    commit_temp(&tmp, path)
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomically(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let (tmp, mut file) = create_temp(path)?;
    let written = file.write_all(bytes.as_ref()).and_then(|()| file.flush());
    drop(file);
    if let Err(e) = written {
        discard_temp(&tmp);
        return Err(e);
    }
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
        assert!(write_atomically(&dir.join("missing/out.txt"), "x").is_err());
        assert!(live_temporaries().iter().all(|t| !t.starts_with(&dir)));
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_names_are_recognised_with_their_process() {
        let tmp = temp_path_for(Path::new("out/REPORT.csv"));
        let name = tmp.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_owner(name), Some(std::process::id()));
        discard_temp(&tmp);
        assert_eq!(temp_owner(".a.b.12.3.tmp"), Some(12));
        for not in ["a.12.3.tmp", ".a.x.3.tmp", ".12.3.tmp", ".a.12.3", "x"] {
            assert_eq!(temp_owner(not), None, "{not}");
        }
    }
}
