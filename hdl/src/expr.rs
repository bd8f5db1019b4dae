//! Typed Verilog expressions and their printing.
//!
//! Nets and localparams are referred to by handle ([`Net`], [`Const`]):
//! a module builder ([`crate::ir::Scope`]) declares each one once, under
//! its name, and hands out the handle, so that a wrong name is a Rust
//! variable that does not exist. Module parameters, genvars and the
//! locals of a function are names ([`id`]); the printer checks every one
//! of them against the module ([`crate::emit`]).
//!
//! Builders read close to the Verilog they produce: `aw - 1`,
//! `x_o.at(cell)`, `cat([..])`, `cond(c, a, b)`. Printing inserts
//! parentheses from operator precedence, plus a few for readability
//! (conditions, operands of logical operators). Inside `[...]` and
//! replication counts, arithmetic is printed without spaces (`x_o[i*C+j-1]`),
//! as width and index arithmetic is usually written.

use std::collections::HashSet;
use std::fmt::Write;
use std::sync::{Mutex, OnceLock};

/// `s` for the life of the program, so that handles are `Copy`. The
/// generator names a bounded set of nets, so the set stays small.
pub(crate) fn intern(s: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.to_owned().into_boxed_str());
    names.insert(n);
    n
}

fn check_identifier(name: &str) {
    assert!(
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit()),
        "not a Verilog identifier: {name:?}"
    );
}

/// A net (wire, reg or port) of a module, by handle. Only the module
/// builders of [`crate::ir`] make one, declaring it at the same time (or,
/// for a net another part of the module drives, once it is built:
/// [`crate::ir::Scope::define`]); the printer checks that every handle an
/// expression uses is declared exactly once in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Net(&'static str);

/// A module parameter or genvar, by name: declared in the module header
/// (`genvar` line), so printed as an [`Expr::Id`] and checked by the
/// printer. The parameters every module shares are named once, in
/// [`crate::params`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct P(&'static str);

impl P {
    pub const fn new(name: &'static str) -> P {
        P(name)
    }
    pub fn name(self) -> &'static str {
        self.0
    }
    pub fn e(self) -> Expr {
        Expr::Id(self.0.to_string())
    }
}

/// A localparam of a module, by handle (see [`Net`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Const(&'static str);

impl Net {
    /// A handle for the net `name`, to be declared by the caller. Only the
    /// builders in [`crate::ir`] and the structs of handles a unit exports
    /// call this (each name is written once).
    pub(crate) fn named(name: &str) -> Net {
        check_identifier(name);
        Net(intern(name))
    }
    pub fn name(self) -> &'static str {
        self.0
    }
    pub fn e(self) -> Expr {
        Expr::Net(self)
    }
}

