//! `sysgrad accel`: one training step of an FC layer (forward, backward,
//! SGD update) compiled to the accelerator's command stream and run on the
//! emulator's controller, interleaved and sequential, with the hardware
//! counters of `docs/HOST.md` side by side.

use crate::args::{
    one_config, pipelining_or_twins, write_atomically, Budget, Configs, HostStalls, LayerArgs,
    PipeliningChoice,
};
use anyhow::{anyhow, bail, Context, Result};
use ndarray::Array2;
use sysgrad_accel::{compile_layer, encode_program, Accelerator, BufferId, FcLayer};
use sysgrad_config::budget::Estimate;
use sysgrad_config::{ArrayConfig, Backward, Pipelining};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_isa::host::{Counter, Word};
use sysgrad_rng::Rng;
use sysgrad_testbench::accel::Setup;

#[derive(clap::Args)]
#[command(
    mut_arg("config", one_config),
    mut_arg("m", |a| a.default_value("100")),
    mut_arg("k", |a| a.default_value("70")),
    mut_arg("n", |a| a.default_value("16")),
    mut_arg("pipelining", pipelining_or_twins)
)]
pub struct AccelArgs {
    #[command(flatten)]
    config: Configs,
    #[command(flatten)]
    layer: LayerArgs,
    /// Also run both steps on the generated RTL (Verilator, through the
    /// AXI host interface) and check every cycle and counter against the
    /// emulator.
    #[arg(long)]
    rtl: bool,
    #[command(flatten)]
    stalls: HostStalls,
    /// Also run both steps on the Verilator build of `sa_accel` through the
    /// generated C driver (`sa_accel.c`, compiled with gcc -std=c99
    /// -Werror): DMA, program load, start, wait and counter read-out all
    /// by the driver's calls; every word read back and every counter
    /// compared with the emulator.
    #[arg(long)]
    c_driver: bool,
    /// Write the interleaved step's program as text (for `sysgrad program`).
    #[arg(long, value_name = "FILE")]
    save_program: Option<std::path::PathBuf>,
    #[command(flatten)]
    pipelining: PipeliningChoice,
    /// Print only the summary lines (cycles, buffer words, MAC bound), not
    /// the table of every counter.
    #[arg(long)]
    summary: bool,
    #[command(flatten)]
    budget: Budget,
}

/// One step's program on one controller with one schedule.
struct Run {
    pipelining: Pipelining,
    schedule: Backward,
    words: usize,
    counters: Vec<(Counter, u64)>,
}

impl Run {
    fn get(&self, c: Counter) -> u64 {
        self.counters
            .iter()
            .find(|(x, _)| *x == c)
            .map_or(0, |p| p.1)
    }

    fn label(&self) -> String {
        format!("{} {}", self.pipelining.name(), self.schedule.name())
    }

    /// The backward passes' cycles and buffer words.
    fn backward(&self) -> (u64, u64) {
        let pass = |c: &Counter| {
            ["dx_", "dw_", "il_"]
                .iter()
                .any(|p| c.name().starts_with(p))
        };
        let cycles: u64 = self
            .counters
            .iter()
            .filter(|(c, _)| pass(c) && c.name().ends_with("_cycles"))
            .map(|p| p.1)
            .sum();
        let moved: Vec<(Counter, u64)> = self
            .counters
            .iter()
            .filter(|(c, _)| pass(c))
            .copied()
            .collect();
        (cycles, words(&moved))
    }

    /// The fewest cycles the step's MACs need on `pes` PEs: each pass's MACs
    /// over its MAC slots (`Stats::mac_slots`: two per PE interleaved).
    fn mac_bound(&self, pes: u64) -> u64 {
        use sysgrad_emulator::{Phase, Stats};
        use Counter::*;
        [
            (FwdMacs, Phase::Forward),
            (DxMacs, Phase::BackwardDx),
            (DwMacs, Phase::BackwardDw),
            (IlMacs, Phase::BackwardInterleaved),
        ]
        .iter()
        .map(|&(c, p)| self.get(c).div_ceil(Stats::mac_slots(p) * pes))
        .sum()
    }
}

