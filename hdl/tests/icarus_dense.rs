//! Directed test of a dense `sa_top` in Icarus, at its ports: tiles
//! exchanged in slots while the previous tile computes, a swap, forward
//! and backward waves, a swap that sends the old tile out SGD-updated, a
//! DW stream, bubbles (every code a dense array does not have, with
//! garbage on the wave inputs), DRAIN, UPDATE, and the updated tile read
//! back by the next tile's slots. The expected values come from
//! docs/ARCHITECTURE.md (Dense pipelining: a wave applied in cycle t shows
//! its Y, dX and evicted weights in cycle t + R + C) with the arithmetic of
//! `sysgrad_config::fixed`, independently of the emulator.

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
use sysgrad_config::{ArrayConfig, Backward, Pipelining, LR_SHIFT_BITS};
use sysgrad_isa::mode::{load_row_bits, MODE_BITS, WAVE_OP_BITS};
use sysgrad_isa::Mode;

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
    op: u8,
    swap: bool,
    update: bool,
    load: bool,
    row: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Port {
    Y,
    Dx,
    Dw,
    W,
}

struct Expect {
    cycle: usize,
    port: Port,
    lane: usize,
    value: i64,
    what: &'static str,
}

/// One wave: its operation, control and data column.
#[derive(Clone, Default)]
struct Wave {
    op: Option<Mode>,
    swap: bool,
    /// With `swap`: the learning-rate shift of the update.
    update: Option<u32>,
    /// An exchange slot: row and weights (lane j for column j).
    slot: Option<(usize, Vec<i64>)>,
    x: Option<Vec<i64>>,
    dy: Option<Vec<i64>>,
}

struct Program {
    cfg: ArrayConfig,
    cycles: Vec<Inputs>,
    expect: Vec<Expect>,
}

