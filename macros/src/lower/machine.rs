//! A body with a `sync!()` nested in control flow → a [`Machine`]: the state-machine transform
//! that Rust applies to an `async fn`.
//!
//! This module owns the rules of such a body:
//!
//! - statements that contain no `sync!()` stay structured (a sync-free `while` is one statement
//!   of its block); `if`/`else`, `while`, `loop`, `for` and blocks that contain a `sync!()` become
//!   blocks and jumps, and each `sync!()` ends a block whose successor is the *resume point* that
//!   the frame stores;
//! - `for v in a..b` around a sync keeps `v` and the range end in the frame;
//!   `break`/`continue` of such a loop become [`Stmt::Jump`]s (inside an expression whose value is
//!   used they are rejected);
//! - every parameter, every `let` of a statement list that a `sync!()` follows in that list, and
//!   every spawn destination is a frame field (its type must be known); a field may not shadow
//!   another visible field (nor may a `let` of a split statement list that stays a block local);
//!   two sibling declarations of one name and type share a field;
//! - a spawn destination must be a visible field (not a local of a sync-free nested block);
//! - a destination may not be read where a spawn into it may still be outstanding, on any path
//!   through the graph (a dataflow over the blocks; a `sync!()` clears every destination).
//!
//! Errors go into the caller's [`Errors`].

use super::resolve::syntactic_type;
use crate::error::{self, Errors};
use crate::ir::{Block, Dest, FieldOrigin, FieldType, FrameField, If, Machine, Param, Stmt, Term};
use proc_macro2::Span;
use quote::quote;
use std::collections::BTreeSet;
use syn::visit::Visit;
use syn::{Expr, Ident, Type};

/// Does `s` contain a `sync!()` (at any depth)?
pub(super) fn has_sync(s: &Stmt) -> bool {
    match s {
        Stmt::Sync(_) => true,
        Stmt::If(i) => i.then.iter().any(has_sync) || i.els.as_ref().is_some_and(|e| e.iter().any(has_sync)),
        Stmt::While { body, .. } | Stmt::Loop { body } | Stmt::Block(body) => body.iter().any(has_sync),
        Stmt::For(f) => f.body.iter().any(has_sync),
        Stmt::Let(_) | Stmt::Spawn(_) | Stmt::Return(_) | Stmt::Expr { .. } | Stmt::Jump(_) => false,
    }
}

/// Lowers `body` (its spawn sites already numbered) to a machine and its frame.
pub(super) fn build(
    params: &[Param],
    body: Vec<Stmt>,
    tail: Option<Expr>,
    errors: &mut Errors,
) -> (Machine, Vec<FrameField>) {
    let mut b = Builder {
        blocks: vec![Block { stmts: Vec::new(), term: Term::FallOff, header: false }],
        cur: 0,
        loops: Vec::new(),
        fields: Vec::new(),
        scopes: vec![Vec::new()],
        ends: 0,
        errors,
    };
    for p in params {
        b.field(&p.name, p.mutable, FieldType::Declared(p.ty.clone()), FieldOrigin::Param);
    }
    b.list_then(body, tail.as_ref());
    let term = match tail {
        Some(t) => Term::Tail(t),
        None => Term::FallOff,
    };
    b.seal(term);
    let machine = Machine { blocks: b.blocks };
    let frame = b.fields;
    check_reads(&machine, b.errors);
    (machine, frame)
}

struct Builder<'e> {
    blocks: Vec<Block>,
    /// The block being filled.
    cur: usize,
    /// (break target, continue target) of each enclosing loop that contains a sync.
    loops: Vec<(usize, usize)>,
    fields: Vec<FrameField>,
    /// The frame fields visible in each enclosing statement list (innermost last).
    scopes: Vec<Vec<usize>>,
    /// `for` loops lowered so far (names their range-end fields).
    ends: usize,
    errors: &'e mut Errors,
}

