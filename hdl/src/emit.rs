//! Prints the IR as indented Verilog-2005, one module per file.
//!
//! The printer is also where the IR is checked: every net, localparam,
//! parameter, genvar and function an expression names must be declared
//! in its scope, once, or printing panics naming it (a generator bug,
//! which any test that generates finds). Verilog (IEEE 1800) requires a
//! net or localparam to be declared before it is used; where a scope uses
//! one before its declaration (a net one part of a module reads before the
//! part that drives it is built), the printer declares it at the start of
//! the scope and prints the declaration's assignment, if any, in its place
//! as an `assign`. Everything else prints in the order it was built.

use crate::ir::*;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// The longest instance header printed on one line.
const LINE: usize = 160;

struct Out {
    text: String,
    depth: usize,
}

impl Out {
    fn line(&mut self, s: &str) {
        if s.is_empty() {
            self.text.push('\n');
            return;
        }
        for _ in 0..self.depth {
            self.text.push_str("  ");
        }
        self.text.push_str(s);
        self.text.push('\n');
    }
    fn indented(&mut self, f: impl FnOnce(&mut Out)) {
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }
}

/// `[w-1:0] ` for a width `w`, empty for a single bit.
fn range(w: &Width) -> String {
    match &w.0 {
        None => String::new(),
        Some(w) => format!("[{}:0] ", tight(&minus_one(w))),
    }
}

fn decl(kind: &str, signed: bool, width: &Width, name: &str) -> String {
    format!("{kind}{}{} {name}", if signed { " signed" } else { "" }, {
        let r = range(width);
        if r.is_empty() {
            r
        } else {
            format!(" {}", r.trim_end())
        }
    })
}

/// The declaration of `n`, with its assignment if `with_init`.
fn net(n: &Decl, with_init: bool) -> String {
    let kind = match n.kind {
        NetKind::Wire => "wire",
        NetKind::Reg => "reg",
    };
    let mut s = decl(kind, n.signed, &n.width, n.net.name());
    if let Some(a) = &n.array {
        write!(s, " [0:{}]", tight(&minus_one(a))).unwrap();
    }
    if let (Some(e), true) = (&n.init, with_init) {
        write!(s, " = {e}").unwrap();
    }
    s.push(';');
    s
}

fn localparam(name: Const, width: &Width, value: &Expr) -> String {
    format!("localparam {}{} = {value};", range(width), name.name())
}

fn stmts(o: &mut Out, body: &[Stmt]) {
    for s in body {
        stmt(o, s);
    }
}

/// A statement list as the body of an `if` or a `case` arm.
fn block(o: &mut Out, head: &str, body: &[Stmt]) {
    o.line(&format!("{head} begin"));
    o.indented(|o| stmts(o, body));
    o.line("end");
}

fn stmt(o: &mut Out, s: &Stmt) {
    match s {
        Stmt::NonBlocking(l, r) => o.line(&format!("{l} <= {r};")),
        Stmt::Blocking(l, r) => o.line(&format!("{l} = {r};")),
        Stmt::Comment(c) => o.line(&format!("// {c}")),
        Stmt::If { cond, then, els } => {
            block(o, &format!("if ({cond})"), then);
            if !els.is_empty() {
                // `end else begin` reads better than a separate line.
                o.text
                    .truncate(o.text.trim_end_matches('\n').len() - "end".len());
                o.text.push_str("end else begin\n");
                o.indented(|o| stmts(o, els));
                o.line("end");
            }
        }
        Stmt::Case { sel, arms, default } => {
            o.line(&format!("case ({sel})"));
            o.indented(|o| {
                for (labels, body) in arms {
                    let labels: Vec<String> = labels.iter().map(Expr::to_string).collect();
                    block(o, &format!("{}:", labels.join(", ")), body);
                }
                if default.is_empty() {
                    o.line("default: ; // hold");
                } else {
                    block(o, "default:", default);
                }
            });
            o.line("endcase");
        }
    }
}

/// What a scope declares, and the scope around it.
struct Symbols<'a> {
    module: &'a str,
    parent: Option<&'a Symbols<'a>>,
    nets: HashSet<Net>,
    consts: HashSet<Const>,
    /// Parameters and genvars (the module's), or a function's own name.
    ids: HashSet<&'a str>,
    functions: &'a HashSet<&'a str>,
}

