//! The `[format]` section: fixed point (the default) or floating point,
//! chosen once into [`Numbers`].

use crate::float::{FloatFormat, FloatKind, Rounding, FLOAT_KIND_NAMES};
use crate::load::ConfigError;
use serde::{Deserialize, Serialize};

/// Fixed-point number format (see [`crate::fixed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumberFormat {
    /// Signed data width of x, w and dy.
    pub in_bits: u32,
    /// Signed accumulator width.
    pub acc_bits: u32,
    /// Fractional bits of a data value; accumulators carry twice as many.
    pub frac_bits: u32,
}

/// Signed data widths a fixed-point format may have.
pub const IN_BITS: std::ops::RangeInclusive<u32> = 4..=16;
/// Signed accumulator widths a fixed-point format may have.
pub const ACC_BITS: std::ops::RangeInclusive<u32> = 16..=48;

/// A fixed-point format with its update's rounding
/// (`docs/ARCHITECTURE.md`, Stochastic rounding in fixed point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedFormat {
    pub widths: NumberFormat,
    /// How the SGD update rounds its step.
    pub rounding: Rounding,
    /// The PEs' stochastic-rounding generators' seed.
    pub seed: u32,
}

impl From<NumberFormat> for FixedFormat {
    /// The format rounding its updates to nearest.
    fn from(widths: NumberFormat) -> Self {
        FixedFormat {
            widths,
            rounding: Rounding::Nearest,
            seed: DEFAULT_SEED,
        }
    }
}

/// The number format of a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Numbers {
    /// `kind = "fixed"`: two's-complement fixed point ([`crate::fixed`]).
    Fixed(FixedFormat),
    /// `kind = "float"`: bf16/FP8 data, fp32 accumulators ([`crate::float`]).
    Float(FloatFormat),
}

/// Width of a floating-point accumulator (fp32).
pub const FLOAT_ACC_BITS: u32 = 32;

impl Numbers {
    /// The widths of the words (see [`crate::ArrayConfig::format`]).
    pub fn widths(&self) -> NumberFormat {
        match self {
            Numbers::Fixed(f) => f.widths,
            Numbers::Float(f) => NumberFormat {
                in_bits: f.data_bits(),
                acc_bits: FLOAT_ACC_BITS,
                frac_bits: 0,
            },
        }
    }

    /// The format's part of a configuration's tag: `i16a40f8` or
    /// `bf16-e4m3-e5m2[-sr]`.
    pub fn tag(&self) -> String {
        match self {
            Numbers::Fixed(f) => {
                let w = f.widths;
                let sr = if f.rounding.is_nearest() { "" } else { "-sr" };
                format!("i{}a{}f{}{sr}", w.in_bits, w.acc_bits, w.frac_bits)
            }
            Numbers::Float(f) => f.tag(),
        }
    }

    /// How the SGD update rounds, and the generators' seed.
    pub fn update_rounding(&self) -> (Rounding, u32) {
        match self {
            Numbers::Fixed(f) => (f.rounding, f.seed),
            Numbers::Float(f) => (f.rounding, f.seed),
        }
    }

    /// The seed of the PEs' generators if the update rounds
    /// stochastically (the PEs then have them), else `None`.
    pub fn stochastic_seed(&self) -> Option<u32> {
        let (rounding, seed) = self.update_rounding();
        (!rounding.is_nearest()).then_some(seed)
    }

    /// The floating-point format, if this is one.
    pub fn float(&self) -> Option<FloatFormat> {
        match self {
            Numbers::Fixed(_) => None,
            Numbers::Float(f) => Some(*f),
        }
    }

    /// Checks every field against its allowed range.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        match self {
            Numbers::Fixed(f) => validate_fixed(&f.widths),
            // Every combination of the three formats is allowed.
            Numbers::Float(_) => Ok(()),
        }
    }
}

fn out_of_range(field: &str, value: String, allowed: String) -> ConfigError {
    ConfigError::OutOfRange {
        field: field.to_string(),
        value,
        allowed,
    }
}

fn validate_fixed(f: &NumberFormat) -> Result<(), ConfigError> {
    if !IN_BITS.contains(&f.in_bits) {
        return Err(out_of_range(
            "format.in_bits",
            f.in_bits.to_string(),
            format!("{}..={}", IN_BITS.start(), IN_BITS.end()),
        ));
    }
    if !ACC_BITS.contains(&f.acc_bits) {
        return Err(out_of_range(
            "format.acc_bits",
            f.acc_bits.to_string(),
            format!("{}..={}", ACC_BITS.start(), ACC_BITS.end()),
        ));
    }
    if f.acc_bits < 2 * f.in_bits {
        return Err(out_of_range(
            "format.acc_bits",
            f.acc_bits.to_string(),
            format!(
                "at least 2 * in_bits = {} so that a product fits",
                2 * f.in_bits
            ),
        ));
    }
    if f.frac_bits >= f.in_bits {
        return Err(out_of_range(
            "format.frac_bits",
            f.frac_bits.to_string(),
            format!("0..={} (less than in_bits)", f.in_bits - 1),
        ));
    }
    Ok(())
}

