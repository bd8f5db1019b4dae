//! A small typed description of Verilog-2005 modules: what the generator
//! builds and [`crate::emit`] prints. It covers what the array needs and no
//! more: parameters, ports, nets, continuous assigns, clocked processes with
//! `if`/`case`, functions, instances and generate loops/conditionals.
//! Expressions, widths included, are [`Expr`] trees.

pub use crate::expr::*;

/// The width of a net or port; `None` is a single bit (no range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Width(pub Option<Expr>);

impl Width {
    pub fn bit() -> Self {
        Width(None)
    }
    pub fn of(w: impl Into<Expr>) -> Self {
        Width(Some(w.into()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Input,
    Output,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub dir: Dir,
    pub name: String,
    pub width: Width,
    pub signed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub default: i64,
    /// Shown as a trailing comment.
    pub doc: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetKind {
    Wire,
    Reg,
}

/// A net or variable; `array` makes it an unpacked array `[0:n-1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Net {
    pub kind: NetKind,
    pub name: String,
    pub width: Width,
    pub signed: bool,
    pub array: Option<Expr>,
    /// For wires: a declaration assignment (`wire x = ...;`).
    pub init: Option<Expr>,
}

/// A statement inside a clocked process or function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stmt {
    /// `lhs <= rhs;`
    NonBlocking(Expr, Expr),
    /// `lhs = rhs;` (functions only)
    Blocking(Expr, Expr),
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    /// `case (sel)`; each arm lists its labels; an empty `default` holds.
    Case {
        sel: Expr,
        arms: Vec<(Vec<Expr>, Vec<Stmt>)>,
        default: Vec<Stmt>,
    },
    Comment(String),
}

/// A Verilog function returning `width` bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub width: Width,
    pub signed: bool,
    /// Inputs: (name, width, signed).
    pub inputs: Vec<(String, Width, bool)>,
    pub locals: Vec<Net>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub module: String,
    pub name: String,
    pub params: Vec<(String, Expr)>,
    pub conns: Vec<(String, Expr)>,
}

/// A module-level item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Comment(String),
    Localparam {
        name: String,
        width: Width,
        value: Expr,
    },
    Net(Net),
    Assign(Expr, Expr),
    /// `always @(posedge clk)` with the given body.
    Clocked(Vec<Stmt>),
    Function(Function),
    Instance(Instance),
    /// `for (var = 0; var < count; var = var + 1) begin : label`
    GenFor {
        var: String,
        count: Expr,
        label: String,
        body: Vec<Item>,
    },
    /// `if (cond) begin : label ... end else begin : label ... end`
    GenIf {
        cond: Expr,
        label: String,
        then: Vec<Item>,
        els: Vec<Item>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub name: String,
    pub doc: Vec<String>,
    pub params: Vec<Param>,
    pub ports: Vec<Port>,
    pub genvars: Vec<String>,
    pub items: Vec<Item>,
}

// Small constructors that keep the module builders readable.

pub fn input(name: &str, width: Width) -> Port {
    Port {
        dir: Dir::Input,
        name: name.into(),
        width,
        signed: false,
    }
}

pub fn output(name: &str, width: Width) -> Port {
    Port {
        dir: Dir::Output,
        name: name.into(),
        width,
        signed: false,
    }
}

impl Port {
    pub fn signed(mut self) -> Self {
        self.signed = true;
        self
    }
}

pub fn param(name: &str, default: i64, doc: &str) -> Param {
    Param {
        name: name.into(),
        default,
        doc: doc.into(),
    }
}

pub fn wire(name: &str, width: Width) -> Net {
    Net {
        kind: NetKind::Wire,
        name: name.into(),
        width,
        signed: false,
        array: None,
        init: None,
    }
}

pub fn reg(name: &str, width: Width) -> Net {
    Net {
        kind: NetKind::Reg,
        ..wire(name, width)
    }
}

impl Net {
    pub fn signed(mut self) -> Self {
        self.signed = true;
        self
    }
    /// Makes this an unpacked array of `n` elements.
    pub fn array(mut self, n: impl Into<Expr>) -> Self {
        self.array = Some(n.into());
        self
    }
    pub fn init(mut self, e: impl Into<Expr>) -> Self {
        self.init = Some(e.into());
        self
    }
    pub fn item(self) -> Item {
        Item::Net(self)
    }
}

pub fn localparam(name: &str, width: Width, value: impl Into<Expr>) -> Item {
    Item::Localparam {
        name: name.into(),
        width,
        value: value.into(),
    }
}

pub fn assign(lhs: impl Into<Expr>, rhs: impl Into<Expr>) -> Item {
    Item::Assign(lhs.into(), rhs.into())
}

pub fn set(lhs: impl Into<Expr>, rhs: impl Into<Expr>) -> Stmt {
    Stmt::NonBlocking(lhs.into(), rhs.into())
}

pub fn blocking(lhs: impl Into<Expr>, rhs: impl Into<Expr>) -> Stmt {
    Stmt::Blocking(lhs.into(), rhs.into())
}

pub fn if_else(cond: impl Into<Expr>, then: Vec<Stmt>, els: Vec<Stmt>) -> Stmt {
    Stmt::If {
        cond: cond.into(),
        then,
        els,
    }
}

pub fn conn(port: &str, e: impl Into<Expr>) -> (String, Expr) {
    (port.into(), e.into())
}

pub fn gen_for(var: &str, count: impl Into<Expr>, label: &str, body: Vec<Item>) -> Item {
    Item::GenFor {
        var: var.into(),
        count: count.into(),
        label: label.into(),
        body,
    }
}

pub fn gen_if(cond: impl Into<Expr>, label: &str, then: Vec<Item>, els: Vec<Item>) -> Item {
    Item::GenIf {
        cond: cond.into(),
        label: label.into(),
        then,
        els,
    }
}

/// A register `q` that loads `next` every cycle and clears on reset.
pub fn plain_register(q: &str, width: Width, next: impl Into<Expr>) -> Vec<Item> {
    let zero = match &width.0 {
        Some(w) => zeros(w.clone()),
        None => lit(1, 0),
    };
    vec![
        reg(q, width).item(),
        Item::Clocked(vec![if_else("rst", vec![set(q, zero)], vec![set(q, next)])]),
    ]
}
