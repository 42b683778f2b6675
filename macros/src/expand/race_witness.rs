//! A borrow-check witness for slices handed to spawns that run at the same time.
//!
//! In the serial function `spawn!(f(a))` is a call, so `spawn!(f(a)); spawn!(g(a));` with `a: &mut
//! [T]` borrows `a` twice *in sequence* and rustc accepts it, although on the parallel backends the
//! two children run at once: a determinacy race. Where the macro can see it, this module makes
//! rustc see it too: after the last spawn of each run of spawns that share a slice name, it adds a
//! closure that is never called and builds every such spawn's root call (`f::task(..)`, whose
//! `Call<'a, _>` borrows the slices as the callee's parameters do) *at once*:
//!
//! ```text
//! spawn!(f(a)); spawn!(g(a));
//! let _ = || { let _ = (f::task(a), g::task(a)); };   // E0499 when both take `&mut [T]`
//! ```
//!
//! Two shared borrows pass, a `&mut` beside any other borrow of the same slice fails (E0499/E0502)
//! on the user's own argument spans. What is covered, conservatively (no false alarms):
//! - spawns that are statements of one block (`spawn!(..);`, `let x = spawn!(..);`,
//!   `x = spawn!(..);`) between two statements that contain a `sync!()`;
//! - a loop body with no `sync!()` at all: its spawns, twice (two iterations run at once);
//! - arguments that are slice *names* (the slice parameters and locals bound to slices; the checks
//!   forbid redeclaring them, so a name is one slice). Sub-slices (`&mut a[i..j]`) are not
//!   compared: disjointness of ranges is the runtime race check's job (`GPU_CILK_CHECK_RACES`).
//! - Strided views (`Mat<T>`/`MatMut<T>`) are left out: a `MatMut` is not `Copy`, so the serial
//!   function's own spawns already move it (two spawns of one `MatMut` are E0382 there), and
//!   `Mat`s only share.
//!
//! Owns only this rewrite of a clone of the user's function (before `serial::serial_fn`); it
//! must not change what the serial function computes: the closure is never called.

use crate::syntax::{self, MacroKind};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use std::collections::HashSet;
use syn::spanned::Spanned;
use syn::{Block, Expr, ItemFn, Path, Stmt};

/// `item` with a witness after each run of spawns that pass one slice name more than once.
pub fn with_witnesses(item: &ItemFn) -> ItemFn {
    let mut out = item.clone();
    let mut names = syntax::slice_params(item);
    for arg in &item.sig.inputs {
        if let syn::FnArg::Typed(pt) = arg {
            if let (syn::Pat::Ident(pi), Some(_)) = (&*pt.pat, syntax::view_type(&pt.ty)) {
                names.remove(&pi.ident.to_string());
            }
        }
    }
    slice_locals(&item.block, &mut names);
    block(&mut out.block, false, &names);
    out
}

/// Adds the locals bound to a slice (`syntax::local_binds_slice`) anywhere in `b` to `names`, in
/// textual order.
fn slice_locals(b: &Block, names: &mut HashSet<String>) {
    struct Locals<'n>(&'n mut HashSet<String>);
    impl<'ast> syn::visit::Visit<'ast> for Locals<'_> {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            syn::visit::visit_local(self, l);
            let view = l.init.as_ref().is_some_and(|i| {
                matches!(&*i.expr, Expr::MethodCall(m) if syntax::VIEW_SPLITS.contains(&m.method.to_string().as_str()))
            });
            if syntax::local_binds_slice(l, self.0) && !view {
                self.0.extend(syntax::pat_binders(&l.pat).iter().map(|i| i.to_string()));
            }
        }
    }
    syn::visit::Visit::visit_block(&mut Locals(names), b);
}

/// The spawn a statement of a block is, if it is one: `spawn!(..);`, `let x = spawn!(..);` or
/// `dest = spawn!(..);`.
fn spawn_of(s: &Stmt) -> Option<(Path, Vec<Expr>)> {
    let mac = match s {
        Stmt::Macro(m) if syntax::macro_kind(&m.mac) == Some(MacroKind::Spawn) => &m.mac,
        Stmt::Local(l) => syntax::as_spawn(&l.init.as_ref()?.expr)?,
        Stmt::Expr(Expr::Assign(a), _) => syntax::as_spawn(&a.right)?,
        Stmt::Expr(e, _) => syntax::as_spawn(e)?,
        _ => return None,
    };
    syntax::spawn_call(mac).ok().map(|c| (c.path, c.args))
}

