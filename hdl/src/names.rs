//! Hierarchical names of the registers below `sa_top`, so that the
//! co-simulation can find each emulator register in a waveform: the PEs'
//! ([`pe_registers`], [`pe_reg_name`]), the delay banks' ([`delay_banks`]
//! and, on a dense array, [`dense_delay_banks`]; [`delay_reg_name`]) and
//! the output registers' ([`output_reg_name`]).
//!
//! Nothing here lists a register again: every name, width and path is
//! read from the modules the generator builds for the configuration (the
//! PE's registers, the generate blocks and instances of `sa_top` and
//! `sa_skew`), with widths evaluated at `sa_top`'s parameter values.

use crate::array::core::{PE_MODULE, TOP_MODULE};
use crate::expr::intern;
use crate::ir::*;
use crate::skew::{lane_len, SKEW_MODULE};
use std::sync::OnceLock;
use sysgrad_config::ArrayConfig;

pub use crate::array::core::{Bank, DelayBank};
pub use crate::array::dense::{control_reg_name, DenseBank};
pub use crate::array::none::{PROD_DW, PROD_SUM};

/// `sa_top`'s parameter values: what every width below it is evaluated at.
fn env(top: &Module) -> impl Fn(&str) -> Option<i64> + '_ {
    move |name| top.param_value(name)
}

/// The registers of `items` (a module body) with their paths below it
/// (`<block>.<reg>` inside a generate-if, whichever branch `env` takes)
/// and widths.
fn registers(
    items: &[Item],
    prefix: &str,
    env: &dyn Fn(&str) -> Option<i64>,
    out: &mut Vec<(String, u32)>,
) {
    for it in items {
        match it {
            Item::Net(d) if d.kind == NetKind::Reg => {
                let bits = d
                    .width
                    .eval(env)
                    .unwrap_or_else(|| panic!("the width of {} is not constant", d.net.name()));
                out.push((format!("{prefix}{}", d.net.name()), bits as u32));
            }
            Item::GenIf {
                cond,
                label,
                then,
                els,
            } => {
                let taken = cond
                    .eval(env)
                    .unwrap_or_else(|| panic!("generate condition {cond} is not constant"));
                let body = if taken != 0 { then } else { els };
                registers(body, &format!("{prefix}{label}."), env, out);
            }
            _ => {}
        }
    }
}

/// The registers of every PE with their widths in bits, in declaration
/// order, as the PE of `cfg` declares them (e.g. `w, x, d, dv, psv, psh,
/// dw` on a `none` array, with the product registers below `g_prod` if it
/// has a multiplier register; a dense PE adds its shadow weight `ws`, its
/// weight stream slot `wp` and the control of the last wave, `c_op ..
/// c_row`, see [`control_reg_name`]).
pub fn pe_registers(cfg: &ArrayConfig) -> Vec<(&'static str, u32)> {
    let (pe, top) = crate::design::array(cfg);
    let mut regs = Vec::new();
    registers(&pe.items, "", &env(&top), &mut regs);
    regs.into_iter().map(|(n, w)| (intern(&n), w)).collect()
}

/// How to reach an item of a module: the generate blocks around it (each
/// with its loop variable if it is a loop) and the item's name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Path {
    blocks: Vec<(String, bool)>,
    leaf: String,
}

impl Path {
    /// The path with the loop indices `index` filled in, in order.
    fn at(&self, index: &[usize]) -> String {
        let mut k = index.iter();
        let mut s = String::new();
        for (label, is_loop) in &self.blocks {
            s.push_str(label);
            if *is_loop {
                let i = k.next().expect("an index per loop");
                s.push_str(&format!("[{i}]"));
            }
            s.push('.');
        }
        assert!(k.next().is_none(), "more indices than loops in {self:?}");
        s.push_str(&self.leaf);
        s
    }
}

/// The path of the first item of `items` for which `is` holds.
fn find(items: &[Item], is: &dyn Fn(&Item) -> Option<String>) -> Option<Path> {
    for it in items {
        if let Some(leaf) = is(it) {
            return Some(Path {
                blocks: vec![],
                leaf,
            });
        }
        let (label, is_loop, bodies): (&str, bool, Vec<&Vec<Item>>) = match it {
            Item::GenFor { label, body, .. } => (label, true, vec![body]),
            Item::GenIf {
                label, then, els, ..
            } => (label, false, vec![then, els]),
            _ => continue,
        };
        for body in bodies {
            if let Some(mut p) = find(body, is) {
                p.blocks.insert(0, (label.to_string(), is_loop));
                return Some(p);
            }
        }
    }
    None
}

