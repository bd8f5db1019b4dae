//! Model files: the serde description ([`spec`]) and its checks
//! ([`validate`]).

pub mod graph;
pub mod layer_table;
pub mod spec;
pub mod validate;

pub use spec::*;
pub use validate::Shape;

use crate::data::{DataSource, DatasetInfo};
use crate::error::{Result, WorkloadError};
pub use graph::{Graph, Wire};
use std::path::{Path, PathBuf};
use sysgrad_config::ArrayConfig;

/// A checked model, ready to build.
#[derive(Debug, Clone)]
pub struct Model {
    pub spec: ModelSpec,
    /// The interleaved array it trains on.
    pub cfg: ArrayConfig,
    /// The shape of every value: the model's input, then each layer's
    /// output (for the list form: the input of every layer, then the
    /// output of the last). [`Model::input_shape`] is a layer's input.
    pub shapes: Vec<Shape>,
    /// Which values each layer reads (the chain for the list form).
    pub graph: Graph,
    /// Where the digits data set is read from (for other data sets, the
    /// first training file).
    pub data_path: PathBuf,
    /// The ONNX graph the layers and initial weights came from (`onnx`).
    pub onnx: Option<std::sync::Arc<crate::onnx::Imported>>,
    /// The data set's files and what the headers say about it.
    pub data: DataSource,
    pub dataset: DatasetInfo,
}

/// The digits copy shipped with the crate.
pub fn default_data_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits.csv.gz")
}

impl Model {
    /// The shape of layer `i`'s (first) input.
    pub fn input_shape(&self, i: usize) -> Shape {
        self.shapes[self.graph.inputs[i][0]]
    }
}

/// Parses and checks a model given as text; `json` picks the syntax and
/// `path` is used in messages and to resolve `data.path`.
pub fn parse_model(text: &str, json: bool, path: &Path) -> Result<Model> {
    let parse_err = |message: String| WorkloadError::Parse {
        path: path.to_path_buf(),
        message: sysgrad_config::cut_long_lines(&message),
    };
    refuse_float_format(text, json)
        .map_err(|m| WorkloadError::model(format!("{}: format.kind", path.display()), m))?;
    let mut raw: ModelSpec<layer_table::LayerTable> = if json {
        serde_json::from_str(text).map_err(|e| parse_err(e.to_string()))?
    } else {
        toml::from_str(text).map_err(|e| parse_err(e.to_string()))?
    };
    raw.graph = wires(&mut raw.layers)
        .map_err(|(i, m)| WorkloadError::model(format!("{}: layers[{i}]", path.display()), m))?;
    let spec = raw.try_map_layers(|i, t| {
        LayerSpec::try_from(t)
            .map_err(|m| WorkloadError::model(format!("{}: layers[{i}]", path.display()), m))
    })?;
    from_spec(spec, path.parent()).map_err(|e| in_file(e, text, path))
}

