//! ONNX in: a graph of nodes as `torch.onnx.export` writes it becomes a
//! model (the list form when the nodes are a chain, the graph form when a
//! value feeds several nodes, as a residual block's input does), its
//! initializers the initial weights. Every refusal names the file, the
//! node, its op type and what is supported.

use super::proto::{self, tensor_proto::DataType, type_proto, ModelProto, NodeProto, TensorProto};
use super::table::{self, Mapping};
use crate::error::{Result, WorkloadError};
use crate::model::graph::INPUT;
use crate::model::{LayerSpec, Shape, Wire};
use ndarray::Array2;
use prost::Message;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The opsets whose definitions of the supported ops the importer follows
/// (13 is the first with today's Gemm, Flatten and Reshape; the ops and
/// attributes accepted have kept their meaning through onnx 1.23's 28).
pub const OPSETS: std::ops::RangeInclusive<i64> = 13..=28;

/// Where a weighted layer's values live in the graph, so that export can
/// put new values in their place.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// The initializer of W.
    pub weight: String,
    /// W is stored `[K, M]` (MatMul, Gemm with transB = 0) rather than
    /// `[M, K]` / `[Co, Ci, k, k]`.
    pub transposed: bool,
    /// The initializer of the bias, or the node to give one (a Gemm or
    /// Conv without one: sysgrad's layers always learn a bias).
    pub bias: Bias,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Bias {
    Initializer(String),
    Missing { node: usize },
}

/// An imported ONNX model.
#[derive(Debug, Clone)]
pub struct Imported {
    pub path: PathBuf,
    /// The file as read: export writes it back with new initializers.
    pub proto: ModelProto,
    pub layers: Vec<LayerSpec>,
    /// The graph form's wiring (one per layer, named after the ONNX value
    /// each layer computes), or `None` when the nodes are a chain.
    pub graph: Option<Vec<Wire>>,
    /// Per layer, the weights `W | bias` as stored (f32), for layers that
    /// have them.
    pub weights: Vec<Option<Array2<f32>>>,
    pub params: Vec<Option<Params>>,
    /// Per layer, the node it came from (`name (op)`).
    pub nodes: Vec<String>,
}

impl Imported {
    /// The node a layer came from, for messages.
    pub fn node_of(&self, layer: usize) -> Option<&str> {
        self.nodes.get(layer).map(String::as_str)
    }
}

/// Reads `path`; `input` is the data set's sample shape.
pub fn import(path: &Path, input: Shape) -> Result<Imported> {
    let bytes = std::fs::read(path).map_err(|e| WorkloadError::io(path, e))?;
    let proto = ModelProto::decode(&bytes[..]).map_err(|e| WorkloadError::Parse {
        path: path.to_path_buf(),
        message: format!("not an ONNX model (protobuf: {e})"),
    })?;
    import_proto(proto, path, input)
}

/// [`import`] of a model already decoded.
pub fn import_proto(proto: ModelProto, path: &Path, input: Shape) -> Result<Imported> {
    let fail = |message: String| WorkloadError::Parse {
        path: path.to_path_buf(),
        message,
    };
    check_opset(&proto).map_err(fail)?;
    let (layers, graph, weights, params, nodes) = {
        let graph = proto
            .graph
            .as_ref()
            .ok_or_else(|| fail("has no graph".into()))?;
        let mut r = Reader::new(graph, input).map_err(fail)?;
        r.read_nodes(graph).map_err(fail)?;
        let chain = r.inputs.iter().enumerate().all(|(i, ins)| ins[..] == [i]);
        let wires = (!chain).then(|| r.wires());
        (r.layers, wires, r.weights, r.params, r.nodes)
    };
    Ok(Imported {
        path: path.to_path_buf(),
        proto,
        layers,
        graph,
        weights,
        params,
        nodes,
    })
}

