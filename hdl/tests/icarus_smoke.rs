//! Functional smoke test in Icarus, at the ports of `sa_top`: reset, LOAD,
//! FWD, a backward pass, UPDATE (read back through `w_out` while the next
//! tile loads), a second backward pass and DRAIN. The expected values come
//! from the dataflow and timing rules of docs/ARCHITECTURE.md, with the
//! arithmetic of `sysgrad_config::fixed`; they are independent of the
//! emulator, which the testbench crate compares register by register.

// Matrix arithmetic reads best with explicit indices.
#![allow(clippy::needless_range_loop)]

mod common;
mod sim;

use common::{cfg, require_tool, run, write};
use sim::{packed, unpack, Mat, Rng};
use std::collections::HashMap;
use std::fmt::Write;
use std::process::Command;
use sysgrad_config::fixed::{acc_add, sgd_update};
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_isa::Mode;

const IDLE: u8 = Mode::Idle as u8;
const LOAD: u8 = Mode::Load as u8;
const FWD: u8 = Mode::Fwd as u8;
const BWD_DX: u8 = Mode::BwdDx as u8;
const BWD_DW: u8 = Mode::BwdDw as u8;
const BWD_IL: u8 = Mode::BwdIl as u8;
const UPDATE: u8 = Mode::Update as u8;
const DRAIN: u8 = Mode::Drain as u8;

/// Columns per stream (N).
const N: usize = 5;

/// The inputs of one cycle.
#[derive(Clone, Default)]
struct Inputs {
    rst: bool,
    mode: u8,
    lr_shift: u32,
    x: Vec<i64>,
    w: Vec<i64>,
    dy: Vec<i64>,
    valid: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Port {
    Y,
    Dx,
    Dw,
    W,
}

/// `port[lane]` must read `value` in `cycle` (observed before its edge).
struct Expect {
    cycle: usize,
    port: Port,
    lane: usize,
    value: i64,
    what: &'static str,
}

struct Program {
    r: usize,
    c: usize,
    aw: u32,
    cycles: Vec<Inputs>,
    expect: Vec<Expect>,
}

impl Program {
    fn now(&self) -> usize {
        self.cycles.len()
    }
    /// Appends a cycle in `mode` with zero data, adjusted by `set`.
    fn step(&mut self, mode: u8, set: impl FnOnce(&mut Inputs)) {
        let mut i = Inputs {
            mode,
            x: vec![0; self.r],
            w: vec![0; self.c],
            dy: vec![0; self.c],
            ..Inputs::default()
        };
        set(&mut i);
        self.cycles.push(i);
    }
    fn expect(&mut self, cycle: usize, port: Port, lane: usize, value: i64, what: &'static str) {
        self.expect.push(Expect {
            cycle,
            port,
            lane,
            value,
            what,
        });
    }

    /// R LOAD cycles, bottom row first; `w_out` shows the `old` weights.
    fn load(&mut self, w: &Mat, old: &Mat) {
        for k in 0..self.r {
            let row = self.r - 1 - k;
            self.step(LOAD, |i| i.w = w.iter().map(|col| col[row]).collect());
            for (j, old_col) in old.iter().enumerate() {
                self.expect(
                    self.now() - 1,
                    Port::W,
                    j,
                    old_col[row],
                    "w_out during LOAD",
                );
            }
        }
    }

    /// One pass: N + R + C - 1 cycles in `mode`, column n of the streams in
    /// cycle t0 + n; returns t0.
    fn pass(&mut self, mode: u8, x: Option<&Mat>, dy: Option<&Mat>) -> usize {
        let t0 = self.now();
        for t in 0..N + self.r + self.c - 1 {
            self.step(mode, |i| {
                if t < N {
                    if let Some(x) = x {
                        i.x = x.iter().map(|row| row[t]).collect();
                    }
                    if let Some(dy) = dy {
                        i.dy = dy.iter().map(|row| row[t]).collect();
                        i.valid = true;
                    }
                }
            });
        }
        t0
    }

    /// FWD pass: `y_out` shows `Y[.][n]` in cycle t0 + n + R + C.
    fn forward(&mut self, w: &Mat, x: &Mat) {
        let t0 = self.pass(FWD, Some(x), None);
        for n in 0..N {
            for (j, w_row) in w.iter().enumerate() {
                // psv flows south, saturating in every PE.
                let y = (0..self.r).fold(0, |acc, i| acc_add(acc, w_row[i] * x[i][n], self.aw));
                self.expect(t0 + n + self.r + self.c, Port::Y, j, y, "y_out");
            }
        }
    }

