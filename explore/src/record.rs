//! A sweep row as data that survives a round trip through JSON: what a
//! shard of a sweep (`sysgrad sweep --shard I/N`) stores, so that `sysgrad
//! merge` can write the CSV and SVG from the rows of every shard with the
//! same code as an unsharded sweep. Every counter is an integer and the
//! configuration round-trips through its own validated serde form, so a
//! row read back is equal to the row written.

use crate::{Layer, SweepRow};
use serde::{Deserialize, Serialize};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::{Counters, Phase, Stats};

/// One counter set, in [`Counters`]' declaration order.
type CounterArray = [u64; 11];

/// A [`SweepRow`] as plain data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowRecord {
    pub cfg: ArrayConfig,
    pub layer: String,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// Every phase's counters, in [`Phase::ALL`] order.
    pub phases: Vec<CounterArray>,
    pub saturated: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
#[error("a stored sweep row has {0} phases, not {len}", len = Phase::ALL.len())]
pub struct RecordError(usize);

fn to_array(c: &Counters) -> CounterArray {
    [
        c.cycles,
        c.macs,
        c.w_reads,
        c.x_reads,
        c.dy_reads,
        c.w_writes,
        c.y_writes,
        c.dx_writes,
        c.dw_writes,
        c.acc_reads,
        c.acc_writes,
    ]
}

fn from_array(a: &CounterArray) -> Counters {
    let [cycles, macs, w_reads, x_reads, dy_reads, w_writes, y_writes, dx_writes, dw_writes, acc_reads, acc_writes] =
        *a;
    Counters {
        cycles,
        macs,
        w_reads,
        x_reads,
        dy_reads,
        w_writes,
        y_writes,
        dx_writes,
        dw_writes,
        acc_reads,
        acc_writes,
    }
}

impl From<&SweepRow> for RowRecord {
    fn from(row: &SweepRow) -> RowRecord {
        RowRecord {
            cfg: row.cfg,
            layer: row.layer.name.clone(),
            m: row.layer.m,
            k: row.layer.k,
            n: row.layer.n,
            phases: Phase::ALL
                .iter()
                .map(|p| to_array(row.stats.phase(*p)))
                .collect(),
            saturated: row.saturated,
        }
    }
}

impl TryFrom<RowRecord> for SweepRow {
    type Error = RecordError;

    fn try_from(r: RowRecord) -> Result<SweepRow, RecordError> {
        if r.phases.len() != Phase::ALL.len() {
            return Err(RecordError(r.phases.len()));
        }
        let mut stats = Stats::default();
        for (p, a) in Phase::ALL.iter().zip(&r.phases) {
            *stats.phase_mut(*p) = from_array(a);
        }
        Ok(SweepRow {
            cfg: r.cfg,
            layer: Layer {
                name: r.layer,
                m: r.m,
                k: r.k,
                n: r.n,
            },
            stats,
            saturated: r.saturated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{sweep, Grid, SweepData};
    use sysgrad_config::Backward;
    use sysgrad_emulator::gemm::DwSink;

    /// A row written to JSON and read back is the row, every counter of
    /// every phase included (the rows come from a real sweep, so the
    /// counters are not zero).
    #[test]
    fn a_row_survives_json() {
        let grid = Grid {
            base: ArrayConfig::default_16x16(),
            sizes: vec![(4, 4), (8, 4)],
            in_bits: vec![8],
            schedules: vec![Backward::Interleaved, Backward::Sequential],
            sink: DwSink::Update { lr_shift: 8 },
            data: SweepData::Random { seed: 3 },
        };
        let layers = [Layer {
            name: "a,\"b\"".into(),
            m: 5,
            k: 7,
            n: 3,
        }];
        for row in sweep(&layers, &grid).unwrap() {
            let text = serde_json::to_string(&RowRecord::from(&row)).unwrap();
            let back: RowRecord = serde_json::from_str(&text).unwrap();
            assert_eq!(SweepRow::try_from(back).unwrap(), row);
            assert!(row.stats.total().macs > 0);
        }
    }
}
