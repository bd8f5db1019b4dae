//! The one error type of the crate: every failure a user can cause (a bad
//! model file, a malformed topology, an array that rejects an operand) comes
//! back as a value with enough context to fix it, never as a panic.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file that does not parse; `message` names the line and field.
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A field that parses but is outside what the workload supports.
    #[error("{field} = {value} is out of range (allowed: {allowed})")]
    OutOfRange {
        field: String,
        value: String,
        allowed: String,
    },
    /// A model whose layers do not fit together.
    #[error("{field}: {message}")]
    Model { field: String, message: String },
    #[error("data set {path}: line {line}: {message}")]
    Data {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A binary data file (IDX, CIFAR-10) that is not what its format
    /// says: `offset` is in the file's bytes (after gunzip for a `.gz`).
    #[error("data set {path}: at byte {offset}: {message}")]
    DataAt {
        path: PathBuf,
        offset: u64,
        message: String,
    },
    /// The emulated array refused an operand (should not happen for a
    /// validated model: every value is requantized before it is streamed).
    #[error("layer {layer} ({what}): array error")]
    Array {
        layer: usize,
        what: &'static str,
        source: sysgrad_emulator::DriveError,
    },
    /// The sequential shadow run computed a different result than the
    /// interleaved one (the two schedules must agree bit for bit).
    #[error("layer {layer}: interleaved and sequential backward passes disagree ({what})")]
    ScheduleMismatch { layer: usize, what: &'static str },
    /// The accelerator engine could not run a product of a layer (a
    /// buffer too small, or a fault that the compiler should have avoided).
    #[error("layer {layer} ({what}) on the accelerator: {message}")]
    Accel {
        layer: usize,
        what: &'static str,
        message: String,
    },
    /// An engine's weights after a training step differ from the array's.
    #[error("step {step}, layer {layer}: the {engine} engine's {what} differ from the array engine's (first at {at:?}: {got} vs {want})")]
    EngineMismatch {
        step: usize,
        layer: usize,
        engine: &'static str,
        what: &'static str,
        at: (usize, usize),
        got: i64,
        want: i64,
    },
    #[error("writing {path}: {message}")]
    Output { path: PathBuf, message: String },
    /// A figure counted from the input's sizes does not fit in `u64`;
    /// `input` names the input (a layer with its sizes, the batch).
    #[error("{input}: {overflow}")]
    Overflow {
        input: String,
        overflow: sysgrad_emulator::count::Overflow,
    },
}

impl WorkloadError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        WorkloadError::Io {
            path: path.into(),
            source,
        }
    }

    pub fn out_of_range(
        field: impl Into<String>,
        value: impl ToString,
        allowed: impl Into<String>,
    ) -> Self {
        WorkloadError::OutOfRange {
            field: field.into(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }

    /// The array's error in layer `layer`'s `what`, as a `map_err` takes it.
    pub fn array(
        layer: usize,
        what: &'static str,
    ) -> impl Fn(sysgrad_emulator::DriveError) -> WorkloadError {
        move |source| WorkloadError::Array {
            layer,
            what,
            source,
        }
    }

    pub fn model(field: impl Into<String>, message: impl Into<String>) -> Self {
        WorkloadError::Model {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn output(path: impl Into<PathBuf>, message: impl ToString) -> Self {
        WorkloadError::Output {
            path: path.into(),
            message: message.to_string(),
        }
    }
}

pub type Result<T, E = WorkloadError> = std::result::Result<T, E>;
