//! The array layer: `sa_pe` and `sa_top` of each pipelining
//! (`array.pipelining`), behind one trait, [`Array`]: [`none::NoneArray`]
//! (every PE does what the global mode says) and [`dense::DenseArray`]
//! (every PE does what the wave it takes says). They share [`core`] (the
//! mesh, its edges, the skew banks, the output registers, the ports and
//! parameters) and never import each other; the number format reaches
//! both through [`crate::arith::Arithmetic`].
//!
//! A further pipelining is a third module here implementing [`Array`],
//! chosen in [`crate::design::variant`]; the register names the co-simulation
//! compares ([`crate::names`]) are read from the modules it builds.

pub(crate) mod core;
pub(crate) mod dense;
pub(crate) mod none;

use crate::arith::Arithmetic;
use crate::ir::Module;
use sysgrad_config::ArrayConfig;

/// One pipelining of the array.
pub(crate) trait Array {
    /// `sa_pe`, its arithmetic from `arith`.
    fn pe(&self, cfg: &ArrayConfig, arith: &dyn Arithmetic) -> Module;
    /// `sa_top`, the mesh of `pe` (whose ports and parameters its
    /// instances take).
    fn top(&self, cfg: &ArrayConfig, pe: &Module) -> Module;
}
