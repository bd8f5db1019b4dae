//! Register-level comparison: every register of the emulator's [`Array`]
//! against the same register in a Verilator VCD, cycle by cycle, and the
//! output ports as the VCD shows them; and the emulator's registers
//! written as a VCD as they are produced ([`SnapshotWriter`]). The names are the RTL's
//! hierarchical names below `sa_top` (from `sysgrad_hdl`'s name
//! functions); on a dense array they include both weights and the weight
//! stream of every PE, each PE's wave control, the control, w skew and w
//! deskew banks and the `w_q` output registers. [`check_coverage`] makes sure this
//! list is every register the RTL has ([`crate::flops`]), so none can go
//! unchecked.

use crate::compare::Mismatch;
use crate::flops::RtlRegister;
use crate::stimulus::{from_bits, to_bits};
use crate::vcd::{SampleError, VcdWriter, Waveform};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use sysgrad_config::ArrayConfig;
use sysgrad_emulator::{Array, CycleOutput, Watcher, Wave};
use sysgrad_hdl::{Bank, DelayBank, DenseBank};
use sysgrad_isa::wave::{control_bits, WaveField};

/// Why a register-level comparison failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegError {
    /// The VCD cannot be compared: it lacks a register or port, or has it
    /// at another shape, or without a value.
    #[error(transparent)]
    Missing(#[from] Missing),
    /// RTL and emulator hold different values.
    #[error("RTL and emulator differ: {0}")]
    Mismatch(Mismatch),
}

/// What the VCD lacks for a comparison.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    #[error("register {0} is not in the VCD")]
    Register(String),
    #[error("register {name} is {vcd} bits in the VCD, {emulator} in the emulator")]
    RegisterWidth {
        name: String,
        vcd: u32,
        emulator: u32,
    },
    #[error("register {name}, cycle {cycle}: {error}")]
    RegisterSample {
        name: String,
        cycle: usize,
        error: SampleError,
    },
    #[error("port {0} is not in the VCD")]
    Port(&'static str),
    #[error("port {port} has {vcd} lanes in the VCD, {emulator} in the emulator")]
    PortLanes {
        port: &'static str,
        vcd: usize,
        emulator: usize,
    },
    #[error("port {port}, cycle {cycle}: {error}")]
    PortSample {
        port: &'static str,
        cycle: usize,
        error: SampleError,
    },
}

/// The RTL's registers and the emulator's are not the same set with the
/// same widths ([`check_coverage`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} ({config})", self.problems().join("; "))]
pub struct CoverageError {
    /// RTL registers the comparison does not check.
    pub unchecked: Vec<String>,
    /// Emulator registers the RTL does not have.
    pub absent: Vec<String>,
    /// Registers both have, at different widths.
    pub widths: Vec<WidthDifference>,
    /// The configuration's tag.
    pub config: String,
}

/// A register the RTL and the emulator have at different widths.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} is {rtl} bits in the RTL, {emulator} in the emulator")]
pub struct WidthDifference {
    pub name: String,
    pub rtl: u32,
    pub emulator: u32,
}

impl CoverageError {
    /// One sentence for each kind of difference found.
    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.unchecked.is_empty() {
            problems.push(format!(
                "{} RTL register(s) the comparison does not check: {}",
                self.unchecked.len(),
                abbreviate(&self.unchecked)
            ));
        }
        if !self.absent.is_empty() {
            problems.push(format!(
                "{} emulator register(s) the RTL does not have: {}",
                self.absent.len(),
                abbreviate(&self.absent)
            ));
        }
        if !self.widths.is_empty() {
            let widths: Vec<String> = self.widths.iter().map(|w| w.to_string()).collect();
            problems.push(abbreviate(&widths));
        }
        problems
    }
}

/// How to read one register's value from the model.
type Reader = Box<dyn Fn(&Array) -> i64 + Send>;

/// One register: its RTL name below `sa_top`, its width and how to read it
/// from the model.
struct Reg {
    pub name: String,
    pub width: u32,
    pub read: Reader,
}

