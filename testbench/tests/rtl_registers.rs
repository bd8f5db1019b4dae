//! The registers the RTL has, found by Yosys in the generated Verilog
//! alone (`sysgrad_testbench::flops`), are exactly the registers the
//! co-simulation compares (the emulator's), with the same widths; and a
//! register on only one side, or of another width, fails the check that
//! every register-level co-simulation runs first.

use std::path::PathBuf;
use sysgrad_config::{ArrayConfig, Backward, NumberFormat, Pipelining};
use sysgrad_hdl::VerilogFile;
use sysgrad_testbench::flops::{self, RtlRegister};
use sysgrad_testbench::registers::check_coverage;
use sysgrad_testbench::{scenario, verilator, CosimError, Simulator};

fn load(name: &str) -> ArrayConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../configs")
        .join(name);
    sysgrad_config::load_config(&path).unwrap()
}

fn config(rows: usize, cols: usize, backward: Backward, bits: (u32, u32, u32)) -> ArrayConfig {
    let (in_bits, acc_bits, frac_bits) = bits;
    let fmt = NumberFormat {
        in_bits,
        acc_bits,
        frac_bits,
    };
    ArrayConfig::new(rows, cols, backward, fmt).unwrap()
}

fn rtl_registers(files: &[VerilogFile]) -> Vec<RtlRegister> {
    flops::flip_flops(files).unwrap_or_else(|e| panic!("listing the RTL's registers: {e}"))
}

/// How many registers `docs/ARCHITECTURE.md` gives an R x C array: seven
/// per PE, i in row i of the x skew, j in column j of the dy skew, C-j in
/// column j of y (deskew and y_q), R-i in row i of dX: 7RC + R^2 + C^2.
fn specified_count(cfg: &ArrayConfig) -> usize {
    let (r, c) = (cfg.rows(), cfg.cols());
    7 * r * c + r * r + c * c
}

/// The same count for a dense array (ARCHITECTURE.md, Registers of a dense
/// array): fifteen per PE (`w, ws, wp, x, d, dv, psv, psh, dw` and six
/// control registers), the `none` array's banks, i control registers in
/// row i, j in column j of the w skew and C-j in column j of the w deskew
/// with `w_q`: 15RC + R^2 + C^2 + R(R-1)/2 + C^2.
fn specified_dense_count(cfg: &ArrayConfig) -> usize {
    let (r, c) = (cfg.rows(), cfg.cols());
    15 * r * c + r * r + c * c + r * (r - 1) / 2 + c * c
}

fn dense(cfg: ArrayConfig) -> ArrayConfig {
    cfg.with_pipelining(Pipelining::Dense).unwrap()
}

#[test]
#[ignore = "needs yosys"]
fn the_dense_rtl_has_exactly_the_emulators_registers() {
    let configs = [
        dense(load("small_4x4.toml")),
        dense(load("seq_3x5.toml")),
        // One row: no control skew; one column: no w skew or w deskew.
        dense(config(1, 4, Backward::Interleaved, (8, 20, 3))),
        dense(config(5, 1, Backward::Sequential, (12, 30, 6))),
        dense(config(1, 1, Backward::Interleaved, (16, 48, 15))),
    ];
    for cfg in configs {
        let rtl = rtl_registers(&sysgrad_hdl::generate(&cfg));
        let n = check_coverage(&rtl, &cfg).unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
        assert_eq!(n, specified_dense_count(&cfg), "{}", cfg.tag());
        for (reg, width) in [("u_pe.ws", cfg.format().in_bits), ("u_pe.c_swap", 1)] {
            let r = rtl.iter().find(|r| r.name.ends_with(reg)).unwrap();
            assert_eq!(r.width, width, "{} {reg}", cfg.tag());
        }
        println!("{}: {n} registers on both sides", cfg.tag());
    }
}

#[test]
#[ignore = "needs yosys"]
fn the_rtl_has_exactly_the_emulators_registers() {
    let configs = [
        load("small_4x4.toml"),
        load("seq_3x5.toml"),
        // One row: no x skew and no dX deskew (wires); one column: no dy
        // skew and no y deskew.
        config(1, 4, Backward::Interleaved, (8, 20, 3)),
        config(5, 1, Backward::Sequential, (12, 30, 6)),
        config(1, 1, Backward::Interleaved, (16, 48, 15)),
        config(2, 3, Backward::Sequential, (4, 16, 0)),
    ];
    for cfg in configs {
        let rtl = rtl_registers(&sysgrad_hdl::generate(&cfg));
        let n = check_coverage(&rtl, &cfg).unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
        assert_eq!(n, specified_count(&cfg), "{}", cfg.tag());
        let dv = rtl.iter().find(|r| r.name.ends_with("u_pe.dv")).unwrap();
        assert_eq!(dv.width, 1, "{}", cfg.tag());
        println!("{}: {n} registers on both sides", cfg.tag());
    }
}

/// With a multiplier register each PE has two AW-bit registers more
/// (ARCHITECTURE.md, Multiplier register): 9RC + R^2 + C^2.
#[test]
#[ignore = "needs yosys"]
fn the_rtl_with_a_multiplier_register_has_exactly_the_emulators_registers() {
    let configs = [
        load("mul_reg_4x4.toml"),
        load("seq_3x5.toml").with_multiplier_register(true).unwrap(),
        config(1, 1, Backward::Interleaved, (16, 48, 15))
            .with_multiplier_register(true)
            .unwrap(),
    ];
    for cfg in configs {
        let rtl = rtl_registers(&sysgrad_hdl::generate(&cfg));
        let n = check_coverage(&rtl, &cfg).unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
        let (r, c) = (cfg.rows(), cfg.cols());
        assert_eq!(n, specified_count(&cfg) + 2 * r * c, "{}", cfg.tag());
        let prod = rtl
            .iter()
            .find(|r| r.name.ends_with("u_pe.g_prod.prod_dw"))
            .unwrap();
        assert_eq!(prod.width, cfg.format().acc_bits, "{}", cfg.tag());
        println!("{}: {n} registers on both sides", cfg.tag());
    }
}

