//! Formal properties of `sa_accel`, as SystemVerilog immediate assertions
//! in a checker module (`sa_accel_props`, its own file) instantiated
//! inside the generated `sa_accel` ([`bound_accel`]: the instance is an
//! item of the module's IR, printed with it), for `yosys-smtbmc` (read
//! with `read_verilog -formal`). Every signal the checker reads is a port
//! or a net of the generated module, by the handle the accelerator's
//! builder exports (so a net the generator no longer has fails to
//! compile), and the widths come from `$bits` in the instance, so nothing
//! here repeats a width. The checker's header is built through the IR;
//! its properties (immediate assertions, which the IR does not model) are
//! text. What is checked ([`PROPERTIES`]):
//!
//! * AXI4-Lite: a write takes address and data together; every accepted
//!   write is answered by exactly one B beat and every accepted read by
//!   one R beat (a checker counts requests and answers: at most one is
//!   open, and BVALID/RVALID are high exactly while one is), so nothing is
//!   answered without a request; BVALID/BRESP and RVALID/RDATA/RRESP hold
//!   until accepted.
//! * AXI4-Stream: `m_axis` holds TDATA and TLAST while TVALID is high and
//!   TREADY low.
//! * Faults (`docs/COMMANDS.md`, Errors): in every decode cycle of a
//!   command that faults, no buffer is written but by a write-back already
//!   in flight from an earlier command, no write-back starts, the array is
//!   IDLE, and no counter counts but the decode cycles (run, decode, idle
//!   cycles) and that in-flight write-back; after the fault the controller
//!   is stopped with FAULTED, the error code and the command's PC, and the
//!   resident tile and the host registers (PROG_LEN, DMA_*, DMA error and
//!   busy) are as before the command's first decode cycle (unless the host
//!   wrote a register meanwhile).
//!
//! Nothing is assumed of the host: after a reset in the first cycle every
//! input is free in every cycle, so the AXI properties hold for any
//! master, compliant or not, and the command memory and buffers start
//! with any contents (any program).

use crate::accel::FormalNets;
use crate::files::VerilogFile;
use crate::ir::*;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::{Counter, DmaTarget};
use sysgrad_isa::Mode;

/// Why a configuration has no formal properties.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormalError {
    #[error("{config}: {why}")]
    Unsupported { config: String, why: &'static str },
}

/// The checker module's name and the property file's.
pub const PROPS_MODULE: &str = "sa_accel_props";

/// One line per property group, for reports.
pub const PROPERTIES: [&str; 4] = [
    "AXI4-Lite: every request answered exactly once, never an answer without a request, B/R held until accepted",
    "AXI4-Stream m_axis: TDATA and TLAST stable while TVALID && !TREADY",
    "fault: the decode cycles of a faulting command write no buffer, start nothing, count only decode cycles (and an earlier command's in-flight write-back)",
    "fault: then stopped, FAULTED, error code and PC set; resident tile and host registers unchanged",
];

/// How a counter may move in a decode cycle of a command that faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DuringFault {
    /// It counts the decode cycles the faulting command spends.
    Decode,
    /// It counts the write-back of an earlier pass, which may still land.
    WriteBack,
    /// It must not move.
    Still,
}

fn during_fault(c: Counter) -> DuringFault {
    use Counter::*;
    match c {
        RunCycles | DecodeCycles | IdleCycles => DuringFault::Decode,
        FwdYWrites | FwdAccReads | FwdAccWrites | DxDxWrites | DxAccReads | DxAccWrites
        | IlDxWrites | IlAccReads | IlAccWrites => DuringFault::WriteBack,
        LoadCycles | FwdCycles | DxCycles | DwCycles | IlCycles | UpdateCycles | DrainCycles
        | FwdMacs | DxMacs | DwMacs | IlMacs | LoadWReads | LoadWWrites | FwdXReads | DxDyReads
        | DwDyReads | DwXReads | IlDyReads | IlXReads | DrainDwWrites | RequantCycles
        | RequantWords | Syncs | Commands | DmaInBeats | DmaOutBeats | DmaInStalls
        | DmaOutStalls | HostIdleCycles | LoadSlots | ActCycles | ActWords => DuringFault::Still,
    }
}

