//! Typed Verilog expressions and their printing.
//!
//! Builders read close to the Verilog they produce: `id("AW") - 1`,
//! `id("x_o").at(cell)`, `cat([..])`, `cond(c, a, b)`. Printing inserts
//! parentheses from operator precedence, plus a few for readability
//! (conditions, operands of logical operators). Inside `[...]` and
//! replication counts, arithmetic is printed without spaces (`x_o[i*C+j-1]`),
//! as width and index arithmetic is usually written.

use std::fmt::Write;

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
            BitOr => "|",
            And => "&&",
            Or => "||",
        }
    }
    /// Verilog-2005 precedence, higher binds tighter.
    fn prec(self) -> u8 {
        use BinOp::*;
        match self {
            Mul | Div => 10,
            Add | Sub => 9,
            Shl | Shr | AShr => 8,
            Lt | Le | Gt | Ge => 7,
            Eq | Ne => 6,
            BitAnd => 5,
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
    /// Escape hatch: Verilog text printed as is (parenthesised as an operand).
    Raw(String),
    Id(String),
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
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Function or system function call, e.g. `$signed(e)`.
    Call(String, Vec<Expr>),
}

pub fn id(name: &str) -> Expr {
    debug_assert!(
        name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "not an identifier: {name:?} (use Expr::Raw)"
    );
    Expr::Id(name.into())
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
    /// Bitwise `&`.
    pub fn bit_and(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::BitAnd, rhs)
    }
    /// Bitwise `|`.
    pub fn bit_or(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::BitOr, rhs)
    }
    pub fn at_least(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Ge, rhs)
    }
    /// Reduction OR: `|self`.
    pub fn any(self) -> Expr {
        Expr::Any(Box::new(self))
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

macro_rules! binop_trait {
    ($tr:ident, $f:ident, $op:expr) => {
        impl<T: Into<Expr>> std::ops::$tr<T> for Expr {
            type Output = Expr;
            fn $f(self, rhs: T) -> Expr {
                self.bin($op, rhs)
            }
        }
        impl std::ops::$tr<Expr> for i64 {
            type Output = Expr;
            fn $f(self, rhs: Expr) -> Expr {
                int(self).bin($op, rhs)
            }
        }
    };
}
binop_trait!(Add, add, BinOp::Add);
binop_trait!(Sub, sub, BinOp::Sub);
binop_trait!(Mul, mul, BinOp::Mul);
binop_trait!(Shl, shl, BinOp::Shl);
binop_trait!(Shr, shr, BinOp::Shr);
binop_trait!(Div, div, BinOp::Div);

impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

impl From<&str> for Expr {
    fn from(s: &str) -> Self {
        id(s)
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

const ATOM: u8 = 12;
const UNARY: u8 = 11;
const COND: u8 = 1;

impl Expr {
    fn prec(&self) -> u8 {
        match self {
            Expr::Raw(_) => 0,
            Expr::Binary(op, ..) => op.prec(),
            Expr::Cond(..) => COND,
            Expr::Not(_) | Expr::Any(_) => UNARY,
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
        Expr::Raw(s) | Expr::Id(s) => out.push_str(s),
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
        Expr::Binary(op, a, b) => {
            let p = op.prec();
            // Only arithmetic chains go unparenthesised: `(a + b) >>> s`,
            // `(x == y) || z` read better than what precedence allows.
            let operand = if op.arithmetic() { p } else { UNARY };
            // A chain of one logical or bitwise operator needs no inner
            // parentheses: `a && b && c`.
            let chained = matches!(&**a, Expr::Binary(o, ..) if o == op)
                && matches!(op, BinOp::And | BinOp::Or | BinOp::BitAnd | BinOp::BitOr);
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
        let x_o = id("x_o");
        assert_eq!(x_o.at(i() * "C" + "j" - 1).to_string(), "x_o[i*C+j-1]");
        assert_eq!(x_o.at((i() - 1) * "C" + "j").to_string(), "x_o[(i-1)*C+j]");
        assert_eq!(id("a").lane("k", "W").to_string(), "a[k*W +: W]");
        assert_eq!(zeros(id("AW") + 1).to_string(), "{(AW+1){1'b0}}");
        assert_eq!(zeros("AW").to_string(), "{AW{1'b0}}");
        assert_eq!((id("a") - (id("b") + "c")).to_string(), "a - (b + c)");
        assert_eq!(
            (id("a") + "b").ashr("s").to_string(),
            "(a + b) >>> s",
            "shift binds looser than +"
        );
        assert_eq!(
            cond(id("m").equals("F"), "x", "d").to_string(),
            "(m == F) ? x : d"
        );
        assert_eq!(
            id("a").equals("b").or(id("c").equals("d")).to_string(),
            "(a == b) || (c == d)"
        );
        assert_eq!(
            clamp_value(id("s").at("AW"), "AW").to_string(),
            "{s[AW], {(AW-1){~s[AW]}}}"
        );
        assert_eq!(minus_one(&(id("AW") + 2)).to_string(), "AW + 1");
        assert_eq!(tight(&minus_one(&(2 * id("DW")))), "2*DW-1");
    }
}
