//! The dense array (`docs/ARCHITECTURE.md`, Dense pipelining): every PE
//! does what the wave it takes says; the control word's layout is in
//! [`ctl`].

pub(crate) mod ctl;
mod pe;
mod top;

pub use pe::control_reg_name;
pub(crate) use top::wave_port;
pub use top::DenseBank;

use crate::arith::Arithmetic;
use crate::ir::Module;
use sysgrad_config::ArrayConfig;

/// The dense array.
pub(crate) struct DenseArray;

impl super::Array for DenseArray {
    fn pe(&self, _cfg: &ArrayConfig, arith: &dyn Arithmetic) -> Module {
        pe::module(arith)
    }
    fn top(&self, cfg: &ArrayConfig, pe: &Module) -> Module {
        top::module(cfg, pe)
    }
}