/// The trainers train in fixed point: a model whose `[format]` says
/// `kind = "float"` is refused here, the one check of the crate, rather
/// than read as fixed point or failed on as an unknown field.
fn refuse_float_format(text: &str, json: bool) -> std::result::Result<(), String> {
    let kind = if json {
        serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("format")?.get("kind")?.as_str().map(str::to_owned))
    } else {
        toml::from_str::<toml::Value>(text)
            .ok()
            .and_then(|v| v.get("format")?.get("kind")?.as_str().map(str::to_owned))
    };
    match kind.as_deref() {
        Some("float") => Err(
            "\"float\" is not taken by the trainers yet (they train in fixed \
             point: drop format.kind and give in_bits, acc_bits, frac_bits); the array and \
             the emulator (sysgrad_emulator::Driver, gemm, fast) take it"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// The graph form's `name` and `inputs` of every layer table (taken out
/// of them), or `None` for the list form (no layer has either).
fn wires(
    tables: &mut [layer_table::LayerTable],
) -> std::result::Result<Option<Vec<Wire>>, (usize, String)> {
    if tables
        .iter()
        .all(|t| t.name.is_none() && t.inputs.is_none())
    {
        return Ok(None);
    }
    tables
        .iter_mut()
        .enumerate()
        .map(|(i, t)| {
            let name = t.name.take().ok_or((
                i,
                "needs a `name`: in the graph form (a layer has `name` or `inputs`) every layer has one"
                    .to_string(),
            ))?;
            Ok(Wire {
                name,
                inputs: t.inputs.take().unwrap_or_default(),
            })
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(Some)
}

/// A check's error on the text of `path`, with the file and, when the
/// field can be found, its line (`path: line N: field = value is out of
/// range ...`).
fn in_file(e: WorkloadError, text: &str, path: &Path) -> WorkloadError {
    let field = match &e {
        WorkloadError::OutOfRange { field, .. } | WorkloadError::Model { field, .. } => field,
        _ => return e,
    };
    // `layers[2] (dense).units` is `units` of the third `[[layers]]`.
    let plain = field.replace(" (", ".(");
    let plain: String = plain
        .split('.')
        .filter(|p| !p.starts_with('('))
        .collect::<Vec<_>>()
        .join(".");
    let line = sysgrad_config::line_of_field(text, &plain);
    WorkloadError::Parse {
        path: path.to_path_buf(),
        message: sysgrad_config::cut_long_lines(&match line {
            Some(l) => format!("line {l}: {e}"),
            None => e.to_string(),
        }),
    }
}

/// Checks a model built in code; a relative `data.path` (and `onnx`) is
/// taken from `base`.
pub fn from_spec(mut spec: ModelSpec, base: Option<&Path>) -> Result<Model> {
    // The data set first: an ONNX graph's input must take its samples.
    let data = DataSource::resolve(&spec.data, base, default_data_path())?;
    let dataset = data.info()?;
    let onnx = match &spec.onnx {
        Some(p) => {
            let p = match p.is_relative() {
                true => base.unwrap_or(Path::new(".")).join(p),
                false => p.clone(),
            };
            Some(std::sync::Arc::new(crate::onnx::import_into(
                &mut spec,
                &p,
                dataset.input,
            )?))
        }
        None => None,
    };
    let checked = graph::resolve(&spec).and_then(|graph| {
        let shapes = validate::validate_graph(&spec, &graph, &dataset)?;
        Ok((graph, shapes))
    });
    let (graph, shapes) = match &onnx {
        Some(imp) => checked.map_err(|e| crate::onnx::at_node(e, imp))?,
        None => checked?,
    };
    let cfg = validate::array_config(&spec)?;
    let data_path = data.main_path().to_path_buf();
    Ok(Model {
        spec,
        cfg,
        shapes,
        graph,
        data_path,
        onnx,
        data,
        dataset,
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

#[cfg(test)]
mod tests {
    use super::*;

    const MLP: &str = include_str!("../../models/mlp.toml");
    const SNN: &str = include_str!("../../models/snn.toml");

    fn error(text: &str) -> String {
        parse_model(text, false, Path::new("m.toml"))
            .unwrap_err()
            .to_string()
    }

    /// The trainers do not take a float format: a model saying so is
    /// refused naming `format.kind` and what does take it (TOML and JSON).
    #[test]
    fn a_float_format_is_refused() {
        let float = MLP.replace(
            "in_bits = 16\nacc_bits = 40\nfrac_bits = 10",
            "kind = \"float\"\nweights = \"bf16\"\nactivations = \"bf16\"\ngradients = \"bf16\"",
        );
        assert_ne!(float, MLP);
        let msg = error(&float);
        assert!(
            msg.contains("format.kind") && msg.contains("emulator"),
            "{msg}"
        );
        let json = r#"{"name": "m", "format": {"kind": "float"}}"#;
        let msg = parse_model(json, true, Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("format.kind"), "{msg}");
    }

    /// Issue 28: a model name that is a path would put the reports outside
    /// the output folder; it is refused naming the field.
    #[test]
    fn a_name_is_a_name_not_a_path() {
        for bad in [
            "../../../../tmp/x",
            "/tmp/x",
            "a/b",
            "..",
            ".hidden",
            "a\\\\b",
            "",
        ] {
            let e = error(&MLP.replace("name = \"mlp\"", &format!("name = \"{bad}\"")));
            assert!(
                e.starts_with("m.toml: line 2: name = ") && e.contains("not a path"),
                "{bad}: {e}"
            );
        }
        for good in ["mlp-2", "mlp_v1.5", "MLP"] {
            assert!(parse_model(
                &MLP.replace("name = \"mlp\"", &format!("name = \"{good}\"")),
                false,
                Path::new("m.toml")
            )
            .is_ok());
        }
    }

    /// Issue 28: range errors name the file, the line and the field.
    #[test]
    fn range_errors_name_file_line_and_field() {
        let e = error(&MLP.replace("units = 64", "units = 5000"));
        let line = 1 + MLP.lines().position(|l| l == "units = 64").unwrap();
        assert!(
            e.starts_with(&format!(
                "m.toml: line {line}: layers[1] (dense).units = 5000"
            )),
            "{e}"
        );
        let e = error(&MLP.replace("epochs = 20", "epochs = 0"));
        let line = 1 + MLP.lines().position(|l| l == "epochs = 20").unwrap();
        assert!(
            e.starts_with(&format!("m.toml: line {line}: training.epochs = 0")),
            "{e}"
        );
        let e = error(&MLP.replace("rows = 16", "rows = 0"));
        assert!(e.starts_with("m.toml: line 5: array.rows = 0"), "{e}");
    }

    /// Issue 28: an SNN with one time step was accepted though the docs
    /// say T > 1.
    #[test]
    fn a_spiking_model_needs_more_than_one_time_step() {
        assert!(parse_model(SNN, false, Path::new("snn.toml")).is_ok());
        let e = error(&SNN.replace("time_steps = 16", "time_steps = 1"));
        assert!(
            e.contains("input.time_steps = 1") && e.contains("2..=256 for a spiking model"),
            "{e}"
        );
    }

    /// Issue 28: a 10 MB number is not echoed whole.
    #[test]
    fn long_values_are_cut() {
        let e = error(&MLP.replace("units = 64", &format!("units = {}", "9".repeat(1 << 20))));
        assert!(
            e.len() < 2000 && e.contains("more characters"),
            "{}",
            e.len()
        );
    }
}