/// Which family of formats `[format]` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    #[default]
    Fixed,
    Float,
}

impl Kind {
    fn is_fixed(&self) -> bool {
        *self == Kind::Fixed
    }
}

/// The file form of `[format]`: the fields of both kinds, each optional,
/// so that a missing or misplaced field is named in the error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFormat {
    #[serde(default, skip_serializing_if = "Kind::is_fixed")]
    kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    in_bits: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    acc_bits: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    frac_bits: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    weights: Option<FloatKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    activations: Option<FloatKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gradients: Option<FloatKind>,
    #[serde(default, skip_serializing_if = "Rounding::is_nearest")]
    rounding: Rounding,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seed: Option<u32>,
}

/// The stochastic-rounding seed when `[format]` gives none.
pub const DEFAULT_SEED: u32 = 1;

impl From<Numbers> for RawFormat {
    fn from(n: Numbers) -> Self {
        let none = RawFormat {
            kind: Kind::Fixed,
            in_bits: None,
            acc_bits: None,
            frac_bits: None,
            weights: None,
            activations: None,
            gradients: None,
            rounding: Rounding::Nearest,
            seed: None,
        };
        match n {
            Numbers::Fixed(f) => RawFormat {
                in_bits: Some(f.widths.in_bits),
                acc_bits: Some(f.widths.acc_bits),
                frac_bits: Some(f.widths.frac_bits),
                rounding: f.rounding,
                seed: (f.seed != DEFAULT_SEED).then_some(f.seed),
                ..none
            },
            Numbers::Float(f) => RawFormat {
                kind: Kind::Float,
                weights: Some(f.weights),
                activations: Some(f.activations),
                gradients: Some(f.gradients),
                rounding: f.rounding,
                seed: (f.seed != DEFAULT_SEED).then_some(f.seed),
                ..none
            },
        }
    }
}

impl RawFormat {
    /// The format these fields describe: every field its kind needs
    /// present, none of the other kind's.
    pub(crate) fn numbers(&self) -> Result<Numbers, ConfigError> {
        match self.kind {
            Kind::Fixed => self.fixed(),
            Kind::Float => self.float(),
        }
    }

    fn fixed(&self) -> Result<Numbers, ConfigError> {
        let float_fields = [
            ("format.weights", self.weights.is_some()),
            ("format.activations", self.activations.is_some()),
            ("format.gradients", self.gradients.is_some()),
        ];
        if let Some((field, _)) = float_fields.iter().find(|(_, set)| *set) {
            return Err(out_of_range(
                field,
                "a value".into(),
                "absent with kind = \"fixed\" (add kind = \"float\" for a floating-point format)"
                    .into(),
            ));
        }
        let need = |field: &str, v: Option<u32>| {
            v.ok_or_else(|| {
                out_of_range(
                    field,
                    "missing".into(),
                    "a value: kind = \"fixed\" needs in_bits, acc_bits and frac_bits".into(),
                )
            })
        };
        Ok(Numbers::Fixed(FixedFormat {
            widths: NumberFormat {
                in_bits: need("format.in_bits", self.in_bits)?,
                acc_bits: need("format.acc_bits", self.acc_bits)?,
                frac_bits: need("format.frac_bits", self.frac_bits)?,
            },
            rounding: self.rounding,
            seed: self.seed.unwrap_or(DEFAULT_SEED),
        }))
    }

