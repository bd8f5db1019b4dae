//! A minimal VCD reader and writer: enough of IEEE 1364 §18 to sample
//! every variable of a two-state simulation at given times, at any width
//! (ports of many lanes are far wider than 64 bits), and to write one.
//! It knows nothing of what the variables are.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::num::ParseIntError;

/// The value history of every variable, by hierarchical name.
#[derive(Debug, Default)]
pub struct Waveform {
    /// name -> index into `traces`
    vars: HashMap<String, usize>,
    /// identifier code -> index into `traces` (several names may share one)
    ids: HashMap<String, usize>,
    traces: Vec<Trace>,
}

/// The changes of one identifier code: `times[n]` and its value, stored as
/// `words` little-endian 64-bit limbs at `limbs[n * words..]`.
#[derive(Debug)]
struct Trace {
    width: u32,
    words: usize,
    times: Vec<u64>,
    limbs: Vec<u64>,
}

/// Why a variable could not be sampled; the caller names the variable and
/// the time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleError {
    #[error("is not in the VCD")]
    NoSuchVariable,
    #[error("has no value at VCD time {time} (no change at or before it)")]
    NoValue { time: u64 },
    #[error("is {width} bits wide, more than one 64-bit sample; read it by lanes")]
    TooWide { width: u32 },
    #[error("is {width} bits wide, not a whole number of {lane_bits}-bit lanes")]
    Lanes { width: u32, lane_bits: u32 },
}

/// Why a VCD could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VcdError {
    /// The text ends inside a `$scope` or `$var` declaration.
    #[error("truncated {0}")]
    Truncated(&'static str),
    #[error("$var width: {0}")]
    Width(ParseIntError),
    #[error("{name} is declared {width} bits wide, but its id {id} is {id_width} bits")]
    IdWidth {
        name: String,
        width: u32,
        id: String,
        id_width: u32,
    },
    #[error("bad time {token}: {error}")]
    Time { token: String, error: ParseIntError },
    #[error("vector change without id")]
    ChangeWithoutId,
    #[error("unsupported value change {token} at time {time}")]
    Unsupported { token: String, time: u64 },
    #[error("value change at time {time} for undeclared id {id}")]
    UndeclaredId { id: String, time: u64 },
    /// A value that does not fit its variable; `name` is "?" when no
    /// variable has the id.
    #[error("{name} (id {id}) has {value}")]
    Value {
        name: String,
        id: String,
        value: ValueError,
    },
}

/// What is wrong with one value change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("{digits} digits for a {width}-bit variable at time {time}")]
    TooLong {
        digits: usize,
        width: u32,
        time: u64,
    },
    #[error("an unknown value ({bits}) at time {time}")]
    Unknown { bits: String, time: u64 },
    #[error("bad value digit in {bits} at time {time}")]
    Digit { bits: String, time: u64 },
}

impl Trace {
    fn new(width: u32) -> Trace {
        Trace {
            width,
            words: width.div_ceil(64).max(1) as usize,
            times: Vec::new(),
            limbs: Vec::new(),
        }
    }

    /// Appends a change given as binary digits, most significant first; a
    /// value shorter than the variable is zero-extended (IEEE 1364 §18.2.1).
    fn push(&mut self, time: u64, bits: &str) -> Result<(), ValueError> {
        if bits.len() > self.width as usize {
            return Err(ValueError::TooLong {
                digits: bits.len(),
                width: self.width,
                time,
            });
        }
        let at = self.limbs.len();
        self.limbs.resize(at + self.words, 0);
        for (k, digit) in bits.bytes().rev().enumerate() {
            match digit {
                b'0' => {}
                b'1' => self.limbs[at + k / 64] |= 1 << (k % 64),
                b'x' | b'X' | b'z' | b'Z' => {
                    let bits = bits.to_string();
                    return Err(ValueError::Unknown { bits, time });
                }
                _ => {
                    let bits = bits.to_string();
                    return Err(ValueError::Digit { bits, time });
                }
            }
        }
        self.times.push(time);
        Ok(())
    }

