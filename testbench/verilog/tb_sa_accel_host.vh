// The host tasks of the Icarus harness for sa_accel, included by the
// testbench that testbench/src/accel/icarus.rs generates from a host
// script (which declares R, C, DW, MAXN, REG_STATUS, BUSY, STALL_LIMIT,
// POLL_LIMIT, the DUT and its nets before this text). They play AXI4-Lite
// writes and reads, stream beats in and out, and polling of STATUS, like
// testbench/cpp/tb_sa_accel.cpp without back-pressure, and write out.txt
// and trace.txt in that harness's formats.
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
      // A dense array's wave control ends the line (DENSE: the generated header).
      if (DENSE) $fwrite(ft, " %0h %0h %0h %0h %0h", a_wave[14:12], a_wave[11], a_wave[10], a_wave[9], a_wave[8:0]);
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

