//! A small typed description of Verilog-2005 modules: what the generator
//! builds and [`crate::emit`] prints. It covers what the array needs and no
//! more: parameters, ports, nets, continuous assigns, clocked processes with
//! `if`/`case`, functions, instances and generate loops/conditionals.
//! Expressions are Verilog text ([`Expr`]): widths are parameter
//! expressions, so a typed expression tree would only re-spell them.

/// A Verilog expression, kept as source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr(pub String);

impl Expr {
    pub fn new(s: impl Into<String>) -> Self {
        Expr(s.into())
    }
    /// `{n{1'b0}}`: an all-zero value `n` bits wide (a parameter expression).
    pub fn zeros(n: &str) -> Self {
        Expr(format!("{{{n}{{1'b0}}}}"))
    }
    /// `v[k*W +: W]`: lane `k` of a packed bus of `W`-bit lanes.
    pub fn lane(v: &str, k: &str, w: &str) -> Self {
        Expr(format!("{v}[({k})*({w}) +: {w}]"))
    }
}

impl From<&str> for Expr {
    fn from(s: &str) -> Self {
        Expr(s.to_string())
    }
}

impl From<String> for Expr {
    fn from(s: String) -> Self {
        Expr(s)
    }
}

/// A bit range `[msb:0]` given by its width; `None` is a single bit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Width(pub Option<String>);

impl Width {
    pub fn bit() -> Self {
        Width(None)
    }
    pub fn of(w: impl Into<String>) -> Self {
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
    pub array: Option<String>,
    /// For wires: a declaration assignment (`wire x = ...;`).
    pub init: Option<Expr>,
}

/// A statement inside a clocked process or function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stmt {
    /// `lhs <= rhs;`
    NonBlocking(String, Expr),
    /// `lhs = rhs;` (functions only)
    Blocking(String, Expr),
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    /// `case (sel)`; each arm lists its labels; `default` may be empty.
    Case {
        sel: Expr,
        arms: Vec<(Vec<String>, Vec<Stmt>)>,
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
    /// Verilator lint control around `items`, with the reason.
    LintOff {
        rule: String,
        why: String,
        items: Vec<Item>,
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
    pub fn array(mut self, n: &str) -> Self {
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

pub fn assign(lhs: impl Into<Expr>, rhs: impl Into<Expr>) -> Item {
    Item::Assign(lhs.into(), rhs.into())
}

pub fn nb(lhs: &str, rhs: impl Into<Expr>) -> Stmt {
    Stmt::NonBlocking(lhs.into(), rhs.into())
}

pub fn conn(port: &str, e: impl Into<Expr>) -> (String, Expr) {
    (port.into(), e.into())
}
