//! The importer's mapping: one row per ONNX op type, saying which sysgrad
//! layer it becomes or why it is refused. A new op is a new row (and, when
//! it maps, a function in `super::read`); the docs' table is this one.

/// What an op type does on import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// Becomes this layer (`LayerSpec::kind()` name).
    Layer(&'static str),
    /// Refused with this reason.
    Refused(&'static str),
}

pub struct OpRow {
    pub op: &'static str,
    pub mapping: Mapping,
    /// What is accepted, for the docs and the refusal messages.
    pub accepts: &'static str,
}

pub const TABLE: &[OpRow] = &[
    OpRow {
        op: "Gemm",
        mapping: Mapping::Layer("dense"),
        accepts: "B an initializer, transB 0 or 1, transA 0, alpha = beta = 1, C an initializer of M values or absent",
    },
    OpRow {
        op: "MatMul",
        mapping: Mapping::Layer("dense"),
        accepts: "B an initializer [K, M], followed by an Add of an initializer of M values (the bias)",
    },
    OpRow {
        op: "Conv",
        mapping: Mapping::Layer("conv2d"),
        accepts: "2-D, square kernel, W an initializer, B an initializer or absent, equal strides, equal pads (0..=8, less than the kernel), dilations 1, group 1, auto_pad NOTSET",
    },
    OpRow {
        op: "Relu",
        mapping: Mapping::Layer("relu"),
        accepts: "any",
    },
    OpRow {
        op: "MaxPool",
        mapping: Mapping::Layer("max_pool"),
        accepts: "2-D, square kernel, equal strides no larger than the kernel, no padding, dilations 1, ceil_mode 0, one output",
    },
    OpRow {
        op: "Flatten",
        mapping: Mapping::Layer("flatten"),
        accepts: "axis 1",
    },
    OpRow {
        op: "Reshape",
        mapping: Mapping::Layer("flatten"),
        accepts: "to [N, -1] only: a constant shape [0, -1], [N, -1] or [-1, features]",
    },
    OpRow {
        op: "Add",
        mapping: Mapping::Layer("add"),
        accepts: "two computed values of one shape (a residual sum: the model takes the graph form); an Add of an initializer of M values right after a MatMul is that MatMul's bias",
    },
    OpRow {
        op: "AveragePool",
        mapping: Mapping::Layer("avg_pool"),
        accepts: "2-D, square kernel, equal strides no larger than the kernel, no padding, dilations 1, ceil_mode 0",
    },
    OpRow {
        op: "GlobalAveragePool",
        mapping: Mapping::Layer("global_avg_pool"),
        accepts: "any",
    },
    OpRow {
        op: "BatchNormalization",
        mapping: Mapping::Refused(
            "is not supported: fold it into the convolution before it when exporting (eval mode)",
        ),
        accepts: "none",
    },
];

/// The row of `op`, if there is one.
pub fn row(op: &str) -> Option<&'static OpRow> {
    TABLE.iter().find(|r| r.op == op)
}

/// The op types that map to a layer, for messages.
pub fn supported() -> String {
    TABLE
        .iter()
        .filter(|r| !matches!(r.mapping, Mapping::Refused(_)))
        .map(|r| match r.op {
            "MatMul" => "MatMul + Add",
            "Reshape" => "Reshape (to [N, -1])",
            op => op,
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The docs' table (Markdown), generated from [`TABLE`].
pub fn markdown() -> String {
    let mut s = String::from("| ONNX op | sysgrad layer | accepted |\n|---|---|---|\n");
    for r in TABLE {
        let becomes = match r.mapping {
            Mapping::Layer(l) => format!("`{l}`"),
            Mapping::Refused(why) => format!("refused: {why}"),
        };
        s += &format!("| {} | {becomes} | {} |\n", r.op, r.accepts);
    }
    s
}
