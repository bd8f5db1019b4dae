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

    /// The first variable whose name ends with `suffix` (after a `.`).
    pub fn find(&self, suffix: &str) -> Option<&str> {
        let dotted = format!(".{suffix}");
        self.vars
            .keys()
            .find(|k| k.ends_with(&dotted))
            .map(|s| s.as_str())
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
