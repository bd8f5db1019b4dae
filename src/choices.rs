//! Typed values of the flags whose types live in crates that do not
//! depend on clap: each a `clap::ValueEnum` here, converted to the
//! library's type once, right after parsing. The tests hold every name
//! equal to the library's own (`name()`), so a flag and a report spell a
//! value alike; the conversions are exhaustive matches, so a new library
//! variant fails to compile until it is given a flag value.
//! The configuration's and the synthesis crate's enumerations
//! (`Pipelining`, `Backward`, `Target`, `Part`, `Router`) implement
//! `ValueEnum` in their own crates (feature `clap`).

use clap::ValueEnum;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_emulator::gemm::DwSink;
use sysgrad_explore::Layer;
use sysgrad_pipeline::{PartitionChoice, Schedule, Weights};
use sysgrad_testbench::Simulator;

/// `sysgrad train --engine`: where the products of a training run go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// Clock the register-level array.
    #[value(alias = "array")]
    Cycle,
    /// The same bits and counters per tile, without clocking the array
    /// (emulator/tests/fast_vs_cycle.rs checks the equality).
    Fast,
    /// Compile the network to the accelerator's command stream and run it
    /// on the emulated accelerator, checking every step's weights against
    /// the fast array.
    Accel,
    /// Run `--steps` steps of that on the Verilator build of `sa_accel`
    /// through its AXI host interface.
    Rtl,
}

impl Engine {
    /// The array engine the products run on (on the accelerator, the fast
    /// array every step is checked against).
    pub fn array(self) -> EngineKind {
        match self {
            Engine::Cycle => EngineKind::Cycle,
            Engine::Fast | Engine::Accel | Engine::Rtl => EngineKind::Fast,
        }
    }

    /// Whether the products go through the accelerator's command stream.
    pub fn accelerator(self) -> bool {
        matches!(self, Engine::Accel | Engine::Rtl)
    }
}

/// `sysgrad pipeline --engine`: how task costs are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrayEngine {
    /// The fast exact mode's ledger.
    Fast,
    /// Clocking the register-level arrays (same counts, slow).
    Cycle,
}

impl From<ArrayEngine> for EngineKind {
    fn from(e: ArrayEngine) -> EngineKind {
        match e {
            ArrayEngine::Fast => EngineKind::Fast,
            ArrayEngine::Cycle => EngineKind::Cycle,
        }
    }
}

impl From<EngineKind> for ArrayEngine {
    fn from(e: EngineKind) -> ArrayEngine {
        match e {
            EngineKind::Fast => ArrayEngine::Fast,
            EngineKind::Cycle => ArrayEngine::Cycle,
        }
    }
}

/// `sysgrad cosim --sim`: the RTL simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sim {
    /// Verilator, with every register compared too.
    Verilator,
    /// Icarus Verilog, the ports compared.
    Icarus,
}

impl From<Sim> for Simulator {
    fn from(s: Sim) -> Simulator {
        match s {
            Sim::Verilator => Simulator::Verilator,
            Sim::Icarus => Simulator::Icarus,
        }
    }
}

impl From<Simulator> for Sim {
    fn from(s: Simulator) -> Sim {
        match s {
            Simulator::Verilator => Sim::Verilator,
            Simulator::Icarus => Sim::Icarus,
        }
    }
}

/// `sysgrad pipeline --schedule`: a schedule, or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleChoice {
    #[value(name = "gpipe")]
    GPipe,
    #[value(name = "1f1b")]
    OneFOneB,
    #[value(name = "1f1b-flush")]
    OneFOneBFlush,
    #[value(name = "layerpipe")]
    LayerPipe,
    #[value(name = "layerpipe2")]
    LayerPipe2,
    #[value(name = "zb")]
    ZeroBubble,
    #[value(name = "zb-il")]
    ZeroBubbleIl,
    #[value(name = "spikepipe")]
    SpikePipe,
    #[value(name = "spikepipe-sync")]
    SpikePipeSync,
    /// Every schedule, in the order above.
    All,
}

