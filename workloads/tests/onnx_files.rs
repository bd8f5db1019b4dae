//! ONNX in and out without any tool: a model written and read again is the
//! same graph with the same weights, and every refusal names the file, the
//! node, its op type and what is supported. (The check against onnxruntime
//! is `onnx_runtime.rs`.)

use ndarray::Array2;
use prost::Message;
use std::path::{Path, PathBuf};
use sysgrad_workloads::model::{graph, load_model, parse_model, LayerSpec, Model};
use sysgrad_workloads::net::initial_weights;
use sysgrad_workloads::onnx::proto::{self, ModelProto, NodeProto};
use sysgrad_workloads::onnx::{read, table, to_onnx};
use sysgrad_workloads::DIGITS;

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}

fn toml_model(name: &str) -> Model {
    load_model(&models_dir().join(format!("{name}.toml"))).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Weights that differ from layer to layer and entry to entry.
fn some_weights(m: &Model) -> Vec<Option<Array2<f64>>> {
    initial_weights(m)
        .into_iter()
        .enumerate()
        .map(|(i, w)| w.map(|w| w.mapv(|v| v + 0.001 * (i as f64 + 1.0))))
        .collect()
}

fn f32s(w: &[Option<Array2<f64>>]) -> Vec<Option<Array2<f32>>> {
    w.iter()
        .map(|w| w.as_ref().map(|w| w.mapv(|v| v as f32)))
        .collect()
}

fn import(p: &ModelProto, path: &str) -> Result<read::Imported, String> {
    read::import_proto(p.clone(), Path::new(path), DIGITS.input).map_err(|e| e.to_string())
}

/// A TOML model written out and read back: the same layers and weights;
/// written again from the import (the imported graph with new
/// initializers): the same graph, bit for bit, once the weights are the same.
#[test]
fn write_then_read_gives_the_same_graph_and_weights() {
    for name in ["mlp", "cnn"] {
        let m = toml_model(name);
        let w = some_weights(&m);
        let proto = to_onnx(&m, &w).unwrap();
        let bytes = proto.encode_to_vec();
        let again = ModelProto::decode(&bytes[..]).unwrap();
        let imp = import(&again, "x.onnx").unwrap();
        assert_eq!(imp.layers, m.spec.layers, "{name}");
        assert_eq!(imp.weights, f32s(&w), "{name}");

        // The imported model, trained (new weights), written back.
        let path = tmp(&format!("{name}.onnx"));
        std::fs::write(&path, &bytes).unwrap();
        let text = std::fs::read_to_string(models_dir().join(format!("{name}.toml"))).unwrap();
        let with_onnx = strip_layers(&text).replace(
            &format!("name = \"{name}\""),
            &format!("name = \"{name}\"\nonnx = {:?}", path),
        );
        let toml = tmp(&format!("{name}_onnx.toml"));
        std::fs::write(&toml, with_onnx).unwrap();
        let from_onnx = load_model(&toml).unwrap();
        assert_eq!(from_onnx.spec.layers, m.spec.layers);
        assert_eq!(from_onnx.shapes, m.shapes);
        // Initial weights: the initializers rounded to the grid (here
        // already on it, plus the offsets).
        let w2 = some_weights(&from_onnx);
        let out = to_onnx(&from_onnx, &w2).unwrap();
        let back = import(&out, "y.onnx").unwrap();
        assert_eq!(back.layers, m.spec.layers);
        assert_eq!(back.weights, f32s(&w2));
        // Same nodes, inputs, outputs and initializer names as read.
        let (a, b) = (again.graph.unwrap(), out.graph.unwrap());
        assert_eq!(a.node, b.node);
        assert_eq!(a.input, b.input);
        assert_eq!(a.output, b.output);
        let names = |g: &proto::GraphProto| {
            g.initializer
                .iter()
                .map(|t| (t.name.clone(), t.dims.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&a), names(&b));
    }
}

fn strip_layers(toml: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in toml.lines() {
        if line.starts_with('[') {
            skipping = line == "[[layers]]";
        }
        if !skipping {
            out += line;
            out.push('\n');
        }
    }
    out
}

/// The CNN's graph as sysgrad writes it, to break one piece at a time.
fn cnn_proto() -> ModelProto {
    let m = toml_model("cnn");
    to_onnx(&m, &initial_weights(&m)).unwrap()
}

fn nodes(p: &mut ModelProto) -> &mut Vec<NodeProto> {
    &mut p.graph.as_mut().unwrap().node
}

fn refused(p: &ModelProto) -> String {
    let e = import(p, "bad.onnx").unwrap_err();
    assert!(e.starts_with("bad.onnx: "), "names the file: {e}");
    e
}

#[test]
fn an_unknown_op_is_refused_naming_node_op_and_the_supported_list() {
    let mut p = cnn_proto();
    nodes(&mut p)[1].op_type = Some("Sigmoid".into());
    let e = refused(&p);
    assert!(
        e.contains("node `relu1` (Sigmoid) is not supported (supported: Gemm, MatMul + Add, Conv, Relu, MaxPool, Flatten, Reshape (to [N, -1]), Add, AveragePool, GlobalAveragePool)"),
        "{e}"
    );
}

#[test]
fn average_pooling_imports_as_the_graph_forms_layers() {
    let mut p = cnn_proto();
    nodes(&mut p)[2].op_type = Some("AveragePool".into());
    let imp = import(&p, "avg.onnx").unwrap();
    assert!(
        matches!(
            imp.layers[2],
            LayerSpec::AvgPool {
                size: 2,
                stride: None
            }
        ),
        "{:?}",
        imp.layers
    );
    // The whole map's mean: the dense layer after it then reads one value
    // a channel, which its weights (made for the pooled map) do not fit.
    let mut p = cnn_proto();
    nodes(&mut p)[2].op_type = Some("GlobalAveragePool".into());
    nodes(&mut p)[2].attribute.clear();
    let e = import(&p, "gap.onnx").unwrap_err();
    assert!(
        !e.contains("not supported") && !e.contains("graph form"),
        "{e}"
    );
}

/// A residual network on the digits: a block that keeps the shape (its
/// input added as it is) and one that halves the map (a stride-2 1x1
/// projection beside it), global average pooling and a dense readout.
pub const RESIDUAL: &str = r#"
name = "residual"
[format]
in_bits = 16
acc_bits = 40
frac_bits = 10
[[layers]]
name = "c1"
type = "conv2d"
filters = 4
kernel = 3
padding = 1
[[layers]]
name = "r1"
type = "relu"
[[layers]]
name = "c2"
type = "conv2d"
filters = 4
kernel = 3
padding = 1
[[layers]]
name = "sum1"
type = "add"
inputs = ["c2", "r1"]
[[layers]]
name = "r2"
type = "relu"
[[layers]]
name = "c3"
type = "conv2d"
filters = 8
kernel = 3
stride = 2
padding = 1
[[layers]]
name = "proj"
type = "conv2d"
filters = 8
kernel = 1
stride = 2
inputs = ["r2"]
[[layers]]
name = "sum2"
type = "add"
inputs = ["c3", "proj"]
[[layers]]
name = "gap"
type = "global_avg_pool"
[[layers]]
name = "flat"
type = "flatten"
[[layers]]
name = "out"
type = "dense"
units = 10
[optimizer]
kind = "sgd"
lr_shift = 11
grad_scale_shift = 4
[training]
epochs = 1
batch_size = 32
seed = 1
"#;

fn residual_model() -> Model {
    parse_model(RESIDUAL, false, Path::new("residual.toml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_residual_network_goes_out_and_back_in_as_the_graph_form() {
    let m = residual_model();
    let w = some_weights(&m);
    let p = to_onnx(&m, &w).unwrap();
    let ops: Vec<_> = p
        .graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .map(|n| n.op_type.clone().unwrap())
        .collect();
    assert_eq!(
        ops,
        [
            "Conv",
            "Relu",
            "Conv",
            "Add",
            "Relu",
            "Conv",
            "Conv",
            "Add",
            "GlobalAveragePool",
            "Flatten",
            "Gemm"
        ]
    );
    let imp = import(&p, "residual.onnx").unwrap();
    assert_eq!(imp.layers, m.spec.layers);
    assert_eq!(imp.weights, f32s(&w));
    // The wiring, named after the ONNX values: the same graph.
    let wires = imp.graph.clone().expect("a residual graph is not a chain");
    assert_eq!(wires[3].inputs, ["conv2d2_out", "relu1_out"]);
    assert_eq!(wires[6].inputs, ["relu4_out"]);
    let mut spec = m.spec.clone();
    spec.graph = Some(wires);
    assert_eq!(graph::resolve(&spec).unwrap(), m.graph);
    // A chain stays the list form.
    assert!(import(&cnn_proto(), "cnn.onnx").unwrap().graph.is_none());
}

#[test]
fn what_an_add_cannot_add_is_refused_naming_the_node() {
    let m = residual_model();
    let p = to_onnx(&m, &initial_weights(&m)).unwrap();
    // A constant added to a computed value (not a MatMul's bias).
    let mut q = p.clone();
    nodes(&mut q)[3].input[1] = "conv2d0.bias".into();
    let e = refused(&q);
    assert!(
        e.contains(
            "node `add3` (Add): adds `conv2d0.bias`, a constant: sysgrad adds two computed values"
        ),
        "{e}"
    );
    // Two values of different shapes.
    let mut q = p.clone();
    nodes(&mut q)[7].input[1] = "relu4_out".into();
    let e = refused(&q);
    assert!(
        e.contains("node `add7` (Add) adds values of different shapes (8x4x4 and 4x8x8)"),
        "{e}"
    );
    // A value no node computed.
    let mut q = p.clone();
    nodes(&mut q)[3].input[1] = "nowhere".into();
    let e = refused(&q);
    assert!(
        e.contains("node `add3` (Add): reads `nowhere`, which is not the graph's input or the output of an earlier node"),
        "{e}"
    );
    // A branch that leads nowhere: the projection's output unused (the
    // sum adds the stride-2 convolution to itself).
    let mut q = p;
    nodes(&mut q)[7].input[1] = "conv2d5_out".into();
    let e = match parse_imported(&q) {
        Err(e) => e,
        Ok(_) => panic!("an unused branch was accepted"),
    };
    assert!(
        e.contains(
            "node `conv2d6` (Conv): layers[6] (conv2d): the output of \"conv2d6_out\" is not used"
        ),
        "{e}"
    );
}

/// `q` written to a file and read through a model file that names it, as
/// a user's would be (sysgrad's own checks run too).
fn parse_imported(q: &ModelProto) -> Result<Model, String> {
    let path = tmp("imported.onnx");
    std::fs::write(&path, q.encode_to_vec()).unwrap();
    let text = strip_layers(RESIDUAL).replace(
        "name = \"residual\"",
        &format!("name = \"residual\"\nonnx = {path:?}"),
    );
    parse_model(&text, false, Path::new("m.toml")).map_err(|e| e.to_string())
}

#[test]
fn batch_normalization_is_refused() {
    let mut p = cnn_proto();
    nodes(&mut p)[1].op_type = Some("BatchNormalization".into());
    let e = refused(&p);
    assert!(
        e.contains(
            "node `relu1` (BatchNormalization) is not supported: fold it into the convolution"
        ),
        "{e}"
    );
}

#[test]
fn a_wrong_opset_is_refused() {
    for v in [11, 29] {
        let mut p = cnn_proto();
        p.opset_import[0].version = Some(v);
        let e = refused(&p);
        assert!(
            e.contains(&format!("opset {v} is not supported (allowed: 13..=28")),
            "{e}"
        );
    }
}

#[test]
fn dynamic_shapes_other_than_the_batch_are_refused() {
    use proto::tensor_shape_proto::dimension::Value;
    let mut p = cnn_proto();
    let t = input_tensor(&mut p);
    t.shape.as_mut().unwrap().dim[2].value = Some(Value::DimParam("height".into()));
    let e = refused(&p);
    assert!(
        e.contains("input `input`: dimension 2 is `height`; only the batch dimension (the first) may be dynamic"),
        "{e}"
    );
}

#[test]
fn missing_initializers_are_refused() {
    let mut p = cnn_proto();
    p.graph
        .as_mut()
        .unwrap()
        .initializer
        .retain(|t| t.name.as_deref() != Some("conv2d3.weight"));
    let e = refused(&p);
    assert!(
        e.contains("node `conv2d3` (Conv): W `conv2d3.weight` is not an initializer"),
        "{e}"
    );
}

#[test]
fn non_float_tensors_are_refused() {
    let mut p = cnn_proto();
    let t = &mut p.graph.as_mut().unwrap().initializer[0];
    t.data_type = Some(proto::tensor_proto::DataType::Double as i32);
    let e = refused(&p);
    assert!(
        e.contains("node `conv2d0` (Conv): W `conv2d0.weight` is DOUBLE, not FLOAT"),
        "{e}"
    );
    let mut p = cnn_proto();
    let t = input_tensor(&mut p);
    t.elem_type = Some(proto::tensor_proto::DataType::Int8 as i32);
    let e = refused(&p);
    assert!(e.contains("input `input` is INT8, not FLOAT"), "{e}");
}

#[test]
fn unsupported_attributes_name_what_is_accepted() {
    let mut p = cnn_proto();
    let conv = &mut nodes(&mut p)[0];
    conv.attribute.push(proto::AttributeProto {
        name: Some("group".into()),
        i: Some(2),
        ..Default::default()
    });
    let e = refused(&p);
    assert!(
        e.contains("node `conv2d0` (Conv): group = 2 (accepted: 2-D, square kernel"),
        "{e}"
    );
}

#[test]
fn input_shape_must_be_the_data_sets() {
    let mut p = cnn_proto();
    let t = input_tensor(&mut p);
    t.shape.as_mut().unwrap().dim[2].value =
        Some(proto::tensor_shape_proto::dimension::Value::DimValue(28));
    let e = refused(&p);
    assert!(
        e.contains("input `input` has shape [N, 1, 28, 8]; the data set's samples are 1x8x8"),
        "{e}"
    );
}

#[test]
fn a_file_that_is_not_onnx_names_the_file() {
    let path = tmp("garbage.onnx");
    std::fs::write(&path, b"\xff\xff\xff not a protobuf").unwrap();
    let e = read::import(&path, DIGITS.input).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: not an ONNX model", path.display())),
        "{e}"
    );
}

/// A spiking model has no ONNX form: refused, naming the layer.
#[test]
fn a_spiking_model_cannot_be_exported() {
    let m = toml_model("snn");
    let e = to_onnx(&m, &initial_weights(&m)).unwrap_err().to_string();
    assert!(e.contains("(lif)") && e.contains("no ONNX operator"), "{e}");
}

/// The docs' mapping table is the importer's.
#[test]
fn the_docs_show_the_mapping_table() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ONNX.md"))
            .unwrap();
    assert!(
        doc.contains(&table::markdown()),
        "docs/ONNX.md lacks the table:\n{}",
        table::markdown()
    );
}

/// `SYSGRAD_PRINT_ONNX_TABLE=1 cargo test --test onnx_files print_table -- --nocapture`
/// prints the table for the docs.
#[test]
fn print_table() {
    if std::env::var_os("SYSGRAD_PRINT_ONNX_TABLE").is_some() {
        print!("{}", table::markdown());
    }
}

/// sysgrad's own limits still apply to an imported model; the message
/// names the node the layer came from.
#[test]
fn sysgrad_limits_name_the_node() {
    let mut p = cnn_proto();
    // Twelve classes where the data set has ten.
    for t in &mut p.graph.as_mut().unwrap().initializer {
        match t.name.as_deref() {
            Some("dense7.weight") => t.dims[0] = 12,
            Some("dense7.bias") => t.dims[0] = 12,
            _ => continue,
        }
        let n: i64 = t.dims.iter().product();
        t.raw_data = Some(vec![0; 4 * n as usize]);
    }
    let path = tmp("twelve.onnx");
    std::fs::write(&path, p.encode_to_vec()).unwrap();
    let e = sysgrad_workloads::onnx::default_model(&path)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "{}: node `dense7` (Gemm): layers[7]: the last layer must produce 10 values",
            path.display()
        )),
        "{e}"
    );
}

