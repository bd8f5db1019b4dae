//! The array configuration and the number formats.
//!
//! Both the Verilog generator (`sysgrad-hdl`) and the cycle-accurate model
//! (`sysgrad-emulator`) read their parameters from [`ArrayConfig`] and their
//! arithmetic from [`fixed`] or [`float`], so the two cannot drift apart. The contract is
//! written out in `docs/ARCHITECTURE.md`.

pub mod budget;
#[cfg(feature = "clap")]
mod cli;
pub mod files;
pub mod fixed;
pub mod float;
mod format;
mod load;
pub mod outdir;

pub use load::{
    cut_long_lines, in_file, line_of_field, load_config, location, parse_config, ConfigError,
};

use format::RawFormat;
pub use format::{FixedFormat, NumberFormat, Numbers, ACC_BITS, DEFAULT_SEED, IN_BITS};
use serde::{Deserialize, Serialize};

/// How the backward pass computes dX and dW.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backward {
    /// One pass over dY computes dX and dW together (two multipliers per PE).
    Interleaved,
    /// Baseline: a dX pass, then a dW pass that streams dY again (one multiplier).
    Sequential,
}

impl Backward {
    pub const ALL: [Backward; 2] = [Backward::Interleaved, Backward::Sequential];

    pub fn name(self) -> &'static str {
        match self {
            Backward::Interleaved => "interleaved",
            Backward::Sequential => "sequential",
        }
    }
    /// Multipliers in each PE: two lets an interleaved pass compute dX and
    /// dW in the same cycle; the sequential baseline shares one.
    pub fn multipliers_per_pe(self) -> usize {
        match self {
            Backward::Interleaved => 2,
            Backward::Sequential => 1,
        }
    }
}

/// How the array overlaps its work (`docs/ARCHITECTURE.md`, Dense pipelining).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Pipelining {
    /// Double-buffered weights, control travelling with the data, tiles
    /// back to back: only the first fill and the last drain are paid.
    Dense,
    /// One mode for the whole array each cycle; every tile is loaded, filled
    /// and drained on its own (the SCALE-Sim-comparable schedule).
    #[default]
    None,
}

impl Pipelining {
    pub const ALL: [Pipelining; 2] = [Pipelining::None, Pipelining::Dense];

    pub fn name(self) -> &'static str {
        match self {
            Pipelining::Dense => "dense",
            Pipelining::None => "none",
        }
    }
    pub fn is_default(&self) -> bool {
        *self == Pipelining::default()
    }
}

/// Geometry of the PE mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayShape {
    pub rows: usize,
    pub cols: usize,
    pub backward: Backward,
    /// Optional; written out only when it differs from the default.
    #[serde(default, skip_serializing_if = "Pipelining::is_default")]
    pub pipelining: Pipelining,
    /// Optional: a learning-rate shift built into every PE (0..=63). The
    /// SGD unit then shifts by a constant, which removes its barrel
    /// shifter; the array ignores its `lr_shift` port and the driver and
    /// the accelerator refuse any other shift. Absent: the shift comes
    /// from the `lr_shift` port at run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr_shift: Option<u32>,
    /// Optional, default false: a register after each PE multiplier
    /// (`docs/ARCHITECTURE.md`, Multiplier register), which shortens the
    /// PE's critical path by the multiply and makes every pass and result
    /// latency one cycle longer. `pipelining = "none"` only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multiplier_register: bool,
    /// Optional, default false: each PE accumulator register (`psv`,
    /// `psh`, `dw`) holds its exact AW+1-bit sum and the weight `w` its
    /// exact DW+2-bit updated value, each saturated where it is read
    /// (`docs/ARCHITECTURE.md`, Deferred saturation), which takes the
    /// clamp out of the add's and the update's cycle. Results and
    /// timing are the same. `pipelining = "none"` only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferred_saturation: bool,
}

/// Depths of the accelerator's on-chip buffers, in buffer words. A buffer
/// word is one *line*: one data value per lane (per bank), all lanes at the
/// same address (see `docs/COMMANDS.md`). The section is optional and every
/// field has a default, so configs written before it existed stay valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BufferDepths {
    /// Weight buffer: `cols` lanes of `in_bits`.
    pub weights: usize,
    /// Activation buffer (X): `rows` lanes of `in_bits`.
    pub activations: usize,
    /// Gradient buffer (dY): `cols` lanes of `in_bits`.
    pub gradients: usize,
    /// Accumulator buffer (Y, dX, dW): `max(rows, cols)` lanes of `acc_bits`.
    pub accumulators: usize,
    /// Command memory of the RTL controller: 64-bit command words.
    pub commands: usize,
}

