//! The generated floating-point units (`sa_fp_units`: unpack and widen,
//! multiply, add, subtract, scale, round to nearest and stochastically,
//! the activation unit's test of a positive value)
//! against the soft-float reference `sysgrad_config::float`, which shares
//! no code with the generator: edge values of every format (zeros,
//! subnormals, the smallest normal, the largest finite, infinities, NaNs,
//! ties, values that round into the next binade or past the largest
//! finite) and random bit patterns, on Icarus and on Verilator; the
//! module is `verilator -Wall` clean.

#[allow(dead_code)] // `cfg`, `write` serve the array tests
mod common;

use common::{require_tool, run};
use std::fmt::Write;
use std::path::Path;
use std::process::Command;
use sysgrad_config::float::{
    add32, mul32, round_stochastic, round_to, scale32, sub32, widen, FloatKind,
};

/// One test vector: the module's inputs.
#[derive(Debug, Clone, Copy)]
struct Vector {
    a: u32,
    b: u32,
    r: u32,
    lr: u32,
}

/// xorshift64, deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// fp32 values at the edges of fp32 and of every data format's range.
const FP32_EDGES: [u32; 34] = [
    0x0000_0000,
    0x0000_0001,
    0x007F_FFFF,
    0x0080_0000,
    0x0080_0001,
    0x3F80_0000,
    0x3F80_0001,
    0x3F7F_FFFF,
    0x7F7F_FFFF,
    0x7F80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    // bf16: a tie to even (down, up), past the largest finite by half an ulp.
    0x3F80_8000,
    0x3F81_8000,
    0x7F7F_7FFF,
    0x7F7F_8000,
    0x0000_8000,
    0x0000_C000,
    // E4M3: 448, 464 (the tie above it), 480; its subnormal range 2^-9, 2^-10.
    0x43E0_0000,
    0x43E8_0000,
    0x43F0_0000,
    0x3B00_0000,
    0x3A80_0000,
    0x3AC0_0000,
    // E5M2: 57344, 61440 (half an ulp past), 2^-16, 2^-17, 1.125 (a tie).
    0x4760_0000,
    0x4770_0000,
    0x3780_0000,
    0x3700_0000,
    0x3F90_0000,
    0x3FA0_0000,
    // Values that round into the next binade.
    0x3FFF_FFFF,
    0x3FFF_8000,
    0x3FF8_0000,
    0x3FFC_0000,
];

/// Data patterns at the formats' edges (placed in the low bits).
const DATA_EDGES: [u32; 16] = [
    0x0000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0x7F80, 0x7FC0, 0x8001, 0x0007, 0x0008, 0x007E, 0x007B,
    0x007C, 0x0003, 0x0004, 0x00FF,
];

fn vectors(n: usize) -> Vec<Vector> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sign = |rng: &mut Rng, v: u32| v ^ (((rng.next() & 1) as u32) << 31);
    let mut out = Vec::with_capacity(n);
    // Every pair of edges, both signs.
    for &a in &FP32_EDGES {
        for &b in &FP32_EDGES {
            let (a, b) = (sign(&mut rng, a), sign(&mut rng, b));
            out.push(Vector {
                a,
                b,
                r: rng.next() as u32 & 0xFFFF,
                lr: (rng.next() % 64) as u32,
            });
        }
    }
    while out.len() < n {
        let x = rng.next();
        let (mut a, mut b) = (x as u32, (x >> 32) as u32);
        match rng.next() % 8 {
            // Nearby magnitudes: cancellation, one-bit normalisation.
            0 => {
                b = (a ^ 0x8000_0000)
                    .wrapping_add((rng.next() % 9) as u32)
                    .wrapping_sub(4)
            }
            1 => b = (a & 0xFF80_0000) | (b & 0x007F_FFFF),
            // Subnormals and tiny values.
            2 => {
                a &= 0x80FF_FFFF;
                b &= 0x81FF_FFFF;
            }
            3 => {
                let e = rng.pick(&FP32_EDGES);
                a = sign(&mut rng, e)
            }
            4 => {
                a = (a & 0xFFFF_0000) | rng.pick(&DATA_EDGES) ^ ((rng.next() as u32 & 1) << 7);
                b = (b & 0xFFFF_0000) | rng.pick(&DATA_EDGES) ^ ((rng.next() as u32 & 1) << 15);
            }
            _ => {}
        }
        let r = match rng.next() % 8 {
            0 => 0,
            1 => 0xFFFF,
            _ => rng.next() as u32 & 0xFFFF,
        };
        out.push(Vector {
            a,
            b,
            r,
            lr: (rng.next() % 64) as u32,
        });
    }
    out
}

/// The reference value of output `port` for `v`.
fn expected(port: &str, v: Vector) -> u32 {
    let kind = |name: &str| {
        FloatKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .unwrap_or_else(|| panic!("no format {name}"))
    };
    let data = |k: FloatKind, x: u32| x & ((1u32 << k.encoding().bits()) - 1);
    match port.trim_start_matches("o_").split('_').collect::<Vec<_>>()[..] {
        ["add"] => add32(v.a, v.b),
        ["sub"] => sub32(v.a, v.b),
        ["scale"] => scale32(v.a, v.lr),
        ["widen", k] => widen(kind(k), data(kind(k), v.a)),
        ["round", k] => round_to(kind(k), v.a),
        ["sr", k] => round_stochastic(kind(k), v.a, v.r),
        // docs/COMMANDS.md: positive is `v > 0` on the value, as IEEE
        // compares (a NaN never is).
        ["positive", k] => u32::from(f32::from_bits(widen(kind(k), data(kind(k), v.a))) > 0.0),
        ["mul", ka, kb] => {
            let (ka, kb) = (kind(ka), kind(kb));
            mul32(widen(ka, data(ka, v.a)), widen(kb, data(kb, v.b)))
        }
        _ => panic!("no reference for {port}"),
    }
}

