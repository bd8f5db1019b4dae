//! What the ledgers of both pipelinings take: which product of a layer
//! they count, and the operands' value checks ([`Operands`]).

use crate::driver::DriveError;
use crate::gemm::DwSink;
use ndarray::{s, ArrayView2};
use sysgrad_config::{fixed, Backward};

/// Which product of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Forward,
    Backward(Backward, DwSink),
}

/// What the walk needs to know about the operands besides their shapes:
/// whether the values of a tile fit the data width.
pub trait Operands {
    /// The W tile rows `m`, columns `k` (checked by LOAD).
    fn check_w(&self, m: (usize, usize), k: (usize, usize)) -> Result<(), DriveError>;
    /// The X rows `k` (checked by a pass streaming x).
    fn check_x(&self, k: (usize, usize)) -> Result<(), DriveError>;
    /// The dY rows `m` (checked by a backward pass).
    fn check_dy(&self, m: (usize, usize)) -> Result<(), DriveError>;
}

/// Shapes only: every value is taken to fit (for counting without data).
pub struct Shapes;

impl Operands for Shapes {
    fn check_w(&self, _: (usize, usize), _: (usize, usize)) -> Result<(), DriveError> {
        Ok(())
    }
    fn check_x(&self, _: (usize, usize)) -> Result<(), DriveError> {
        Ok(())
    }
    fn check_dy(&self, _: (usize, usize)) -> Result<(), DriveError> {
        Ok(())
    }
}

/// Real operands; `dy` is absent for a forward layer.
pub struct Views<'a> {
    pub w: ArrayView2<'a, i64>,
    pub x: ArrayView2<'a, i64>,
    pub dy: Option<ArrayView2<'a, i64>>,
    pub bits: u32,
}

/// The value check of `Driver::check_tile`: the first value, in row-major
/// order of the tile, that does not fit.
fn check_values(what: &'static str, t: ArrayView2<i64>, bits: u32) -> Result<(), DriveError> {
    match t.iter().find(|v| !fixed::fits(**v, bits)) {
        Some(&value) => Err(DriveError::ValueRange { what, value, bits }),
        None => Ok(()),
    }
}

impl Operands for Views<'_> {
    fn check_w(
        &self,
        (m0, mt): (usize, usize),
        (k0, kt): (usize, usize),
    ) -> Result<(), DriveError> {
        check_values("W", self.w.slice(s![m0..m0 + mt, k0..k0 + kt]), self.bits)
    }
    fn check_x(&self, (k0, kt): (usize, usize)) -> Result<(), DriveError> {
        check_values("X", self.x.slice(s![k0..k0 + kt, ..]), self.bits)
    }
    fn check_dy(&self, (m0, mt): (usize, usize)) -> Result<(), DriveError> {
        let dy = self.dy.expect("backward operands include dY");
        check_values("dY", dy.slice(s![m0..m0 + mt, ..]), self.bits)
    }
}