    fn float(&self) -> Result<Numbers, ConfigError> {
        let fixed_fields = [
            ("format.in_bits", self.in_bits),
            ("format.acc_bits", self.acc_bits),
            ("format.frac_bits", self.frac_bits),
        ];
        if let Some((field, Some(v))) = fixed_fields.iter().find(|(_, v)| v.is_some()) {
            return Err(out_of_range(
                field,
                v.to_string(),
                "absent with kind = \"float\" (the formats give the widths: data as wide as the widest format, fp32 accumulators)".into(),
            ));
        }
        let need = |field: &str, v: Option<FloatKind>| {
            v.ok_or_else(|| {
                out_of_range(
                    field,
                    "missing".into(),
                    format!("one of {FLOAT_KIND_NAMES}: kind = \"float\" needs weights, activations and gradients"),
                )
            })
        };
        Ok(Numbers::Float(FloatFormat {
            weights: need("format.weights", self.weights)?,
            activations: need("format.activations", self.activations)?,
            gradients: need("format.gradients", self.gradients)?,
            rounding: self.rounding,
            seed: self.seed.unwrap_or(DEFAULT_SEED),
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::float::{FloatKind, Rounding};
    use crate::{parse_config, Numbers};
    use std::path::Path;

    const ARRAY: &str = "[array]\nrows = 4\ncols = 4\nbackward = \"interleaved\"\n";

    fn parse(format: &str) -> Result<crate::ArrayConfig, String> {
        parse_config(
            &format!("{ARRAY}[format]\n{format}"),
            false,
            Path::new("f.toml"),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_float_format_parses_round_trips_and_gives_its_widths() {
        let cfg = parse(
            "kind = \"float\"\nweights = \"bf16\"\nactivations = \"e4m3\"\ngradients = \"e5m2\"\nrounding = \"stochastic\"\n",
        )
        .unwrap();
        let Numbers::Float(f) = cfg.numbers() else {
            panic!("float expected")
        };
        assert_eq!(
            (f.weights, f.activations, f.gradients, f.rounding, f.seed),
            (
                FloatKind::Bf16,
                FloatKind::E4M3,
                FloatKind::E5M2,
                Rounding::Stochastic,
                1
            )
        );
        assert_eq!(
            (
                cfg.format().in_bits,
                cfg.format().acc_bits,
                cfg.format().frac_bits
            ),
            (16, 32, 0)
        );
        assert_eq!(cfg.tag(), "sa_4x4_bf16-e4m3-e5m2-sr_il");
        let again = parse_config(&cfg.to_toml(), false, Path::new("g.toml")).unwrap();
        assert_eq!(again, cfg);
        let fp8 = parse("kind = \"float\"\nweights = \"e4m3\"\nactivations = \"e4m3\"\ngradients = \"e5m2\"\nseed = 9\n").unwrap();
        assert_eq!(fp8.format().in_bits, 8);
        assert!(fp8.to_toml().contains("seed = 9"));
    }

    #[test]
    fn fixed_configs_serialise_as_before() {
        let cfg = parse("in_bits = 8\nacc_bits = 24\nfrac_bits = 4\n").unwrap();
        assert_eq!(
            cfg.to_toml(),
            format!("{ARRAY}\n[format]\nin_bits = 8\nacc_bits = 24\nfrac_bits = 4\n")
        );
        assert_eq!(cfg.tag(), "sa_4x4_i8a24f4_il");
    }

    #[test]
    fn a_fixed_format_may_round_its_update_stochastically() {
        let text =
            "in_bits = 8\nacc_bits = 24\nfrac_bits = 4\nrounding = \"stochastic\"\nseed = 7\n";
        let cfg = parse(text).unwrap();
        let Numbers::Fixed(f) = cfg.numbers() else {
            panic!("fixed expected")
        };
        assert_eq!((f.rounding, f.seed), (Rounding::Stochastic, 7));
        assert_eq!(cfg.numbers().stochastic_seed(), Some(7));
        assert_eq!(cfg.tag(), "sa_4x4_i8a24f4-sr_il");
        assert_eq!(cfg.to_toml(), format!("{ARRAY}\n[format]\n{text}"));
        let nearest = parse("in_bits = 8\nacc_bits = 24\nfrac_bits = 4\n").unwrap();
        assert_eq!(nearest.numbers().stochastic_seed(), None);
    }

    #[test]
    fn misplaced_missing_and_unknown_fields_are_named() {
        let cases = [
            ("kind = \"float\"\nweights = \"bf16\"\nactivations = \"bf16\"\n", "format.gradients"),
            ("kind = \"float\"\nin_bits = 8\nweights = \"bf16\"\nactivations = \"bf16\"\ngradients = \"bf16\"\n", "format.in_bits"),
            ("in_bits = 8\nacc_bits = 24\nfrac_bits = 4\nweights = \"bf16\"\n", "format.weights"),
            ("in_bits = 8\nacc_bits = 24\nfrac_bits = 4\nrounding = \"sometimes\"\n", "nearest"),
            ("in_bits = 8\nacc_bits = 24\n", "format.frac_bits"),
            ("kind = \"float\"\nweights = \"fp16\"\nactivations = \"bf16\"\ngradients = \"bf16\"\n", "bf16"),
            ("kind = \"posit\"\n", "fixed"),
        ];
        for (text, named) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(named), "{text:?}: {e}");
            assert!(e.starts_with("f.toml"), "{e}");
        }
        let deferred = parse_config(
            &format!("{ARRAY}deferred_saturation = true\n[format]\nkind = \"float\"\nweights = \"bf16\"\nactivations = \"bf16\"\ngradients = \"bf16\"\n"),
            false,
            Path::new("f.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(deferred.contains("array.deferred_saturation"), "{deferred}");
    }
}