/// Every register of the array, named as the generator names it: the
/// PEs' ([`sysgrad_hdl::pe_registers`]), the delay banks' (and on a dense
/// array the control, w skew and w deskew banks') and the output
/// registers. A name the generator lists but the emulator has no register
/// for is left out, so that [`check_coverage`] reports it.
fn registers(a: &Array) -> Vec<Reg> {
    registers_of(&a.cfg())
}

/// [`registers`] of an array of `cfg`.
fn registers_of(cfg: &ArrayConfig) -> Vec<Reg> {
    let cfg = *cfg;
    let mut regs = pe_regs(&cfg);
    regs.extend(delay_regs(&cfg));
    regs.extend(dense_delay_regs(&cfg));
    regs.extend(output_regs(&cfg));
    if cfg.numbers().float().is_some() {
        // The emulator holds float bit patterns unsigned; the VCD reader
        // sign-extends the RTL's (signed) registers.
        regs = regs
            .into_iter()
            .map(|r| {
                let (read, width) = (r.read, r.width);
                Reg {
                    read: Box::new(move |a| as_sampled(read(a) as u64, width)),
                    ..r
                }
            })
            .collect();
    }
    regs
}

/// `outputs` as the RTL's ports read back (each lane sign-extended from
/// its width): the emulator's float lanes are unsigned bit patterns.
pub fn sampled_outputs(cfg: &ArrayConfig, outputs: &[CycleOutput]) -> Vec<CycleOutput> {
    if cfg.numbers().float().is_none() {
        return outputs.to_vec();
    }
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    let lanes = |v: &[i64], w: u32| v.iter().map(|&x| as_sampled(x as u64, w)).collect();
    outputs
        .iter()
        .map(|o| CycleOutput {
            y: lanes(&o.y, aw),
            dx: lanes(&o.dx, aw),
            dw: lanes(&o.dw, aw),
            w: lanes(&o.w, dw),
        })
        .collect()
}

/// A register of `width` bits holding the unsigned `u`, as the VCD reader
/// gives it: one bit as 0 or 1, wider ones sign-extended.
fn as_sampled(u: u64, width: u32) -> i64 {
    if width == 1 {
        u as i64 & 1
    } else {
        from_bits(to_bits(u as i64, width), width)
    }
}

/// The product registers (`prod_sum`, `prod_dw`) of an array without
/// pipelining (read for a configuration that has them only).
fn products(a: &Array) -> (&[i64], &[i64]) {
    match a {
        Array::None(n) => (&n.prod_sum, &n.prod_dw),
        Array::NoneDeferred(n) => (&n.prod_sum, &n.prod_dw),
        Array::NoneFloat(n) => (&n.prod_sum, &n.prod_dw),
        Array::Dense(_) | Array::DenseFloat(_) => {
            panic!("a product register read on a dense array")
        }
    }
}

/// `$body` with `$d` bound to the dense array of `$a`, whatever its
/// number format (read for a dense configuration only).
macro_rules! dense {
    ($a:expr, $d:ident => $body:expr) => {
        match $a {
            Array::Dense($d) => $body,
            Array::DenseFloat($d) => $body,
            _ => panic!("a register of the dense array read on another"),
        }
    };
}

/// How to read PE register `name` of PE `k` (`i * cols + j`) from the model.
fn pe_reader(name: &str, k: usize) -> Option<Reader> {
    let read: Reader = match name {
        "w" => Box::new(move |a| a.core().w[k]),
        "x" => Box::new(move |a| a.core().x[k]),
        "d" => Box::new(move |a| a.core().d[k]),
        "dv" => Box::new(move |a| a.core().dv[k] as i64),
        "psv" => Box::new(move |a| a.core().psv[k]),
        "psh" => Box::new(move |a| a.core().psh[k]),
        "dw" => Box::new(move |a| a.core().dw[k]),
        sysgrad_hdl::PROD_SUM => Box::new(move |a| products(a).0[k]),
        sysgrad_hdl::PROD_DW => Box::new(move |a| products(a).1[k]),
        "ws" => Box::new(move |a| dense!(a, d => d.ws[k])),
        "wp" => Box::new(move |a| dense!(a, d => d.wp[k])),
        // The stochastic-rounding generator, 32 bits read back as the VCD
        // reader gives them (sign-extended).
        sysgrad_hdl::SR_STATE => Box::new(move |a| {
            let c = a.cols();
            let state = a.sr_state(k / c, k % c).unwrap_or(0);
            as_sampled(u64::from(state), 32)
        }),
        _ => {
            let field = WaveField::ALL
                .into_iter()
                .find(|f| sysgrad_hdl::control_reg_name(*f) == name)?;
            Box::new(move |a| {
                let bits = field.bits(a.rows());
                as_sampled(dense!(a, d => wave_field(&d.ctl[k], field)), bits)
            })
        }
    };
    Some(read)
}

