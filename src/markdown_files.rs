//! The repository's Markdown pages: every `.md` file under a root, outside
//! build output (`target/`), the generated Verilog (`rtl_out/`) and hidden
//! folders. `sysgrad figures` reads the ones with figure blocks;
//! `tests/links.rs` (which includes this file) checks the links of all.

use std::path::{Path, PathBuf};

/// Folders at the root the walk never enters; hidden folders are skipped
/// at every depth.
const SKIPPED_FOLDERS: [&str; 2] = ["target", "rtl_out"];

/// Every Markdown file under `root`, sorted, as paths under `root`.
pub fn markdown_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder)
            .map_err(|e| format!("reading the folder {}: {e}", folder.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|e| format!("{}: {e}", folder.display()))?
                .path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                let skipped =
                    name.starts_with('.') || (folder == root && SKIPPED_FOLDERS.contains(&name));
                if !skipped {
                    folders.push(path);
                }
            } else if name.ends_with(".md") {
                files.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
            }
        }
    }
    files.sort();
    Ok(files)
}