impl Program {
    fn r(&self) -> usize {
        self.cfg.rows()
    }
    fn c(&self) -> usize {
        self.cfg.cols()
    }
    fn aw(&self) -> u32 {
        self.cfg.format().acc_bits
    }
    fn now(&self) -> usize {
        self.cycles.len()
    }
    /// When the results of a wave applied now reach the outputs.
    fn out_cycle(&self) -> usize {
        self.now() + self.r() + self.c()
    }
    fn zeros(&self, mode: u8) -> Inputs {
        Inputs {
            mode,
            x: vec![0; self.r()],
            w: vec![0; self.c()],
            dy: vec![0; self.c()],
            ..Inputs::default()
        }
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

    /// A STREAM cycle carrying `wave`.
    fn wave(&mut self, wave: Wave) {
        let mut i = self.zeros(Mode::Stream as u8);
        i.op = wave.op.map_or(0, |m| m as u8);
        i.swap = wave.swap;
        i.update = wave.update.is_some();
        i.lr_shift = wave.update.unwrap_or(0);
        if let Some((row, w)) = wave.slot {
            (i.load, i.row, i.w) = (true, row, w);
        }
        if let Some(x) = wave.x {
            i.x = x;
        }
        if let Some(dy) = wave.dy {
            (i.dy, i.valid) = (dy, true);
        }
        self.cycles.push(i);
    }

    /// `count` cycles in modes that take a bubble, with garbage on the wave
    /// and data inputs (outside STREAM cycles they must not matter).
    fn bubbles(&mut self, count: usize, rng: &mut Rng) {
        let codes: Vec<u8> = (0..1u8 << MODE_BITS)
            .filter(|c| Mode::dense_from_code(*c) == Mode::Idle)
            .collect();
        let bits = self.cfg.format().in_bits;
        for k in 0..count {
            let mut i = self.zeros(codes[k % codes.len()]);
            i.op = Mode::Fwd as u8;
            (i.swap, i.update, i.load, i.row) = (true, true, true, 0);
            i.lr_shift = 1;
            i.x = (0..self.r()).map(|_| rng.data(bits)).collect();
            i.w = (0..self.c()).map(|_| rng.data(bits)).collect();
            i.dy = (0..self.c()).map(|_| rng.data(bits)).collect();
            i.valid = true;
            self.cycles.push(i);
        }
    }

    /// A global-mode cycle (UPDATE or DRAIN).
    fn global(&mut self, mode: Mode, lr_shift: u32) {
        let mut i = self.zeros(mode as u8);
        i.lr_shift = lr_shift;
        self.cycles.push(i);
    }

    /// A stream of `waves.len()` waves over the active tile `w`; the
    /// waves' Y and dX are expected from `w`, their slots' evicted weights
    /// from `evicted` (row k of the slot for row k).
    fn stream(&mut self, w: &Mat, waves: Vec<Wave>, evicted: Option<&Mat>) {
        for wave in waves {
            let (r, c, aw) = (self.r(), self.c(), self.aw());
            let t = self.out_cycle();
            let op = wave.op.map_or(Mode::Idle, |m| {
                Mode::wave_op_from_code(m as u8, self.cfg.interleaved())
            });
            let x = wave.x.clone().unwrap_or(vec![0; r]);
            let dy = wave.dy.clone().unwrap_or(vec![0; c]);
            for j in 0..c {
                // Partial sums flow south through every PE of the column.
                let y = (0..r).fold(0, |a, i| acc_add(a, w[j][i] * x[i], aw));
                let y = if op == Mode::Fwd { y } else { 0 };
                self.expect(t, Port::Y, j, y, "y_out");
            }
            for i in 0..r {
                let dx = (0..c).fold(0, |a, j| acc_add(a, w[j][i] * dy[j], aw));
                let dx = if op.computes_dx() { dx } else { 0 };
                self.expect(t, Port::Dx, i, dx, "dx_out");
            }
            if let (Some((row, _)), Some(old)) = (&wave.slot, evicted) {
                for j in 0..c {
                    self.expect(t, Port::W, j, old[j][*row], "w_out of a slot");
                }
            }
            self.wave(wave);
        }
    }
}

/// dW of a stream of `n` columns of dY and X (all valid), in stream order.
fn dw_of(dy: &Mat, x: &Mat, aw: u32) -> Mat {
    (0..dy.len())
        .map(|j| {
            (0..x.len())
                .map(|i| (0..N).fold(0, |a, n| acc_add(a, dy[j][n] * x[i][n], aw)))
                .collect()
        })
        .collect()
}

/// Wave n of a stream of `op` over columns n of `x` and `dy`; waves past
/// the N columns (padding a stream to R waves for its slots) are bubbles.
fn data<'a>(x: Option<&'a Mat>, dy: Option<&'a Mat>, op: Mode) -> impl Fn(usize) -> Wave + 'a {
    move |n| Wave {
        op: (n < N).then_some(op),
        x: x.filter(|_| n < N).map(|x| column(x, n)),
        dy: dy.filter(|_| n < N).map(|dy| column(dy, n)),
        ..Wave::default()
    }
}

fn column(m: &Mat, n: usize) -> Vec<i64> {
    m.iter().map(|row| row[n]).collect()
}

/// The waves of a stream of `len` waves: `data(n)` for wave n, the first
/// one swapping (with `update`), and the slots of `next` in the first R.
fn waves(
    len: usize,
    swap: bool,
    update: Option<u32>,
    next: Option<&Mat>,
    rows: usize,
    data: impl Fn(usize) -> Wave,
) -> Vec<Wave> {
    (0..len)
        .map(|n| {
            let mut w = data(n);
            if n == 0 {
                (w.swap, w.update) = (swap, update);
            }
            if let Some(next) = next.filter(|_| n < rows) {
                w.slot = Some((n, column_of_tile(next, n)));
            }
            w
        })
        .collect()
}

/// Row `i` of a tile as a slot carries it: lane j = W[j][i].
fn column_of_tile(w: &Mat, i: usize) -> Vec<i64> {
    w.iter().map(|col| col[i]).collect()
}

fn sgd_tile(cfg: &ArrayConfig, w: &Mat, dw: &Mat, lr: u32) -> Mat {
    let f = cfg.format();
    w.iter()
        .zip(dw)
        .map(|(wr, dr)| {
            wr.iter()
                .zip(dr)
                .map(|(w, d)| sgd_update(*w, *d, f.frac_bits, lr, f.in_bits, f.acc_bits))
                .collect()
        })
        .collect()
}

fn scenario(cfg: &ArrayConfig, seed: u64) -> Program {
    let (r, c) = (cfg.rows(), cfg.cols());
    let f = cfg.format();
    let (bits, aw) = (f.in_bits, f.acc_bits);
    let mut rng = Rng(seed);
    let mut p = Program {
        cfg: *cfg,
        cycles: Vec::new(),
        expect: Vec::new(),
    };
    let zero = vec![vec![0; r]; c];
    let (a, b, tc) = (
        rng.mat(c, r, bits),
        rng.mat(c, r, bits),
        rng.mat(c, r, bits),
    );
    let mut reset = p.zeros(Mode::Idle as u8);
    reset.rst = true;
    p.cycles.push(reset);
    for (port, lanes) in [(Port::Y, c), (Port::Dx, r), (Port::Dw, r), (Port::W, c)] {
        for k in 0..lanes {
            p.expect(1, port, k, 0, "output after reset");
        }
    }
    let len = N.max(r);
    // Tile A's slots (bubbles of data), evicting the reset zeros.
    let slots_a = waves(r, false, None, Some(&a), r, |_| Wave::default());
    p.stream(&zero, slots_a, Some(&zero));
    // Swap A in; forward over A while B's slots evict the zeros A left.
    let x1 = rng.mat(r, N, bits);
    let s1 = waves(
        len,
        true,
        None,
        Some(&b),
        r,
        data(Some(&x1), None, Mode::Fwd),
    );
    p.stream(&a, s1, Some(&zero));
    // Backward over A, no swap: dX now, dW accumulated from the swap on.
    let (dy2, x2) = (rng.mat(c, N, bits), rng.mat(r, N, bits));
    if cfg.interleaved() {
        let s2 = waves(
            N,
            false,
            None,
            None,
            r,
            data(Some(&x2), Some(&dy2), Mode::BwdIl),
        );
        p.stream(&a, s2, None);
    } else {
        let dx = waves(N, false, None, None, r, data(None, Some(&dy2), Mode::BwdDx));
        p.stream(&a, dx, None);
        let dw = waves(
            N,
            false,
            None,
            None,
            r,
            data(Some(&x2), Some(&dy2), Mode::BwdDw),
        );
        p.stream(&a, dw, None);
    }
    let lr1 = 1;
    let a_updated = sgd_tile(cfg, &a, &dw_of(&dy2, &x2, aw), lr1);
    // Swap B in with the update of A: C's slots send A out updated (row 0's
    // slot in the swap wave itself).
    let x3 = rng.mat(r, N, bits);
    let s3 = waves(
        len,
        true,
        Some(lr1),
        Some(&tc),
        r,
        data(Some(&x3), None, Mode::Fwd),
    );
    p.stream(&b, s3, Some(&a_updated));
    // A DW stream over B; on a sequential array an IL wave does nothing.
    let (dy4, x4) = (rng.mat(c, N, bits), rng.mat(r, N, bits));
    let s4 = waves(
        N,
        false,
        None,
        None,
        r,
        data(Some(&x4), Some(&dy4), Mode::BwdDw),
    );
    p.stream(&b, s4, None);
    if !cfg.interleaved() {
        let il = Wave {
            op: Some(Mode::BwdIl),
            x: Some(vec![5; r]),
            dy: Some(vec![3; c]),
            ..Wave::default()
        };
        p.stream(&b, vec![il], None);
    }
    // Every wave has passed every PE after R + C - 1 cycles.
    p.bubbles(r + c - 1, &mut rng);
    let dw4 = dw_of(&dy4, &x4, aw);
    for k in 0..c {
        let t = p.now();
        for i in 0..r {
            p.expect(t, Port::Dw, i, dw4[c - 1 - k][i], "dw_out during DRAIN");
        }
        p.global(Mode::Drain, 0);
    }
    for i in 0..r {
        p.expect(p.now(), Port::Dw, i, 0, "dw_out after DRAIN");
    }
    // Another DW stream over B, then UPDATE in place.
    let (dy5, x5) = (rng.mat(c, N, bits), rng.mat(r, N, bits));
    let s5 = waves(
        N,
        false,
        None,
        None,
        r,
        data(Some(&x5), Some(&dy5), Mode::BwdDw),
    );
    p.stream(&b, s5, None);
    p.bubbles(r + c - 1, &mut rng);
    let lr2 = 2;
    p.global(Mode::Update, lr2);
    let b_updated = sgd_tile(cfg, &b, &dw_of(&dy5, &x5, aw), lr2);
    // Swap C in without an update: zero slots send the updated B out.
    let x6 = rng.mat(r, N, bits);
    let s6 = waves(
        len,
        true,
        None,
        Some(&zero),
        r,
        data(Some(&x6), None, Mode::Fwd),
    );
    p.stream(&tc, s6, Some(&b_updated));
    p.bubbles(r + c + 1, &mut rng);
    p
}

fn testbench(cfg: &ArrayConfig, cycles: &[Inputs]) -> String {
    let (r, c) = (cfg.rows(), cfg.cols());
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    let rb = load_row_bits(r);
    let mut s =
        String::from("module tb;\n  reg clk, rst, dy_valid, wave_swap, wave_update, wave_load;\n");
    writeln!(
        s,
        "  reg [{}:0] mode;\n  reg [{}:0] lr_shift;\n  reg [{}:0] wave_op;\n  reg [{}:0] wave_load_row;",
        MODE_BITS - 1,
        LR_SHIFT_BITS - 1,
        WAVE_OP_BITS - 1,
        rb - 1
    )
    .unwrap();
    writeln!(
        s,
        "  reg [{}:0] x_in;\n  reg [{}:0] w_in, dy_in;",
        r as u32 * dw - 1,
        c as u32 * dw - 1
    )
    .unwrap();
    writeln!(
        s,
        "  wire [{}:0] y_out;\n  wire [{}:0] dx_out, dw_out;\n  wire [{}:0] w_out;",
        c as u32 * aw - 1,
        r as u32 * aw - 1,
        c as u32 * dw - 1
    )
    .unwrap();
    s.push_str("  sa_top dut (.clk(clk), .rst(rst), .mode(mode), .lr_shift(lr_shift), .x_in(x_in), .w_in(w_in),\n");
    s.push_str(
        "    .dy_in(dy_in), .dy_valid(dy_valid), .wave_op(wave_op), .wave_swap(wave_swap),\n",
    );
    s.push_str(
        "    .wave_update(wave_update), .wave_load(wave_load), .wave_load_row(wave_load_row),\n",
    );
    s.push_str("    .y_out(y_out), .dx_out(dx_out), .dw_out(dw_out), .w_out(w_out));\n");
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
        writeln!(
            s,
            "    wave_op = {}; wave_swap = {}; wave_update = {}; wave_load = {}; wave_load_row = {};",
            i.op, i.swap as u8, i.update as u8, i.load as u8, i.row
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

fn simulate(cfg: &ArrayConfig, seed: u64) {
    let p = scenario(cfg, seed);
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
        let Some(t) = f.first().and_then(|t| t.parse::<usize>().ok()) else {
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
fn dense_sa_top_computes_what_the_architecture_says() {
    require_tool("iverilog");
    require_tool("vvp");
    use Backward::*;
    for (k, cfg) in [
        cfg(2, 2, Interleaved, 8, 24, 4),
        cfg(3, 2, Sequential, 8, 16, 4), // saturating sums
        cfg(1, 1, Interleaved, 4, 16, 0),
        cfg(1, 3, Sequential, 16, 32, 15),
        cfg(3, 1, Interleaved, 6, 16, 0),
        cfg(5, 4, Interleaved, 8, 20, 3), // R not a power of two
    ]
    .into_iter()
    .enumerate()
    {
        let cfg = cfg.with_pipelining(Pipelining::Dense).unwrap();
        simulate(&cfg, 0x5eed_0000_d3a5_e000 ^ k as u64);
    }
}

/// Every register the co-simulation compares exists under the name
/// `sysgrad_hdl`'s name functions give, with the width they give: Icarus
/// elaborates a testbench that prints `$bits` of each by its hierarchical
/// name.
#[test]
#[ignore = "needs iverilog"]
fn every_named_register_exists_with_its_width() {
    require_tool("iverilog");
    require_tool("vvp");
    use sysgrad_hdl::{
        delay_banks, delay_reg_name, dense_delay_banks, output_reg_name, pe_reg_name, pe_registers,
    };
    for cfg in [
        cfg(2, 3, Backward::Interleaved, 8, 24, 4),
        cfg(1, 1, Backward::Sequential, 4, 16, 0),
        cfg(5, 1, Backward::Sequential, 6, 16, 2),
    ] {
        let cfg = cfg.with_pipelining(Pipelining::Dense).unwrap();
        let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
        let mut names: Vec<(String, u32)> = Vec::new();
        for i in 0..cfg.rows() {
            for j in 0..cfg.cols() {
                for (reg, bits) in pe_registers(&cfg) {
                    names.push((pe_reg_name(i, j, reg), bits));
                }
            }
        }
        for (bank, lanes) in delay_banks(&cfg) {
            for (lane, len) in lanes.iter().enumerate() {
                for stage in 0..*len {
                    names.push((delay_reg_name(bank, lane, stage), bank.width(&cfg)));
                }
            }
        }
        for (bank, lanes) in dense_delay_banks(&cfg) {
            for (lane, len) in lanes.iter().enumerate() {
                for stage in 0..*len {
                    names.push((delay_reg_name(bank, lane, stage), bank.width(&cfg)));
                }
            }
        }
        for (which, lanes, bits) in [
            ("y", cfg.cols(), aw),
            ("dx", cfg.rows(), aw),
            ("w", cfg.cols(), dw),
        ] {
            for k in 0..lanes {
                names.push((output_reg_name(&cfg, which, k), bits));
            }
        }
        let mut tb =
            String::from("module tb;\n  reg clk = 1'b0;\n  sa_top dut ();\n  initial begin\n");
        for (name, _) in &names {
            writeln!(tb, "    $display(\"%0d {name}\", $bits(dut.{name}));").unwrap();
        }
        tb.push_str("  end\nendmodule\n");
        let dir = tempfile::tempdir().unwrap();
        let mut files = write(&cfg, dir.path());
        std::fs::write(dir.path().join("tb.v"), tb).unwrap();
        files.push("tb.v".into());
        run(
            Command::new("iverilog")
                .args(["-g2012", "-o", "tb.vvp", "-s", "tb"])
                .args(&files),
            dir.path(),
        );
        let out = run(Command::new("vvp").args(["-n", "tb.vvp"]), dir.path());
        let got: Vec<(String, u32)> = out
            .lines()
            .filter_map(|l| {
                let (bits, name) = l.split_once(' ')?;
                Some((name.to_string(), bits.parse().ok()?))
            })
            .collect();
        assert_eq!(got, names, "{}", cfg.tag());
        // The control skew of a 5-row array: lanes of the whole word.
        assert!(names.iter().any(|(n, _)| n.starts_with("g_ctlskew")) == (cfg.rows() > 1));
    }
}