fn pe_regs(cfg: &ArrayConfig) -> Vec<Reg> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let mut regs = Vec::new();
    for i in 0..r {
        for j in 0..c {
            for (name, width) in sysgrad_hdl::pe_registers(cfg) {
                if let Some(read) = pe_reader(name, i * c + j) {
                    regs.push(Reg {
                        name: sysgrad_hdl::pe_reg_name(i, j, name),
                        width,
                        read,
                    });
                }
            }
        }
    }
    regs
}

/// `lanes` of a bank as registers named by [`sysgrad_hdl::delay_reg_name`].
fn bank_regs<B: Bank + Send + 'static>(
    bank: B,
    lanes: &[usize],
    width: u32,
    value: fn(&Array, B, usize, usize) -> i64,
) -> Vec<Reg> {
    let mut regs = Vec::new();
    for (lane, len) in lanes.iter().enumerate() {
        for stage in 0..*len {
            regs.push(Reg {
                name: sysgrad_hdl::delay_reg_name(bank, lane, stage),
                width,
                read: Box::new(move |a| value(a, bank, lane, stage)),
            });
        }
    }
    regs
}

fn delay_regs(cfg: &ArrayConfig) -> Vec<Reg> {
    sysgrad_hdl::delay_banks(cfg)
        .into_iter()
        .flat_map(|(bank, lanes)| bank_regs(bank, &lanes, bank.width(cfg), delay_value))
        .collect()
}

fn dense_delay_regs(cfg: &ArrayConfig) -> Vec<Reg> {
    sysgrad_hdl::dense_delay_banks(cfg)
        .into_iter()
        .flat_map(|(bank, lanes)| bank_regs(bank, &lanes, bank.width(cfg), dense_delay_value))
        .collect()
}

fn output_regs(cfg: &ArrayConfig) -> Vec<Reg> {
    let (r, c) = (cfg.rows(), cfg.cols());
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    let mut regs = Vec::new();
    let mut add = |which: &str, k: usize, width: u32, read: Reader| {
        regs.push(Reg {
            name: sysgrad_hdl::output_reg_name(cfg, which, k),
            width,
            read,
        })
    };
    for j in 0..c {
        add("y", j, aw, Box::new(move |a| a.core().y_q[j]));
    }
    for i in 0..r {
        add("dx", i, aw, Box::new(move |a| a.core().dx_q[i]));
    }
    if cfg.dense() {
        for j in 0..c {
            add("w", j, dw, Box::new(move |a| dense!(a, d => d.w_q[j])));
        }
    }
    regs
}

fn delay_value(a: &Array, bank: DelayBank, lane: usize, stage: usize) -> i64 {
    use DelayBank::*;
    match bank {
        XSkew => a.core().x_skew.stage(lane, stage),
        DySkew => {
            let (v, d) = a.core().dy_skew.stage(lane, stage);
            let bits = a.cfg().format().in_bits;
            // The RTL stores {valid, dy} in one register of DW+1 bits.
            from_bits(((v as u64) << bits) | to_bits(d, bits), bits + 1)
        }
        YDeskew => a.core().y_deskew.stage(lane, stage),
        DxDeskew => a.core().dx_deskew.stage(lane, stage),
    }
}

fn dense_delay_value(a: &Array, bank: DenseBank, lane: usize, stage: usize) -> i64 {
    dense!(a, d => match bank {
        DenseBank::CtlSkew => {
            let rows = a.rows();
            as_sampled(
                control_word(&d.ctl_skew.stage(lane, stage), rows),
                control_bits(rows),
            )
        }
        DenseBank::WSkew => d.w_skew.stage(lane, stage),
        DenseBank::WDeskew => d.w_deskew.stage(lane, stage),
    })
}