impl Const {
    pub(crate) fn named(name: &str) -> Const {
        check_identifier(name);
        Const(intern(name))
    }
    pub fn name(self) -> &'static str {
        self.0
    }
    pub fn e(self) -> Expr {
        Expr::Const(self)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Mul,
    Div,
    Add,
    Sub,
    Shl,
    Shr,
    AShr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

impl BinOp {
    fn text(self) -> &'static str {
        use BinOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Add => "+",
            Sub => "-",
            Shl => "<<",
            Shr => ">>",
            AShr => ">>>",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            BitAnd => "&",
            BitXor => "^",
            BitOr => "|",
            And => "&&",
            Or => "||",
        }
    }
    /// Verilog-2005 precedence, higher binds tighter.
    fn prec(self) -> u8 {
        use BinOp::*;
        match self {
            Mul | Div => 11,
            Add | Sub => 10,
            Shl | Shr | AShr => 9,
            Lt | Le | Gt | Ge => 8,
            Eq | Ne => 7,
            BitAnd => 6,
            BitXor => 5,
            BitOr => 4,
            And => 3,
            Or => 2,
        }
    }
    fn arithmetic(self) -> bool {
        matches!(self, BinOp::Mul | BinOp::Div | BinOp::Add | BinOp::Sub)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// A module parameter, a genvar or a function's own name or local.
    Id(String),
    /// A net or port.
    Net(Net),
    /// A localparam.
    Const(Const),
    /// A system value such as `$anyseq` (formal checks).
    System(&'static str),
    /// Unsized decimal, for parameter and genvar arithmetic.
    Int(i64),
    /// Sized literal: `1'b0` for one bit, `7'd1` otherwise.
    Lit {
        width: u32,
        value: u64,
    },
    /// Sized hex literal: `12'h100` (addresses, masks, IDs).
    Hex {
        width: u32,
        value: u64,
    },
    /// `e[i]`
    Index(Box<Expr>, Box<Expr>),
    /// `e[msb:lsb]`
    Range(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `e[base +: width]`
    Part(Box<Expr>, Box<Expr>, Box<Expr>),
    Concat(Vec<Expr>),
    /// `{n{e}}`
    Repeat(Box<Expr>, Box<Expr>),
    /// Bitwise `~e`.
    Not(Box<Expr>),
    /// Reduction OR `|e`: whether any bit is set.
    Any(Box<Expr>),
    /// Reduction XOR `^e`: the parity of the bits.
    Parity(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Function or system function call, e.g. `$signed(e)`.
    Call(String, Vec<Expr>),
}

/// A module parameter, genvar or function local by name (checked by the
/// printer against the module's declarations).
pub fn id(name: &str) -> Expr {
    check_identifier(name);
    Expr::Id(name.into())
}

/// An unsized number kept as written where a width would fold it
/// (`[1*64-1:0]`, `[1-1:0]`): a buffer's lane count or word width in the
/// same form as the parameters the others use.
pub fn numeral(v: u32) -> Expr {
    Expr::Id(v.to_string())
}

pub fn int(v: i64) -> Expr {
    Expr::Int(v)
}

pub fn lit(width: u32, value: u64) -> Expr {
    Expr::Lit { width, value }
}

pub fn hex(width: u32, value: u64) -> Expr {
    Expr::Hex { width, value }
}

pub fn cat<const N: usize>(parts: [Expr; N]) -> Expr {
    Expr::Concat(parts.into())
}

pub fn repeat(n: impl Into<Expr>, e: impl Into<Expr>) -> Expr {
    Expr::Repeat(Box::new(n.into()), Box::new(e.into()))
}

/// `{n{1'b0}}`: zero, `n` bits wide.
pub fn zeros(n: impl Into<Expr>) -> Expr {
    repeat(n, lit(1, 0))
}

/// `{n{1'b1}}`: all ones, `n` bits wide.
pub fn ones(n: impl Into<Expr>) -> Expr {
    repeat(n, lit(1, 1))
}

pub fn cond(c: impl Into<Expr>, a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    Expr::Cond(Box::new(c.into()), Box::new(a.into()), Box::new(b.into()))
}

pub fn call<const N: usize>(f: &str, args: [Expr; N]) -> Expr {
    Expr::Call(f.into(), args.into())
}

/// The value an `n`-bit saturation clamps to, given the sign of the
/// overflowed result: `{sign, {(n-1){~sign}}}` (min if negative, else max).
pub fn clamp_value(sign: Expr, n: impl Into<Expr>) -> Expr {
    cat([sign.clone(), repeat(n.into() - 1, !sign)])
}

/// The logical OR of `es`.
pub fn any_of(es: Vec<Expr>) -> Expr {
    es.into_iter().reduce(|a, b| a.or(b)).expect("at least one")
}

/// The logical AND of `es`.
pub fn all_of(es: Vec<Expr>) -> Expr {
    es.into_iter()
        .reduce(|a, b| a.and(b))
        .expect("at least one")
}

impl Expr {
    fn bin(self, op: BinOp, rhs: impl Into<Expr>) -> Expr {
        Expr::Binary(op, Box::new(self), Box::new(rhs.into()))
    }
    /// `self[i]`
    pub fn at(&self, i: impl Into<Expr>) -> Expr {
        Expr::Index(Box::new(self.clone()), Box::new(i.into()))
    }
    /// `self[msb:lsb]`
    pub fn bits(&self, msb: impl Into<Expr>, lsb: impl Into<Expr>) -> Expr {
        Expr::Range(
            Box::new(self.clone()),
            Box::new(msb.into()),
            Box::new(lsb.into()),
        )
    }
    /// Lane `k` of a packed bus of `w`-bit lanes: `self[k*w +: w]`.
    pub fn lane(&self, k: impl Into<Expr>, w: impl Into<Expr>) -> Expr {
        let w = w.into();
        let base = k.into() * w.clone();
        Expr::Part(Box::new(self.clone()), Box::new(base), Box::new(w))
    }
    /// `self[base +: w]`
    pub fn part(&self, base: impl Into<Expr>, w: impl Into<Expr>) -> Expr {
        Expr::Part(
            Box::new(self.clone()),
            Box::new(base.into()),
            Box::new(w.into()),
        )
    }
    pub fn equals(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Eq, rhs)
    }
    pub fn differs(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Ne, rhs)
    }
    pub fn less(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Lt, rhs)
    }
    pub fn greater(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Gt, rhs)
    }
    pub fn at_most(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Le, rhs)
    }
    pub fn at_least(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Ge, rhs)
    }
    /// Bitwise `&`.
    pub fn bit_and(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::BitAnd, rhs)
    }
    /// Bitwise `|`.
    pub fn bit_or(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::BitOr, rhs)
    }
    /// Reduction OR: `|self`.
    pub fn any(self) -> Expr {
        Expr::Any(Box::new(self))
    }
    /// Reduction XOR: `^self`.
    pub fn parity(self) -> Expr {
        Expr::Parity(Box::new(self))
    }
    /// Bitwise `^`.
    pub fn bit_xor(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::BitXor, rhs)
    }
    /// Arithmetic shift right `>>>`.
    pub fn ashr(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::AShr, rhs)
    }
    /// Logical `||`.
    pub fn or(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Or, rhs)
    }
    /// Logical `&&`.
    pub fn and(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::And, rhs)
    }
}