/// Tied weights would train as two copies: refused.
#[test]
fn tied_weights_are_refused() {
    let text = std::fs::read_to_string(models_dir().join("mlp.toml")).unwrap();
    let deeper = text.replace(
        "[[layers]]\ntype = \"relu\"\n",
        "[[layers]]\ntype = \"relu\"\n\n[[layers]]\ntype = \"dense\"\nunits = 64\n\n[[layers]]\ntype = \"relu\"\n",
    );
    let m = sysgrad_workloads::model::parse_model(&deeper, false, Path::new("deep.toml")).unwrap();
    assert_eq!(m.spec.layers.len(), 6);
    let mut p = to_onnx(&m, &initial_weights(&m)).unwrap();
    nodes(&mut p)[3].input[1] = "dense1.weight".into();
    let e = refused(&p);
    assert!(
        e.contains("node `dense3` (Gemm): B `dense1.weight` is used by an earlier layer too (tied weights are not supported)"),
        "{e}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// A damaged file is an error or a model, never a panic.
    #[test]
    fn damaged_files_never_panic(
        flips in proptest::collection::vec((0usize..1 << 20, proptest::prelude::any::<u8>()), 1..8)
    ) {
        let mut bytes = cnn_proto().encode_to_vec();
        for (at, v) in flips {
            let i = at % bytes.len();
            bytes[i] = v;
        }
        if let Ok(p) = ModelProto::decode(&bytes[..]) {
            if let Ok(imp) = read::import_proto(p, Path::new("x.onnx"), DIGITS.input) {
                let w: Vec<Option<Array2<f64>>> = imp
                    .weights
                    .iter()
                    .map(|w| w.as_ref().map(|w| w.mapv(f64::from)))
                    .collect();
                sysgrad_workloads::onnx::write::with_weights(&imp, &w);
            }
        }
    }
}

/// The graph input's tensor type (its element type and shape).
fn input_tensor(p: &mut proto::ModelProto) -> &mut proto::type_proto::Tensor {
    let input = &mut p.graph.as_mut().unwrap().input[0];
    match input.r#type.as_mut().unwrap().value.as_mut() {
        Some(proto::type_proto::Value::TensorType(t)) => t,
        _ => unreachable!("the test models' input is a tensor"),
    }
}

