//! `sa_skew`: a bank of delay lines of triangular lengths. It serves all
//! four edges of the array: the x and dy input skews (DESKEW = 0: lane k
//! delayed by k cycles, lane 0 a wire) and the y and dX output deskews
//! (DESKEW = 1: lane k delayed by LANES-1-k cycles). The registers shift
//! every cycle whatever the mode, so a skew never holds stale data.

use crate::ir::*;

/// The module's name.
pub(crate) const SKEW_MODULE: &str = "sa_skew";

/// Registers in lane `k` of a bank of `lanes` lanes.
pub fn lane_len(lanes: usize, k: usize, deskew: bool) -> usize {
    if deskew {
        lanes - 1 - k
    } else {
        k
    }
}

pub fn module() -> Module {
    let (lanes, w, deskew) = (P::new("LANES"), P::new("W"), P::new("DESKEW"));
    let (k, s) = (P::new("k"), P::new("s"));
    let clk = input("clk", Width::bit());
    let rst = input("rst", Width::bit());
    let d = input("d", Width::of(lanes * w));
    let q = output("q", Width::of(lanes * w));
    let (rst_n, d_n, q_n) = (rst.net, d.net, q.net);
    let mut lane = Scope::new();
    lane.comment("L registers; tap[0] is the lane input, tap[L] its output.");
    let len = lane.localparam(
        "L",
        Width::bit(),
        cond(deskew.differs(0), lanes - 1 - k.e(), k),
    );
    let tap = lane.add(wire("tap", Width::of(w)).array(len + 1));
    lane.assign(tap.at(0), d_n.lane(k, w));
    let mut stage = Scope::new();
    let r = stage.plain_register("r", Width::of(w), tap.at(s), rst_n);
    stage.assign(tap.at(s + 1), r);
    lane.gen_for(s.name(), len, "g_stage", stage);
    lane.assign(q_n.lane(k, w), tap.at(len));
    let mut items = Scope::new();
    items.gen_for(k.name(), lanes, "g_lane", lane);
    Module {
        name: SKEW_MODULE.into(),
        doc: vec![
            "sa_skew: triangular delay lines, the input skews and output deskews of sa_top.".into(),
        ],
        params: vec![
            param(lanes.name(), 4, "number of lanes"),
            param(w.name(), 16, "lane width"),
            param(
                deskew.name(),
                0,
                "0: lane k has k registers; 1: lane k has LANES-1-k",
            ),
        ],
        ports: vec![clk, rst, d, q],
        genvars: vec![k.name().into(), s.name().into()],
        items: items.into_items(),
    }
}
