//! The generated Verilog passes `verilator --lint-only -Wall`, compiles in
//! Icarus without warnings and synthesises in Yosys, for a spread of
//! configurations, `none` and dense. A missing tool fails the test with the
//! package to install.

mod common;

use common::{cfg, float, require_tool, run, write};
use std::process::Command;
use std::time::Instant;
use sysgrad_config::float::{FloatKind, Rounding};
use sysgrad_config::{ArrayConfig, Backward, Pipelining, Units};

fn configs() -> Vec<ArrayConfig> {
    use Backward::*;
    vec![
        cfg(1, 1, Interleaved, 8, 16, 4),
        cfg(1, 1, Sequential, 4, 16, 0), // narrowest data, AW = 4*DW, frac 0
        // Counter widths (host.counter_bits): none, narrower than an
        // increment, exactly one register, between the two registers.
        // (Configs [4] and [5] differ in generated text only by parameters.)
        // The first without the address generator (units.window).
        cfg(2, 3, Interleaved, 8, 24, 4)
            .with_counter_bits(0)
            .unwrap()
            .with_units(Units { window: false }),
        cfg(4, 4, Interleaved, 16, 48, 8), // widest accumulator
        cfg(5, 2, Sequential, 6, 16, 2)
            .with_counter_bits(5)
            .unwrap(),
        cfg(3, 1, Interleaved, 8, 16, 0)
            .with_counter_bits(32)
            .unwrap(), // AW = 2*DW, one column, frac 0
        cfg(1, 4, Sequential, 16, 32, 15)
            .with_counter_bits(40)
            .unwrap(), // AW = 2*DW, one row, widest frac
        ArrayConfig::default_16x16(),
        cfg(32, 3, Sequential, 16, 32, 15),
        // MAX_DIM rows or columns: the widest tile, wait and SHAPE fields
        // (128x128 and 256x256 are linted, and these two compiled in
        // Icarus, by scripts/lint_large.sh).
        cfg(sysgrad_config::MAX_DIM, 1, Interleaved, 8, 24, 4),
        cfg(1, sysgrad_config::MAX_DIM, Sequential, 8, 24, 4),
    ]
}

/// Dense arrays: one PE, one row, one column, R not a power of two,
/// sequential ones, the widest formats and the default size.
fn dense_configs() -> Vec<ArrayConfig> {
    use Backward::*;
    [
        cfg(1, 1, Interleaved, 8, 16, 4),
        cfg(1, 1, Sequential, 4, 16, 0),
        cfg(1, 4, Sequential, 16, 32, 15),
        cfg(3, 1, Interleaved, 8, 16, 0),
        cfg(5, 2, Sequential, 6, 16, 2)
            .with_counter_bits(0)
            .unwrap()
            .with_units(Units { window: false }),
        cfg(4, 4, Interleaved, 16, 48, 8)
            .with_counter_bits(7)
            .unwrap(),
        ArrayConfig::default_16x16(),
        cfg(16, 16, Sequential, 8, 24, 4),
        cfg(64, 2, Interleaved, 8, 24, 4), // the widest load row
    ]
    .into_iter()
    .map(|c| c.with_pipelining(Pipelining::Dense).unwrap())
    .collect()
}

/// Floating-point configurations: all-bf16 and bf16/E4M3/E5M2 (one
/// format for REQUANT's two destinations, or two), all-FP8, both
/// roundings, both pipelinings, one multiplier or two, with the
/// multiplier register.
fn float_configs() -> Vec<ArrayConfig> {
    use Backward::*;
    use FloatKind::*;
    let base = |r, c, b| cfg(r, c, b, 8, 16, 4);
    vec![
        float(base(2, 3, Interleaved), [Bf16; 3], Rounding::Nearest),
        float(
            base(3, 2, Sequential),
            [Bf16, E4M3, E5M2],
            Rounding::Stochastic,
        ),
        float(
            base(1, 1, Interleaved),
            [E4M3, E4M3, E5M2],
            Rounding::Stochastic,
        ),
        float(
            base(2, 2, Sequential)
                .with_multiplier_register(true)
                .unwrap(),
            [Bf16, E4M3, E5M2],
            Rounding::Nearest,
        ),
        float(
            base(3, 3, Interleaved)
                .with_pipelining(Pipelining::Dense)
                .unwrap(),
            [Bf16; 3],
            Rounding::Stochastic,
        ),
        float(
            base(2, 1, Sequential)
                .with_pipelining(Pipelining::Dense)
                .unwrap(),
            [Bf16, E4M3, E5M2],
            Rounding::Nearest,
        ),
    ]
}

