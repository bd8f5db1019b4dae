//! The `none` array: every PE does what the global mode says
//! (`docs/ARCHITECTURE.md`, Mode table).

mod pe;
mod top;

pub use pe::{PROD_DW, PROD_SUM};

use crate::arith::Arithmetic;
use crate::ir::Module;
use sysgrad_config::ArrayConfig;

/// The `none` array.
pub(crate) struct NoneArray;

impl super::Array for NoneArray {
    fn pe(&self, cfg: &ArrayConfig, arith: &dyn Arithmetic) -> Module {
        pe::module(arith, cfg.deferred_saturation())
    }
    fn top(&self, cfg: &ArrayConfig, pe: &Module) -> Module {
        top::module(cfg, pe)
    }
}
