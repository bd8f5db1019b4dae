//! Reading a configuration file (TOML or JSON, chosen by extension).

use crate::{ArrayConfig, RawConfig};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: unknown extension (expected .toml or .json)")]
    Extension { path: PathBuf },
    #[error("{field} = {value} is out of range (allowed: {allowed})")]
    OutOfRange {
        field: String,
        value: String,
        allowed: String,
    },
    /// A range error of a file, with where it is: the file and, when the
    /// field can be found in the text, its line. (`error`, not `source`:
    /// its message is part of this one, so it must not print twice.)
    #[error("{}: {error}", location(path, *line))]
    InFile {
        path: PathBuf,
        line: Option<usize>,
        error: Box<ConfigError>,
    },
}

/// `path` or `path: line N`.
pub fn location(path: &Path, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{}: line {l}", path.display()),
        None => path.display().to_string(),
    }
}

/// The longest line of a message, in characters: a value longer than this
/// (a 10 MB number) is cut, so an error stays readable and bounded.
pub const MAX_MESSAGE_LINE: usize = 400;

/// `message` with every line longer than [`MAX_MESSAGE_LINE`] characters
/// cut, saying how much was left out.
pub fn cut_long_lines(message: &str) -> String {
    message
        .split('\n')
        .map(|line| match line.char_indices().nth(MAX_MESSAGE_LINE) {
            None => line.to_string(),
            Some((at, _)) => format!(
                "{}... ({} more characters)",
                &line[..at],
                line[at..].chars().count()
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The 1-based line of `field` (as range errors name it: `array.rows`,
/// `layers[2].units`, `name`) in a TOML or JSON text, when it can be found:
/// the line that sets its last key, in its table where the text has table
/// headers (`[array]`, the third `[[layers]]`), else the first line that
/// sets the key. A best effort for messages, never a parser.
pub fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let (table, key) = match field.rsplit_once('.') {
        Some((t, k)) => (Some(t), k),
        None => (None, field),
    };
    let key = key.split('[').next().unwrap_or(key);
    // `layers[2]` is the third `[[layers]]` header.
    let (table_name, index) = match table.and_then(|t| t.strip_suffix(']')) {
        Some(t) => match t.rsplit_once('[') {
            Some((name, i)) => (Some(name), i.parse::<usize>().ok()),
            None => (table, None),
        },
        None => (table, None),
    };
    let sets_key = |line: &str| {
        let l = line.trim_start();
        let l = l.strip_prefix('"').map_or(l, |l| l);
        l.strip_prefix(key).is_some_and(|rest| {
            let rest = rest.strip_prefix('"').unwrap_or(rest).trim_start();
            rest.starts_with('=') || rest.starts_with(':')
        })
    };
    let mut current: Option<&str> = None;
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    let mut first = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
            let h = h.trim();
            *seen.entry(h).or_default() += 1;
            current = Some(h);
            continue;
        }
        if let Some(h) = t.strip_prefix('[').and_then(|h| h.split(']').next()) {
            if !h.is_empty() && !h.contains(',') && !h.contains('"') {
                current = Some(h.trim());
                continue;
            }
        }
        if !sets_key(line) {
            continue;
        }
        first.get_or_insert(n + 1);
        let in_table = match (table_name, current) {
            (None, None) => true,
            (Some(want), Some(cur)) => {
                want == cur && index.is_none_or(|i| seen.get(cur).copied() == Some(i + 1))
            }
            _ => false,
        };
        if in_table {
            return Some(n + 1);
        }
    }
    first
}

/// A validation error of the text of `path`, with its file and line.
pub fn in_file(error: ConfigError, text: &str, path: &Path) -> ConfigError {
    let line = match &error {
        ConfigError::OutOfRange { field, .. } => line_of_field(text, field),
        _ => None,
    };
    ConfigError::InFile {
        path: path.to_path_buf(),
        line,
        error: Box::new(error),
    }
}

/// Parses a configuration from text; `json` selects the format.
pub fn parse_config(text: &str, json: bool, path: &Path) -> Result<ArrayConfig, ConfigError> {
    // Parsed in the raw form first, so that a range error is reported as
    // itself rather than wrapped in the parser's message.
    let raw: RawConfig = if json {
        serde_json::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: cut_long_lines(&e.to_string()),
        })?
    } else {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: cut_long_lines(&e.to_string()),
        })?
    };
    raw.try_into().map_err(|e| in_file(e, text, path))
}

