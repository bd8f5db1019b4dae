//! The buffers of `sa_accel`: the command memory and the four data
//! buffers, each one or more banks of `sa_buffer`, and the mux of their
//! ports between the controller (`<b>_ctl_*`) and the DMA (while
//! `dma_on`): they never use a buffer in the same cycle (a DMA cannot
//! start while the controller runs, nor a run during a DMA).

use crate::buffer::BufferPorts;
use crate::ir::*;
use crate::params::{AW, A_DEPTH, C, C_DEPTH, DW, G_DEPTH, L, R, W_DEPTH, X_DEPTH};
use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::{self, DmaTarget};

/// How many lanes (banks) a buffer has.
#[derive(Clone, Copy)]
pub(super) enum Lanes {
    One,
    Rows,
    Cols,
    /// `LA`: max(R, C), the accumulator buffer's.
    Acc,
}

/// How wide a buffer's words are.
#[derive(Clone, Copy)]
pub(super) enum Word {
    /// A 64-bit command word.
    Command,
    Data,
    Acc,
}

impl Word {
    pub fn expr(self) -> Expr {
        match self {
            Word::Command => numeral(64),
            Word::Data => DW.e(),
            Word::Acc => AW.e(),
        }
    }
    fn text(self) -> &'static str {
        match self {
            Word::Command => "64",
            Word::Data => "DW",
            Word::Acc => "AW",
        }
    }
}

/// One of the buffers around the array, as the Verilog names it.
pub(super) struct Buf {
    /// Net prefix: `c`, `w`, `x`, `g`, `a`.
    pub prefix: &'static str,
    pub lanes: Lanes,
    pub word: Word,
    pub depth: P,
    pub target: DmaTarget,
}

/// The buffers in DMA target order.
pub(super) const BUFFERS: [Buf; 5] = [
    Buf {
        prefix: "c",
        lanes: Lanes::One,
        word: Word::Command,
        depth: C_DEPTH,
        target: DmaTarget::Commands,
    },
    Buf {
        prefix: "w",
        lanes: Lanes::Cols,
        word: Word::Data,
        depth: W_DEPTH,
        target: DmaTarget::Weights,
    },
    Buf {
        prefix: "x",
        lanes: Lanes::Rows,
        word: Word::Data,
        depth: X_DEPTH,
        target: DmaTarget::Activations,
    },
    Buf {
        prefix: "g",
        lanes: Lanes::Cols,
        word: Word::Data,
        depth: G_DEPTH,
        target: DmaTarget::Gradients,
    },
    Buf {
        prefix: "a",
        lanes: Lanes::Acc,
        word: Word::Acc,
        depth: A_DEPTH,
        target: DmaTarget::Accumulators,
    },
];

impl Buf {
    fn n(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.prefix)
    }
    pub fn lanes(&self, la: Const) -> Expr {
        match self.lanes {
            Lanes::One => numeral(1),
            Lanes::Rows => R.e(),
            Lanes::Cols => C.e(),
            Lanes::Acc => la.e(),
        }
    }
    fn lanes_text(&self) -> &'static str {
        match self.lanes {
            Lanes::One => "1",
            Lanes::Rows => "R",
            Lanes::Cols => "C",
            Lanes::Acc => "LA",
        }
    }
    fn bus(&self, la: Const) -> Expr {
        self.lanes(la) * self.word.expr()
    }
    pub fn of(target: DmaTarget) -> &'static Buf {
        BUFFERS
            .iter()
            .find(|b| b.target == target)
            .expect("a buffer per target")
    }
}

/// What a data buffer's words are to the DMA (`sysgrad_isa::host::Word`
/// of its target, `docs/HOST.md`): a signed value as wide as the word
/// (fixed point), or a pattern of a float format in its low bits, zeros
/// above (so a beat is checked, stored and read back by different rules).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct BeatWord {
    /// The word width parameter: `DW` or `AW`.
    pub width: P,
    /// Its value for this configuration (`DmaTarget::word_bits`): how
    /// much zero padding a pattern has above it.
    pub width_bits: u32,
    pub word: host::Word,
}

impl BeatWord {
    fn of(b: &Buf, cfg: &ArrayConfig) -> BeatWord {
        BeatWord {
            width: match b.word {
                Word::Acc => AW,
                _ => DW,
            },
            width_bits: b.target.word_bits(cfg),
            word: b.target.word(cfg),
        }
    }
    /// The names of its nets: `dw` or `aw` for a signed word,
    /// `dw_p8` for an 8-bit pattern in a DW-bit word.
    pub fn suffix(self) -> String {
        let w = self.width.name().to_lowercase();
        match self.word {
            host::Word::Signed(_) => w,
            host::Word::Pattern(bits) => format!("{w}_p{bits}"),
        }
    }
    /// The bits of a word that a pattern leaves clear, if any: a packed
    /// write's field is stored under the mask of the pattern's bits.
    pub fn pattern_mask(self) -> Option<Expr> {
        match self.word {
            host::Word::Pattern(bits) if bits < self.width_bits => {
                Some(hex(self.width_bits, (1u64 << bits) - 1))
            }
            _ => None,
        }
    }
}

