//! `sa_skew`: a bank of delay lines of triangular lengths. It serves all
//! four edges of the array: the x and dy input skews (lane k delayed by k
//! cycles, lane 0 a wire) and the y and dX output deskews (lane k delayed by
//! LANES-1-k cycles plus one output register, EXTRA = 1).

use crate::ir::*;

/// Registers in lane `k` of a bank of `lanes` lanes.
pub fn lane_len(lanes: usize, k: usize, deskew: bool, extra: usize) -> usize {
    extra + if deskew { lanes - 1 - k } else { k }
}

pub fn module() -> Module {
    let stage = vec![
        reg("r", Width::of("W")).item(),
        Item::Clocked(vec![Stmt::If {
            cond: "rst".into(),
            then: vec![nb("r", Expr::zeros("W"))],
            els: vec![nb("r", "tap[s]")],
        }]),
        assign("tap[s+1]", "r"),
    ];
    let lane = vec![
        Item::Localparam {
            name: "L".into(),
            width: Width::bit(),
            value: "EXTRA + ((DESKEW != 0) ? LANES - 1 - k : k)".into(),
        },
        Item::Comment("tap[0] is the lane input, tap[L] its output.".into()),
        wire("tap", Width::of("W")).array("L+1").item(),
        assign("tap[0]", Expr::lane("d", "k", "W")),
        Item::GenFor {
            var: "s".into(),
            count: "L".into(),
            label: "g_stage".into(),
            body: stage,
        },
        assign(Expr::lane("q", "k", "W"), "tap[L]"),
    ];
    Module {
        name: "sa_skew".into(),
        doc: vec!["sa_skew: triangular delay lines (input skew / output deskew).".into()],
        params: vec![
            param("LANES", 4, "number of lanes"),
            param("W", 16, "lane width"),
            param(
                "DESKEW",
                0,
                "0: lane k has k stages; 1: lane k has LANES-1-k",
            ),
            param(
                "EXTRA",
                0,
                "stages added to every lane (1 = output register)",
            ),
        ],
        ports: vec![
            input("clk", Width::bit()),
            input("rst", Width::bit()),
            input("d", Width::of("LANES*W")),
            output("q", Width::of("LANES*W")),
        ],
        genvars: vec!["k".into(), "s".into()],
        items: vec![Item::GenFor {
            var: "k".into(),
            count: "LANES".into(),
            label: "g_lane".into(),
            body: lane,
        }],
    }
}
