//! The configuration's enumerations as command-line values (feature
//! `clap`): the names are the ones the configuration files use
//! (`Backward::name`, `Pipelining::name`), so a flag and a file spell a
//! value the same way.

use crate::{Backward, Pipelining};
use clap::builder::PossibleValue;

impl clap::ValueEnum for Backward {
    fn value_variants<'a>() -> &'a [Self] {
        &Backward::ALL
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

impl clap::ValueEnum for Pipelining {
    fn value_variants<'a>() -> &'a [Self] {
        &Pipelining::ALL
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
    fn flags_and_files_spell_every_value_alike() {
        for b in Backward::ALL {
            assert_eq!(Backward::from_str(b.name(), false), Ok(b));
        }
        for p in Pipelining::ALL {
            assert_eq!(Pipelining::from_str(p.name(), false), Ok(p));
            let toml = format!("p = \"{}\"", p.name());
            #[derive(serde::Deserialize)]
            struct P {
                p: Pipelining,
            }
            assert_eq!(toml::from_str::<P>(&toml).unwrap().p, p);
        }
    }
}
