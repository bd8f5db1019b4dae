//! `sa_buffer`: one bank of on-chip buffer, a simple dual-port RAM (one
//! write port, one read port with a registered output). Written the way
//! Yosys and vendor tools infer block RAM: no reset on the storage or the
//! read register, one clock. The accelerator instantiates one or more banks
//! per operand (weights, activations, gradients, accumulators).

use crate::expr::id;
use crate::ir::*;

pub fn module() -> Module {
    let write = Stmt::If {
        cond: id("we"),
        then: vec![set(id("mem").at(id("waddr")), id("wdata"))],
        els: vec![],
    };
    let read = Stmt::If {
        cond: id("re"),
        then: vec![set("rdata_q", id("mem").at(id("raddr")))],
        els: vec![],
    };
    Module {
        name: "sa_buffer".into(),
        doc: vec![
            "sa_buffer: simple dual-port RAM bank, registered read (block-RAM inference).".into(),
        ],
        params: vec![
            param("W", 16, "word width"),
            param("DEPTH", 1024, "words"),
            param("ABITS", 10, "address bits, 2^ABITS >= DEPTH"),
        ],
        ports: vec![
            input("clk", Width::bit()),
            input("we", Width::bit()),
            input("waddr", Width::of("ABITS")),
            input("wdata", Width::of("W")),
            input("re", Width::bit()),
            input("raddr", Width::of("ABITS")),
            output("rdata", Width::of("W")),
        ],
        genvars: vec![],
        items: vec![
            reg("mem", Width::of("W")).array("DEPTH").item(),
            reg("rdata_q", Width::of("W")).item(),
            Item::Comment(
                "Read-before-write on the same address: rdata shows the old word.".into(),
            ),
            Item::Clocked(vec![write, read]),
            assign("rdata", "rdata_q"),
        ],
    }
}
