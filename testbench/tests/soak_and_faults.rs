//! A bounded randomised co-simulation soak (seed printed, reproducible),
//! and faults injected into the RTL on purpose (in a PE, in a stage of each
//! skew and deskew bank, on an output port; on a dense array in the shadow
//! weights, the wave control, the dense banks and `w_q`): each must be
//! caught and named by cycle and signal, and the shrinker must find a
//! smaller case. The default run has one dense fault of each kind;
//! `SYSGRAD_ALL_FAULTS=1` (scripts/faults.sh) runs them all.

use std::time::Duration;
use sysgrad_config::{ArrayConfig, Pipelining};
use sysgrad_emulator::{Array, Recording};
use sysgrad_hdl::VerilogFile;
use sysgrad_testbench::scenario::{self, Spec};
use sysgrad_testbench::{soak, verilator, CosimError, Simulator};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
#[ignore = "needs verilator, yosys"]
fn randomised_soak() {
    // SYSGRAD_SOAK_SECONDS bounds the run; SYSGRAD_SOAK_SEED replays one.
    let seconds = env_u64("SYSGRAD_SOAK_SECONDS", 60);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let seed = env_u64("SYSGRAD_SOAK_SEED", now);
    println!("soak: first seed {seed} (replay with SYSGRAD_SOAK_SEED={seed}), {seconds} s");
    let work = verilator::cache_root().join("soak");
    match soak::soak(seed, Duration::from_secs(seconds), 6, &work, |l| {
        println!("{l}")
    }) {
        Ok(n) => assert!(n > 0, "the soak ran no case"),
        Err(f) => panic!(
            "soak failure, shrunk to {} {}: {}",
            f.cfg.tag(),
            f.spec,
            f.error
        ),
    }
}

/// `from` replaced by `to` in the file `name` of `files`.
fn edit(files: &mut [VerilogFile], name: &str, from: &str, to: &str) {
    let f = files.iter_mut().find(|f| f.name == name).unwrap();
    assert!(f.text.contains(from), "fault site `{from}` not in {name}");
    f.text = f.text.replacen(from, to, 1);
}

/// The generated files with `from` replaced by `to` in `sa_pe.v`.
fn with_fault(cfg: &ArrayConfig, from: &str, to: &str) -> Vec<VerilogFile> {
    let mut files = sysgrad_hdl::generate(cfg);
    edit(&mut files, "sa_pe.v", from, to);
    files
}

/// The generated files with a fault in one delay bank only: the instance
/// `instance` of `sa_top` (e.g. `u_xskew`) becomes a copy of `sa_skew` with
/// `from` replaced by `to`; the other banks keep the good module, and the
/// hierarchical names stay the same.
fn with_bank_fault(cfg: &ArrayConfig, instance: &str, from: &str, to: &str) -> Vec<VerilogFile> {
    let mut files = sysgrad_hdl::generate(cfg);
    let good = files.iter().find(|f| f.name == "sa_skew.v").unwrap();
    let mut faulty = VerilogFile {
        name: "sa_skew_faulty.v".into(),
        text: good
            .text
            .replacen("module sa_skew ", "module sa_skew_faulty ", 1),
    };
    edit(
        std::slice::from_mut(&mut faulty),
        "sa_skew_faulty.v",
        from,
        to,
    );
    let top = files.iter_mut().find(|f| f.name == "sa_top.v").unwrap();
    let line = top
        .text
        .lines()
        .find(|l| l.contains(&format!(") {instance} (")))
        .unwrap_or_else(|| panic!("no instance {instance} in sa_top.v"))
        .to_string();
    top.text = top.text.replacen(
        &line,
        &line.replacen("sa_skew #(", "sa_skew_faulty #(", 1),
        1,
    );
    files.push(faulty);
    files
}

fn cosim_rec(
    cfg: &ArrayConfig,
    files: &[VerilogFile],
    rec: &Recording,
    sim: Simulator,
    name: &str,
) -> Result<(), CosimError> {
    let work = verilator::cache_root().join("faults").join(name);
    sysgrad_testbench::run_files(cfg, files, rec, sim, &work).map(|_| ())
}

fn cosim(
    cfg: &ArrayConfig,
    files: &[VerilogFile],
    spec: &Spec,
    name: &str,
) -> Result<(), CosimError> {
    let (rec, _) = scenario::run_spec(cfg, spec, true);
    cosim_rec(cfg, files, &rec, Simulator::Verilator, name)
}