    /// A backward pass (BWD_IL, or BWD_DX then BWD_DW); returns dW.
    fn backward(&mut self, w: &Mat, dy: &Mat, x: &Mat, interleaved: bool) -> Mat {
        let t0 = if interleaved {
            self.pass(BWD_IL, Some(x), Some(dy))
        } else {
            let t0 = self.pass(BWD_DX, None, Some(dy));
            self.pass(BWD_DW, Some(x), Some(dy));
            t0
        };
        for n in 0..N {
            for i in 0..self.r {
                // psh flows east, saturating in every PE.
                let dx = (0..self.c).fold(0, |acc, j| acc_add(acc, w[j][i] * dy[j][n], self.aw));
                self.expect(t0 + n + self.r + self.c, Port::Dx, i, dx, "dx_out");
            }
        }
        (0..self.c)
            .map(|j| {
                (0..self.r)
                    .map(|i| (0..N).fold(0, |acc, n| acc_add(acc, dy[j][n] * x[i][n], self.aw)))
                    .collect()
            })
            .collect()
    }

    /// C DRAIN cycles: in cycle k, `dw_out[i]` shows dw of PE(i, C-1-k);
    /// afterwards every dw is 0.
    fn drain(&mut self, dw: &Mat) {
        for k in 0..self.c {
            self.step(DRAIN, |_| {});
            for i in 0..self.r {
                let v = dw[self.c - 1 - k][i];
                self.expect(self.now() - 1, Port::Dw, i, v, "dw_out during DRAIN");
            }
        }
        for i in 0..self.r {
            self.expect(self.now(), Port::Dw, i, 0, "dw_out after DRAIN");
        }
    }
}

fn scenario(cfg: &ArrayConfig, lr_shift: u32, seed: u64) -> Program {
    let (r, c) = (cfg.rows(), cfg.cols());
    let f = cfg.format();
    let mut rng = Rng(seed);
    let mut p = Program {
        r,
        c,
        aw: f.acc_bits,
        cycles: Vec::new(),
        expect: Vec::new(),
    };
    let zero = vec![vec![0; r]; c];
    let w = rng.mat(c, r, f.in_bits);
    p.step(IDLE, |i| i.rst = true);
    for (port, lanes) in [(Port::Y, c), (Port::Dx, r), (Port::Dw, r), (Port::W, c)] {
        for k in 0..lanes {
            p.expect(1, port, k, 0, "output after reset");
        }
    }
    p.load(&w, &zero);
    p.forward(&w, &rng.mat(r, N, f.in_bits));
    let dw = p.backward(
        &w,
        &rng.mat(c, N, f.in_bits),
        &rng.mat(r, N, f.in_bits),
        cfg.interleaved(),
    );
    p.step(UPDATE, |i| i.lr_shift = lr_shift);
    let updated: Mat = (0..c)
        .map(|j| {
            (0..r)
                .map(|i| {
                    sgd_update(
                        w[j][i],
                        dw[j][i],
                        f.frac_bits,
                        lr_shift,
                        f.in_bits,
                        f.acc_bits,
                    )
                })
                .collect()
        })
        .collect();
    // Loading the next tile shows the updated weights.
    let w2 = rng.mat(c, r, f.in_bits);
    p.load(&w2, &updated);
    // The second pass uses BWD_DX + BWD_DW on every array.
    let dw2 = p.backward(
        &w2,
        &rng.mat(c, N, f.in_bits),
        &rng.mat(r, N, f.in_bits),
        false,
    );
    if !cfg.interleaved() {
        // A sequential array treats BWD_IL as IDLE: PE(0,0), fed directly
        // (lane 0 of both skews is a wire), must not accumulate. Then flush
        // the skews with zeros before draining.
        p.step(BWD_IL, |i| {
            i.x = vec![5; r];
            i.dy = vec![3; c];
            i.valid = true;
        });
        for _ in 0..r.max(c) {
            p.step(IDLE, |_| {});
        }
    }
    p.drain(&dw2);
    for _ in 0..r + c {
        p.step(IDLE, |_| {});
    }
    p
}

fn testbench(cfg: &ArrayConfig, cycles: &[Inputs]) -> String {
    let (r, c) = (cfg.rows(), cfg.cols());
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    let mut s = String::from(
        "module tb;\n  reg clk, rst, dy_valid;\n  reg [3:0] mode;\n  reg [5:0] lr_shift;\n",
    );
    writeln!(
        s,
        "  reg [{}:0] x_in;\n  reg [{}:0] w_in, dy_in;",
        r as u32 * dw - 1,
        c as u32 * dw - 1
    )
    .unwrap();
    writeln!(
        s,
        "  wire [{}:0] y_out;\n  wire [{}:0] dx_out, dw_out;",
        c as u32 * aw - 1,
        r as u32 * aw - 1
    )
    .unwrap();
    writeln!(s, "  wire [{}:0] w_out;", c as u32 * dw - 1).unwrap();
    s.push_str("  sa_top dut (.clk(clk), .rst(rst), .mode(mode), .lr_shift(lr_shift), .x_in(x_in), .w_in(w_in),\n");
    s.push_str("    .dy_in(dy_in), .dy_valid(dy_valid), .y_out(y_out), .dx_out(dx_out), .dw_out(dw_out), .w_out(w_out));\n");
    s.push_str("  initial begin\n    clk = 1'b0;\n");
    for (t, i) in cycles.iter().enumerate() {
        writeln!(
            s,
            "    rst = {}; mode = {}; lr_shift = {}; x_in = {}; w_in = {}; dy_in = {}; dy_valid = {};",
            i.rst as u8,
            i.mode,
            i.lr_shift,
            packed(&i.x, dw),
            packed(&i.w, dw),
            packed(&i.dy, dw),
            i.valid as u8
        )
        .unwrap();
        // Sample just before the rising edge: the values after edge t-1.
        writeln!(
            s,
            "    #1 $display(\"%0d %h %h %h %h\", {t}, y_out, dx_out, dw_out, w_out);"
        )
        .unwrap();
        s.push_str("    #1 clk = 1'b1;\n    #1 clk = 1'b0;\n");
    }
    s.push_str("    $finish;\n  end\nendmodule\n");
    s
}

fn simulate(cfg: &ArrayConfig, lr_shift: u32, seed: u64) {
    let p = scenario(cfg, lr_shift, seed);
    assert!(p.expect.iter().all(|e| e.cycle < p.cycles.len()));
    let dir = tempfile::tempdir().unwrap();
    let mut files = write(cfg, dir.path());
    std::fs::write(dir.path().join("tb.v"), testbench(cfg, &p.cycles)).unwrap();
    files.push("tb.v".into());
    run(
        Command::new("iverilog")
            .args(["-g2012", "-o", "tb.vvp", "-s", "tb"])
            .args(&files),
        dir.path(),
    );
    let out = run(Command::new("vvp").args(["-n", "tb.vvp"]), dir.path());
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    let mut seen: HashMap<(usize, Port), Option<Vec<i64>>> = HashMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Ok(t) = f
            .first()
            .map_or(Err(()), |t| t.parse::<usize>().map_err(|_| ()))
        else {
            continue;
        };
        assert_eq!(f.len(), 5, "unexpected line: {line}");
        seen.insert((t, Port::Y), unpack(f[1], aw, cfg.cols()));
        seen.insert((t, Port::Dx), unpack(f[2], aw, cfg.rows()));
        seen.insert((t, Port::Dw), unpack(f[3], aw, cfg.rows()));
        seen.insert((t, Port::W), unpack(f[4], dw, cfg.cols()));
    }
    let wrong: Vec<String> = p
        .expect
        .iter()
        .filter_map(|e| {
            let got = seen
                .get(&(e.cycle, e.port))
                .cloned()
                .flatten()
                .map(|v| v[e.lane]);
            (got != Some(e.value)).then(|| {
                format!(
                    "cycle {} {:?}[{}] ({}): expected {}, got {got:?}",
                    e.cycle, e.port, e.lane, e.what, e.value
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{}: {} of {} checks failed:\n{}",
        cfg.tag(),
        wrong.len(),
        p.expect.len(),
        wrong[..wrong.len().min(20)].join("\n")
    );
}

#[test]
#[ignore = "needs iverilog"]
fn sa_top_computes_what_the_architecture_says() {
    require_tool("iverilog");
    require_tool("vvp");
    use Backward::*;
    // (config, lr_shift): 16-bit accumulators of 8-bit data saturate often;
    // lr_shift 63 makes FRAC + lr_shift >= AW (no update).
    for (k, (cfg, lr_shift)) in [
        (cfg(2, 3, Interleaved, 8, 16, 4), 1),
        (cfg(3, 2, Sequential, 8, 16, 4), 0),
        (cfg(4, 4, Interleaved, 8, 32, 3), 2),
        (cfg(1, 1, Interleaved, 4, 16, 0), 63),
        (cfg(3, 1, Sequential, 6, 16, 0), 5),
        (cfg(1, 3, Sequential, 16, 32, 15), 3),
    ]
    .into_iter()
    .enumerate()
    {
        simulate(&cfg, lr_shift, 0x9e37_79b9_7f4a_7c15 ^ k as u64);
    }
}
