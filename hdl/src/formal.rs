//! Formal properties of `sa_accel`, as SystemVerilog immediate assertions
//! in a checker module (`sa_accel_props`, its own file) instantiated
//! inside the generated `sa_accel` by [`bind`], for `yosys-smtbmc` (read
//! with `read_verilog -formal`). ([`bind`] splices the instance into a copy
//! of `sa_accel.v` because Yosys 0.23 parses a SystemVerilog `bind` and
//! silently drops it, and Yosys 0.70 refuses it.) Every signal the checker
//! reads is a port or a top-level net of the generated module;
//! [`accel_properties`] looks each one up in the module's IR and fails
//! naming it if the generator no longer has it, and the widths come from
//! `$bits` in the instance, so nothing here repeats a width. What is
//! checked ([`PROPERTIES`]):
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

use crate::ir::{Item, Module};
use crate::VerilogFile;
use sysgrad_config::ArrayConfig;
use sysgrad_isa::host::Counter;
use sysgrad_isa::Mode;

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
        | DmaOutStalls | HostIdleCycles | LoadSlots => DuringFault::Still,
    }
}

/// Ports of `sa_accel` the checker reads.
const PORTS: [&str; 19] = [
    "clk",
    "rst",
    "s_axil_awvalid",
    "s_axil_awready",
    "s_axil_wvalid",
    "s_axil_wready",
    "s_axil_bvalid",
    "s_axil_bready",
    "s_axil_bresp",
    "s_axil_arvalid",
    "s_axil_arready",
    "s_axil_rvalid",
    "s_axil_rready",
    "s_axil_rdata",
    "s_axil_rresp",
    "m_axis_tvalid",
    "m_axis_tready",
    "m_axis_tdata",
    "m_axis_tlast",
];

/// Controller nets: decode outcome and state, stop registers.
const CONTROL: [&str; 10] = [
    "dec_fault",
    "dec_err",
    "in_dec",
    "in_dec2",
    "ctl_running",
    "pc",
    "stop_pc",
    "faulted",
    "halted",
    "err_code",
];

/// The resident tile's registers.
const RESIDENT: [&str; 6] = [
    "res_valid",
    "res_dirty",
    "res_addr",
    "res_m",
    "res_k",
    "res_mk",
];

/// Registers the host sets (AXI4-Lite writes, DMA).
const HOST_SET: [&str; 6] = [
    "prog_len",
    "dma_target_q",
    "dma_addr_q",
    "dma_count_q",
    "dma_err",
    "dma_on",
];

/// The write-back unit and the array's mode, and a host write.
const OTHER: [&str; 5] = ["wb_write", "wb_we", "wb_begin", "arr_mode", "axil_wr"];

fn counter_inc(c: Counter) -> String {
    format!("inc_{}", c.name())
}

/// Every signal the checker reads, in port order.
fn signals() -> Vec<String> {
    let mut v: Vec<String> = PORTS
        .iter()
        .chain(&CONTROL)
        .chain(&RESIDENT)
        .chain(&HOST_SET)
        .chain(&OTHER)
        .map(|s| s.to_string())
        .collect();
    v.extend(
        crate::accel::BUFFERS
            .iter()
            .map(|b| format!("{}_we", b.prefix)),
    );
    v.extend(Counter::ALL.iter().map(|&c| counter_inc(c)));
    v
}

/// The ports and top-level nets of `m`.
fn declared(m: &Module) -> Vec<String> {
    let mut names: Vec<String> = m.ports.iter().map(|p| p.name.clone()).collect();
    for item in &m.items {
        if let Item::Net(n) = item {
            names.push(n.name.clone());
        }
    }
    names
}

fn width_param(s: &str) -> String {
    format!("W_{s}")
}

