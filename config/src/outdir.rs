//! Output folders as whole runs. A run into a folder first sweeps the
//! temporary files a killed run left there ([`crate::files`]'s hidden
//! `.NAME.<pid>.<n>.tmp`, when process `pid` is gone), then removes the
//! files of the older run its manifest lists, writes its own files, and
//! writes `MANIFEST.json` last: the files with their sizes, the command
//! line, the version and `completed: true`. So a folder with a manifest
//! holds exactly one whole run, and a folder without one holds a run that
//! did not finish (or files sysgrad did not write, which it never removes).
//!
//! Replacing rather than refusing (no `--force`): re-running a command
//! into its folder is the normal way to refresh it (`sysgrad figures`, the
//! docs' commands), and the manifest says exactly which files the older
//! run wrote, so nothing else is touched.

use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The manifest's name in every output folder.
pub const MANIFEST: &str = "MANIFEST.json";

/// An I/O error naming the operation and the path.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{op} {}: {error}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: is a file, not a folder (the output folder)", path.display())]
    NotAFolder { path: PathBuf },
    #[error("{}: a file outside the output folder {}", file.display(), dir.display())]
    Outside { file: PathBuf, dir: PathBuf },
}

impl OutputError {
    /// `op` on `path` failed with `error`.
    pub fn io(op: &'static str, path: &Path, error: std::io::Error) -> Self {
        OutputError::Io {
            op,
            path: path.to_path_buf(),
            error,
        }
    }
}

/// One file of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Relative to the folder, `/`-separated.
    pub path: String,
    pub bytes: u64,
}

/// What `MANIFEST.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub tool: String,
    pub version: String,
    /// The command line, the program named `sysgrad`.
    pub command: Vec<String>,
    pub files: Vec<ManifestFile>,
    /// Always true: a manifest is written after the run's last file.
    pub completed: bool,
}

/// An output folder prepared for a run ([`OutputDir::prepare`]).
#[derive(Debug)]
pub struct OutputDir {
    dir: PathBuf,
}

/// Whether process `pid` still runs. Where this cannot be told (no
/// `/proc`), every process counts as running, so nothing is swept.
fn running(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

/// Removes the temporary files in `dir` whose process has ended; their
/// paths.
pub fn sweep_temporaries(dir: &Path) -> Result<Vec<PathBuf>, OutputError> {
    let mut swept = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| OutputError::io("reading", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(crate::files::temp_owner) else {
            continue;
        };
        let path = entry.path();
        if !running(pid) && path.is_file() {
            remove_if_present(&path)?;
            swept.push(path);
        }
    }
    Ok(swept)
}

/// Removes `path`; a file already gone is not an error, since another run
/// into the same folder may have removed it first (two runs into one folder
/// at once must both finish).
fn remove_if_present(path: &Path) -> Result<(), OutputError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(OutputError::io("removing", path, e))
        }
        _ => Ok(()),
    }
}

/// A manifest's relative path, if it is one: no `..`, no root, no prefix.
fn inside(dir: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
    (plain && !rel.as_os_str().is_empty()).then(|| dir.join(rel))
}

