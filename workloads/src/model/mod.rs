//! Model files: the serde description ([`spec`]) and its checks
//! ([`validate`]).

pub mod layer_table;
pub mod spec;
pub mod validate;

pub use spec::*;
pub use validate::Shape;

use crate::error::{Result, WorkloadError};
use std::path::{Path, PathBuf};
use sysgrad_config::ArrayConfig;

/// A checked model, ready to build.
#[derive(Debug, Clone)]
pub struct Model {
    pub spec: ModelSpec,
    /// The interleaved array it trains on.
    pub cfg: ArrayConfig,
    /// Input shape of every layer, then the output shape of the last.
    pub shapes: Vec<Shape>,
    /// Where the digits data set is read from.
    pub data_path: PathBuf,
}

/// The digits copy shipped with the crate.
pub fn default_data_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits.csv.gz")
}

/// Parses and checks a model given as text; `json` picks the syntax and
/// `path` is used in messages and to resolve `data.path`.
pub fn parse_model(text: &str, json: bool, path: &Path) -> Result<Model> {
    let parse_err = |message: String| WorkloadError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let raw: ModelSpec<layer_table::LayerTable> = if json {
        serde_json::from_str(text).map_err(|e| parse_err(e.to_string()))?
    } else {
        toml::from_str(text).map_err(|e| parse_err(e.to_string()))?
    };
    let spec = raw.try_map_layers(|i, t| {
        LayerSpec::try_from(t)
            .map_err(|m| WorkloadError::model(format!("{}: layers[{i}]", path.display()), m))
    })?;
    from_spec(spec, path.parent())
}

/// Checks a model built in code; a relative `data.path` is taken from `base`.
pub fn from_spec(spec: ModelSpec, base: Option<&Path>) -> Result<Model> {
    let shapes = validate::validate(&spec)?;
    let cfg = validate::array_config(&spec)?;
    let data_path = match &spec.data.path {
        Some(p) if p.is_relative() => base.unwrap_or(Path::new(".")).join(p),
        Some(p) => p.clone(),
        None => default_data_path(),
    };
    Ok(Model {
        spec,
        cfg,
        shapes,
        data_path,
    })
}

/// Loads a `.toml` or `.json` model file.
pub fn load_model(path: &Path) -> Result<Model> {
    let json = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => false,
        Some("json") => true,
        _ => {
            return Err(WorkloadError::Parse {
                path: path.to_path_buf(),
                message: "unknown extension (expected .toml or .json)".into(),
            })
        }
    };
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::io(path, e))?;
    parse_model(&text, json, path)
}
