//! SCALE-Sim inputs (topology CSVs and `.cfg` files) run on the sysgrad
//! array: every layer's forward pass and its training pass (forward + dX +
//! dW), with the backward interleaved and sequential, written as
//! SCALE-Sim-style reports.

pub mod config;
pub mod count;
pub mod iso_area;
pub mod offchip;
pub mod report;
pub mod topology;

pub use config::{load_config, parse_config, ScaleConfig};
pub use count::{Exactness, LayerCost};
pub use offchip::OffChipRun;
pub use topology::{load_topology, parse_topology, Gemm, TopoForm, TopoLayer, Topology};

use crate::energy::{BufferSizes, EnergyModel, EnergyTable};
use crate::error::{Result, WorkloadError};
use sysgrad_config::{ArrayConfig, Backward, NumberFormat};
use sysgrad_emulator::count::Overflow;
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::{DriveError, Stats};

/// The sysgrad array a SCALE-Sim config describes. Counters do not depend
/// on the number format, so the default Q7.8 / 40-bit one is used.
pub fn array_for(sc: &ScaleConfig) -> Result<ArrayConfig> {
    let cfg = ArrayConfig::new(
        sc.array_height,
        sc.array_width,
        Backward::Interleaved,
        NumberFormat {
            in_bits: 16,
            acc_bits: 40,
            frac_bits: 8,
        },
    );
    if let Err(sysgrad_config::ConfigError::OutOfRange {
        field,
        value,
        allowed,
    }) = cfg
    {
        let name = if field == "array.rows" {
            "ArrayHeight"
        } else {
            "ArrayWidth"
        };
        return Err(WorkloadError::OutOfRange {
            field: format!("[architecture_presets] {name} ({field})"),
            value,
            allowed: format!("{allowed}, the sizes the sysgrad array supports"),
        });
    }
    Ok(cfg.expect("only the array size can be out of range here"))
}

/// Each pass of a layer through the off-chip model, and the training
/// passes (forward, then backward) each schedule runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerOffChip {
    pub forward: OffChipRun,
    pub backward_interleaved: OffChipRun,
    pub backward_sequential: OffChipRun,
    pub training_interleaved: OffChipRun,
    pub training_sequential: OffChipRun,
}

#[derive(Debug, Clone)]
pub struct LayerRun {
    pub layer: TopoLayer,
    /// The product with the batch folded into N.
    pub gemm: Gemm,
    pub cost: LayerCost,
    /// Forward plus each backward, counters checked to fit `u64`.
    pub training_interleaved: Stats,
    pub training_sequential: Stats,
    pub offchip: LayerOffChip,
}

/// The on-chip buffer sizes of a config, for the energy model.
pub fn buffer_sizes(sc: &ScaleConfig) -> BufferSizes {
    let m = &sc.memory;
    BufferSizes {
        weights_kb: m.filter_sram_kb as f64,
        activations_kb: m.ifmap_sram_kb as f64,
        gradients_kb: m.ofmap_sram_kb as f64,
        accumulators_kb: m.ofmap_sram_kb as f64,
    }
}

fn layer_offchip(
    cfg: &ArrayConfig,
    sc: &ScaleConfig,
    g: Gemm,
    c: &LayerCost,
) -> std::result::Result<LayerOffChip, Overflow> {
    let run = |pass, s: &Stats| offchip::run(cfg, g, pass, &sc.memory, s.total().cycles);
    let forward = run(offchip::Pass::Forward, &c.forward)?;
    let backward_interleaved = run(offchip::Pass::Backward, &c.backward_interleaved)?;
    let backward_sequential = run(offchip::Pass::Backward, &c.backward_sequential)?;
    Ok(LayerOffChip {
        forward,
        backward_interleaved,
        backward_sequential,
        training_interleaved: forward.then(&backward_interleaved)?,
        training_sequential: forward.then(&backward_sequential)?,
    })
}

