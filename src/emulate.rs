//! `sysgrad emulate`: one training step of a random layer, interleaved and
//! sequential, with the per-phase counters side by side.

use ndarray::Array2;
use sysgrad_config::Backward;
use sysgrad_emulator::gemm::{self, DwSink};
use sysgrad_emulator::{stats, Driver};
use sysgrad_rng::Rng;

#[derive(clap::Args)]
pub struct EmulateArgs {
    #[command(flatten)]
    config: crate::ConfigArg,
    /// Layer output size M (rows of W).
    #[arg(long, default_value_t = 64)]
    m: usize,
    /// Layer input size K (columns of W).
    #[arg(long, default_value_t = 64)]
    k: usize,
    /// Batch size N (columns of X).
    #[arg(long, default_value_t = 64)]
    n: usize,
    /// SGD learning rate as 2^-lr_shift.
    #[arg(long, default_value_t = 6)]
    lr_shift: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the step's per-cycle port stimulus and trace, in the array's
    /// own schedule
    /// (stimulus.txt, ports.txt) into this folder.
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// With --trace, also write every register as emulator.vcd.
    #[arg(long, requires = "trace")]
    vcd: bool,
}

/// Writes a recording as stimulus, port trace and (with snapshots) VCD.
fn write_trace(
    cfg: &sysgrad_config::ArrayConfig,
    rec: sysgrad_emulator::Recording,
    dir: &std::path::Path,
) -> Result<(), String> {
    use sysgrad_testbench::{stimulus, vcd};
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = vec![
        ("stimulus.txt", stimulus::render(cfg, &rec.inputs)),
        ("ports.txt", stimulus::render_ports(cfg, &rec.outputs)),
    ];
    if let Some(snaps) = &rec.snapshots {
        files.push(("emulator.vcd", vcd::write_snapshots(snaps)));
    }
    for (name, text) in files {
        let path = dir.join(name);
        crate::write_atomically(&path, text.as_bytes())?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Forward + backward + update of one layer with `schedule` on `drv`.
fn step(
    mut drv: Driver,
    schedule: Backward,
    w: &Array2<i64>,
    x: &Array2<i64>,
    dy: &Array2<i64>,
    lr: u32,
) -> Result<Driver, String> {
    gemm::forward(&mut drv, w.view(), x.view()).map_err(|e| e.to_string())?;
    gemm::backward(
        &mut drv,
        schedule,
        w.view(),
        x.view(),
        dy.view(),
        DwSink::Update { lr_shift: lr },
    )
    .map_err(|e| e.to_string())?;
    Ok(drv)
}

/// The interleaved-vs-sequential summary lines.
fn print_comparison(il: &stats::Stats, seq: &stats::Stats) {
    let (bi, bs) = (il.backward(), seq.backward());
    println!(
        "\nbackward pass: {} cycles interleaved vs {} sequential ({:.2}x fewer); buffer accesses {} vs {} ({:.2}x fewer)",
        bi.cycles,
        bs.cycles,
        bs.cycles as f64 / bi.cycles as f64,
        bi.accesses(),
        bs.accesses(),
        bs.accesses() as f64 / bi.accesses() as f64
    );
    let (ti, ts) = (il.total(), seq.total());
    println!(
        "\nwhole step: {} cycles interleaved vs {} sequential ({:.2}x fewer)",
        ti.cycles,
        ts.cycles,
        ts.cycles as f64 / ti.cycles as f64
    );
}

pub fn run(a: &EmulateArgs) -> Result<(), String> {
    let cfg = a.config.load()?;
    if a.m == 0 || a.k == 0 || a.n == 0 {
        return Err(format!(
            "layer sizes must be at least 1 (got M={} K={} N={})",
            a.m, a.k, a.n
        ));
    }
    for (terms, what) in [
        (a.k, "the forward reduction K"),
        (a.m, "the dX reduction M"),
        (a.n, "the dW reduction N"),
    ] {
        if let Some(w) = cfg.saturation_warning(terms, what) {
            eprintln!("warning: {w}");
        }
    }
    // An interleaved array also runs the sequential baseline (same
    // hardware, only the schedule differs); a sequential array can only run
    // its own schedule.
    let schedules: &[Backward] = if cfg.interleaved() {
        &[Backward::Interleaved, Backward::Sequential]
    } else {
        &[Backward::Sequential]
    };
    let mut rng = Rng::new(a.seed);
    let bits = cfg.format().in_bits;
    let (w, x, dy) = (
        rng.matrix(a.m, a.k, bits),
        rng.matrix(a.k, a.n, bits),
        rng.matrix(a.m, a.n, bits),
    );
    let runs = schedules
        .iter()
        .map(|&s| {
            Ok((
                s.name(),
                step(Driver::new(cfg), s, &w, &x, &dy, a.lr_shift)?.stats,
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    if let Some(dir) = &a.trace {
        let recording = Driver::recording(cfg, a.vcd);
        let mut drv = step(recording, cfg.backward(), &w, &x, &dy, a.lr_shift)?;
        write_trace(&cfg, drv.recording.take().expect("recording driver"), dir)?;
    }
    println!(
        "**{} array, layer M={} K={} N={} (forward + backward + SGD update)**\n",
        cfg.tag(),
        a.m,
        a.k,
        a.n
    );
    let pes = cfg.rows() * cfg.cols();
    let table: Vec<(&str, &stats::Stats)> = runs.iter().map(|(n, s)| (*n, s)).collect();
    print!("{}", stats::markdown_table(&table, pes));
    if let [(_, il), (_, seq)] = &runs[..] {
        print_comparison(il, seq);
    }
    Ok(())
}
