//! The rule that ties temporaries to returns: a task frees its temporaries at every return, so
//! no return may leave children running while a temporary is live.
//!
//! This module owns that one check on the lowered segments (it reads the IR only).

use crate::error::{self, Errors};
use crate::ir::{Dest, End, FrameField, Segment, SpawnSite, Stmt};
use proc_macro2::Span;
use syn::visit::Visit;
use syn::Expr;

/// A task frees its temporaries at every return, so no return may leave children running while a
/// temporary is live: every return that follows a `spawn!` of its own segment (or sits in a loop
/// that spawns) is rejected while a temporary is in scope. Conservative (textual order).
pub(super) fn check_temp_returns(segments: &[Segment], frame: &[FrameField], errors: &mut Errors) {
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
                    for a in site.exprs() {
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
                Stmt::Sync(_) | Stmt::Jump(_) => {}
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
