//! [`Function`] → [`Task`]: segments, name resolution, liveness across syncs, frame layout.
//!
//! This module owns the rules that need to know what each name refers to:
//!
//! - the body is split at each top-level `sync!()` into segments;
//! - every use of a name is resolved with Rust's scoping (blocks, `for` variables, shadowing) to a
//!   *top-level declaration* (a parameter or a `let` directly in the body) or to a nested local;
//! - a top-level declaration is a **frame field** when it is used in a later segment than the one
//!   that declares it, or when a `spawn!` writes into it; its type must then be known (annotation,
//!   parameter type, spawn output, suffixed literal, `as` cast), it must be initialized, and its
//!   name may not be declared twice at top level;
//! - a spawn destination must resolve to a top-level declaration (a nested local would go out of
//!   scope before the sync);
//! - in a segment, a destination may not be used textually after a spawn into it, nor anywhere in
//!   a loop that contains a spawn into it (the child may still be running);
//! - `FANOUT` is the most spawn sites of one segment, unless a spawn sits inside a loop.
//!
//! Every violation is collected; the result is a [`Task`] or all the errors.

use crate::error::{self, Errors};
use crate::ir::{Callee, Dest, End, FieldOrigin, FieldType, FrameField, Function, If, Segment, SpawnSite, Stmt, Task};
use proc_macro2::Span;
use syn::visit::Visit;
use syn::{Expr, Ident, Type};

/// Lowers a parsed, checked function.
pub fn task(f: Function) -> Result<Task, syn::Error> {
    let mut errors = Errors::new();

    // 1. Split at the top-level syncs.
    let mut bodies: Vec<Vec<Stmt>> = vec![Vec::new()];
    for s in f.body {
        match s {
            Stmt::Sync(_) => bodies.push(Vec::new()),
            other => {
                if let Some(last) = bodies.last_mut() {
                    last.push(other);
                }
            }
        }
    }

    // 2. Callees and spawn-site numbering, in textual order.
    let mut callees: Vec<Callee> = Vec::new();
    let mut next_site = 0;
    for body in &mut bodies {
        number_spawns(body, &mut callees, &mut next_site, false);
    }

    // 3. Resolve names, segment by segment.
    let mut r = Resolver::new(&mut errors);
    for p in &f.params {
        r.declare_top(Decl {
            name: p.name.clone(),
            mutable: p.mutable,
            segment: 0,
            origin: FieldOrigin::Param,
            ty: Some(FieldType::Declared(p.ty.clone())),
            init: true,
            spawn_dest: false,
            used_later: false,
            temp: false,
        });
    }
    for (k, body) in bodies.iter().enumerate() {
        r.segment = k;
        r.events.clear();
        r.stmts(body, true);
        if k + 1 == bodies.len() {
            if let Some(t) = &f.tail {
                r.visit_expr(t);
            }
        }
        r.check_events();
    }
    let shadows = std::mem::take(&mut r.shadows);
    let decls = std::mem::take(&mut r.decls);
    drop(r);

    // 4. Frame fields.
    // A temporary always lives in the frame: every later return frees it.
    let resident = |d: &Decl| d.spawn_dest || d.used_later || d.temp;
    let mut frame = Vec::new();
    let mut field_of_decl = vec![None; decls.len()];
    for (i, d) in decls.iter().enumerate() {
        if !resident(d) {
            continue;
        }
        let Some(ty) = d.ty.clone() else {
            errors.push(error::frame_type_unknown(&d.name));
            continue;
        };
        if !d.init {
            errors.push(error::frame_uninit(&d.name));
        }
        field_of_decl[i] = Some(frame.len());
        frame.push(FrameField {
            name: d.name.clone(),
            mutable: d.mutable,
            ty,
            segment: d.segment,
            origin: d.origin,
            spawn_dest: d.spawn_dest,
            temp: d.temp,
        });
    }
    for (old, new) in shadows {
        if let (Some(a), Some(b)) = (decls.get(old), decls.get(new)) {
            if resident(a) || resident(b) {
                errors.push(error::frame_shadowed(&b.name));
            }
        }
    }

    // 5. Segments.
    let count = bodies.len();
    let mut segments = Vec::new();
    let mut tail = f.tail;
    let mut any_loop_spawn = false;
    let mut max_spawns = 0;
    for (k, mut body) in bodies.into_iter().enumerate() {
        mark_frame_lets(&mut body, &frame);
        let mut spawns = 0;
        crate::ir::visit_spawns(&body, &mut |s: &SpawnSite| {
            spawns += 1;
            any_loop_spawn |= s.in_loop;
        });
        max_spawns = max_spawns.max(spawns);
        let end = if k + 1 < count {
            End::Sync
        } else {
            match tail.take() {
                Some(t) => End::Tail(t),
                None => End::FallOff,
            }
        };
        let restores = if k == 0 {
            Vec::new()
        } else {
            frame.iter().enumerate().filter(|(_, fl)| fl.segment < k).map(|(i, _)| i).collect()
        };
        segments.push(Segment { index: k, restores, body, end, spawns });
    }

    check_temp_returns(&segments, &frame, &mut errors);

    let task = Task {
        name: f.name,
        vis: f.vis,
        params: f.params,
        output: f.output,
        frame,
        callees,
        segments,
        fanout: if any_loop_spawn { None } else { Some(max_spawns) },
    };
    errors.finish(task)
}