/// Every net the checker reads, in its port order: the ports it watches, the
/// controller's decode outcome and state and stop registers, the resident
/// tile, the registers the host sets, the write-back unit, the array's
/// mode and a host write, each buffer's write enables and each counter's
/// increment. The checker's ports take the nets' names, which its
/// properties use.
struct Signals {
    nets: Vec<Net>,
    resident: Vec<Net>,
    host_set: Vec<Net>,
    buffer_we: Vec<(DmaTarget, Net)>,
    increments: Vec<(Counter, Net)>,
}

fn signals(f: &FormalNets) -> Signals {
    let mut nets: Vec<Net> = f.ports.clone();
    let c = &f.control;
    nets.extend([
        c.dec_fault,
        c.dec_err,
        c.in_dec,
        c.in_dec2,
        f.ctl_running,
        c.pc,
        f.stop_pc,
        f.faulted,
        f.halted,
        f.err_code,
    ]);
    let resident = c.resident.to_vec();
    nets.extend(&resident);
    let h = &f.host;
    let host_set = vec![
        h.prog_len,
        h.dma_target_q,
        h.dma_addr_q,
        h.dma_count_q,
        h.dma_err,
        h.dma_on,
    ];
    nets.extend(&host_set);
    nets.extend([c.wb_write, c.wb_we, c.wb_begin, f.arr_mode, h.axil_wr]);
    nets.extend(f.buffer_we.iter().map(|(_, n)| *n));
    nets.extend(f.increments.iter().map(|(_, n)| *n));
    Signals {
        nets,
        resident,
        host_set,
        buffer_we: f.buffer_we.clone(),
        increments: f.increments.clone(),
    }
}

fn width_param(s: Net) -> String {
    format!("W_{}", s.name())
}