/// Deferred saturation adds no register but widens `psv`, `psh` and `dw`
/// to AW+1 bits and `w` to DW+2 (ARCHITECTURE.md, Deferred saturation),
/// on both sides.
#[test]
#[ignore = "needs yosys"]
fn deferred_saturation_widens_the_accumulators_and_the_weight_only() {
    for mul_reg in [false, true] {
        let cfg = load("small_4x4.toml")
            .with_multiplier_register(mul_reg)
            .unwrap()
            .with_deferred_saturation(true)
            .unwrap();
        let rtl = rtl_registers(&sysgrad_hdl::generate(&cfg));
        let n = check_coverage(&rtl, &cfg).unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
        let (r, c) = (cfg.rows(), cfg.cols());
        let products = if mul_reg { 2 * r * c } else { 0 };
        assert_eq!(n, specified_count(&cfg) + products, "{}", cfg.tag());
        let aw = cfg.format().acc_bits;
        for reg in ["u_pe.psv", "u_pe.psh", "u_pe.dw"] {
            let found = rtl.iter().find(|r| r.name.ends_with(reg)).unwrap();
            assert_eq!(found.width, aw + 1, "{} {reg}", cfg.tag());
        }
        let w = rtl.iter().find(|r| r.name.ends_with("u_pe.w")).unwrap();
        assert_eq!(w.width, cfg.format().in_bits + 2, "{}", cfg.tag());
    }
}

/// The generated files of `cfg` with each `(from, to)` of `edits` applied
/// to `file`; every `from` must occur exactly once.
fn edited(cfg: &ArrayConfig, file: &str, edits: &[(&str, &str)]) -> Vec<VerilogFile> {
    let mut files = sysgrad_hdl::generate(cfg);
    let f = files.iter_mut().find(|f| f.name == file).unwrap();
    for (from, to) in edits {
        assert_eq!(f.text.matches(from).count(), 1, "`{from}` in {file}");
        f.text = f.text.replace(from, to);
    }
    files
}

#[test]
#[ignore = "needs yosys"]
fn a_register_on_one_side_only_or_of_another_width_is_named() {
    let cfg = load("small_4x4.toml");
    // An extra pipeline register the emulator does not model.
    let extra = edited(
        &cfg,
        "sa_top.v",
        &[(
            "endmodule",
            "  reg [3:0] mode_q;\n  always @(posedge clk) mode_q <= mode;\nendmodule",
        )],
    );
    let e = check_coverage(&rtl_registers(&extra), &cfg)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("1 RTL register(s) the comparison does not check: mode_q"),
        "{e}"
    );
    // y_q of every column made combinational: registers the RTL lacks.
    let missing = edited(
        &cfg,
        "sa_top.v",
        &[
            (
                "always @(posedge clk) begin\n      if (rst) begin\n        y_q <= {AW{1'b0}};",
                "always @* begin\n      if (1'b0) begin\n        y_q = {AW{1'b0}};",
            ),
            ("y_q <= y_dsk[j*AW +: AW];", "y_q = y_dsk[j*AW +: AW];"),
        ],
    );
    let e = check_coverage(&rtl_registers(&missing), &cfg)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("4 emulator register(s) the RTL does not have: g_y_out[0].y_q"),
        "{e}"
    );
    // The dy skew without its valid bit: DW bits instead of DW+1.
    let narrow = edited(
        &cfg,
        "sa_top.v",
        &[(
            "sa_skew #(.LANES(C), .W(DW+1), .DESKEW(0)) u_dyskew",
            "sa_skew #(.LANES(C), .W(DW), .DESKEW(0)) u_dyskew",
        )],
    );
    let e = check_coverage(&rtl_registers(&narrow), &cfg)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "g_dyskew.u_dyskew.g_lane[1].g_stage[0].r is 8 bits in the RTL, 9 in the emulator"
        ),
        "{e}"
    );
}

/// The check runs inside every register-level co-simulation, before the
/// simulator is built: an unchecked register fails the run.
#[test]
#[ignore = "needs yosys"]
fn a_cosimulation_fails_on_a_register_it_would_not_compare() {
    let cfg = load("small_4x4.toml");
    let files = edited(
        &cfg,
        "sa_pe.v",
        &[(
            "  reg dv;\n",
            "  reg dv;\n  reg [3:0] mode_seen;\n  always @(posedge clk) mode_seen <= mode;\n",
        )],
    );
    let (rec, _) = scenario::training_step(&cfg, 1, true);
    let work = verilator::cache_root()
        .join("tests")
        .join("unchecked-register");
    match sysgrad_testbench::run_files(&cfg, &files, &rec, Simulator::Verilator, &work) {
        Err(CosimError::Coverage(e)) => {
            let e = e.to_string();
            assert!(
                e.contains("16 RTL register(s) the comparison does not check")
                    && e.contains("g_row[0].g_col[0].u_pe.mode_seen"),
                "{e}"
            );
        }
        other => panic!("an unchecked register went unnoticed: {other:?}"),
    }
}
