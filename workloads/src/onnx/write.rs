//! ONNX out: a model's weights written as an ONNX graph. A model that came
//! from ONNX is written back as the same graph (every node, name and
//! attribute as read) with new initializers; a model from a TOML file gets
//! a graph built from its layers (a residual add as an `Add` of the two
//! values it reads).

use super::proto::{
    self, tensor_proto::DataType, tensor_shape_proto::dimension, type_proto, AttributeProto,
    GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, ValueInfoProto,
};
use super::read::{Bias, Imported};
use crate::error::{Result, WorkloadError};
use crate::model::{LayerSpec, Model, Shape};
use ndarray::Array2;
use prost::Message;
use std::path::Path;

/// The IR version and opset of graphs built from the list form (those
/// onnxruntime 1.x and PyTorch's exporter read).
pub const IR_VERSION: i64 = 8;
pub const OPSET: i64 = 13;

/// The weights `W | bias` (real values) of every layer, as the model's
/// layers are ordered (`None` for layers without weights).
pub type Weights = [Option<Array2<f64>>];

/// The ONNX graph of `model` with `weights`.
pub fn to_onnx(model: &Model, weights: &Weights) -> Result<ModelProto> {
    match &model.onnx {
        Some(imp) => Ok(with_weights(imp, weights)),
        None => from_layers(model, weights),
    }
}

/// Writes [`to_onnx`] to `path` (atomically).
pub fn write(path: &Path, model: &Model, weights: &Weights) -> Result<()> {
    let bytes = to_onnx(model, weights)?.encode_to_vec();
    sysgrad_config::files::write_atomically(path, bytes).map_err(|e| WorkloadError::io(path, e))
}

fn f32_tensor(name: &str, dims: &[usize], values: impl Iterator<Item = f64>) -> TensorProto {
    TensorProto {
        name: Some(name.to_string()),
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: Some(DataType::Float as i32),
        raw_data: Some(values.flat_map(|v| (v as f32).to_le_bytes()).collect()),
        ..Default::default()
    }
}

/// W without its bias column, in the layout the graph stores it.
fn weight_values(w: &Array2<f64>, transposed: bool) -> Vec<f64> {
    let k = w.ncols() - 1;
    let core = w.slice(ndarray::s![.., ..k]);
    match transposed {
        true => core.t().iter().copied().collect(),
        false => core.iter().copied().collect(),
    }
}

fn bias_values(w: &Array2<f64>) -> Vec<f64> {
    w.column(w.ncols() - 1).to_vec()
}

/// The imported graph with its weight initializers replaced.
pub fn with_weights(imp: &Imported, weights: &Weights) -> ModelProto {
    let mut proto = imp.proto.clone();
    let graph = proto.graph.as_mut().expect("an imported model has a graph");
    for (params, w) in imp.params.iter().zip(weights) {
        let (Some(p), Some(w)) = (params, w) else {
            continue;
        };
        replace(graph, &p.weight, weight_values(w, p.transposed));
        match &p.bias {
            Bias::Initializer(name) => replace(graph, name, bias_values(w)),
            Bias::Missing { node } => {
                let node = &mut graph.node[*node];
                let name = format!("{}.sysgrad_bias", node.name.as_deref().unwrap_or("layer"));
                node.input.truncate(2);
                node.input.push(name.clone());
                graph
                    .initializer
                    .push(f32_tensor(&name, &[w.nrows()], bias_values(w).into_iter()));
            }
        }
    }
    proto
}

/// Replaces the values of initializer `name`, keeping its dims.
fn replace(graph: &mut GraphProto, name: &str, values: Vec<f64>) {
    let t = graph
        .initializer
        .iter_mut()
        .find(|t| t.name.as_deref() == Some(name))
        .expect("the importer found this initializer");
    let dims: Vec<usize> = t.dims.iter().map(|&d| d as usize).collect();
    *t = TensorProto {
        doc_string: t.doc_string.take(),
        ..f32_tensor(name, &dims, values.into_iter())
    };
}

fn value_info(name: &str, dims: &[usize]) -> ValueInfoProto {
    let mut shape = vec![proto::tensor_shape_proto::Dimension {
        value: Some(dimension::Value::DimParam("N".into())),
        ..Default::default()
    }];
    shape.extend(dims.iter().map(|&d| proto::tensor_shape_proto::Dimension {
        value: Some(dimension::Value::DimValue(d as i64)),
        ..Default::default()
    }));
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(DataType::Float as i32),
                shape: Some(proto::TensorShapeProto { dim: shape }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ints(name: &str, v: &[usize]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(proto::attribute_proto::AttributeType::Ints as i32),
        ints: v.iter().map(|&x| x as i64).collect(),
        ..Default::default()
    }
}

fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(proto::attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

fn node(op: &str, name: String, inputs: Vec<String>, output: &str) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name),
        input: inputs,
        output: vec![output.into()],
        ..Default::default()
    }
}