fn header(sigs: &[String]) -> String {
    let params: Vec<String> = sigs
        .iter()
        .map(|s| format!("  parameter {} = 1", width_param(s)))
        .collect();
    let ports: Vec<String> = sigs
        .iter()
        .map(|s| format!("  input wire [{}-1:0] {s}", width_param(s)))
        .collect();
    format!(
        "module {PROPS_MODULE} #(\n{}\n) (\n{}\n);\n",
        params.join(",\n"),
        ports.join(",\n")
    )
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
fn quiet_condition() -> String {
    let mut terms: Vec<String> = crate::accel::BUFFERS
        .iter()
        .filter(|b| b.prefix != "a")
        .map(|b| format!("{}_we == 0", b.prefix))
        .collect();
    terms.push("a_we == wb_we".into());
    terms.push("!wb_begin".into());
    terms.push(format!("arr_mode == {}", Mode::Idle.code()));
    for c in Counter::ALL {
        let inc = counter_inc(c);
        match during_fault(c) {
            DuringFault::Decode => {}
            DuringFault::WriteBack => terms.push(format!("(wb_write || {inc} == 0)")),
            DuringFault::Still => terms.push(format!("{inc} == 0")),
        }
    }
    terms.join("\n    && ")
}

fn fault_properties() -> String {
    let unchanged = |regs: &[&str], back: &str| -> String {
        regs.iter()
            .map(|r| format!("{r} == $past({r}{back})"))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    let same_as_before = |regs: &[&str]| {
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
        quiet = quiet_condition(),
        resident = same_as_before(&RESIDENT),
        host = same_as_before(&HOST_SET),
    )
}

/// `sa_top` of `cfg` with the same parameters and ports, every output
/// free in every cycle (`$anyseq`): the array abstracted away, since no
/// property depends on what it computes. Checking `sa_accel` with this
/// array covers every behaviour of the real one (and more), and the solver
/// is spared the multipliers.
pub fn free_array(cfg: &ArrayConfig) -> VerilogFile {
    let real = crate::top::module(cfg);
    let items = real
        .ports
        .iter()
        .filter(|p| p.dir == crate::ir::Dir::Output)
        .map(|p| Item::Assign(crate::ir::id(&p.name), crate::ir::id("$anyseq")))
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

/// The signals the checker reads, each looked up in `cfg`'s `sa_accel`.
fn checked_signals(cfg: &ArrayConfig) -> Result<Vec<String>, String> {
    if cfg.dense() {
        return Err(format!(
            "{}: the dense array has no sa_accel yet to check",
            cfg.tag()
        ));
    }
    let m = crate::accel::module(cfg);
    let have = declared(&m);
    let sigs = signals();
    if let Some(missing) = sigs.iter().find(|s| !have.contains(s)) {
        return Err(format!(
            "the generated {} has no net `{missing}` that {PROPS_MODULE} checks",
            m.name
        ));
    }
    Ok(sigs)
}

/// The property file of `cfg`'s `sa_accel`: the checker module. Fails
/// naming a signal the generated module does not have.
pub fn accel_properties(cfg: &ArrayConfig) -> Result<VerilogFile, String> {
    let sigs = checked_signals(cfg)?;
    let mut text = format!(
        "// Formal properties of sa_accel ({}), instantiated inside it (u_props);\n\
         // generated by sysgrad-hdl (hdl/src/formal.rs), for yosys-smtbmc.\n",
        cfg.tag()
    );
    text.push_str(&header(&sigs));
    text.push_str(RESET_AND_AXI);
    text.push_str(&fault_properties());
    text.push_str("endmodule\n");
    Ok(VerilogFile {
        name: format!("{PROPS_MODULE}.sv"),
        text,
    })
}

/// `accel_v` (the text of `cfg`'s `sa_accel.v`) with the checker
/// instantiated before its `endmodule`, every port connected to the net of
/// the same name and every width given by `$bits`.
pub fn bind(cfg: &ArrayConfig, accel_v: &str) -> Result<String, String> {
    let sigs = checked_signals(cfg)?;
    let params: Vec<String> = sigs
        .iter()
        .map(|s| format!(".{}($bits({s}))", width_param(s)))
        .collect();
    let conns: Vec<String> = sigs.iter().map(|s| format!(".{s}({s})")).collect();
    let instance = format!(
        "  // Formal checker (sysgrad-hdl formal.rs).\n  {PROPS_MODULE} #(\n    {}\n  ) u_props (\n    {}\n  );\n",
        params.join(",\n    "),
        conns.join(",\n    ")
    );
    let end = accel_v
        .rfind("endmodule")
        .ok_or("sa_accel.v has no endmodule")?;
    Ok(format!("{}{instance}{}", &accel_v[..end], &accel_v[end..]))
}

/// The design a formal check reads: the generated files of `cfg` with
/// [`free_array`] for `sa_top` and the checker instantiated in `sa_accel`
/// ([`bind`], after `mutate` rewrote `sa_accel.v`: the tests put faults
/// in), and the property file.
pub fn formal_design(
    cfg: &ArrayConfig,
    mutate: impl Fn(&str) -> String,
) -> Result<(Vec<VerilogFile>, VerilogFile), String> {
    let accel_v = format!("{}.v", crate::accel_top_name());
    let array_v = format!("{}.v", crate::top_name());
    let mut files = crate::generate(cfg);
    for f in files.iter_mut() {
        if f.name == accel_v {
            f.text = bind(cfg, &mutate(&f.text))?;
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
        let accel = crate::generate(&cfg)
            .into_iter()
            .find(|f| f.name == "sa_accel.v")
            .unwrap();
        let bound = bind(&cfg, &accel.text).unwrap();
        for c in Counter::ALL {
            let inc = counter_inc(c);
            assert!(bound.contains(&format!(".{inc}({inc})")), "{inc}");
            assert!(f.text.contains(&format!("] {inc}")), "{inc}");
        }
        // The checker sits just before the module's end; what follows it
        // (endmodule and anything after) is the generated text's own.
        let tail = &accel.text[accel.text.rfind("endmodule").unwrap()..];
        assert!(bound.contains("u_props (") && bound.ends_with(tail));
        assert!(f.text.contains("w_we == 0") && f.text.contains("a_we == wb_we"));
    }

    #[test]
    fn a_dense_configuration_is_refused() {
        let cfg = ArrayConfig::default_16x16()
            .with_pipelining(Pipelining::Dense)
            .unwrap();
        assert!(accel_properties(&cfg).unwrap_err().contains("dense"));
    }
}