    /// The limbs of the value at `time`: the last change at or before it.
    fn at(&self, time: u64) -> Result<&[u64], SampleError> {
        let n = self.times.partition_point(|t| *t <= time);
        if n == 0 {
            return Err(SampleError::NoValue { time });
        }
        Ok(&self.limbs[(n - 1) * self.words..n * self.words])
    }
}

/// Bits `lo..lo + n` (n <= 64) of a little-endian limb slice.
fn bit_field(limbs: &[u64], lo: usize, n: u32) -> u64 {
    let (word, shift) = (lo / 64, lo % 64);
    let mut v = limbs[word] >> shift;
    if shift != 0 && word + 1 < limbs.len() {
        v |= limbs[word + 1] << (64 - shift);
    }
    v & (u64::MAX >> (64 - n))
}

impl Waveform {
    pub fn parse(text: &str) -> Result<Waveform, VcdError> {
        let mut wf = Waveform::default();
        let mut scope: Vec<&str> = Vec::new();
        let mut time = 0u64;
        let mut tokens = text.split_ascii_whitespace();
        while let Some(tok) = tokens.next() {
            match tok {
                "$scope" => {
                    let _kind = tokens.next();
                    scope.push(tokens.next().ok_or(VcdError::Truncated("$scope"))?);
                }
                "$upscope" => {
                    scope.pop();
                }
                "$var" => wf.declare(&scope, &mut tokens)?,
                "$comment" | "$date" | "$version" | "$timescale" => {
                    tokens.by_ref().find(|t| *t == "$end");
                }
                "$end" | "$enddefinitions" | "$dumpvars" | "$dumpall" | "$dumpon" | "$dumpoff" => {}
                _ if tok.starts_with('#') => {
                    time = tok[1..].parse().map_err(|error| VcdError::Time {
                        token: tok.to_string(),
                        error,
                    })?;
                }
                _ if tok.starts_with(['b', 'B']) => {
                    let id = tokens.next().ok_or(VcdError::ChangeWithoutId)?;
                    wf.change(id, time, &tok[1..])?;
                }
                _ if tok.starts_with(['0', '1', 'x', 'X', 'z', 'Z']) => {
                    let (v, id) = tok.split_at(1);
                    wf.change(id, time, v)?;
                }
                _ => {
                    let token = tok.to_string();
                    return Err(VcdError::Unsupported { token, time });
                }
            }
        }
        Ok(wf)
    }

