//! Icarus Verilog as a second simulator of `sa_accel`: a Verilog testbench
//! generated from a [`HostScript`] plays its ops like the Verilator harness
//! (`cpp/tb_sa_accel.cpp`) with no back-pressure, and writes the same
//! `out.txt` and `trace.txt`, so [`cosim_runs_on`] compares it the same way.

use super::script::Op;
use super::*;

/// Verilog string literal of a 64-bit beat.
fn beat(v: u64) -> String {
    format!("64'h{v:016x}")
}

/// The testbench module `tb_sa_accel` that plays `script` against
/// `sa_accel` (default parameters, the generated ones). Run in a folder,
/// it writes `out.txt` and `trace.txt` there and prints `cycles N`
/// (reset excluded); a stall prints `TIMEOUT ...` and stops.
pub fn icarus_testbench(script: &HostScript) -> String {
    let mut tb = testbench_header(script);
    tb.push_str(HOST_TASKS);
    tb.push_str(&initial_block(&script_ops(script)));
    tb
}

/// The host tasks (AXI4-Lite, streams, polling, the trace), plain Verilog.
const HOST_TASKS: &str = include_str!("../../verilog/tb_sa_accel_host.vh");

/// The size of the buffer that holds one stream read: the largest `o` op.
fn largest_read(script: &HostScript) -> usize {
    script
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Out(n) => Some(*n),
            _ => None,
        })
        .max()
        .unwrap_or(1)
        .max(1)
}

/// One task call per op of the script, each marked with its script line.
fn script_ops(script: &HostScript) -> String {
    let mut ops = String::new();
    for (i, op) in script.ops.iter().enumerate() {
        // Script line of the op (the header is line 1), as the C++ harness counts.
        let line = i + 2;
        let _ = write!(ops, "    line_no = {line}; ");
        match op {
            Op::Write(a, d) => writeln!(ops, "axil_write(32'h{a:x}, 32'h{d:x});"),
            Op::Read(a) => writeln!(
                ops,
                "axil_read(32'h{a:x}); $fwrite(fo, \"r %0h %0h %0h\\n\", 32'h{a:x}, rd_data, rd_resp);"
            ),
            Op::In(beats) => {
                ops.push('\n');
                for b in beats {
                    let _ = writeln!(ops, "    stream_beat({});", beat(*b));
                }
                writeln!(ops, "    stream_end;")
            }
            Op::Out(n) => writeln!(ops, "stream_out({n});"),
            Op::Poll => writeln!(ops, "poll;"),
        }
        .expect("writing to a String");
    }
    ops
}

