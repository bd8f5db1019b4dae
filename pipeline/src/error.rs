//! The crate's one error type: every failure a user can cause (a bad
//! option, a partition that does not fit the model, a schedule that cannot
//! run) comes back naming the field, its value and what is allowed.

use sysgrad_workloads::WorkloadError;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("{field} = {value} is out of range (allowed: {allowed})")]
    OutOfRange {
        field: String,
        value: String,
        allowed: String,
    },
    /// A model file, topology, data set or training failure.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("array model")]
    Array(#[from] sysgrad_emulator::DriveError),
    /// The schedule left tasks that can never start (a bug in a policy).
    #[error("schedule {schedule}: deadlock at cycle {cycle}: {detail}")]
    Deadlock {
        schedule: String,
        cycle: u64,
        detail: String,
    },
    /// A task's cycles counted while training differ from the cost table.
    #[error(
        "stage {stage} {what}: the engine counted {counted} cycles, the cost table says {table}"
    )]
    CostMismatch {
        stage: usize,
        what: &'static str,
        counted: u64,
        table: u64,
    },
    /// A figure that contradicts what the timeline must satisfy (an
    /// iteration shorter than an array's own work per iteration): a bug
    /// in the simulator or the measurement, named by its schedule.
    #[error("internal error: {0}")]
    Internal(String),
    #[error("writing {path}: {message}")]
    Output { path: String, message: String },
    /// A figure counted from the inputs' sizes does not fit in `u64`;
    /// `input` names the inputs (a layer, the micro-batch size, the link).
    #[error("{input}: {overflow}")]
    Overflow {
        input: String,
        overflow: sysgrad_emulator::count::Overflow,
    },
}

impl PipelineError {
    pub fn out_of_range(
        field: impl Into<String>,
        value: impl ToString,
        allowed: impl Into<String>,
    ) -> Self {
        PipelineError::OutOfRange {
            field: field.into(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
}

pub type Result<T, E = PipelineError> = std::result::Result<T, E>;