impl Symbols<'_> {
    fn has(&self, r: Ref) -> bool {
        let here = match r {
            Ref::Net(n) => self.nets.contains(&n),
            Ref::Const(c) => self.consts.contains(&c),
            Ref::Id(s) => self.ids.contains(s),
            Ref::Function(f) => self.functions.contains(f),
        };
        here || self.parent.is_some_and(|p| p.has(r))
    }
    fn check(&self, r: Ref) {
        assert!(
            self.has(r),
            "{}: {} is used but not declared in its scope",
            self.module,
            match r {
                Ref::Net(n) => format!("net `{}`", n.name()),
                Ref::Const(c) => format!("localparam `{}`", c.name()),
                Ref::Id(s) => format!("parameter or genvar `{s}`"),
                Ref::Function(f) => format!("function `{f}`"),
            }
        );
    }
}

fn stmt_refs<'a>(s: &'a Stmt, f: &mut impl FnMut(Ref<'a>)) {
    match s {
        Stmt::NonBlocking(l, r) | Stmt::Blocking(l, r) => {
            l.refs(f);
            r.refs(f);
        }
        Stmt::If { cond, then, els } => {
            cond.refs(f);
            then.iter().chain(els).for_each(|s| stmt_refs(s, f));
        }
        Stmt::Case { sel, arms, default } => {
            sel.refs(f);
            for (labels, body) in arms {
                labels.iter().for_each(|e| e.refs(f));
                body.iter().for_each(|s| stmt_refs(s, f));
            }
            default.iter().for_each(|s| stmt_refs(s, f));
        }
        Stmt::Comment(_) => {}
    }
}

fn width_refs<'a>(w: &'a Width, f: &mut impl FnMut(Ref<'a>)) {
    if let Some(e) = &w.0 {
        e.refs(f);
    }
}

/// The names a net's declaration needs declared before it (its width and
/// array size; the assignment is printed in place).
fn decl_refs<'a>(d: &'a Decl, f: &mut impl FnMut(Ref<'a>)) {
    width_refs(&d.width, f);
    if let Some(a) = &d.array {
        a.refs(f);
    }
}

/// The names `items` declare (their own scope).
fn declared(items: &[Item]) -> (HashSet<Net>, HashSet<Const>) {
    let (mut nets, mut consts) = (HashSet::new(), HashSet::new());
    for it in items {
        match it {
            Item::Net(d) => {
                nets.insert(d.net);
            }
            Item::Localparam { name, .. } => {
                consts.insert(*name);
            }
            _ => {}
        }
    }
    (nets, consts)
}

/// Every name `it` uses, generate bodies included but not the names they
/// declare themselves.
fn item_refs<'a>(it: &'a Item, f: &mut dyn FnMut(Ref<'a>)) {
    let mut f = f;
    match it {
        Item::Comment(_) | Item::Verbatim(_) => {}
        Item::Localparam { width, value, .. } => {
            width_refs(width, &mut f);
            value.refs(&mut f);
        }
        Item::Net(d) => {
            decl_refs(d, &mut f);
            if let Some(e) = &d.init {
                e.refs(&mut f);
            }
        }
        Item::Assign(l, r) => {
            l.refs(&mut f);
            r.refs(&mut f);
        }
        Item::Clocked(body) => body.iter().for_each(|s| stmt_refs(s, &mut f)),
        Item::Function(func) => width_refs(&func.width, &mut f),
        Item::Instance(inst) => {
            for (_, e) in inst.params.iter().chain(&inst.conns) {
                e.refs(&mut f);
            }
        }
        Item::GenFor { count, body, .. } => {
            count.refs(&mut f);
            body_refs(body, &mut f);
        }
        Item::GenIf {
            cond, then, els, ..
        } => {
            cond.refs(&mut f);
            body_refs(then, &mut f);
            body_refs(els, &mut f);
        }
    }
}

fn body_refs<'a>(body: &'a [Item], f: &mut dyn FnMut(Ref<'a>)) {
    let (nets, consts) = declared(body);
    for it in body {
        item_refs(it, &mut |r| match r {
            Ref::Net(n) if nets.contains(&n) => {}
            Ref::Const(c) if consts.contains(&c) => {}
            r => f(r),
        });
    }
}

/// A name declared in a scope: a net or a localparam.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Name {
    Net(Net),
    Const(Const),
}

fn name_of(r: Ref) -> Option<Name> {
    match r {
        Ref::Net(n) => Some(Name::Net(n)),
        Ref::Const(c) => Some(Name::Const(c)),
        _ => None,
    }
}

