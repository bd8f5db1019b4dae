//! A minimal VCD reader: enough of IEEE 1364 §18 to sample every variable
//! of a two-state simulation at given times.

use std::collections::HashMap;

/// The value history of every variable, by hierarchical name.
#[derive(Debug, Default)]
pub struct Waveform {
    /// name -> (id code, width)
    vars: HashMap<String, (String, u32)>,
    /// id code -> changes in time order
    changes: HashMap<String, Vec<(u64, u64)>>,
}

impl Waveform {
    pub fn parse(text: &str) -> Result<Waveform, String> {
        let mut wf = Waveform::default();
        let mut scope: Vec<String> = Vec::new();
        let mut time = 0u64;
        let mut tokens = text.split_ascii_whitespace();
        while let Some(tok) = tokens.next() {
            match tok {
                "$scope" => {
                    let _kind = tokens.next();
                    scope.push(tokens.next().ok_or("truncated $scope")?.to_string());
                }
                "$upscope" => {
                    scope.pop();
                }
                "$var" => {
                    let _kind = tokens.next();
                    let width: u32 = tokens
                        .next()
                        .ok_or("truncated $var")?
                        .parse()
                        .map_err(|e| format!("$var width: {e}"))?;
                    let id = tokens.next().ok_or("truncated $var")?.to_string();
                    let name = tokens.next().ok_or("truncated $var")?;
                    // An optional bit range follows the name; skip to $end.
                    for t in tokens.by_ref() {
                        if t == "$end" {
                            break;
                        }
                    }
                    let mut full = scope.join(".");
                    full.push('.');
                    full.push_str(name);
                    wf.vars.insert(full, (id, width));
                }
                "$comment" | "$date" | "$version" | "$timescale" | "$end" | "$enddefinitions"
                | "$dumpvars" | "$dumpall" | "$dumpon" | "$dumpoff" => {
                    if matches!(tok, "$comment" | "$date" | "$version" | "$timescale") {
                        for t in tokens.by_ref() {
                            if t == "$end" {
                                break;
                            }
                        }
                    }
                }
                _ if tok.starts_with('#') => {
                    time = tok[1..]
                        .parse()
                        .map_err(|e| format!("bad time {tok}: {e}"))?;
                }
                _ if tok.starts_with('b') || tok.starts_with('B') => {
                    let id = tokens.next().ok_or("vector change without id")?;
                    let bits = &tok[1..];
                    if bits.len() > 64 {
                        continue; // wide buses are not registers; only registers are sampled
                    }
                    if bits.contains(['x', 'X', 'z', 'Z']) {
                        return Err(format!("{id} has an unknown value ({bits}) at time {time}"));
                    }
                    let v =
                        u64::from_str_radix(bits, 2).map_err(|e| format!("value {tok}: {e}"))?;
                    wf.changes
                        .entry(id.to_string())
                        .or_default()
                        .push((time, v));
                }
                _ => {
                    let (v, id) = tok.split_at(1);
                    let v = match v {
                        "0" => 0,
                        "1" => 1,
                        _ => return Err(format!("unsupported value change {tok} at time {time}")),
                    };
                    wf.changes
                        .entry(id.to_string())
                        .or_default()
                        .push((time, v));
                }
            }
        }
        Ok(wf)
    }

    /// All variable names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(|s| s.as_str())
    }

    /// The signed value of `name` at `time` (the last change at or before it).
    pub fn sample(&self, name: &str, time: u64) -> Option<i64> {
        let (id, width) = self.vars.get(name)?;
        let ch = self.changes.get(id)?;
        let idx = ch.partition_point(|(t, _)| *t <= time);
        let raw = if idx == 0 { 0 } else { ch[idx - 1].1 };
        Some(if *width == 1 {
            raw as i64
        } else {
            crate::stimulus::from_bits(raw, *width)
        })
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
        let (rec, _) = crate::scenario::training_step(&cfg, 5, true);
        let snaps = rec.snapshots.unwrap();
        let wave = Waveform::parse(&write_snapshots(&snaps)).unwrap();
        let samples =
            crate::registers::compare(&wave, &snaps).unwrap_or_else(|_| panic!("mismatch"));
        assert!(samples > 0);
    }
}
