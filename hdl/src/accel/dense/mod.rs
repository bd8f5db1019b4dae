//! The controller of a dense `sa_accel` (`docs/COMMANDS.md`, Dense
//! controller): the decoder and its command queue ([`decoder`], entries
//! laid out in [`entry`]), the two issue engines ([`engines`]) and what
//! their decisions read and write ([`outputs`]); [`counts`] charges the
//! counters. It implements the rules `sysgrad_emulator::issue` runs, net
//! for step, so the co-simulation can compare the array's inputs in every
//! cycle.

mod counts;
mod decoder;
mod engines;
mod entry;
mod outputs;

use super::control::{command_constants, mode_constants};
use crate::ir::*;
use sysgrad_isa::Mode;

pub(in crate::accel) use counts::increment;

/// Localparams `names[i] = i` in `bits` bits: the codes of a state.
fn enum_constants(names: &[&str], bits: u32) -> Vec<Item> {
    assert!(names.len() <= 1 << bits, "{names:?} in {bits} bits");
    names
        .iter()
        .enumerate()
        .map(|(code, name)| localparam(name, Width::of(bits as i64), lit(bits, code as u64)))
        .collect()
}

/// `items`, each net followed by a `<net>_unused` copy: nets that hold a
/// whole command field (16-bit line addresses, the 64-bit word) of which
/// the buffers or the engines use only some bits. Verilator's default
/// `--unused-regexp` exempts `*_unused`, so the rest of the design stays
/// checked without a waiver.
pub(super) fn partly_used(items: Vec<Item>) -> Vec<Item> {
    let mut v = Vec::new();
    for item in items {
        let sink = match &item {
            Item::Net(n) => Some(
                wire(&format!("{}_unused", n.name), n.width.clone())
                    .init(id(&n.name))
                    .item(),
            ),
            _ => None,
        };
        v.push(item);
        v.extend(sink);
    }
    v
}

pub(super) fn items() -> Vec<Item> {
    let mut v = vec![Item::Comment(
        "Dense controller: modes, opcodes, error codes, entry kinds and engine states.".into(),
    )];
    // The array's modes (IDLE, UPDATE, DRAIN, STREAM) and the waves' ops.
    v.extend(mode_constants(
        &[Mode::DENSE.as_slice(), Mode::WAVE_OPS.as_slice()].concat(),
    ));
    // The dense PE has no multiplier register (ArrayConfig refuses one).
    v.extend(command_constants(
        sysgrad_isa::timing::RESULT_LATENCY.without_product_stages(),
    ));
    v.extend(entry::constants());
    v.extend(engines::constants());
    v.extend(decoder::items());
    v.extend(engines::items());
    v.extend(outputs::items());
    v
}