/// The nets and localparams of `items` used before their declaration,
/// with what their declarations need in turn, in the order to declare
/// them: each after what it needs, else in the order of the scope.
fn hoisted(items: &[Item], module: &str) -> Vec<Name> {
    let mut at: HashMap<Name, usize> = HashMap::new();
    for (k, it) in items.iter().enumerate() {
        let name = match it {
            Item::Net(d) => Name::Net(d.net),
            Item::Localparam { name, .. } => Name::Const(*name),
            _ => continue,
        };
        if at.insert(name, k).is_some() {
            let shown = match name {
                Name::Net(n) => n.name(),
                Name::Const(c) => c.name(),
            };
            panic!("{module}: `{shown}` is declared twice in one scope");
        }
    }
    let mut early: Vec<Name> = Vec::new();
    for (k, it) in items.iter().enumerate() {
        item_refs(it, &mut |r| {
            if let Some(n) = name_of(r) {
                // A declaration's own name is no use of it.
                if at
                    .get(&n)
                    .is_some_and(|&d| d > k || (d == k && !declares(it, n)))
                {
                    early.push(n);
                }
            }
        });
    }
    // What a hoisted declaration needs is needed at the top too.
    let needs = |n: Name| -> Vec<Name> {
        let mut v = Vec::new();
        let mut f = |r: Ref| v.extend(name_of(r).filter(|d| at.contains_key(d)));
        match &items[at[&n]] {
            Item::Net(d) => decl_refs(d, &mut f),
            Item::Localparam { width, value, .. } => {
                width_refs(width, &mut f);
                value.refs(&mut f);
            }
            _ => unreachable!("a declaration"),
        }
        v
    };
    let mut roots: Vec<Name> = early;
    roots.sort_by_key(|n| at[n]);
    roots.dedup();
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    fn visit(
        n: Name,
        needs: &dyn Fn(Name) -> Vec<Name>,
        at: &HashMap<Name, usize>,
        seen: &mut HashSet<Name>,
        order: &mut Vec<Name>,
    ) {
        if !seen.insert(n) {
            return;
        }
        let mut deps = needs(n);
        deps.sort_by_key(|d| at[d]);
        for d in deps {
            visit(d, needs, at, seen, order);
        }
        order.push(n);
    }
    for n in roots {
        visit(n, &needs, &at, &mut seen, &mut order);
    }
    order
}

fn declares(it: &Item, n: Name) -> bool {
    match (it, n) {
        (Item::Net(d), Name::Net(x)) => d.net == x,
        (Item::Localparam { name, .. }, Name::Const(x)) => *name == x,
        _ => false,
    }
}

/// Checks every name `items` use against `syms` (and the scopes around).
fn check_scope(items: &[Item], syms: &Symbols) {
    for it in items {
        match it {
            Item::GenFor { count, .. } => count.refs(&mut |r| syms.check(r)),
            Item::GenIf { cond, .. } => cond.refs(&mut |r| syms.check(r)),
            Item::Function(func) => check_function(func, syms),
            it => item_refs(it, &mut |r| syms.check(r)),
        }
    }
}

fn check_function(func: &Function, module: &Symbols) {
    let mut nets: HashSet<Net> = func.inputs.iter().map(|(n, ..)| *n).collect();
    nets.extend(func.locals.iter().map(|d| d.net));
    let own = Symbols {
        module: module.module,
        parent: Some(module),
        nets,
        consts: HashSet::new(),
        ids: [func.name].into_iter().collect(),
        functions: module.functions,
    };
    width_refs(&func.width, &mut |r| module.check(r));
    for s in &func.body {
        stmt_refs(s, &mut |r| own.check(r));
    }
}

/// Prints the items of one scope (a module body or a generate block),
/// those used before their declaration declared first.
fn scope(o: &mut Out, list: &[Item], syms: &Symbols, top: bool) {
    check_scope(list, syms);
    let early = hoisted(list, syms.module);
    if !early.is_empty() {
        o.line("// Used before the logic that drives them, so declared first:");
        for n in &early {
            for it in list {
                match (it, n) {
                    (Item::Net(d), Name::Net(x)) if d.net == *x => o.line(&net(d, false)),
                    (Item::Localparam { name, width, value }, Name::Const(x)) if name == x => {
                        o.line(&localparam(*name, width, value))
                    }
                    _ => {}
                }
            }
        }
    }
    let early: HashSet<Name> = early.into_iter().collect();
    for it in list {
        let gen = top && matches!(it, Item::GenFor { .. } | Item::GenIf { .. });
        if gen {
            o.line("generate");
        }
        item(o, it, syms, &early);
        if gen {
            o.line("endgenerate");
        }
    }
}