/// One training step: the program, and the layer's operands both stored in
/// an emulator and listed as a co-simulation set-up for the RTL.
pub struct Step {
    pub program: Vec<u64>,
    pub acc: Accelerator,
    pub setup: Setup,
}

/// Random W, X, dY (seeded) stored into a fresh accelerator, and the
/// program of one training step with `schedule`.
pub fn prepare(
    cfg: ArrayConfig,
    (m, k, n): (usize, usize, usize),
    schedule: Backward,
    lr_shift: u32,
    seed: u64,
) -> Result<Step> {
    if m == 0 || k == 0 || n == 0 {
        bail!("layer sizes must be at least 1 (got M={m} K={k} N={n})");
    }
    if lr_shift > 63 {
        bail!("--lr-shift {lr_shift} is outside 0..=63");
    }
    let layer = FcLayer::new(&cfg, m, k, n);
    let need = [
        ("weights", BufferId::Weights, layer.w.end()),
        ("activations", BufferId::Activations, layer.x.end()),
        ("gradients", BufferId::Gradients, layer.dy.end()),
        ("accumulators", BufferId::Accumulators, layer.dw_t.end()),
    ];
    let mut acc = Accelerator::new(cfg);
    for (name, id, lines) in need {
        let depth = acc.buffer(id).depth();
        if lines > depth {
            bail!(
                "the layer needs {lines} lines of the {name} buffer, which has {depth} \
                 (raise buffers.{name} in the config or shrink the layer)"
            );
        }
    }
    let program = encode_program(
        &compile_layer(&cfg, &layer, schedule, DwSink::Update { lr_shift })
            .context("compiling the layer")?,
    );
    if program.len() > cfg.buffers().commands {
        bail!(
            "the program has {} words, more than the command memory's {} \
             (raise buffers.commands)",
            program.len(),
            cfg.buffers().commands
        );
    }
    let mut rng = Rng::new(seed);
    let mut setup = Setup::default();
    for (id, b, rows, cols) in [
        (BufferId::Weights, &layer.w, m, k),
        (BufferId::Activations, &layer.x, k, n),
        (BufferId::Gradients, &layer.dy, m, n),
    ] {
        let word = acc.buffer(id).word();
        let data = Array2::from_shape_simple_fn((rows, cols), || random_word(&mut rng, word));
        b.store(acc.buffer_mut(id), data.view())?;
        setup.fill_blocked(id, b, data.view());
    }
    // The host moves the data in packed beats (as many lanes as fit 64 bits).
    setup.packed = true;
    setup
        .compare_blocked(BufferId::Weights, &layer.w)
        .compare_blocked(BufferId::Accumulators, &layer.y)
        .compare_blocked(BufferId::Accumulators, &layer.dx);
    Ok(Step {
        program,
        acc,
        setup,
    })
}

/// A random word of a buffer: a signed value (one in four an extreme,
/// [`Rng::value`]) or any bit pattern of a float format.
fn random_word(rng: &mut Rng, word: Word) -> i64 {
    match word {
        Word::Signed(bits) => rng.value(bits),
        Word::Pattern(_) => word.from_raw(rng.next_u64()),
    }
}

/// Every counter the emulator computes, with its count after `acc` ran
/// (not wrapped to the hardware counters' width).
pub fn counters(acc: &Accelerator) -> Vec<(Counter, u64)> {
    Counter::ALL
        .iter()
        .filter_map(|&c| acc.count(c).map(|v| (c, v)))
        .collect()
}

/// Buffer words moved by the controller: every word counter but REQUANT's.
fn words(counts: &[(Counter, u64)]) -> u64 {
    counts
        .iter()
        .filter(|(c, _)| c.name().ends_with("_reads") || c.name().ends_with("_writes"))
        .map(|(_, v)| v)
        .sum()
}