/// Every configuration with the tops it generates: the array alone and
/// the whole accelerator around it.
fn configs_and_tops() -> Vec<(ArrayConfig, &'static [&'static str])> {
    configs()
        .into_iter()
        .chain(dense_configs())
        .map(|c| (c, &TOPS[..]))
        .collect()
}

/// The float configurations, the array alone and the accelerator around
/// it, are `verilator -Wall` clean and compile in Icarus without
/// warnings.
#[test]
#[ignore = "needs verilator, iverilog"]
fn float_configurations_lint_clean_and_compile_without_warnings() {
    require_tool("verilator");
    require_tool("iverilog");
    for cfg in float_configs() {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&cfg, dir.path());
        for top in TOPS {
            let lint = run(
                Command::new("verilator")
                    .args(["--lint-only", "-Wall", "--top-module", top])
                    .args(&files),
                dir.path(),
            );
            assert!(!lint.contains("%Warning"), "{} {top}: {lint}", cfg.tag());
            let icarus = run(
                Command::new("iverilog")
                    .args(["-g2012", "-Wall", "-o", "a.vvp", "-s", top])
                    .args(&files),
                dir.path(),
            );
            assert!(icarus.trim().is_empty(), "{} {top}: {icarus}", cfg.tag());
        }
    }
}

/// Both tops: the array alone and the whole accelerator around it.
const TOPS: [&str; 2] = ["sa_top", "sa_accel"];

#[test]
#[ignore = "needs verilator"]
fn verilator_lint_is_clean() {
    require_tool("verilator");
    for (cfg, tops) in configs_and_tops() {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&cfg, dir.path());
        for top in tops {
            let out = run_timed(
                &format!("verilator {} {top}", cfg.tag()),
                Command::new("verilator")
                    .args(["--lint-only", "-Wall", "--top-module", top])
                    .args(&files),
                dir.path(),
            );
            assert!(
                !out.contains("%Warning") && !out.contains("%Error"),
                "{} {top}: lint warnings:\n{out}",
                cfg.tag()
            );
        }
    }
}

/// Every configuration but the two with `MAX_DIM` rows or columns: Icarus
/// elaborates their skew banks' 32,640 stages (one scope each) in 80 to
/// 120 s per top, 7 minutes of the suite; `scripts/lint_large.sh` compiles
/// them (Verilator lints them here, in 30 s each).
#[test]
#[ignore = "needs iverilog"]
fn icarus_compiles_without_warnings() {
    require_tool("iverilog");
    let below_max = |(c, _): &(ArrayConfig, _)| c.rows().max(c.cols()) < sysgrad_config::MAX_DIM;
    for (cfg, tops) in configs_and_tops().into_iter().filter(below_max) {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&cfg, dir.path());
        for top in tops {
            let out = run_timed(
                &format!("iverilog {} {top}", cfg.tag()),
                Command::new("iverilog")
                    .args(["-g2012", "-Wall", "-o", "a.vvp", "-s", top])
                    .args(&files),
                dir.path(),
            );
            assert!(
                out.trim().is_empty(),
                "{} {top}: iverilog said:\n{out}",
                cfg.tag()
            );
        }
    }
}