/// A task frees its temporaries at every return, so no return may leave children running while a
/// temporary is live: every return that follows a `spawn!` of its own segment (or sits in a loop
/// that spawns) is rejected while a temporary is in scope. Conservative (textual order).
fn check_temp_returns(segments: &[Segment], frame: &[FrameField], errors: &mut Errors) {
    struct Walk<'e> {
        live: Vec<String>,
        spawned: bool,
        last_spawn: Option<Span>,
        errors: &'e mut Errors,
    }
    impl Walk<'_> {
        fn ret(&mut self, span: Span) {
            if self.spawned && !self.live.is_empty() {
                self.errors.push(error::temp_return_outstanding(span, &self.live));
            }
        }
        fn expr(&mut self, e: &Expr) {
            struct Finder(Vec<Span>);
            impl<'ast> Visit<'ast> for Finder {
                fn visit_expr_return(&mut self, r: &'ast syn::ExprReturn) {
                    self.0.push(syn::spanned::Spanned::span(r));
                    syn::visit::visit_expr_return(self, r);
                }
            }
            let mut f = Finder(Vec::new());
            f.visit_expr(e);
            for s in f.0 {
                self.ret(s);
            }
        }
        fn stmts(&mut self, stmts: &[Stmt]) {
            for s in stmts {
                self.stmt(s);
            }
        }
        fn looped(&mut self, body: &[Stmt]) {
            crate::ir::visit_spawns(body, &mut |site: &SpawnSite| {
                self.spawned = true;
                self.last_spawn = Some(site.span);
            });
        }
        fn stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::Let(l) => {
                    if let Some(e) = &l.init {
                        self.expr(e);
                    }
                    if let Some(a) = &l.alloc {
                        self.expr(&a.len);
                    }
                }
                Stmt::Spawn(site) => {
                    for a in &site.args {
                        self.expr(a);
                    }
                    if let Dest::Element { index, .. } = &site.dest {
                        self.expr(index);
                    }
                    self.spawned = true;
                    self.last_spawn = Some(site.span);
                }
                Stmt::If(i) => {
                    self.expr(&i.cond);
                    self.stmts(&i.then);
                    if let Some(e) = &i.els {
                        self.stmts(e);
                    }
                }
                Stmt::While { cond, body } => {
                    self.looped(body);
                    self.expr(cond);
                    self.stmts(body);
                }
                Stmt::Loop { body } => {
                    self.looped(body);
                    self.stmts(body);
                }
                Stmt::For(f) => {
                    self.expr(&f.start);
                    self.expr(&f.end);
                    self.looped(&f.body);
                    self.stmts(&f.body);
                }
                Stmt::Block(b) => self.stmts(b),
                Stmt::Return(e) => {
                    if let Some(e) = e {
                        self.expr(e);
                        self.ret(syn::spanned::Spanned::span(e));
                    } else {
                        self.ret(self.last_spawn.unwrap_or_else(Span::call_site));
                    }
                }
                Stmt::Expr { expr, .. } => self.expr(expr),
                Stmt::Sync(_) => {}
            }
        }
    }
    if !frame.iter().any(|f| f.temp) {
        return;
    }
    for seg in segments {
        let live = frame.iter().filter(|f| f.temp && f.segment < seg.index).map(|f| f.name.to_string()).collect();
        let mut w = Walk { live, spawned: false, last_spawn: None, errors };
        for s in &seg.body {
            w.stmt(s);
            if let Stmt::Let(l) = s {
                if l.alloc.is_some() {
                    w.live.push(l.name.to_string());
                }
            }
        }
        match &seg.end {
            End::Sync => {}
            End::Tail(e) => {
                w.expr(e);
                w.ret(syn::spanned::Spanned::span(e));
            }
            End::FallOff => {
                let at = w.last_spawn.unwrap_or_else(Span::call_site);
                w.ret(at);
            }
        }
    }
}

