//! The control a wave carries through a dense array (`docs/ARCHITECTURE.md`,
//! The wave, Registers of a dense array): the `wave_*` inputs of `sa_top`,
//! the word the control skew delays, and the control registers of each PE.
//! The generator builds the ports, the word and its unpacking from
//! [`WaveField::ALL`], and the testbench packs the emulator's wave the same
//! way, so the layout exists only here.

use crate::mode::{load_row_bits, WAVE_OP_BITS};
use sysgrad_config::LR_SHIFT_BITS;

/// One field of the control word `{op, swap, update, lr, load, load_row}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaveField {
    /// What the wave's data column does: a code of [`crate::Mode::WAVE_OPS`], or a bubble.
    Op,
    /// The wave is the first of a new weight tile.
    Swap,
    /// With `Swap`: the weight switched out leaves SGD-updated.
    Update,
    /// The learning-rate shift of `Update`.
    Lr,
    /// The wave carries an exchange slot.
    Load,
    /// The array row of the slot.
    LoadRow,
}

impl WaveField {
    /// The fields in word order, most significant first (op in the top
    /// bits, load_row in the bottom ones).
    pub const ALL: [WaveField; 6] = [
        WaveField::Op,
        WaveField::Swap,
        WaveField::Update,
        WaveField::Lr,
        WaveField::Load,
        WaveField::LoadRow,
    ];

    /// The fields with a `wave_*` input of their own, in word order: all but
    /// the learning-rate shift, which rides on the `lr_shift` port.
    pub fn wave_inputs() -> impl Iterator<Item = WaveField> {
        WaveField::ALL.into_iter().filter(|f| *f != WaveField::Lr)
    }

    /// The width of the field where it does not depend on the array;
    /// `None` for `LoadRow`, which has [`load_row_bits`] of the rows.
    pub fn fixed_bits(self) -> Option<u32> {
        match self {
            WaveField::Op => Some(WAVE_OP_BITS),
            WaveField::Lr => Some(LR_SHIFT_BITS),
            WaveField::LoadRow => None,
            WaveField::Swap | WaveField::Update | WaveField::Load => Some(1),
        }
    }

    /// The width of the field on an array of `rows` rows.
    pub fn bits(self, rows: usize) -> u32 {
        self.fixed_bits().unwrap_or_else(|| load_row_bits(rows))
    }

    /// The lowest bit of the field in the word, on an array of `rows` rows.
    pub fn lsb(self, rows: usize) -> u32 {
        WaveField::ALL
            .iter()
            .rev()
            .take_while(|f| **f != self)
            .map(|f| f.bits(rows))
            .sum()
    }

    /// The `sa_top` input that carries the field in STREAM cycles (the
    /// learning-rate shift is the `lr_shift` port the `none` array has too).
    pub fn port(self) -> &'static str {
        match self {
            WaveField::Op => "wave_op",
            WaveField::Swap => "wave_swap",
            WaveField::Update => "wave_update",
            WaveField::Lr => "lr_shift",
            WaveField::Load => "wave_load",
            WaveField::LoadRow => "wave_load_row",
        }
    }
}

/// Width of the whole control word on an array of `rows` rows.
pub fn control_bits(rows: usize) -> u32 {
    WaveField::ALL.iter().map(|f| f.bits(rows)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_tile_the_word_with_op_on_top() {
        for rows in [1, 2, 3, 16, 64] {
            let mut next = 0;
            for f in WaveField::ALL.iter().rev() {
                assert_eq!(f.lsb(rows), next, "{f:?} on {rows} rows");
                next += f.bits(rows);
            }
            assert_eq!(next, control_bits(rows));
            let op = WaveField::Op;
            assert_eq!(op.lsb(rows) + op.bits(rows), control_bits(rows));
        }
        assert_eq!(control_bits(16), 3 + 1 + 1 + 6 + 1 + 4);
        assert_eq!(WaveField::LoadRow.bits(1), 1);
    }
}