/// `field` of the emulator's wave, as the unsigned bits of its register
/// (the ports are that wide, so an in-range stimulus loses nothing).
fn wave_field(w: &Wave, field: WaveField) -> u64 {
    match field {
        WaveField::Op => w.op.into(),
        WaveField::Swap => w.swap.into(),
        WaveField::Update => w.update.into(),
        WaveField::Lr => w.lr.into(),
        WaveField::Load => w.load.into(),
        WaveField::LoadRow => w.load_row.into(),
    }
}

/// The control word `{op, swap, update, lr, load, load_row}` of `w`, laid
/// out as [`WaveField::lsb`] says.
fn control_word(w: &Wave, rows: usize) -> u64 {
    WaveField::ALL
        .into_iter()
        .map(|f| to_bits(wave_field(w, f) as i64, f.bits(rows)) << f.lsb(rows))
        .fold(0, |word, bits| word | bits)
}

/// The emulator's registers: name below `sa_top` and width.
pub fn emulator_registers(cfg: &ArrayConfig) -> Vec<RtlRegister> {
    registers(&Array::new(*cfg))
        .into_iter()
        .map(|r| RtlRegister {
            name: r.name,
            width: r.width,
        })
        .collect()
}

/// Checks that the RTL's registers (`rtl`, from [`crate::flops`]) and the
/// emulator's are the same set with the same widths. `Err` names every
/// register only one side has and every width that differs; `Ok` is the
/// number of registers.
pub fn check_coverage(rtl: &[RtlRegister], cfg: &ArrayConfig) -> Result<usize, CoverageError> {
    let emu = emulator_registers(cfg);
    let widths = |regs: &[RtlRegister]| -> BTreeMap<String, u32> {
        regs.iter().map(|r| (r.name.clone(), r.width)).collect()
    };
    let (rtl, emu) = (widths(rtl), widths(&emu));
    let only_in = |a: &BTreeMap<String, u32>, b: &BTreeMap<String, u32>| -> Vec<String> {
        a.keys().filter(|n| !b.contains_key(*n)).cloned().collect()
    };
    let error = CoverageError {
        unchecked: only_in(&rtl, &emu),
        absent: only_in(&emu, &rtl),
        widths: rtl
            .iter()
            .filter_map(|(name, &rtl)| {
                let emulator = *emu.get(name)?;
                (emulator != rtl).then(|| WidthDifference {
                    name: name.clone(),
                    rtl,
                    emulator,
                })
            })
            .collect(),
        config: cfg.tag(),
    };
    if error.unchecked.is_empty() && error.absent.is_empty() && error.widths.is_empty() {
        Ok(rtl.len())
    } else {
        Err(error)
    }
}

/// The first few items of a list, and how many more there are.
fn abbreviate<S: AsRef<str>>(items: &[S]) -> String {
    const SHOWN: usize = 8;
    let mut s = items
        .iter()
        .take(SHOWN)
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        s.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    s
}

/// The VCD's variables below `sa_top`, by their name relative to it
/// (e.g. "g_row[0].g_col[1].u_pe.w" -> "TOP.sa_top.g_row[0].g_col[1].u_pe.w").
fn below_top(wave: &Waveform) -> HashMap<&str, &str> {
    wave.names()
        .filter_map(|full| full.split_once("sa_top.").map(|(_, rel)| (rel, full)))
        .collect()
}

/// VCD time of the pre-edge sample of cycle `t` (the harness's convention).
fn vcd_time(t: usize) -> u64 {
    10 * t as u64
}

/// The emulator's registers written as a VCD as they are produced, one
/// snapshot (one cycle) at a time, with the RTL's hierarchy, so the model
/// can be looked at in a waveform viewer beside the RTL. Cycle t is at
/// time 10t, like the Verilator harness's pre-edge sample. Hand it to a
/// `Driver` ([`SnapshotWriter::watcher`]) and memory does not grow with
/// the run.
pub struct SnapshotWriter<W: Write> {
    regs: Vec<Reg>,
    vcd: VcdWriter<W>,
    cycle: usize,
}

