//! `sa_requant`: one lane of the REQUANT command, an accumulator value
//! (2F fractional bits) to data (F fractional bits): round half up at
//! shift FRAC, then saturate to DW bits. `fixed::requantize` is the same
//! rule in Rust.

use crate::ir::*;

pub fn module() -> Module {
    let (aw, dw) = (|| id("AW"), || id("DW"));
    let a = id("a");
    let r = id("r");
    let high = r.bits(aw(), dw() - 1);
    let high_bits = || aw() + 2 - dw();
    Module {
        name: "sa_requant".into(),
        doc: vec![
            "sa_requant: accumulator to data, round half up at FRAC, saturate (REQUANT).".into(),
        ],
        params: vec![
            param("DW", 16, "data width"),
            param("AW", 40, "accumulator width"),
            param("FRAC", 8, "fractional bits of data (< DW)"),
        ],
        ports: vec![
            input("a", Width::of(aw())).signed(),
            output("q", Width::of(dw())).signed(),
        ],
        genvars: vec![],
        items: vec![
            localparam("ONE", Width::of(aw() + 1), int(1)),
            Item::Comment("2^(FRAC-1), or 0 for FRAC = 0.".into()),
            localparam("HALF", Width::of(aw() + 1), (id("ONE") << "FRAC").ashr(1)),
            Item::Comment(
                "FRAC < DW <= AW/2, so the rounding sum cannot overflow AW+1 bits.".into(),
            ),
            wire("r", Width::of(aw() + 1))
                .signed()
                .init(
                    (call("$signed", [cat([a.at(aw() - 1), a.clone()])])
                        + call("$signed", [id("HALF")]))
                    .ashr("FRAC"),
                )
                .item(),
            wire("fits", Width::bit())
                .init(
                    high.clone()
                        .equals(zeros(high_bits()))
                        .or(high.equals(ones(high_bits()))),
                )
                .item(),
            assign(
                "q",
                cond("fits", r.bits(dw() - 1, 0), clamp_value(r.at(aw()), dw())),
            ),
        ],
    }
}
