//! The schedules and what each one decides: the order of the tasks on
//! every array (as priorities and admission rules of a list scheduler),
//! whether the backward pass is one task or a dX and a dW task, and which
//! weights a micro-batch's backward pass uses.

use crate::error::{PipelineError, Result};
use serde::{Deserialize, Serialize};
use sysgrad_config::Backward;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// GPipe: all forwards of the mini-batch's micro-batches, then all
    /// backwards, then a flush (one optimizer step per mini-batch).
    GPipe,
    /// PipeDream 1F1B: at most p - s micro-batches in flight on stage s,
    /// one forward and one backward in turn, an update per micro-batch,
    /// no flush; weight stashing keeps the weights each forward used.
    OneFOneB,
    /// 1F1B with a flush (Megatron-LM's synchronous order): on stage s,
    /// p - 1 - s warm-up forwards, then one forward and one backward in
    /// turn, then the cool-down backwards; one weight step per mini-batch.
    OneFOneBFlush,
    /// LayerPipe: 1F1B's order with dX and dW as separate tasks; dX goes
    /// upstream as soon as it is computed, dW follows.
    LayerPipe,
    /// LayerPipe2: the retimed pipeline, a gradient delay of exactly
    /// 2 x (stages downstream) micro-batches on every stage.
    LayerPipe2,
    /// Zero bubble (ZB-H1, Qi et al. 2024): 1F1B with a flush whose dW
    /// tasks are deferred into the bubbles (see [`zb_h1_order`]); on
    /// interleaved arrays (nothing to split) 1F1B with a flush.
    ZeroBubble,
    /// Zero bubble on interleaved arrays: ZB-H1's order with the fused
    /// BWD_IL backward in the steady state, the backward split (a BWD_DX
    /// task now, a BWD_DW task later) only for the micro-batches whose dW
    /// is deferred into the warm-up's and cool-down's bubbles (see
    /// [`zb_il_order`]).
    ZeroBubbleIl,
    /// SpikePipe as its paper trains (Sanjeet, Sahoo and Parhi 2024,
    /// arXiv 2406.06879): inter-layer pipelining of a spiking network
    /// trained by BPTT with delayed gradients. Units are (micro-batch,
    /// time chunk), the LIF state carried from chunk to chunk and the
    /// backward running the chunks last to first; one weight step per
    /// micro-batch, no flush; stage s's gradient is applied
    /// [`retimed_delay`] = 2 (p - 1 - s) updates late (the retimed
    /// pipeline of the same group's LayerPipe), weights stashed.
    SpikePipe,
    /// The synchronous variant: GPipe over (micro-batch, time chunk)
    /// units, one weight step per mini-batch after a flush (no delayed
    /// gradient). Kept as a reference beside [`Schedule::SpikePipe`].
    SpikePipeSync,
}

impl Schedule {
    pub const ALL: [Schedule; 9] = [
        Schedule::GPipe,
        Schedule::OneFOneB,
        Schedule::OneFOneBFlush,
        Schedule::LayerPipe,
        Schedule::LayerPipe2,
        Schedule::ZeroBubble,
        Schedule::ZeroBubbleIl,
        Schedule::SpikePipe,
        Schedule::SpikePipeSync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Schedule::GPipe => "gpipe",
            Schedule::OneFOneB => "1f1b",
            Schedule::OneFOneBFlush => "1f1b-flush",
            Schedule::LayerPipe => "layerpipe",
            Schedule::LayerPipe2 => "layerpipe2",
            Schedule::ZeroBubble => "zb",
            Schedule::ZeroBubbleIl => "zb-il",
            Schedule::SpikePipe => "spikepipe",
            Schedule::SpikePipeSync => "spikepipe-sync",
        }
    }

    /// Synchronous schedules step the weights once per mini-batch, after a
    /// flush; the others once per micro-batch, with delayed gradients.
    pub fn synchronous(self) -> bool {
        matches!(
            self,
            Schedule::GPipe
                | Schedule::OneFOneBFlush
                | Schedule::ZeroBubble
                | Schedule::ZeroBubbleIl
                | Schedule::SpikePipeSync
        )
    }

    /// The schedules of a spiking network's time chunks (they need more
    /// than one time step).
    pub fn spiking(self) -> bool {
        matches!(self, Schedule::SpikePipe | Schedule::SpikePipeSync)
    }

    /// Whether the schedule runs dX and dW as separate tasks when the
    /// arrays run the sequential backward (an interleaved pass computes
    /// both at once, so there is nothing to split).
    pub fn splits_backward(self) -> bool {
        matches!(
            self,
            Schedule::LayerPipe | Schedule::LayerPipe2 | Schedule::ZeroBubble
        )
    }
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Schedule::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!("unknown schedule {s:?} (expected gpipe, 1f1b, 1f1b-flush, layerpipe, layerpipe2, zb, zb-il, spikepipe or spikepipe-sync)")
            })
    }
}