pub fn run(a: &AccelArgs) -> Result<()> {
    // Both schedules run on an interleaved array, so that only the program differs.
    let base = a
        .config
        .one_or_default()?
        .with_backward(Backward::Interleaved);
    let (seed, gap) = (a.layer.seed, a.stalls.gap);
    let (mut runs, mut rtl_lines) = (Vec::new(), Vec::new());
    for cfg in a.pipelining.configs_or_twins(base)? {
        for schedule in [Backward::Interleaved, Backward::Sequential] {
            let dims = a.layer.dims()?;
            let mut step = prepare(cfg, dims, schedule, a.layer.lr_shift, seed)?;
            a.budget
                .admit(&run_estimate(&cfg, &step.program, a.rtl || a.c_driver))?;
            step.acc
                .run(&step.program)
                .map_err(|f| anyhow!("the compiled program faulted: {f}"))?;
            let run = Run {
                pipelining: cfg.pipelining(),
                schedule,
                words: step.program.len(),
                counters: counters(&step.acc),
            };
            if a.rtl {
                rtl_lines.push(cosim_line(&cfg, &step, &run, (seed, gap))?);
            }
            if a.c_driver {
                rtl_lines.push(c_driver_line(&cfg, &step, &run.label(), (seed, gap))?);
            }
            let first = runs.is_empty();
            if let (Some(path), true) = (&a.save_program, first) {
                let text = sysgrad_accel::asm::disassemble(&step.program);
                write_atomically(path, text.as_bytes())?;
                eprintln!("wrote {}", path.display());
            }
            runs.push(run);
        }
    }
    if !a.summary {
        print_table(&base, a, &runs);
    }
    print_summaries(&base, &runs);
    // After the tables, so that the RTL's agreement reads as a conclusion.
    for line in rtl_lines {
        println!("\n{line}");
    }
    Ok(())
}

/// Co-simulates `step` on the RTL and says what agreed.
fn cosim_line(
    cfg: &ArrayConfig,
    step: &Step,
    run: &Run,
    (seed, gap): (u64, u32),
) -> Result<String> {
    eprintln!("co-simulating the {} step on the RTL ...", run.label());
    let rep = sysgrad_testbench::accel::cosim_program(cfg, &step.setup, &step.program, seed, gap)?;
    let host = |c: Counter| rep.counter(c).unwrap_or(0);
    Ok(format!(
        "RTL, {} step: {} run cycles, every array input and {}, {} buffer words read back \
         equal to the emulator; host: {} cycles, {} beats in \
         ({} stall cycles), {} beats out ({} stall cycles)",
        run.label(),
        rep.run_cycles,
        sysgrad_testbench::accel::counters_agreed(rep.counters_compared),
        rep.words_compared,
        rep.host_cycles,
        rep.beats_in,
        host(Counter::DmaInStalls),
        rep.beats_out,
        host(Counter::DmaOutStalls),
    ))
}

/// Every counter that is not zero in some run, one column per run.
fn print_table(cfg: &ArrayConfig, a: &AccelArgs, runs: &[Run]) {
    println!(
        "**{} accelerator, FC layer M={} K={} N={}: one training step through the command stream**\n",
        cfg.tag(),
        a.layer.m,
        a.layer.k,
        a.layer.n
    );
    let labels: Vec<String> = runs.iter().map(Run::label).collect();
    println!(
        "| counter | {} |\n|---|{}",
        labels.join(" | "),
        "---:|".repeat(runs.len())
    );
    for &c in Counter::ALL.iter() {
        let values: Vec<u64> = runs.iter().map(|r| r.get(c)).collect();
        let counted = runs[0].counters.iter().any(|(x, _)| *x == c);
        if counted && values.iter().any(|v| *v != 0) {
            let cells: Vec<String> = values.iter().map(u64::to_string).collect();
            println!("| `{}` | {} |", c.name(), cells.join(" | "));
        }
    }
}