/// The fault configuration: accumulators of exactly 2*DW bits, so that two
/// products can saturate.
fn fault_config() -> ArrayConfig {
    let fmt = sysgrad_config::NumberFormat {
        in_bits: 8,
        acc_bits: 16,
        frac_bits: 4,
    };
    ArrayConfig::new(4, 4, sysgrad_config::Backward::Interleaved, fmt).unwrap()
}

const FAULT_SPEC: Spec = Spec {
    m: 6,
    k: 7,
    n: 5,
    lr_shift: 2,
    seed: 11,
};

/// Deferred saturation (ARCHITECTURE.md): on the fault configuration,
/// whose sums and weight updates overflow, the accumulator registers
/// hold sums beyond AW bits and the weights differences beyond DW bits,
/// and the RTL's hold the same ones every cycle, with and without a
/// multiplier register.
#[test]
#[ignore = "needs verilator, yosys"]
fn deferred_saturation_matches_every_cycle_where_sums_and_weights_overflow() {
    for mul_reg in [false, true] {
        let cfg = fault_config()
            .with_deferred_saturation(true)
            .unwrap()
            .with_multiplier_register(mul_reg)
            .unwrap();
        let (rec, _) = scenario::run_spec(&cfg, &FAULT_SPEC, true);
        let (aw, dw) = (cfg.format().acc_bits, cfg.format().in_bits);
        let fits = sysgrad_config::fixed::fits;
        let snapshots = rec.snapshots.as_ref().unwrap();
        let overflowed = snapshots.iter().any(|a| {
            let c = a.core();
            let mut sums = c.psv.iter().chain(&c.psh).chain(&c.dw);
            sums.any(|v| !fits(*v, aw))
        });
        assert!(overflowed, "{}: no sum left AW bits", cfg.tag());
        let weight_left = snapshots
            .iter()
            .any(|a| a.core().w.iter().any(|v| !fits(*v, dw)));
        assert!(weight_left, "{}: no weight left DW bits", cfg.tag());
        let files = sysgrad_hdl::generate(&cfg);
        cosim_rec(&cfg, &files, &rec, Simulator::Verilator, &cfg.tag())
            .unwrap_or_else(|e| panic!("{}: {e}", cfg.tag()));
    }
}

#[test]
#[ignore = "needs verilator, yosys"]
fn injected_faults_are_caught_and_located() {
    let (cfg, spec) = (fault_config(), FAULT_SPEC);
    // (what, text in sa_pe.v, replacement, register expected to differ)
    let faults = [
        ("update disabled", "w <= w_next;", "w <= w;", ".w"),
        (
            "dW accumulation without saturation",
            "dw <= sat_add(dw, add_dw);",
            "dw <= dw + add_dw;",
            ".dw",
        ),
        (
            "dX partial sum ignores its west input",
            "psh <= sat_add(psh_in, add_sum);",
            "psh <= sat_add({AW{1'b0}}, add_sum);",
            ".psh",
        ),
    ];
    for (what, from, to, reg) in faults {
        let files = with_fault(&cfg, from, to);
        match cosim(&cfg, &files, &spec, what) {
            Err(CosimError::Mismatch(m)) => {
                assert!(
                    m.signal.contains("u_pe") && m.signal.ends_with(reg),
                    "{what}: first mismatch {m}"
                );
                println!("{what}: caught at {m}");
            }
            other => panic!("{what}: not caught ({other:?})"),
        }
    }
}