/// The body of a generate block, a scope of its own.
fn body(o: &mut Out, list: &[Item], parent: &Symbols) {
    let (nets, consts) = declared(list);
    let syms = Symbols {
        module: parent.module,
        parent: Some(parent),
        nets,
        consts,
        ids: HashSet::new(),
        functions: parent.functions,
    };
    o.indented(|o| scope(o, list, &syms, false));
}

fn item(o: &mut Out, it: &Item, syms: &Symbols, early: &HashSet<Name>) {
    match it {
        Item::Comment(c) => {
            for l in c.lines() {
                o.line(&format!("// {l}"));
            }
        }
        Item::Verbatim(text) => {
            // Printed as written, its own indentation kept.
            for l in text.lines() {
                o.text.push_str(l);
                o.text.push('\n');
            }
        }
        Item::Localparam { name, width, value } => {
            if !early.contains(&Name::Const(*name)) {
                o.line(&localparam(*name, width, value));
            }
        }
        Item::Net(n) => {
            if !early.contains(&Name::Net(n.net)) {
                o.line(&net(n, true));
            } else if let Some(e) = &n.init {
                o.line(&format!("assign {} = {e};", n.net.name()));
            }
        }
        Item::Assign(l, r) => o.line(&format!("assign {l} = {r};")),
        Item::Clocked(body) => {
            o.line("always @(posedge clk) begin");
            o.indented(|o| stmts(o, body));
            o.line("end");
        }
        Item::Function(f) => {
            o.line(&format!(
                "function{} {}{};",
                if f.signed { " signed" } else { "" },
                range(&f.width),
                f.name
            ));
            o.indented(|o| {
                for (n, w, signed) in &f.inputs {
                    o.line(&format!("{};", decl("input", *signed, w, n.name())));
                }
                for n in &f.locals {
                    o.line(&net(n, true));
                }
                o.line("begin");
                o.indented(|o| stmts(o, &f.body));
                o.line("end");
            });
            o.line("endfunction");
        }
        Item::Instance(inst) => {
            let p: Vec<String> = inst
                .params
                .iter()
                .map(|(n, e)| format!(".{n}({})", tight(e)))
                .collect();
            let one_line = format!("{} #({}) {} (", inst.module, p.join(", "), inst.name);
            if p.is_empty() {
                o.line(&format!("{} {} (", inst.module, inst.name));
            } else if one_line.len() <= LINE {
                o.line(&one_line);
            } else {
                // A long parameter list (the formal checker's), one per line.
                o.line(&format!("{} #(", inst.module));
                o.indented(|o| {
                    for (k, param) in p.iter().enumerate() {
                        let comma = if k + 1 < p.len() { "," } else { "" };
                        o.line(&format!("{param}{comma}"));
                    }
                });
                o.line(&format!(") {} (", inst.name));
            }
            o.indented(|o| {
                let n = inst.conns.len();
                for (k, (port, e)) in inst.conns.iter().enumerate() {
                    let comma = if k + 1 < n { "," } else { "" };
                    o.line(&format!(".{port}({e}){comma}"));
                }
            });
            o.line(");");
        }
        Item::GenFor {
            var,
            count,
            label,
            body: list,
        } => {
            o.line(&format!(
                "for ({var} = 0; {var} < {}; {var} = {var} + 1) begin : {label}",
                tight(count)
            ));
            body(o, list, syms);
            o.line("end");
        }
        Item::GenIf {
            cond,
            label,
            then,
            els,
        } => {
            o.line(&format!("if ({cond}) begin : {label}"));
            body(o, then, syms);
            if els.is_empty() {
                o.line("end");
            } else {
                o.line(&format!("end else begin : {label}"));
                body(o, els, syms);
                o.line("end");
            }
        }
    }
}

/// The functions `items` declare, at any depth.
fn functions(items: &[Item], out: &mut HashSet<&'static str>) {
    for it in items {
        match it {
            Item::Function(f) => {
                out.insert(f.name);
            }
            Item::GenFor { body, .. } => functions(body, out),
            Item::GenIf { then, els, .. } => {
                functions(then, out);
                functions(els, out);
            }
            _ => {}
        }
    }
}

