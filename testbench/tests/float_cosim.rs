//! The floating-point array (`[format] kind = "float"`) against the
//! emulator: every port random in every cycle (all mode codes, resets,
//! `dy_valid`, `lr_shift`; data of each operand's format with its edge
//! values: signed zeros, subnormals, the smallest normal, the largest
//! finite, infinities, NaNs), every register (`sr_state` included) and
//! port compared every cycle on Verilator, the ports on Icarus; all-bf16
//! and bf16/E4M3/E5M2, both roundings, both pipelinings, one multiplier or
//! two, with the multiplier register. Faults injected into the rounding
//! and the normalisation are caught.

use std::path::PathBuf;
use sysgrad_config::float::{FloatFormat, FloatKind, Rounding};
use sysgrad_config::{ArrayConfig, Backward, Numbers, Pipelining};
use sysgrad_emulator::Recording;
use sysgrad_hdl::VerilogFile;
use sysgrad_testbench::{scenario, verilator, CosimError, Simulator};

const CYCLES: usize = 600;

fn load(name: &str) -> ArrayConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../configs")
        .join(name);
    sysgrad_config::load_config(&path).unwrap()
}

/// A `rows` x `cols` float array of formats `[w, x, g]`.
fn float(
    rows: usize,
    cols: usize,
    backward: Backward,
    [weights, activations, gradients]: [FloatKind; 3],
    rounding: Rounding,
) -> ArrayConfig {
    load("small_4x4.toml")
        .with_size(rows, cols)
        .unwrap()
        .with_backward(backward)
        .with_numbers(Numbers::Float(FloatFormat {
            weights,
            activations,
            gradients,
            rounding,
            seed: 3,
        }))
        .unwrap()
}

fn fp8() -> [FloatKind; 3] {
    [FloatKind::Bf16, FloatKind::E4M3, FloatKind::E5M2]
}

fn cosim_files(
    cfg: &ArrayConfig,
    files: &[VerilogFile],
    rec: &Recording,
    sim: Simulator,
    name: &str,
) -> Result<sysgrad_testbench::CosimReport, CosimError> {
    let dir = verilator::cache_root()
        .join("tests")
        .join(format!("float-{name}-{}", cfg.tag()));
    sysgrad_testbench::run_files(cfg, files, rec, sim, &dir)
}

fn random(cfg: &ArrayConfig, seed: u64, cycles: usize) -> Recording {
    scenario::random_cycles(cfg, seed, cycles, true).0
}

#[test]
#[ignore = "needs verilator, yosys"]
fn float_arrays_match_the_emulator_on_every_register_every_cycle() {
    use Backward::*;
    let configs = [
        float(3, 3, Interleaved, [FloatKind::Bf16; 3], Rounding::Nearest),
        float(3, 2, Sequential, fp8(), Rounding::Stochastic),
        float(2, 3, Interleaved, fp8(), Rounding::Nearest)
            .with_multiplier_register(true)
            .unwrap(),
        float(2, 2, Sequential, [FloatKind::Bf16; 3], Rounding::Stochastic)
            .with_multiplier_register(true)
            .unwrap(),
        float(
            3,
            3,
            Interleaved,
            [FloatKind::Bf16; 3],
            Rounding::Stochastic,
        )
        .with_pipelining(Pipelining::Dense)
        .unwrap(),
        float(2, 3, Sequential, fp8(), Rounding::Nearest)
            .with_pipelining(Pipelining::Dense)
            .unwrap(),
    ];
    for (k, cfg) in configs.iter().enumerate() {
        let rec = random(cfg, 300 + k as u64, CYCLES);
        let files = sysgrad_hdl::generate(cfg);
        match cosim_files(cfg, &files, &rec, Simulator::Verilator, "random") {
            Ok(rep) => {
                assert_eq!(rep.cycles, rec.inputs.len());
                assert!(rep.register_samples > 0 && rep.rtl_registers > 0);
                let stochastic = cfg.numbers().float().unwrap().rounding == Rounding::Stochastic;
                let has_sr = sysgrad_hdl::pe_registers(cfg)
                    .iter()
                    .any(|(n, _)| *n == sysgrad_hdl::SR_STATE);
                assert_eq!(has_sr, stochastic, "{}: sr_state iff stochastic", cfg.tag());
                println!(
                    "{}: {} register samples, {} registers",
                    cfg.tag(),
                    rep.register_samples,
                    rep.rtl_registers
                );
            }
            Err(e) => panic!("{}: {e}", cfg.tag()),
        }
    }
}