/// `a + b`, checked.
fn plus(a: &Stats, b: &Stats) -> std::result::Result<Stats, Overflow> {
    let mut s = a.clone();
    s.checked_add(b)?;
    Ok(s)
}

/// Counts one layer of a topology: every figure checked, an overflow
/// named with the layer, its sizes and the batch.
fn layer_run(
    cfg: &ArrayConfig,
    sc: &ScaleConfig,
    l: &TopoLayer,
    batch: usize,
    sink: DwSink,
    how: Exactness,
) -> Result<LayerRun> {
    let g = l.gemm;
    let input = || {
        format!(
            "layer {} (M {} x K {} x N {} per sample) at batch {batch}",
            l.name, g.m, g.k, g.n
        )
    };
    let named = |source: Overflow| WorkloadError::Overflow {
        input: input(),
        overflow: source,
    };
    let gemm = l.batched(batch).map_err(named)?;
    let cost = match count::layer_cost(cfg, gemm, sink, how) {
        Err(WorkloadError::Array {
            source: DriveError::Overflow(o),
            ..
        }) => return Err(named(o)),
        c => c?,
    };
    let training = |b: &Stats, what: &str| {
        plus(&cost.forward, b).map_err(|o| Overflow::new(format!("{} ({what} training)", o.what)))
    };
    Ok(LayerRun {
        layer: l.clone(),
        gemm,
        training_interleaved: training(&cost.backward_interleaved, "interleaved").map_err(named)?,
        training_sequential: training(&cost.backward_sequential, "sequential").map_err(named)?,
        offchip: layer_offchip(cfg, sc, gemm, &cost).map_err(named)?,
        cost,
    })
}

#[derive(Debug, Clone)]
pub struct TopologyRun {
    pub topology: Topology,
    pub config: ScaleConfig,
    pub cfg: ArrayConfig,
    pub batch: usize,
    pub sink: DwSink,
    pub energy: EnergyModel,
    pub layers: Vec<LayerRun>,
}

/// Counts every layer of `topo` on the array of `sc`, with the default
/// energy table.
pub fn run_topology(
    topo: &Topology,
    sc: &ScaleConfig,
    batch: usize,
    sink: DwSink,
    how: Exactness,
) -> Result<TopologyRun> {
    run_topology_with(topo, sc, batch, sink, how, EnergyTable::default())
}

/// [`run_topology`] with an energy table of one's own.
pub fn run_topology_with(
    topo: &Topology,
    sc: &ScaleConfig,
    batch: usize,
    sink: DwSink,
    how: Exactness,
    table: EnergyTable,
) -> Result<TopologyRun> {
    run_topology_on(topo, sc, array_for(sc)?, batch, sink, how, table)
}

/// [`run_topology_with`] on the array `cfg` (of `sc`'s size, in a number
/// format of one's own: the energy of its MACs follows the format).
pub fn run_topology_on(
    topo: &Topology,
    sc: &ScaleConfig,
    cfg: ArrayConfig,
    batch: usize,
    sink: DwSink,
    how: Exactness,
    table: EnergyTable,
) -> Result<TopologyRun> {
    if batch == 0 {
        return Err(WorkloadError::out_of_range("batch", 0, "1 or more"));
    }
    let layers = topo
        .layers
        .iter()
        .map(|l| layer_run(&cfg, sc, l, batch, sink, how))
        .collect::<Result<Vec<_>>>()?;
    let run = TopologyRun {
        topology: topo.clone(),
        config: sc.clone(),
        cfg,
        batch,
        sink,
        energy: EnergyModel::new(table, &cfg, buffer_sizes(sc)),
        layers,
    };
    // The reports sum figures over the layers: check those sums here, so
    // that a run that counts is a run that reports.
    report::reduction(report::layer_reports(&run).iter()).map_err(|source| {
        WorkloadError::Overflow {
            input: format!("topology {} at batch {batch}, all layers", topo.name),
            overflow: source,
        }
    })?;
    Ok(run)
}