/// Interleaved against sequential on each controller, dense against none
/// for each schedule, and each run against its MAC bound.
fn print_summaries(cfg: &ArrayConfig, runs: &[Run]) {
    let find =
        |p: Pipelining, s: Backward| runs.iter().find(|r| r.pipelining == p && r.schedule == s);
    for p in [Pipelining::Dense, Pipelining::None] {
        let (Some(il), Some(seq)) = (
            find(p, Backward::Interleaved),
            find(p, Backward::Sequential),
        ) else {
            continue;
        };
        let ((bci, bwi), (bcs, bws)) = (il.backward(), seq.backward());
        let (ci, cs) = (il.get(Counter::RunCycles), seq.get(Counter::RunCycles));
        let (wi, ws) = (words(&il.counters), words(&seq.counters));
        println!(
            "\n{} controller: program {} words; backward passes: {bci} cycles interleaved vs \
             {bcs} sequential ({:.2}x fewer), buffer words {bwi} vs {bws} ({:.2}x fewer); \
             whole step: {ci} cycles interleaved vs {cs} sequential ({:.2}x fewer), buffer \
             words {wi} vs {ws} ({:.2}x fewer)",
            p.name(),
            il.words,
            bcs as f64 / bci as f64,
            bws as f64 / bwi as f64,
            cs as f64 / ci as f64,
            ws as f64 / wi as f64
        );
    }
    for s in [Backward::Interleaved, Backward::Sequential] {
        if let (Some(d), Some(n)) = (find(Pipelining::Dense, s), find(Pipelining::None, s)) {
            let (cd, cn) = (d.get(Counter::RunCycles), n.get(Counter::RunCycles));
            println!(
                "\n{} schedule: {cd} run cycles dense vs {cn} none ({:.2}x fewer)",
                s.name(),
                cn as f64 / cd as f64
            );
        }
    }
    let pes = (cfg.rows() * cfg.cols()) as u64;
    println!();
    for r in runs {
        let (cycles, bound) = (r.get(Counter::RunCycles), r.mac_bound(pes));
        println!(
            "{}: {cycles} run cycles, MAC bound {bound} ({:.2}x the bound)",
            r.label(),
            cycles as f64 / bound as f64
        );
    }
}

/// The step through the C driver on the Verilated `sa_accel`, in a line.
fn c_driver_line(
    cfg: &ArrayConfig,
    step: &Step,
    label: &str,
    (seed, gap): (u64, u32),
) -> Result<String> {
    eprintln!("running the {label} step through the C driver ...");
    let transcript = sysgrad_testbench::accel::setup_transcript(cfg, &step.setup, &step.program)?;
    let rep =
        sysgrad_testbench::accel::build_c_host(cfg).and_then(|m| m.play(&transcript, seed, gap))?;
    Ok(format!(
        "C driver, {} step: {} run, {} words read back equal to the emulator, {}; \
         host: {} cycles, {} beats in, {} beats out",
        label,
        rep.runs,
        rep.words_compared,
        sysgrad_testbench::accel::counters_agreed(rep.counters_compared as usize),
        rep.cycles,
        rep.beats_in,
        rep.beats_out
    ))
}

#[derive(clap::Args)]
#[command(mut_arg("config", one_config))]
pub struct ProgramArgs {
    #[command(flatten)]
    config: Configs,
    /// Program text (docs/COMMANDS.md syntax, see `sysgrad accel --save-program`).
    #[arg(long, value_name = "FILE")]
    program: std::path::PathBuf,
    /// Seed of the random data in the first lines of the weight,
    /// activation and gradient buffers.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Lines of each data buffer filled with random data (at most its depth).
    #[arg(long, default_value_t = 256)]
    fill: usize,
    /// Also run the program on the RTL through the host interface and
    /// compare every cycle, counter and the buffers' first lines.
    #[arg(long)]
    rtl: bool,
    #[command(flatten)]
    stalls: HostStalls,
    #[command(flatten)]
    budget: Budget,
}