/// The whole accelerator maps to an FPGA: its buffers become block or
/// distributed RAM rather than flip-flops. About 45 s on 2 cores.
#[test]
#[ignore = "needs yosys"]
fn accelerator_synthesises_for_xilinx_with_inferred_rams() {
    require_tool("yosys");
    let small = cfg(4, 3, Backward::Interleaved, 8, 24, 4)
        .with_buffers(sysgrad_config::BufferDepths {
            weights: 512,
            activations: 512,
            gradients: 512,
            accumulators: 512,
            commands: 512,
        })
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = write(&small, dir.path());
    let script = format!(
        "read_verilog {}; synth_xilinx -top sa_accel; stat",
        files.join(" ")
    );
    run(
        Command::new("yosys").args(["-q", "-p", &script, "-l", "y.log"]),
        dir.path(),
    );
    let log = std::fs::read_to_string(dir.path().join("y.log")).unwrap();
    let brams = stat_count(&log, "RAMB18E1") + stat_count(&log, "RAMB36E1");
    // 14 data banks and the command memory, some of them paired in one BRAM.
    assert!(brams >= 8, "{brams} block RAMs in\n{log}");
    assert!(stat_count(&log, "DSP48E1") >= 12, "no DSP per PE in\n{log}");
}

/// `synth -top sa_top` keeps the hierarchy, so each distinct `sa_pe` is
/// synthesised once: about 3 s for 4x4 and 35 s for 16x16 on 2 cores
/// (`none`); the dense PE, with its second SGD unit, takes longer.
#[test]
#[ignore = "needs yosys"]
fn yosys_synthesises_4x4_and_16x16() {
    require_tool("yosys");
    let dense = |c: ArrayConfig| c.with_pipelining(Pipelining::Dense).unwrap();
    for cfg in [
        cfg(4, 4, Backward::Interleaved, 8, 24, 4),
        ArrayConfig::default_16x16(),
        dense(cfg(4, 4, Backward::Interleaved, 8, 24, 4)),
        dense(cfg(3, 2, Backward::Sequential, 8, 24, 4)),
        dense(ArrayConfig::default_16x16()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let files = write(&cfg, dir.path());
        let script = format!("read_verilog {}; synth -top sa_top; stat", files.join(" "));
        let out = run_timed(
            &format!("yosys {}", cfg.tag()),
            Command::new("yosys").args(["-q", "-p", &script, "-l", "y.log"]),
            dir.path(),
        );
        let log = std::fs::read_to_string(dir.path().join("y.log")).unwrap();
        assert!(!out.contains("ERROR"), "{out}");
        // Every PE survives synthesis (nothing optimised away as constant).
        let pes = cfg.rows() * cfg.cols();
        let pe_line =
            |l: &&str| l.contains("sa_pe") && l.split_whitespace().last() == Some(&pes.to_string());
        assert!(
            log.lines().any(|l| pe_line(&l)),
            "{}: {pes} PEs not found in\n{log}",
            cfg.tag()
        );
    }
}

#[test]
fn generation_is_deterministic_and_parameterised() {
    let a = sysgrad_hdl::generate(&ArrayConfig::default_16x16());
    let b = sysgrad_hdl::generate(&ArrayConfig::default_16x16());
    assert_eq!(a, b);
    let names: Vec<&str> = a.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "sa_pe.v",
            "sa_skew.v",
            "sa_buffer.v",
            "sa_top.v",
            "sa_requant.v",
            "sa_accel.v"
        ]
    );
    // Only the tops' parameter defaults depend on the configuration.
    let small = sysgrad_hdl::generate(&configs()[4]);
    for (x, y) in a.iter().zip(&small) {
        assert_eq!(x.name, y.name);
        for (lx, ly) in x.text.lines().zip(y.text.lines()) {
            assert!(
                lx == ly
                    || (["sa_top.v", "sa_accel.v"].contains(&x.name.as_str())
                        && lx.trim().starts_with("parameter integer")),
                "{} depends on the config:\n{lx}\n{ly}",
                x.name
            );
        }
        assert_eq!(x.text.lines().count(), y.text.lines().count());
    }
}

