//! RTL against emulator on stimulus no workload produces: every port
//! random in every cycle (all 16 mode codes, reserved ones included; data
//! with extremes; `dy_valid`; `lr_shift` 0..=63; resets in mid-run),
//! compared on every register and port in every cycle on Verilator; on
//! dense arrays with random waves as well (every control field over its
//! whole port width).

use std::path::PathBuf;
use sysgrad_config::{ArrayConfig, Pipelining};
use sysgrad_emulator::{CycleInput, Mode, ModeCode, Recording, Wave};
use sysgrad_isa::WaveField;
use sysgrad_testbench::{scenario, soak, verilator, Simulator};

const CYCLES: usize = 600;

fn load(name: &str) -> ArrayConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../configs")
        .join(name);
    sysgrad_config::load_config(&path).unwrap()
}

/// A random configuration (`soak::random_config`) cut to `rows` x `cols`.
fn random_shape(seed: u64, rows: usize, cols: usize) -> ArrayConfig {
    let base = soak::random_config(seed, 6);
    ArrayConfig::new(rows, cols, base.backward(), base.format()).unwrap()
}

/// The stimulus really is what this test claims: every code, resets after
/// the first cycle and before the last, both `dy_valid` values, both ends
/// of `lr_shift`.
fn assert_covers_the_ports(inputs: &[CycleInput]) {
    for code in ModeCode::all() {
        assert!(
            inputs.iter().any(|i| i.mode == code),
            "mode code {} never driven",
            code.code()
        );
    }
    let mid_run = &inputs[1..inputs.len() - 1];
    assert!(mid_run.iter().filter(|i| i.rst).count() >= 2, "no resets");
    assert!(inputs.iter().any(|i| i.dy_valid) && inputs.iter().any(|i| !i.dy_valid));
    assert!(inputs.iter().any(|i| i.lr_shift == 0) && inputs.iter().any(|i| i.lr_shift == 63));
}

fn cosim(cfg: &ArrayConfig, rec: &Recording, what: &str) {
    let dir = verilator::cache_root()
        .join("tests")
        .join(format!("random-stimulus-{}", cfg.tag()));
    match sysgrad_testbench::run(cfg, rec, Simulator::Verilator, &dir) {
        Ok(rep) => {
            assert_eq!(rep.cycles, rec.inputs.len());
            assert!(rep.register_samples > 0 && rep.rtl_registers > 0);
            println!(
                "{}: {what}: {} register samples, {} registers",
                cfg.tag(),
                rep.register_samples,
                rep.rtl_registers
            );
        }
        Err(e) => panic!("{} {what}: {e}", cfg.tag()),
    }
}

#[test]
#[ignore = "needs verilator, yosys"]
fn random_ports_every_cycle_match_on_every_register() {
    // The shipped 4x4 and 3x5 (sequential) models are the ones
    // tests/cosim.rs builds; the one-row and one-column arrays of random
    // formats are the edge cases where skew banks are wires.
    let configs = [
        load("small_4x4.toml"),
        load("seq_3x5.toml"),
        random_shape(11, 1, 4),
        random_shape(12, 5, 1),
        // Built with a constant shift: the random lr_shift port is ignored.
        load("small_4x4.toml").with_fixed_lr_shift(Some(5)).unwrap(),
        // Random modes cut passes short, so an UPDATE finds a raw product
        // in prod_dw (which only this stimulus does).
        load("mul_reg_4x4.toml")
            .with_deferred_saturation(true)
            .unwrap(),
    ];
    for (k, cfg) in configs.iter().enumerate() {
        let seed = 100 + k as u64;
        let (rec, what) = scenario::random_cycles(cfg, seed, CYCLES, true);
        assert_covers_the_ports(&rec.inputs);
        cosim(cfg, &rec, &what);
    }
}

/// The waves of a dense array's random stimulus cover the control ports:
/// every `wave_op` value (bubble codes and IL included), swaps with and
/// without update, slots, and every `wave_load_row` value the port can
/// carry (rows past the last one included).
fn assert_covers_the_wave_ports(cfg: &ArrayConfig, inputs: &[CycleInput]) {
    let waves: Vec<Wave> = inputs
        .iter()
        .filter(|i| i.mode == Mode::Stream && !i.rst)
        .map(|i| i.wave)
        .collect();
    let rows = cfg.rows();
    for op in 0..1u8 << WaveField::Op.bits(rows) {
        assert!(
            waves.iter().any(|w| w.op == op),
            "wave_op {op} never driven"
        );
    }
    for row in 0..1u16 << WaveField::LoadRow.bits(rows) {
        assert!(
            waves.iter().any(|w| w.load && w.load_row == row),
            "no slot for row {row}"
        );
    }
    assert!(waves.iter().any(|w| w.swap && w.update));
    assert!(waves.iter().any(|w| w.swap && !w.update));
    assert!(waves.iter().any(|w| !w.swap && !w.load));
}

#[test]
#[ignore = "needs verilator, yosys"]
fn random_ports_on_dense_arrays_match_on_every_register() {
    // The dense 4x4 is the model tests/cosim.rs builds; one row (no
    // control skew), one column (no w skew or deskew) and 3 rows (a load
    // row port that can name a row the array does not have).
    let configs = [
        load("small_4x4.toml"),
        random_shape(21, 1, 3),
        random_shape(22, 4, 1),
        random_shape(23, 3, 2),
    ];
    for (k, cfg) in configs.iter().enumerate() {
        let cfg = cfg.with_pipelining(Pipelining::Dense).unwrap();
        let seed = 200 + k as u64;
        let (rec, what) = scenario::random_cycles(&cfg, seed, CYCLES, true);
        assert_covers_the_ports(&rec.inputs);
        assert_covers_the_wave_ports(&cfg, &rec.inputs);
        cosim(&cfg, &rec, &what);
    }
}
