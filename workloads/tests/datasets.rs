//! The IDX and CIFAR-10 readers on small files written here (plain and
//! gzip'ed), their errors on broken files, the `[data]` section, and the
//! real Fashion-MNIST files (ignored unless the data set is installed).

mod common;

use flate2::write::GzEncoder;
use std::io::Write;
use std::path::{Path, PathBuf};
use sysgrad_workloads::data::{self, cifar, idx, DataSource};
use sysgrad_workloads::model::{parse_model, Shape};

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("datasets")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(path: &Path, bytes: &[u8], gz: bool) {
    let bytes = if gz {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    } else {
        bytes.to_vec()
    };
    std::fs::write(path, bytes).unwrap();
}

/// `n` images of `rows x cols` whose pixel `p` of image `i` is `(i + p) % 256`,
/// labels `i % 10`.
fn idx_pair(d: &Path, n: usize, rows: usize, cols: usize, gz: bool) -> (PathBuf, PathBuf) {
    let ext = if gz { ".gz" } else { "" };
    let (im, lb) = (d.join(format!("im{ext}")), d.join(format!("lb{ext}")));
    let pixels: Vec<u8> = (0..n)
        .flat_map(|i| (0..rows * cols).map(move |p| ((i + p) % 256) as u8))
        .collect();
    write(&im, &idx::encode(&[n, rows, cols], &pixels), gz);
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    write(&lb, &idx::encode(&[n], &labels), gz);
    (im, lb)
}

#[test]
fn idx_files_are_read_plain_and_gzipped() {
    for gz in [false, true] {
        let d = dir(if gz { "idx-gz" } else { "idx-plain" });
        let (im, lb) = idx_pair(&d, 7, 3, 5, gz);
        assert_eq!(idx::image_shape(&im).unwrap(), Shape { c: 1, h: 3, w: 5 });
        let s = idx::load(&im, &lb, 10).unwrap();
        assert_eq!(s.len(), 7);
        for (i, x) in s.iter().enumerate() {
            assert_eq!(x.label as usize, i % 10);
            assert_eq!(x.pixels.len(), 15);
            assert_eq!(x.pixels[4] as usize, (i + 4) % 256);
            assert_eq!(x.value(4), ((i + 4) % 256) as f64 / 255.0);
        }
    }
}

#[test]
fn broken_idx_files_name_file_offset_and_expectation() {
    let d = dir("idx-bad");
    let (im, lb) = idx_pair(&d, 4, 2, 2, false);
    // Wrong magic: a label file given as images.
    let e = idx::load(&lb, &lb, 10).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: at byte 0: magic number 00 00 08 01, expected 00 00 08 03",
            lb.display()
        )),
        "{e}"
    );
    // Truncated: the last image loses a byte.
    let bytes = std::fs::read(&im).unwrap();
    let cut = d.join("cut");
    write(&cut, &bytes[..bytes.len() - 1], false);
    let e = idx::load(&cut, &lb, 10).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: at byte {}: the file ends here",
            cut.display(),
            16 + 4 * 4 - 1
        )) && e.contains("expected image 3 of 4 (2x2 bytes each)"),
        "{e}"
    );
    // Truncated inside the header.
    write(&cut, &bytes[..6], true);
    let e = idx::load(&cut, &lb, 10).unwrap_err().to_string();
    assert!(
        e.contains("at byte 6: the file ends here; expected size 1 of 3"),
        "{e}"
    );
    // Counts that disagree.
    let few = d.join("few");
    write(&few, &idx::encode(&[3], &[0, 1, 2]), false);
    let e = idx::load(&im, &few, 10).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: at byte 4: 3 labels, expected 4",
            few.display()
        )),
        "{e}"
    );
    // A label out of range.
    let bad = d.join("bad-label");
    write(&bad, &idx::encode(&[4], &[0, 1, 12, 2]), false);
    let e = idx::load(&im, &bad, 10).unwrap_err().to_string();
    assert!(
        e.contains("at byte 10: label 12 of sample 2 is out of range (expected 0..=9)"),
        "{e}"
    );
    // Trailing bytes.
    let long = d.join("long");
    let mut more = bytes.clone();
    more.push(0);
    write(&long, &more, false);
    let e = idx::load(&long, &lb, 10).unwrap_err().to_string();
    assert!(
        e.contains("at byte 32: expected the end of the file after 4 images"),
        "{e}"
    );
}

fn cifar_records(labels: &[u8]) -> Vec<u8> {
    labels
        .iter()
        .enumerate()
        .flat_map(|(i, &l)| {
            std::iter::once(l).chain((0..cifar::RECORD - 1).map(move |p| ((i * 7 + p) % 256) as u8))
        })
        .collect()
}