fn instance_of<'a>(module: &'a str) -> impl Fn(&Item) -> Option<String> + 'a {
    move |it| match it {
        Item::Instance(inst) if inst.module == module => Some(inst.name.clone()),
        _ => None,
    }
}

fn reg_named<'a>(name: &'a str) -> impl Fn(&Item) -> Option<String> + 'a {
    move |it| match it {
        Item::Net(d) if d.kind == NetKind::Reg && d.net.name() == name => Some(name.to_string()),
        _ => None,
    }
}

/// The PE instance's path in `sa_top`: the same in every configuration
/// (only the tops' parameter defaults depend on it), read once.
fn pe_path() -> &'static Path {
    static PATH: OnceLock<Path> = OnceLock::new();
    PATH.get_or_init(|| {
        let (_, top) = crate::design::array(&ArrayConfig::default_16x16());
        find(&top.items, &instance_of(PE_MODULE))
            .unwrap_or_else(|| panic!("{TOP_MODULE} has no {PE_MODULE} instance"))
    })
}

/// Register `reg` of PE(i, j), e.g. `g_row[1].g_col[2].u_pe.psv`.
pub fn pe_reg_name(i: usize, j: usize, reg: &str) -> String {
    format!("{}.{reg}", pe_path().at(&[i, j]))
}

/// The stage register of a skew bank's lane, `g_lane[k].g_stage[s].r`,
/// read once from `sa_skew`.
fn stage_path() -> &'static Path {
    static PATH: OnceLock<Path> = OnceLock::new();
    PATH.get_or_init(|| {
        let skew = crate::skew::module();
        let regs: Vec<String> = {
            let mut v = Vec::new();
            collect_regs(&skew.items, &mut v);
            v
        };
        assert_eq!(regs.len(), 1, "{SKEW_MODULE} has one register per stage");
        let path = find(&skew.items, &reg_named(&regs[0])).expect("the stage register");
        path
    })
}

fn collect_regs(items: &[Item], out: &mut Vec<String>) {
    for it in items {
        match it {
            Item::Net(d) if d.kind == NetKind::Reg => out.push(d.net.name().to_string()),
            Item::GenFor { body, .. } => collect_regs(body, out),
            Item::GenIf { then, els, .. } => {
                collect_regs(then, out);
                collect_regs(els, out);
            }
            _ => {}
        }
    }
}

/// A bank as `sa_top` instantiates it: lanes, delay direction and width.
struct BankInstance {
    stem: String,
    lanes: usize,
    deskew: bool,
    width: u32,
}

/// Every `sa_skew` instance of `top`, in order.
fn bank_instances(top: &Module) -> Vec<BankInstance> {
    let env = env(top);
    let mut out = Vec::new();
    fn walk(items: &[Item], env: &dyn Fn(&str) -> Option<i64>, out: &mut Vec<BankInstance>) {
        for it in items {
            match it {
                Item::Instance(inst) if inst.module == SKEW_MODULE => {
                    let param = |p: &str| {
                        inst.params
                            .iter()
                            .find(|(n, _)| n == p)
                            .and_then(|(_, e)| e.eval(env))
                            .unwrap_or_else(|| panic!("{}: no constant {p}", inst.name))
                    };
                    out.push(BankInstance {
                        stem: inst.name.trim_start_matches("u_").to_string(),
                        lanes: param("LANES") as usize,
                        deskew: param("DESKEW") != 0,
                        width: param("W") as u32,
                    });
                }
                Item::GenFor { body, .. } => walk(body, env, out),
                Item::GenIf { then, els, .. } => {
                    walk(then, env, out);
                    walk(els, env, out);
                }
                _ => {}
            }
        }
    }
    walk(&top.items, &env, &mut out);
    out
}

const DELAY_BANKS: [DelayBank; 4] = [
    DelayBank::XSkew,
    DelayBank::DySkew,
    DelayBank::YDeskew,
    DelayBank::DxDeskew,
];
const DENSE_BANKS: [DenseBank; 3] = [DenseBank::CtlSkew, DenseBank::WSkew, DenseBank::WDeskew];