fn check_opset(proto: &ModelProto) -> std::result::Result<(), String> {
    let default = proto
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx")));
    let Some(v) = default.and_then(|o| o.version) else {
        return Err("imports no opset of the default (ai.onnx) domain".into());
    };
    if !OPSETS.contains(&v) {
        return Err(format!(
            "opset {v} is not supported (allowed: {}..={}; export with torch.onnx.export(..., opset_version=13))",
            OPSETS.start(),
            OPSETS.end()
        ));
    }
    Ok(())
}

fn type_name(t: i32) -> String {
    DataType::try_from(t)
        .map(|d| d.as_str_name().to_string())
        .unwrap_or_else(|_| format!("type {t}"))
}

/// The dims of a value's tensor type; only the first (the batch) may be
/// symbolic.
fn value_dims(v: &proto::ValueInfoProto, what: &str) -> std::result::Result<Vec<usize>, String> {
    use proto::tensor_shape_proto::dimension::Value;
    let name = v.name.as_deref().unwrap_or("");
    let Some(type_proto::Value::TensorType(t)) = v.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Err(format!("{what} `{name}` is not a tensor"));
    };
    let elem = t.elem_type.unwrap_or(0);
    if elem != DataType::Float as i32 {
        return Err(format!(
            "{what} `{name}` is {}, not FLOAT (non-float tensors are not supported)",
            type_name(elem)
        ));
    }
    let Some(shape) = &t.shape else {
        return Err(format!("{what} `{name}` has no shape"));
    };
    let mut dims = Vec::new();
    for (i, d) in shape.dim.iter().enumerate() {
        match (&d.value, i) {
            (_, 0) => dims.push(0),
            (Some(Value::DimValue(n)), _) if *n > 0 => dims.push(*n as usize),
            (other, _) => {
                let shown = match other {
                    Some(Value::DimParam(p)) => format!("`{p}`"),
                    Some(Value::DimValue(n)) => n.to_string(),
                    None => "unknown".into(),
                };
                return Err(format!(
                    "{what} `{name}`: dimension {i} is {shown}; only the batch dimension (the first) may be dynamic"
                ));
            }
        }
    }
    Ok(dims)
}

fn node_label(n: &NodeProto) -> String {
    format!(
        "node `{}` ({})",
        n.name.as_deref().unwrap_or(""),
        n.op_type.as_deref().unwrap_or("")
    )
}

/// Where a weighted layer's values come from.
struct Source {
    weight: String,
    transposed: bool,
    bias: Option<(String, Vec<f32>)>,
    /// The node (index in the graph) that would take a missing bias.
    node: usize,
}

struct Reader<'a> {
    inits: HashMap<&'a str, &'a TensorProto>,
    /// Outputs of `Constant` nodes.
    consts: HashMap<String, TensorProto>,
    /// The shape of the value the node being read takes (then gives).
    shape: Shape,
    /// The values computed so far, by ONNX name: the model's value (0 the
    /// input, `i + 1` layer i's output) and its shape.
    values: HashMap<String, (usize, Shape)>,
    /// Per layer, the ONNX name of its output (the graph form's name).
    names: Vec<String>,
    /// Per layer, the values it reads.
    inputs: Vec<Vec<usize>>,
    /// The output of the last node read.
    current: String,
    /// The batch dimension when the file fixes it.
    batch: Option<usize>,
    output: String,
    layers: Vec<LayerSpec>,
    weights: Vec<Option<Array2<f32>>>,
    params: Vec<Option<Params>>,
    nodes: Vec<String>,
}