#[test]
#[ignore = "needs verilator, yosys"]
fn faults_in_skew_and_deskew_stages_are_caught_and_located() {
    let cfg = fault_config();
    let (training, _) = scenario::run_spec(&cfg, &FAULT_SPEC, true);
    // Resets in mid-run, for the fault only a reset shows.
    let (random, _) = scenario::random_cycles(&cfg, 5, 400, true);
    // (what, bank instance, text in sa_skew.v, replacement, stimulus,
    // register expected to differ first)
    let faults = [
        (
            "x skew: the last stage of row 3 misses the reset",
            "u_xskew",
            "if (rst) begin",
            "if (rst && !(k == LANES - 1 && s == L - 1)) begin",
            &random,
            "g_xskew.u_xskew.g_lane[3].g_stage[2].r",
        ),
        (
            "dy skew: the valid bit of column 3's first stage stuck at 1",
            "u_dyskew",
            "r <= tap[s];",
            "r <= (k == LANES - 1 && s == 0) ? (tap[s] | {1'b1, {(W-1){1'b0}}}) : tap[s];",
            &training,
            "g_dyskew.u_dyskew.g_lane[3].g_stage[0].r",
        ),
        (
            "y deskew: the sign bit of column 0's first stage stuck at 0",
            "u_ydeskew",
            "r <= tap[s];",
            "r <= (k == 0 && s == 0) ? {1'b0, tap[s][W-2:0]} : tap[s];",
            &training,
            "g_ydeskew.u_ydeskew.g_lane[0].g_stage[0].r",
        ),
        (
            "dX deskew: row 0's first stage latches row 1's input",
            "u_dxdeskew",
            "r <= tap[s];",
            "r <= (k == 0 && s == 0) ? d[W +: W] : tap[s];",
            &training,
            "g_dxdeskew.u_dxdeskew.g_lane[0].g_stage[0].r",
        ),
    ];
    for (what, instance, from, to, rec, reg) in faults {
        let files = with_bank_fault(&cfg, instance, from, to);
        match cosim_rec(&cfg, &files, rec, Simulator::Verilator, instance) {
            Err(CosimError::Mismatch(m)) => {
                assert_eq!(m.signal, reg, "{what}: first mismatch {m}");
                println!("{what}: caught at {m}");
            }
            other => panic!("{what}: not caught ({other:?})"),
        }
    }
}

/// Rows of `dw_out` in reverse order: a fault at the port, behind every
/// register. Icarus compares ports only and catches it in its port trace;
/// Verilator catches it in the VCD, where `dw_out` is one 96-bit value
/// (R * AW = 4 * 24), before the port trace is looked at.
#[test]
#[ignore = "needs verilator, iverilog, yosys"]
fn a_wrong_lane_on_an_output_port_is_caught_by_both_simulators() {
    let cfg: ArrayConfig = sysgrad_config::load_config(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/small_4x4.toml"),
    )
    .unwrap();
    assert!(cfg.rows() as u32 * cfg.format().acc_bits > 64);
    let mut files = sysgrad_hdl::generate(&cfg);
    edit(
        &mut files,
        "sa_top.v",
        "assign dw_out[i*AW +: AW] = dw_o[i*C+C-1];",
        "assign dw_out[i*AW +: AW] = dw_o[(R-1-i)*C+C-1];",
    );
    let (ports_only, _) = scenario::run_spec(&cfg, &FAULT_SPEC, false);
    let (with_registers, _) = scenario::run_spec(&cfg, &FAULT_SPEC, true);
    // (simulator, recording, whether the VCD shows the mismatch first)
    for (sim, rec, in_vcd) in [
        (Simulator::Icarus, &ports_only, false),
        (Simulator::Verilator, &with_registers, true),
    ] {
        match cosim_rec(&cfg, &files, rec, sim, &format!("dw_out-{sim:?}")) {
            Err(CosimError::Mismatch(m)) => {
                assert!(
                    m.signal.starts_with("dw_out[") && m.signal.ends_with(" (VCD)") == in_vcd,
                    "{sim:?}: first mismatch {m}"
                );
                println!("{sim:?}: caught at {m}");
            }
            other => panic!("{sim:?}: the swapped dw_out lanes were not caught ({other:?})"),
        }
    }
}

fn dense_fault_config() -> ArrayConfig {
    fault_config().with_pipelining(Pipelining::Dense).unwrap()
}

/// Whether to run every dense fault (`SYSGRAD_ALL_FAULTS=1`,
/// scripts/faults.sh) rather than one of each kind: each fault is its own
/// Verilator build.
fn all_faults() -> bool {
    env_u64("SYSGRAD_ALL_FAULTS", 0) == 1
}