/// The banks of `cfg`'s `sa_top` among `kinds`, with the number of delay
/// registers per lane and the width of a register.
fn banks_of<B: Bank>(cfg: &ArrayConfig, kinds: &[B]) -> Vec<(B, Vec<usize>, u32)> {
    let (_, top) = crate::design::array(cfg);
    bank_instances(&top)
        .into_iter()
        .filter_map(|b| {
            let kind = *kinds.iter().find(|k| k.stem() == b.stem)?;
            let lanes = (0..b.lanes)
                .map(|k| lane_len(b.lanes, k, b.deskew))
                .collect();
            Some((kind, lanes, b.width))
        })
        .collect()
}

/// Each bank both arrays have with the number of delay registers per lane
/// (the output registers after the deskews are not included: see
/// [`output_reg_name`]).
pub fn delay_banks(cfg: &ArrayConfig) -> Vec<(DelayBank, Vec<usize>)> {
    banks_of(cfg, &DELAY_BANKS)
        .into_iter()
        .map(|(b, lanes, _)| (b, lanes))
        .collect()
}

/// The banks only a dense array has, with the number of delay registers
/// per lane (none on a `none` array; the output registers `w_q` are not
/// included).
pub fn dense_delay_banks(cfg: &ArrayConfig) -> Vec<(DenseBank, Vec<usize>)> {
    banks_of(cfg, &DENSE_BANKS)
        .into_iter()
        .map(|(b, lanes, _)| (b, lanes))
        .collect()
}

/// The width of a register of `bank` in `cfg`'s array.
fn bank_width<B: Bank + std::fmt::Debug>(cfg: &ArrayConfig, bank: B, kinds: &[B]) -> u32 {
    banks_of(cfg, kinds)
        .into_iter()
        .find(|(b, ..)| b.stem() == bank.stem())
        .map(|(.., w)| w)
        .unwrap_or_else(|| panic!("{} has no bank {bank:?}", cfg.tag()))
}

impl DelayBank {
    /// Bits per register, as `sa_top` instantiates the bank (x DW, dy
    /// DW+1 `{valid, dy}`, y and dX AW).
    pub fn width(self, cfg: &ArrayConfig) -> u32 {
        bank_width(cfg, self, &DELAY_BANKS)
    }
}

impl DenseBank {
    /// Bits per register: the control word (lane bits packed as
    /// `WaveField::lsb` says) or DW.
    pub fn width(self, cfg: &ArrayConfig) -> u32 {
        bank_width(cfg, self, &DENSE_BANKS)
    }
}

/// Register `stage` (0 = nearest the input) of `lane` in `bank` (a
/// [`DelayBank`] or a [`DenseBank`]).
pub fn delay_reg_name(bank: impl Bank, lane: usize, stage: usize) -> String {
    format!("{}.{}", bank.instance(), stage_path().at(&[lane, stage]))
}

/// The output register of lane `k` of `"y"` (`y_q[k]`, after the y
/// deskew), `"dx"` (`dx_q[k]`) or, on a dense array, `"w"` (`w_q[k]`,
/// after the w deskew; DW bits, the others AW), as `cfg`'s `sa_top`
/// declares it.
pub fn output_reg_name(cfg: &ArrayConfig, which: &str, k: usize) -> String {
    let (_, top) = crate::design::array(cfg);
    let reg = format!("{which}_q");
    let path = find(&top.items, &reg_named(&reg))
        .unwrap_or_else(|| panic!("no output register bank {which} on {}", cfg.tag()));
    let lanes = top
        .items
        .iter()
        .find_map(|it| match it {
            Item::GenFor { label, count, .. } if *label == path.blocks[0].0 => {
                count.eval(&env(&top))
            }
            _ => None,
        })
        .expect("a constant lane count") as usize;
    assert!(k < lanes, "{which} has {lanes} lanes, not {}", k + 1);
    path.at(&[k])
}

#[cfg(test)]
mod tests {
    use super::*;
    use sysgrad_config::Pipelining;

    fn text(cfg: &ArrayConfig, name: &str) -> String {
        let module = crate::design::design(cfg)
            .modules()
            .into_iter()
            .find(|m| format!("{}.v", m.name) == name)
            .unwrap();
        crate::emit::module(&module)
    }

