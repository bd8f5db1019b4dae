//! `sa_buffer`: one bank of on-chip buffer, a simple dual-port RAM (one
//! write port, one read port with a registered output). Written the way
//! Yosys and vendor tools infer block RAM: no reset on the storage or the
//! read register, one clock. The accelerator instantiates one or more banks
//! per operand (weights, activations, gradients, accumulators).

use crate::ir::*;

/// The module's name.
pub(crate) const BUFFER_MODULE: &str = "sa_buffer";

/// The bank's ports, as the accelerator connects them.
pub(crate) struct BufferPorts {
    pub clk: Port,
    pub we: Port,
    pub waddr: Port,
    pub wdata: Port,
    pub re: Port,
    pub raddr: Port,
    pub rdata: Port,
}

impl BufferPorts {
    pub fn new() -> BufferPorts {
        let (w, abits) = (P::new("W"), P::new("ABITS"));
        BufferPorts {
            clk: input("clk", Width::bit()),
            we: input("we", Width::bit()),
            waddr: input("waddr", Width::of(abits)),
            wdata: input("wdata", Width::of(w)),
            re: input("re", Width::bit()),
            raddr: input("raddr", Width::of(abits)),
            rdata: output("rdata", Width::of(w)),
        }
    }
}

pub fn module() -> Module {
    let p = BufferPorts::new();
    let (w, depth) = (P::new("W"), P::new("DEPTH"));
    let mut m = Scope::new();
    let mem = m.add(reg("mem", Width::of(w)).array(depth));
    let rdata_q = m.reg("rdata_q", Width::of(w));
    m.comment("Read-before-write on the same address: rdata shows the old word.");
    m.clocked(vec![
        when(p.we.net, vec![set(mem.at(p.waddr.net), p.wdata.net)]),
        when(p.re.net, vec![set(rdata_q, mem.at(p.raddr.net))]),
    ]);
    m.assign(p.rdata.net, rdata_q);
    Module {
        name: BUFFER_MODULE.into(),
        doc: vec![
            "sa_buffer: simple dual-port RAM bank, registered read (block-RAM inference).".into(),
        ],
        params: vec![
            param(w.name(), 16, "word width"),
            param(depth.name(), 1024, "words"),
            param("ABITS", 10, "address bits, 2^ABITS >= DEPTH"),
        ],
        ports: vec![p.clk, p.we, p.waddr, p.wdata, p.re, p.raddr, p.rdata],
        genvars: vec![],
        items: m.into_items(),
    }
}