const RESET_AND_AXI: &str = r#"  // Reset in the first cycle; every input free afterwards.
  reg f_init = 1'b1;
  always @(posedge clk) f_init <= 1'b0;
  always @* if (f_init) assume(rst);
  wire f_live = !f_init && !rst;

  // AXI4-Lite: requests taken and answers given, counted.
  wire f_aw = s_axil_awvalid && s_axil_awready;
  wire f_w = s_axil_wvalid && s_axil_wready;
  wire f_b = s_axil_bvalid && s_axil_bready;
  wire f_ar = s_axil_arvalid && s_axil_arready;
  wire f_r = s_axil_rvalid && s_axil_rready;
  reg [1:0] f_wr_open, f_rd_open;
  always @(posedge clk)
    if (rst) begin
      f_wr_open <= 2'd0;
      f_rd_open <= 2'd0;
    end else begin
      f_wr_open <= f_wr_open + {1'b0, f_aw} - {1'b0, f_b};
      f_rd_open <= f_rd_open + {1'b0, f_ar} - {1'b0, f_r};
    end
  always @* if (f_live) begin
    // Address and data of a write are taken together.
    assert(f_aw == f_w);
    // At most one open request, answered (VALID high) exactly while open.
    assert(f_wr_open <= 2'd1);
    assert(s_axil_bvalid == (f_wr_open == 2'd1));
    assert(f_rd_open <= 2'd1);
    assert(s_axil_rvalid == (f_rd_open == 2'd1));
  end
  // Answers hold until accepted.
  always @(posedge clk) if (f_live && $past(f_live)) begin
    if ($past(s_axil_bvalid && !s_axil_bready))
      assert(s_axil_bvalid && s_axil_bresp == $past(s_axil_bresp));
    if ($past(s_axil_rvalid && !s_axil_rready))
      assert(s_axil_rvalid && s_axil_rdata == $past(s_axil_rdata)
             && s_axil_rresp == $past(s_axil_rresp));
    // AXI4-Stream: a beat offered holds until taken.
    if ($past(m_axis_tvalid && !m_axis_tready))
      assert(m_axis_tvalid && m_axis_tdata == $past(m_axis_tdata)
             && m_axis_tlast == $past(m_axis_tlast));
  end
"#;

/// The combinational "this decode cycle has no effect" condition.
fn quiet_condition(s: &Signals, f: &FormalNets) -> String {
    let acc_we = |t: &DmaTarget| *t == DmaTarget::Accumulators;
    let mut terms: Vec<String> = s
        .buffer_we
        .iter()
        .filter(|(t, _)| !acc_we(t))
        .map(|(_, we)| format!("{} == 0", we.name()))
        .collect();
    let (a_we, wb_we) = (
        s.buffer_we
            .iter()
            .find(|(t, _)| acc_we(t))
            .expect("an accumulator buffer")
            .1,
        f.control.wb_we,
    );
    terms.push(format!("{} == {}", a_we.name(), wb_we.name()));
    terms.push(format!("!{}", f.control.wb_begin.name()));
    terms.push(format!("{} == {}", f.arr_mode.name(), Mode::Idle.code()));
    for (c, inc) in &s.increments {
        let (c, inc) = (*c, inc.name());
        match during_fault(c) {
            DuringFault::Decode => {}
            DuringFault::WriteBack => {
                terms.push(format!("({} || {inc} == 0)", f.control.wb_write.name()))
            }
            DuringFault::Still => terms.push(format!("{inc} == 0")),
        }
    }
    terms.join("\n    && ")
}

fn fault_properties(s: &Signals, f: &FormalNets) -> String {
    let unchanged = |regs: &[Net], back: &str| -> String {
        regs.iter()
            .map(|r| format!("{0} == $past({0}{back})", r.name()))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    let same_as_before = |regs: &[Net]| {
        format!(
            "($past(in_dec2) ? ({}) : ({}))",
            unchanged(regs, ", 2"),
            unchanged(regs, "")
        )
    };
    format!(
        r#"
  // Faults: a decode cycle without effect, and the decode cycle before
  // (the first word of a two-word command).
  wire f_quiet = {quiet};
  reg f_quiet_dec, f_host_wr_dec;
  always @(posedge clk) begin
    f_quiet_dec <= in_dec && f_quiet;
    f_host_wr_dec <= in_dec && axil_wr;
  end
  always @* if (f_live && dec_fault) begin
    assert(f_quiet);
    if (in_dec2) assert(f_quiet_dec);
  end
  always @(posedge clk) if (f_live && $past(f_live) && $past(dec_fault)) begin
    assert(!ctl_running && faulted && !halted);
    assert(err_code == $past(dec_err) && err_code != 0);
    assert(stop_pc == $past(pc));
    assert({resident});
    if (!$past(axil_wr) && !($past(in_dec2) && $past(f_host_wr_dec)))
      assert({host});
  end
"#,
        quiet = quiet_condition(s, f),
        resident = same_as_before(&s.resident),
        host = same_as_before(&s.host_set),
    )
}

/// `sa_top` of `cfg` with the same parameters and ports, every output
/// free in every cycle (`$anyseq`): the array abstracted away, since no
/// property depends on what it computes. Checking `sa_accel` with this
/// array covers every behaviour of the real one (and more), and the solver
/// is spared the multipliers.
pub fn free_array(cfg: &ArrayConfig) -> VerilogFile {
    let (_, real) = crate::design::array(cfg);
    let items = real
        .ports
        .iter()
        .filter(|p| p.dir == Dir::Output)
        .map(|p| Item::Assign(p.net.e(), Expr::System("$anyseq")))
        .collect();
    let m = Module {
        doc: vec![format!(
            "{}: the array's ports with free outputs, for formal checks of sa_accel.",
            real.name
        )],
        genvars: Vec::new(),
        items,
        ..real
    };
    VerilogFile {
        name: format!("{}.v", m.name),
        text: crate::emit::module(&m),
    }
}

/// The formal nets of `cfg`'s accelerator, and its module.
fn checked(cfg: &ArrayConfig) -> Result<(Module, FormalNets), FormalError> {
    let d = crate::design::design(cfg);
    match d.formal {
        Ok(f) => Ok((d.accel, f)),
        Err(why) => Err(FormalError::Unsupported {
            config: cfg.tag(),
            why,
        }),
    }
}

/// The checker module: a port per signal, its width a parameter (given
/// by `$bits` in the instance, so nothing here repeats a width), and the
/// properties.
fn checker(cfg: &ArrayConfig, s: &Signals, f: &FormalNets) -> Module {
    let mut body = Scope::new();
    body.push(Item::Verbatim(RESET_AND_AXI.into()));
    body.push(Item::Verbatim(fault_properties(s, f)));
    Module {
        name: PROPS_MODULE.into(),
        doc: vec![
            format!(
                "Formal properties of sa_accel ({}), instantiated inside it (u_props);",
                cfg.tag()
            ),
            "generated by sysgrad-hdl (hdl/src/formal.rs), for yosys-smtbmc.".into(),
        ],
        params: s
            .nets
            .iter()
            .map(|n| param(&width_param(*n), 1, n.name()))
            .collect(),
        ports: s
            .nets
            .iter()
            .map(|n| Port {
                dir: Dir::Input,
                net: *n,
                width: Width::of(P::new(crate::expr::intern(&width_param(*n)))),
                signed: false,
            })
            .collect(),
        genvars: vec![],
        items: body.into_items(),
    }
}

/// The property file of `cfg`'s `sa_accel`: the checker module. Fails
/// for a configuration whose controller has no properties.
pub fn accel_properties(cfg: &ArrayConfig) -> Result<VerilogFile, FormalError> {
    let (_, f) = checked(cfg)?;
    let m = checker(cfg, &signals(&f), &f);
    Ok(VerilogFile {
        name: format!("{PROPS_MODULE}.sv"),
        text: crate::emit::module(&m),
    })
}

/// `cfg`'s `sa_accel` with the checker instantiated before its end, every
/// port connected to the net of the same name and every width given by
/// `$bits`. (An instance inside the module because Yosys 0.23 parses a
/// SystemVerilog `bind` and silently drops it, and Yosys 0.70 refuses it.)
pub fn bound_accel(cfg: &ArrayConfig) -> Result<VerilogFile, FormalError> {
    let (mut accel, f) = checked(cfg)?;
    let s = signals(&f);
    accel.items.push(Item::Comment(
        "Formal checker (sysgrad-hdl formal.rs).".into(),
    ));
    accel.items.push(Item::Instance(Instance {
        module: PROPS_MODULE.into(),
        name: "u_props".into(),
        params: s
            .nets
            .iter()
            .map(|n| (width_param(*n), call("$bits", [n.e()])))
            .collect(),
        conns: s
            .nets
            .iter()
            .map(|n| (n.name().to_string(), n.e()))
            .collect(),
    }));
    Ok(VerilogFile {
        name: format!("{}.v", accel.name),
        text: crate::emit::module(&accel),
    })
}

/// The design a formal check reads: the generated files of `cfg` with
/// [`free_array`] for `sa_top` and the checker instantiated in `sa_accel`
/// ([`bound_accel`], whose text `mutate` rewrites: the tests put faults
/// in), and the property file.
pub fn formal_design(
    cfg: &ArrayConfig,
    mutate: impl Fn(&str) -> String,
) -> Result<(Vec<VerilogFile>, VerilogFile), FormalError> {
    let accel_v = format!("{}.v", crate::accel_top_name());
    let array_v = format!("{}.v", crate::top_name());
    let mut files = crate::generate(cfg);
    let bound = bound_accel(cfg)?;
    for f in files.iter_mut() {
        if f.name == accel_v {
            f.text = mutate(&bound.text);
        } else if f.name == array_v {
            *f = free_array(cfg);
        }
    }
    Ok((files, accel_properties(cfg)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sysgrad_config::Pipelining;

    #[test]
    fn every_checked_signal_is_bound_and_every_counter_is_classified() {
        let cfg = ArrayConfig::default_16x16();
        let f = accel_properties(&cfg).unwrap();
        let bound = bound_accel(&cfg).unwrap().text;
        for c in Counter::ALL {
            let inc = format!("inc_{}", c.name());
            assert!(bound.contains(&format!(".{inc}({inc})")), "{inc}");
            assert!(f.text.contains(&format!("] {inc}")), "{inc}");
        }
        // The checker sits just before the module's end.
        let tail = &bound[bound.rfind("u_props (").unwrap()..];
        assert!(tail.contains(");\nendmodule\n"), "{tail}");
        assert!(f.text.contains("w_we == 0") && f.text.contains("a_we == wb_we"));
    }

    #[test]
    fn a_dense_configuration_is_refused() {
        let cfg = ArrayConfig::default_16x16()
            .with_pipelining(Pipelining::Dense)
            .unwrap();
        let e = accel_properties(&cfg).unwrap_err().to_string();
        assert!(e.contains("dense") && e.contains(&cfg.tag()), "{e}");
    }
}