/// Where a flipped bit in the weight a swap moves into the shadow
/// register first shows, from the emulator's snapshots alone: the first
/// cycle in which a PE holds the control of a swap wave it took without a
/// slot for its row (snapshot t + 1 holds what edge t took), and the
/// first such PE in the comparison's order (row-major).
fn first_swap_without_slot(rec: &Recording) -> (usize, String) {
    let snaps = rec.snapshots.as_ref().expect("snapshots");
    let c = snaps[0].cols();
    for (t, a) in snaps.iter().enumerate() {
        let Array::Dense(d) = a else {
            panic!("a dense array's snapshots")
        };
        let ctl = &d.ctl;
        let hit = ctl.iter().enumerate().find(|(k, w)| {
            let own_slot = w.load && usize::from(w.load_row) == k / c;
            w.swap && !own_slot
        });
        if let Some((k, _)) = hit {
            return (t, sysgrad_hdl::pe_reg_name(k / c, k % c, "ws"));
        }
    }
    panic!("no wave swaps a tile without a slot in the same wave");
}

/// A fault in the dense `sa_pe.v`.
struct PeFault<'a> {
    /// Run by default (otherwise with [`all_faults`] only).
    default: bool,
    what: &'a str,
    from: &'a str,
    to: String,
    /// The register names the first mismatch may end with.
    first: &'a [&'a str],
    /// The exact register and cycle of the first mismatch, where known.
    exact: Option<(String, usize)>,
}

/// Faults in what only a dense PE has: its shadow weight, its weight
/// stream, its wave control, the dW restart and the update of the weight
/// a swap switches out. Each is caught in a training step and named by
/// the register that first differs; the flipped bit in the shadow weight
/// in exactly the register and cycle the emulator says.
#[test]
#[ignore = "needs verilator, yosys"]
fn injected_dense_pe_faults_are_caught_and_located() {
    let cfg = dense_fault_config();
    let (rec, _) = scenario::run_spec(&cfg, &FAULT_SPEC, true);
    let flip_lsb = "^ {{(DW-1){1'b0}}, 1'b1}";
    let (ws_cycle, ws_reg) = first_swap_without_slot(&rec);
    let faults = [
        PeFault {
            default: true,
            what: "a bit of the weight a swap moves into the shadow register flipped",
            from: "(c_swap_in ? leaving : ws)",
            to: format!("(c_swap_in ? leaving {flip_lsb} : ws)"),
            first: &[".ws"],
            exact: Some((ws_reg, ws_cycle)),
        },
        PeFault {
            default: true,
            what: "the weight a swap switches out leaves without its update",
            from: "c_swap_in ? (c_upd_in ? lv_w_next : w) : ws;",
            to: "c_swap_in ? w : ws;".into(),
            first: &[".ws", ".wp"],
            exact: None,
        },
        PeFault {
            default: false,
            what: "a bit of the weight a slot sends south flipped",
            from: "wp <= exch ? leaving : wp_in;",
            to: format!("wp <= exch ? leaving {flip_lsb} : wp_in;"),
            first: &[".wp"],
            exact: None,
        },
        PeFault {
            default: false,
            what: "the wave's update flag is not kept",
            from: "c_upd <= c_upd_in;",
            to: "c_upd <= 1'b0;".into(),
            first: &[".c_upd"],
            exact: None,
        },
        PeFault {
            default: false,
            what: "a swap does not restart dW",
            from: "dw_base = c_swap_in ? {AW{1'b0}} : dw;",
            to: "dw_base = dw;".into(),
            first: &[".dw"],
            exact: None,
        },
    ];
    for f in faults.iter().filter(|f| f.default || all_faults()) {
        let files = with_fault(&cfg, f.from, &f.to);
        let what = f.what;
        match cosim_rec(&cfg, &files, &rec, Simulator::Verilator, what) {
            Err(CosimError::Mismatch(m)) => {
                assert!(
                    m.signal.contains("u_pe") && f.first.iter().any(|r| m.signal.ends_with(r)),
                    "{what}: first mismatch {m}"
                );
                if let Some((reg, cycle)) = &f.exact {
                    assert_eq!((&m.signal, m.cycle), (reg, *cycle), "{what}: {m}");
                }
                println!("{what}: caught at {m}");
            }
            other => panic!("{what}: not caught ({other:?})"),
        }
    }
}