/// The Verilog text of one module.
pub fn module(m: &Module) -> String {
    let mut o = Out {
        text: String::new(),
        depth: 0,
    };
    for d in &m.doc {
        o.line(format!("// {d}").trim_end());
    }
    o.line("// Generated by sysgrad-hdl; do not edit. Contract: docs/ARCHITECTURE.md");
    o.line("`default_nettype none");
    o.line("");
    if m.params.is_empty() {
        o.line(&format!("module {} (", m.name));
    } else {
        o.line(&format!("module {} #(", m.name));
        o.indented(|o| {
            let n = m.params.len();
            for (k, p) in m.params.iter().enumerate() {
                let comma = if k + 1 < n { "," } else { "" };
                let (kind, value) = match p.bits {
                    None => ("integer".to_string(), p.default.to_string()),
                    Some(n) => (format!("[{}:0]", n - 1), format!("{n}'d{}", p.default)),
                };
                o.line(&format!(
                    "parameter {kind} {} = {value}{comma}  // {}",
                    p.name, p.doc
                ));
            }
        });
        o.line(") (");
    }
    o.indented(|o| {
        let n = m.ports.len();
        for (k, p) in m.ports.iter().enumerate() {
            let dir = match p.dir {
                Dir::Input => "input wire",
                Dir::Output => "output wire",
                Dir::OutputReg => "output reg",
            };
            let comma = if k + 1 < n { "," } else { "" };
            o.line(&format!(
                "{}{comma}",
                decl(dir, p.signed, &p.width, p.name())
            ));
        }
    });
    o.line(");");
    let mut funcs = HashSet::new();
    functions(&m.items, &mut funcs);
    let ports = Symbols {
        module: &m.name,
        parent: None,
        nets: m.ports.iter().map(|p| p.net).collect(),
        consts: HashSet::new(),
        ids: m
            .params
            .iter()
            .map(|p| p.name.as_str())
            .chain(m.genvars.iter().map(String::as_str))
            .collect(),
        functions: &funcs,
    };
    for p in &m.ports {
        width_refs(&p.width, &mut |r| ports.check(r));
    }
    let (nets, consts) = declared(&m.items);
    if let Some(p) = m.ports.iter().find(|p| nets.contains(&p.net)) {
        panic!("{}: port `{}` is declared again as a net", m.name, p.name());
    }
    let syms = Symbols {
        module: &m.name,
        parent: Some(&ports),
        nets,
        consts,
        ids: HashSet::new(),
        functions: &funcs,
    };
    o.indented(|o| {
        if !m.genvars.is_empty() {
            o.line(&format!("genvar {};", m.genvars.join(", ")));
        }
        scope(o, &m.items, &syms, true);
    });
    o.line("endmodule");
    o.line("");
    o.line("`default_nettype wire");
    o.text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module_of(build: impl FnOnce(&mut Scope)) -> Module {
        let mut s = Scope::new();
        build(&mut s);
        Module {
            name: "m".into(),
            doc: vec![],
            params: vec![param("W", 4, "width")],
            ports: vec![input("clk", Width::bit()), output("q", Width::bit())],
            genvars: vec![],
            items: s.into_items(),
        }
    }

    #[test]
    fn a_net_used_before_its_declaration_is_declared_first() {
        let later = Net::named("later");
        let m = module_of(|s| {
            let a = s.flag("a", later);
            let w = s.localparam("LW", Width::bit(), id("W") + 1);
            s.define(wire_for(later, Width::of(w)).init(a.e().at(0)));
            s.assign(Net::named("q"), later.at(0));
        });
        let text = module(&m);
        let body: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(");"))
            .skip(1)
            .map(str::trim)
            .collect();
        assert_eq!(
            &body[..6],
            [
                "// Used before the logic that drives them, so declared first:",
                "localparam LW = W + 1;",
                "wire [LW-1:0] later;",
                "wire a = later;",
                "assign later = a[0];",
                "assign q = later[0];",
            ]
        );
    }

    #[test]
    #[should_panic(expected = "net `nowhere` is used but not declared")]
    fn an_undeclared_net_is_a_generator_bug() {
        module(&module_of(|s| {
            s.assign(Net::named("q"), Net::named("nowhere"))
        }));
    }

    #[test]
    #[should_panic(expected = "parameter or genvar `V`")]
    fn an_undeclared_parameter_is_a_generator_bug() {
        module(&module_of(|s| {
            s.wire("x", Width::of(id("V")));
        }));
    }

    #[test]
    #[should_panic(expected = "`x` is declared twice")]
    fn a_net_declared_twice_is_a_generator_bug() {
        module(&module_of(|s| {
            s.wire("x", Width::bit());
            s.wire("x", Width::bit());
        }));
    }
}
