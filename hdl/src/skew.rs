//! `sa_skew`: a bank of delay lines of triangular lengths. It serves all
//! four edges of the array: the x and dy input skews (DESKEW = 0: lane k
//! delayed by k cycles, lane 0 a wire) and the y and dX output deskews
//! (DESKEW = 1: lane k delayed by LANES-1-k cycles). The registers shift
//! every cycle whatever the mode, so a skew never holds stale data.

use crate::ir::*;

/// Registers in lane `k` of a bank of `lanes` lanes.
pub fn lane_len(lanes: usize, k: usize, deskew: bool) -> usize {
    if deskew {
        lanes - 1 - k
    } else {
        k
    }
}

pub fn module() -> Module {
    let (k, s, tap) = (id("k"), id("s"), id("tap"));
    let mut stage = plain_register("r", Width::of("W"), tap.at(s.clone()));
    stage.push(assign(tap.at(s + 1), "r"));
    let len = cond(
        id("DESKEW").differs(0),
        id("LANES") - 1 - k.clone(),
        k.clone(),
    );
    let lane = vec![
        Item::Comment("L registers; tap[0] is the lane input, tap[L] its output.".into()),
        localparam("L", Width::bit(), len),
        wire("tap", Width::of("W")).array(id("L") + 1).item(),
        assign(tap.at(0), id("d").lane(k.clone(), "W")),
        gen_for("s", "L", "g_stage", stage),
        assign(id("q").lane(k, "W"), tap.at("L")),
    ];
    Module {
        name: "sa_skew".into(),
        doc: vec![
            "sa_skew: triangular delay lines, the input skews and output deskews of sa_top.".into(),
        ],
        params: vec![
            param("LANES", 4, "number of lanes"),
            param("W", 16, "lane width"),
            param(
                "DESKEW",
                0,
                "0: lane k has k registers; 1: lane k has LANES-1-k",
            ),
        ],
        ports: vec![
            input("clk", Width::bit()),
            input("rst", Width::bit()),
            input("d", Width::of(id("LANES") * "W")),
            output("q", Width::of(id("LANES") * "W")),
        ],
        genvars: vec!["k".into(), "s".into()],
        items: vec![gen_for("k", "LANES", "g_lane", lane)],
    }
}
