//! A stable, compact text form of a lowered [`Task`], snapshotted beside the expansions
//! (`*_ir.snap`): signature, frame, callees, then each segment's statements with expressions
//! printed as token text. Facts the IR does not store (which fields are spawn destinations, how
//! many spawn sites a segment has) are recomputed here from the statements.

use crate::ir::{path_text, visit_spawns, Callee, Dest, End, FieldType, Stmt, Task, Term};
use std::fmt::{self, Write as _};

/// A stable, compact text form of a task (for tests and for reading): signature, frame,
/// callees, then each segment's statements with expressions printed as token text.
pub(crate) fn dump(task: &Task) -> String {
    let mut d = Dumper { out: String::new() };
    d.task(task);
    d.out
}

struct Dumper {
    out: String,
}

fn tok<T: quote::ToTokens>(t: &T) -> String {
    t.to_token_stream().to_string()
}

impl Dumper {
    fn line(&mut self, depth: usize, text: fmt::Arguments<'_>) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        let _ = self.out.write_fmt(text);
        self.out.push('\n');
    }

    fn task(&mut self, t: &Task) {
        let params: Vec<String> = t
            .params
            .iter()
            .map(|p| format!("{}{}: {}", if p.mutable { "mut " } else { "" }, p.name, tok(&p.ty)))
            .collect();
        let out = t.output.as_ref().map_or("()".to_string(), tok);
        self.line(0, format_args!("task {}({}) -> {}", t.name, params.join(", "), out));
        self.line(0, format_args!("syncs {}, fanout {:?}", t.syncs(), t.fanout));
        if let Some(base) = t.sum_base {
            self.line(0, format_args!("sum of children + {base}"));
        }
        let callees: Vec<String> = t.callees.iter().map(Callee::display).collect();
        self.line(0, format_args!("callees [{}]", callees.join(", ")));
        self.line(0, format_args!("frame"));
        // The names some spawn writes into (frame names are unique in a lowered task).
        let mut dests = Vec::new();
        for s in &t.segments {
            visit_spawns(&s.body, &mut |site| match &site.dest {
                Dest::Discard => {}
                Dest::Local { name, .. } => dests.push(name.clone()),
                Dest::Element { array, .. } => dests.push(array.clone()),
            });
        }
        for f in &t.frame {
            let ty = match &f.ty {
                FieldType::Declared(ty) => tok(ty),
                FieldType::OutputOf(c) => {
                    format!("output of {}", t.callees.get(*c).map_or("?".into(), Callee::display))
                }
            };
            self.line(
                1,
                format_args!(
                    "{}{}: {} (seg {}, {:?}{})",
                    if f.mutable { "mut " } else { "" },
                    f.name,
                    ty,
                    f.segment,
                    f.origin,
                    if dests.contains(&f.name) {
                        ", spawn dest"
                    } else if f.temp {
                        ", temp"
                    } else {
                        ""
                    }
                ),
            );
        }
        if let Some(m) = &t.machine {
            for (k, b) in m.blocks.iter().enumerate() {
                self.line(0, format_args!("block b{k}{}", if b.header { " (loop header)" } else { "" }));
                self.stmts(1, &b.stmts);
                match &b.term {
                    Term::Goto(j) => self.line(1, format_args!("=> goto b{j}")),
                    Term::Branch { cond, then, els } => {
                        self.line(1, format_args!("=> if {} then b{then} else b{els}", tok(cond)))
                    }
                    Term::Sync(j) => self.line(1, format_args!("=> sync, resume at b{j}")),
                    Term::Tail(e) => self.line(1, format_args!("=> return {}", tok(e))),
                    Term::FallOff => self.line(1, format_args!("=> fall off")),
                }
            }
            return;
        }
        for s in &t.segments {
            let restores: Vec<String> =
                s.restores.iter().filter_map(|&i| t.frame.get(i)).map(|f| f.name.to_string()).collect();
            self.line(0, format_args!("segment {} (spawns {}) restores [{}]", s.index, s.spawns, restores.join(", ")));
            self.stmts(1, &s.body);
            match &s.end {
                End::Sync => self.line(1, format_args!("=> sync")),
                End::Tail(e) => self.line(1, format_args!("=> return {}", tok(e))),
                End::FallOff => self.line(1, format_args!("=> fall off")),
            }
        }
    }

    fn stmts(&mut self, depth: usize, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(depth, s);
        }
    }

    fn stmt(&mut self, depth: usize, s: &Stmt) {
        match s {
            Stmt::Let(l) => {
                let ty = l.ty.as_ref().map(|t| format!(": {}", tok(t))).unwrap_or_default();
                let init = l.init.as_ref().map(|e| format!(" = {}", tok(e))).unwrap_or_default();
                let frame = if l.frame { "  [frame]" } else { "" };
                let m = if l.mutable { "mut " } else { "" };
                let init = match &l.alloc {
                    Some(a) => format!(" = alloc({}, {})", tok(&a.elem), tok(&a.len)),
                    None => init,
                };
                self.line(depth, format_args!("let {m}{}{ty}{init}{frame}", l.name));
            }
            Stmt::Spawn(site) => {
                let mut args: Vec<String> = site.args.iter().map(tok).collect();
                if let Some(p) = &site.priority {
                    args.push(format!("priority = {}", tok(p)));
                }
                let dest = match &site.dest {
                    Dest::Discard => "discard".to_string(),
                    Dest::Local { name, decl: Some(_) } => format!("let {name}"),
                    Dest::Local { name, decl: None } => name.to_string(),
                    Dest::Element { array, index } => format!("{array}[{}]", tok(index)),
                };
                let lp = if site.in_loop { " (in loop)" } else { "" };
                self.line(
                    depth,
                    format_args!("spawn#{} {}({}) -> {dest}{lp}", site.index, path_text(&site.path), args.join(", ")),
                );
            }
            Stmt::If(i) => {
                self.line(depth, format_args!("if {}", tok(&i.cond)));
                self.stmts(depth + 1, &i.then);
                if let Some(e) = &i.els {
                    self.line(depth, format_args!("else"));
                    self.stmts(depth + 1, e);
                }
            }
            Stmt::While { cond, body } => {
                self.line(depth, format_args!("while {}", tok(cond)));
                self.stmts(depth + 1, body);
            }
            Stmt::Loop { body } => {
                self.line(depth, format_args!("loop"));
                self.stmts(depth + 1, body);
            }
            Stmt::For(f) => {
                let op = if f.inclusive { "..=" } else { ".." };
                self.line(depth, format_args!("for {} in {}{op}{}", f.var, tok(&f.start), tok(&f.end)));
                self.stmts(depth + 1, &f.body);
            }
            Stmt::Block(b) => {
                self.line(depth, format_args!("block"));
                self.stmts(depth + 1, b);
            }
            Stmt::Return(e) => {
                let v = e.as_ref().map(tok).unwrap_or_default();
                self.line(depth, format_args!("return {v}"));
            }
            Stmt::Expr { expr, semi } => {
                self.line(depth, format_args!("{}{}", tok(expr), if *semi { ";" } else { "" }));
            }
            Stmt::Sync(_) => self.line(depth, format_args!("sync")),
            Stmt::Jump(k) => self.line(depth, format_args!("jump b{k}")),
        }
    }
}