/// What running `program` needs: the emulated accelerator, and with
/// `rtl` the Verilator build of `sa_accel` running it too.
fn run_estimate(cfg: &ArrayConfig, program: &[u64], rtl: bool) -> Estimate {
    // The commands are walked once: the RTL replays the same cycles.
    let cycles = sysgrad_accel::budget::program_cycles(cfg, program);
    let emulated = sysgrad_accel::budget::run(cfg, program.len(), cycles);
    match rtl {
        true => emulated.then(&sysgrad_testbench::budget::verilator(cfg, cycles)),
        false => emulated,
    }
}

/// `sysgrad program`: assemble a program text and run it on the
/// emulator's controller (and the RTL), reporting where and why it stopped.
pub fn run_program(a: &ProgramArgs) -> Result<()> {
    use sysgrad_accel::asm::{assemble, disassemble};
    let cfg = a.config.one_or_default()?;
    let path = a.program.display();
    let text = std::fs::read_to_string(&a.program).with_context(|| path.to_string())?;
    let program = assemble(&text).with_context(|| path.to_string())?;
    if program.len() > cfg.buffers().commands {
        bail!(
            "{path}: {} words do not fit the command memory ({} words, buffers.commands)",
            program.len(),
            cfg.buffers().commands
        );
    }
    a.budget.admit(&run_estimate(&cfg, &program, a.rtl))?;
    let mut acc = Accelerator::new(cfg);
    let mut setup = Setup::default();
    let mut rng = Rng::new(a.seed);
    for id in [
        BufferId::Weights,
        BufferId::Activations,
        BufferId::Gradients,
    ] {
        let buf = acc.buffer_mut(id);
        let (lines, lanes, word) = (a.fill.min(buf.depth()), buf.lanes(), buf.word());
        let data: Vec<Vec<i64>> = (0..lines)
            .map(|_| (0..lanes).map(|_| random_word(&mut rng, word)).collect())
            .collect();
        for (line, values) in data.iter().enumerate() {
            for (lane, v) in values.iter().enumerate() {
                buf.set(line, lane, *v)?;
            }
        }
        setup.fill(id, 0, data).compare(id, 0, lines);
    }
    setup.packed = true;
    let acc_lines = a.fill.min(acc.buffer(BufferId::Accumulators).depth());
    setup.compare(BufferId::Accumulators, 0, acc_lines);
    let outcome = acc.run(&program);
    println!(
        "**{}: {} words on the {} accelerator**\n",
        a.program.display(),
        program.len(),
        cfg.tag()
    );
    println!("| counter | value |\n|---|---:|");
    for (c, v) in counters(&acc) {
        if v != 0 {
            println!("| `{}` | {v} |", c.name());
        }
    }
    if a.rtl {
        let rep =
            sysgrad_testbench::accel::cosim_program(&cfg, &setup, &program, a.seed, a.stalls.gap)?;
        println!(
            "\nRTL: {} run cycles, array inputs, STATUS/PC and {} buffer words equal to the \
             emulator, {}",
            rep.run_cycles,
            rep.words_compared,
            sysgrad_testbench::accel::counters_agreed(rep.counters_compared)
        );
    }
    match outcome {
        Ok(()) => {
            println!("\nhalted after {} cycles", acc.driver().cycle());
            Ok(())
        }
        Err(f) => {
            let cmd = disassemble(&program[f.pc.min(program.len())..]);
            let first = cmd
                .lines()
                .next()
                .unwrap_or("(past the end of the program)");
            bail!(
                "the controller stopped at word {} `{first}`: {} (error 0x{:02x})",
                f.pc,
                f.code,
                f.code.code()
            )
        }
    }
}
