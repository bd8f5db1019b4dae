//! A command-queue entry of the dense controller (`docs/COMMANDS.md`,
//! Decoder), as one packed register: what the decoder queues and the
//! issue engines take. The layout is [`FIELDS`]; everything else names the
//! fields and lets this file find their bits.

use crate::accel::sizes::*;
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
    /// REQUANT or ACT `w0`: lines through the activation unit (REQUANT
    /// is its identity on every lane of the destination).
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

/// A field of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Kind,
    W0,
    XAddr,
    Lanes,
    Swap,
    Evict,
    EvictLr,
    First,
    FirstLr,
    /// A pass's window (`crate::accel::window`), as at its decode.
    Win,
}

impl Field {
    pub(super) fn name(self) -> &'static str {
        match self {
            Field::Kind => "kind",
            Field::W0 => "w0",
            Field::XAddr => "x_addr",
            Field::Lanes => "lanes",
            Field::Swap => "swap",
            Field::Evict => "evict",
            Field::EvictLr => "evict_lr",
            Field::First => "first",
            Field::FirstLr => "first_lr",
            Field::Win => "win",
        }
    }
}

/// The entry's fields, most significant first: the kind, the command's
/// word 0, word 1's activation line (BACKWARD's x address, ACT's mask),
/// the lanes a line write writes (ACT's `lanes`; REQUANT's, all of its
/// destination's), and the decoder's marks (swap; evict with update and
/// its lr; update first and its lr), and a pass's window.
pub(super) const FIELDS: [(Field, u32); 10] = [
    (Field::Kind, Kind::BITS),
    (Field::W0, WORD),
    (Field::XAddr, ADDR_BITS),
    (Field::Lanes, TILE_BITS),
    (Field::Swap, 1),
    (Field::Evict, 1),
    (Field::EvictLr, LR_SHIFT_BITS),
    (Field::First, 1),
    (Field::FirstLr, LR_SHIFT_BITS),
    (Field::Win, crate::accel::window::BITS),
];

/// Every field, in [`FIELDS`] order.
pub(super) const ALL_FIELDS: [Field; FIELDS.len()] = {
    let mut names = [Field::Kind; FIELDS.len()];
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

/// The `<prefix>_<field>` wires of an unpacked entry.
pub(super) struct Unpacked(Vec<(Field, Net)>);

impl Unpacked {
    pub fn get(&self, f: Field) -> Net {
        self.0
            .iter()
            .find(|(g, _)| *g == f)
            .unwrap_or_else(|| panic!("entry field {} not unpacked", f.name()))
            .1
    }
}

/// `<prefix>_<field>` wires unpacking the fields `used` of the entry
/// `reg`; with `partly_used` each is followed by its `_unused` copy.
pub(super) fn unpack(
    m: &mut Scope,
    prefix: &str,
    reg: Net,
    used: &[Field],
    partly_used: bool,
) -> Unpacked {
    let mut lsb = BITS;
    let mut nets = Vec::new();
    for (field, bits) in FIELDS {
        lsb -= bits;
        if !used.contains(&field) {
            continue;
        }
        let value = if bits == 1 {
            reg.at(lsb as i64)
        } else {
            reg.bits((lsb + bits - 1) as i64, lsb as i64)
        };
        let d = wire(
            &format!("{prefix}_{}", field.name()),
            Width::of(bits as i64),
        )
        .init(value);
        let net = if partly_used {
            m.partly_used(d)
        } else {
            m.add(d)
        };
        nets.push((field, net));
    }
    Unpacked(nets)
}

/// An entry of kind `kind` with the fields `set` names (others 0).
pub(super) fn pack(kinds: &Enum<Kind>, kind: Kind, set: &[(Field, Expr)]) -> Expr {
    for (f, _) in set {
        assert!(*f != Field::Kind, "an entry's kind is its own argument");
    }
    let parts: Vec<Expr> = FIELDS
        .iter()
        .map(|(field, bits)| {
            if *field == Field::Kind {
                return kinds.of(kind).e();
            }
            set.iter()
                .find(|(n, _)| n == field)
                .map_or_else(|| lit(*bits, 0), |(_, e)| e.clone())
        })
        .collect();
    Expr::Concat(parts)
}

/// `K_*`: the kind codes (each kind's place in [`Kind::ALL`]).
pub(super) fn constants(m: &mut Scope) -> Enum<Kind> {
    Enum::declare(m, &Kind::ALL, Kind::name, Kind::BITS)
}
