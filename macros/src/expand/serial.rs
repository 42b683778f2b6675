//! The serial function: the user's function with `spawn!(g(a))` replaced by `g(a)`, `sync!()`
//! removed and `alloc!` drawn from a `TempScope`. It is the serial backend, the test oracle, and
//! what the user gets beside the errors when a function fails the checks.
//!
//! This module owns that rewrite of the `syn` tree, and the rewrite of temporaries' indexing
//! (`t[i]` → `t.get(i)`) that the task module's segments share.

use crate::syntax::{self, MacroKind};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::visit_mut::VisitMut;
use syn::{Expr, ItemFn};

/// `item` with `spawn!(g(a))` replaced by `g(a)` and `sync!()` removed: the serial oracle.
///
/// Works on any input, also one that failed the checks (it is what the user gets beside the
/// errors, so the rest of the crate still type-checks): a `spawn!` whose body is not an
/// expression becomes `unreachable!()`.
pub fn serial_fn(item: &ItemFn) -> ItemFn {
    let mut out = item.clone();
    let mut ser = Serialize { allocs: false };
    ser.visit_block_mut(&mut out.block);
    let names: Vec<String> = syntax::temp_names(item).iter().map(ToString::to_string).collect();
    if !names.is_empty() {
        TempIndex { names }.visit_block_mut(&mut out.block);
    }
    if ser.allocs {
        let scope = temp_scope_ident();
        out.block.stmts.insert(0, syn::parse_quote!(let #scope = ::gpu_cilk::runtime::TempScope::new();));
    }
    out
}

/// The serial function's `TempScope` guard (hygienic: user code cannot name it).
fn temp_scope_ident() -> syn::Ident {
    syn::Ident::new("__temps", Span::mixed_site())
}

/// Rewrites indexing of temporaries (by name): `t[i]` → `t.get(i)`, `t[i] = v` → `t.set(i, v)`,
/// `t[i] op= v` → `t.set(i, t.get(i) op v)` (the index evaluated once).
pub(super) struct TempIndex {
    /// The names of the temporaries.
    pub(super) names: Vec<String>,
}

impl TempIndex {
    fn temp_base(&self, e: &Expr) -> Option<syn::Ident> {
        match e {
            Expr::Path(p) => syntax::single_ident(p).filter(|n| self.names.iter().any(|t| n == t)),
            Expr::Paren(p) => self.temp_base(&p.expr),
            Expr::Group(g) => self.temp_base(&g.expr),
            _ => None,
        }
    }
}

fn compound_to_binary(op: &syn::BinOp) -> Option<TokenStream> {
    use syn::BinOp as B;
    Some(match op {
        B::AddAssign(_) => quote!(+),
        B::SubAssign(_) => quote!(-),
        B::MulAssign(_) => quote!(*),
        B::DivAssign(_) => quote!(/),
        B::RemAssign(_) => quote!(%),
        B::BitXorAssign(_) => quote!(^),
        B::BitAndAssign(_) => quote!(&),
        B::BitOrAssign(_) => quote!(|),
        B::ShlAssign(_) => quote!(<<),
        B::ShrAssign(_) => quote!(>>),
        _ => return None,
    })
}

impl VisitMut for TempIndex {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // Stores first (their left side must not become a `get`), then everything below.
        match e {
            Expr::Assign(a) => match &mut *a.left {
                Expr::Index(ix) if self.temp_base(&ix.expr).is_some() => {
                    self.visit_expr_mut(&mut ix.index);
                    self.visit_expr_mut(&mut a.right);
                }
                _ => syn::visit_mut::visit_expr_mut(self, e),
            },
            Expr::Binary(b) if compound_to_binary(&b.op).is_some() => match &mut *b.left {
                Expr::Index(ix) if self.temp_base(&ix.expr).is_some() => {
                    self.visit_expr_mut(&mut ix.index);
                    self.visit_expr_mut(&mut b.right);
                }
                _ => syn::visit_mut::visit_expr_mut(self, e),
            },
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
        let span = syn::spanned::Spanned::span(&*e);
        let new: Option<Expr> = match &*e {
            Expr::Assign(a) => match &*a.left {
                Expr::Index(ix) => self.temp_base(&ix.expr).map(|t| {
                    let (i, v) = (&ix.index, &a.right);
                    syn::parse_quote_spanned!(span=> #t.set(#i, #v))
                }),
                _ => None,
            },
            Expr::Binary(b) => match (&*b.left, compound_to_binary(&b.op)) {
                (Expr::Index(ix), Some(op)) => self.temp_base(&ix.expr).map(|t| {
                    let (i, v) = (&ix.index, &b.right);
                    let k = syn::Ident::new("__i", Span::mixed_site());
                    syn::parse_quote_spanned!(span=> { let #k: usize = #i; #t.set(#k, #t.get(#k) #op #v) })
                }),
                _ => None,
            },
            Expr::Index(ix) => self.temp_base(&ix.expr).map(|t| {
                let i = &ix.index;
                syn::parse_quote_spanned!(span=> #t.get(#i))
            }),
            _ => None,
        };
        if let Some(n) = new {
            *e = n;
        }
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
}

/// Rewrites `spawn!`/`sync!`/`alloc!` (see [`serial_fn`]).
struct Serialize {
    /// Some `alloc!` was rewritten (the function then needs its `TempScope`).
    allocs: bool,
}

impl Serialize {
    /// The call of `spawn!(call[, priority = key])`. The serial function does not evaluate the
    /// priority; it names it in an `if false` branch, so the key is type-checked (a non-scalar key
    /// is an error here too) and the locals it reads count as used.
    fn call_of(mac: &syn::Macro) -> Expr {
        let mut parts = mac
            .parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            .map(|p| p.into_iter())
            .ok();
        let first = parts.as_mut().and_then(Iterator::next);
        let priority = parts.as_mut().and_then(Iterator::next).and_then(|e| match e {
            Expr::Assign(a) => Some(*a.right),
            _ => None,
        });
        match first {
            Some(mut e) => {
                Serialize { allocs: false }.visit_expr_mut(&mut e);
                match priority {
                    Some(p) => syn::parse_quote!({
                        #[allow(unreachable_code)]
                        if false {
                            let _ = ::gpu_cilk::runtime::Priority::key(#p);
                        }
                        #e
                    }),
                    None => e,
                }
            }
            None => syn::parse_quote_spanned!(mac.delimiter.span().join()=> ::core::unreachable!()),
        }
    }
}

impl VisitMut for Serialize {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let stmts = std::mem::take(&mut b.stmts);
        for mut s in stmts {
            let kind = match &s {
                syn::Stmt::Macro(m) => syntax::macro_kind(&m.mac).map(|k| (k, m.mac.clone())),
                syn::Stmt::Expr(Expr::Macro(m), _) => syntax::macro_kind(&m.mac).map(|k| (k, m.mac.clone())),
                _ => None,
            };
            match kind {
                Some((MacroKind::Sync, _)) => continue,
                Some((MacroKind::Alloc, mac)) => {
                    let span = mac.delimiter.span().join();
                    b.stmts.push(syn::parse_quote_spanned!(span=> ::core::unreachable!();));
                }
                Some((MacroKind::Spawn, mac)) => {
                    let call = Self::call_of(&mac);
                    b.stmts.push(syn::Stmt::Expr(call, Some(Default::default())));
                }
                None => {
                    self.visit_stmt_mut(&mut s);
                    b.stmts.push(s);
                }
            }
        }
    }

    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        if let Some(init) = &mut l.init {
            if let Some(mac) = syntax::as_alloc(&init.expr) {
                if let Ok((ty, mut len)) = syntax::alloc_args(mac) {
                    self.visit_expr_mut(&mut len);
                    let span = mac.delimiter.span().join();
                    self.allocs = true;
                    let scope = temp_scope_ident();
                    *init.expr = syn::parse_quote_spanned!(span=> #scope.alloc::<#ty>(#len));
                    return;
                }
            }
        }
        syn::visit_mut::visit_local_mut(self, l);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Macro(m) = e {
            match syntax::macro_kind(&m.mac) {
                Some(MacroKind::Spawn) => *e = Self::call_of(&m.mac),
                Some(MacroKind::Sync) => *e = syn::parse_quote!(()),
                // Only as a `let` initializer (`visit_local_mut`); anywhere else it was rejected.
                Some(MacroKind::Alloc) => {
                    let span = m.mac.delimiter.span().join();
                    *e = syn::parse_quote_spanned!(span=> ::core::unreachable!());
                }
                None => {}
            }
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}