impl<W: Write> SnapshotWriter<W> {
    /// The VCD of `cfg`'s array into `out`: its declarations, no cycle yet.
    pub fn new(out: W, cfg: &ArrayConfig) -> io::Result<SnapshotWriter<W>> {
        let regs = registers_of(cfg);
        let vcd = VcdWriter::new(
            out,
            "sa_top",
            regs.iter().map(|r| (r.name.as_str(), r.width)),
        )?;
        Ok(SnapshotWriter {
            regs,
            vcd,
            cycle: 0,
        })
    }

    /// The registers of the next cycle (before its edge).
    pub fn snapshot(&mut self, a: &Array) -> io::Result<()> {
        let time = vcd_time(self.cycle);
        self.cycle += 1;
        self.vcd.sample(time, self.regs.iter().map(|r| (r.read)(a)))
    }

    /// The writer, every cycle written to it.
    pub fn finish(self) -> io::Result<W> {
        self.vcd.finish()
    }
}

impl<W: Write + Send + 'static> SnapshotWriter<W> {
    /// A `Driver` watcher writing every cycle into this writer, shared
    /// with the caller, who takes it back once the driver is done
    /// ([`Driver::unwatch`](sysgrad_emulator::Driver::unwatch) or dropped):
    /// the first write error stops the writing and is kept for it.
    pub fn watcher(shared: Arc<Mutex<Streamed<W>>>) -> Watcher {
        Box::new(move |a: &Array| {
            let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
            if s.error.is_none() {
                s.error = s.writer.snapshot(a).err();
            }
        })
    }
}

/// A [`SnapshotWriter`] being fed by a `Driver`, and the first write error.
pub struct Streamed<W: Write> {
    pub writer: SnapshotWriter<W>,
    pub error: Option<io::Error>,
}

impl<W: Write> Streamed<W> {
    pub fn new(writer: SnapshotWriter<W>) -> Arc<Mutex<Streamed<W>>> {
        Arc::new(Mutex::new(Streamed {
            writer,
            error: None,
        }))
    }

    /// The writer with every cycle, or the first error.
    pub fn finish(self) -> io::Result<W> {
        match self.error {
            Some(e) => Err(e),
            None => self.writer.finish(),
        }
    }
}

/// Writes the emulator's register snapshots (one per cycle, as recorded by
/// a `Driver` with snapshots) as a VCD, in memory (see [`SnapshotWriter`]
/// for one written as it is produced).
pub fn write_snapshots(snapshots: &[Array]) -> String {
    let Some(first) = snapshots.first() else {
        return String::new();
    };
    let mut w = SnapshotWriter::new(Vec::new(), &first.cfg()).expect("writing to memory");
    for snap in snapshots {
        w.snapshot(snap).expect("writing to memory");
    }
    String::from_utf8(w.finish().expect("writing to memory")).expect("a VCD is ASCII")
}

/// Compares every register in every cycle; returns the number of samples.
/// A register the VCD lacks, or whose width there differs, or that has no
/// value in some cycle is an error naming it (and the cycle).
pub fn compare(wave: &Waveform, snapshots: &[Array]) -> Result<usize, RegError> {
    let Some(first) = snapshots.first() else {
        return Ok(0);
    };
    let index = below_top(wave);
    let regs = registers(first);
    let mut resolved = Vec::with_capacity(regs.len());
    for reg in &regs {
        let full = *index
            .get(reg.name.as_str())
            .ok_or_else(|| Missing::Register(reg.name.clone()))?;
        let width = wave.width(full).unwrap_or(0);
        if width != reg.width {
            return Err(Missing::RegisterWidth {
                name: reg.name.clone(),
                vcd: width,
                emulator: reg.width,
            }
            .into());
        }
        resolved.push((reg, full));
    }
    for (t, snap) in snapshots.iter().enumerate() {
        for (reg, full) in &resolved {
            let got = wave
                .sample(full, vcd_time(t))
                .map_err(|error| Missing::RegisterSample {
                    name: reg.name.clone(),
                    cycle: t,
                    error,
                })?;
            let expected = (reg.read)(snap);
            if got != expected {
                return Err(RegError::Mismatch(Mismatch {
                    cycle: t,
                    signal: reg.name.clone(),
                    expected,
                    got,
                }));
            }
        }
    }
    Ok(snapshots.len() * resolved.len())
}