    /// `$var kind width id name [range] $end`, in the current scope.
    fn declare<'a>(
        &mut self,
        scope: &[&str],
        tokens: &mut impl Iterator<Item = &'a str>,
    ) -> Result<(), VcdError> {
        let truncated = VcdError::Truncated("$var");
        let _kind = tokens.next();
        let width: u32 = tokens
            .next()
            .ok_or(truncated.clone())?
            .parse()
            .map_err(VcdError::Width)?;
        let id = tokens.next().ok_or(truncated.clone())?;
        let name = tokens.next().ok_or(truncated)?;
        // An optional bit range follows the name; skip to $end.
        tokens.find(|t| *t == "$end");
        let full = format!("{}.{name}", scope.join("."));
        let index = match self.ids.get(id) {
            Some(&k) if self.traces[k].width == width => k,
            Some(&k) => {
                return Err(VcdError::IdWidth {
                    name: full,
                    width,
                    id: id.to_string(),
                    id_width: self.traces[k].width,
                })
            }
            None => {
                self.traces.push(Trace::new(width));
                self.ids.insert(id.to_string(), self.traces.len() - 1);
                self.traces.len() - 1
            }
        };
        self.vars.insert(full, index);
        Ok(())
    }

    fn change(&mut self, id: &str, time: u64, bits: &str) -> Result<(), VcdError> {
        let k = *self.ids.get(id).ok_or_else(|| VcdError::UndeclaredId {
            id: id.to_string(),
            time,
        })?;
        self.traces[k].push(time, bits).map_err(|value| {
            let name = self.vars.iter().find(|(_, v)| **v == k).map(|(n, _)| n);
            VcdError::Value {
                name: name.map_or("?", |n| n.as_str()).to_string(),
                id: id.to_string(),
                value,
            }
        })
    }

    /// All variable names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(|s| s.as_str())
    }

    fn trace(&self, name: &str) -> Result<&Trace, SampleError> {
        self.vars
            .get(name)
            .map(|&k| &self.traces[k])
            .ok_or(SampleError::NoSuchVariable)
    }

    /// The declared width of `name`.
    pub fn width(&self, name: &str) -> Option<u32> {
        self.trace(name).ok().map(|t| t.width)
    }

    /// The signed value of `name` at `time` (the last change at or before
    /// it); one-bit variables read as 0 or 1. At most 64 bits wide.
    pub fn sample(&self, name: &str, time: u64) -> Result<i64, SampleError> {
        let trace = self.trace(name)?;
        if trace.width > 64 {
            return Err(SampleError::TooWide { width: trace.width });
        }
        let raw = trace.at(time)?[0];
        Ok(if trace.width == 1 {
            raw as i64
        } else {
            crate::stimulus::from_bits(raw, trace.width)
        })
    }

    /// `name` at `time` split into signed lanes of `lane_bits` (lane k at
    /// bits `k*lane_bits..`), at any width: how packed ports are read.
    pub fn lanes(&self, name: &str, time: u64, lane_bits: u32) -> Result<Vec<i64>, SampleError> {
        let trace = self.trace(name)?;
        if lane_bits == 0 || lane_bits > 64 || trace.width % lane_bits != 0 {
            return Err(SampleError::Lanes {
                width: trace.width,
                lane_bits,
            });
        }
        let limbs = trace.at(time)?;
        Ok((0..(trace.width / lane_bits) as usize)
            .map(|k| {
                let raw = bit_field(limbs, k * lane_bits as usize, lane_bits);
                crate::stimulus::from_bits(raw, lane_bits)
            })
            .collect())
    }
}

/// A VCD written time step by time step into `W` as it is produced (a
/// file holds nothing of it in memory; `Vec<u8>` collects it):
/// [`VcdWriter::new`] declares the variables, [`VcdWriter::sample`] adds
/// the values of one time (only those that changed are written),
/// [`VcdWriter::finish`] hands the writer back.
pub struct VcdWriter<W: Write> {
    out: W,
    widths: Vec<u32>,
    /// The identifier code of each variable.
    codes: Vec<String>,
    last: Vec<Option<i64>>,
}

/// The identifier code of variable `n`: base 94 over the printable
/// characters.
fn id_code(mut n: usize) -> String {
    let mut s = String::new();
    loop {
        s.push((b'!' + (n % 94) as u8) as char);
        n /= 94;
        if n == 0 {
            return s;
        }
    }
}

/// The declarations of `vars` in module `top` (see [`VcdWriter::new`]).
fn header<'a>(top: &str, vars: impl IntoIterator<Item = (&'a str, u32)>) -> (String, Vec<u32>) {
    let mut text = format!("$timescale 1ns $end\n$scope module {top} $end\n");
    let mut widths = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    for (n, (name, width)) in vars.into_iter().enumerate() {
        let parts: Vec<&str> = name.split('.').collect();
        let (scopes, leaf) = parts.split_at(parts.len() - 1);
        let common = open.iter().zip(scopes).take_while(|(a, b)| a == b).count();
        for _ in common..open.len() {
            text.push_str("$upscope $end\n");
        }
        open.truncate(common);
        for s in &scopes[common..] {
            writeln!(text, "$scope module {s} $end").unwrap();
            open.push(s);
        }
        writeln!(text, "$var reg {width} {} {} $end", id_code(n), leaf[0]).unwrap();
        widths.push(width);
    }
    for _ in 0..open.len() {
        text.push_str("$upscope $end\n");
    }
    text.push_str("$upscope $end\n$enddefinitions $end\n");
    (text, widths)
}