/// A dense configuration has its own `sa_pe`, `sa_top` and `sa_accel`
/// (the dense controller); between dense configurations, too, only the
/// tops' parameter defaults differ.
#[test]
fn dense_generation_is_its_own_and_parameterised() {
    let dense = dense_configs();
    let a = sysgrad_hdl::generate(&dense[6]);
    let names: Vec<&str> = a.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "sa_pe.v",
            "sa_skew.v",
            "sa_buffer.v",
            "sa_top.v",
            "sa_requant.v",
            "sa_accel.v"
        ]
    );
    let none = sysgrad_hdl::generate(&ArrayConfig::default_16x16());
    let text = |files: &[sysgrad_hdl::VerilogFile], n: &str| {
        files.iter().find(|f| f.name == n).unwrap().text.clone()
    };
    for n in ["sa_skew.v", "sa_buffer.v", "sa_requant.v"] {
        assert_eq!(text(&a, n), text(&none, n), "{n}");
    }
    for n in ["sa_pe.v", "sa_top.v", "sa_accel.v"] {
        assert_ne!(text(&a, n), text(&none, n), "{n}");
    }
    assert!(!text(&none, "sa_top.v").contains("wave_op"));
    let top = text(&a, "sa_top.v");
    let input = |port: &str| {
        top.lines().any(|l| {
            l.trim().starts_with("input wire ")
                && l.trim_end_matches(',').ends_with(&format!(" {port}"))
        })
    };
    for port in [
        "wave_op",
        "wave_swap",
        "wave_update",
        "wave_load",
        "wave_load_row",
    ] {
        assert!(input(port), "{port}");
    }
    for other in &dense {
        let b = sysgrad_hdl::generate(other);
        for (x, y) in a.iter().zip(&b) {
            for (lx, ly) in x.text.lines().zip(y.text.lines()) {
                assert!(
                    lx == ly
                        || (["sa_top.v", "sa_accel.v"].contains(&x.name.as_str())
                            && lx.trim().starts_with("parameter integer")),
                    "{} depends on the config:\n{lx}\n{ly}",
                    x.name
                );
            }
            assert_eq!(x.text.lines().count(), y.text.lines().count());
        }
    }
}

#[test]
fn every_module_has_a_header_and_no_lint_pragmas() {
    let dense = ArrayConfig::default_16x16()
        .with_pipelining(Pipelining::Dense)
        .unwrap();
    let files = sysgrad_hdl::generate(&ArrayConfig::default_16x16());
    for f in files.into_iter().chain(sysgrad_hdl::generate(&dense)) {
        assert!(f.text.contains("docs/ARCHITECTURE.md"), "{}", f.name);
        assert!(f.text.contains("`default_nettype none"), "{}", f.name);
        assert!(
            !f.text.contains("lint_off"),
            "{} waives a lint rule",
            f.name
        );
    }
}

/// The buffer bank is inferred as block RAM on both FPGA families, and is
/// lint-clean as a top of its own.
#[test]
#[ignore = "needs verilator, yosys"]
fn buffer_infers_block_ram() {
    require_tool("yosys");
    require_tool("verilator");
    let dir = tempfile::tempdir().unwrap();
    let files = write(&ArrayConfig::default_16x16(), dir.path());
    assert!(files.iter().any(|f| f == "sa_buffer.v"));
    let lint = run(
        Command::new("verilator").args([
            "--lint-only",
            "-Wall",
            "--top-module",
            "sa_buffer",
            "sa_buffer.v",
        ]),
        dir.path(),
    );
    assert!(!lint.contains("%Warning"), "{lint}");
    for (synth, bram) in [("synth_xilinx", "RAMB18E1"), ("synth_ice40", "SB_RAM40_4K")] {
        let script = format!("read_verilog sa_buffer.v; chparam -set W 16 -set DEPTH 1024 -set ABITS 10 sa_buffer; {synth} -top sa_buffer; stat");
        let log = run(Command::new("yosys").args(["-p", &script]), dir.path());
        let cells = stat_count(&log, bram);
        assert!(cells >= 1, "{synth}: no {bram} inferred:\n{log}");
    }
}

/// The count of `cell` in the last `stat` table of a Yosys log (the
/// synthesis crate's reader, so the tests and `sysgrad synth` agree).
/// [`run`], printing how long the tool took under `label` (the suite's
/// slowest tests: which configuration costs what).
fn run_timed(label: &str, cmd: &mut Command, dir: &std::path::Path) -> String {
    let start = Instant::now();
    let out = run(cmd, dir);
    eprintln!("{label}: {:.1} s", start.elapsed().as_secs_f64());
    out
}

fn stat_count(log: &str, cell: &str) -> u64 {
    sysgrad_synth::parse_stat(log)
        .get(cell)
        .copied()
        .unwrap_or(0)
}
