//! A dense array's control word in Verilog terms: the layout of
//! `sysgrad_isa::wave` with the row field `RB` bits wide, `RB` being the
//! parameter of `sa_top` and `sa_pe` (max(1, ceil(log2 R))), so that the
//! module texts do not depend on R.

use crate::ir::*;
use crate::params::RB;
use sysgrad_isa::wave::WaveField;

/// `RB + k`, or just one of them where the other is 0.
fn rb_plus(rb: bool, k: u32) -> Expr {
    match (rb, k) {
        (false, k) => int(k.into()),
        (true, 0) => RB.e(),
        (true, k) => RB + int(k.into()),
    }
}

/// The width of `fields` together, as `RB + k` if the row field is among them.
fn bits_of<'a>(fields: impl Iterator<Item = &'a WaveField>) -> Expr {
    let (mut rb, mut k) = (false, 0);
    for f in fields {
        match f.fixed_bits() {
            Some(b) => k += b,
            None => rb = true,
        }
    }
    rb_plus(rb, k)
}

/// The width of `field`: a number, or `RB`.
pub fn field_bits(field: WaveField) -> Expr {
    bits_of([field].iter())
}

/// The net width of `field` (no range for a single bit).
pub fn field_width(field: WaveField) -> Width {
    match field.fixed_bits() {
        Some(1) => Width::bit(),
        _ => Width::of(field_bits(field)),
    }
}

/// The width of the whole word, `RB + 12`.
pub fn word_bits() -> Expr {
    bits_of(WaveField::ALL.iter())
}

/// `field` of the control word `word`: a bit or a part select.
pub fn field(word: &Expr, field: WaveField) -> Expr {
    let below = WaveField::ALL.iter().rev().take_while(|f| **f != field);
    let lsb = bits_of(below);
    match field.fixed_bits() {
        Some(1) => word.at(lsb),
        _ => word.part(lsb, field_bits(field)),
    }
}

/// The word `{op, swap, update, lr, load, load_row}` from one net per
/// field, named by `name`.
pub fn pack(name: impl Fn(WaveField) -> Expr) -> Expr {
    Expr::Concat(WaveField::ALL.iter().map(|f| name(*f)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_selected_from_the_bottom_up() {
        let c = Net::named("c_in").e();
        assert_eq!(word_bits().to_string(), "RB + 12");
        assert_eq!(field(&c, WaveField::LoadRow).to_string(), "c_in[0 +: RB]");
        assert_eq!(field(&c, WaveField::Load).to_string(), "c_in[RB]");
        assert_eq!(field(&c, WaveField::Lr).to_string(), "c_in[RB+1 +: 6]");
        assert_eq!(field(&c, WaveField::Op).to_string(), "c_in[RB+9 +: 3]");
        assert_eq!(
            pack(|f| Net::named(f.port()).e()).to_string(),
            "{wave_op, wave_swap, wave_update, lr_shift, wave_load, wave_load_row}"
        );
    }
}
