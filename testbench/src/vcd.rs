//! A minimal VCD reader: enough of IEEE 1364 §18 to sample every variable
//! of a two-state simulation at given times, at any width (ports of many
//! lanes are far wider than 64 bits).

use std::collections::HashMap;

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

/// Why a variable could not be sampled; the caller names the register and
/// the cycle (see `registers::compare`).
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
    fn push(&mut self, time: u64, bits: &str) -> Result<(), String> {
        if bits.len() > self.width as usize {
            return Err(format!(
                "{} digits for a {}-bit variable at time {time}",
                bits.len(),
                self.width
            ));
        }
        let at = self.limbs.len();
        self.limbs.resize(at + self.words, 0);
        for (k, digit) in bits.bytes().rev().enumerate() {
            match digit {
                b'0' => {}
                b'1' => self.limbs[at + k / 64] |= 1 << (k % 64),
                b'x' | b'X' | b'z' | b'Z' => {
                    return Err(format!("an unknown value ({bits}) at time {time}"))
                }
                _ => return Err(format!("bad value digit in {bits} at time {time}")),
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
    pub fn parse(text: &str) -> Result<Waveform, String> {
        let mut wf = Waveform::default();
        let mut scope: Vec<&str> = Vec::new();
        let mut time = 0u64;
        let mut tokens = text.split_ascii_whitespace();
        while let Some(tok) = tokens.next() {
            match tok {
                "$scope" => {
                    let _kind = tokens.next();
                    scope.push(tokens.next().ok_or("truncated $scope")?);
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
                    time = tok[1..]
                        .parse()
                        .map_err(|e| format!("bad time {tok}: {e}"))?;
                }
                _ if tok.starts_with(['b', 'B']) => {
                    let id = tokens.next().ok_or("vector change without id")?;
                    wf.change(id, time, &tok[1..])?;
                }
                _ if tok.starts_with(['0', '1', 'x', 'X', 'z', 'Z']) => {
                    let (v, id) = tok.split_at(1);
                    wf.change(id, time, v)?;
                }
                _ => return Err(format!("unsupported value change {tok} at time {time}")),
            }
        }
        Ok(wf)
    }

    /// `$var kind width id name [range] $end`, in the current scope.
    fn declare<'a>(
        &mut self,
        scope: &[&str],
        tokens: &mut impl Iterator<Item = &'a str>,
    ) -> Result<(), String> {
        let _kind = tokens.next();
        let width: u32 = tokens
            .next()
            .ok_or("truncated $var")?
            .parse()
            .map_err(|e| format!("$var width: {e}"))?;
        let id = tokens.next().ok_or("truncated $var")?;
        let name = tokens.next().ok_or("truncated $var")?;
        // An optional bit range follows the name; skip to $end.
        tokens.find(|t| *t == "$end");
        let full = format!("{}.{name}", scope.join("."));
        let index = match self.ids.get(id) {
            Some(&k) if self.traces[k].width == width => k,
            Some(&k) => {
                return Err(format!(
                    "{full} is declared {width} bits wide, but its id {id} is {} bits",
                    self.traces[k].width
                ))
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

    fn change(&mut self, id: &str, time: u64, bits: &str) -> Result<(), String> {
        let k = *self
            .ids
            .get(id)
            .ok_or_else(|| format!("value change at time {time} for undeclared id {id}"))?;
        self.traces[k].push(time, bits).map_err(|e| {
            let name = self.vars.iter().find(|(_, v)| **v == k).map(|(n, _)| n);
            format!("{} (id {id}) has {e}", name.map_or("?", |n| n.as_str()))
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

/// Writes the emulator's register snapshots (one per cycle, as recorded by
/// a `Driver` with snapshots) as a VCD with the RTL's hierarchy, so the
/// model can be looked at in a waveform viewer beside the RTL. Cycle t is
/// at time 10t, like the Verilator harness's pre-edge sample.
pub fn write_snapshots(snapshots: &[sysgrad_emulator::Array]) -> String {
    use std::fmt::Write;
    let Some(first) = snapshots.first() else {
        return String::new();
    };
    let regs = crate::registers::registers(first);
    // Identifier codes: base-94 over the printable characters.
    let code = |mut n: usize| {
        let mut s = String::new();
        loop {
            s.push((b'!' + (n % 94) as u8) as char);
            n /= 94;
            if n == 0 {
                return s;
            }
        }
    };
    let mut out = String::from("$timescale 1ns $end\n$scope module sa_top $end\n");
    // Registers are listed scope by scope; open and close scopes as the
    // dotted prefixes change.
    let mut open: Vec<&str> = Vec::new();
    for (n, reg) in regs.iter().enumerate() {
        let parts: Vec<&str> = reg.name.split('.').collect();
        let (scopes, leaf) = parts.split_at(parts.len() - 1);
        let common = open.iter().zip(scopes).take_while(|(a, b)| a == b).count();
        for _ in common..open.len() {
            out.push_str("$upscope $end\n");
        }
        open.truncate(common);
        for s in &scopes[common..] {
            writeln!(out, "$scope module {s} $end").unwrap();
            open.push(s);
        }
        writeln!(out, "$var reg {} {} {} $end", reg.width, code(n), leaf[0]).unwrap();
    }
    for _ in 0..open.len() {
        out.push_str("$upscope $end\n");
    }
    out.push_str("$upscope $end\n$enddefinitions $end\n");
    let mut last: Vec<Option<i64>> = vec![None; regs.len()];
    for (t, snap) in snapshots.iter().enumerate() {
        writeln!(out, "#{}", 10 * t).unwrap();
        for (n, reg) in regs.iter().enumerate() {
            let v = (reg.read)(snap);
            if last[n] != Some(v) {
                let bits = crate::stimulus::to_bits(v, reg.width);
                writeln!(out, "b{:0w$b} {}", bits, code(n), w = reg.width as usize).unwrap();
                last[n] = Some(v);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer's output reads back through the parser to the same values.
    #[test]
    fn snapshots_round_trip_through_the_reader() {
        let cfg = sysgrad_config::ArrayConfig::new(
            2,
            3,
            sysgrad_config::Backward::Interleaved,
            sysgrad_config::NumberFormat {
                in_bits: 8,
                acc_bits: 16,
                frac_bits: 4,
            },
        )
        .unwrap();
        for cfg in [
            cfg,
            cfg.with_pipelining(sysgrad_config::Pipelining::Dense)
                .unwrap(),
        ] {
            let (rec, _) = crate::scenario::training_step(&cfg, 5, true);
            let snaps = rec.snapshots.unwrap();
            let wave = Waveform::parse(&write_snapshots(&snaps)).unwrap();
            let samples =
                crate::registers::compare(&wave, &snaps).unwrap_or_else(|_| panic!("mismatch"));
            assert!(samples > 0);
        }
    }

    /// A register without a value at some cycle fails the comparison with
    /// its name and the cycle, instead of reading as 0.
    #[test]
    fn a_register_without_a_sample_is_named() {
        let cfg = sysgrad_config::ArrayConfig::default_16x16();
        let (rec, _) = crate::scenario::training_step(&cfg, 2, true);
        let snaps = rec.snapshots.unwrap();
        let text = write_snapshots(&snaps);
        // The first register (id `!`) loses its value at time 0.
        let first_value = text
            .lines()
            .find(|l| l.ends_with(" !") && l.starts_with('b'));
        let text = text.replacen(&format!("{}\n", first_value.unwrap()), "", 1);
        let wave = Waveform::parse(&text).unwrap();
        match crate::registers::compare(&wave, &snaps) {
            Err(crate::registers::RegError::Missing(m)) => assert_eq!(
                m,
                "register g_row[0].g_col[0].u_pe.w, cycle 0: has no value at VCD time 0 \
                 (no change at or before it)"
            ),
            _ => panic!("a missing sample went unnoticed"),
        }
    }

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
            let e = Waveform::parse(&format!("{head}#0\n{change}\n")).unwrap_err();
            assert!(e.contains(says), "{change}: {e}");
        }
    }
}