/// The graph's input is checked against the `[data]` section's samples
/// (28 x 28 for Fashion-MNIST), not the digits' 8 x 8.
#[test]
#[ignore = "needs dataset-fashion-mnist"]
fn the_input_is_checked_against_the_data_sections_samples() {
    let fashion = load_model(&models_dir().join("fashion/cnn.toml")).unwrap();
    let text = std::fs::read_to_string(models_dir().join("fashion/cnn.toml")).unwrap();
    let from = |proto: &ModelProto, file: &str| {
        let path = tmp(file);
        std::fs::write(&path, proto.encode_to_vec()).unwrap();
        let toml = strip_layers(&text).replace(
            "name = \"fashion-cnn\"",
            &format!("name = \"fashion-cnn\"\nonnx = {path:?}"),
        );
        parse_model(&toml, false, &models_dir().join("fashion/x.toml")).map_err(|e| e.to_string())
    };
    let m = from(
        &to_onnx(&fashion, &initial_weights(&fashion)).unwrap(),
        "f.onnx",
    )
    .unwrap();
    assert_eq!(m.spec.layers, fashion.spec.layers);
    assert_eq!(m.shapes, fashion.shapes);
    let e = from(&cnn_proto(), "digits.onnx").unwrap_err();
    assert!(
        e.contains("input `input` has shape [N, 1, 8, 8]; the data set's samples are 1x28x28"),
        "{e}"
    );
}