/// The builder methods of [`Expr`] on a handle, so that `running.and(x)`
/// reads as `id("running").and(x)` did, and the arithmetic operators.
macro_rules! handle_ops {
    ($t:ty) => {
        impl From<$t> for Expr {
            fn from(h: $t) -> Expr {
                h.e()
            }
        }
        impl From<&$t> for Expr {
            fn from(h: &$t) -> Expr {
                h.e()
            }
        }
        impl $t {
            pub fn at(self, i: impl Into<Expr>) -> Expr {
                self.e().at(i)
            }
            pub fn bits(self, msb: impl Into<Expr>, lsb: impl Into<Expr>) -> Expr {
                self.e().bits(msb, lsb)
            }
            pub fn lane(self, k: impl Into<Expr>, w: impl Into<Expr>) -> Expr {
                self.e().lane(k, w)
            }
            pub fn part(self, base: impl Into<Expr>, w: impl Into<Expr>) -> Expr {
                self.e().part(base, w)
            }
            pub fn equals(self, rhs: impl Into<Expr>) -> Expr {
                self.e().equals(rhs)
            }
            pub fn differs(self, rhs: impl Into<Expr>) -> Expr {
                self.e().differs(rhs)
            }
            pub fn less(self, rhs: impl Into<Expr>) -> Expr {
                self.e().less(rhs)
            }
            pub fn greater(self, rhs: impl Into<Expr>) -> Expr {
                self.e().greater(rhs)
            }
            pub fn at_most(self, rhs: impl Into<Expr>) -> Expr {
                self.e().at_most(rhs)
            }
            pub fn at_least(self, rhs: impl Into<Expr>) -> Expr {
                self.e().at_least(rhs)
            }
            pub fn bit_and(self, rhs: impl Into<Expr>) -> Expr {
                self.e().bit_and(rhs)
            }
            pub fn bit_or(self, rhs: impl Into<Expr>) -> Expr {
                self.e().bit_or(rhs)
            }
            pub fn any(self) -> Expr {
                self.e().any()
            }
            pub fn ashr(self, rhs: impl Into<Expr>) -> Expr {
                self.e().ashr(rhs)
            }
            pub fn or(self, rhs: impl Into<Expr>) -> Expr {
                self.e().or(rhs)
            }
            pub fn and(self, rhs: impl Into<Expr>) -> Expr {
                self.e().and(rhs)
            }
        }
        impl std::ops::Not for $t {
            type Output = Expr;
            fn not(self) -> Expr {
                !self.e()
            }
        }
        binop_trait!($t, Add, add, BinOp::Add);
        binop_trait!($t, Sub, sub, BinOp::Sub);
        binop_trait!($t, Mul, mul, BinOp::Mul);
        binop_trait!($t, Shl, shl, BinOp::Shl);
        binop_trait!($t, Shr, shr, BinOp::Shr);
        binop_trait!($t, Div, div, BinOp::Div);
    };
}