impl<W: Write> VcdWriter<W> {
    /// A VCD into `out` with module `top` holding `vars`: (name, width),
    /// the name below `top` with its scopes separated by dots (e.g.
    /// `g_row[0].g_col[1].u_pe.w`). A scope is opened once for a run of
    /// variables that share it, so list each scope's variables together.
    pub fn new<'a>(
        mut out: W,
        top: &str,
        vars: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> io::Result<VcdWriter<W>> {
        let (text, widths) = header(top, vars);
        out.write_all(text.as_bytes())?;
        Ok(VcdWriter {
            out,
            codes: (0..widths.len()).map(id_code).collect(),
            last: vec![None; widths.len()],
            widths,
        })
    }

    /// The values of every variable at `time`, in the order of
    /// [`VcdWriter::new`]'s variables.
    pub fn sample(&mut self, time: u64, values: impl IntoIterator<Item = i64>) -> io::Result<()> {
        writeln!(self.out, "#{time}")?;
        for (n, v) in values.into_iter().enumerate() {
            if self.last[n] != Some(v) {
                let width = self.widths[n];
                let bits = crate::stimulus::to_bits(v, width);
                let code = &self.codes[n];
                writeln!(self.out, "b{bits:0w$b} {code}", w = width as usize)?;
                self.last[n] = Some(v);
            }
        }
        Ok(())
    }

    /// The writer, everything written to it.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 130-bit bus (3, then bits 129 and 0 set at time 10) and a 4-bit
    /// variable that first changes at time 10.
    fn wide() -> String {
        let head = "$timescale 1ns $end
$scope module TOP $end
$scope module sa_top $end
$var wire 130 ! bus [129:0] $end
$var wire 4 \" late [3:0] $end
$upscope $end
$upscope $end
$enddefinitions $end
";
        let top_and_bottom = format!("b1{}1", "0".repeat(128));
        format!("{head}#0\nb11 !\n#10\nb1 \"\n{top_and_bottom} !\n")
    }

    #[test]
    fn values_wider_than_64_bits_are_read_lane_by_lane() {
        let wave = Waveform::parse(&wide()).unwrap();
        let bus = "TOP.sa_top.bus";
        assert_eq!(wave.width(bus), Some(130));
        // Before time 10: 3 (a short value is zero-extended).
        assert_eq!(wave.lanes(bus, 9, 26).unwrap(), [3, 0, 0, 0, 0]);
        // Bits 129 and 0: the top lane is its most negative value.
        assert_eq!(wave.lanes(bus, 10, 26).unwrap(), [1, 0, 0, 0, -(1 << 25)]);
        let mut tens = vec![0; 13];
        (tens[0], tens[12]) = (1, -512);
        assert_eq!(wave.lanes(bus, 10, 10).unwrap(), tens);
        for lane_bits in [65, 7, 0] {
            let e = SampleError::Lanes {
                width: 130,
                lane_bits,
            };
            assert_eq!(wave.lanes(bus, 10, lane_bits), Err(e));
        }
        assert_eq!(
            wave.sample(bus, 10),
            Err(SampleError::TooWide { width: 130 })
        );
    }

    #[test]
    fn a_missing_sample_is_an_error_not_zero() {
        let wave = Waveform::parse(&wide()).unwrap();
        let late = "TOP.sa_top.late";
        assert_eq!(wave.sample(late, 5), Err(SampleError::NoValue { time: 5 }));
        assert_eq!(wave.sample(late, 10), Ok(1));
        assert_eq!(
            wave.sample("TOP.sa_top.nothing", 10),
            Err(SampleError::NoSuchVariable)
        );
    }

    #[test]
    fn unknown_values_and_overlong_values_are_errors() {
        let text = wide();
        let head = text.split("#0").next().unwrap();
        for (change, says) in [
            ("b1x0 \"", "unknown value"),
            ("z\"", "unknown value"),
            ("b11111 \"", "5 digits for a 4-bit variable"),
            ("b1 ?", "undeclared id"),
        ] {
            let e = Waveform::parse(&format!("{head}#0\n{change}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{change}: {e}");
        }
    }
}