impl ScheduleChoice {
    /// The schedules this value names.
    pub fn schedules(self) -> Vec<Schedule> {
        match self {
            ScheduleChoice::GPipe => vec![Schedule::GPipe],
            ScheduleChoice::OneFOneB => vec![Schedule::OneFOneB],
            ScheduleChoice::OneFOneBFlush => vec![Schedule::OneFOneBFlush],
            ScheduleChoice::LayerPipe => vec![Schedule::LayerPipe],
            ScheduleChoice::LayerPipe2 => vec![Schedule::LayerPipe2],
            ScheduleChoice::ZeroBubble => vec![Schedule::ZeroBubble],
            ScheduleChoice::ZeroBubbleIl => vec![Schedule::ZeroBubbleIl],
            ScheduleChoice::SpikePipe => vec![Schedule::SpikePipe],
            ScheduleChoice::SpikePipeSync => vec![Schedule::SpikePipeSync],
            ScheduleChoice::All => Schedule::ALL.to_vec(),
        }
    }
}

impl From<Schedule> for ScheduleChoice {
    fn from(s: Schedule) -> ScheduleChoice {
        match s {
            Schedule::GPipe => ScheduleChoice::GPipe,
            Schedule::OneFOneB => ScheduleChoice::OneFOneB,
            Schedule::OneFOneBFlush => ScheduleChoice::OneFOneBFlush,
            Schedule::LayerPipe => ScheduleChoice::LayerPipe,
            Schedule::LayerPipe2 => ScheduleChoice::LayerPipe2,
            Schedule::ZeroBubble => ScheduleChoice::ZeroBubble,
            Schedule::ZeroBubbleIl => ScheduleChoice::ZeroBubbleIl,
            Schedule::SpikePipe => ScheduleChoice::SpikePipe,
            Schedule::SpikePipeSync => ScheduleChoice::SpikePipeSync,
        }
    }
}

/// `sysgrad pipeline --weights`: the weights of an asynchronous
/// schedule's backward pass (synchronous ones use the mini-batch's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightsChoice {
    /// The weights its forward pass used (weight stashing).
    Stash,
    /// Whatever the stage holds when the backward runs.
    Latest,
    /// LayerPipe2's reconstruction from a moving average of the updates.
    Ema,
}

impl From<WeightsChoice> for Weights {
    fn from(w: WeightsChoice) -> Weights {
        match w {
            WeightsChoice::Stash => Weights::Stash,
            WeightsChoice::Latest => Weights::Latest,
            WeightsChoice::Ema => Weights::Ema,
        }
    }
}

/// `sysgrad train --dw-sink`: where dW goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DwSinkChoice {
    /// Update W in place (learning rate 2^-8).
    Update,
    /// Shift dW out of the array.
    Drain,
}

impl From<DwSinkChoice> for DwSink {
    fn from(d: DwSinkChoice) -> DwSink {
        match d {
            DwSinkChoice::Update => DwSink::Update { lr_shift: 8 },
            DwSinkChoice::Drain => DwSink::Drain,
        }
    }
}

/// Numbers of arrays: one value of `sysgrad pipeline --arrays`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayCounts(pub Vec<usize>);

/// `2`, or a range `2-9`: numbers of arrays (`sysgrad pipeline --arrays`).
pub fn array_counts(s: &str) -> Result<ArrayCounts, String> {
    range_or_number(s).map(ArrayCounts)
}

fn range_or_number(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("{s:?}: expected a number, a list (2,4,8) or a range (2-9)");
    let number = |v: &str| v.trim().parse::<usize>().map_err(|_| bad());
    match s.split_once('-') {
        Some((lo, hi)) => {
            let (lo, hi) = (number(lo)?, number(hi)?);
            if lo > hi {
                return Err(bad());
            }
            // Each value is a run: a range wider than a system can be
            // (`1-18446744073709551615` asked for 2^64 runs) is refused
            // before it is listed.
            let max = sysgrad_pipeline::system::MAX_ARRAYS;
            if hi > max {
                return Err(format!("{s:?}: a range ends at most at {max} arrays"));
            }
            Ok((lo..=hi).collect())
        }
        None => Ok(vec![number(s)?]),
    }
}