/// The controller's side of one buffer's ports (`<b>_ctl_*`): driven by
/// the controller, read by the mux, which is built first.
#[derive(Clone, Copy)]
pub(crate) struct CtlPort {
    pub re: Net,
    pub raddr: Net,
    pub we: Net,
    pub waddr: Net,
    pub wdata: Net,
}

/// The controller's side of every buffer.
pub(crate) struct CtlPorts(Vec<(DmaTarget, CtlPort)>);

impl CtlPorts {
    pub fn named() -> CtlPorts {
        CtlPorts(
            BUFFERS
                .iter()
                .map(|b| {
                    let n = |s: &str| Net::named(&b.n(&format!("ctl_{s}")));
                    let port = CtlPort {
                        re: n("re"),
                        raddr: n("raddr"),
                        we: n("we"),
                        waddr: n("waddr"),
                        wdata: n("wdata"),
                    };
                    (b.target, port)
                })
                .collect(),
        )
    }
    pub fn of(&self, t: DmaTarget) -> CtlPort {
        self.0
            .iter()
            .find(|(k, _)| *k == t)
            .expect("every buffer")
            .1
    }
}

/// What the DMA drives into the buffers' muxes (the host interface
/// defines these after the buffers are built).
pub(super) struct DmaNets {
    pub dma_on: Net,
    pub dma_tgt: Net,
    pub dma_re: Net,
    /// The DMA holds the read ports: it reads, or its read data waits
    /// to move on. The command memory's port is the controller's in any
    /// other cycle, also during a DMA write (the `none` controller reads
    /// `PROG_START` while stopped).
    pub dma_rd_hold: Net,
    pub dma_line: Net,
    pub dma_wbeat: Net,
    pub dma_wmask: Net,
    pub dma_packed: Net,
    /// A packed write beat's lanes placed in the line, per word width.
    pub dma_pkw_dw: Net,
    pub dma_pkw_aw: Net,
    /// What each data buffer's words are, in DMA target order.
    words: Vec<(DmaTarget, BeatWord)>,
}

impl DmaNets {
    pub fn named(cfg: &ArrayConfig) -> DmaNets {
        let n = Net::named;
        let words = BUFFERS
            .iter()
            .filter(|b| !matches!(b.word, Word::Command))
            .map(|b| (b.target, BeatWord::of(b, cfg)))
            .collect();
        DmaNets {
            dma_on: n("dma_on"),
            dma_tgt: n("dma_tgt"),
            dma_re: n("dma_re"),
            dma_rd_hold: n("dma_rd_hold"),
            dma_line: n("dma_line"),
            dma_wbeat: n("dma_wbeat"),
            dma_wmask: n("dma_wmask"),
            dma_packed: n("dma_packed"),
            dma_pkw_dw: n("dma_pkw_dw"),
            dma_pkw_aw: n("dma_pkw_aw"),
            words,
        }
    }
    /// What the words of data buffer `t` are.
    pub fn word(&self, t: DmaTarget) -> BeatWord {
        self.words
            .iter()
            .find(|(k, _)| *k == t)
            .expect("a data buffer")
            .1
    }
    /// The kinds of word of the data buffers, each once, in target order
    /// (the DMA checks a write beat once per kind).
    pub fn kinds(&self) -> Vec<BeatWord> {
        let mut kinds: Vec<BeatWord> = Vec::new();
        for (_, w) in &self.words {
            if !kinds.contains(w) {
                kinds.push(*w);
            }
        }
        kinds
    }
    /// `dma_val_<suffix>`: a single write beat as a word of kind `w`
    /// (saturated, or its pattern's bits), which the host interface
    /// defines.
    pub fn value(&self, w: BeatWord) -> Net {
        Net::named(&format!("dma_val_{}", w.suffix()))
    }
}

/// One buffer's ports after the mux, and its address width.
#[derive(Clone, Copy)]
pub(crate) struct BufNets {
    pub ab: Const,
    pub re: Net,
    pub raddr: Net,
    pub we: Net,
    pub waddr: Net,
    pub wdata: Net,
    pub rdata: Net,
}

/// Every buffer's ports.
pub(crate) struct Buffers(Vec<(DmaTarget, BufNets)>);