/// Which weights the backward pass of a micro-batch uses (asynchronous
/// schedules; synchronous ones always use the mini-batch's weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Weights {
    /// The weights of the mini-batch (synchronous schedules).
    Current,
    /// The weights its forward pass used, kept until its backward (weight stashing).
    Stash,
    /// Whatever the stage holds when the backward runs (no stash).
    Latest,
    /// LayerPipe2's reconstruction: the latest weights minus the delay
    /// times a moving average of the recent updates.
    Ema,
}

impl Weights {
    pub fn name(self) -> &'static str {
        match self {
            Weights::Current => "current",
            Weights::Stash => "stash",
            Weights::Latest => "latest",
            Weights::Ema => "ema",
        }
    }
}

impl std::str::FromStr for Weights {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        [Weights::Stash, Weights::Latest, Weights::Ema]
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown weights {s:?} (expected stash, latest or ema)"))
    }
}

/// A task's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Kind {
    /// Forward through the stage's layers.
    F,
    /// dX through the stage's layers (split backward).
    B,
    /// dW of the stage's layers (split backward).
    W,
    /// The whole backward (dX and dW) in one task.
    BW,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::F => "F",
            Kind::B => "dX",
            Kind::W => "dW",
            Kind::BW => "dX+dW",
        }
    }
}

/// A schedule with its options.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Plan {
    pub schedule: Schedule,
    /// How the arrays run a backward pass: interleaved (one BWD_IL pass)
    /// or sequential (BWD_DX then BWD_DW passes).
    pub backward: Backward,
    /// Micro-batches per mini-batch (M).
    pub micro_batches: usize,
    /// Time chunks per micro-batch (SpikePipe; 1 otherwise).
    pub chunks: usize,
    pub weights: Weights,
    /// LayerPipe: run each dW as soon as its dX is done, before any other
    /// task, and send the dX upstream with it: 1F1B's timeline with split
    /// tasks. The setup keeps whichever of this and the greedy order is
    /// faster.
    #[serde(skip)]
    pub eager_dw: bool,
}

impl Plan {
    /// A plan with the schedule's default weights (stashing for the
    /// asynchronous schedules), checked.
    pub fn new(
        schedule: Schedule,
        backward: Backward,
        micro_batches: usize,
        chunks: usize,
        weights: Option<Weights>,
    ) -> Result<Plan> {
        if micro_batches == 0 {
            return Err(PipelineError::out_of_range("microbatches", 0, "1 or more"));
        }
        if chunks == 0 || (chunks > 1 && !schedule.spiking()) {
            return Err(PipelineError::out_of_range(
                "time chunks",
                chunks,
                "1 (time chunks above 1 are SpikePipe's)",
            ));
        }
        let weights = match (schedule.synchronous(), weights) {
            (true, None) => Weights::Current,
            (true, Some(w)) => {
                return Err(PipelineError::out_of_range(
                    "weights",
                    w.name(),
                    format!(
                        "none for {}: a synchronous schedule uses the mini-batch's weights",
                        schedule.name()
                    ),
                ))
            }
            (false, None) => Weights::Stash,
            (false, Some(Weights::Current)) => {
                return Err(PipelineError::out_of_range(
                    "weights",
                    "current",
                    "stash, latest or ema",
                ))
            }
            (false, Some(w)) => w,
        };
        Ok(Plan {
            schedule,
            backward,
            micro_batches,
            chunks,
            weights,
            eager_dw: false,
        })
    }