#[test]
fn cifar_batches_are_read_and_checked() {
    let d = dir("cifar");
    let (a, b) = (d.join("data_batch_1.bin"), d.join("data_batch_2.bin"));
    write(&a, &cifar_records(&[3, 9]), false);
    write(&b, &cifar_records(&[0]), false);
    let s = cifar::load(&[&a, &b], 10).unwrap();
    assert_eq!(s.iter().map(|x| x.label).collect::<Vec<_>>(), [3, 9, 0]);
    assert_eq!(s[1].shape, Shape { c: 3, h: 32, w: 32 });
    // The green plane starts at pixel 1024.
    assert_eq!(s[1].pixels[1024] as usize, (7 + 1024) % 256);
    let bytes = cifar_records(&[1, 2]);
    let cut = d.join("cut.bin");
    write(&cut, &bytes[..bytes.len() - 5], false);
    let e = cifar::load(&[&cut], 10).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: at byte 3073: 6141 bytes is not a whole number of 3073-byte records",
            cut.display()
        )),
        "{e}"
    );
    let bad = d.join("bad.bin");
    write(&bad, &cifar_records(&[1, 10]), false);
    let e = cifar::load(&[&bad], 10).unwrap_err().to_string();
    assert!(
        e.contains("at byte 3073: label 10 of record 1 is out of range (expected 0..=9)"),
        "{e}"
    );
}

const MLP_28: &str = r#"
name = "t"
[format]
in_bits = 16
acc_bits = 40
frac_bits = 10
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 10
[optimizer]
kind = "sgd"
lr_shift = 6
grad_scale_shift = 3
[training]
epochs = 1
batch_size = 4
seed = 1
"#;

#[test]
fn the_data_section_picks_format_files_and_shape() {
    let d = dir("section");
    idx_pair(&d, 12, 6, 4, true);
    std::fs::copy(d.join("im.gz"), d.join("t-im.gz")).unwrap();
    std::fs::copy(d.join("lb.gz"), d.join("t-lb.gz")).unwrap();
    let text = format!(
        "{MLP_28}[data]\nformat = \"idx\"\ndir = \"{}\"\ntrain = [\"im.gz\", \"lb.gz\"]\ntest = [\"t-im.gz\", \"t-lb.gz\"]\n",
        d.display()
    );
    let m = parse_model(&text, false, Path::new("m.toml")).unwrap();
    assert_eq!(m.shapes[0], Shape { c: 1, h: 6, w: 4 });
    assert!(matches!(m.data, DataSource::Idx { classes: 10, .. }));
    let split = data::load_split(&m).unwrap();
    assert_eq!((split.train.len(), split.test.len()), (12, 12));
    // A pair is two files.
    let e = parse_model(
        &text.replace("[\"im.gz\", \"lb.gz\"]", "[\"im.gz\"]"),
        false,
        Path::new("m.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("data.train: names 1 files; expected 2: [images, labels]"),
        "{e}"
    );
    // The digits take `path` only.
    let e = parse_model(
        &format!("{MLP_28}[data]\nclasses = 3\n"),
        false,
        Path::new("m.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("data.classes: is a field of the idx and cifar10 formats"),
        "{e}"
    );
    // A missing file is named.
    let e = parse_model(
        &text.replace("\"im.gz\"", "\"nope.gz\""),
        false,
        Path::new("m.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("nope.gz"), "{e}");
    // A model whose output is not one value per class.
    let e = parse_model(
        &text
            .replace("classes", "x")
            .replace("[data]", "[data]\nclasses = 5"),
        false,
        Path::new("m.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("must produce 5 values (one per class)"), "{e}");
}

/// The folder of the installed Fashion-MNIST (Debian's dataset-fashion-mnist).
pub fn fashion_dir() -> PathBuf {
    std::env::var_os("SYSGRAD_FASHION_MNIST")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/datasets/fashion-mnist"))
}

#[test]
#[ignore = "needs dataset-fashion-mnist"]
fn the_real_fashion_mnist_files() {
    let d = fashion_dir();
    let train = idx::load(
        &d.join("train-images-idx3-ubyte.gz"),
        &d.join("train-labels-idx1-ubyte.gz"),
        10,
    )
    .unwrap();
    let test = idx::load(
        &d.join("t10k-images-idx3-ubyte.gz"),
        &d.join("t10k-labels-idx1-ubyte.gz"),
        10,
    )
    .unwrap();
    assert_eq!((train.len(), test.len()), (60_000, 10_000));
    assert!(train.iter().all(|s| s.pixels.len() == 784));
    // Balanced: 6,000 training and 1,000 test images per class.
    for c in 0..10u8 {
        assert_eq!(train.iter().filter(|s| s.label == c).count(), 6000);
        assert_eq!(test.iter().filter(|s| s.label == c).count(), 1000);
    }
}