type Res<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    fn new(g: &'a proto::GraphProto, sample: Shape) -> Res<Self> {
        let inits: HashMap<&str, &TensorProto> = g
            .initializer
            .iter()
            .map(|t| (t.name.as_deref().unwrap_or(""), t))
            .collect();
        if !g.sparse_initializer.is_empty() {
            return Err("has sparse initializers (not supported)".into());
        }
        let inputs: Vec<_> = g
            .input
            .iter()
            .filter(|v| !inits.contains_key(v.name.as_deref().unwrap_or("")))
            .collect();
        let [input] = inputs[..] else {
            return Err(format!(
                "has {} graph inputs besides the initializers; a sysgrad model has one (the samples)",
                inputs.len()
            ));
        };
        let [output] = &g.output[..] else {
            return Err(format!(
                "has {} graph outputs; a sysgrad model has one (the logits)",
                g.output.len()
            ));
        };
        let dims = value_dims(input, "input")?;
        value_dims(output, "output")?;
        let batch = match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) => t
                .shape
                .as_ref()
                .and_then(|s| s.dim.first())
                .and_then(|d| match d.value {
                    Some(proto::tensor_shape_proto::dimension::Value::DimValue(n)) if n > 0 => {
                        Some(n as usize)
                    }
                    _ => None,
                }),
            _ => None,
        };
        let name = input.name.clone().unwrap_or_default();
        let mut r = Reader {
            inits,
            consts: HashMap::new(),
            shape: sample,
            values: HashMap::from([(name.clone(), (0, sample))]),
            names: Vec::new(),
            inputs: Vec::new(),
            current: name.clone(),
            batch,
            output: output.name.clone().unwrap_or_default(),
            layers: Vec::new(),
            weights: Vec::new(),
            params: Vec::new(),
            nodes: Vec::new(),
        };
        let want = [sample.c, sample.h, sample.w];
        match dims[..] {
            [_, c, h, w] if [c, h, w] == want => {}
            [_, k] if k == sample.size() => {
                // The samples arrive as C x H x W; a flat input is their
                // flattening (the same feature order as Flatten).
                r.inputs.push(vec![0]);
                r.flatten(format!("input `{name}` (flat)"));
                r.names.push(format!("{name} (flat)"));
                r.values.insert(name.clone(), (1, r.shape));
            }
            _ => {
                return Err(format!(
                    "input `{name}` has shape [N, {}]; the data set's samples are {sample}: give [N, {}, {}, {}] or [N, {}]",
                    dims[1.min(dims.len())..]
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    sample.c,
                    sample.h,
                    sample.w,
                    sample.size()
                ))
            }
        }
        Ok(r)
    }

    fn push(&mut self, layer: LayerSpec, w: Option<Array2<f32>>, p: Option<Params>, node: String) {
        self.layers.push(layer);
        self.weights.push(w);
        self.params.push(p);
        self.nodes.push(node);
    }

    fn read_nodes(&mut self, g: &'a proto::GraphProto) -> Res<()> {
        let mut i = 0;
        while i < g.node.len() {
            let n = &g.node[i];
            let at = node_label(n);
            let op = n.op_type.as_deref().unwrap_or("");
            let foreign = !matches!(n.domain.as_deref(), None | Some("") | Some("ai.onnx"));
            if op == "Constant" && !foreign {
                self.constant(n).map_err(|e| format!("{at}: {e}"))?;
                i += 1;
                continue;
            }
            let row = table::row(op).filter(|_| !foreign).ok_or_else(|| {
                format!("{at} is not supported (supported: {})", table::supported())
            })?;
            let ins = self.data_inputs(n, op).map_err(|e| format!("{at}: {e}"))?;
            if let [(_, a), (_, b)] = ins[..] {
                if a != b {
                    return Err(format!(
                        "{at} adds values of different shapes ({a} and {b}); sysgrad adds tensors of one shape"
                    ));
                }
            }
            self.shape = ins[0].1;
            self.inputs.push(ins.iter().map(|v| v.0).collect());
            let consumed = match row.mapping {
                Mapping::Refused(why) => return Err(format!("{at} {why}")),
                Mapping::Layer(_) => self
                    .layer(op, i, g)
                    .map_err(|e| format!("{at}: {e} (accepted: {})", row.accepts))?,
            };
            let last = &g.node[i + consumed - 1];
            let outputs: Vec<&String> = last.output.iter().filter(|o| !o.is_empty()).collect();
            if outputs.len() != 1 {
                return Err(format!(
                    "{} has {} outputs; sysgrad uses nodes with one",
                    node_label(last),
                    outputs.len()
                ));
            }
            self.current = outputs[0].clone();
            self.values
                .insert(self.current.clone(), (self.layers.len(), self.shape));
            self.names.push(self.current.clone());
            i += consumed;
        }
        if self.current != self.output {
            return Err(format!(
                "the graph's output `{}` is not the output of its last node (`{}`)",
                self.output, self.current
            ));
        }
        Ok(())
    }

    /// The values node `n` computes on (the first input, or both of an
    /// `Add`): the graph's input or earlier nodes' outputs.
    fn data_inputs(&self, n: &NodeProto, op: &str) -> Res<Vec<(usize, Shape)>> {
        let count = match op {
            "Add" => 2,
            _ => 1,
        };
        let names = n.input.iter().take(count);
        if names.len() < count {
            return Err(format!("has {} inputs, not {count}", n.input.len()));
        }
        names
            .map(|x| {
                self.values.get(x).copied().ok_or_else(|| {
                    match self.inits.contains_key(x.as_str()) || self.consts.contains_key(x) {
                        true if op == "Add" => format!(
                            "adds `{x}`, a constant: sysgrad adds two computed values (a residual sum), \
                             or the bias of the MatMul right before the Add"
                        ),
                        _ => format!(
                            "reads `{x}`, which is not the graph's input or the output of an earlier node \
                             (nodes are listed so that every input comes first)"
                        ),
                    }
                })
            })
            .collect()
    }

    /// The graph form's wiring of the layers read.
    fn wires(&self) -> Vec<Wire> {
        let name = |v: usize| match v {
            0 => INPUT.to_string(),
            v => self.wire_name(v - 1),
        };
        (0..self.layers.len())
            .map(|i| Wire {
                name: self.wire_name(i),
                inputs: self.inputs[i].iter().map(|&v| name(v)).collect(),
            })
            .collect()
    }

    /// Layer `i`'s name: the ONNX value it computes (never `input`, the
    /// graph form's name of the model's input).
    fn wire_name(&self, i: usize) -> String {
        match self.names[i].as_str() {
            INPUT => format!("{INPUT} (node output)"),
            n => n.to_string(),
        }
    }

    /// Maps node `i` (and any node it fuses) to a layer; returns how many
    /// nodes it consumed.
    fn layer(&mut self, op: &str, i: usize, g: &'a proto::GraphProto) -> Res<usize> {
        let n = &g.node[i];
        let label = node_label(n);
        match op {
            "Gemm" => self.gemm(n, i, label).map(|_| 1),
            "MatMul" => self.matmul(n, g.node.get(i + 1), label).map(|_| 2),
            "Conv" => self.conv(n, i, label).map(|_| 1),
            "Relu" => {
                allow_attrs(n, &[])?;
                self.push(LayerSpec::Relu, None, None, label);
                Ok(1)
            }
            "MaxPool" => self.pool(n, label, Pool::Max).map(|_| 1),
            "AveragePool" => self.pool(n, label, Pool::Average).map(|_| 1),
            "GlobalAveragePool" => {
                allow_attrs(n, &[])?;
                self.shape = Shape {
                    c: self.shape.c,
                    h: 1,
                    w: 1,
                };
                self.push(LayerSpec::GlobalAvgPool, None, None, label);
                Ok(1)
            }
            "Flatten" => {
                allow_attrs(n, &["axis"])?;
                let axis = attr_i(n, "axis").unwrap_or(1);
                if axis != 1 {
                    return Err(format!("axis {axis}"));
                }
                self.flatten(label);
                Ok(1)
            }
            "Reshape" => self.reshape(n, label).map(|_| 1),
            "Add" => {
                allow_attrs(n, &[])?;
                self.push(LayerSpec::Add, None, None, label);
                Ok(1)
            }
            other => unreachable!("the table's row {other} has no reader"),
        }
    }

    fn flatten(&mut self, label: String) {
        self.shape = flat(self.shape.size());
        self.push(LayerSpec::Flatten, None, None, label);
    }

    fn needs_flat(&self) -> Res<usize> {
        if !self.shape.is_flat() {
            return Err(format!(
                "its input is {} (C x H x W), not flat: put a Flatten before it",
                self.shape
            ));
        }
        Ok(self.shape.size())
    }

    /// An initializer (or `Constant`) read as f32, with its dims.
    fn floats(&self, name: &str, what: &str) -> Res<(Vec<usize>, Vec<f32>)> {
        // Weights are initializers (export replaces them there), and each
        // belongs to one layer (tied weights would train as two).
        if !self.inits.contains_key(name) {
            return Err(format!(
                "{what} `{name}` is not an initializer (sysgrad takes the weights from the file)"
            ));
        }
        if self
            .params
            .iter()
            .flatten()
            .any(|p| p.weight == name || matches!(&p.bias, Bias::Initializer(b) if b == name))
        {
            return Err(format!(
                "{what} `{name}` is used by an earlier layer too (tied weights are not supported)"
            ));
        }
        let t = self.tensor(name, what)?;
        let ty = t.data_type.unwrap_or(0);
        if ty != DataType::Float as i32 {
            return Err(format!(
                "{what} `{name}` is {}, not FLOAT (non-float tensors are not supported)",
                type_name(ty)
            ));
        }
        let dims: Vec<usize> = t.dims.iter().map(|&d| d.max(0) as usize).collect();
        let count = dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format!("{what} `{name}` has dims {dims:?}, too many values"))?;
        let data: Vec<f32> = match &t.raw_data {
            Some(raw) if !raw.is_empty() => raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            _ => t.float_data.clone(),
        };
        if data.len() != count {
            return Err(format!(
                "{what} `{name}` holds {} values for dims {dims:?} ({count})",
                data.len()
            ));
        }
        Ok((dims, data))
    }

    fn tensor(&self, name: &str, what: &str) -> Res<&TensorProto> {
        let t = self
            .inits
            .get(name)
            .copied()
            .or_else(|| self.consts.get(name))
            .ok_or_else(|| {
                format!(
                    "{what} `{name}` is not an initializer (sysgrad takes the weights from the file)"
                )
            })?;
        if t.data_location == Some(proto::tensor_proto::DataLocation::External as i32) {
            return Err(format!(
                "{what} `{name}` is stored in an external file; save the model with its weights inside"
            ));
        }
        Ok(t)
    }

    fn constant(&mut self, n: &NodeProto) -> Res<()> {
        let value = n
            .attribute
            .iter()
            .find(|a| a.name.as_deref() == Some("value"))
            .and_then(|a| a.t.clone())
            .ok_or("only a tensor `value` is supported")?;
        let out = n.output.first().cloned().unwrap_or_default();
        self.consts.insert(out, value);
        Ok(())
    }

    /// The bias input `name` (if given) of M values.
    fn bias(&self, name: Option<&String>, m: usize) -> Res<Option<(String, Vec<f32>)>> {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Ok(None);
        };
        let (dims, data) = self.floats(name, "bias")?;
        if dims.iter().product::<usize>() != m || dims.iter().filter(|&&d| d != 1).count() > 1 {
            return Err(format!("bias `{name}` has dims {dims:?}, not [{m}]"));
        }
        Ok(Some((name.clone(), data)))
    }

    /// Pushes a dense or convolution layer whose `m x k` weights are
    /// `w_at(row, column)`.
    fn push_weighted(
        &mut self,
        layer: LayerSpec,
        (m, k): (usize, usize),
        w_at: impl Fn(usize, usize) -> f32,
        src: Source,
        label: String,
    ) {
        let w = Array2::from_shape_fn((m, k + 1), |(o, j)| match (j < k, &src.bias) {
            (true, _) => w_at(o, j),
            (false, Some((_, b))) => b[o],
            (false, None) => 0.0,
        });
        let params = Params {
            weight: src.weight,
            transposed: src.transposed,
            bias: match src.bias {
                Some((name, _)) => Bias::Initializer(name),
                None => Bias::Missing { node: src.node },
            },
        };
        self.push(layer, Some(w), Some(params), label);
    }

    fn gemm(&mut self, n: &NodeProto, i: usize, label: String) -> Res<()> {
        allow_attrs(n, &["alpha", "beta", "transA", "transB"])?;
        for a in ["alpha", "beta"] {
            let v = attr_f(n, a).unwrap_or(1.0);
            if v != 1.0 {
                return Err(format!("{a} = {v}"));
            }
        }
        if attr_i(n, "transA").unwrap_or(0) != 0 {
            return Err("transA = 1".into());
        }
        let trans_b = match attr_i(n, "transB").unwrap_or(0) {
            0 => false,
            1 => true,
            t => return Err(format!("transB = {t}")),
        };
        let k = self.needs_flat()?;
        let b_name = n.input.get(1).cloned().unwrap_or_default();
        let (dims, data) = self.floats(&b_name, "B")?;
        let [d0, d1] = dims[..] else {
            return Err(format!("B `{b_name}` has dims {dims:?}, not 2"));
        };
        let (m, kb) = if trans_b { (d0, d1) } else { (d1, d0) };
        fits_input(&b_name, &dims, kb, k)?;
        let bias = self.bias(n.input.get(2), m)?;
        let at = |o: usize, j: usize| match trans_b {
            true => data[o * k + j],
            false => data[j * m + o],
        };
        self.shape = flat(m);
        self.push_weighted(
            LayerSpec::Dense { units: m },
            (m, k),
            at,
            Source {
                weight: b_name.clone(),
                transposed: !trans_b,
                bias,
                node: i,
            },
            label,
        );
        Ok(())
    }

    fn matmul(&mut self, n: &NodeProto, add: Option<&NodeProto>, label: String) -> Res<()> {
        allow_attrs(n, &[])?;
        let k = self.needs_flat()?;
        let b_name = n.input.get(1).cloned().unwrap_or_default();
        let (dims, data) = self.floats(&b_name, "B")?;
        let [kb, m] = dims[..] else {
            return Err(format!("B `{b_name}` has dims {dims:?}, not [K, M]"));
        };
        fits_input(&b_name, &dims, kb, k)?;
        let out = n.output.first().cloned().unwrap_or_default();
        let add = add
            .filter(|a| a.op_type.as_deref() == Some("Add") && a.input.contains(&out))
            .ok_or("is not followed by an Add of its bias (sysgrad's dense layers have one; export with bias=True)")?;
        allow_attrs(add, &[])?;
        let bias_name = add.input.iter().find(|x| **x != out).cloned();
        let bias = self
            .bias(bias_name.as_ref(), m)
            .and_then(|b| b.ok_or_else(|| "adds no initializer".to_string()))
            .map_err(|e| format!("{}: {e}", node_label(add)))?;
        self.shape = flat(m);
        let at = |o: usize, j: usize| data[j * m + o];
        self.push_weighted(
            LayerSpec::Dense { units: m },
            (m, k),
            at,
            Source {
                weight: b_name.clone(),
                transposed: true,
                // The importer requires the Add: a MatMul always has a bias.
                bias: Some(bias),
                node: usize::MAX,
            },
            format!("{label} + {}", node_label(add)),
        );
        Ok(())
    }

    fn conv(&mut self, n: &NodeProto, i: usize, label: String) -> Res<()> {
        allow_attrs(
            n,
            &[
                "kernel_shape",
                "strides",
                "pads",
                "dilations",
                "group",
                "auto_pad",
            ],
        )?;
        not_auto_pad(n)?;
        let w_name = n.input.get(1).cloned().unwrap_or_default();
        let (dims, data) = self.floats(&w_name, "W")?;
        let [co, ci, kh, kw] = dims[..] else {
            return Err(format!(
                "W `{w_name}` has dims {dims:?}, not [Co, Ci, k, k] (2-D)"
            ));
        };
        if kh != kw {
            return Err(format!("a {kh}x{kw} kernel is not square"));
        }
        if let Some(ks) = attr_ints(n, "kernel_shape") {
            if ks != [kh as i64, kw as i64] {
                return Err(format!(
                    "kernel_shape {ks:?} disagrees with W's dims {dims:?}"
                ));
            }
        }
        if ci != self.shape.c {
            return Err(format!(
                "W `{w_name}` has {ci} input channels, but its input is {}",
                self.shape
            ));
        }
        if attr_i(n, "group").unwrap_or(1) != 1 {
            return Err(format!("group = {}", attr_i(n, "group").unwrap_or(1)));
        }
        ones(n, "dilations")?;
        let stride = equal(n, "strides", 2, 1)?;
        let pad = equal(n, "pads", 4, 0)?;
        let (h, w) = (
            out_len(self.shape.h, kh, stride, pad),
            out_len(self.shape.w, kw, stride, pad),
        );
        let (Some(h), Some(w)) = (h, w) else {
            return Err(format!(
                "a {kh}x{kh} kernel with padding {pad} does not fit its {} input",
                self.shape
            ));
        };
        let bias = self.bias(n.input.get(2), co)?;
        let k = ci * kh * kw;
        self.shape = Shape { c: co, h, w };
        self.push_weighted(
            LayerSpec::Conv2d {
                filters: co,
                kernel: kh,
                stride,
                padding: pad,
            },
            (co, k),
            |o, j| data[o * k + j],
            Source {
                weight: w_name.clone(),
                transposed: false,
                bias,
                node: i,
            },
            label,
        );
        Ok(())
    }

    fn pool(&mut self, n: &NodeProto, label: String, pool: Pool) -> Res<()> {
        // Without padding, AveragePool's count_include_pad changes nothing.
        let last = match pool {
            Pool::Max => "storage_order",
            Pool::Average => "count_include_pad",
        };
        allow_attrs(
            n,
            &[
                "kernel_shape",
                "strides",
                "pads",
                "dilations",
                "ceil_mode",
                "auto_pad",
                last,
            ],
        )?;
        not_auto_pad(n)?;
        let ks = attr_ints(n, "kernel_shape").ok_or("no kernel_shape")?;
        let size = match ks[..] {
            [a, b] if a == b && a > 0 => a as usize,
            _ => return Err(format!("kernel_shape {ks:?} is not a square 2-D window")),
        };
        let stride = equal(n, "strides", 2, 1)?;
        if equal(n, "pads", 4, 0)? != 0 {
            return Err("padding".into());
        }
        ones(n, "dilations")?;
        if attr_i(n, "ceil_mode").unwrap_or(0) != 0 {
            return Err("ceil_mode = 1".into());
        }
        if n.output.iter().filter(|o| !o.is_empty()).count() > 1 {
            return Err("the indices output".into());
        }
        let (Some(h), Some(w)) = (
            out_len(self.shape.h, size, stride, 0),
            out_len(self.shape.w, size, stride, 0),
        ) else {
            return Err(format!(
                "a {size}x{size} window does not fit its {} input",
                self.shape
            ));
        };
        self.shape = Shape {
            c: self.shape.c,
            h,
            w,
        };
        // sysgrad's default stride is the window (ONNX's is 1).
        let stride = (stride != size).then_some(stride);
        let layer = match pool {
            Pool::Max => LayerSpec::MaxPool { size, stride },
            Pool::Average => LayerSpec::AvgPool { size, stride },
        };
        self.push(layer, None, None, label);
        Ok(())
    }

    fn reshape(&mut self, n: &NodeProto, label: String) -> Res<()> {
        allow_attrs(n, &["allowzero"])?;
        if attr_i(n, "allowzero").unwrap_or(0) != 0 {
            return Err("allowzero = 1".into());
        }
        let s_name = n.input.get(1).cloned().unwrap_or_default();
        let t = self.tensor(&s_name, "shape")?;
        if t.data_type != Some(DataType::Int64 as i32) {
            return Err(format!(
                "shape `{s_name}` is {}, not INT64",
                type_name(t.data_type.unwrap_or(0))
            ));
        }
        let shape: Vec<i64> = match &t.raw_data {
            Some(raw) if !raw.is_empty() => raw
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect(),
            _ => t.int64_data.clone(),
        };
        let size = self.shape.size() as i64;
        let to_flat = match shape[..] {
            [0, -1] => true,
            [-1, k] => k == size,
            [b, -1] => Some(b as usize) == self.batch && b > 0,
            _ => false,
        };
        if !to_flat {
            return Err(format!("reshapes to {shape:?}"));
        }
        self.flatten(label);
        Ok(())
    }
}