/// Default depth of every buffer.
pub const DEFAULT_BUFFER_DEPTH: usize = 4096;
/// Commands carry 16-bit line addresses, so no buffer can be deeper.
pub const MAX_BUFFER_DEPTH: usize = 1 << 16;

impl Default for BufferDepths {
    fn default() -> Self {
        BufferDepths {
            weights: DEFAULT_BUFFER_DEPTH,
            activations: DEFAULT_BUFFER_DEPTH,
            gradients: DEFAULT_BUFFER_DEPTH,
            accumulators: DEFAULT_BUFFER_DEPTH,
            commands: DEFAULT_BUFFER_DEPTH,
        }
    }
}

impl BufferDepths {
    /// Whether every depth is the default (then the section is not written
    /// out, which keeps serialised configs of older files byte-identical).
    pub fn is_default(&self) -> bool {
        *self == BufferDepths::default()
    }

    /// `(field name, depth)` of each buffer, in a fixed order.
    pub fn fields(&self) -> [(&'static str, usize); 5] {
        [
            ("buffers.weights", self.weights),
            ("buffers.activations", self.activations),
            ("buffers.gradients", self.gradients),
            ("buffers.accumulators", self.accumulators),
            ("buffers.commands", self.commands),
        ]
    }
}

/// The host interface of the accelerator (`sa_accel`). Optional, like
/// `[buffers]`: configs written before it existed stay valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostInterface {
    /// Width of each hardware counter: it counts modulo `2^counter_bits`,
    /// and 0 builds none (every counter reads 0). The 42 counters of the
    /// default width take more logic than a small FPGA has to spare.
    pub counter_bits: u32,
}

/// Widths a hardware counter may have; the largest is read as two 32-bit
/// registers (bits 31:0 and 47:32).
pub const COUNTER_BITS: std::ops::RangeInclusive<u32> = 0..=48;

impl Default for HostInterface {
    fn default() -> Self {
        HostInterface {
            counter_bits: *COUNTER_BITS.end(),
        }
    }
}

impl HostInterface {
    /// Whether every field is the default (then the section is not written out).
    pub fn is_default(&self) -> bool {
        *self == HostInterface::default()
    }
}

/// The optional units of the accelerator (`sa_accel`) around the array.
/// Optional, like `[buffers]`: configs written before it existed stay
/// valid and build every unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Units {
    /// The convolution address generator (WINDOW and windowed passes,
    /// `docs/COMMANDS.md`). Without it WINDOW faults `NO_GENERATOR`, so
    /// no window is ever set; it costs multipliers and about a thousand
    /// logic cells that a small FPGA (the iCE40 UP5K) does not have.
    pub window: bool,
}

impl Default for Units {
    fn default() -> Self {
        Units { window: true }
    }
}

impl Units {
    /// Whether every field is the default (then the section is not written out).
    pub fn is_default(&self) -> bool {
        *self == Units::default()
    }
}

/// The whole configuration, as read from TOML or JSON. It can only exist
/// validated: the fields are private, [`ArrayConfig::new`] and
/// deserialisation check every range, and the `with_*` methods return a
/// checked copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawConfig", into = "RawConfig")]
pub struct ArrayConfig {
    array: ArrayShape,
    numbers: Numbers,
    buffers: BufferDepths,
    host: HostInterface,
    units: Units,
}

/// The file form of [`ArrayConfig`], before validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    array: ArrayShape,
    format: RawFormat,
    /// Optional `[buffers]` section; defaults when absent.
    #[serde(default, skip_serializing_if = "BufferDepths::is_default")]
    buffers: BufferDepths,
    /// Optional `[host]` section; defaults when absent.
    #[serde(default, skip_serializing_if = "HostInterface::is_default")]
    host: HostInterface,
    /// Optional `[units]` section; every unit when absent.
    #[serde(default, skip_serializing_if = "Units::is_default")]
    units: Units,
}

