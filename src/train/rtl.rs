//! `sysgrad train --engine rtl --steps K`: the first K training steps of a
//! model on the emulated accelerator (checked against the array engine
//! after every step), then the same host session played on the Verilator
//! build of `sa_accel` through its AXI host interface: every line read
//! back, STATUS and PC after every run, every counter after every step
//! and the array's inputs in every run cycle compared with the emulator.

use super::args::{TrainArgs, TrainJob};
use anyhow::{bail, Context, Result};
use sysgrad_workloads::{data, train};

pub fn run(a: &TrainArgs) -> Result<()> {
    if a.workload.model.is_empty() {
        bail!("--engine rtl trains a --model");
    }
    for job in a.models()? {
        let line = run_model(a, &job)?;
        println!("{line}\n");
    }
    Ok(())
}

fn run_model(a: &TrainArgs, job: &TrainJob) -> Result<String> {
    let m = &job.model;
    let name = &m.spec.name;
    let gap = a.stalls.gap;
    let split = data::load_split(m)?;
    let mut opts = a.accel_options(m)?;
    opts.record_trace = true;
    let (emulated, cycles) = sysgrad_workloads::budget::accel_steps(m, a.steps);
    let replay = sysgrad_testbench::budget::verilator(&opts.cfg, cycles);
    a.budget.admit(&emulated.and(&replay))?;
    eprintln!(
        "{name}: {} training steps on the emulated accelerator ...",
        a.steps
    );
    let session = train::accel_session(m, &split, opts, a.steps).context(name.clone())?;
    eprintln!(
        "{name}: building sa_accel for {} with Verilator (cached under target/cosim) ...",
        session.cfg.tag()
    );
    let rtl = sysgrad_testbench::accel::build(&session.cfg)?;
    eprintln!("{name}: replaying the steps on the RTL ...");
    let rep = rtl
        .replay(&session.transcript, session.recording.as_ref(), 1, gap)
        .context(name.clone())?;
    let model_cycles = session.run_cycles + session.host.link_cycles();
    let driver = if a.c_driver {
        eprintln!("{name}: the same steps through the C driver ...");
        let rep = sysgrad_testbench::accel::build_c_host(&session.cfg)
            .and_then(|c| c.play(&session.transcript, 1, gap))
            .with_context(|| format!("{name} (C driver)"))?;
        format!(
            "; through the C driver (sa_accel.c): {} runs, {} words read back and {} counters \
             equal, {} host cycles",
            rep.runs, rep.words_compared, rep.counters_compared, rep.cycles
        )
    } else {
        String::new()
    };
    Ok(format!(
        "`{name}` on {}, {} training steps (weights equal to the array engine's after each): on the \
         RTL {} runs, {} run cycles with every array input equal to the emulator's, {} words \
         read back equal (results, updated weights, dW), {} counters at {} checkpoints equal \
         (DMA beats: {} in, {} out); host: {} cycles on the RTL at {gap}% stall ({} of them \
         reading the checkpoints), {} in the emulator's host-link model{driver}",
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
        rep.checkpoint_cycles,
        model_cycles
    ))
}
