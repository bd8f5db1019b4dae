//! A small typed description of Verilog-2005 modules: what the generator
//! builds and [`crate::emit`] prints. It covers what the array needs and no
//! more: parameters, ports, nets, continuous assigns, clocked processes with
//! `if`/`case`, functions, instances and generate loops/conditionals.
//! Expressions, widths included, are [`Expr`] trees.
//!
//! Modules are built with a [`Scope`] (the body of a module or of a
//! generate block): each net is declared once, by name, and the builder
//! hands out its [`Net`] handle, which every expression then uses. A net
//! that one part of a module reads before the part that drives it is
//! built gets its handle first ([`Net::named`], kept in the struct of
//! handles that part exports) and its declaration later
//! ([`Scope::define`]); the printer declares it ahead of its first use.

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
    /// The number of bits under the parameter values `env` gives.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        match &self.0 {
            None => Some(1),
            Some(w) => w.eval(env),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Input,
    Output,
    /// An output driven by a register of the same name (`output reg`).
    OutputReg,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub dir: Dir,
    pub net: Net,
    pub width: Width,
    pub signed: bool,
}

impl Port {
    pub fn name(&self) -> &'static str {
        self.net.name()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub default: i64,
    /// `Some(n)`: an `n`-bit unsigned parameter (`parameter [n-1:0]`),
    /// for values an `integer` (32 bits, signed) cannot hold.
    pub bits: Option<u32>,
    /// Shown as a trailing comment.
    pub doc: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetKind {
    Wire,
    Reg,
}

/// The declaration of a net or variable; `array` makes it an unpacked
/// array `[0:n-1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decl {
    pub kind: NetKind,
    pub net: Net,
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

/// A Verilog function returning `width` bits. Its inputs and locals are
/// nets of its own scope; its result is assigned to [`Function::result`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: &'static str,
    pub width: Width,
    pub signed: bool,
    /// Inputs: (net, width, signed).
    pub inputs: Vec<(Net, Width, bool)>,
    pub locals: Vec<Decl>,
    pub body: Vec<Stmt>,
}

impl Function {
    /// The function's result variable (its own name), for its body.
    pub fn result(name: &str) -> Expr {
        id(name)
    }
    /// A call of this function.
    pub fn call<const N: usize>(&self, args: [Expr; N]) -> Expr {
        call(self.name, args)
    }
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
        name: Const,
        width: Width,
        value: Expr,
    },
    Net(Decl),
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
    /// Text printed as it is, indented: the SystemVerilog assertions of
    /// the formal checker (`crate::formal`), which the IR does not model.
    Verbatim(String),
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

impl Module {
    /// The port named `name`, if the module has one.
    pub fn port(&self, name: &str) -> Option<&Port> {
        self.ports.iter().find(|p| p.name() == name)
    }
    /// The parameter defaults, for [`Expr::eval`].
    pub fn param_value(&self, name: &str) -> Option<i64> {
        self.params
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.default)
    }
}

// Small constructors that keep the module builders readable.

pub fn input(name: &str, width: Width) -> Port {
    Port {
        dir: Dir::Input,
        net: Net::named(name),
        width,
        signed: false,
    }
}

pub fn output(name: &str, width: Width) -> Port {
    Port {
        dir: Dir::Output,
        net: Net::named(name),
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
        bits: None,
        doc: doc.into(),
    }
}

/// A `bits`-bit unsigned parameter.
pub fn param_bits(name: &str, default: i64, bits: u32, doc: &str) -> Param {
    Param {
        bits: Some(bits),
        ..param(name, default, doc)
    }
}

/// The declaration of a wire `name` (to be added to a [`Scope`]).
pub fn wire(name: &str, width: Width) -> Decl {
    wire_for(Net::named(name), width)
}

/// The declaration of a reg `name`.
pub fn reg(name: &str, width: Width) -> Decl {
    Decl {
        kind: NetKind::Reg,
        ..wire(name, width)
    }
}

