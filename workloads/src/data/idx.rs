//! The IDX format of MNIST and Fashion-MNIST (gzip'ed or not, told by the
//! gzip magic number, not the name): a 4-byte magic `0 0 type ndims`,
//! `ndims` big-endian u32 sizes, then the values. Images are
//! `0x08` (unsigned byte) with 3 dimensions (count, rows, columns), labels
//! `0x08` with one (count). Files are read as a stream, image by image, so
//! a 47 MB training set is held once, as `u8`.

use super::{DatasetInfo, Sample};
use crate::error::{Result, WorkloadError};
use crate::model::Shape;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The type code of unsigned bytes, the only one these data sets use.
const UBYTE: u8 = 0x08;

/// A file read front to back, with the offset of the next byte (in the
/// decompressed stream for a `.gz`) for error messages.
pub(crate) struct Stream {
    path: PathBuf,
    inner: Box<dyn Read>,
    pub offset: u64,
}

impl Stream {
    /// Opens `path`, gunzipping it if it starts with the gzip magic number.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| WorkloadError::io(path, e))?;
        let mut buf = BufReader::new(file);
        let gz = {
            use std::io::BufRead;
            let head = buf.fill_buf().map_err(|e| WorkloadError::io(path, e))?;
            head.starts_with(&[0x1f, 0x8b])
        };
        let inner: Box<dyn Read> = if gz {
            Box::new(BufReader::new(flate2::read::GzDecoder::new(buf)))
        } else {
            Box::new(buf)
        };
        Ok(Stream {
            path: path.to_path_buf(),
            inner,
            offset: 0,
        })
    }

    pub fn error(&self, offset: u64, message: impl Into<String>) -> WorkloadError {
        WorkloadError::DataAt {
            path: self.path.clone(),
            offset,
            message: message.into(),
        }
    }

    /// Fills `buf`, or fails naming where the file ended and `what` was
    /// expected there.
    pub fn read(&mut self, buf: &mut [u8], what: impl Fn() -> String) -> Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => {
                    let at = self.offset + got as u64;
                    return Err(self.error(at, format!("the file ends here; expected {}", what())));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = self.offset + got as u64;
                    return Err(self.error(at, format!("cannot read ({e}); expected {}", what())));
                }
            }
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    /// Fails if anything follows the last value.
    pub fn expect_end(&mut self, what: &str) -> Result<()> {
        let mut one = [0u8; 1];
        match self.inner.read(&mut one) {
            Ok(0) => Ok(()),
            Ok(_) => Err(self.error(
                self.offset,
                format!("expected the end of the file after {what}, found more bytes"),
            )),
            Err(e) => Err(self.error(self.offset, format!("cannot read ({e})"))),
        }
    }
}

/// The sizes an IDX header declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub dims: Vec<usize>,
}

/// Reads and checks the header of an IDX file of unsigned bytes with
/// `ndims` dimensions (`what` names the file's role in messages).
pub(crate) fn header(s: &mut Stream, ndims: u8, what: &str) -> Result<Header> {
    let mut magic = [0u8; 4];
    s.read(&mut magic, || {
        format!("the 4-byte IDX magic number of {what}")
    })?;
    let want = [0, 0, UBYTE, ndims];
    if magic != want {
        return Err(s.error(
            0,
            format!(
                "magic number {:02x} {:02x} {:02x} {:02x}, expected {:02x} {:02x} {:02x} {:02x} \
                 (IDX, unsigned bytes, {ndims} dimension{}: {what})",
                magic[0],
                magic[1],
                magic[2],
                magic[3],
                want[0],
                want[1],
                want[2],
                want[3],
                if ndims == 1 { "" } else { "s" }
            ),
        ));
    }
    let mut dims = Vec::with_capacity(ndims as usize);
    for d in 0..ndims {
        let mut b = [0u8; 4];
        s.read(&mut b, || {
            format!("size {} of {ndims} (big-endian u32)", d + 1)
        })?;
        dims.push(u32::from_be_bytes(b) as usize);
    }
    Ok(Header { dims })
}

/// The shape of one image of an IDX image file, from its header alone.
pub fn image_shape(images: &Path) -> Result<Shape> {
    let mut s = Stream::open(images)?;
    let h = header(&mut s, 3, "images")?;
    check_image_dims(&s, &h)?;
    Ok(Shape {
        c: 1,
        h: h.dims[1],
        w: h.dims[2],
    })
}

fn check_image_dims(s: &Stream, h: &Header) -> Result<()> {
    if h.dims[1] == 0 || h.dims[2] == 0 || h.dims[1] > 4096 || h.dims[2] > 4096 {
        return Err(s.error(
            8,
            format!(
                "images of {}x{} pixels; expected 1..=4096 rows and columns",
                h.dims[1], h.dims[2]
            ),
        ));
    }
    Ok(())
}

/// Reads an image file and its label file into samples, checking that the
/// counts agree and that every label is below `classes`.
pub fn load(images: &Path, labels: &Path, classes: usize) -> Result<Vec<Sample>> {
    let mut li = Stream::open(labels)?;
    let lh = header(&mut li, 1, "labels")?;
    let mut ii = Stream::open(images)?;
    let ih = header(&mut ii, 3, "images")?;
    check_image_dims(&ii, &ih)?;
    let (n, rows, cols) = (ih.dims[0], ih.dims[1], ih.dims[2]);
    if lh.dims[0] != n {
        return Err(li.error(
            4,
            format!(
                "{} labels, expected {n}: one per image of {}",
                lh.dims[0],
                images.display()
            ),
        ));
    }
    let info = DatasetInfo {
        input: Shape {
            c: 1,
            h: rows,
            w: cols,
        },
        classes,
        max_pixel: u8::MAX,
    };
    let mut label_bytes = vec![0u8; n];
    li.read(&mut label_bytes, || format!("{n} labels"))?;
    li.expect_end(&format!("{n} labels"))?;
    if let Some(i) = label_bytes.iter().position(|&l| l as usize >= classes) {
        return Err(li.error(
            (lh_len(&lh) + i) as u64,
            format!(
                "label {} of sample {i} is out of range (expected 0..={})",
                label_bytes[i],
                classes - 1
            ),
        ));
    }
    let size = rows * cols;
    let mut out = Vec::with_capacity(n);
    for (i, &label) in label_bytes.iter().enumerate() {
        let mut pixels = vec![0u8; size];
        ii.read(&mut pixels, || {
            format!("image {i} of {n} ({rows}x{cols} bytes each)")
        })?;
        out.push(Sample::new(pixels, label, &info));
    }
    ii.expect_end(&format!("{n} images"))?;
    Ok(out)
}

/// Bytes of an IDX header.
fn lh_len(h: &Header) -> usize {
    4 + 4 * h.dims.len()
}

/// The bytes of an IDX file of unsigned bytes with sizes `dims` (for
/// tests and for writing small data sets).
pub fn encode(dims: &[usize], values: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, UBYTE, dims.len() as u8];
    for &d in dims {
        out.extend_from_slice(&(d as u32).to_be_bytes());
    }
    out.extend_from_slice(values);
    out
}