macro_rules! binop_trait {
    ($t:ty, $tr:ident, $f:ident, $op:expr) => {
        impl<T: Into<Expr>> std::ops::$tr<T> for $t {
            type Output = Expr;
            fn $f(self, rhs: T) -> Expr {
                Expr::from(self).bin($op, rhs)
            }
        }
        impl std::ops::$tr<$t> for i64 {
            type Output = Expr;
            fn $f(self, rhs: $t) -> Expr {
                int(self).bin($op, rhs)
            }
        }
    };
}
binop_trait!(Expr, Add, add, BinOp::Add);
binop_trait!(Expr, Sub, sub, BinOp::Sub);
binop_trait!(Expr, Mul, mul, BinOp::Mul);
binop_trait!(Expr, Shl, shl, BinOp::Shl);
binop_trait!(Expr, Shr, shr, BinOp::Shr);
binop_trait!(Expr, Div, div, BinOp::Div);
handle_ops!(Net);
handle_ops!(Const);
handle_ops!(P);

impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Expr {
            fn from(v: $t) -> Self {
                Expr::Int(i64::try_from(v).expect("integer fits i64"))
            }
        }
    )*};
}
from_int!(i32, i64, u32, usize);

/// `w - 1` folded where that reads better: `8 -> 7`, `AW+1 -> AW`.
pub fn minus_one(w: &Expr) -> Expr {
    match w {
        Expr::Int(n) => Expr::Int(n - 1),
        Expr::Binary(BinOp::Add, a, b) if **b == Expr::Int(1) => (**a).clone(),
        Expr::Binary(BinOp::Add, a, b) => match **b {
            Expr::Int(k) if k > 1 => (**a).clone() + (k - 1),
            _ => w.clone() - 1,
        },
        _ => w.clone() - 1,
    }
}

/// A name an expression refers to: what the printer resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ref<'a> {
    Net(Net),
    Const(Const),
    Id(&'a str),
    Function(&'a str),
}

impl Expr {
    /// Calls `f` with every name `self` refers to, left to right.
    pub fn refs<'a>(&'a self, f: &mut impl FnMut(Ref<'a>)) {
        match self {
            // A numeral is no name.
            Expr::Id(s) if s.starts_with(|c: char| c.is_ascii_digit()) => {}
            Expr::Id(s) => f(Ref::Id(s)),
            Expr::Net(n) => f(Ref::Net(*n)),
            Expr::Const(c) => f(Ref::Const(*c)),
            Expr::System(_) | Expr::Int(_) | Expr::Lit { .. } | Expr::Hex { .. } => {}
            Expr::Not(a) | Expr::Any(a) | Expr::Parity(a) => a.refs(f),
            Expr::Index(a, b) | Expr::Repeat(a, b) | Expr::Binary(_, a, b) => {
                a.refs(f);
                b.refs(f);
            }
            Expr::Range(a, b, c) | Expr::Part(a, b, c) | Expr::Cond(a, b, c) => {
                a.refs(f);
                b.refs(f);
                c.refs(f);
            }
            Expr::Concat(v) => v.iter().for_each(|e| e.refs(f)),
            Expr::Call(name, args) => {
                if !name.starts_with('$') {
                    f(Ref::Function(name));
                }
                args.iter().for_each(|e| e.refs(f));
            }
        }
    }

    /// The value of a constant expression over the parameters `env` gives
    /// (widths, generate conditions, instance parameters); `None` if it
    /// refers to anything else.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        let v = |e: &Expr| e.eval(env);
        Some(match self {
            Expr::Int(n) => *n,
            Expr::Lit { value, .. } | Expr::Hex { value, .. } => i64::try_from(*value).ok()?,
            Expr::Id(s) => match s.parse() {
                Ok(n) => n,
                Err(_) => env(s)?,
            },
            Expr::Binary(op, a, b) => {
                let (a, b) = (v(a)?, v(b)?);
                use BinOp::*;
                match op {
                    Mul => a.checked_mul(b)?,
                    Div => a.checked_div(b)?,
                    Add => a.checked_add(b)?,
                    Sub => a.checked_sub(b)?,
                    Shl => a.checked_shl(u32::try_from(b).ok()?)?,
                    Shr | AShr => a.checked_shr(u32::try_from(b).ok()?)?,
                    Lt => (a < b).into(),
                    Le => (a <= b).into(),
                    Gt => (a > b).into(),
                    Ge => (a >= b).into(),
                    Eq => (a == b).into(),
                    Ne => (a != b).into(),
                    BitAnd => a & b,
                    BitXor => a ^ b,
                    BitOr => a | b,
                    And => (a != 0 && b != 0).into(),
                    Or => (a != 0 || b != 0).into(),
                }
            }
            Expr::Cond(c, a, b) => {
                if v(c)? != 0 {
                    v(a)?
                } else {
                    v(b)?
                }
            }
            Expr::Call(f, args) if f == "$clog2" && args.len() == 1 => {
                let n = v(&args[0])?;
                if n <= 1 {
                    0
                } else {
                    i64::from(64 - (n - 1).leading_zeros())
                }
            }
            _ => return None,
        })
    }
}