fn flat(n: usize) -> Shape {
    Shape { c: n, h: 1, w: 1 }
}

fn out_len(n: usize, k: usize, s: usize, p: usize) -> Option<usize> {
    (n + 2 * p).checked_sub(k).map(|d| d / s.max(1) + 1)
}

fn attr<'n>(n: &'n NodeProto, name: &str) -> Option<&'n proto::AttributeProto> {
    n.attribute.iter().find(|a| a.name.as_deref() == Some(name))
}

fn attr_i(n: &NodeProto, name: &str) -> Option<i64> {
    attr(n, name).and_then(|a| a.i)
}

fn attr_f(n: &NodeProto, name: &str) -> Option<f32> {
    attr(n, name).and_then(|a| a.f)
}

fn attr_ints(n: &NodeProto, name: &str) -> Option<Vec<i64>> {
    attr(n, name).map(|a| a.ints.clone())
}

fn allow_attrs(n: &NodeProto, allowed: &[&str]) -> Res<()> {
    for a in &n.attribute {
        let name = a.name.as_deref().unwrap_or("");
        if !allowed.contains(&name) {
            return Err(format!("attribute `{name}`"));
        }
    }
    Ok(())
}

fn not_auto_pad(n: &NodeProto) -> Res<()> {
    match attr(n, "auto_pad").and_then(|a| a.s.as_deref()) {
        None | Some(b"NOTSET") => Ok(()),
        Some(other) => Err(format!("auto_pad = {}", String::from_utf8_lossy(other))),
    }
}

