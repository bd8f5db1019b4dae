//! Which compute layers run on which array: contiguous groups, balanced
//! from the layers' counted cycles on each stage's array, or as given.

use crate::error::{PipelineError, Result};
use serde::Serialize;
use std::ops::Range;

/// Stage s runs compute layers `stages[s]` (contiguous, in order, none empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Partition {
    pub stages: Vec<Range<usize>>,
}

impl Partition {
    /// From the number of layers of each stage (`--partition 2,3,1`).
    pub fn from_counts(counts: &[usize], layers: usize) -> Result<Partition> {
        if let Some(i) = counts.iter().position(|&c| c == 0) {
            return Err(PipelineError::out_of_range(
                format!("partition[{i}]"),
                0,
                "1 or more layers per stage",
            ));
        }
        let total: usize = counts.iter().sum();
        if total != layers {
            return Err(PipelineError::out_of_range(
                "partition (sum of layers per stage)",
                total,
                format!("exactly the {layers} compute layers of the network"),
            ));
        }
        let mut start = 0;
        let stages = counts
            .iter()
            .map(|&c| {
                start += c;
                start - c..start
            })
            .collect();
        Ok(Partition { stages })
    }

    pub fn counts(&self) -> Vec<usize> {
        self.stages.iter().map(|r| r.len()).collect()
    }

    /// The stage that runs compute layer `layer`.
    pub fn stage_of(&self, layer: usize) -> usize {
        self.stages
            .iter()
            .position(|r| r.contains(&layer))
            .expect("every layer is in a stage")
    }
}

/// The partition of `cost[stage][layer]` (the cycles layer `layer` takes
/// on stage `stage`'s array) into `cost.len()` contiguous stages that makes
/// the slowest stage as fast as possible (ties: the earliest cut points).
/// Dynamic programming over (stages, layers), exact.
pub fn balanced(cost: &[Vec<u64>]) -> Result<Partition> {
    let p = cost.len();
    let l = cost.first().map_or(0, |c| c.len());
    if p == 0 || p > l {
        return Err(PipelineError::out_of_range(
            "arrays",
            p,
            format!("1..={l}, at most one stage per compute layer"),
        ));
    }
    // prefix[s][i] = cycles of layers 0..i on array s.
    let prefix: Vec<Vec<u64>> = cost
        .iter()
        .map(|c| {
            std::iter::once(0)
                .chain(c.iter().scan(0, |a, &x| {
                    *a += x;
                    Some(*a)
                }))
                .collect()
        })
        .collect();
    // best[s][i]: the slowest stage when stages 0..=s run layers 0..i.
    let mut best = vec![vec![u64::MAX; l + 1]; p];
    let mut cut = vec![vec![0usize; l + 1]; p];
    for i in 1..=l {
        best[0][i] = prefix[0][i];
    }
    for s in 1..p {
        for i in s + 1..=l {
            for j in s..i {
                let here = prefix[s][i] - prefix[s][j];
                let v = best[s - 1][j].max(here);
                if v < best[s][i] {
                    best[s][i] = v;
                    cut[s][i] = j;
                }
            }
        }
    }
    let mut ends = vec![l];
    let mut i = l;
    for s in (1..p).rev() {
        i = cut[s][i];
        ends.push(i);
    }
    ends.push(0);
    ends.reverse();
    let stages = ends.windows(2).map(|w| w[0]..w[1]).collect();
    Ok(Partition { stages })
}