const ATOM: u8 = 13;
const UNARY: u8 = 12;
const COND: u8 = 1;

impl Expr {
    fn prec(&self) -> u8 {
        match self {
            Expr::Binary(op, ..) => op.prec(),
            Expr::Cond(..) => COND,
            Expr::Not(_) | Expr::Any(_) | Expr::Parity(_) => UNARY,
            _ => ATOM,
        }
    }
}

/// Prints `e`, parenthesised if it binds looser than `min`. `tight` drops
/// the spaces around arithmetic (inside selects and widths).
fn put(out: &mut String, e: &Expr, min: u8, tight: bool) {
    if e.prec() < min {
        out.push('(');
        put(out, e, 0, tight);
        out.push(')');
        return;
    }
    match e {
        Expr::Id(s) => out.push_str(s),
        Expr::Net(n) => out.push_str(n.name()),
        Expr::Const(c) => out.push_str(c.name()),
        Expr::System(s) => out.push_str(s),
        Expr::Int(v) => write!(out, "{v}").unwrap(),
        Expr::Lit { width: 1, value } => write!(out, "1'b{value}").unwrap(),
        Expr::Lit { width, value } => write!(out, "{width}'d{value}").unwrap(),
        Expr::Hex { width, value } => write!(out, "{width}'h{value:x}").unwrap(),
        Expr::Index(v, i) => {
            put(out, v, ATOM, tight);
            out.push('[');
            put(out, i, 0, true);
            out.push(']');
        }
        Expr::Range(v, m, l) => {
            put(out, v, ATOM, tight);
            out.push('[');
            put(out, m, 0, true);
            out.push(':');
            put(out, l, 0, true);
            out.push(']');
        }
        Expr::Part(v, b, w) => {
            put(out, v, ATOM, tight);
            out.push('[');
            put(out, b, 0, true);
            out.push_str(" +: ");
            put(out, w, 0, true);
            out.push(']');
        }
        Expr::Concat(parts) => {
            out.push('{');
            for (k, p) in parts.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                put(out, p, 0, tight);
            }
            out.push('}');
        }
        Expr::Repeat(n, v) => {
            out.push('{');
            // A replication count other than a name or number needs parentheses.
            put(out, n, ATOM, true);
            out.push('{');
            put(out, v, 0, tight);
            out.push_str("}}");
        }
        Expr::Not(v) => {
            out.push('~');
            put(out, v, ATOM, tight);
        }
        Expr::Any(v) => {
            out.push('|');
            put(out, v, ATOM, tight);
        }
        Expr::Parity(v) => {
            out.push('^');
            put(out, v, ATOM, tight);
        }
        Expr::Binary(op, a, b) => {
            let p = op.prec();
            // Only arithmetic chains go unparenthesised: `(a + b) >>> s`,
            // `(x == y) || z` read better than what precedence allows.
            let operand = if op.arithmetic() { p } else { UNARY };
            // A chain of one logical or bitwise operator needs no inner
            // parentheses: `a && b && c`.
            let chained = matches!(&**a, Expr::Binary(o, ..) if o == op)
                && matches!(
                    op,
                    BinOp::And | BinOp::Or | BinOp::BitAnd | BinOp::BitXor | BinOp::BitOr
                );
            put(out, a, if chained { p } else { operand }, tight);
            if tight && op.arithmetic() {
                out.push_str(op.text());
            } else {
                write!(out, " {} ", op.text()).unwrap();
            }
            // Left-associative: an equal-precedence right operand needs parentheses.
            put(out, b, operand.max(p + 1), tight);
        }
        Expr::Cond(c, a, b) => {
            put(out, c, UNARY, tight);
            out.push_str(" ? ");
            put(out, a, COND + 1, tight);
            out.push_str(" : ");
            put(out, b, COND + 1, tight);
        }
        Expr::Call(f, args) => {
            write!(out, "{f}(").unwrap();
            for (k, a) in args.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                put(out, a, 0, tight);
            }
            out.push(')');
        }
    }
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        put(&mut s, self, 0, false);
        f.write_str(&s)
    }
}