/// Loads and validates a `.toml` or `.json` configuration file.
pub fn load_config(path: &Path) -> Result<ArrayConfig, ConfigError> {
    let json = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => false,
        Some("json") => true,
        _ => {
            return Err(ConfigError::Extension {
                path: path.to_path_buf(),
            })
        }
    };
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_config(&text, json, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_agree() {
        let cfg = ArrayConfig::default_16x16();
        let t = parse_config(&cfg.to_toml(), false, Path::new("x.toml")).unwrap();
        let j = serde_json::to_string(&cfg).unwrap();
        let j = parse_config(&j, true, Path::new("x.json")).unwrap();
        assert_eq!(t, cfg);
        assert_eq!(j, cfg);
    }

    #[test]
    fn narrow_accumulator_is_rejected_with_needed_width() {
        let cfg = ArrayConfig::default_16x16();
        let mut f = cfg.format();
        f.acc_bits = 24;
        let e = cfg.with_format(f).unwrap_err().to_string();
        assert!(e.contains("format.acc_bits") && e.contains("32"), "{e}");
    }

    #[test]
    fn unknown_field_is_rejected() {
        let text = ArrayConfig::default_16x16().to_toml() + "\nbogus = 1\n";
        assert!(parse_config(&text, false, Path::new("x.toml")).is_err());
    }

    /// A range error names the file, the line and the field.
    #[test]
    fn range_errors_name_file_line_and_field() {
        let text = ArrayConfig::default_16x16()
            .to_toml()
            .replace("rows = 16", "rows = 0");
        let line = 1 + text.lines().position(|l| l == "rows = 0").unwrap();
        let e = parse_config(&text, false, Path::new("a.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "a.toml: line {line}: array.rows = 0 is out of range"
            )),
            "{e}"
        );
        let json = serde_json::to_string_pretty(&ArrayConfig::default_16x16())
            .unwrap()
            .replace("\"rows\": 16", "\"rows\": 0");
        let line = 1 + json
            .lines()
            .position(|l| l.contains("\"rows\": 0"))
            .unwrap();
        let e = parse_config(&json, true, Path::new("a.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("a.json: line {line}: array.rows")),
            "{e}"
        );
    }

    #[test]
    fn fields_are_found_in_their_tables() {
        let text =
            "name = \"x\"\n[array]\nrows = 4\n[[layers]]\nunits = 1\n[[layers]]\nunits = 2\n";
        assert_eq!(line_of_field(text, "array.rows"), Some(3));
        assert_eq!(line_of_field(text, "layers[1].units"), Some(7));
        assert_eq!(line_of_field(text, "layers[0].units"), Some(5));
        assert_eq!(line_of_field(text, "name"), Some(1));
        assert_eq!(line_of_field(text, "array.cols"), None);
    }

    /// A 10 MB number is not echoed whole.
    #[test]
    fn long_values_are_cut_in_messages() {
        let long = "9".repeat(10_000_000);
        let text = format!("[array]\nrows = {long}\n");
        let e = parse_config(&text, false, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 4 * MAX_MESSAGE_LINE, "{} characters", e.len());
        assert!(e.contains("more characters"), "{e}");
        assert_eq!(cut_long_lines("short\nlines"), "short\nlines");
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any text, valid or not, gives a config or an error: never a panic,
        /// and a config that comes back has passed validation.
        #[test]
        fn arbitrary_text_never_panics(text in ".{0,200}", json in any::<bool>()) {
            if let Ok(cfg) = parse_config(&text, json, Path::new("fuzz")) {
                prop_assert!(ArrayConfig::new(cfg.rows(), cfg.cols(), cfg.backward(), cfg.format()).is_ok());
            }
        }

        /// Mutated valid configs: every field at arbitrary values is either
        /// accepted in range or refused naming that field.
        #[test]
        fn every_field_is_range_checked(
            rows in 0usize..200, cols in 0usize..200,
            in_bits in 0u32..70, acc_bits in 0u32..70, frac_bits in 0u32..70,
        ) {
            let text = format!(
                "[array]\nrows = {rows}\ncols = {cols}\nbackward = \"sequential\"\n[format]\nin_bits = {in_bits}\nacc_bits = {acc_bits}\nfrac_bits = {frac_bits}\n"
            );
            match parse_config(&text, false, Path::new("fuzz.toml")) {
                Ok(cfg) => {
                    prop_assert!((1..=crate::MAX_DIM).contains(&cfg.rows()));
                    prop_assert!(cfg.format().acc_bits >= 2 * cfg.format().in_bits);
                    prop_assert!(cfg.format().frac_bits < cfg.format().in_bits);
                }
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(msg.contains("array.") || msg.contains("format."), "{}", msg);
                }
            }
        }
    }

    #[test]
    fn negative_and_fractional_values_are_parse_errors() {
        for bad in ["rows = -1", "rows = 2.5", "rows = \"4\""] {
            let text = format!("[array]\n{bad}\ncols = 4\nbackward = \"sequential\"\n[format]\nin_bits = 8\nacc_bits = 16\nfrac_bits = 0\n");
            let e = parse_config(&text, false, Path::new("x.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("x.toml") && e.contains("rows"), "{e}");
        }
    }
}