    /// dX and dW as separate tasks.
    pub fn split(&self) -> bool {
        self.schedule.splits_backward() && self.backward == Backward::Sequential
    }

    /// Whether a task of `kind` completes its unit's gradient (dW of a
    /// split backward, or a fused backward; `zb-il` has both).
    pub fn ends_unit(&self, kind: Kind) -> bool {
        match self.schedule {
            Schedule::ZeroBubbleIl => matches!(kind, Kind::W | Kind::BW),
            _ => kind == self.last_kind(),
        }
    }

    /// The kind of the task after which a unit's gradient is complete
    /// (and a synchronous stage may flush); `zb-il`: see [`Plan::ends_unit`].
    pub fn last_kind(&self) -> Kind {
        if self.split() {
            Kind::W
        } else {
            Kind::BW
        }
    }

    /// Micro-batches that may be in flight on stage `s` of `p` (forward
    /// started, backward not finished), if the schedule bounds them.
    pub fn in_flight_limit(&self, s: usize, p: usize) -> Option<usize> {
        let downstream = p - 1 - s;
        match self.schedule {
            Schedule::GPipe | Schedule::SpikePipeSync => None,
            Schedule::OneFOneB | Schedule::LayerPipe | Schedule::OneFOneBFlush => {
                Some(downstream + 1)
            }
            Schedule::LayerPipe2 | Schedule::SpikePipe => Some(2 * downstream + 1),
            // ZB-H1: p - s before their dX as in 1F1B, plus up to s whose
            // dW is deferred: at most p on every stage, 1F1B's peak (its
            // stage 0's); with nothing to defer, 1F1B with a flush.
            Schedule::ZeroBubble if self.split() => Some(p),
            Schedule::ZeroBubble => Some(downstream + 1),
            Schedule::ZeroBubbleIl => Some(p),
        }
    }

    /// The schedules that fix every stage's task order in advance (the
    /// simulator then only times them): the order of stage `s` of `p` for
    /// one mini-batch of `m` micro-batches, as (kind, micro-batch).
    pub fn order(&self, s: usize, p: usize, m: usize) -> Option<Vec<(Kind, usize)>> {
        match self.schedule {
            Schedule::ZeroBubble if self.split() => Some(zb_h1_order(s, p, m)),
            Schedule::ZeroBubble | Schedule::OneFOneBFlush => Some(one_f_one_b_order(s, p, m)),
            Schedule::ZeroBubbleIl => Some(zb_il_order(s, p, m)),
            _ => None,
        }
    }

    /// LayerPipe2's and SpikePipe's retiming: the backward of micro-batch
    /// j on stage s runs only once the forward of j + 2 x (stages
    /// downstream) has, so every gradient is applied exactly that many
    /// updates late ([`retimed_delay`]).
    pub fn lag(&self, s: usize, p: usize) -> Option<usize> {
        matches!(self.schedule, Schedule::LayerPipe2 | Schedule::SpikePipe)
            .then(|| retimed_delay(s, p))
    }

    /// The order in which a free array looks at its ready tasks.
    pub fn priority(&self) -> &'static [Kind] {
        match (self.schedule, self.split()) {
            (Schedule::GPipe | Schedule::SpikePipeSync, _) => &[Kind::F, Kind::BW],
            (_, true) if self.eager_dw => &[Kind::W, Kind::B, Kind::F],
            (_, true) => &[Kind::B, Kind::W, Kind::F],
            (_, false) => &[Kind::BW, Kind::F],
        }
    }

    /// GPipe-like schedules run the backwards last micro-batch first (the
    /// last stage has just finished its forward).
    pub fn backward_newest_first(&self) -> bool {
        matches!(self.schedule, Schedule::GPipe | Schedule::SpikePipeSync)
    }

    pub fn label(&self) -> String {
        let mut s = format!(
            "{} {} M={}",
            self.schedule.name(),
            self.backward.name(),
            self.micro_batches
        );
        if self.chunks > 1 {
            s += &format!(" chunks={}", self.chunks);
        }
        if !self.schedule.synchronous() {
            s += &format!(" {}", self.weights.name());
        }
        s
    }
}

