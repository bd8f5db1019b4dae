//! SCALE-Sim topology files, in both of its forms:
//!
//! * convolution: `Layer name, IFMAP Height, IFMAP Width, Filter Height,
//!   Filter Width, Channels, Num Filter, Strides,` (an optional ninth
//!   column splits the stride into height and width);
//! * GEMM: `Layer, M, N, K,` where M is the number of output rows (pixels),
//!   N the number of outputs (filters) and K the reduction.
//!
//! Real files end every line with a comma, so a trailing empty field is
//! dropped. The first line is the header and decides the form. IFMAP sizes
//! include any padding (SCALE-Sim has no padding field).

use crate::error::{Result, WorkloadError};
use serde::Serialize;
use std::path::Path;

/// A layer as the product `Y = W X` the array runs: W is M x K, X is K x N
/// (the sysgrad orientation: M outputs per column, K reduction, N columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Gemm {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConvParams {
    pub ifmap_h: usize,
    pub ifmap_w: usize,
    pub filter_h: usize,
    pub filter_w: usize,
    pub channels: usize,
    pub filters: usize,
    pub stride_h: usize,
    pub stride_w: usize,
}

impl ConvParams {
    /// SCALE-Sim's `ceil((ifmap - filter + stride) / stride)`.
    pub fn ofmap(&self) -> (usize, usize) {
        (
            (self.ifmap_h - self.filter_h + self.stride_h).div_ceil(self.stride_h),
            (self.ifmap_w - self.filter_w + self.stride_w).div_ceil(self.stride_w),
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TopoForm {
    Conv,
    Gemm,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopoLayer {
    pub name: String,
    /// Line in the file (1-based).
    pub line: usize,
    /// `None` for GEMM-form layers.
    pub conv: Option<ConvParams>,
    /// The product for one sample.
    pub gemm: Gemm,
}

impl TopoLayer {
    /// A fully connected layer: a GEMM-form layer, or a convolution whose
    /// filter covers the whole input (a 1x1 output).
    pub fn is_fully_connected(&self) -> bool {
        match self.conv {
            None => true,
            Some(c) => c.ofmap() == (1, 1),
        }
    }

    /// The product for a batch of `batch` samples (N grows).
    pub fn batched(&self, batch: usize) -> Gemm {
        Gemm {
            n: self.gemm.n * batch,
            ..self.gemm
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    pub name: String,
    pub form: TopoForm,
    pub layers: Vec<TopoLayer>,
}

const CONV_FIELDS: [&str; 9] = [
    "Layer name",
    "IFMAP Height",
    "IFMAP Width",
    "Filter Height",
    "Filter Width",
    "Channels",
    "Num Filter",
    "Stride Height",
    "Stride Width",
];
const GEMM_FIELDS: [&str; 4] = ["Layer", "M", "N", "K"];

/// Comma-separated fields, trimmed, without the trailing empty one(s).
fn fields(line: &str) -> Vec<&str> {
    let mut f: Vec<&str> = line.split(',').map(str::trim).collect();
    while f.last().is_some_and(|s| s.is_empty()) {
        f.pop();
    }
    f
}

fn detect_form(header: &[&str]) -> Option<TopoForm> {
    let h: Vec<String> = header.iter().map(|s| s.to_ascii_lowercase()).collect();
    if h.len() >= 8 && h[1].contains("ifmap") && h[1].contains("height") {
        return Some(TopoForm::Conv);
    }
    if h.len() == 4 && h[1] == "m" && h[2] == "n" && h[3] == "k" {
        return Some(TopoForm::Gemm);
    }
    None
}

pub fn load_topology(path: &Path) -> Result<Topology> {
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::io(path, e))?;
    parse_topology(&text, path)
}

/// `line N: message` as a parse error of `path`.
fn line_error(path: &Path, line: usize, message: String) -> WorkloadError {
    WorkloadError::Parse {
        path: path.to_path_buf(),
        message: format!("line {line}: {message}"),
    }
}

/// The column names of a row of `form` with `len` fields.
fn column_names(form: TopoForm) -> &'static [&'static str] {
    match form {
        TopoForm::Conv => &CONV_FIELDS,
        TopoForm::Gemm => &GEMM_FIELDS,
    }
}

/// Checks a row's field count: 8 or 9 for a convolution, 4 for a GEMM.
fn check_len(form: TopoForm, f: &[&str]) -> std::result::Result<(), String> {
    let (ok, expected, shown) = match form {
        TopoForm::Conv => (f.len() == 8 || f.len() == 9, "8 or 9", 8),
        TopoForm::Gemm => (f.len() == 4, "4", 4),
    };
    if ok {
        return Ok(());
    }
    Err(format!(
        "{} fields, expected {expected} ({})",
        f.len(),
        column_names(form)[..shown].join(", ")
    ))
}

/// The numeric fields of a row (all but the name), each a positive integer.
fn numbers(form: TopoForm, f: &[&str]) -> std::result::Result<Vec<usize>, String> {
    let names = column_names(form);
    f.iter()
        .enumerate()
        .skip(1)
        .map(|(col, v)| {
            // A conv row with one stride column means both strides.
            let name = if form == TopoForm::Conv && f.len() == 8 && col == 7 {
                "Strides"
            } else {
                names[col]
            };
            match v.parse::<usize>() {
                Ok(x) if x >= 1 => Ok(x),
                _ => Err(format!(
                    "field `{name}` (column {}) = `{v}` is not a positive integer",
                    col + 1
                )),
            }
        })
        .collect()
}

/// A convolution layer from its numbers; the filter must fit the input.
fn conv_layer(name: String, line: usize, nums: &[usize]) -> std::result::Result<TopoLayer, String> {
    let c = ConvParams {
        ifmap_h: nums[0],
        ifmap_w: nums[1],
        filter_h: nums[2],
        filter_w: nums[3],
        channels: nums[4],
        filters: nums[5],
        stride_h: nums[6],
        stride_w: *nums.get(7).unwrap_or(&nums[6]),
    };
    for (fil, ifm, what) in [
        (c.filter_h, c.ifmap_h, "Height"),
        (c.filter_w, c.ifmap_w, "Width"),
    ] {
        if fil > ifm {
            return Err(format!(
                "Filter {what} {fil} is larger than IFMAP {what} {ifm}"
            ));
        }
    }
    let (oh, ow) = c.ofmap();
    Ok(TopoLayer {
        name,
        line,
        conv: Some(c),
        gemm: Gemm {
            m: c.filters,
            k: c.filter_h * c.filter_w * c.channels,
            n: oh * ow,
        },
    })
}

/// A GEMM-form layer (`M, N, K` = output rows, outputs, reduction).
fn gemm_layer(name: String, line: usize, nums: &[usize]) -> TopoLayer {
    TopoLayer {
        name,
        line,
        conv: None,
        gemm: Gemm {
            m: nums[1],
            k: nums[2],
            n: nums[0],
        },
    }
}

/// One layer row of a topology of `form`.
fn parse_row(form: TopoForm, line: usize, text: &str) -> std::result::Result<TopoLayer, String> {
    let f = fields(text);
    check_len(form, &f)?;
    if f[0].is_empty() {
        return Err(format!(
            "field `{}` (column 1) is empty",
            column_names(form)[0]
        ));
    }
    let nums = numbers(form, &f)?;
    let name = f[0].to_string();
    match form {
        TopoForm::Gemm => Ok(gemm_layer(name, line, &nums)),
        TopoForm::Conv => conv_layer(name, line, &nums),
    }
}

pub fn parse_topology(text: &str, path: &Path) -> Result<Topology> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    let (hline, header) = lines
        .next()
        .ok_or_else(|| line_error(path, 1, "empty file (expected a header line)".into()))?;
    let header = fields(header);
    let form = detect_form(&header).ok_or_else(|| {
        line_error(
            path,
            hline,
            format!(
                "unrecognised header `{}`; expected `{},` or `{},`",
                header.join(", "),
                CONV_FIELDS[..8].join(", "),
                GEMM_FIELDS.join(", ")
            ),
        )
    })?;
    let layers = lines
        .map(|(line, text)| parse_row(form, line, text).map_err(|m| line_error(path, line, m)))
        .collect::<Result<Vec<_>>>()?;
    if layers.is_empty() {
        return Err(line_error(path, hline, "no layers after the header".into()));
    }
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "topology".into());
    Ok(Topology { name, form, layers })
}
