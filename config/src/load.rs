//! Reading a configuration file (TOML or JSON, chosen by extension).

use crate::{ArrayConfig, RawConfig};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
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
}

/// Parses a configuration from text; `json` selects the format.
pub fn parse_config(text: &str, json: bool, path: &Path) -> Result<ArrayConfig, ConfigError> {
    // Parsed in the raw form first, so that a range error is reported as
    // itself rather than wrapped in the parser's message.
    let raw: RawConfig = if json {
        serde_json::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?
    } else {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?
    };
    raw.try_into()
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
