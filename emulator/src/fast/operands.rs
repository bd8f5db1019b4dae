//! What the ledgers of both pipelinings take: which product of a layer
//! they count, and the operands' value checks ([`Operands`]).

use crate::driver::check_values as check_words;
use crate::driver::DriveError;
use crate::gemm::DwSink;
use ndarray::{s, ArrayView2};
use sysgrad_config::{ArrayConfig, Backward};

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
    pub cfg: ArrayConfig,
}

impl Views<'_> {
    /// The value check of `Driver::check_tile`.
    fn check_values(&self, what: &'static str, t: ArrayView2<i64>) -> Result<(), DriveError> {
        check_words(&self.cfg, what, t)
    }
}

impl Operands for Views<'_> {
    fn check_w(
        &self,
        (m0, mt): (usize, usize),
        (k0, kt): (usize, usize),
    ) -> Result<(), DriveError> {
        self.check_values("W", self.w.slice(s![m0..m0 + mt, k0..k0 + kt]))
    }
    fn check_x(&self, (k0, kt): (usize, usize)) -> Result<(), DriveError> {
        self.check_values("X", self.x.slice(s![k0..k0 + kt, ..]))
    }
    fn check_dy(&self, (m0, mt): (usize, usize)) -> Result<(), DriveError> {
        let dy = self.dy.expect("backward operands include dY");
        self.check_values("dY", dy.slice(s![m0..m0 + mt, ..]))
    }
}
