//! Directed test of `sa_accel`'s host interface in Icarus, at its AXI
//! ports: `ID` and `FORMAT` read what `sysgrad_isa::host` says, and the
//! DMA moves each target's words by its word rule (`DmaTarget::word`,
//! docs/HOST.md): unpacked write beats that do not fit are stored
//! saturated (fixed point) or with the bits above their pattern cleared
//! (a float format), with DMA error `VALUE`; packed fields keep their
//! low bits without one; read beats come back sign-extended or, for a
//! pattern, zero-extended. The expected words come from
//! `sysgrad_isa::host::Word`, independently of the emulator; a float
//! configuration with E4M3 activations and E5M2 gradients in 16-bit
//! words and a fixed-point one run the same transfers.

mod common;

use common::{cfg, float, require_tool, run, write};
use std::fmt::Write;
use std::process::Command;
use sysgrad_config::float::{FloatKind, Rounding};
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_isa::host::{
    self, lanes_per_beat, reg, status, DmaError, DmaTarget, DMA_PACKED, DMA_READ, DMA_WRITE,
    ID_VALUE,
};

/// One DMA write and the read of the same line: the beats sent, and
/// whether they are packed.
struct Transfer {
    target: DmaTarget,
    packed: bool,
    beats: Vec<u64>,
}

/// The transfers: beats with bits above a pattern or a signed word, a
/// negative bf16 (0xBF80: bit 15 set, so sign- and zero-extension
/// differ), an accumulator beat with bits above 32, packed fields with
/// high garbage. Every target has 2 lanes a line (a 2 x 2 array).
fn transfers() -> Vec<Transfer> {
    let t = |target, packed, beats: &[u64]| Transfer {
        target,
        packed,
        beats: beats.to_vec(),
    };
    vec![
        t(DmaTarget::Activations, false, &[0x142, 0x80]),
        t(DmaTarget::Weights, false, &[0xBF80, 0x3F80]),
        t(DmaTarget::Gradients, true, &[0x1234_ABCD]),
        t(DmaTarget::Gradients, false, &[0x7C, 0xFC]),
        t(
            DmaTarget::Accumulators,
            false,
            &[0xFFFF_FFFF_C000_0000, 0x3F80_0000],
        ),
    ]
}

/// The words a transfer stores, and whether a beat did not fit.
fn stored(cfg: &ArrayConfig, x: &Transfer) -> (Vec<i64>, bool) {
    let word = x.target.word(cfg);
    if !x.packed {
        let misfit = x.beats.iter().any(|&b| !word.fits(b as i64));
        return (
            x.beats.iter().map(|&b| word.stored(b as i64)).collect(),
            misfit,
        );
    }
    let bits = x.target.word_bits(cfg);
    let lanes = x.target.lanes(cfg);
    let per = lanes_per_beat(bits);
    let words = (0..lanes)
        .map(|l| word.from_raw(x.beats[l / per] >> (bits as usize * (l % per))))
        .collect();
    (words, false)
}

/// The beats a read of `words` gives: one a word (its 64-bit value:
/// sign-extended, or a pattern zero-extended) or packed fields.
fn read_beats(cfg: &ArrayConfig, x: &Transfer, words: &[i64]) -> Vec<u64> {
    if !x.packed {
        return words.iter().map(|&w| w as u64).collect();
    }
    let bits = x.target.word_bits(cfg);
    let per = lanes_per_beat(bits);
    let mask = |w: i64| (w as u64) & ((1u64 << bits) - 1);
    words
        .chunks(per)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0, |b, (i, &w)| b | mask(w) << (bits as usize * i))
        })
        .collect()
}

