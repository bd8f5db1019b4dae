//! Icarus Verilog as a second opinion: a generated Verilog testbench reads
//! the same stimulus file and writes the same port trace as the Verilator
//! harness.

use std::path::Path;
use std::process::Command;
use sysgrad_config::ArrayConfig;
use sysgrad_tools::{run, ToolError};

/// The Verilog testbench for `cfg` (sizes are fixed at generation time).
pub fn testbench(cfg: &ArrayConfig) -> String {
    let (r, c) = (cfg.rows(), cfg.cols());
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    // A dense array has the wave ports, read from the end of each line.
    let rb = sysgrad_isa::mode::load_row_bits(r);
    let (wave_decl, wave_ports, wave_read) = if cfg.dense() {
        (
            format!("\n  reg [2:0] wave_op = 0;\n  reg wave_swap = 0, wave_update = 0, wave_load = 0;\n  reg [{}:0] wave_load_row = 0;", rb - 1),
            ",\n    .wave_op(wave_op), .wave_swap(wave_swap), .wave_update(wave_update),\n    .wave_load(wave_load), .wave_load_row(wave_load_row)".to_string(),
            "\n      code = $fscanf(fd, \"%h %h %h %h %h\", m, l, dv, rs, v); wave_op = m[2:0]; wave_swap = l[0]; wave_update = dv[0]; wave_load = rs[0]; wave_load_row = v;".to_string(),
        )
    } else {
        Default::default()
    };
    format!(
        r#"// Icarus harness for sa_top ({tag}); see testbench/cpp/tb_sa_top.cpp for the protocol.
`timescale 1ns/1ps
module tb;
  localparam R = {r}, C = {c}, DW = {dw}, AW = {aw};
  reg clk = 0, rst = 1, dy_valid = 0;
  reg [3:0] mode = 0;
  reg [5:0] lr_shift = 0;
  reg [R*DW-1:0] x_in = 0;
  reg [C*DW-1:0] w_in = 0, dy_in = 0;
  wire [C*AW-1:0] y_out;
  wire [R*AW-1:0] dx_out, dw_out;
  wire [C*DW-1:0] w_out;{wave_decl}
  sa_top dut (.clk(clk), .rst(rst), .mode(mode), .lr_shift(lr_shift), .x_in(x_in),
    .w_in(w_in), .dy_in(dy_in), .dy_valid(dy_valid), .y_out(y_out), .dx_out(dx_out),
    .dw_out(dw_out), .w_out(w_out){wave_ports});

  reg [8*1024-1:0] stim_path, out_path, magic;
  integer fd, fo, code, k, version, hr, hc, hdw, haw;
  reg [63:0] v, m, l, dv, rs;
  initial begin
    if (!$value$plusargs("stim=%s", stim_path) || !$value$plusargs("out=%s", out_path)) begin
      $display("usage: vvp tb +stim=FILE +out=FILE"); $finish;
    end
    fd = $fopen(stim_path, "r");
    fo = $fopen(out_path, "w");
    code = $fscanf(fd, "%s %d %d %d %d %d", magic, version, hr, hc, hdw, haw);
    if (code != 6 || (version < 1 || version > 3) || hr != R || hc != C || hdw != DW || haw != AW) begin
      $display("stimulus header does not match this testbench"); $finish;
    end
    #1 clk = 1; #1 clk = 0; rst = 0;
    // Version 2 has the rst column after dy_valid; version 1 none (reset low).
    rs = 0;
    while ($fscanf(fd, "%h %h %h", m, l, dv) == 3) begin
      if (version >= 2) code = $fscanf(fd, "%h", rs);
      mode = m[3:0]; lr_shift = l[5:0]; dy_valid = dv[0]; rst = rs[0]; rs = 0;
      for (k = 0; k < R; k = k + 1) begin code = $fscanf(fd, "%h", v); x_in[k*DW +: DW] = v[DW-1:0]; end
      for (k = 0; k < C; k = k + 1) begin code = $fscanf(fd, "%h", v); w_in[k*DW +: DW] = v[DW-1:0]; end
      for (k = 0; k < C; k = k + 1) begin code = $fscanf(fd, "%h", v); dy_in[k*DW +: DW] = v[DW-1:0]; end{wave_read}
      #1;
      for (k = 0; k < C; k = k + 1) $fwrite(fo, " %h", y_out[k*AW +: AW]);
      for (k = 0; k < R; k = k + 1) $fwrite(fo, " %h", dx_out[k*AW +: AW]);
      for (k = 0; k < R; k = k + 1) $fwrite(fo, " %h", dw_out[k*AW +: AW]);
      for (k = 0; k < C; k = k + 1) $fwrite(fo, " %h", w_out[k*DW +: DW]);
      $fwrite(fo, "\n");
      clk = 1; #1 clk = 0;
    end
    $fclose(fo);
    $finish;
  end
endmodule
"#,
        tag = cfg.tag()
    )
}

/// Compiles and runs the Icarus testbench on `stimulus`; returns the port trace text.
pub fn run_icarus(cfg: &ArrayConfig, stimulus: &str, work: &Path) -> Result<String, ToolError> {
    run_icarus_files(cfg, &sysgrad_hdl::generate(cfg), stimulus, work)
}

/// [`run_icarus`] on the given Verilog files.
pub fn run_icarus_files(
    cfg: &ArrayConfig,
    files: &[sysgrad_hdl::VerilogFile],
    stimulus: &str,
    work: &Path,
) -> Result<String, ToolError> {
    std::fs::create_dir_all(work)?;
    let work = &work.canonicalize()?;
    let mut cmd = Command::new("iverilog");
    cmd.args(["-g2012", "-o", "tb.vvp", "-s", "tb"]);
    for f in files {
        std::fs::write(work.join(&f.name), &f.text)?;
        cmd.arg(&f.name);
    }
    std::fs::write(work.join("tb.v"), testbench(cfg))?;
    cmd.arg("tb.v");
    run(&mut cmd, work)?;
    std::fs::write(work.join("stimulus.txt"), stimulus)?;
    run(
        Command::new("vvp").args([
            "-n",
            "tb.vvp",
            "+stim=stimulus.txt",
            "+out=ports_icarus.txt",
        ]),
        work,
    )?;
    Ok(std::fs::read_to_string(work.join("ports_icarus.txt"))?)
}