/// Faults in the banks only a dense array has, each caught in the
/// register where it is, in the cycle it shows: a flipped bit in the
/// control skew right after the first edge, and (all faults only) a missed
/// reset in the w skew (random stimulus with resets) and a stuck sign bit
/// in the w deskew.
#[test]
#[ignore = "needs verilator, yosys"]
fn faults_in_dense_banks_are_caught_and_located() {
    let cfg = dense_fault_config();
    let (training, _) = scenario::run_spec(&cfg, &FAULT_SPEC, true);
    let (random, _) = scenario::random_cycles(&cfg, 6, 400, true);
    // (in the default run, what, bank instance, text in sa_skew.v,
    // replacement, stimulus, register expected to differ first, in the
    // cycle if known)
    let faults = [
        (
            true,
            "control skew: bit 0 of row 1's first stage flipped",
            "u_ctlskew",
            "r <= tap[s];",
            "r <= (k == 1 && s == 0) ? tap[s] ^ {{(W-1){1'b0}}, 1'b1} : tap[s];",
            &training,
            "g_ctlskew.u_ctlskew.g_lane[1].g_stage[0].r",
            Some(1),
        ),
        (
            false,
            "w skew: the last stage of column 3 misses the reset",
            "u_wskew",
            "if (rst) begin",
            "if (rst && !(k == LANES - 1 && s == L - 1)) begin",
            &random,
            "g_wskew.u_wskew.g_lane[3].g_stage[2].r",
            None,
        ),
        (
            false,
            "w deskew: the sign bit of column 0's first stage stuck at 0",
            "u_wdeskew",
            "r <= tap[s];",
            "r <= (k == 0 && s == 0) ? {1'b0, tap[s][W-2:0]} : tap[s];",
            &training,
            "g_wdeskew.u_wdeskew.g_lane[0].g_stage[0].r",
            None,
        ),
    ];
    for (default, what, instance, from, to, rec, reg, cycle) in faults {
        if !default && !all_faults() {
            continue;
        }
        let files = with_bank_fault(&cfg, instance, from, to);
        match cosim_rec(&cfg, &files, rec, Simulator::Verilator, instance) {
            Err(CosimError::Mismatch(m)) => {
                assert_eq!(m.signal, reg, "{what}: first mismatch {m}");
                if let Some(c) = cycle {
                    assert_eq!(m.cycle, c, "{what}: first mismatch {m}");
                }
                println!("{what}: caught at {m}");
            }
            other => panic!("{what}: not caught ({other:?})"),
        }
    }
}

/// The evicted weights' output registers take the lanes in reverse order:
/// Verilator names the first `w_q` that differs, Icarus (ports only) the
/// `w_out` lane.
#[test]
#[ignore = "needs verilator, iverilog, yosys"]
fn reversed_w_out_lanes_of_a_dense_array_are_caught_by_both_simulators() {
    let cfg = dense_fault_config();
    let mut files = sysgrad_hdl::generate(&cfg);
    edit(
        &mut files,
        "sa_top.v",
        "w_q <= w_dsk[j*DW +: DW];",
        "w_q <= w_dsk[(C-1-j)*DW +: DW];",
    );
    for sim in [Simulator::Icarus, Simulator::Verilator] {
        let (rec, _) = scenario::run_spec(&cfg, &FAULT_SPEC, sim == Simulator::Verilator);
        match cosim_rec(&cfg, &files, &rec, sim, &format!("w_q-{sim:?}")) {
            Err(CosimError::Mismatch(m)) => {
                let named = match sim {
                    Simulator::Verilator => {
                        m.signal.starts_with("g_w_out[") && m.signal.ends_with("].w_q")
                    }
                    Simulator::Icarus => m.signal.starts_with("w_out["),
                };
                assert!(named, "{sim:?}: first mismatch {m}");
                println!("{sim:?}: caught at {m}");
            }
            other => panic!("{sim:?}: the reversed w_q lanes were not caught ({other:?})"),
        }
    }
}

#[test]
#[ignore = "needs verilator, yosys"]
fn a_failing_case_is_shrunk() {
    let cfg: ArrayConfig = sysgrad_config::load_config(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/small_4x4.toml"),
    )
    .unwrap();
    let files = with_fault(&cfg, "w <= w_next;", "w <= w;");
    let spec = Spec {
        m: 8,
        k: 8,
        n: 6,
        lr_shift: 1,
        seed: 3,
    };
    let err = cosim(&cfg, &files, &spec, "shrink-start")
        .unwrap_err()
        .to_string();
    let (best, _) = soak::shrink(spec, err.clone(), |s| {
        cosim(&cfg, &files, s, "shrink")
            .err()
            .map(|e| e.to_string())
    });
    assert!(
        best.m * best.k * best.n < spec.m * spec.k * spec.n,
        "nothing shrank from {spec} ({err})"
    );
    println!("shrunk {spec} to {best}");
}
