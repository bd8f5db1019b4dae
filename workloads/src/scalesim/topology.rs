//! SCALE-Sim topology files, read as SCALE-Sim 3.0 reads them
//! (`scalesim/topology_utils.py`):
//!
//! * the first line is a header and is skipped, whatever it says;
//! * convolution rows: `name, IFMAP Height, IFMAP Width, Filter Height,
//!   Filter Width, Channels, Num Filter, Strides[, N:M]`, the optional
//!   ninth column an `N:M` sparsity ratio (N non-zero weights in every
//!   block of M; `1:1` when absent). A numeric ninth column is the stride
//!   width of SCALE-Sim v2 files (`Stride Height, Stride Width`);
//! * GEMM rows: `name, M, N, K[, N:M]`, where M is the number of output
//!   rows (pixels), N the number of outputs (filters) and K the reduction;
//! * a convolution whose name contains `DP` is depthwise: SCALE-Sim runs
//!   it as one layer per channel (`<name>Channel_<i>`, one channel each,
//!   the same filters), and so do we.
//!
//! The form is told by the first layer row's field count (4-5: GEMM, 8-9:
//! convolution); every row must be of that form. Real files end every line
//! with a comma, so trailing empty fields are dropped (SCALE-Sim always
//! drops the last field: a line without the trailing comma loses its last
//! value there, not here). Blank lines are skipped. IFMAP sizes include any
//! padding (SCALE-Sim has no padding field).

use crate::error::{Result, WorkloadError};
use serde::Serialize;
use std::path::Path;
use sysgrad_emulator::count::{Count, Overflow};

/// A layer as the product `Y = W X` the array runs: W is M x K, X is K x N
/// (the sysgrad orientation: M outputs per column, K reduction, N columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Gemm {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

impl Gemm {
    pub fn macs(&self) -> u64 {
        (self.m * self.k * self.n) as u64
    }
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
    /// SCALE-Sim's `ceil((ifmap - filter + stride) / stride)`, i.e.
    /// `ceil((ifmap - filter) / stride) + 1`, which cannot overflow
    /// (filters are checked no larger than the map).
    pub fn ofmap(&self) -> (usize, usize) {
        (
            (self.ifmap_h - self.filter_h).div_ceil(self.stride_h) + 1,
            (self.ifmap_w - self.filter_w).div_ceil(self.stride_w) + 1,
        )
    }
}

/// An `N:M` structured sparsity ratio of the weights: `nonzero` non-zero
/// values in every block of `block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Sparsity {
    pub nonzero: usize,
    pub block: usize,
}

impl Sparsity {
    pub const DENSE: Sparsity = Sparsity {
        nonzero: 1,
        block: 1,
    };
    pub fn is_dense(&self) -> bool {
        self.nonzero == self.block
    }
    /// Share of the weights that are not zero.
    pub fn density(&self) -> f64 {
        self.nonzero as f64 / self.block as f64
    }
}

impl std::fmt::Display for Sparsity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.nonzero, self.block)
    }
}

/// Which channel of a depthwise (`DP`) layer a per-channel layer is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Depthwise {
    /// The name in the file.
    pub layer: String,
    pub channel: usize,
    pub channels: usize,
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
    /// `1:1` unless the row gives a ratio.
    pub sparsity: Sparsity,
    /// Set on the per-channel layers of a depthwise (`DP`) row.
    pub depthwise: Option<Depthwise>,
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
    /// The product for `batch` samples (N times the batch), checked.
    pub fn batched(&self, batch: usize) -> std::result::Result<Gemm, Overflow> {
        let n = self.gemm.n.checked_mul(batch).ok_or_else(|| {
            Overflow::new(format!(
                "the stream columns N = {} x batch {batch}",
                self.gemm.n
            ))
        })?;
        Ok(Gemm { n, ..self.gemm })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    pub name: String,
    pub form: TopoForm,
    pub layers: Vec<TopoLayer>,
}

impl Topology {
    /// Whether any layer carries a sparsity ratio other than 1:1.
    pub fn is_sparse(&self) -> bool {
        self.layers.iter().any(|l| !l.sparsity.is_dense())
    }
}

const CONV_FIELDS: [&str; 8] = [
    "Layer name",
    "IFMAP Height",
    "IFMAP Width",
    "Filter Height",
    "Filter Width",
    "Channels",
    "Num Filter",
    "Strides",
];
const GEMM_FIELDS: [&str; 4] = ["Layer", "M", "N", "K"];
/// The optional last column of either form.
const SPARSITY_FIELD: &str = "Sparsity (N:M)";
/// The numeric ninth column of a v2 convolution row.
const STRIDE_WIDTH_FIELD: &str = "Stride Width";

