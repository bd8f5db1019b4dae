//! A recorded training step replays on a fresh array to the same outputs,
//! cycle for cycle: the stimulus handed to benchmarks and the RTL is complete.

use std::path::Path;
use sysgrad_emulator::Array;
use sysgrad_workloads::{data, model, train};

#[test]
fn a_recorded_mlp_step_replays_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let m = model::load_model(&root.join("models/mlp.toml")).unwrap();
    let samples = data::load(&model::default_data_path()).unwrap();
    let rec = train::record_training_step(&m, &samples[..8]).unwrap();
    assert!(!rec.inputs.is_empty());
    let mut cfg = m.cfg;
    cfg = cfg.with_backward(sysgrad_config::Backward::Interleaved);
    let mut array = Array::new(cfg);
    for (t, (inp, out)) in rec.inputs.iter().zip(&rec.outputs).enumerate() {
        assert_eq!(&array.outputs(), out, "cycle {t}");
        array.step(inp);
    }
}
