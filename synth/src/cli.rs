//! The targets, parts and routers as command-line values (feature `clap`),
//! named as [`Target::name`], [`Part::key`] and [`Router::name`] name them,
//! so that the flag, the report and the error all spell a value alike.

use crate::pnr::{Part, Router, ALL_PARTS};
use crate::Target;
use clap::builder::PossibleValue;

impl clap::ValueEnum for Target {
    fn value_variants<'a>() -> &'a [Self] {
        &Target::ALL
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

impl clap::ValueEnum for Part {
    fn value_variants<'a>() -> &'a [Self] {
        &ALL_PARTS
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.key()).help(self.name()))
    }
}

impl clap::ValueEnum for Router {
    fn value_variants<'a>() -> &'a [Self] {
        &Router::ALL
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_value_parses_back_from_its_name() {
        for t in Target::ALL {
            assert_eq!(Target::from_str(t.name(), false), Ok(t));
        }
        for p in ALL_PARTS {
            assert_eq!(Part::from_str(p.key(), false), Ok(p));
        }
        for r in Router::ALL {
            assert_eq!(Router::from_str(r.name(), false), Ok(r));
        }
    }
}
