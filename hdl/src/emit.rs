//! Prints the IR as indented Verilog-2005, one module per file.

use crate::ir::*;
use std::fmt::Write;

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

fn net(n: &Net) -> String {
    let kind = match n.kind {
        NetKind::Wire => "wire",
        NetKind::Reg => "reg",
    };
    let mut s = decl(kind, n.signed, &n.width, &n.name);
    if let Some(a) = &n.array {
        write!(s, " [0:{}]", tight(&minus_one(a))).unwrap();
    }
    if let Some(e) = &n.init {
        write!(s, " = {e}").unwrap();
    }
    s.push(';');
    s
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

fn items(o: &mut Out, list: &[Item]) {
    for it in list {
        item(o, it);
    }
}

/// Module-level items; top-level generate constructs get their own
/// `generate` region (optional in Verilog-2005, but clearer to read).
fn top_items(o: &mut Out, list: &[Item]) {
    for it in list {
        let gen = matches!(it, Item::GenFor { .. } | Item::GenIf { .. });
        if gen {
            o.line("generate");
        }
        item(o, it);
        if gen {
            o.line("endgenerate");
        }
    }
}

fn item(o: &mut Out, it: &Item) {
    match it {
        Item::Comment(c) => {
            for l in c.lines() {
                o.line(&format!("// {l}"));
            }
        }
        Item::Localparam { name, width, value } => {
            o.line(&format!("localparam {}{name} = {value};", range(width)));
        }
        Item::Net(n) => o.line(&net(n)),
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
                for (name, w, signed) in &f.inputs {
                    o.line(&format!("{};", decl("input", *signed, w, name)));
                }
                for n in &f.locals {
                    o.line(&net(n));
                }
                o.line("begin");
                o.indented(|o| stmts(o, &f.body));
                o.line("end");
            });
            o.line("endfunction");
        }
        Item::Instance(inst) => {
            let params = if inst.params.is_empty() {
                String::new()
            } else {
                let p: Vec<String> = inst
                    .params
                    .iter()
                    .map(|(n, e)| format!(".{n}({})", tight(e)))
                    .collect();
                format!(" #({})", p.join(", "))
            };
            o.line(&format!("{}{params} {} (", inst.module, inst.name));
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
            body,
        } => {
            o.line(&format!(
                "for ({var} = 0; {var} < {}; {var} = {var} + 1) begin : {label}",
                tight(count)
            ));
            o.indented(|o| items(o, body));
            o.line("end");
        }
        Item::GenIf {
            cond,
            label,
            then,
            els,
        } => {
            o.line(&format!("if ({cond}) begin : {label}"));
            o.indented(|o| items(o, then));
            if els.is_empty() {
                o.line("end");
            } else {
                o.line(&format!("end else begin : {label}"));
                o.indented(|o| items(o, els));
                o.line("end");
            }
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
    o.line(&format!("module {} #(", m.name));
    o.indented(|o| {
        let n = m.params.len();
        for (k, p) in m.params.iter().enumerate() {
            let comma = if k + 1 < n { "," } else { "" };
            o.line(&format!(
                "parameter integer {} = {}{comma}  // {}",
                p.name, p.default, p.doc
            ));
        }
    });
    o.line(") (");
    o.indented(|o| {
        let n = m.ports.len();
        for (k, p) in m.ports.iter().enumerate() {
            let dir = match p.dir {
                Dir::Input => "input wire",
                Dir::Output => "output wire",
            };
            let comma = if k + 1 < n { "," } else { "" };
            o.line(&format!(
                "{}{comma}",
                decl(dir, p.signed, &p.width, &p.name)
            ));
        }
    });
    o.line(");");
    o.indented(|o| {
        if !m.genvars.is_empty() {
            o.line(&format!("genvar {};", m.genvars.join(", ")));
        }
        top_items(o, &m.items);
    });
    o.line("endmodule");
    o.line("");
    o.line("`default_nettype wire");
    o.text
}