impl OutputDir {
    /// Makes `dir` ready for a run: creates it (a file there is refused),
    /// sweeps dead temporaries, and removes the older run its manifest
    /// lists, manifest first (so a run killed from here on leaves no
    /// manifest: an unfinished folder, never a mix that claims to be whole).
    pub fn prepare(dir: &Path) -> Result<OutputDir, OutputError> {
        if dir.exists() && !dir.is_dir() {
            return Err(OutputError::NotAFolder {
                path: dir.to_path_buf(),
            });
        }
        std::fs::create_dir_all(dir).map_err(|e| OutputError::io("creating", dir, e))?;
        sweep_temporaries(dir)?;
        let out = OutputDir {
            dir: dir.to_path_buf(),
        };
        if let Some(old) = out.manifest()? {
            remove_if_present(&dir.join(MANIFEST))?;
            for f in &old.files {
                // A manifest edited to name `../x` removes nothing outside.
                if let Some(path) = inside(dir, &f.path) {
                    remove_if_present(&path)?;
                }
            }
        }
        Ok(out)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The folder's manifest, if it has a readable one (an unreadable or
    /// foreign `MANIFEST.json` is left alone: not ours to remove from).
    pub fn manifest(&self) -> Result<Option<Manifest>, OutputError> {
        let path = self.dir.join(MANIFEST);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(serde_json::from_str(&text).ok()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(OutputError::io("reading", &path, e)),
        }
    }

    /// Writes the manifest of the files this process wrote atomically into
    /// this folder (or its subfolders) since it started, last; returns its
    /// path.
    pub fn finish_written(
        &self,
        command: Vec<String>,
        version: &str,
    ) -> Result<PathBuf, OutputError> {
        let manifest = self.dir.join(MANIFEST);
        let files: Vec<PathBuf> = crate::files::committed_under(&self.dir)
            .into_iter()
            .filter(|f| *f != manifest && f.exists())
            .collect();
        self.finish(&files, command, version)
    }

    /// Writes the manifest of the run that wrote `files` (paths in this
    /// folder, as the run named them), last; returns its path.
    pub fn finish(
        &self,
        files: &[PathBuf],
        command: Vec<String>,
        version: &str,
    ) -> Result<PathBuf, OutputError> {
        let mut listed = Vec::new();
        for file in files {
            let rel = file
                .strip_prefix(&self.dir)
                .ok()
                .filter(|r| r.components().all(|c| matches!(c, Component::Normal(_))))
                .ok_or_else(|| OutputError::Outside {
                    file: file.clone(),
                    dir: self.dir.clone(),
                })?;
            let bytes = std::fs::metadata(file)
                .map_err(|e| OutputError::io("reading the size of", file, e))?
                .len();
            let path = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            listed.push(ManifestFile { path, bytes });
        }
        listed.sort_by(|a, b| a.path.cmp(&b.path));
        listed.dedup();
        let manifest = Manifest {
            tool: "sysgrad".into(),
            version: version.into(),
            command,
            files: listed,
            completed: true,
        };
        let path = self.dir.join(MANIFEST);
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serialises") + "\n";
        crate::files::write_atomically(&path, text)
            .map_err(|e| OutputError::io("writing", &path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "sysgrad-outdir-{name}-{}",
            crate::files::unique_suffix()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A second run replaces the first whole: the files only the first
    /// wrote go, files sysgrad did not write stay, the manifest is the
    /// second's.
    #[test]
    fn a_run_replaces_the_older_run_whole() {
        let dir = scratch("replace");
        let write = |files: &[&str]| {
            let out = OutputDir::prepare(&dir).unwrap();
            let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
            for p in &paths {
                crate::files::write_atomically(p, "x").unwrap();
            }
            out.finish(&paths, vec!["sysgrad".into(), "t".into()], "0")
                .unwrap();
        };
        write(&["a.csv", "b.csv"]);
        std::fs::write(dir.join("mine.txt"), "user").unwrap();
        write(&["a.csv", "c.csv"]);
        let out = OutputDir::prepare(&dir).unwrap();
        crate::files::write_atomically(&dir.join("c.csv"), "x").unwrap();
        out.finish_written(vec![], "0").unwrap();
        let listed: Vec<String> = out
            .manifest()
            .unwrap()
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.path)
            .collect();
        // Every file this process wrote there and that is still there.
        assert_eq!(listed, ["c.csv"]);
        write(&["a.csv", "c.csv"]);
        assert_eq!(names(&dir), ["MANIFEST.json", "a.csv", "c.csv", "mine.txt"]);
        let m = OutputDir::prepare(&dir).unwrap();
        // prepare removed the listed files and the manifest.
        assert_eq!(names(m.path()), ["mine.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_manifest_lists_sizes_and_completion() {
        let dir = scratch("manifest");
        let out = OutputDir::prepare(&dir).unwrap();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        crate::files::write_atomically(&dir.join("sub/r.csv"), "12345").unwrap();
        out.finish(&[dir.join("sub/r.csv")], vec!["sysgrad".into()], "9.9")
            .unwrap();
        let m = out.manifest().unwrap().unwrap();
        assert_eq!(
            m.files,
            [ManifestFile {
                path: "sub/r.csv".into(),
                bytes: 5
            }]
        );
        assert!(m.completed && m.version == "9.9" && m.tool == "sysgrad");
        let e = out
            .finish(&[PathBuf::from("/etc/passwd")], vec![], "0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("outside the output folder"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A manifest naming files outside its folder removes none of them.
    #[test]
    fn a_hostile_manifest_removes_nothing_outside() {
        let dir = scratch("hostile");
        let victim = scratch("victim");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&victim, "keep").unwrap();
        let m = Manifest {
            tool: "sysgrad".into(),
            version: "0".into(),
            command: vec![],
            files: vec![
                ManifestFile {
                    path: victim.to_string_lossy().into_owned(),
                    bytes: 4,
                },
                ManifestFile {
                    path: format!("../{}", victim.file_name().unwrap().to_string_lossy()),
                    bytes: 4,
                },
            ],
            completed: true,
        };
        std::fs::write(dir.join(MANIFEST), serde_json::to_string(&m).unwrap()).unwrap();
        OutputDir::prepare(&dir).unwrap();
        assert!(victim.exists());
        std::fs::remove_file(&victim).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Temporaries of ended processes are swept; this process's and
    /// ordinary files stay.
    #[test]
    fn temporaries_of_ended_runs_are_swept() {
        let dir = scratch("sweep");
        std::fs::create_dir_all(&dir).unwrap();
        // Process ids stay below 2^22 on Linux, so this one never ran.
        let dead = dir.join(".REPORT.csv.4294967294.0.tmp");
        std::fs::write(&dead, "half").unwrap();
        let mine = crate::files::temp_path_for(&dir.join("x.csv"));
        std::fs::write(&mine, "live").unwrap();
        std::fs::write(dir.join("keep.tmp"), "").unwrap();
        let swept = sweep_temporaries(&dir).unwrap();
        if Path::new("/proc").is_dir() {
            assert_eq!(swept, std::slice::from_ref(&dead));
            assert!(!dead.exists());
        }
        assert!(mine.exists() && dir.join("keep.tmp").exists());
        crate::files::discard_temp(&mine);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_is_not_an_output_folder() {
        let file = scratch("file");
        std::fs::write(&file, "").unwrap();
        let e = OutputDir::prepare(&file).unwrap_err().to_string();
        assert!(e.contains(&file.display().to_string()) && e.contains("not a folder"));
        let e = OutputDir::prepare(&file.join("sub"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("creating {}", file.join("sub").display())));
        std::fs::remove_file(&file).unwrap();
    }
}