/// The module's outputs, in port order.
fn outputs(m: &sysgrad_hdl::ir::Module) -> Vec<String> {
    m.ports
        .iter()
        .filter(|p| p.dir != sysgrad_hdl::ir::Dir::Input)
        .map(|p| p.name().to_string())
        .collect()
}

/// Writes the units and a testbench that reads `vectors.hex` and prints
/// each vector's outputs in hex, one line per vector.
fn write_bench(dir: &Path, vs: &[Vector]) -> Vec<String> {
    let m = sysgrad_hdl::float_units_module();
    std::fs::write(dir.join("sa_fp_units.v"), sysgrad_hdl::emit::module(&m)).unwrap();
    let outs = outputs(&m);
    let mut hex = String::new();
    for v in vs {
        let word = (u128::from(v.lr) << 80)
            | (u128::from(v.r) << 64)
            | (u128::from(v.b) << 32)
            | u128::from(v.a);
        writeln!(hex, "{word:032x}").unwrap();
    }
    std::fs::write(dir.join("vectors.hex"), hex).unwrap();
    let width = |name: &str| m.port(name).unwrap().width.eval(&|_| None).unwrap_or(1);
    let mut tb = String::new();
    writeln!(tb, "`default_nettype none\nmodule tb;").unwrap();
    writeln!(tb, "  reg [127:0] mem [0:{}];", vs.len() - 1).unwrap();
    writeln!(
        tb,
        "  reg [31:0] in_a, in_b; reg [15:0] in_r; reg [5:0] in_lr;"
    )
    .unwrap();
    for o in &outs {
        writeln!(tb, "  wire [{}:0] {o};", width(o) - 1).unwrap();
    }
    let conns: Vec<String> = ["in_a", "in_b", "in_r", "in_lr"]
        .iter()
        .map(|s| s.to_string())
        .chain(outs.iter().cloned())
        .map(|p| format!(".{p}({p})"))
        .collect();
    writeln!(tb, "  sa_fp_units dut ({});", conns.join(", ")).unwrap();
    let fmt = vec!["%h"; outs.len()].join(" ");
    writeln!(
        tb,
        "  integer i, f;\n  initial begin\n    $readmemh(\"vectors.hex\", mem);\n    f = $fopen(\"out.txt\", \"w\");\n    for (i = 0; i < {}; i = i + 1) begin\n      {{in_lr, in_r, in_b, in_a}} = mem[i][85:0];\n      #1;\n      $fdisplay(f, \"{fmt}\", {});\n    end\n    $fclose(f);\n    $finish;\n  end\nendmodule",
        vs.len(),
        outs.join(", ")
    )
    .unwrap();
    std::fs::write(dir.join("tb.v"), tb).unwrap();
    outs
}

/// Compares `out.txt` with the reference; panics listing the first
/// mismatches of each output.
fn check(text: &str, vs: &[Vector], outs: &[String]) {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), vs.len(), "one line per vector");
    let mut bad: Vec<(String, Vector, u32, u32)> = Vec::new();
    for (line, v) in lines.iter().zip(vs) {
        for (field, port) in line.split_whitespace().zip(outs) {
            let got = u32::from_str_radix(field, 16).unwrap_or_else(|_| panic!("{port}: {field}"));
            let want = expected(port, *v);
            if got != want && bad.iter().filter(|(p, ..)| p == port).count() < 3 {
                bad.push((port.clone(), *v, got, want));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches, e.g.:\n{}",
        bad.len(),
        bad.iter()
            .map(|(p, v, g, w)| format!(
                "{p}: a={:08x} b={:08x} r={:04x} lr={} got {g:08x} want {w:08x}",
                v.a, v.b, v.r, v.lr
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
#[ignore = "needs iverilog"]
fn float_units_match_the_soft_float_reference_on_icarus() {
    require_tool("iverilog");
    let dir = tempfile::tempdir().unwrap();
    let vs = vectors(12_000);
    let outs = write_bench(dir.path(), &vs);
    run(
        Command::new("iverilog").args(["-g2005", "-o", "sim", "tb.v", "sa_fp_units.v"]),
        dir.path(),
    );
    run(Command::new("vvp").args(["-n", "sim"]), dir.path());
    let text = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
    check(&text, &vs, &outs);
}

#[test]
#[ignore = "needs verilator"]
fn float_units_match_the_soft_float_reference_on_verilator() {
    require_tool("verilator");
    let dir = tempfile::tempdir().unwrap();
    let vs = vectors(60_000);
    let outs = write_bench(dir.path(), &vs);
    run(
        Command::new("verilator").args([
            "--binary",
            "-Wno-fatal",
            "--top-module",
            "tb",
            "-o",
            "sim",
            "tb.v",
            "sa_fp_units.v",
        ]),
        dir.path(),
    );
    run(
        &mut Command::new(dir.path().join("obj_dir/sim")),
        dir.path(),
    );
    let text = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
    check(&text, &vs, &outs);
}

#[test]
#[ignore = "needs verilator"]
fn float_units_are_verilator_lint_clean() {
    require_tool("verilator");
    let dir = tempfile::tempdir().unwrap();
    let m = sysgrad_hdl::float_units_module();
    std::fs::write(
        dir.path().join("sa_fp_units.v"),
        sysgrad_hdl::emit::module(&m),
    )
    .unwrap();
    run(
        Command::new("verilator").args(["-Wall", "--lint-only", "sa_fp_units.v"]),
        dir.path(),
    );
}