/// The marker SCALE-Sim looks for in a layer name to run it depthwise.
pub const DEPTHWISE_MARKER: &str = "DP";
/// The most channels a depthwise row may have. A `DP` row becomes one layer
/// per channel while the file is read, before any budget can be asked, so
/// its size is bounded here: 2^16 is 16 times the widest depthwise layer of
/// the published networks (MobileNet's 1,024; EfficientNet-B7's 3,840) and
/// about 10 MB of layers, well inside the default memory budget.
pub const MAX_DEPTHWISE_CHANNELS: usize = 1 << 16;

/// Comma-separated fields, trimmed, without the trailing empty one(s).
fn fields(line: &str) -> Vec<&str> {
    let mut f: Vec<&str> = line.split(',').map(str::trim).collect();
    while f.last().is_some_and(|s| s.is_empty()) {
        f.pop();
    }
    f
}

/// The form a layer row of `len` fields belongs to.
fn form_of(len: usize) -> Option<TopoForm> {
    match len {
        4 | 5 => Some(TopoForm::Gemm),
        8 | 9 => Some(TopoForm::Conv),
        _ => None,
    }
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

/// The column names of a row of `form`.
fn column_names(form: TopoForm) -> &'static [&'static str] {
    match form {
        TopoForm::Conv => &CONV_FIELDS,
        TopoForm::Gemm => &GEMM_FIELDS,
    }
}

/// What the rows of `form` look like, for error messages.
fn row_shape(form: TopoForm) -> String {
    let (n, extra) = match form {
        TopoForm::Conv => (8, format!("{SPARSITY_FIELD} or v2 {STRIDE_WIDTH_FIELD}")),
        TopoForm::Gemm => (4, SPARSITY_FIELD.to_string()),
    };
    format!(
        "{n} fields ({}) and an optional {extra}",
        column_names(form).join(", ")
    )
}

/// Checks a row's field count against the file's form.
fn check_len(form: TopoForm, f: &[&str]) -> std::result::Result<(), String> {
    if form_of(f.len()) == Some(form) {
        return Ok(());
    }
    let what = match form {
        TopoForm::Conv => "convolution",
        TopoForm::Gemm => "GEMM",
    };
    Err(format!(
        "{} fields; the file's first layer row makes it a {what} topology, whose rows have {}",
        f.len(),
        row_shape(form)
    ))
}

/// A positive integer field.
fn positive(name: &str, col: usize, v: &str) -> std::result::Result<usize, String> {
    match v.parse::<usize>() {
        Ok(x) if x >= 1 => Ok(x),
        _ => Err(format!(
            "field `{name}` (column {}) = `{v}` is not a positive integer",
            col + 1
        )),
    }
}

/// An `N:M` ratio with `1 <= N <= M`.
fn sparsity(col: usize, v: &str) -> std::result::Result<Sparsity, String> {
    let bad = || {
        format!(
            "field `{SPARSITY_FIELD}` (column {}) = `{v}` is not a ratio N:M of positive integers with N <= M",
            col + 1
        )
    };
    let (n, m) = v.split_once(':').ok_or_else(bad)?;
    let (nonzero, block) = (
        n.trim().parse::<usize>().map_err(|_| bad())?,
        m.trim().parse::<usize>().map_err(|_| bad())?,
    );
    if nonzero == 0 || nonzero > block {
        return Err(bad());
    }
    Ok(Sparsity { nonzero, block })
}

/// The numbers of a row and its sparsity: the fixed columns are positive
/// integers; the optional last one is `N:M`, or (conv) a v2 stride width.
fn numbers(form: TopoForm, f: &[&str]) -> std::result::Result<(Vec<usize>, Sparsity), String> {
    let names = column_names(form);
    let mut nums = f
        .iter()
        .enumerate()
        .take(names.len())
        .skip(1)
        .map(|(col, v)| positive(names[col], col, v))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let Some(last) = f.get(names.len()) else {
        return Ok((nums, Sparsity::DENSE));
    };
    let col = names.len();
    if last.contains(':') || form == TopoForm::Gemm {
        return Ok((nums, sparsity(col, last)?));
    }
    nums.push(positive(STRIDE_WIDTH_FIELD, col, last)?);
    Ok((nums, Sparsity::DENSE))
}

/// A convolution from its numbers; the filter must fit the input.
fn conv_params(nums: &[usize]) -> std::result::Result<ConvParams, String> {
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
    Ok(c)
}