fn ones(n: &NodeProto, name: &str) -> Res<()> {
    match attr_ints(n, name) {
        Some(v) if v.iter().any(|&d| d != 1) => Err(format!("{name} {v:?}")),
        _ => Ok(()),
    }
}

/// A list attribute of `len` equal values (or `default` when absent).
fn equal(n: &NodeProto, name: &str, len: usize, default: usize) -> Res<usize> {
    let Some(v) = attr_ints(n, name) else {
        return Ok(default);
    };
    match v.first() {
        Some(&first) if v.len() == len && v.iter().all(|&x| x == first) && first >= 0 => {
            Ok(first as usize)
        }
        _ => Err(format!("{name} {v:?} (sysgrad needs {len} equal values)")),
    }
}

/// The two windowed poolings ONNX and sysgrad share.
#[derive(Debug, Clone, Copy)]
enum Pool {
    Max,
    Average,
}

/// A dense layer's weights `B` (named `b_name`, of `dims`) read `kb`
/// inputs: they must be the `k` the layer before gives.
fn fits_input(b_name: &str, dims: &[usize], kb: usize, k: usize) -> Res<()> {
    if kb != k {
        return Err(format!(
            "B `{b_name}` has dims {dims:?}: {kb} inputs, but the layer before gives {k}"
        ));
    }
    Ok(())
}