/// The module up to the host tasks: sizes, the DUT and its nets.
fn testbench_header(script: &HostScript) -> String {
    let cfg = &script.cfg;
    let (r, c, dw) = (cfg.rows(), cfg.cols(), cfg.format().in_bits);
    let busy = status::RUNNING | status::DMA_BUSY;
    let max_out = largest_read(script);
    format!(
        r#"// Icarus harness for sa_accel ({tag}), generated from a host script;
// see testbench/cpp/tb_sa_accel.cpp for the protocol and the output formats.
`timescale 1ns/1ps
module tb_sa_accel;
  localparam integer R = {r}, C = {c}, DW = {dw}, MAXN = {max_out};
  localparam [31:0] REG_STATUS = 32'h{status_reg:x}, BUSY = 32'h{busy:x};
  localparam [63:0] STALL_LIMIT = 64'd1000000, POLL_LIMIT = 64'd50000000;

  reg clk = 0, rst = 1;
  reg [11:0] awaddr = 0, araddr = 0;
  reg [31:0] wdata = 0;
  reg [3:0] wstrb = 0;
  reg awvalid = 0, wvalid = 0, bready = 0, arvalid = 0, rready = 0;
  reg [63:0] s_tdata = 0;
  reg s_tvalid = 0, m_tready = 0;
  wire awready, wready, bvalid, arready, rvalid, s_tready, m_tvalid, m_tlast;
  wire [1:0] bresp, rresp;
  wire [31:0] rdata;
  wire [63:0] m_tdata;

  sa_accel dut (
    .clk(clk), .rst(rst),
    .s_axil_awaddr(awaddr), .s_axil_awvalid(awvalid), .s_axil_awready(awready),
    .s_axil_wdata(wdata), .s_axil_wstrb(wstrb), .s_axil_wvalid(wvalid), .s_axil_wready(wready),
    .s_axil_bresp(bresp), .s_axil_bvalid(bvalid), .s_axil_bready(bready),
    .s_axil_araddr(araddr), .s_axil_arvalid(arvalid), .s_axil_arready(arready),
    .s_axil_rdata(rdata), .s_axil_rresp(rresp), .s_axil_rvalid(rvalid), .s_axil_rready(rready),
    .s_axis_tdata(s_tdata), .s_axis_tvalid(s_tvalid), .s_axis_tready(s_tready),
    .m_axis_tdata(m_tdata), .m_axis_tvalid(m_tvalid), .m_axis_tready(m_tready),
    .m_axis_tlast(m_tlast));

  // The array's inputs (internal nets of sa_accel).
  wire [3:0] a_mode = dut.arr_mode;
  wire [5:0] a_lr = dut.arr_lr_shift;
  wire a_dyv = dut.arr_dy_valid;
  wire [R*DW-1:0] a_x = dut.arr_x_in;
  wire [C*DW-1:0] a_w = dut.arr_w_in;
  wire [C*DW-1:0] a_dy = dut.arr_dy_in;
  wire running = dut.ctl_running;
  // The wave control of a dense array as {{op[2:0], swap, update, load, load_row[8:0]}}.
  localparam DENSE = {dense};
  wire [14:0] a_wave = {wave};

"#,
        tag = cfg.tag(),
        status_reg = reg::STATUS,
        dense = cfg.dense() as u8,
        wave = if cfg.dense() {
            "{dut.arr_wave_op, dut.arr_wave_swap, dut.arr_wave_update, dut.arr_wave_load, 9'd0 | dut.arr_wave_load_row}"
        } else {
            "15'd0"
        },
    )
}

/// Reset, the script's ops, and the end of the module.
fn initial_block(ops: &str) -> String {
    format!(
        r#"  initial begin
    fo = $fopen("out.txt", "w");
    ft = $fopen("trace.txt", "w");
    cycles = 0;
    line_no = 0;
    stream_seen = 0; b_seen = 0; r_seen = 0;
    rst = 1;
    settle; clock_edge(0);
    settle; clock_edge(0);
    rst = 0;
    // Reset cycles are not cycles of the script.
    cycles = 0;
    stream_seen = 0; b_seen = 0; r_seen = 0;
{ops}
    $fclose(fo);
    $fclose(ft);
    $display("cycles %0d", cycles);
    $finish;
  end
endmodule
"#
    )
}

/// Compiles `files` (which must contain `sa_accel.v`) with the testbench
/// of `script` under Icarus Verilog and plays it in `work`.
pub fn run_icarus_script(
    files: &[VerilogFile],
    script: &HostScript,
    work: &Path,
) -> Result<HostResult, AccelError> {
    require_top(files)?;
    sysgrad_tools::require("iverilog")?;
    sysgrad_tools::require("vvp")?;
    std::fs::create_dir_all(work)?;
    let work = &work.canonicalize()?;
    let mut cmd = Command::new("iverilog");
    cmd.args(["-g2012", "-o", "sim.vvp", "-s", "tb_sa_accel"]);
    for f in files {
        std::fs::write(work.join(&f.name), &f.text)?;
        cmd.arg(&f.name);
    }
    std::fs::write(work.join("tb_sa_accel.v"), icarus_testbench(script))?;
    std::fs::write(work.join("script.txt"), script.render())?;
    cmd.arg("tb_sa_accel.v");
    run(&mut cmd, work)?;
    let done = run(Command::new("vvp").args(["-n", "sim.vvp"]), work)?;
    let log = String::from_utf8_lossy(&done.stdout);
    if let Some(t) = log.lines().find(|l| l.starts_with("TIMEOUT")) {
        return Err(AccelError::Output(format!(
            "Icarus harness in {}: {t}",
            work.display()
        )));
    }
    let out = work.join("out.txt");
    if let Some(why) = unknown_values(&std::fs::read_to_string(&out)?) {
        return Err(AccelError::Output(format!(
            "Icarus read X/Z from sa_accel ({why}; files in {})",
            work.display()
        )));
    }
    collect(script, &out, &work.join("trace.txt"), &log)
}

/// Where `out.txt` has an X or Z value (a register read or a stream beat),
/// which `parse_out` could not read.
fn unknown_values(out: &str) -> Option<String> {
    let unknown = |t: &str| t.contains(['x', 'X', 'z', 'Z']);
    let (mut reads, mut streams) = (0, 0);
    for (no, line) in out.lines().enumerate() {
        let tok: Vec<&str> = line.split_whitespace().collect();
        match tok.first() {
            Some(&"r") => {
                reads += 1;
                if tok[1..].iter().any(|t| unknown(t)) {
                    return Some(format!(
                        "out.txt line {}: register read {} `{line}`",
                        no + 1,
                        reads - 1
                    ));
                }
            }
            Some(&"o") => {
                streams += 1;
                let bad: Vec<usize> = (1..tok.len())
                    .filter(|&i| unknown(tok[i]))
                    .map(|i| i - 1)
                    .collect();
                if let Some(first) = bad.first() {
                    return Some(format!(
                        "out.txt line {}: stream read {} of {} beats, {} beats unknown, the first beat {first}, all {bad:?}",
                        no + 1,
                        streams - 1,
                        tok.len() - 1,
                        bad.len(),
                    ));
                }
            }
            _ => {}
        }
    }
    None
}