/// Numbers spawn sites, interns their callees and marks the ones inside loops.
fn number_spawns(stmts: &mut [Stmt], callees: &mut Vec<Callee>, next: &mut usize, in_loop: bool) {
    for s in stmts {
        match s {
            Stmt::Spawn(site) => {
                site.index = *next;
                *next += 1;
                site.in_loop = in_loop;
                let text = crate::ir::path_text(&site.path);
                site.callee = match callees.iter().position(|c| c.display() == text) {
                    Some(i) => i,
                    None => {
                        callees.push(Callee { path: site.path.clone() });
                        callees.len() - 1
                    }
                };
            }
            Stmt::If(i) => number_if(i, callees, next, in_loop),
            Stmt::While { body, .. } | Stmt::Loop { body } => number_spawns(body, callees, next, true),
            Stmt::For(f) => number_spawns(&mut f.body, callees, next, true),
            Stmt::Block(b) => number_spawns(b, callees, next, in_loop),
            Stmt::Let(_) | Stmt::Return(_) | Stmt::Expr { .. } | Stmt::Sync(_) => {}
        }
    }
}

fn number_if(i: &mut If, callees: &mut Vec<Callee>, next: &mut usize, in_loop: bool) {
    number_spawns(&mut i.then, callees, next, in_loop);
    if let Some(e) = &mut i.els {
        number_spawns(e, callees, next, in_loop);
    }
}

/// Sets `Let::frame` on the top-level lets that became frame fields.
fn mark_frame_lets(body: &mut [Stmt], frame: &[FrameField]) {
    for s in body {
        if let Stmt::Let(l) = s {
            l.frame = frame.iter().any(|f| f.origin == FieldOrigin::Local && f.name == l.name);
        }
    }
}