#[test]
#[ignore = "needs iverilog"]
fn float_arrays_match_the_emulator_on_icarus() {
    use Backward::*;
    let configs = [
        float(3, 2, Interleaved, fp8(), Rounding::Stochastic),
        float(2, 2, Sequential, [FloatKind::Bf16; 3], Rounding::Nearest)
            .with_pipelining(Pipelining::Dense)
            .unwrap(),
    ];
    for (k, cfg) in configs.iter().enumerate() {
        let rec = scenario::random_cycles(cfg, 400 + k as u64, CYCLES, false).0;
        let files = sysgrad_hdl::generate(cfg);
        if let Err(e) = cosim_files(cfg, &files, &rec, Simulator::Icarus, "icarus") {
            panic!("{}: {e}", cfg.tag());
        }
    }
}

/// `from` replaced by `to` (once, where it must occur) in `sa_pe.v`.
fn with_fault(cfg: &ArrayConfig, from: &str, to: &str) -> Vec<VerilogFile> {
    let mut files = sysgrad_hdl::generate(cfg);
    let pe = files.iter_mut().find(|f| f.name == "sa_pe.v").unwrap();
    assert!(pe.text.contains(from), "sa_pe.v has no `{from}`");
    pe.text = pe.text.replacen(from, to, 1);
    files
}

#[test]
#[ignore = "needs verilator, yosys"]
fn faults_in_the_rounding_and_the_normalisation_are_caught() {
    let cfg = float(
        3,
        3,
        Backward::Interleaved,
        [FloatKind::Bf16; 3],
        Rounding::Stochastic,
    );
    // (what, text in sa_pe.v, replacement, cycles of random stimulus: a
    // dropped sticky bit shows only in a tie that is not one, which needs
    // long dW sums)
    let faults = [
        (
            "fp32 rounding ties away from zero instead of to even",
            "up = sig[2] && (|sig[1:0] || sticky || sig[3]);",
            "up = sig[2];",
            CYCLES,
        ),
        (
            "the adder's leading-zero count off by one",
            "norm = norm << 5'd1;",
            "norm = norm << 5'd2;",
            CYCLES,
        ),
        (
            "the aligned operand's sticky bit dropped",
            "aligned = {shifted[26:1], shifted[0] || |(field & below)};",
            "aligned = {shifted[26:1], shifted[0]};",
            8 * CYCLES,
        ),
        (
            "the adder's normalisation not stopped at the smallest normal exponent",
            "probe = sum[26:0] | mark;",
            "probe = sum[26:0];",
            CYCLES,
        ),
        (
            "a negative difference (equal exponents) given the first operand's sign",
            "round_fp32_normal(negative ? second[31] : first[31],",
            "round_fp32_normal(first[31],",
            CYCLES,
        ),
        (
            "the stochastic rounding draws from the generator's old state",
            "round_sr_bf16(w_diff, sr_next[15:0])",
            "round_sr_bf16(w_diff, sr_state[15:0])",
            CYCLES,
        ),
    ];
    for (k, (what, from, to, cycles)) in faults.into_iter().enumerate() {
        let files = with_fault(&cfg, from, to);
        let rec = random(&cfg, 500 + k as u64, cycles);
        match cosim_files(
            &cfg,
            &files,
            &rec,
            Simulator::Verilator,
            &format!("fault{k}"),
        ) {
            Err(CosimError::Mismatch(m)) => println!("{what}: caught at {m}"),
            other => panic!("{what}: not caught ({other:?})"),
        }
    }
}