/// The emulator's lanes of output port `port`.
fn port_lanes<'a>(out: &'a CycleOutput, port: &str) -> &'a [i64] {
    match port {
        "y_out" => &out.y,
        "dx_out" => &out.dx,
        "dw_out" => &out.dw,
        "w_out" => &out.w,
        other => unreachable!("sa_top has no output {other}"),
    }
}

/// Compares the output ports as the VCD shows them (packed, usually far
/// wider than 64 bits) with the emulator's outputs, lane by lane, every
/// cycle: a second reading of the ports, independent of the harness's
/// port trace. Returns the number of lanes compared.
pub fn compare_ports(
    wave: &Waveform,
    cfg: &ArrayConfig,
    outputs: &[CycleOutput],
) -> Result<usize, RegError> {
    let index = below_top(wave);
    let (dw, aw) = (cfg.format().in_bits, cfg.format().acc_bits);
    let mut ports = Vec::new();
    for (port, bits) in [("y_out", aw), ("dx_out", aw), ("dw_out", aw), ("w_out", dw)] {
        let full = *index.get(port).ok_or(Missing::Port(port))?;
        ports.push((port, full, bits));
    }
    let mut lanes = 0;
    // Cycle by cycle, so that the first mismatch reported is the earliest.
    for (t, out) in outputs.iter().enumerate() {
        for &(port, full, bits) in &ports {
            let got = wave
                .lanes(full, vcd_time(t), bits)
                .map_err(|error| Missing::PortSample {
                    port,
                    cycle: t,
                    error,
                })?;
            let expected = port_lanes(out, port);
            if got.len() != expected.len() {
                return Err(Missing::PortLanes {
                    port,
                    vcd: got.len(),
                    emulator: expected.len(),
                }
                .into());
            }
            if let Some(k) = (0..got.len()).find(|&k| got[k] != expected[k]) {
                return Err(RegError::Mismatch(Mismatch {
                    cycle: t,
                    signal: format!("{port}[{k}] (VCD)"),
                    expected: expected[k],
                    got: got[k],
                }));
            }
            lanes += got.len();
        }
    }
    Ok(lanes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The control word is `{op, swap, update, lr, load, load_row}` as
    /// ARCHITECTURE.md writes it (op on top), read back signed as the VCD
    /// reader reads a 14-bit register of a 4-row array (RB = 2).
    #[test]
    fn the_control_word_is_the_concatenation_of_the_fields() {
        let w = Wave {
            op: 0b101,
            swap: true,
            update: false,
            lr: 0b101010,
            load: true,
            load_row: 0b11,
        };
        // Grouped by field: op, swap, update, lr, load, load_row.
        #[allow(clippy::unusual_byte_groupings)]
        let word = 0b101_1_0_101010_1_11;
        assert_eq!(control_word(&w, 4), word);
        assert_eq!(control_bits(4), 14);
        assert_eq!(as_sampled(word, 14), word as i64 - (1 << 14));
        assert_eq!(as_sampled(1, 1), 1);
    }

    /// Every register the generator names for a dense PE has a reader.
    #[test]
    fn every_dense_pe_register_is_read() {
        use sysgrad_config::Pipelining;
        let cfg = ArrayConfig::default_16x16()
            .with_pipelining(Pipelining::Dense)
            .unwrap();
        for (name, _) in sysgrad_hdl::pe_registers(&cfg) {
            assert!(pe_reader(name, 0).is_some(), "no reader for {name}");
        }
        let per_pe = sysgrad_hdl::pe_registers(&cfg).len();
        assert_eq!(pe_regs(&cfg).len(), per_pe * cfg.rows() * cfg.cols());
    }

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
            let samples = compare(&wave, &snaps).unwrap_or_else(|_| panic!("mismatch"));
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
        match compare(&wave, &snaps) {
            Err(RegError::Missing(m)) => assert_eq!(
                m.to_string(),
                "register g_row[0].g_col[0].u_pe.w, cycle 0: has no value at VCD time 0 \
                 (no change at or before it)"
            ),
            _ => panic!("a missing sample went unnoticed"),
        }
    }
}
