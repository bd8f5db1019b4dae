//! The generator's variants, chosen once from the configuration, and the
//! modules they build. A variant is a type per layer: the array
//! ([`crate::array::Array`]), its controller
//! ([`crate::accel::io::Controller`]) and the number format
//! ([`crate::arith::Arithmetic`]); nothing past this file asks the
//! configuration which pipelining it has.

use crate::accel::dense::DenseController;
use crate::accel::io::Controller;
use crate::accel::none::NoneController;
use crate::accel::{self, FormalNets};
use crate::arith::fixed::Fixed;
use crate::arith::float::Float;
use crate::arith::Arithmetic;
use crate::array::dense::DenseArray;
use crate::array::none::NoneArray;
use crate::array::Array;
use crate::ir::Module;
use crate::{buffer, skew};
use sysgrad_config::{ArrayConfig, Numbers, Pipelining};

/// The variants of one configuration.
pub(crate) struct Variant {
    pub array: &'static dyn Array,
    pub controller: &'static dyn Controller,
    pub arith: Box<dyn Arithmetic>,
}

/// The variants of `cfg`: its pipelining's array and controller, its
/// number format's arithmetic.
pub(crate) fn variant(cfg: &ArrayConfig) -> Variant {
    let (array, controller): (&'static dyn Array, &'static dyn Controller) = match cfg.pipelining()
    {
        Pipelining::None => (&NoneArray, &NoneController),
        Pipelining::Dense => (&DenseArray, &DenseController),
    };
    let arith: Box<dyn Arithmetic> = match cfg.numbers() {
        Numbers::Fixed(format) => Box::new(Fixed {
            rounding: format.rounding,
        }),
        Numbers::Float(format) => Box::new(Float { format }),
    };
    Variant {
        array,
        controller,
        arith,
    }
}

/// Every module of a configuration, and the formal nets of its
/// accelerator.
pub(crate) struct Design {
    pub pe: Module,
    pub skew: Module,
    pub buffer: Module,
    pub top: Module,
    pub requant: Module,
    pub accel: Module,
    pub formal: Result<FormalNets, &'static str>,
}

impl Design {
    /// The modules, leaves first.
    pub fn modules(self) -> Vec<Module> {
        vec![
            self.pe,
            self.skew,
            self.buffer,
            self.top,
            self.requant,
            self.accel,
        ]
    }
}

/// The array of `cfg`: its PE and `sa_top`.
pub(crate) fn array(cfg: &ArrayConfig) -> (Module, Module) {
    let v = variant(cfg);
    let pe = v.array.pe(cfg, &*v.arith);
    let top = v.array.top(cfg, &pe);
    (pe, top)
}

/// Every module of `cfg`: the array and the accelerator around it, in
/// its pipelining and number format.
pub(crate) fn design(cfg: &ArrayConfig) -> Design {
    let v = variant(cfg);
    let (pe, top) = array(cfg);
    let accel::Accel { module, formal } = accel::build(cfg, &top, v.controller, &*v.arith);
    Design {
        pe,
        skew: skew::module(),
        buffer: buffer::module(),
        top,
        requant: v.arith.requant(),
        accel: module,
        formal,
    }
}
