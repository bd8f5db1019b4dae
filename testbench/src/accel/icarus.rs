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
    let cfg = &script.cfg;
    let (r, c, dw) = (cfg.rows(), cfg.cols(), cfg.format().in_bits);
    let busy = status::RUNNING | status::DMA_BUSY;
    let max_out = script
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Out(n) => Some(*n),
            _ => None,
        })
        .max()
        .unwrap_or(1)
        .max(1);
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

  integer fo, ft, k, line_no;
  reg [63:0] cycles;
  // Output handshakes pending at the last rising edge.
  reg stream_seen, b_seen, r_seen, stream_last;
  reg [63:0] stream_data;
  reg [1:0] b_resp_q, r_resp_q;
  reg [31:0] r_data_q;
  // Answer of the last axil_read.
  reg [31:0] rd_data;
  reg [1:0] rd_resp;
  reg [63:0] got [0:MAXN-1];

  task protocol(input integer what);
    begin
      $fwrite(fo, "x %0h ", cycles);
      case (what)
        0: $fwrite(fo, "m_axis_tvalid dropped or m_axis_tdata/tlast changed before the beat was taken");
        1: $fwrite(fo, "s_axil_bvalid dropped or s_axil_bresp changed before bready");
        2: $fwrite(fo, "s_axil_rvalid dropped or s_axil_rdata/rresp changed before rready");
        default: $fwrite(fo, "ctl_running is %b (neither 0 nor 1)", running);
      endcase
      $fwrite(fo, " (script line %0d)\n", line_no);
    end
  endtask

  // Inputs of this cycle are set (clk low): let them settle, check the
  // output handshakes against the previous cycle.
  task settle;
    begin
      #1;
      if (stream_seen && !(m_tvalid === 1'b1 && m_tdata === stream_data && m_tlast === stream_last))
        protocol(0);
      if (b_seen && !(bvalid === 1'b1 && bresp === b_resp_q)) protocol(1);
      if (r_seen && !(rvalid === 1'b1 && rdata === r_data_q && rresp === r_resp_q)) protocol(2);
    end
  endtask

  task write_trace;
    begin
      $fwrite(ft, "%0h %0h %0h", a_mode, a_lr, a_dyv);
      for (k = 0; k < R; k = k + 1) $fwrite(ft, " %0h", a_x[k*DW +: DW]);
      for (k = 0; k < C; k = k + 1) $fwrite(ft, " %0h", a_w[k*DW +: DW]);
      for (k = 0; k < C; k = k + 1) $fwrite(ft, " %0h", a_dy[k*DW +: DW]);
      $fwrite(ft, "\n");
    end
  endtask

  // Outputs sampled: trace the array's inputs if the controller runs, then
  // the rising edge, then clk low again.
  task clock_edge(input count);
    begin
      stream_seen = m_tvalid === 1'b1 && m_tready !== 1'b1;
      stream_data = m_tdata;
      stream_last = m_tlast;
      b_seen = bvalid === 1'b1 && bready !== 1'b1;
      b_resp_q = bresp;
      r_seen = rvalid === 1'b1 && rready !== 1'b1;
      r_data_q = rdata;
      r_resp_q = rresp;
      if (count) begin
        if (running === 1'b1) write_trace;
        else if (running !== 1'b0) protocol(3);
      end
      clk = 1;
      #1 clk = 0;
      if (count) cycles = cycles + 1;
    end
  endtask

  task stop(input integer what);
    begin
      $fflush(fo);
      $fflush(ft);
      case (what)
        0: $display("TIMEOUT script line %0d: AXI4-Lite write address/data not accepted (cycle %0d)", line_no, cycles);
        1: $display("TIMEOUT script line %0d: no AXI4-Lite write response (cycle %0d)", line_no, cycles);
        2: $display("TIMEOUT script line %0d: AXI4-Lite read address not accepted (cycle %0d)", line_no, cycles);
        3: $display("TIMEOUT script line %0d: no AXI4-Lite read response (cycle %0d)", line_no, cycles);
        4: $display("TIMEOUT script line %0d: s_axis beat not taken (cycle %0d)", line_no, cycles);
        5: $display("TIMEOUT script line %0d: no m_axis beat (cycle %0d)", line_no, cycles);
        default: $display("TIMEOUT script line %0d: STATUS still %h (RUNNING or DMA_BUSY) (cycle %0d)", line_no, rd_data, cycles);
      endcase
      $finish;
    end
  endtask

  task axil_write(input [31:0] addr, input [31:0] data);
    reg aw, w, aw_fire, w_fire, fire;
    reg [1:0] resp;
    reg [63:0] since;
    begin
      aw = 1; w = 1;
      awaddr = addr[11:0]; wdata = data; wstrb = 4'hf;
      since = cycles;
      while (aw || w) begin
        awvalid = aw; wvalid = w;
        settle;
        aw_fire = awvalid && awready === 1'b1;
        w_fire = wvalid && wready === 1'b1;
        clock_edge(1);
        aw = aw && !aw_fire;
        w = w && !w_fire;
        if (cycles - since > STALL_LIMIT) stop(0);
      end
      awvalid = 0; wvalid = 0; wstrb = 0;
      since = cycles;
      fire = 0;
      while (!fire) begin
        bready = 1;
        settle;
        fire = bvalid === 1'b1;
        resp = bresp;
        clock_edge(1);
        if (!fire && cycles - since > STALL_LIMIT) stop(1);
      end
      bready = 0;
      if (resp !== 2'd0) $fwrite(fo, "b %0h %0h\n", addr, resp);
    end
  endtask

  task axil_read(input [31:0] addr);
    reg fire;
    reg [63:0] since;
    begin
      araddr = addr[11:0];
      since = cycles;
      fire = 0;
      while (!fire) begin
        arvalid = 1;
        settle;
        fire = arready === 1'b1;
        clock_edge(1);
        if (!fire && cycles - since > STALL_LIMIT) stop(2);
      end
      arvalid = 0;
      since = cycles;
      fire = 0;
      while (!fire) begin
        rready = 1;
        settle;
        fire = rvalid === 1'b1;
        rd_data = rdata;
        rd_resp = rresp;
        clock_edge(1);
        if (!fire && cycles - since > STALL_LIMIT) stop(3);
      end
      rready = 0;
    end
  endtask

  // One beat into s_axis: tvalid held until the beat is taken.
  task stream_beat(input [63:0] v);
    reg fire;
    reg [63:0] since;
    begin
      since = cycles;
      fire = 0;
      while (!fire) begin
        s_tvalid = 1;
        s_tdata = v;
        settle;
        fire = s_tready === 1'b1;
        clock_edge(1);
        if (!fire && cycles - since > STALL_LIMIT) stop(4);
      end
    end
  endtask

  task stream_end;
    begin
      s_tvalid = 0;
      s_tdata = 0;
    end
  endtask

  task stream_out(input integer n);
    integer cnt, j;
    reg fire, last, tlast_ok;
    reg [63:0] data, since;
    begin
      cnt = 0;
      tlast_ok = 1;
      since = cycles;
      while (cnt < n) begin
        m_tready = 1;
        settle;
        fire = m_tvalid === 1'b1;
        data = m_tdata;
        last = m_tlast;
        clock_edge(1);
        if (fire) begin
          got[cnt] = data;
          cnt = cnt + 1;
          if ((last === 1'b1) != (cnt == n)) tlast_ok = 0;
          since = cycles;
        end
        if (cycles - since > STALL_LIMIT) stop(5);
      end
      m_tready = 0;
      $fwrite(fo, "o");
      for (j = 0; j < n; j = j + 1) $fwrite(fo, " %0h", got[j]);
      $fwrite(fo, "\n");
      if (!tlast_ok) $fwrite(fo, "tlast_error\n");
    end
  endtask

  task poll;
    reg [63:0] start;
    reg done;
    begin
      start = cycles;
      done = 0;
      while (!done) begin
        axil_read(REG_STATUS);
        done = (rd_data & BUSY) === 32'd0;
        if (!done && cycles - start > POLL_LIMIT) stop(6);
      end
    end
  endtask

  initial begin
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
"#,
        tag = cfg.tag(),
        status_reg = reg::STATUS,
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