const BENCH: &str = r#"`default_nettype none
module tb;
  reg clk = 1'b0;
  always #5 clk = ~clk;
  reg rst = 1'b1;
  reg [11:0] awaddr = 12'd0, araddr = 12'd0;
  reg awvalid = 1'b0, wvalid = 1'b0, arvalid = 1'b0;
  reg [31:0] wdata = 32'd0;
  reg [63:0] s_tdata = 64'd0;
  reg s_tvalid = 1'b0;
  wire awready, wready, bvalid, arready, rvalid, s_tready, m_tvalid, m_tlast;
  wire [1:0] bresp, rresp;
  wire [31:0] rdata;
  wire [63:0] m_tdata;
  sa_accel dut (
    .clk(clk), .rst(rst),
    .s_axil_awaddr(awaddr), .s_axil_awvalid(awvalid), .s_axil_awready(awready),
    .s_axil_wdata(wdata), .s_axil_wstrb(4'hf), .s_axil_wvalid(wvalid), .s_axil_wready(wready),
    .s_axil_bresp(bresp), .s_axil_bvalid(bvalid), .s_axil_bready(1'b1),
    .s_axil_araddr(araddr), .s_axil_arvalid(arvalid), .s_axil_arready(arready),
    .s_axil_rdata(rdata), .s_axil_rresp(rresp), .s_axil_rvalid(rvalid), .s_axil_rready(1'b1),
    .s_axis_tdata(s_tdata), .s_axis_tvalid(s_tvalid), .s_axis_tready(s_tready),
    .m_axis_tdata(m_tdata), .m_axis_tvalid(m_tvalid), .m_axis_tready(1'b1),
    .m_axis_tlast(m_tlast)
  );
  // Inputs change at falling edges; a handshake completes at the rising
  // edge after a falling edge at which ready was high.
  task wr(input [11:0] a, input [31:0] d);
    begin
      @(negedge clk); awaddr = a; wdata = d; awvalid = 1'b1; wvalid = 1'b1;
      #1 while (!awready) begin @(negedge clk); #1; end
      @(negedge clk); awvalid = 1'b0; wvalid = 1'b0;
    end
  endtask
  task rd(input [11:0] a);
    begin
      @(negedge clk); araddr = a; arvalid = 1'b1;
      #1 while (!arready) begin @(negedge clk); #1; end
      @(negedge clk); arvalid = 1'b0;
      $display("R %h", rdata);
    end
  endtask
  task beat(input [63:0] d);
    begin
      @(negedge clk); s_tdata = d; s_tvalid = 1'b1;
      #1 while (!s_tready) begin @(negedge clk); #1; end
      @(negedge clk); s_tvalid = 1'b0;
    end
  endtask
  task collect(input integer n);
    integer k;
    begin
      k = 0;
      while (k < n) begin
        @(negedge clk);
        if (m_tvalid) begin $display("B %h", m_tdata); k = k + 1; end
      end
    end
  endtask
  initial begin
    repeat (4) @(negedge clk);
    rst = 1'b0;
@BODY@
    repeat (4) @(negedge clk);
    $finish;
  end
endmodule
"#;

/// The bench's steps for the transfers, and the lines it must print.
fn bench(cfg: &ArrayConfig) -> (String, Vec<String>) {
    let mut body = String::new();
    let mut want = Vec::new();
    let mut step = |s: String| writeln!(body, "    {s}").unwrap();
    let rd = |step: &mut dyn FnMut(String), want: &mut Vec<String>, off: u32, v: u32| {
        step(format!("rd(12'h{off:03x});"));
        want.push(format!("R {v:08x}"));
    };
    rd(&mut step, &mut want, reg::ID, ID_VALUE);
    rd(&mut step, &mut want, reg::FORMAT, host::format::value(cfg));
    for x in transfers() {
        let (words, misfit) = stored(cfg, &x);
        let packed = if x.packed { DMA_PACKED } else { 0 };
        step(format!(
            "wr(12'h{:03x}, {});",
            reg::DMA_TARGET,
            x.target.code()
        ));
        step(format!("wr(12'h{:03x}, 0);", reg::DMA_ADDR));
        step(format!("wr(12'h{:03x}, 1);", reg::DMA_COUNT));
        step(format!(
            "wr(12'h{:03x}, {});",
            reg::DMA_CTRL,
            DMA_WRITE | packed
        ));
        for b in &x.beats {
            step(format!("beat(64'h{b:016x});"));
        }
        step("repeat (4) @(negedge clk);".into());
        let err = if misfit { DmaError::Value as u32 } else { 0 };
        rd(
            &mut step,
            &mut want,
            reg::STATUS,
            err << status::DMA_ERROR_SHIFT,
        );
        let beats = read_beats(cfg, &x, &words);
        step(format!(
            "wr(12'h{:03x}, {});",
            reg::DMA_CTRL,
            DMA_READ | packed
        ));
        step(format!("collect({});", beats.len()));
        want.extend(beats.iter().map(|b| format!("B {b:016x}")));
        step("repeat (4) @(negedge clk);".into());
    }
    (BENCH.replace("@BODY@\n", &body), want)
}

fn simulate(cfg: &ArrayConfig) {
    let dir = tempfile::tempdir().unwrap();
    let mut files = write(cfg, dir.path());
    let (tb, want) = bench(cfg);
    std::fs::write(dir.path().join("tb.v"), tb).unwrap();
    files.push("tb.v".into());
    run(
        Command::new("iverilog")
            .args(["-g2012", "-o", "sim", "-s", "tb"])
            .args(&files),
        dir.path(),
    );
    let out = run(Command::new("vvp").args(["-n", "sim"]), dir.path());
    let got: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("R ") || l.starts_with("B "))
        .collect();
    assert_eq!(got, want, "{}", cfg.tag());
}

#[test]
#[ignore = "needs iverilog"]
fn the_dma_moves_each_targets_words_by_its_rule_and_format_reads_the_format() {
    require_tool("iverilog");
    use FloatKind::*;
    let base = || cfg(2, 2, Backward::Interleaved, 8, 24, 4);
    simulate(&float(base(), [Bf16, E4M3, E5M2], Rounding::Nearest));
    simulate(&base());
}