/// A graph built from the layers: Gemm (transB = 1) for dense layers, Conv,
/// Relu, MaxPool, AveragePool, GlobalAveragePool, Flatten and Add (of the
/// two values a residual add reads), input `[N, C, H, W]`, output
/// `[N, classes]`.
pub fn from_layers(model: &Model, weights: &Weights) -> Result<ModelProto> {
    let input: Shape = model.shapes[0];
    let out = model.shapes[model.shapes.len() - 1];
    let mut g = GraphProto {
        name: Some(model.spec.name.clone()),
        input: vec![value_info("input", &[input.c, input.h, input.w])],
        output: vec![value_info("output", &[out.size()])],
        ..Default::default()
    };
    let last = model.spec.layers.len() - 1;
    // The ONNX name of every value: the input, then each layer's output.
    let mut values = vec!["input".to_string()];
    for (i, (layer, w)) in model.spec.layers.iter().zip(weights).enumerate() {
        let name = format!("{}{i}", layer.kind());
        let y = match i == last {
            true => "output".to_string(),
            false => format!("{name}_out"),
        };
        let reads: Vec<String> = model.graph.inputs[i]
            .iter()
            .map(|&v| values[v].clone())
            .collect();
        let x = reads[0].clone();
        let weighted = |g: &mut GraphProto, dims: &[usize]| -> Vec<String> {
            let w = w.as_ref().expect("weights for a dense or conv2d layer");
            let (wn, bn) = (format!("{name}.weight"), format!("{name}.bias"));
            g.initializer
                .push(f32_tensor(&wn, dims, weight_values(w, false).into_iter()));
            g.initializer
                .push(f32_tensor(&bn, &[w.nrows()], bias_values(w).into_iter()));
            vec![x.clone(), wn, bn]
        };
        let s = model.input_shape(i);
        let mut n =
            match *layer {
                LayerSpec::Dense { units } => {
                    let inputs = weighted(&mut g, &[units, s.size()]);
                    let mut n = node("Gemm", name.clone(), inputs, &y);
                    n.attribute.push(int("transB", 1));
                    n
                }
                LayerSpec::Conv2d {
                    filters,
                    kernel,
                    stride,
                    padding,
                } => {
                    let inputs = weighted(&mut g, &[filters, s.c, kernel, kernel]);
                    let mut n = node("Conv", name.clone(), inputs, &y);
                    n.attribute = vec![
                        ints("kernel_shape", &[kernel, kernel]),
                        ints("strides", &[stride, stride]),
                        ints("pads", &[padding; 4]),
                    ];
                    n
                }
                LayerSpec::Relu => node("Relu", name.clone(), vec![x.clone()], &y),
                LayerSpec::MaxPool { size, stride } | LayerSpec::AvgPool { size, stride } => {
                    let op = match layer {
                        LayerSpec::MaxPool { .. } => "MaxPool",
                        _ => "AveragePool",
                    };
                    let mut n = node(op, name.clone(), vec![x.clone()], &y);
                    let stride = stride.unwrap_or(size);
                    n.attribute = vec![
                        ints("kernel_shape", &[size, size]),
                        ints("strides", &[stride, stride]),
                    ];
                    n
                }
                LayerSpec::Flatten => {
                    let mut n = node("Flatten", name.clone(), vec![x.clone()], &y);
                    n.attribute.push(int("axis", 1));
                    n
                }
                LayerSpec::GlobalAvgPool => {
                    node("GlobalAveragePool", name.clone(), vec![x.clone()], &y)
                }
                LayerSpec::Add => node("Add", name.clone(), reads, &y),
                LayerSpec::Lif { .. } => return Err(WorkloadError::model(
                    format!("layers[{i}] (lif)"),
                    "a spiking layer has no ONNX operator; only non-spiking models can be exported",
                )),
            };
        n.name = Some(name);
        g.node.push(n);
        values.push(y);
    }
    Ok(ModelProto {
        ir_version: Some(IR_VERSION),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(OPSET),
        }],
        producer_name: Some("sysgrad".into()),
        producer_version: Some(env!("CARGO_PKG_VERSION").into()),
        graph: Some(g),
        ..Default::default()
    })
}