/// `balanced`, or compute layers per array `2,3,1` (`--partition`).
pub fn partition(s: &str) -> Result<PartitionChoice, String> {
    if s == "balanced" {
        return Ok(PartitionChoice::Balanced);
    }
    s.split(',')
        .map(|v| v.trim().parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .map(PartitionChoice::Counts)
        .map_err(|_| format!("{s:?}: expected `balanced` or layers per array, e.g. 2,3,1"))
}

/// `n` positive whole numbers separated by `x`.
fn dims(s: &str, n: usize, what: &str) -> Result<Vec<usize>, String> {
    let v: Vec<usize> = s
        .split('x')
        .map(|d| d.trim().parse::<usize>().ok().filter(|d| *d > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            format!("{what} `{s}`: expected {n} positive whole numbers separated by `x`")
        })?;
    if v.len() != n {
        return Err(format!(
            "{what} `{s}`: expected {n} numbers separated by `x`"
        ));
    }
    Ok(v)
}

/// `ROWSxCOLS` (`sysgrad sweep --sizes`).
pub fn array_size(s: &str) -> Result<(usize, usize), String> {
    dims(s, 2, "array size").map(|d| (d[0], d[1]))
}

/// `NAME:MxKxN` (`sysgrad sweep --layers`).
pub fn layer(item: &str) -> Result<Layer, String> {
    let (name, shape) = item
        .split_once(':')
        .ok_or_else(|| format!("layer `{item}`: expected NAME:MxKxN"))?;
    let d = dims(shape, 3, "layer shape")?;
    Ok(Layer {
        name: name.trim().to_string(),
        m: d[0],
        k: d[1],
        n: d[2],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name of a flag value, as clap takes it.
    fn name<T: ValueEnum>(v: T) -> String {
        v.to_possible_value().unwrap().get_name().to_string()
    }

    #[test]
    fn flag_values_are_named_as_the_libraries_name_them() {
        for s in Schedule::ALL {
            assert_eq!(name(ScheduleChoice::from(s)), s.name());
            assert_eq!(ScheduleChoice::from(s).schedules(), [s]);
        }
        assert_eq!(ScheduleChoice::All.schedules(), Schedule::ALL);
        for e in [EngineKind::Cycle, EngineKind::Fast] {
            assert_eq!(name(ArrayEngine::from(e)), e.name());
            assert_eq!(EngineKind::from(ArrayEngine::from(e)), e);
        }
        for w in WeightsChoice::value_variants() {
            assert_eq!(name(*w), Weights::from(*w).name());
        }
        for s in [Simulator::Verilator, Simulator::Icarus] {
            assert_eq!(Simulator::from(Sim::from(s)), s);
        }
        assert_eq!(Engine::from_str("array", false), Ok(Engine::Cycle));
    }

    #[test]
    fn lists_and_shapes_parse_or_say_why_not() {
        assert_eq!(array_counts("2-4").unwrap().0, [2, 3, 4]);
        assert_eq!(array_counts("8").unwrap().0, [8]);
        assert!(array_counts("9-2").unwrap_err().contains("a range (2-9)"));
        assert_eq!(
            partition("2,3").unwrap(),
            PartitionChoice::Counts(vec![2, 3])
        );
        assert!(partition("2,x").unwrap_err().contains("balanced"));
        let l = layer("b:4x5x6").unwrap();
        assert_eq!((l.m, l.k, l.n), (4, 5, 6));
        assert!(layer("a:1x2").unwrap_err().contains("expected 3"));
        assert!(layer("a:0x2x3").unwrap_err().contains("positive"));
        assert!(layer("1x2x3").unwrap_err().contains("NAME:MxKxN"));
        assert_eq!(array_size("4x8").unwrap(), (4, 8));
        assert!(array_size("4x0").unwrap_err().contains("positive"));
    }
}
