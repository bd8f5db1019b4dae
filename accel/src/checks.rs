//! The checks every command passes before any of its effects happen
//! (`docs/COMMANDS.md`, Errors), the same for both controllers: against
//! the configuration, the buffers and the logical resident tile.

use crate::buffer::BufferId;
use crate::command::{BackwardMode, Command};
use crate::controller::{dst_buffer, Core};
use crate::error::ErrorCode;

impl Core {
    /// Everything that can go wrong, in the documented priority order,
    /// before any effect.
    pub fn check(&self, cmd: &Command) -> Result<(), ErrorCode> {
        match ErrorCode::CHECK_ORDER
            .into_iter()
            .find(|&code| self.violates(cmd, code))
        {
            Some(code) => Err(code),
            None => Ok(()),
        }
    }

    /// Whether `cmd` fails the check of `code` (`docs/COMMANDS.md`, Errors);
    /// [`Core::check`] asks in the documented priority order, so a
    /// check may assume that the ones before it passed.
    fn violates(&self, cmd: &Command, code: ErrorCode) -> bool {
        use ErrorCode::*;
        let cfg = self.cfg();
        let outside =
            |id: BufferId, addr: u16, len: usize| !self.buffer(id).holds(addr.into(), len);
        match (code, *cmd) {
            // Code 3 is refused by the decoder (`Command::decode`).
            (BadFunction, Command::Act { func, dst, .. }) => !func.may_write(dst),
            (ZeroSize, Command::LoadW { m, k, .. }) => m == 0 || k == 0,
            (ZeroSize, Command::Forward { n, .. } | Command::Backward { n, .. }) => n == 0,
            (ZeroSize, Command::Requant { count, .. }) => count == 0,
            (ZeroSize, Command::Act { count, lanes, .. }) => count == 0 || lanes == 0,
            (ZeroSize, Command::Window(w)) => w.has_zero_size(),
            (
                TileTooLarge,
                Command::Act {
                    func, dst, lanes, ..
                },
            ) => {
                // The gate also reads `lanes` lanes of its mask line.
                let mask = func
                    .reads_mask()
                    .then(|| self.buffer(BufferId::Activations).lanes());
                let room = mask
                    .into_iter()
                    .fold(self.buffer(dst_buffer(dst)).lanes(), usize::min);
                usize::from(lanes) > room
            }
            (TileTooLarge, Command::LoadW { m, k, .. }) => {
                usize::from(m) > cfg.cols() || usize::from(k) > cfg.rows()
            }
            (LrShift, Command::Update { lr_shift }) => !cfg.accepts_lr_shift(lr_shift.into()),
            (NotInterleaved, Command::Backward { mode, .. }) => {
                mode == BackwardMode::Interleaved && !cfg.interleaved()
            }
            (NoGenerator, Command::Window(_)) => !cfg.has_window(),
            (
                NoTile,
                Command::Forward { .. }
                | Command::Backward { .. }
                | Command::Drain { .. }
                | Command::Update { .. },
            ) => self.resident.is_none(),
            (
                NoWindow,
                Command::Forward { window: true, .. } | Command::Backward { window: true, .. },
            ) => self.window.is_none(),
            (
                WindowLength,
                Command::Forward {
                    window: true, n, ..
                }
                | Command::Backward {
                    window: true, n, ..
                },
            ) => self.window.is_some_and(|w| w.positions() != usize::from(n)),
            (AddressRange, _) => self.out_of_range(cmd, outside),
            (WeightOverlap, Command::LoadW { addr, k, .. }) => {
                self.resident.filter(|t| t.dirty).is_some_and(|old| {
                    let (a, k) = (usize::from(addr), usize::from(k));
                    let overlap = a < old.addr + old.k && old.addr < a + k;
                    overlap && a != old.addr
                })
            }
            _ => false,
        }
    }

    /// ADDRESS_RANGE: whether a line range the command names runs past its
    /// buffer (`outside`), operands in the documented order.
    fn out_of_range(&self, cmd: &Command, outside: impl Fn(BufferId, u16, usize) -> bool) -> bool {
        use BufferId::*;
        match *cmd {
            Command::LoadW { addr, k, .. } => outside(Weights, addr, k.into()),
            Command::Forward {
                x_addr,
                y_addr,
                n,
                window,
                ..
            } => {
                outside(Activations, x_addr, self.span(n, window))
                    || outside(Accumulators, y_addr, n.into())
            }
            Command::Backward {
                mode,
                dy_addr,
                x_addr,
                dx_addr,
                n,
                window,
                ..
            } => {
                let span = self.span(n, window);
                outside(Gradients, dy_addr, n.into())
                    || (mode.computes_dw() && outside(Activations, x_addr, span))
                    || (mode.computes_dx() && outside(Accumulators, dx_addr, span))
            }
            Command::Drain { dw_addr } => self
                .resident
                .is_some_and(|t| outside(Accumulators, dw_addr, t.m)),
            Command::Requant {
                src,
                dst,
                dst_addr,
                count,
            } => {
                outside(Accumulators, src, count.into())
                    || outside(dst_buffer(dst), dst_addr, count.into())
            }
            Command::Act {
                func,
                src,
                dst,
                dst_addr,
                count,
                mask,
                ..
            } => {
                let n = count.into();
                outside(Accumulators, src, n)
                    || outside(dst_buffer(dst), dst_addr, n)
                    || (func.reads_mask() && outside(Activations, mask, n))
            }
            Command::FlushW
            | Command::Update { .. }
            | Command::Window(_)
            | Command::Sync
            | Command::Halt => false,
        }
    }

    /// Lines a stream of `n` positions spans from its base: n, or the
    /// window's `images * h * w` (checked to exist) if `windowed`.
    fn span(&self, n: u16, windowed: bool) -> usize {
        match self.window.filter(|_| windowed) {
            Some(win) => win.span(),
            None => n.into(),
        }
    }
}