impl Builder<'_> {
    fn new_block(&mut self, header: bool) -> usize {
        self.blocks.push(Block { stmts: Vec::new(), term: Term::FallOff, header });
        self.blocks.len() - 1
    }

    fn seal(&mut self, term: Term) {
        if let Some(b) = self.blocks.get_mut(self.cur) {
            b.term = term;
        }
    }

    fn push(&mut self, s: Stmt) {
        if let Some(b) = self.blocks.get_mut(self.cur) {
            b.stmts.push(s);
        }
    }

    fn visible(&self, name: &str) -> Option<usize> {
        self.scopes.iter().rev().flat_map(|s| s.iter().rev()).copied().find(|&i| self.fields[i].name == name)
    }

    fn field_type(&self, ty: &FieldType) -> String {
        match ty {
            FieldType::Declared(t) => quote!(#t).to_string(),
            FieldType::OutputOf(c) => format!("output of {c}"),
        }
    }

    /// Declares frame field `name` in the innermost scope.
    fn field(&mut self, name: &Ident, mutable: bool, ty: FieldType, origin: FieldOrigin) -> usize {
        // Slice parameters live in the frame as `RawSlice`s (the expansion rebinds them); a slice
        // local would have to be re-derived from its parameter after the sync instead.
        if origin == FieldOrigin::Local {
            if let FieldType::Declared(t) = &ty {
                if crate::syntax::slice_type(t).is_some() {
                    self.errors.push(crate::syntax::slice_or_view(t, error::SLICE_FRAME, error::VIEW_FRAME).on(name));
                } else if crate::syntax::bound_type(t).is_some() {
                    self.errors.push(error::BOUND_FRAME.on(name));
                }
            }
        }
        if self.visible(&name.to_string()).is_some() {
            self.errors.push(error::machine_shadowed(name));
        }
        let text = self.field_type(&ty);
        let idx = match self.fields.iter().position(|f| f.name == *name) {
            Some(i) => {
                if self.field_type(&self.fields[i].ty) != text {
                    self.errors.push(error::machine_shadowed(name));
                }
                self.fields[i].mutable |= mutable;
                i
            }
            None => {
                self.fields.push(FrameField { name: name.clone(), mutable, ty, segment: 0, origin, temp: false });
                self.fields.len() - 1
            }
        };
        if let Some(s) = self.scopes.last_mut() {
            s.push(idx);
        }
        idx
    }

    /// The type of `e` when it is written in it or `e` names a visible field.
    fn type_of(&self, e: &Expr) -> Option<Type> {
        if let Some(t) = syntactic_type(e) {
            return Some(t);
        }
        match e {
            Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                match &self.fields[self.visible(&name)?].ty {
                    FieldType::Declared(t) => Some(t.clone()),
                    FieldType::OutputOf(_) => None,
                }
            }
            // `t.0` of a tuple-typed field.
            Expr::Field(f) => match (&f.member, self.type_of(&f.base)?) {
                (syn::Member::Unnamed(i), Type::Tuple(t)) => t.elems.iter().nth(i.index as usize).cloned(),
                _ => None,
            },
            // `a.len()` of a slice or temporary field (`for i in 0..a.len()`).
            Expr::MethodCall(m) if m.method == "len" && m.args.is_empty() => {
                let t = self.type_of(&m.receiver)?;
                (crate::syntax::slice_type(&t).is_some() || crate::syntax::temp_type_elem(&t).is_some())
                    .then(|| syn::parse_quote!(usize))
            }
            _ => None,
        }
    }

    fn list(&mut self, stmts: Vec<Stmt>) {
        self.list_then(stmts, None);
    }

    /// A statement list followed by `tail` (the function body's value).
    fn list_then(&mut self, stmts: Vec<Stmt>, tail: Option<&Expr>) {
        self.scopes.push(Vec::new());
        // A `let` lives in the frame when its name is mentioned from the first statement after
        // it that contains a sync on (control is then in another block).
        let first_split: Vec<Option<usize>> =
            (0..stmts.len()).map(|i| (i + 1..stmts.len()).find(|&j| stmts.get(j).is_some_and(has_sync))).collect();
        let lives: Vec<bool> = stmts
            .iter()
            .enumerate()
            .map(|(i, s)| match (s, first_split[i]) {
                (Stmt::Let(l), Some(j)) => {
                    let mut in_tail = false;
                    if let Some(t) = tail {
                        let mut names = Vec::new();
                        all_names(t, &mut names);
                        in_tail = names.contains(&l.name);
                    }
                    in_tail || mentions(&stmts[j..], &l.name)
                }
                _ => false,
            })
            .collect();
        for (i, s) in stmts.into_iter().enumerate() {
            self.stmt(s, lives[i]);
        }
        self.scopes.pop();
    }

    /// `s` of a split list; `lives`: a `let` that lives in the frame.
    fn stmt(&mut self, s: Stmt, lives: bool) {
        match s {
            Stmt::Sync(_) => {
                let next = self.new_block(false);
                self.seal(Term::Sync(next));
                self.cur = next;
            }
            Stmt::Let(l) if lives => {
                if let Some(a) = &l.alloc {
                    self.errors.push(error::ALLOC_IN_MACHINE.on_span(a.span));
                    return;
                }
                let ty = l.ty.clone().or_else(|| l.init.as_ref().and_then(|e| self.type_of(e)));
                if let Some(init) = &l.init {
                    self.check_jumps_in(init);
                }
                let Some(ty) = ty else {
                    self.errors.push(error::frame_type_unknown(&l.name));
                    return;
                };
                self.field(&l.name, l.mutable, FieldType::Declared(ty), FieldOrigin::Local);
                if let Some(init) = l.init {
                    let name = &l.name;
                    self.push(Stmt::Expr { expr: syn::parse_quote!(#name = #init), semi: true });
                }
            }
            Stmt::Spawn(mut site) => {
                for a in site.exprs() {
                    self.check_jumps_in(a);
                }
                match &mut site.dest {
                    Dest::Local { name, decl } => {
                        if let Some(d) = decl.take() {
                            let ty = match d.ty {
                                Some(t) => FieldType::Declared(t),
                                None => FieldType::OutputOf(site.callee),
                            };
                            self.field(name, d.mutable, ty, FieldOrigin::Local);
                        } else if self.visible(&name.to_string()).is_none() {
                            self.errors.push(error::spawn_into_unknown(name));
                        }
                    }
                    Dest::Element { array, .. } => {
                        if self.visible(&array.to_string()).is_none() {
                            self.errors.push(error::spawn_into_unknown(array));
                        }
                    }
                    Dest::Discard => {}
                }
                self.push(Stmt::Spawn(site));
            }
            s if has_sync(&s) => self.split(s),
            mut other => {
                if let Stmt::Let(l) = &other {
                    if let Some(a) = &l.alloc {
                        self.errors.push(error::ALLOC_IN_MACHINE.on_span(a.span));
                        return;
                    }
                    // A block-local `let` stays in scope to the end of its block, where a sync
                    // stores the frame by name: it may not hide a field.
                    if self.visible(&l.name.to_string()).is_some() {
                        self.errors.push(error::machine_shadowed(&l.name));
                    }
                }
                self.nested_dests(&other);
                if let Some(&(brk, cont)) = self.loops.last() {
                    self.rewrite_jumps(&mut other, brk, cont);
                }
                self.push(other);
            }
        }
    }

    /// A statement that contains a sync: blocks and jumps.
    fn split(&mut self, s: Stmt) {
        match s {
            Stmt::If(If { cond, then, els, .. }) => {
                self.check_jumps_in(&cond);
                let then_b = self.new_block(false);
                let join = self.new_block(false);
                let els_b = if els.is_some() { self.new_block(false) } else { join };
                self.seal(Term::Branch { cond, then: then_b, els: els_b });
                self.cur = then_b;
                self.list(then);
                self.seal(Term::Goto(join));
                if let Some(e) = els {
                    self.cur = els_b;
                    self.list(e);
                    self.seal(Term::Goto(join));
                }
                self.cur = join;
            }
            Stmt::While { cond, body } => {
                self.check_jumps_in(&cond);
                let head = self.new_block(true);
                let exit = self.new_block(false);
                let first = self.new_block(false);
                self.seal(Term::Goto(head));
                self.cur = head;
                self.seal(Term::Branch { cond, then: first, els: exit });
                self.cur = first;
                self.loops.push((exit, head));
                self.list(body);
                self.loops.pop();
                self.seal(Term::Goto(head));
                self.cur = exit;
            }
            Stmt::Loop { body } => {
                let head = self.new_block(true);
                let exit = self.new_block(false);
                self.seal(Term::Goto(head));
                self.cur = head;
                self.loops.push((exit, head));
                self.list(body);
                self.loops.pop();
                self.seal(Term::Goto(head));
                self.cur = exit;
            }
            Stmt::For(f) => {
                self.check_jumps_in(&f.start);
                self.check_jumps_in(&f.end);
                let ty = self.type_of(&f.start).or_else(|| self.type_of(&f.end));
                let Some(ty) = ty else {
                    self.errors.push(error::for_type_unknown(&f.var));
                    return;
                };
                self.scopes.push(Vec::new());
                let end = Ident::new(&format!("__gc_end{}", self.ends), Span::call_site());
                self.ends += 1;
                // The range end first: it is evaluated before the variable exists.
                self.field(&end, false, FieldType::Declared(ty.clone()), FieldOrigin::Local);
                let (var, start, end_e) = (&f.var, &f.start, &f.end);
                self.push(Stmt::Expr { expr: syn::parse_quote!(#end = #end_e), semi: true });
                self.field(var, f.mutable, FieldType::Declared(ty), FieldOrigin::Local);
                self.push(Stmt::Expr { expr: syn::parse_quote!(#var = #start), semi: true });
                let first = self.new_block(true);
                let step = self.new_block(false);
                let exit = self.new_block(false);
                let cond: Expr =
                    if f.inclusive { syn::parse_quote!(#var <= #end) } else { syn::parse_quote!(#var < #end) };
                self.seal(Term::Branch { cond, then: first, els: exit });
                self.cur = first;
                self.loops.push((exit, step));
                self.list(f.body);
                self.loops.pop();
                self.seal(Term::Goto(step));
                self.cur = step;
                if f.inclusive {
                    // `var == end` ends the loop before the increment could overflow.
                    let more = self.new_block(false);
                    self.seal(Term::Branch { cond: syn::parse_quote!(#var == #end), then: exit, els: more });
                    self.cur = more;
                    self.push(Stmt::Expr { expr: syn::parse_quote!(#var += 1), semi: true });
                    self.seal(Term::Goto(first));
                } else {
                    self.push(Stmt::Expr { expr: syn::parse_quote!(#var += 1), semi: true });
                    let cond: Expr = syn::parse_quote!(#var < #end);
                    self.seal(Term::Branch { cond, then: first, els: exit });
                }
                self.scopes.pop();
                self.cur = exit;
            }
            Stmt::Block(b) => self.list(b),
            other => self.push(other),
        }
    }

    /// Spawn destinations inside a sync-free statement: visible fields only.
    fn nested_dests(&mut self, s: &Stmt) {
        let mut declared: Vec<String> = Vec::new();
        collect_lets(std::slice::from_ref(s), &mut declared);
        let mut bad = Vec::new();
        crate::ir::visit_spawns(std::slice::from_ref(s), &mut |site| match &site.dest {
            Dest::Local { name, decl: Some(_) } => bad.push((name.clone(), true)),
            Dest::Local { name, decl: None } | Dest::Element { array: name, .. } => {
                let n = name.to_string();
                if declared.contains(&n) {
                    bad.push((name.clone(), true));
                } else if self.visible(&n).is_none() {
                    bad.push((name.clone(), false));
                }
            }
            Dest::Discard => {}
        });
        for (name, nested) in bad {
            self.errors.push(if nested { error::spawn_into_nested(&name) } else { error::spawn_into_unknown(&name) });
        }
    }

    /// `break;`/`continue;` of the enclosing sync loop → jumps (not inside nested loops).
    fn rewrite_jumps(&mut self, s: &mut Stmt, brk: usize, cont: usize) {
        match s {
            Stmt::Expr { expr: Expr::Break(b), .. } if b.label.is_none() && b.expr.is_none() => *s = Stmt::Jump(brk),
            Stmt::Expr { expr: Expr::Continue(c), .. } if c.label.is_none() => *s = Stmt::Jump(cont),
            Stmt::Expr { expr, .. } => self.check_jumps_in(&expr.clone()),
            Stmt::Let(l) => {
                if let Some(i) = l.init.clone() {
                    self.check_jumps_in(&i);
                }
            }
            Stmt::Return(Some(e)) => self.check_jumps_in(&e.clone()),
            Stmt::If(i) => {
                self.check_jumps_in(&i.cond.clone());
                for t in &mut i.then {
                    self.rewrite_jumps(t, brk, cont);
                }
                if let Some(e) = &mut i.els {
                    for t in e {
                        self.rewrite_jumps(t, brk, cont);
                    }
                }
            }
            Stmt::Block(b) => {
                for t in b {
                    self.rewrite_jumps(t, brk, cont);
                }
            }
            Stmt::While { cond, .. } => self.check_jumps_in(&cond.clone()),
            Stmt::For(f) => {
                self.check_jumps_in(&f.start.clone());
                self.check_jumps_in(&f.end.clone());
            }
            Stmt::Spawn(_) | Stmt::Loop { .. } | Stmt::Return(None) | Stmt::Sync(_) | Stmt::Jump(_) => {}
        }
    }

    /// A `break`/`continue` inside an expression (not a loop of its own) while a sync loop
    /// encloses it: it would have to leave a block of the machine.
    fn check_jumps_in(&mut self, e: &Expr) {
        if self.loops.is_empty() {
            return;
        }
        struct Find(Option<Span>);
        impl<'a> Visit<'a> for Find {
            fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
                self.0.get_or_insert(b.break_token.span);
            }
            fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
                self.0.get_or_insert(c.continue_token.span);
            }
            fn visit_expr_while(&mut self, w: &'a syn::ExprWhile) {
                self.visit_expr(&w.cond);
            }
            fn visit_expr_loop(&mut self, _: &'a syn::ExprLoop) {}
            fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
                self.visit_expr(&f.expr);
            }
            fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        }
        let mut f = Find(None);
        f.visit_expr(e);
        if let Some(span) = f.0 {
            self.errors.push(error::JUMP_IN_VALUE.on_span(span));
        }
    }
}

/// Does any statement of `stmts` mention `name` (read, write or spawn into it)?
fn mentions(stmts: &[Stmt], name: &Ident) -> bool {
    let mut found = false;
    let mut expr = |e: &Expr| {
        let mut r = Vec::new();
        all_names(e, &mut r);
        found |= r.iter().any(|n| n == name);
    };
    crate::ir::visit_exprs(stmts, &mut expr, &mut |_| {});
    let mut dest = false;
    crate::ir::visit_spawns(stmts, &mut |site| match &site.dest {
        Dest::Local { name: n, .. } | Dest::Element { array: n, .. } => dest |= n == name,
        Dest::Discard => {}
    });
    found || dest
}

/// Every single-name path in `e`, written or read.
fn all_names(e: &Expr, out: &mut Vec<Ident>) {
    struct Names<'o>(&'o mut Vec<Ident>);
    impl<'a> Visit<'a> for Names<'_> {
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if let Some(id) = p.path.get_ident() {
                self.0.push(id.clone());
            }
        }
        fn visit_macro(&mut self, _: &'a syn::Macro) {}
    }
    Names(out).visit_expr(e);
}

fn collect_lets(stmts: &[Stmt], out: &mut Vec<String>) {
    for s in stmts {
        match s {
            Stmt::Let(l) => out.push(l.name.to_string()),
            Stmt::If(i) => {
                collect_lets(&i.then, out);
                if let Some(e) = &i.els {
                    collect_lets(e, out);
                }
            }
            Stmt::While { body, .. } | Stmt::Loop { body } | Stmt::Block(body) => collect_lets(body, out),
            Stmt::For(f) => {
                out.push(f.var.to_string());
                collect_lets(&f.body, out);
            }
            _ => {}
        }
    }
}

// ---- reads of destinations that may still be written by a child ------------------------------

/// The single-name paths an expression reads (a plain `x = ..` target is a write).
fn reads(e: &Expr, out: &mut Vec<Ident>) {
    struct Reads<'o>(&'o mut Vec<Ident>);
    impl<'a> Visit<'a> for Reads<'_> {
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if let Some(id) = p.path.get_ident() {
                self.0.push(id.clone());
            }
        }
        fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
            if !matches!(&*a.left, Expr::Path(_)) {
                self.visit_expr(&a.left);
            }
            self.visit_expr(&a.right);
        }
        fn visit_macro(&mut self, _: &'a syn::Macro) {}
    }
    Reads(out).visit_expr(e);
}

struct Flow<'e> {
    errors: &'e mut Errors,
    /// Reported uses, by span text (loops are walked twice).
    seen: BTreeSet<String>,
    report: bool,
}

impl Flow<'_> {
    fn check(&mut self, e: &Expr, pending: &BTreeSet<String>) {
        if !self.report || pending.is_empty() {
            return;
        }
        let mut r = Vec::new();
        reads(e, &mut r);
        for id in r {
            if pending.contains(&id.to_string()) && self.seen.insert(format!("{:?}{id}", id.span())) {
                self.errors.push(error::read_before_sync(id.span(), &id));
            }
        }
    }

    fn stmts(&mut self, stmts: &[Stmt], pending: &mut BTreeSet<String>) {
        for s in stmts {
            self.stmt(s, pending);
        }
    }

    fn stmt(&mut self, s: &Stmt, pending: &mut BTreeSet<String>) {
        match s {
            Stmt::Let(l) => {
                if let Some(i) = &l.init {
                    self.check(i, pending);
                }
                if let Some(a) = &l.alloc {
                    self.check(&a.len, pending);
                }
            }
            Stmt::Spawn(site) => {
                for a in site.exprs() {
                    self.check(a, pending);
                }
                match &site.dest {
                    Dest::Local { name, .. } => {
                        pending.insert(name.to_string());
                    }
                    Dest::Element { array, index } => {
                        self.check(index, pending);
                        pending.insert(array.to_string());
                    }
                    Dest::Discard => {}
                }
            }
            Stmt::If(i) => {
                self.check(&i.cond, pending);
                let mut a = pending.clone();
                self.stmts(&i.then, &mut a);
                let mut b = pending.clone();
                if let Some(e) = &i.els {
                    self.stmts(e, &mut b);
                }
                *pending = a.union(&b).cloned().collect();
            }
            Stmt::While { cond, body } => {
                for _ in 0..2 {
                    self.check(cond, pending);
                    let mut p = pending.clone();
                    self.stmts(body, &mut p);
                    pending.extend(p);
                }
            }
            Stmt::Loop { body } | Stmt::Block(body) => {
                let times = if matches!(s, Stmt::Loop { .. }) { 2 } else { 1 };
                for _ in 0..times {
                    let mut p = pending.clone();
                    self.stmts(body, &mut p);
                    pending.extend(p);
                }
            }
            Stmt::For(f) => {
                self.check(&f.start, pending);
                self.check(&f.end, pending);
                for _ in 0..2 {
                    let mut p = pending.clone();
                    self.stmts(&f.body, &mut p);
                    pending.extend(p);
                }
            }
            Stmt::Return(Some(e)) => self.check(e, pending),
            Stmt::Expr { expr, .. } => self.check(expr, pending),
            Stmt::Return(None) | Stmt::Sync(_) | Stmt::Jump(_) => {}
        }
    }
}

/// Reports every read of a destination where a spawn into it may still be outstanding.
fn check_reads(m: &Machine, errors: &mut Errors) {
    let n = m.blocks.len();
    let mut entry: Vec<BTreeSet<String>> = vec![BTreeSet::new(); n];
    let mut flow = Flow { errors, seen: BTreeSet::new(), report: false };
    // Fixpoint of the entry sets (they only grow; the names are finitely many).
    let mut changed = true;
    while changed {
        changed = false;
        for (k, b) in m.blocks.iter().enumerate() {
            let mut p = entry[k].clone();
            flow.stmts(&b.stmts, &mut p);
            let succs: Vec<usize> = match &b.term {
                Term::Goto(j) => vec![*j],
                Term::Branch { then, els, .. } => vec![*then, *els],
                // A sync waits for every child: nothing is outstanding where it resumes.
                Term::Sync(_) | Term::Tail(_) | Term::FallOff => Vec::new(),
            };
            for j in succs {
                if let Some(e) = entry.get_mut(j) {
                    let before = e.len();
                    e.extend(p.iter().cloned());
                    changed |= e.len() != before;
                }
            }
        }
    }
    flow.report = true;
    for (k, b) in m.blocks.iter().enumerate() {
        let mut p = entry[k].clone();
        flow.stmts(&b.stmts, &mut p);
        match &b.term {
            Term::Branch { cond, .. } => flow.check(cond, &p),
            Term::Tail(e) => flow.check(e, &p),
            _ => {}
        }
    }
}