/// Prints `e` as inside a select: arithmetic without spaces.
pub fn tight(e: &Expr) -> String {
    let mut s = String::new();
    put(&mut s, e, 0, true);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_spacing() {
        let i = || id("i");
        let x_o = Net::named("x_o");
        assert_eq!(
            x_o.at(i() * id("C") + id("j") - 1).to_string(),
            "x_o[i*C+j-1]"
        );
        assert_eq!(
            x_o.at((i() - 1) * id("C") + id("j")).to_string(),
            "x_o[(i-1)*C+j]"
        );
        let a = || Net::named("a");
        assert_eq!(a().lane(id("k"), id("W")).to_string(), "a[k*W +: W]");
        assert_eq!(zeros(id("AW") + 1).to_string(), "{(AW+1){1'b0}}");
        assert_eq!(zeros(id("AW")).to_string(), "{AW{1'b0}}");
        let (b, c, d) = (Net::named("b"), Net::named("c"), Net::named("d"));
        assert_eq!((a() - (b + c)).to_string(), "a - (b + c)");
        assert_eq!(
            (a() + b).ashr(Net::named("s")).to_string(),
            "(a + b) >>> s",
            "shift binds looser than +"
        );
        assert_eq!(
            cond(
                Net::named("m").equals(Const::named("F")),
                Net::named("x"),
                d
            )
            .to_string(),
            "(m == F) ? x : d"
        );
        assert_eq!(
            a().equals(b).or(c.equals(d)).to_string(),
            "(a == b) || (c == d)"
        );
        assert_eq!(
            clamp_value(Net::named("s").at(id("AW")), id("AW")).to_string(),
            "{s[AW], {(AW-1){~s[AW]}}}"
        );
        assert_eq!(minus_one(&(id("AW") + 2)).to_string(), "AW + 1");
        assert_eq!(tight(&minus_one(&(2 * id("DW")))), "2*DW-1");
    }

    #[test]
    fn constant_expressions_evaluate_over_parameters() {
        let env = |n: &str| match n {
            "R" => Some(5),
            "DW" => Some(8),
            _ => None,
        };
        assert_eq!((id("R") * (id("DW") + 1)).eval(&env), Some(45));
        assert_eq!(cond(id("R").greater(1), id("R"), 1).eval(&env), Some(5));
        assert_eq!(call("$clog2", [id("R")]).eval(&env), Some(3));
        assert_eq!(id("AW").eval(&env), None);
        assert_eq!(Net::named("x").e().eval(&env), None);
    }
}
