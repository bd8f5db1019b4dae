//! A command-queue entry of the dense controller (`docs/COMMANDS.md`,
//! Decoder), as one packed register: what the decoder queues and the
//! issue engines take. The layout is [`FIELDS`]; everything else names the
//! fields and lets this file find their bits.

use super::super::sizes::*;
use super::super::wire_of;
use crate::ir::*;
use sysgrad_config::LR_SHIFT_BITS;

/// What an entry asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Exchange the tile of LOAD_W `w0` into the shadow registers.
    Load,
    /// Exchange zeros in (FLUSH_W, and before a stop), reading nothing.
    ZeroLoad,
    /// The waves of FORWARD or BACKWARD `w0` (and `x_addr`).
    Stream,
    /// A bubble wave carrying a swap (FLUSH_W, UPDATE, stop).
    Swap,
    /// DRAIN `w0`.
    Drain,
    /// REQUANT `w0`.
    Requant,
    /// HALT or a fault.
    Stop,
}

impl Kind {
    pub(super) const ALL: [Kind; 7] = [
        Kind::Load,
        Kind::ZeroLoad,
        Kind::Stream,
        Kind::Swap,
        Kind::Drain,
        Kind::Requant,
        Kind::Stop,
    ];
    pub(super) const BITS: u32 = 3;

    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Load => "K_LOAD",
            Kind::ZeroLoad => "K_ZERO_LOAD",
            Kind::Stream => "K_STREAM",
            Kind::Swap => "K_SWAP",
            Kind::Drain => "K_DRAIN",
            Kind::Requant => "K_REQUANT",
            Kind::Stop => "K_STOP",
        }
    }
}

const _: () = assert!(Kind::ALL.len() <= 1 << Kind::BITS);

/// The entry's fields, most significant first: the kind, the command's
/// word 0 and BACKWARD's x address, and the decoder's marks (swap; evict
/// with update and its lr; update first and its lr).
pub(super) const FIELDS: [(&str, u32); 8] = [
    ("kind", Kind::BITS),
    ("w0", WORD),
    ("x_addr", ADDR_BITS),
    ("swap", 1),
    ("evict", 1),
    ("evict_lr", LR_SHIFT_BITS),
    ("first", 1),
    ("first_lr", LR_SHIFT_BITS),
];

/// The fields' names, in [`FIELDS`] order.
pub(super) const FIELD_NAMES: [&str; 8] = {
    let mut names = [""; 8];
    let mut i = 0;
    while i < FIELDS.len() {
        names[i] = FIELDS[i].0;
        i += 1;
    }
    names
};

/// The width of an entry.
pub(super) const BITS: u32 = {
    let mut total = 0;
    let mut i = 0;
    while i < FIELDS.len() {
        total += FIELDS[i].1;
        i += 1;
    }
    total
};

fn width(name: &str) -> u32 {
    FIELDS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no entry field {name}"))
        .1
}

/// `<prefix>_<field>` wires unpacking the fields `used` of the entry `reg`.
pub(super) fn unpack(prefix: &str, reg: &str, used: &[&str]) -> Vec<Item> {
    let mut lsb = BITS;
    FIELDS
        .iter()
        .filter_map(|(name, bits)| {
            lsb -= bits;
            if !used.contains(name) {
                return None;
            }
            let net = format!("{prefix}_{name}");
            let value = if *bits == 1 {
                id(reg).at(lsb as i64)
            } else {
                id(reg).bits((lsb + bits - 1) as i64, lsb as i64)
            };
            Some(wire_of(&net, *bits as i64, value))
        })
        .collect()
}

/// An entry of kind `kind` with the fields `set` names (others 0).
pub(super) fn pack(kind: Kind, set: &[(&str, Expr)]) -> Expr {
    for (name, _) in set {
        assert!(*name != "kind" && width(name) > 0, "entry field {name}");
    }
    let parts: Vec<Expr> = FIELDS
        .iter()
        .map(|(name, bits)| {
            if *name == "kind" {
                return id(kind.name());
            }
            set.iter()
                .find(|(n, _)| n == name)
                .map_or_else(|| lit(*bits, 0), |(_, e)| e.clone())
        })
        .collect();
    Expr::Concat(parts)
}

/// `K_*`: the kind codes (each kind's place in [`Kind::ALL`]).
pub(super) fn constants() -> Vec<Item> {
    super::enum_constants(&Kind::ALL.map(Kind::name), Kind::BITS)
}

/// `<prefix>_kind == k`.
pub(super) fn kind_is(prefix: &str, k: Kind) -> Expr {
    id(&format!("{prefix}_kind")).equals(k.name())
}
