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
use sysgrad_emulator::gemm::DwSink;

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

/// Each pass of a layer through the off-chip model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerOffChip {
    pub forward: OffChipRun,
    pub backward_interleaved: OffChipRun,
    pub backward_sequential: OffChipRun,
}

#[derive(Debug, Clone)]
pub struct LayerRun {
    pub layer: TopoLayer,
    /// The product with the batch folded into N.
    pub gemm: Gemm,
    pub cost: LayerCost,
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

fn layer_offchip(cfg: &ArrayConfig, sc: &ScaleConfig, g: Gemm, c: &LayerCost) -> LayerOffChip {
    let run = |pass, s: &sysgrad_emulator::Stats| {
        offchip::run(cfg, g, pass, &sc.memory, s.total().cycles)
    };
    LayerOffChip {
        forward: run(offchip::Pass::Forward, &c.forward),
        backward_interleaved: run(offchip::Pass::Backward, &c.backward_interleaved),
        backward_sequential: run(offchip::Pass::Backward, &c.backward_sequential),
    }
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
    let cfg = array_for(sc)?;
    if batch == 0 {
        return Err(WorkloadError::out_of_range("batch", 0, "1 or more"));
    }
    let layers = topo
        .layers
        .iter()
        .map(|l| {
            let gemm = l.batched(batch);
            let cost = count::layer_cost(&cfg, gemm, sink, how)?;
            Ok(LayerRun {
                layer: l.clone(),
                gemm,
                offchip: layer_offchip(&cfg, sc, gemm, &cost),
                cost,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(TopologyRun {
        topology: topo.clone(),
        config: sc.clone(),
        cfg,
        batch,
        sink,
        energy: EnergyModel::new(table, &cfg, buffer_sizes(sc)),
        layers,
    })
}