/// Whether a `sync!()` occurs anywhere in `s`.
fn contains_sync(s: &Stmt) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if syntax::macro_kind(m) == Some(MacroKind::Sync) {
                self.0 = true;
            }
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_stmt(&mut f, s);
    f.0
}

/// Rewrites the statements of `b` (and of every block inside them); `looping`: `b` is a loop body
/// with no `sync!()`, so its spawns also overlap with the next iteration's.
fn block(b: &mut Block, looping: bool, names: &HashSet<String>) {
    let stmts = std::mem::take(&mut b.stmts);
    let mut out: Vec<Stmt> = Vec::with_capacity(stmts.len());
    let mut run: Vec<(Path, Vec<Expr>)> = Vec::new();
    let mut after = 0usize; // where in `out` the witness of `run` goes: after its last spawn
    for mut s in stmts {
        if let Some(spawn) = spawn_of(&s) {
            run.push(spawn);
            out.push(s);
            after = out.len();
            continue;
        }
        let syncs = contains_sync(&s);
        if syncs {
            flush(&mut out, after, &mut run, false, names);
        }
        nested(&mut s, names);
        out.push(s);
    }
    flush(&mut out, after, &mut run, looping, names);
    b.stmts = out;
}

/// Inserts at `at` the witness of `run` (twice over when `twice`), if two of its spawns pass one
/// slice name; empties `run`.
fn flush(out: &mut Vec<Stmt>, at: usize, run: &mut Vec<(Path, Vec<Expr>)>, twice: bool, names: &HashSet<String>) {
    let spawns = std::mem::take(run);
    let mut seen = HashSet::new();
    let mut repeated = false;
    for (_, args) in &spawns {
        let mine: HashSet<String> = args.iter().filter_map(|a| syntax::slice_name(a, names)).collect();
        for n in mine {
            repeated |= twice || !seen.insert(n);
        }
    }
    if !repeated {
        return;
    }
    let mut calls: Vec<TokenStream> = spawns.iter().map(|(p, a)| root_call(p, a, names)).collect();
    if twice {
        calls.extend(spawns.iter().map(|(p, a)| root_call(p, a, names)));
    }
    let witness: Stmt = syn::parse_quote! {
        #[allow(unused_variables, clippy::no_effect_underscore_binding)]
        let _ = || {
            let _ = (#(#calls,)*);
        };
    };
    out.insert(at, witness);
}

/// `path::task(args)` (`path::task::<T>(args)` for `g::<T>`) with every argument that is not a slice name replaced by a value of any type
/// (`race_witness_value()`: its value does not matter, and it is not evaluated at another place).
fn root_call(path: &Path, args: &[Expr], names: &HashSet<String>) -> TokenStream {
    let args = args.iter().map(|a| match syntax::slice_name(a, names) {
        Some(_) => quote!(#a),
        None => quote_spanned!(a.span()=> ::gpu_cilk::runtime::slice::race_witness_value()),
    });
    // A generic task's type arguments go to its `task` (`g::<T>` → `g::task::<T>(..)`).
    let (bare, targs) = syntax::split_type_args(path);
    if targs.is_empty() {
        return quote_spanned!(path.span()=> #path::task(#(#args),*));
    }
    quote_spanned!(path.span()=> #bare::task::<#(#targs),*>(#(#args),*))
}

/// Recurses into the blocks of a statement that is not a spawn.
fn nested(s: &mut Stmt, names: &HashSet<String>) {
    struct Blocks<'n>(&'n HashSet<String>);
    impl syn::visit_mut::VisitMut for Blocks<'_> {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            match e {
                Expr::ForLoop(f) => {
                    let looping = !f.body.stmts.iter().any(contains_sync);
                    block(&mut f.body, looping, self.0);
                }
                Expr::While(w) => {
                    self.visit_expr_mut(&mut w.cond);
                    let looping = !w.body.stmts.iter().any(contains_sync);
                    block(&mut w.body, looping, self.0);
                }
                Expr::Loop(l) => {
                    let looping = !l.body.stmts.iter().any(contains_sync);
                    block(&mut l.body, looping, self.0);
                }
                Expr::If(i) => {
                    self.visit_expr_mut(&mut i.cond);
                    block(&mut i.then_branch, false, self.0);
                    if let Some((_, els)) = &mut i.else_branch {
                        self.visit_expr_mut(els);
                    }
                }
                Expr::Block(b) => block(&mut b.block, false, self.0),
                Expr::Closure(_) | Expr::Macro(_) => {}
                _ => syn::visit_mut::visit_expr_mut(self, e),
            }
        }
    }
    syn::visit_mut::VisitMut::visit_stmt_mut(&mut Blocks(names), s);
}