    #[test]
    fn names_follow_the_generated_hierarchy() {
        let cfg = ArrayConfig::default_16x16();
        let top = text(&cfg, "sa_top.v");
        let skew = text(&cfg, "sa_skew.v");
        for needle in [
            "begin : g_y_out",
            "reg [AW-1:0] y_q;",
            "begin : g_dx_out",
            "reg [AW-1:0] dx_q;",
        ] {
            assert!(top.contains(needle), "sa_top lacks {needle}");
        }
        for bank in ["g_xskew", "g_dyskew", "g_ydeskew", "g_dxdeskew"] {
            let inst = format!("u_{}", &bank[2..]);
            assert!(
                top.contains(&format!("begin : {bank}")) && top.contains(&format!(") {inst} ("))
            );
        }
        for needle in ["begin : g_lane", "begin : g_stage", "reg [W-1:0] r;"] {
            assert!(skew.contains(needle), "sa_skew lacks {needle}");
        }
        assert_eq!(output_reg_name(&cfg, "dx", 3), "g_dx_out[3].dx_q");
        let banks = delay_banks(&cfg);
        assert_eq!(banks.iter().map(|b| b.0).collect::<Vec<_>>(), DELAY_BANKS);
        assert_eq!(banks[0].1[15], 15);
        assert_eq!(banks[2].1[0], 15);
        assert_eq!(DelayBank::DySkew.width(&cfg), 17);
        assert_eq!(DelayBank::YDeskew.width(&cfg), 40);
        assert_eq!(
            delay_reg_name(DelayBank::YDeskew, 0, 14),
            "g_ydeskew.u_ydeskew.g_lane[0].g_stage[14].r"
        );
        assert_eq!(pe_reg_name(1, 2, "psv"), "g_row[1].g_col[2].u_pe.psv");
        let plain: Vec<&str> = pe_registers(&cfg).iter().map(|r| r.0).collect();
        assert_eq!(plain, ["w", "x", "d", "dv", "psv", "psh", "dw"]);
    }

    #[test]
    fn the_product_registers_and_deferred_widths_are_read_from_the_pe() {
        let cfg = ArrayConfig::default_16x16()
            .with_multiplier_register(true)
            .unwrap()
            .with_deferred_saturation(true)
            .unwrap();
        assert_eq!(
            pe_registers(&cfg),
            [
                ("w", 18),
                ("x", 16),
                ("d", 16),
                ("dv", 1),
                ("psv", 41),
                ("psh", 41),
                ("dw", 41),
                (PROD_SUM, 40),
                (PROD_DW, 40),
            ]
        );
    }

    #[test]
    fn dense_names_are_the_contract_s() {
        let none = ArrayConfig::default_16x16();
        let cfg = none.with_pipelining(Pipelining::Dense).unwrap();
        let regs: Vec<(&str, u32)> = pe_registers(&cfg);
        assert_eq!(
            regs,
            [
                ("w", 16),
                ("ws", 16),
                ("x", 16),
                ("d", 16),
                ("dv", 1),
                ("psv", 40),
                ("psh", 40),
                ("dw", 40),
                ("wp", 16),
                ("c_op", 3),
                ("c_swap", 1),
                ("c_upd", 1),
                ("c_lr", 6),
                ("c_ld", 1),
                ("c_row", 4),
            ]
        );
        assert_eq!(pe_reg_name(2, 3, "c_op"), "g_row[2].g_col[3].u_pe.c_op");
        assert!(dense_delay_banks(&none).is_empty());
        let banks = dense_delay_banks(&cfg);
        assert_eq!(banks.iter().map(|b| b.0).collect::<Vec<_>>(), DENSE_BANKS);
        assert_eq!(banks[0].1[15], 15);
        assert_eq!(banks[2].1[0], 15);
        assert_eq!(DenseBank::CtlSkew.width(&cfg), 16);
        assert_eq!(delay_banks(&cfg).len(), 4);
        assert_eq!(
            delay_reg_name(DenseBank::WDeskew, 1, 2),
            "g_wdeskew.u_wdeskew.g_lane[1].g_stage[2].r"
        );
        assert_eq!(output_reg_name(&cfg, "w", 15), "g_w_out[15].w_q");
        // Both arrays put their PEs at the same path.
        let (_, dense_top) = crate::design::array(&cfg);
        assert_eq!(
            find(&dense_top.items, &instance_of(PE_MODULE)).as_ref(),
            Some(pe_path())
        );
        let pe = text(&cfg, "sa_pe.v");
        for (reg, _) in regs {
            assert!(pe.contains(&format!(" {reg};")), "sa_pe lacks {reg}");
        }
    }

    #[test]
    #[should_panic(expected = "no output register bank w")]
    fn a_none_array_has_no_w_q() {
        output_reg_name(&ArrayConfig::default_16x16(), "w", 0);
    }
}