/// The declaration of a wire whose handle exists (see [`Scope::define`]).
pub fn wire_for(net: Net, width: Width) -> Decl {
    Decl {
        kind: NetKind::Wire,
        net,
        width,
        signed: false,
        array: None,
        init: None,
    }
}

/// The declaration of a reg whose handle exists.
pub fn reg_for(net: Net, width: Width) -> Decl {
    Decl {
        kind: NetKind::Reg,
        ..wire_for(net, width)
    }
}

/// A register of `width` (`Int(1)` a single bit, any other integer a
/// range) and the literal that clears it.
pub(crate) fn register_and_zero(net: Net, width: Expr) -> (Decl, Expr) {
    match width {
        Expr::Int(1) => (reg_for(net, Width::bit()), lit(1, 0)),
        Expr::Int(bits) => (reg_for(net, Width::of(bits)), lit(bits as u32, 0)),
        w => (reg_for(net, Width::of(w.clone())), zeros(w)),
    }
}

impl Decl {
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

/// `if (cond) then` without an else.
pub fn when(cond: impl Into<Expr>, then: Vec<Stmt>) -> Stmt {
    if_else(cond, then, vec![])
}

pub fn conn(port: &str, e: impl Into<Expr>) -> (String, Expr) {
    (port.into(), e.into())
}

/// The localparams of an enumeration: `name(t) = i` in `bits` bits, `i`
/// its place in the list (the codes of a state).
pub struct Enum<T>(Vec<(T, Const)>);

impl<T: Copy + PartialEq + std::fmt::Debug> Enum<T> {
    pub fn declare(m: &mut Scope, all: &[T], name: fn(T) -> &'static str, bits: u32) -> Enum<T> {
        assert!(all.len() <= 1 << bits, "{all:?} in {bits} bits");
        Enum(
            all.iter()
                .enumerate()
                .map(|(code, t)| {
                    let c = m.localparam(name(*t), Width::of(bits as i64), lit(bits, code as u64));
                    (*t, c)
                })
                .collect(),
        )
    }
    pub fn of(&self, t: T) -> Const {
        self.0
            .iter()
            .find(|(k, _)| *k == t)
            .unwrap_or_else(|| panic!("{t:?} has no localparam"))
            .1
    }
}

/// The body of a module or a generate block, built item by item. Each
/// declaring method adds the declaration where it is called and returns
/// the net's handle.
#[derive(Debug, Default)]
pub struct Scope {
    items: Vec<Item>,
}

impl Scope {
    pub fn new() -> Scope {
        Scope::default()
    }
    pub fn into_items(self) -> Vec<Item> {
        self.items
    }
    pub fn push(&mut self, item: Item) {
        self.items.push(item);
    }
    pub fn comment(&mut self, text: impl Into<String>) {
        self.items.push(Item::Comment(text.into()));
    }
    /// Declares `d` here and returns its handle.
    pub fn add(&mut self, d: Decl) -> Net {
        let net = d.net;
        self.items.push(Item::Net(d));
        net
    }
    /// Declares, here, a net whose handle was made earlier (with
    /// [`Net::named`], by the struct of handles its part of the module
    /// exports): `d` from [`wire_for`] or [`reg_for`].
    pub fn define(&mut self, d: Decl) {
        self.items.push(Item::Net(d));
    }
    /// Defines the registers of `table` (handles made earlier), as
    /// [`Scope::registers`] declares new ones.
    pub fn define_registers(&mut self, table: &[(Net, Expr)]) -> Vec<Stmt> {
        table
            .iter()
            .map(|(net, width)| {
                let (d, zero) = register_and_zero(*net, width.clone());
                self.define(d);
                set(*net, zero)
            })
            .collect()
    }
    /// A wire of `bits` bits (always a range) driven by `e`.
    pub fn wire_of(&mut self, name: &str, bits: impl Into<Expr>, e: impl Into<Expr>) -> Net {
        self.add(wire(name, Width::of(bits)).init(e))
    }
    /// A one-bit wire driven by `e`.
    pub fn flag(&mut self, name: &str, e: impl Into<Expr>) -> Net {
        self.add(wire(name, Width::bit()).init(e))
    }
    /// A signed wire of `width` bits driven by `e`.
    pub fn signed_wire(&mut self, name: &str, width: impl Into<Expr>, e: impl Into<Expr>) -> Net {
        self.add(wire(name, Width::of(width)).signed().init(e))
    }
    /// A wire of `width`, driven elsewhere (an assign or an instance).
    pub fn wire(&mut self, name: &str, width: Width) -> Net {
        self.add(wire(name, width))
    }
    /// A register of `width`.
    pub fn reg(&mut self, name: &str, width: Width) -> Net {
        self.add(reg(name, width))
    }
    /// A register of `bits` bits (always a range).
    pub fn reg_of(&mut self, name: &str, bits: impl Into<Expr>) -> Net {
        self.reg(name, Width::of(bits))
    }
    /// `name = value` of `width` bits, a localparam.
    pub fn localparam(&mut self, name: &str, width: Width, value: impl Into<Expr>) -> Const {
        let c = Const::named(name);
        self.items.push(Item::Localparam {
            name: c,
            width,
            value: value.into(),
        });
        c
    }
    pub fn assign(&mut self, lhs: impl Into<Expr>, rhs: impl Into<Expr>) {
        self.items.push(Item::Assign(lhs.into(), rhs.into()));
    }
    /// `always @(posedge clk)` with `body`.
    pub fn clocked(&mut self, body: Vec<Stmt>) {
        self.items.push(Item::Clocked(body));
    }
    /// Declares `f` and returns it, for its calls.
    pub fn function(&mut self, f: Function) -> Function {
        self.items.push(Item::Function(f.clone()));
        f
    }
    pub fn instance(&mut self, inst: Instance) {
        self.items.push(Item::Instance(inst));
    }
    pub fn gen_for(&mut self, var: &str, count: impl Into<Expr>, label: &str, body: Scope) {
        self.items.push(Item::GenFor {
            var: var.into(),
            count: count.into(),
            label: label.into(),
            body: body.items,
        });
    }
    pub fn gen_if(&mut self, cond: impl Into<Expr>, label: &str, then: Scope, els: Scope) {
        self.items.push(Item::GenIf {
            cond: cond.into(),
            label: label.into(),
            then: then.items,
            els: els.items,
        });
    }
    /// Registers from one table of `(name, width)` (`Int(1)` is a single
    /// bit): their declarations here, their handles, and the reset
    /// statements that clear them, so a register's width and its reset
    /// value cannot drift apart.
    pub fn registers<const N: usize>(&mut self, table: [(&str, Expr); N]) -> ([Net; N], Vec<Stmt>) {
        let mut reset = Vec::new();
        let nets = table.map(|(name, width)| {
            let (d, zero) = register_and_zero(Net::named(name), width);
            let net = self.add(d);
            reset.push(set(net, zero));
            net
        });
        (nets, reset)
    }
    /// A register `q` that loads `next` every cycle and clears on reset.
    pub fn plain_register(
        &mut self,
        q: &str,
        width: Width,
        next: impl Into<Expr>,
        rst: Net,
    ) -> Net {
        let zero = match &width.0 {
            Some(w) => zeros(w.clone()),
            None => lit(1, 0),
        };
        let q = self.reg(q, width);
        self.clocked(vec![if_else(rst, vec![set(q, zero)], vec![set(q, next)])]);
        q
    }
    /// `net` followed by a `<net>_unused` copy: a net that holds a whole
    /// command field (16-bit line addresses, the 64-bit word) of which the
    /// buffers or the engines use only some bits. Verilator's default
    /// `--unused-regexp` exempts `*_unused`, so the rest of the design
    /// stays checked without a waiver.
    pub fn partly_used(&mut self, d: Decl) -> Net {
        let width = d.width.clone();
        let net = self.add(d);
        self.add(wire(&format!("{}_unused", net.name()), width).init(net));
        net
    }
}