/// The gradient delay of stage `s` of `p` in a retimed pipeline
/// (LayerPipe2, SpikePipe): 2 updates per stage downstream, the forward
/// and the backward of each later stage (Unnikrishnan and Parhi,
/// LayerPipe2, arXiv 2512.08160: Delay(l) = 2 S(l), S(l) the stages
/// downstream of layer l).
pub fn retimed_delay(s: usize, p: usize) -> usize {
    2 * (p - 1 - s)
}

/// 1F1B with a flush on stage `s` of `p`, `m` micro-batches (Narayanan et
/// al. 2021, Megatron-LM's non-interleaved schedule): min(p - 1 - s, m)
/// warm-up forwards, then a forward and a backward in turn, then the
/// remaining backwards; fused backward tasks.
pub fn one_f_one_b_order(s: usize, p: usize, m: usize) -> Vec<(Kind, usize)> {
    let warm = (p - 1 - s).min(m);
    let mut out: Vec<(Kind, usize)> = (0..warm).map(|j| (Kind::F, j)).collect();
    for j in 0..m {
        if warm + j < m {
            out.push((Kind::F, warm + j));
        }
        out.push((Kind::BW, j));
    }
    out
}

/// ZB-H1 on stage `s` of `p`, `m` micro-batches (Qi et al. 2024, "Zero
/// Bubble Pipeline Parallelism", section 3.1 and figure 3): 1F1B's order
/// with the backward split, each stage's dW tasks deferred. Stage `s` runs
/// min(p - s, m) forwards, then for every micro-batch j its dX, then (from
/// the (s + 1)-th dX on) the dW of micro-batch j - s, then the next
/// forward; the dW tasks still waiting run last. So stage s holds at most
/// p - s micro-batches before their dX, and at most p in all (until their
/// dW), 1F1B's peak; the last stage defers p - 1 dW tasks, stage 0 none,
/// and the dW tasks fill the cool-down. On equal stages with ideal links
/// and m >= p the iteration is m (F + B + W) + (p - 1)(F + B - W) when
/// W <= F (the paper's setting).
pub fn zb_h1_order(s: usize, p: usize, m: usize) -> Vec<(Kind, usize)> {
    let warm = (p - s).min(m);
    let mut out: Vec<(Kind, usize)> = (0..warm).map(|j| (Kind::F, j)).collect();
    let mut next_w = 0;
    for j in 0..m {
        out.push((Kind::B, j));
        if j >= s {
            out.push((Kind::W, next_w));
            next_w += 1;
        }
        if warm + j < m {
            out.push((Kind::F, warm + j));
        }
    }
    out.extend((next_w..m).map(|j| (Kind::W, j)));
    out
}

/// Zero bubble on interleaved arrays, stage `s` of `p`, `m` micro-batches:
/// ZB-H1's order ([`zb_h1_order`]) where the micro-batches whose dW ZB-H1
/// would only shift by s have one fused backward instead. ZB-H1 defers
/// stage s's dW by s micro-batches throughout; here only the first s
/// micro-batches' dW are deferred (their dX leaves early in the warm-up,
/// their dW waits), the steady state runs fused backwards with those s
/// dW tasks still waiting (the same p micro-batches held as ZB-H1), and in
/// the cool-down (no forward left to run) the backwards split again: dX
/// now, and one waiting dW after it, the rest last, in the bubbles while
/// the last gradients travel upstream.
pub fn zb_il_order(s: usize, p: usize, m: usize) -> Vec<(Kind, usize)> {
    let warm = (p - s).min(m);
    let mut out: Vec<(Kind, usize)> = (0..warm).map(|j| (Kind::F, j)).collect();
    let mut waiting = std::collections::VecDeque::new();
    for j in 0..m {
        let forward = warm + j < m;
        if j < s || !forward {
            out.push((Kind::B, j));
            waiting.push_back(j);
            if j >= s {
                let w = waiting.pop_front().expect("one waiting");
                out.push((Kind::W, w));
            }
        } else {
            out.push((Kind::BW, j));
        }
        if forward {
            out.push((Kind::F, warm + j));
        }
    }
    out.extend(waiting.into_iter().map(|j| (Kind::W, j)));
    out
}