impl TryFrom<RawConfig> for ArrayConfig {
    type Error = ConfigError;
    fn try_from(raw: RawConfig) -> Result<Self, ConfigError> {
        let cfg = ArrayConfig {
            array: raw.array,
            numbers: raw.format.numbers()?,
            buffers: raw.buffers,
            host: raw.host,
            units: raw.units,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

impl From<ArrayConfig> for RawConfig {
    fn from(c: ArrayConfig) -> Self {
        RawConfig {
            array: c.array,
            format: RawFormat::from(c.numbers),
            buffers: c.buffers,
            host: c.host,
            units: c.units,
        }
    }
}

/// Largest number of rows or columns: 256, the TPU v1 size (and SCALE-Sim's
/// largest standard config). Command fields and RTL widths derive from it.
pub const MAX_DIM: usize = 256;
/// Width of the `lr_shift` input port.
pub const LR_SHIFT_BITS: u32 = 6;

impl ArrayConfig {
    /// A checked configuration with default buffer depths.
    pub fn new(
        rows: usize,
        cols: usize,
        backward: Backward,
        format: NumberFormat,
    ) -> Result<Self, ConfigError> {
        RawConfig {
            array: ArrayShape {
                rows,
                cols,
                backward,
                pipelining: Pipelining::default(),
                lr_shift: None,
                multiplier_register: false,
                deferred_saturation: false,
            },
            format: RawFormat::from(Numbers::Fixed(format.into())),
            buffers: BufferDepths::default(),
            host: HostInterface::default(),
            units: Units::default(),
        }
        .try_into()
    }

    /// The default configuration: 16x16 interleaved, Q7.8 data, 40-bit accumulators.
    pub fn default_16x16() -> Self {
        ArrayConfig::new(
            16,
            16,
            Backward::Interleaved,
            NumberFormat {
                in_bits: 16,
                acc_bits: 40,
                frac_bits: 8,
            },
        )
        .expect("the default configuration is valid")
    }

    pub fn rows(&self) -> usize {
        self.array.rows
    }
    pub fn cols(&self) -> usize {
        self.array.cols
    }
    /// Rows, columns and backward schedule.
    pub fn shape(&self) -> ArrayShape {
        self.array
    }
    pub fn backward(&self) -> Backward {
        self.array.backward
    }
    pub fn interleaved(&self) -> bool {
        self.array.backward == Backward::Interleaved
    }
    /// The widths of the words: for fixed point the format itself; for
    /// floating point the data words' width (the widest of the three
    /// formats), 32-bit accumulators and no fractional bits. What the words
    /// mean is [`ArrayConfig::numbers`].
    pub fn format(&self) -> NumberFormat {
        self.numbers.widths()
    }
    /// The number format: fixed point or floating point.
    pub fn numbers(&self) -> Numbers {
        self.numbers
    }
    pub fn buffers(&self) -> BufferDepths {
        self.buffers
    }
    /// Width of the accelerator's hardware counters (0: none).
    pub fn counter_bits(&self) -> u32 {
        self.host.counter_bits
    }
    /// Whether the accelerator has the convolution address generator.
    pub fn has_window(&self) -> bool {
        self.units.window
    }

    /// The same configuration with other optional units.
    pub fn with_units(self, units: Units) -> Self {
        ArrayConfig { units, ..self }
    }

    pub fn pipelining(&self) -> Pipelining {
        self.array.pipelining
    }
    pub fn dense(&self) -> bool {
        self.array.pipelining == Pipelining::Dense
    }

    /// The same configuration with another pipelining, checked: the one
    /// way to change it. A dense array has no multiplier register and no
    /// deferred saturation, so asking a configuration that has either for
    /// `dense` is refused naming the field, never dropped without a word.
    /// `none` accepts every configuration.
    pub fn with_pipelining(self, pipelining: Pipelining) -> Result<Self, ConfigError> {
        let mut raw: RawConfig = self.into();
        raw.array.pipelining = pipelining;
        raw.try_into()
    }

    /// Whether each PE has a register after its multipliers.
    pub fn multiplier_register(&self) -> bool {
        self.array.multiplier_register
    }

    /// Pipeline registers between a PE's multiplier and its adder: 1 with
    /// a multiplier register, else 0 (the `mul_reg_coef` term of
    /// `sysgrad_isa::timing`).
    pub fn product_stages(&self) -> usize {
        self.array.multiplier_register.into()
    }

    /// The same configuration with or without the multiplier register,
    /// checked (a dense array cannot have one).
    pub fn with_multiplier_register(self, on: bool) -> Result<Self, ConfigError> {
        let mut raw: RawConfig = self.into();
        raw.array.multiplier_register = on;
        raw.try_into()
    }

    /// Whether each PE's accumulator and weight registers hold exact
    /// sums and differences, saturated where they are read.
    pub fn deferred_saturation(&self) -> bool {
        self.array.deferred_saturation
    }

    /// The same configuration with or without deferred saturation,
    /// checked (a dense array cannot have it).
    pub fn with_deferred_saturation(self, on: bool) -> Result<Self, ConfigError> {
        let mut raw: RawConfig = self.into();
        raw.array.deferred_saturation = on;
        raw.try_into()
    }

    /// The learning-rate shift built into the PEs, if the config fixes one.
    pub fn fixed_lr_shift(&self) -> Option<u32> {
        self.array.lr_shift
    }

    /// Whether an UPDATE may use `shift`: it must fit the `lr_shift` port
    /// and, on an array built with a constant shift, be that constant.
    /// The driver, the accelerator and its RTL controller apply this rule.
    pub fn accepts_lr_shift(&self, shift: u32) -> bool {
        shift < 1 << LR_SHIFT_BITS && self.array.lr_shift.is_none_or(|k| k == shift)
    }

    /// The shift the PEs' SGD units use when the `lr_shift` port (or a
    /// wave's lr) carries `port`: the constant, if the config fixes one.
    pub fn pe_lr_shift(&self, port: u32) -> u32 {
        self.array.lr_shift.unwrap_or(port)
    }

    /// The same configuration with a constant learning-rate shift (or
    /// none: the `lr_shift` port's), checked.
    pub fn with_fixed_lr_shift(self, lr_shift: Option<u32>) -> Result<Self, ConfigError> {
        let mut raw: RawConfig = self.into();
        raw.array.lr_shift = lr_shift;
        raw.try_into()
    }

    /// The same configuration with another size, checked.
    pub fn with_size(self, rows: usize, cols: usize) -> Result<Self, ConfigError> {
        let mut raw: RawConfig = self.into();
        (raw.array.rows, raw.array.cols) = (rows, cols);
        raw.try_into()
    }

    /// The same configuration with another backward schedule (always valid).
    pub fn with_backward(mut self, backward: Backward) -> Self {
        self.array.backward = backward;
        self
    }

    /// The same configuration with other buffer depths, checked.
    pub fn with_buffers(self, buffers: BufferDepths) -> Result<Self, ConfigError> {
        RawConfig {
            buffers,
            ..self.into()
        }
        .try_into()
    }

    /// The same configuration with counters of another width, checked.
    pub fn with_counter_bits(self, counter_bits: u32) -> Result<Self, ConfigError> {
        RawConfig {
            host: HostInterface { counter_bits },
            ..self.into()
        }
        .try_into()
    }

    /// The same configuration with another fixed-point format, checked.
    /// A fixed-point configuration keeps its update's rounding.
    pub fn with_format(self, format: NumberFormat) -> Result<Self, ConfigError> {
        let fixed = match self.numbers() {
            Numbers::Fixed(f) => FixedFormat {
                widths: format,
                ..f
            },
            Numbers::Float(_) => format.into(),
        };
        self.with_numbers(Numbers::Fixed(fixed))
    }

    /// The same configuration with its update rounded as `rounding` says,
    /// with the generators' `seed`, checked.
    pub fn with_update_rounding(
        self,
        (rounding, seed): (float::Rounding, u32),
    ) -> Result<Self, ConfigError> {
        self.with_numbers(match self.numbers() {
            Numbers::Fixed(f) => Numbers::Fixed(FixedFormat {
                rounding,
                seed,
                ..f
            }),
            Numbers::Float(f) => Numbers::Float(float::FloatFormat {
                rounding,
                seed,
                ..f
            }),
        })
    }

    /// The same configuration with another number format, checked.
    pub fn with_numbers(self, numbers: Numbers) -> Result<Self, ConfigError> {
        RawConfig {
            format: RawFormat::from(numbers),
            ..self.into()
        }
        .try_into()
    }

    /// Checks every field against its allowed range.
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &str, value: String, allowed: String| {
            Err(ConfigError::OutOfRange {
                field: field.to_string(),
                value,
                allowed,
            })
        };
        let a = &self.array;
        if !(1..=MAX_DIM).contains(&a.rows) {
            return bad("array.rows", a.rows.to_string(), format!("1..={MAX_DIM}"));
        }
        if !(1..=MAX_DIM).contains(&a.cols) {
            return bad("array.cols", a.cols.to_string(), format!("1..={MAX_DIM}"));
        }
        if let Some(k) = a.lr_shift.filter(|&k| k >= 1 << LR_SHIFT_BITS) {
            return bad(
                "array.lr_shift",
                k.to_string(),
                format!(
                    "0..={} (the lr_shift port's range), or absent for a shift given at run time",
                    (1 << LR_SHIFT_BITS) - 1
                ),
            );
        }
        if a.multiplier_register && a.pipelining == Pipelining::Dense {
            return bad(
                "array.multiplier_register",
                "true".into(),
                "false with pipelining = \"dense\" (the dense PE has no multiplier register); use pipelining = \"none\"".into(),
            );
        }
        if a.deferred_saturation && a.pipelining == Pipelining::Dense {
            return bad(
                "array.deferred_saturation",
                "true".into(),
                "false with pipelining = \"dense\" (the dense PE saturates as it adds); use pipelining = \"none\"".into(),
            );
        }
        if let Numbers::Float(_) = self.numbers {
            if a.deferred_saturation {
                return bad(
                    "array.deferred_saturation",
                    "true".into(),
                    "false with format.kind = \"float\" (floating-point accumulators do not saturate)".into(),
                );
            }
        }
        self.numbers.validate()?;
        for (field, depth) in self.buffers().fields() {
            if !(1..=MAX_BUFFER_DEPTH).contains(&depth) {
                return bad(
                    field,
                    depth.to_string(),
                    format!("1..={MAX_BUFFER_DEPTH} lines (commands carry 16-bit addresses)"),
                );
            }
        }
        if !COUNTER_BITS.contains(&self.host.counter_bits) {
            return bad(
                "host.counter_bits",
                self.host.counter_bits.to_string(),
                format!(
                    "{}..={} (0: no hardware counters)",
                    COUNTER_BITS.start(),
                    COUNTER_BITS.end()
                ),
            );
        }
        Ok(())
    }

    /// Accumulator bits with which no sum of `terms` products can saturate:
    /// the largest product is `2^(2*DW-2)` (min x min), so `n` of them need
    /// `2*DW + floor(log2 n)` signed bits.
    pub fn acc_bits_needed(&self, terms: usize) -> u32 {
        2 * self.format().in_bits + terms.max(1).ilog2()
    }

    /// A warning when a reduction of `terms` products (`what`, e.g. "the
    /// forward reduction K = 784") could saturate the accumulators. Saturation
    /// is defined behaviour, so this is advice, not an error.
    pub fn saturation_warning(&self, terms: usize, what: &str) -> Option<String> {
        if let Numbers::Float(_) = self.numbers {
            return None;
        }
        let needed = self.acc_bits_needed(terms);
        (self.format().acc_bits < needed).then(|| {
            format!(
                "format.acc_bits = {} is narrower than the {needed} bits with which {what} ({terms} products) cannot saturate; extreme values will clamp",
                self.format().acc_bits
            )
        })
    }

    /// A short name used for generated file names, e.g. `sa_16x16_i16a40f8_il`.
    pub fn tag(&self) -> String {
        let dense = if self.dense() { "_dense" } else { "" };
        let lr = self
            .array
            .lr_shift
            .map(|k| format!("_lr{k}"))
            .unwrap_or_default();
        let mul_reg = if self.multiplier_register() {
            "_mr"
        } else {
            ""
        };
        let deferred = if self.deferred_saturation() {
            "_ds"
        } else {
            ""
        };
        let counters = if self.host.is_default() {
            String::new()
        } else {
            format!("_c{}", self.host.counter_bits)
        };
        let window = if self.units.window { "" } else { "_nw" };
        format!(
            "sa_{}x{}_{}_{}{dense}{lr}{mul_reg}{deferred}{counters}{window}",
            self.array.rows,
            self.array.cols,
            self.numbers.tag(),
            match self.array.backward {
                Backward::Interleaved => "il",
                Backward::Sequential => "seq",
            }
        )
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serialises")
    }
}

#[cfg(test)]
mod buffer_tests {
    use super::*;
    use crate::load::parse_config;
    use std::path::Path;

    const OLD: &str = "[array]\nrows = 4\ncols = 4\nbackward = \"sequential\"\n[format]\nin_bits = 8\nacc_bits = 16\nfrac_bits = 0\n";

    #[test]
    fn configs_without_buffers_get_defaults_and_serialise_unchanged() {
        let cfg = parse_config(OLD, false, Path::new("x.toml")).unwrap();
        assert!(cfg.buffers().is_default());
        assert!(!cfg.to_toml().contains("buffers"));
        let json = r#"{"array":{"rows":4,"cols":4,"backward":"sequential"},"format":{"in_bits":8,"acc_bits":16,"frac_bits":0}}"#;
        assert_eq!(parse_config(json, true, Path::new("x.json")).unwrap(), cfg);
    }

    #[test]
    fn a_constant_lr_shift_round_trips_and_is_range_checked() {
        let text = OLD.replace("[format]", "lr_shift = 7\n[format]");
        let cfg = parse_config(&text, false, Path::new("x.toml")).unwrap();
        assert_eq!(cfg.fixed_lr_shift(), Some(7));
        assert!(cfg.tag().ends_with("_lr7"));
        assert!(cfg.accepts_lr_shift(7) && !cfg.accepts_lr_shift(6));
        assert_eq!(cfg.pe_lr_shift(0), 7);
        assert!(cfg.to_toml().contains("lr_shift = 7"));
        let runtime = parse_config(OLD, false, Path::new("x.toml")).unwrap();
        assert!(runtime.accepts_lr_shift(63) && !runtime.accepts_lr_shift(64));
        assert!(!runtime.to_toml().contains("lr_shift"));
        let err = parse_config(
            &OLD.replace("[format]", "lr_shift = 64\n[format]"),
            false,
            Path::new("x.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("array.lr_shift") && err.contains("0..=63"),
            "{err}"
        );
    }

    #[test]
    fn a_multiplier_register_round_trips_and_needs_the_none_array() {
        let text = OLD.replace("[format]", "multiplier_register = true\n[format]");
        let cfg = parse_config(&text, false, Path::new("x.toml")).unwrap();
        assert!(cfg.multiplier_register());
        assert_eq!(cfg.product_stages(), 1);
        assert!(cfg.tag().ends_with("_mr"));
        assert!(cfg.to_toml().contains("multiplier_register = true"));
        let plain = parse_config(OLD, false, Path::new("x.toml")).unwrap();
        assert_eq!(plain.product_stages(), 0);
        assert!(!plain.to_toml().contains("multiplier_register"));
        let dense = text.replace("[format]", "pipelining = \"dense\"\n[format]");
        let err = parse_config(&dense, false, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("array.multiplier_register") && err.contains("dense"),
            "{err}"
        );
        let err = cfg.with_pipelining(Pipelining::Dense).unwrap_err();
        assert!(
            err.to_string().contains("array.multiplier_register"),
            "{err}"
        );
        assert_eq!(cfg.with_pipelining(Pipelining::None).unwrap(), cfg);
        assert!(plain
            .with_multiplier_register(true)
            .unwrap()
            .multiplier_register());
    }

    #[test]
    fn deferred_saturation_round_trips_and_needs_the_none_array() {
        let text = OLD.replace("[format]", "deferred_saturation = true\n[format]");
        let cfg = parse_config(&text, false, Path::new("x.toml")).unwrap();
        assert!(cfg.deferred_saturation());
        assert_eq!(cfg.product_stages(), 0, "it changes no timing");
        assert!(cfg.tag().ends_with("_ds"));
        assert!(cfg.to_toml().contains("deferred_saturation = true"));
        let plain = parse_config(OLD, false, Path::new("x.toml")).unwrap();
        assert!(!plain.to_toml().contains("deferred_saturation"));
        let dense = text.replace("[format]", "pipelining = \"dense\"\n[format]");
        let err = parse_config(&dense, false, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("array.deferred_saturation") && err.contains("dense"),
            "{err}"
        );
        let err = cfg.with_pipelining(Pipelining::Dense).unwrap_err();
        assert!(
            err.to_string().contains("array.deferred_saturation"),
            "{err}"
        );
        assert!(plain
            .with_deferred_saturation(true)
            .unwrap()
            .deferred_saturation());
    }

    #[test]
    fn partial_buffers_section_fills_in_defaults_and_round_trips() {
        let text = format!("{OLD}[buffers]\nweights = 100\naccumulators = 65536\n");
        let cfg = parse_config(&text, false, Path::new("x.toml")).unwrap();
        assert_eq!(cfg.buffers().weights, 100);
        assert_eq!(cfg.buffers().accumulators, MAX_BUFFER_DEPTH);
        assert_eq!(cfg.buffers().activations, DEFAULT_BUFFER_DEPTH);
        let again = parse_config(&cfg.to_toml(), false, Path::new("x.toml")).unwrap();
        assert_eq!(again, cfg);
    }

    #[test]
    fn pipelining_is_read_and_written_only_when_dense() {
        let cfg = parse_config(OLD, false, Path::new("x.toml")).unwrap();
        assert_eq!(cfg.pipelining(), Pipelining::None);
        let dense = OLD.replace(
            "backward = \"sequential\"\n",
            "backward = \"sequential\"\npipelining = \"dense\"\n",
        );
        let cfg = parse_config(&dense, false, Path::new("x.toml")).unwrap();
        assert!(cfg.dense() && cfg.to_toml().contains("pipelining = \"dense\""));
        assert!(cfg.tag().ends_with("_dense"));
        let bad = OLD.replace(
            "backward = \"sequential\"\n",
            "backward = \"sequential\"\npipelining = \"fast\"\n",
        );
        let e = parse_config(&bad, false, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("pipelining") || e.contains("fast"), "{e}");
    }

    #[test]
    fn bad_depths_are_refused_naming_the_field() {
        for (line, field) in [
            ("weights = 0", "buffers.weights"),
            ("gradients = 65537", "buffers.gradients"),
        ] {
            let text = format!("{OLD}[buffers]\n{line}\n");
            let e = parse_config(&text, false, Path::new("x.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(field) && e.contains("1..=65536"), "{e}");
        }
        let text = format!("{OLD}[buffers]\nweight = 10\n");
        let e = parse_config(&text, false, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("weight"), "{e}");
    }

    #[test]
    fn counter_bits_round_trip_and_are_range_checked() {
        let cfg = parse_config(OLD, false, Path::new("x.toml")).unwrap();
        assert_eq!(cfg.counter_bits(), 48);
        assert!(!cfg.to_toml().contains("host"));
        for bits in [0, 16] {
            let text = format!("{OLD}[host]\ncounter_bits = {bits}\n");
            let cfg = parse_config(&text, false, Path::new("x.toml")).unwrap();
            assert_eq!(cfg.counter_bits(), bits);
            assert!(cfg.tag().ends_with(&format!("_c{bits}")));
            let again = parse_config(&cfg.to_toml(), false, Path::new("x.toml")).unwrap();
            assert_eq!(again, cfg);
        }
        let text = format!("{OLD}[host]\ncounter_bits = 49\n");
        let e = parse_config(&text, false, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("host.counter_bits") && e.contains("0..=48"),
            "{e}"
        );
        assert!(cfg.with_counter_bits(64).is_err());
    }
}

#[cfg(test)]
mod headroom_tests {
    use super::*;

    /// The bound is tight: `n` products of min x min fit in the width it
    /// names and overflow one bit less.
    #[test]
    fn acc_bits_needed_is_tight() {
        for in_bits in [4u32, 8, 16] {
            for n in [1usize, 2, 3, 4, 100, 1024] {
                let cfg = ArrayConfig::new(
                    1,
                    1,
                    Backward::Sequential,
                    NumberFormat {
                        in_bits,
                        acc_bits: 48,
                        frac_bits: 0,
                    },
                )
                .unwrap();
                let need = cfg.acc_bits_needed(n);
                let sum = n as i128 * (fixed::min_of(in_bits) as i128).pow(2);
                assert!(sum <= fixed::max_of(need) as i128, "{in_bits} {n}");
                assert!(sum > fixed::max_of(need - 1) as i128, "{in_bits} {n}");
            }
        }
    }

    #[test]
    fn narrow_accumulators_are_reported_with_the_width_needed() {
        let cfg = ArrayConfig::new(
            4,
            4,
            Backward::Interleaved,
            NumberFormat {
                in_bits: 8,
                acc_bits: 20,
                frac_bits: 4,
            },
        )
        .unwrap();
        let w = cfg
            .saturation_warning(784, "the forward reduction K")
            .unwrap();
        assert!(w.contains("25 bits") && w.contains("784"), "{w}");
        assert!(cfg.saturation_warning(16, "K").is_none());
    }
}