/// The product of a convolution: `M = filters`, `K = Fh Fw C`, `N = Ho Wo`,
/// refused when K or N does not fit in 64 bits.
fn conv_gemm(c: &ConvParams) -> std::result::Result<Gemm, String> {
    let (oh, ow) = c.ofmap();
    let fits = |v: Count, what: String| {
        v.value()
            .map(|v| v as usize)
            .ok_or_else(|| format!("{what} exceeds 2^64 - 1"))
    };
    Ok(Gemm {
        m: c.filters,
        k: fits(
            Count::from(c.filter_h) * c.filter_w * c.channels,
            format!(
                "K = Filter Height x Filter Width x Channels = {} x {} x {}",
                c.filter_h, c.filter_w, c.channels
            ),
        )?,
        n: fits(
            Count::from(oh) * ow,
            format!("N = OFMAP Height x OFMAP Width = {oh} x {ow}"),
        )?,
    })
}

/// The layers of a convolution row: one, or one per channel when the name
/// marks it depthwise (SCALE-Sim's `'DP' in name`).
fn conv_layers(
    name: String,
    line: usize,
    c: ConvParams,
    sparsity: Sparsity,
) -> std::result::Result<Vec<TopoLayer>, String> {
    if !name.contains(DEPTHWISE_MARKER) {
        return Ok(vec![TopoLayer {
            gemm: conv_gemm(&c)?,
            name,
            line,
            conv: Some(c),
            sparsity,
            depthwise: None,
        }]);
    }
    if c.channels > MAX_DEPTHWISE_CHANNELS {
        return Err(format!(
            "Channels = {} in a depthwise ({DEPTHWISE_MARKER}) row: at most {MAX_DEPTHWISE_CHANNELS} \
             (a depthwise row is one layer per channel)",
            c.channels
        ));
    }
    let one = ConvParams { channels: 1, ..c };
    let gemm = conv_gemm(&one)?;
    Ok((0..c.channels)
        .map(|channel| TopoLayer {
            name: format!("{name}Channel_{channel}"),
            line,
            conv: Some(one),
            gemm,
            sparsity,
            depthwise: Some(Depthwise {
                layer: name.clone(),
                channel,
                channels: c.channels,
            }),
        })
        .collect())
}

/// A GEMM-form layer (`M, N, K` = output rows, outputs, reduction).
fn gemm_layer(name: String, line: usize, nums: &[usize], sparsity: Sparsity) -> TopoLayer {
    TopoLayer {
        name,
        line,
        conv: None,
        gemm: Gemm {
            m: nums[1],
            k: nums[2],
            n: nums[0],
        },
        sparsity,
        depthwise: None,
    }
}

/// The layers of one row of a topology of `form`.
fn parse_row(
    form: TopoForm,
    line: usize,
    f: &[&str],
) -> std::result::Result<Vec<TopoLayer>, String> {
    check_len(form, f)?;
    if f[0].is_empty() {
        return Err(format!(
            "field `{}` (column 1) is empty",
            column_names(form)[0]
        ));
    }
    let (nums, sparsity) = numbers(form, f)?;
    let name = f[0].to_string();
    match form {
        TopoForm::Gemm => Ok(vec![gemm_layer(name, line, &nums, sparsity)]),
        TopoForm::Conv => conv_layers(name, line, conv_params(&nums)?, sparsity),
    }
}

pub fn parse_topology(text: &str, path: &Path) -> Result<Topology> {
    if text.trim().is_empty() {
        return Err(line_error(
            path,
            1,
            "empty file (expected a header line and layer rows)".into(),
        ));
    }
    // SCALE-Sim skips the first line unread, whatever it holds.
    let rows: Vec<(usize, Vec<&str>)> = text
        .lines()
        .enumerate()
        .skip(1)
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, fields(l)))
        .collect();
    let Some((first_line, first)) = rows.first() else {
        return Err(line_error(
            path,
            1,
            "no layers after the header (the first line is always read as the header)".into(),
        ));
    };
    let form = form_of(first.len()).ok_or_else(|| {
        line_error(
            path,
            *first_line,
            format!(
                "{} fields: a layer row has {} (convolution) or {} (GEMM)",
                first.len(),
                row_shape(TopoForm::Conv),
                row_shape(TopoForm::Gemm)
            ),
        )
    })?;
    let mut layers = Vec::new();
    for (line, f) in &rows {
        layers.extend(parse_row(form, *line, f).map_err(|m| line_error(path, *line, m))?);
    }
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "topology".into());
    Ok(Topology { name, form, layers })
}
