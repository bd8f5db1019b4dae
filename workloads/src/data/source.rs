//! A model's `[data]` section resolved to files, and the train/test split
//! read from them.

use super::{cifar, digits, idx, DatasetInfo, Split, DIGITS};
use crate::error::{Result, WorkloadError};
use crate::model::{DataFormat, DataSpec, Model, Shape};
use std::path::{Path, PathBuf};

/// The data set of a model, its files resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataSource {
    /// The digits CSV, split at random (seeded) by `training.test_fraction`.
    Digits { path: PathBuf },
    /// IDX images and labels: `[images, labels]` of each set.
    Idx {
        train: [PathBuf; 2],
        test: [PathBuf; 2],
        classes: usize,
    },
    /// CIFAR-10 batches.
    Cifar10 {
        train: Vec<PathBuf>,
        test: Vec<PathBuf>,
        classes: usize,
    },
}

/// The most classes a data set may have (labels are bytes).
pub const MAX_CLASSES: usize = 256;

fn refuse(field: &str, message: impl Into<String>) -> WorkloadError {
    WorkloadError::model(format!("data.{field}"), message)
}

impl DataSource {
    /// `spec` with relative paths taken from `base` (the model file's
    /// folder); `digits` is the CSV used when `spec.path` is not set.
    pub fn resolve(spec: &DataSpec, base: Option<&Path>, digits: PathBuf) -> Result<Self> {
        let base = base.unwrap_or(Path::new("."));
        let format = spec.format.unwrap_or(DataFormat::DigitsCsv);
        if format == DataFormat::DigitsCsv {
            for (set, f) in [
                (spec.dir.is_some(), "dir"),
                (spec.dir_env.is_some(), "dir_env"),
                (spec.train.is_some(), "train"),
                (spec.test.is_some(), "test"),
                (spec.classes.is_some(), "classes"),
            ] {
                if set {
                    return Err(refuse(
                        f,
                        "is a field of the idx and cifar10 formats; the digits CSV takes `path` only",
                    ));
                }
            }
            return Ok(DataSource::Digits {
                path: match &spec.path {
                    Some(p) => base.join(p),
                    None => digits,
                },
            });
        }
        if spec.path.is_some() {
            return Err(refuse(
                "path",
                "is the digits CSV's field; idx and cifar10 name `train` and `test` files",
            ));
        }
        let classes = spec.classes.unwrap_or(10);
        if !(2..=MAX_CLASSES).contains(&classes) {
            return Err(WorkloadError::out_of_range(
                "data.classes",
                classes,
                format!("2..={MAX_CLASSES}"),
            ));
        }
        let env_dir = spec
            .dir_env
            .as_ref()
            .and_then(std::env::var_os)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let dir = base.join(env_dir.or_else(|| spec.dir.clone()).unwrap_or_default());
        let files = |field: &str, v: &Option<Vec<PathBuf>>| -> Result<Vec<PathBuf>> {
            match v {
                Some(v) if !v.is_empty() => Ok(v.iter().map(|p| dir.join(p)).collect()),
                _ => Err(refuse(field, "is required: the files of the set")),
            }
        };
        let (train, test) = (files("train", &spec.train)?, files("test", &spec.test)?);
        Ok(match format {
            DataFormat::Idx => {
                let pair = |field: &str, v: Vec<PathBuf>| -> Result<[PathBuf; 2]> {
                    <[PathBuf; 2]>::try_from(v).map_err(|v| {
                        refuse(
                            field,
                            format!("names {} files; expected 2: [images, labels]", v.len()),
                        )
                    })
                };
                DataSource::Idx {
                    train: pair("train", train)?,
                    test: pair("test", test)?,
                    classes,
                }
            }
            DataFormat::Cifar10 => DataSource::Cifar10 {
                train,
                test,
                classes,
            },
            DataFormat::DigitsCsv => unreachable!("handled above"),
        })
    }

    /// The file a report names as the data set (the first training file).
    pub fn main_path(&self) -> &Path {
        match self {
            DataSource::Digits { path } => path,
            DataSource::Idx { train, .. } => &train[0],
            DataSource::Cifar10 { train, .. } => &train[0],
        }
    }

    /// The input shape and classes, from the files' headers (the training
    /// images' for IDX; CIFAR-10's and the digits' are fixed).
    pub fn info(&self) -> Result<DatasetInfo> {
        Ok(match self {
            DataSource::Digits { .. } => DIGITS,
            DataSource::Idx { train, classes, .. } => DatasetInfo {
                input: idx::image_shape(&train[0])?,
                classes: *classes,
                max_pixel: u8::MAX,
            },
            DataSource::Cifar10 { classes, .. } => DatasetInfo {
                input: cifar::SHAPE,
                classes: *classes,
                max_pixel: u8::MAX,
            },
        })
    }
}

/// The training and test sets of `model`: the official split of an IDX or
/// CIFAR-10 set, the seeded split of the digits.
pub fn load_split(model: &Model) -> Result<Split> {
    let t = model.spec.training;
    let split = match &model.data {
        DataSource::Digits { path } => {
            digits::split(&digits::load(path)?, t.test_fraction, t.seed)?
        }
        DataSource::Idx {
            train,
            test,
            classes,
        } => Split {
            train: idx::load(&train[0], &train[1], *classes)?,
            test: idx::load(&test[0], &test[1], *classes)?,
        },
        DataSource::Cifar10 {
            train,
            test,
            classes,
        } => Split {
            train: cifar::load(train, *classes)?,
            test: cifar::load(test, *classes)?,
        },
    };
    let want = model.shapes[0];
    for (set, name) in [(&split.train, "training"), (&split.test, "test")] {
        if let Some(s) = set.iter().find(|s| s.shape != want) {
            return Err(WorkloadError::model(
                "data",
                format!(
                    "{} images are {}, the model's input is {want}",
                    name, s.shape
                ),
            ));
        }
    }
    let _: Shape = want;
    Ok(split)
}