/// The type of an initializer when it is written in it: a suffixed literal, `true`/`false`, an
/// `as` cast, or an array of those (`[0u64; 16]`, `[1u8, 2, 3]`).
pub fn syntactic_type(e: &Expr) -> Option<Type> {
    match e {
        Expr::Lit(l) => {
            let suffix = match &l.lit {
                syn::Lit::Int(i) => i.suffix().to_string(),
                syn::Lit::Float(f) => f.suffix().to_string(),
                syn::Lit::Bool(_) => "bool".to_string(),
                _ => String::new(),
            };
            if suffix.is_empty() {
                None
            } else {
                syn::parse_str::<Type>(&suffix).ok()
            }
        }
        Expr::Cast(c) => Some((*c.ty).clone()),
        Expr::Paren(p) => syntactic_type(&p.expr),
        Expr::Group(g) => syntactic_type(&g.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => syntactic_type(&u.expr),
        Expr::Repeat(r) => {
            let elem = syntactic_type(&r.expr)?;
            let len = &r.len;
            Some(syn::parse_quote!([#elem; #len]))
        }
        Expr::Array(a) => {
            let elem = a.elems.iter().find_map(syntactic_type)?;
            let len = a.elems.len();
            Some(syn::parse_quote!([#elem; #len]))
        }
        _ => None,
    }
}

/// A top-level declaration (a parameter or a `let` directly in the body).
#[derive(Debug, Clone)]
struct Decl {
    name: Ident,
    mutable: bool,
    segment: usize,
    origin: FieldOrigin,
    ty: Option<FieldType>,
    init: bool,
    spawn_dest: bool,
    used_later: bool,
    temp: bool,
}

#[derive(Debug, Clone, Copy)]
enum Binding {
    Top(usize),
    Nested,
}

/// One event of a segment, in textual order, for the read-before-sync rule.
#[derive(Debug)]
enum Event {
    Use { decl: usize, span: Span, loops: Vec<usize> },
    Spawn { decl: usize, loops: Vec<usize> },
}

struct Resolver<'e> {
    errors: &'e mut Errors,
    /// Innermost scope last; each scope maps names to bindings, latest binding last.
    scopes: Vec<Vec<(String, Binding)>>,
    decls: Vec<Decl>,
    /// (earlier declaration, later declaration) of the same name at top level.
    shadows: Vec<(usize, usize)>,
    segment: usize,
    loops: Vec<usize>,
    next_loop: usize,
    events: Vec<Event>,
}

impl<'e> Resolver<'e> {
    fn new(errors: &'e mut Errors) -> Self {
        Resolver {
            errors,
            scopes: vec![Vec::new()],
            decls: Vec::new(),
            shadows: Vec::new(),
            segment: 0,
            loops: Vec::new(),
            next_loop: 0,
            events: Vec::new(),
        }
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, b)| *b))
    }

    fn declare_top(&mut self, d: Decl) -> usize {
        let name = d.name.to_string();
        if let Some(Binding::Top(old)) =
            self.scopes.first().and_then(|s| s.iter().rev().find(|(n, _)| *n == name)).map(|(_, b)| *b)
        {
            self.shadows.push((old, self.decls.len()));
        }
        self.decls.push(d);
        let id = self.decls.len() - 1;
        if let Some(top) = self.scopes.first_mut() {
            top.push((name, Binding::Top(id)));
        }
        id
    }

    fn declare_nested(&mut self, name: &Ident) {
        if let Some(s) = self.scopes.last_mut() {
            s.push((name.to_string(), Binding::Nested));
        }
    }

    fn use_name(&mut self, name: &Ident) {
        if let Some(Binding::Top(id)) = self.lookup(&name.to_string()) {
            if let Some(d) = self.decls.get_mut(id) {
                if self.segment > d.segment {
                    d.used_later = true;
                }
            }
            self.events.push(Event::Use { decl: id, span: name.span(), loops: self.loops.clone() });
        }
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(Vec::new());
        f(self);
        self.scopes.pop();
    }

    fn in_loop(&mut self, f: impl FnOnce(&mut Self)) {
        self.loops.push(self.next_loop);
        self.next_loop += 1;
        f(self);
        self.loops.pop();
    }

    fn stmts(&mut self, stmts: &[Stmt], top: bool) {
        for s in stmts {
            self.stmt(s, top);
        }
    }

    fn block(&mut self, stmts: &[Stmt]) {
        self.scoped(|r| r.stmts(stmts, false));
    }

    fn stmt(&mut self, s: &Stmt, top: bool) {
        match s {
            Stmt::Let(l) => {
                if let Some(init) = &l.init {
                    self.visit_expr(init);
                }
                if let Some(a) = &l.alloc {
                    self.visit_expr(&a.len);
                }
                if top {
                    let ty = l.ty.clone().or_else(|| l.init.as_ref().and_then(syntactic_type)).map(FieldType::Declared);
                    self.declare_top(Decl {
                        name: l.name.clone(),
                        mutable: l.mutable,
                        segment: self.segment,
                        origin: FieldOrigin::Local,
                        ty,
                        init: l.init.is_some() || l.alloc.is_some(),
                        spawn_dest: false,
                        used_later: false,
                        temp: l.alloc.is_some(),
                    });
                } else {
                    self.declare_nested(&l.name);
                }
            }
            Stmt::Spawn(site) => self.spawn(site, top),
            Stmt::If(i) => self.if_stmt(i),
            Stmt::While { cond, body } => self.in_loop(|r| {
                r.visit_expr(cond);
                r.block(body);
            }),
            Stmt::Loop { body } => self.in_loop(|r| r.block(body)),
            Stmt::For(f) => {
                self.visit_expr(&f.start);
                self.visit_expr(&f.end);
                self.in_loop(|r| {
                    r.scoped(|r| {
                        r.declare_nested(&f.var);
                        r.stmts(&f.body, false);
                    })
                });
            }
            Stmt::Block(b) => self.block(b),
            Stmt::Return(e) => {
                if let Some(e) = e {
                    self.visit_expr(e);
                }
            }
            Stmt::Expr { expr, .. } => self.visit_expr(expr),
            Stmt::Sync(_) => {}
        }
    }

    fn if_stmt(&mut self, i: &If) {
        self.visit_expr(&i.cond);
        self.block(&i.then);
        if let Some(e) = &i.els {
            self.block(e);
        }
    }

    fn spawn(&mut self, site: &SpawnSite, top: bool) {
        for a in &site.args {
            self.visit_expr(a);
        }
        let target = match &site.dest {
            Dest::Discard => return,
            Dest::Local { name, decl: Some(decl) } => {
                if !top {
                    self.errors.push(error::spawn_into_nested(name));
                    self.declare_nested(name);
                    return;
                }
                let ty = Some(match &decl.ty {
                    Some(t) => FieldType::Declared(t.clone()),
                    None => FieldType::OutputOf(site.callee),
                });
                let id = self.declare_top(Decl {
                    name: name.clone(),
                    mutable: decl.mutable,
                    segment: self.segment,
                    origin: FieldOrigin::Local,
                    ty,
                    init: true,
                    spawn_dest: true,
                    used_later: false,
                    temp: false,
                });
                self.events.push(Event::Spawn { decl: id, loops: self.loops.clone() });
                return;
            }
            Dest::Local { name, decl: None } => name,
            Dest::Element { array, index } => {
                self.visit_expr(index);
                array
            }
        };
        match self.lookup(&target.to_string()) {
            Some(Binding::Top(id)) => {
                if let Some(d) = self.decls.get_mut(id) {
                    d.spawn_dest = true;
                    if self.segment > d.segment {
                        d.used_later = true;
                    }
                }
                self.events.push(Event::Spawn { decl: id, loops: self.loops.clone() });
            }
            Some(Binding::Nested) => self.errors.push(error::spawn_into_nested(target)),
            None => self.errors.push(error::spawn_into_unknown(target)),
        }
    }

    /// Reports uses of spawn destinations after a spawn into them, or in a loop that spawns into
    /// them, within the current segment.
    fn check_events(&mut self) {
        let mut reported = Vec::new();
        for (i, ev) in self.events.iter().enumerate() {
            let Event::Use { decl, span, loops } = ev else { continue };
            let bad = self.events.iter().enumerate().any(|(j, other)| match other {
                Event::Spawn { decl: d, loops: sl } if d == decl => j < i || sl.iter().any(|l| loops.contains(l)),
                _ => false,
            });
            if bad {
                if let Some(d) = self.decls.get(*decl) {
                    reported.push(error::read_before_sync(*span, &d.name));
                }
            }
        }
        for e in reported {
            self.errors.push(e);
        }
    }
}

impl<'ast> Visit<'ast> for Resolver<'_> {
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(name) = crate::parse::single_ident(p) {
            self.use_name(&name);
        }
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.scoped(|r| {
            for s in &b.stmts {
                r.visit_stmt(s);
            }
        });
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
        }
        if let Some((name, _, _)) = crate::parse::let_binding(&l.pat) {
            self.declare_nested(&name);
        }
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        self.in_loop(|r| {
            r.visit_expr(&w.cond);
            r.visit_block(&w.body);
        });
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.in_loop(|r| r.visit_block(&l.body));
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        self.in_loop(|r| {
            r.scoped(|r| {
                if let syn::Pat::Ident(pi) = &*f.pat {
                    r.declare_nested(&pi.ident);
                }
                r.visit_block(&f.body);
            })
        });
    }

    fn visit_macro(&mut self, _: &'ast syn::Macro) {}

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        self.visit_expr(&m.receiver);
        for a in &m.args {
            self.visit_expr(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn lower(tokens: proc_macro2::TokenStream) -> Result<Task, syn::Error> {
        let item: syn::ItemFn = syn::parse2(tokens).expect("parses");
        let mut errors = Errors::new();
        crate::check::function(&item, crate::check::Mode::Task, &mut errors);
        errors.finish(())?;
        task(crate::parse::function(&item)?)
    }

    fn frame_names(t: &Task) -> Vec<String> {
        t.frame.iter().map(|f| f.name.to_string()).collect()
    }

    fn messages(e: syn::Error) -> Vec<String> {
        e.into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn fib_frame_is_the_two_spawn_destinations() {
        let t = lower(quote! {
            fn fib(n: u32) -> u64 {
                if n < 2 { return n as u64; }
                let x = spawn!(fib(n - 1));
                let y = spawn!(fib(n - 2));
                sync!();
                x + y
            }
        })
        .expect("lowers");
        assert_eq!(frame_names(&t), ["x", "y"]);
        assert_eq!(t.syncs(), 1);
        assert_eq!(t.fanout, Some(2));
        assert_eq!(t.callees.len(), 1);
        assert!(matches!(t.frame[0].ty, FieldType::OutputOf(0)));
        assert_eq!(t.segments[1].restores, [0, 1]);
        assert!(matches!(t.segments[1].end, End::Tail(_)));
    }

    #[test]
    fn locals_used_after_a_sync_live_in_the_frame_and_loop_locals_do_not() {
        let t = lower(quote! {
            fn wide(d: u32, k: u32) -> u64 {
                if d == 0 { return 1; }
                let mut parts: [u64; 8] = [0; 8];
                let mut i = 0;
                while i < k { parts[i as usize] = spawn!(wide(d - 1, k)); i += 1; }
                spawn!(fib(3));
                sync!();
                let mut s: u64 = 1;
                for j in 0..k as usize { s += parts[j]; }
                let extra = spawn!(fib(d));
                sync!();
                s + extra
            }
        })
        .expect("lowers");
        assert_eq!(frame_names(&t), ["d", "k", "parts", "s", "extra"]);
        assert_eq!(t.syncs(), 2);
        assert_eq!(t.fanout, None);
        assert_eq!(t.callees.iter().map(Callee::display).collect::<Vec<_>>(), ["wide", "fib"]);
        assert_eq!(t.segments[1].restores, [0, 1, 2]);
        assert_eq!(t.segments[2].restores, [0, 1, 2, 3, 4]);
        assert_eq!(t.segments.iter().map(|s| s.spawns).collect::<Vec<_>>(), [2, 1, 0]);
        let sites = t.spawn_sites();
        assert!(sites[0].in_loop && !sites[1].in_loop && !sites[2].in_loop);
    }

    #[test]
    fn a_nested_shadow_does_not_make_a_field() {
        let t = lower(quote! {
            fn f(n: u32) -> u32 {
                let a: u32 = 1;
                spawn!(g(n));
                sync!();
                let b = { let a = 2u32; a };
                b
            }
        })
        .expect("lowers");
        assert_eq!(frame_names(&t), Vec::<String>::new());
        assert_eq!(t.fanout, Some(1));
    }

    #[test]
    fn types_come_from_suffixes_and_casts() {
        let t = lower(quote! {
            fn f(n: u32) -> u64 {
                let a = 1u64;
                let b = n as i64;
                let c = [0u8; 4];
                let d = true;
                sync!();
                a + b as u64 + c[0] as u64 + d as u64
            }
        })
        .expect("lowers");
        let tys: Vec<String> = t
            .frame
            .iter()
            .map(|f| match &f.ty {
                FieldType::Declared(ty) => quote!(#ty).to_string(),
                FieldType::OutputOf(_) => "out".into(),
            })
            .collect();
        assert_eq!(tys, ["u64", "i64", "[u8 ; 4]", "bool"]);
    }

    #[test]
    fn reading_a_spawned_value_before_sync_is_reported_with_every_use() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let x = spawn!(g(n));
                let y: u64 = x + 1;
                let z: u64 = x * 2;
                sync!();
                y + z
            }
        })
        .expect_err("rejected");
        let m = messages(e);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].contains("`x` holds the result of a `spawn!`"));
    }

    #[test]
    fn reading_a_destination_in_the_loop_that_spawns_into_it_is_reported() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let mut a: [u64; 4] = [0; 4];
                let mut i: usize = 0;
                while i < 4 {
                    let prev = a[0];
                    a[i] = spawn!(g(n));
                    i += 1;
                }
                sync!();
                a[0]
            }
        })
        .expect_err("rejected");
        assert_eq!(messages(e).len(), 1);
    }

    #[test]
    fn reads_before_the_first_spawn_are_fine() {
        lower(quote! {
            fn f(n: u32) -> u64 {
                let mut x: u64 = 5;
                x += 1;
                let y: u64 = x;
                x = spawn!(g(n));
                sync!();
                x + y
            }
        })
        .expect("lowers");
    }

    #[test]
    fn frame_errors_are_all_reported() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let a = n + 1;
                let b: u64;
                b = 2;
                let c: u64 = 0;
                sync!();
                let d = c;
                let c: u64 = 1;
                if n > 0 { let t: u64 = 0; t = spawn!(g(n)); }
                q = spawn!(g(n));
                a as u64 + b + c + d
            }
        })
        .expect_err("rejected");
        let m = messages(e);
        assert_eq!(m.len(), 5, "{m:#?}");
        assert!(m.iter().any(|s| s.contains("`t` is declared inside a block")));
        assert!(m.iter().any(|s| s.contains("cannot find local `q`")));
        assert!(m.iter().any(|s| s.contains("`a` lives across a `sync!()`, so it is stored in the task frame")));
        assert!(m.iter().any(|s| s.contains("`b` lives across a `sync!()` and must be initialized")));
        assert!(m.iter().any(|s| s.contains("`c` is declared twice")));
    }

    #[test]
    fn unit_task_falls_off_and_counts_branch_spawns() {
        let t = lower(quote! {
            fn visit(n: u32) {
                if n == 0 { return; }
                if n % 2 == 0 { spawn!(visit(n - 1)); } else { spawn!(visit(n - 1)); spawn!(leaf(n)); }
                sync!();
            }
        })
        .expect("lowers");
        assert_eq!(t.fanout, Some(3));
        assert!(t.output.is_none());
        assert!(matches!(t.segments[1].end, End::FallOff));
    }
}
