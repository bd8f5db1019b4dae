//! `sysgrad train --engine rtl --steps K`: the first K training steps of a
//! model on the emulated accelerator (checked against the array engine
//! after every step), then the same host session played on the Verilator
//! build of `sa_accel` through its AXI host interface: every line read
//! back, STATUS and PC after every run, every counter after every step
//! and the array's inputs in every run cycle compared with the emulator.

use crate::train::{accel_options, TrainArgs};
use sysgrad_workloads::{data, model, train};

pub fn run(a: &TrainArgs) -> Result<(), String> {
    if a.model.is_empty() {
        return Err("--engine rtl trains a --model".into());
    }
    if a.steps == 0 {
        return Err("--steps 0: give at least one step".into());
    }
    if a.gap > 95 {
        return Err(format!("--gap {} is outside 0..=95 (percent)", a.gap));
    }
    for path in &a.model {
        let line = run_model(a, path)?;
        println!("{line}\n");
    }
    Ok(())
}

fn run_model(a: &TrainArgs, path: &std::path::Path) -> Result<String, String> {
    let mut m = model::load_model(path).map_err(|e| e.to_string())?;
    if let Some(d) = &a.data {
        m.data_path = d.clone();
    }
    let samples = data::load(&m.data_path).map_err(|e| e.to_string())?;
    let t = m.spec.training;
    let split = data::split(&samples, t.test_fraction, t.seed).map_err(|e| e.to_string())?;
    let mut opts = accel_options(a, &m)?;
    opts.record_trace = true;
    eprintln!(
        "{}: {} training steps on the emulated accelerator ...",
        m.spec.name, a.steps
    );
    let session = train::accel_session(&m, &split, opts, a.steps).map_err(|e| e.to_string())?;
    eprintln!(
        "{}: building sa_accel for {} with Verilator (cached under target/cosim) ...",
        m.spec.name,
        session.cfg.tag()
    );
    let rtl = sysgrad_testbench::accel::build(&session.cfg).map_err(|e| e.to_string())?;
    eprintln!("{}: replaying the steps on the RTL ...", m.spec.name);
    let rep = rtl
        .replay(&session.transcript, session.recording.as_ref(), 1, a.gap)
        .map_err(|e| format!("{}: {e}", m.spec.name))?;
    let model_cycles = session.run_cycles + session.host.link_cycles();
    let driver = if a.c_driver {
        eprintln!("{}: the same steps through the C driver ...", m.spec.name);
        let rep = sysgrad_testbench::accel::build_c_host(&session.cfg)
            .and_then(|c| c.play(&session.transcript, 1, a.gap))
            .map_err(|e| format!("{} (C driver): {e}", m.spec.name))?;
        format!(
            "; through the C driver (sa_accel.c): {} runs, {} words read back and {} counters \
             equal, {} host cycles",
            rep.runs, rep.words_compared, rep.counters_compared, rep.cycles
        )
    } else {
        String::new()
    };
    Ok(format!(
        "`{}` on {}, {} training steps (weights equal to the array engine's after each): on the \
         RTL {} runs, {} run cycles with every array input equal to the emulator's, {} words \
         read back equal (results, updated weights, dW), {} counters at {} checkpoints equal \
         (DMA beats: {} in, {} out); host: {} cycles on the RTL at {}% stall ({} of them \
         reading the checkpoints), {} in the emulator's host-link model{driver}",
        m.spec.name,
        session.cfg.tag(),
        session.steps,
        rep.runs,
        rep.run_cycles,
        rep.words_compared,
        rep.counters_compared,
        rep.checkpoints,
        rep.beats_in,
        rep.beats_out,
        rep.host_cycles,
        a.gap,
        rep.checkpoint_cycles,
        model_cycles
    ))
}