impl Buffers {
    pub fn of(&self, t: DmaTarget) -> BufNets {
        self.0
            .iter()
            .find(|(k, _)| *k == t)
            .expect("every buffer")
            .1
    }
}

/// The banks of one buffer and the mux of its ports between the DMA
/// (while `dma_on`) and the controller (16-bit addresses).
fn buffer(
    m: &mut Scope,
    b: &Buf,
    la: Const,
    ctl: CtlPort,
    dma: &DmaNets,
    tdata: Net,
    clk: Net,
) -> BufNets {
    let lanes = || b.lanes(la);
    let dma_sel = dma.dma_tgt.equals(lit(3, b.target.code().into()));
    m.comment(format!(
        "Buffer {:?}: {} lane(s) of {} bits, {} lines.",
        b.target,
        b.lanes_text(),
        b.word.text(),
        b.depth.name()
    ));
    let ab = m.localparam(
        &format!("{}_AB", b.prefix.to_uppercase()),
        Width::bit(),
        cond(b.depth.greater(1), call("$clog2", [b.depth.e()]), int(1)),
    );
    let dma_value = match b.word {
        Word::Command => tdata.e(),
        Word::Data | Word::Acc => {
            let pkw = match b.word {
                Word::Acc => dma.dma_pkw_aw,
                _ => dma.dma_pkw_dw,
            };
            let word = dma.word(b.target);
            let fields = pkw.bits(b.bus(la) - 1, 0);
            // A pattern's field keeps its pattern's bits (docs/HOST.md).
            let packed = match word.pattern_mask() {
                Some(mask) => fields.bit_and(repeat(lanes(), mask)),
                None => fields,
            };
            cond(dma.dma_packed, packed, repeat(lanes(), dma.value(word)))
        }
    };
    // Who holds the read port: the DMA while it transfers; for the
    // command memory, only while it reads.
    let dma_reads = match b.target {
        DmaTarget::Commands => dma.dma_rd_hold,
        _ => dma.dma_on,
    };
    let re = m.flag(
        &b.n("re"),
        cond(dma_reads, dma.dma_re.and(dma_sel.clone()), ctl.re),
    );
    // An address: the DMA's line or the controller's, in the bank's bits.
    let addr = |m: &mut Scope, name: &str, dma_holds: Net, ctl_addr: Net| {
        m.wire_of(
            &b.n(name),
            ab,
            cond(
                dma_holds,
                dma.dma_line.bits(ab - 1, 0),
                ctl_addr.bits(ab - 1, 0),
            ),
        )
    };
    let raddr = addr(m, "raddr", dma_reads, ctl.raddr);
    let we = m.wire_of(
        &b.n("we"),
        lanes(),
        cond(
            dma.dma_on,
            cond(
                dma.dma_wbeat.and(dma_sel),
                dma.dma_wmask.bits(lanes() - 1, 0),
                zeros(lanes()),
            ),
            ctl.we,
        ),
    );
    let waddr = addr(m, "waddr", dma.dma_on, ctl.waddr);
    let wdata = m.wire_of(
        &b.n("wdata"),
        b.bus(la),
        cond(dma.dma_on, dma_value, ctl.wdata),
    );
    let rdata = m.wire(&b.n("rdata"), Width::of(b.bus(la)));
    let p = BufferPorts::new();
    let word = b.word.expr();
    let mut bank = Scope::new();
    bank.instance(Instance {
        module: crate::buffer::BUFFER_MODULE.into(),
        name: "u_bank".into(),
        params: vec![
            ("W".into(), word.clone()),
            ("DEPTH".into(), b.depth.e()),
            ("ABITS".into(), ab.e()),
        ],
        conns: vec![
            conn(p.clk.name(), clk),
            conn(p.we.name(), we.at(L)),
            conn(p.waddr.name(), waddr),
            conn(p.wdata.name(), wdata.lane(L, word.clone())),
            conn(p.re.name(), re),
            conn(p.raddr.name(), raddr),
            conn(p.rdata.name(), rdata.lane(L, word)),
        ],
    });
    m.gen_for(L.name(), lanes(), &format!("g_{}_bank", b.prefix), bank);
    BufNets {
        ab,
        re,
        raddr,
        we,
        waddr,
        wdata,
        rdata,
    }
}

/// Every buffer, in DMA target order.
pub(super) fn build(
    m: &mut Scope,
    la: Const,
    ctl: &CtlPorts,
    dma: &DmaNets,
    tdata: Net,
    clk: Net,
) -> Buffers {
    Buffers(
        BUFFERS
            .iter()
            .map(|b| {
                (
                    b.target,
                    buffer(m, b, la, ctl.of(b.target), dma, tdata, clk),
                )
            })
            .collect(),
    )
}
