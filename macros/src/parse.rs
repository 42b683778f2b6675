//! `syn::ItemFn` → [`Function`]: the signature and the statement tree, with `spawn!`/`sync!`
//! recognized.
//!
//! This module owns the structuring of the body: statement-position control flow becomes the
//! IR's statement tree, each `spawn!` a [`SpawnSite`] with its destination, each `alloc!` an
//! [`Alloc`]. The shapes themselves (what counts as `spawn!`, how its call is read) are
//! recognized by `syntax`. It runs after `check`, so it assumes the subset; anything unexpected
//! still comes back as a `syn::Error` rather than a panic.

use crate::error;
use crate::ir::{Alloc, Dest, For, Function, If, Let, LetDecl, Param, SpawnSite, Stmt};
use crate::syntax::{alloc_args, as_alloc, as_spawn, as_sync, assign_dest, contains_spawn, let_binding, macro_kind};
use crate::syntax::{spawn_call, MacroKind};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, Macro, Pat, ReturnType, Type};

/// Builds the [`Function`] model of a checked `#[gpu_cilk]` function.
pub fn function(item: &ItemFn) -> syn::Result<Function> {
    let mut params = Vec::new();
    for arg in &item.sig.inputs {
        match arg {
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => params.push(Param {
                    name: pi.ident.clone(),
                    mutable: pi.mutability.is_some(),
                    ty: (*pt.ty).clone(),
                }),
                other => return Err(error::PARAM_PATTERN.on(other)),
            },
            FnArg::Receiver(r) => return Err(error::SELF_RECEIVER.on(r)),
        }
    }
    let output = match &item.sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) => match &**ty {
            Type::Tuple(t) if t.elems.is_empty() => None,
            ty => Some(ty.clone()),
        },
    };
    let stmts = &item.block.stmts;
    let mut body = Vec::new();
    let mut tail = None;
    for (i, s) in stmts.iter().enumerate() {
        let last = i + 1 == stmts.len();
        if last {
            if let syn::Stmt::Expr(e, None) = s {
                // A unit function's last `if`/loop/block is a statement like any other (its
                // value is `()`): the writers then lower it as one (issue 8).
                let control =
                    matches!(e, Expr::If(_) | Expr::While(_) | Expr::Loop(_) | Expr::ForLoop(_) | Expr::Block(_));
                if output.is_none() && control {
                    body.extend(stmt(s)?);
                    continue;
                }
                if as_spawn(e).is_none() && as_sync(e).is_none() && !matches!(e, Expr::Return(_)) && !contains_spawn(e)
                {
                    tail = Some(e.clone());
                    continue;
                }
            }
        }
        body.extend(stmt(s)?);
    }
    let generics = item.sig.generics.type_params().map(|p| p.ident.clone()).collect();
    let structs = crate::syntax::struct_types(item);
    Ok(Function { name: item.sig.ident.clone(), vis: item.vis.clone(), generics, structs, params, output, body, tail })
}

fn stmts(block: &syn::Block) -> syn::Result<Vec<Stmt>> {
    let mut out = Vec::new();
    for s in &block.stmts {
        out.extend(stmt(s)?);
    }
    Ok(out)
}

/// `let (a, mut b)[: (A, B)] = e;` → `let __gc_tuple_a_b[: (A, B)] = e; let a = __gc_tuple_a_b.0;
/// let mut b = __gc_tuple_a_b.1;` (element annotations from the tuple's).
fn tuple_let(local: &syn::Local) -> Option<syn::Result<Vec<Stmt>>> {
    let (names, ty) = crate::syntax::tuple_binding(&local.pat)?;
    let init = local.init.as_ref()?;
    if init.diverge.is_some() {
        return Some(Err(error::LET_ELSE.on(local)));
    }
    let joined: Vec<String> = names.iter().map(|(n, _)| n.to_string()).collect();
    let tmp = syn::Ident::new(&format!("__gc_tuple_{}", joined.join("_")), local.let_token.span);
    let elems: Vec<Option<Type>> = match &ty {
        Some(Type::Tuple(t)) => t.elems.iter().cloned().map(Some).collect(),
        _ => vec![None; names.len()],
    };
    let mut out = vec![Stmt::Let(Let {
        name: tmp.clone(),
        mutable: false,
        ty,
        init: Some((*init.expr).clone()),
        frame: false,
        alloc: None,
    })];
    for (i, (name, mutable)) in names.into_iter().enumerate() {
        let idx = syn::Index::from(i);
        out.push(Stmt::Let(Let {
            name,
            mutable,
            ty: elems.get(i).cloned().flatten(),
            init: Some(syn::parse_quote!(#tmp.#idx)),
            frame: false,
            alloc: None,
        }));
    }
    Some(Ok(out))
}

fn spawn_site(mac: &Macro, dest: Dest) -> syn::Result<Stmt> {
    let call = spawn_call(mac)?;
    let (path, args, priority) = (call.path, call.args, call.priority);
    Ok(Stmt::Spawn(SpawnSite { index: 0, callee: 0, path, args, priority, dest, in_loop: false, span: mac_span(mac) }))
}

fn mac_span(mac: &Macro) -> Span {
    let start = mac.path.span();
    start.join(mac.delimiter.span().close()).unwrap_or(start)
}

fn stmt(s: &syn::Stmt) -> syn::Result<Vec<Stmt>> {
    if let syn::Stmt::Local(local) = s {
        if let Some(r) = tuple_let(local) {
            return r;
        }
    }
    one_stmt(s).map(|s| vec![s])
}

fn one_stmt(s: &syn::Stmt) -> syn::Result<Stmt> {
    match s {
        syn::Stmt::Local(local) => {
            let Some((name, mutable, ty)) = let_binding(&local.pat) else {
                return Err(error::LET_PATTERN.on(&local.pat));
            };
            let init = match &local.init {
                Some(init) if init.diverge.is_some() => return Err(error::LET_ELSE.on(local)),
                Some(init) => Some(&*init.expr),
                None => None,
            };
            if let Some(mac) = init.and_then(as_spawn) {
                return spawn_site(mac, Dest::Local { name, decl: Some(LetDecl { mutable, ty }) });
            }
            if let Some(mac) = init.and_then(as_alloc) {
                let (elem, len) = alloc_args(mac)?;
                let ty = Some(syn::parse_quote!(::gpu_cilk::runtime::Temp<#elem>));
                let uninit = crate::syntax::alloc_uninit(mac);
                let alloc = Some(Box::new(Alloc { elem, len, span: mac_span(mac), uninit }));
                return Ok(Stmt::Let(Let { name, mutable, ty, init: None, frame: false, alloc }));
            }
            Ok(Stmt::Let(Let { name, mutable, ty, init: init.cloned(), frame: false, alloc: None }))
        }
        // `block_sync!();`: an expression statement the writer makes a barrier of.
        syn::Stmt::Macro(m) if crate::syntax::block_macro(&m.mac).is_some() => {
            let e = Expr::Macro(syn::ExprMacro { attrs: m.attrs.clone(), mac: m.mac.clone() });
            expr_stmt(&e, true)
        }
        syn::Stmt::Macro(m) => match macro_kind(&m.mac) {
            Some(MacroKind::Spawn) => spawn_site(&m.mac, Dest::Discard),
            Some(MacroKind::Sync) => Ok(Stmt::Sync(mac_span(&m.mac))),
            Some(MacroKind::Alloc) => Err(error::ALLOC_POSITION.on(&m.mac)),
            None => Err(error::other_macro(&m.mac)),
        },
        syn::Stmt::Item(item) => Err(error::ITEM_IN_BODY.on(item)),
        syn::Stmt::Expr(e, semi) => expr_stmt(e, semi.is_some()),
    }
}

fn expr_stmt(e: &Expr, semi: bool) -> syn::Result<Stmt> {
    if let Some(mac) = as_spawn(e) {
        return spawn_site(mac, Dest::Discard);
    }
    if let Some(mac) = as_sync(e) {
        return Ok(Stmt::Sync(mac_span(mac)));
    }
    match e {
        Expr::Assign(a) if as_spawn(&a.right).is_some() => {
            let Some(mac) = as_spawn(&a.right) else { return Err(error::SPAWN_IN_EXPR.on(e)) };
            let dest = assign_dest(&a.left).ok_or_else(|| error::SPAWN_DEST.on(&a.left))?;
            spawn_site(mac, dest)
        }
        Expr::If(i) => Ok(Stmt::If(if_stmt(i)?)),
        Expr::While(w) => Ok(Stmt::While { cond: (*w.cond).clone(), body: stmts(&w.body)? }),
        Expr::Loop(l) => Ok(Stmt::Loop { body: stmts(&l.body)? }),
        Expr::ForLoop(f) => {
            let (var, mutable) = match &*f.pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    (pi.ident.clone(), pi.mutability.is_some())
                }
                other => return Err(error::FOR_PATTERN.on(other)),
            };
            if let Some((lo, hi)) = crate::syntax::coop_call(&f.expr) {
                return Ok(Stmt::For(For {
                    var,
                    mutable,
                    start: lo.clone(),
                    end: hi.clone(),
                    inclusive: false,
                    lanes: true,
                    body: stmts(&f.body)?,
                }));
            }
            let Expr::Range(r) = &*f.expr else { return Err(error::FOR_ITER.on(&f.expr)) };
            let (Some(start), Some(end)) = (&r.start, &r.end) else { return Err(error::FOR_ITER.on(&f.expr)) };
            Ok(Stmt::For(For {
                var,
                mutable,
                start: (**start).clone(),
                end: (**end).clone(),
                inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
                lanes: false,
                body: stmts(&f.body)?,
            }))
        }
        Expr::Block(b) if b.label.is_none() => Ok(Stmt::Block(stmts(&b.block)?)),
        Expr::Return(r) => Ok(Stmt::Return(r.expr.as_deref().cloned())),
        _ => Ok(Stmt::Expr { expr: e.clone(), semi }),
    }
}

fn if_stmt(i: &syn::ExprIf) -> syn::Result<If> {
    let then = stmts(&i.then_branch)?;
    let (els, else_if) = match &i.else_branch {
        None => (None, false),
        Some((_, e)) => match &**e {
            Expr::If(inner) => (Some(vec![Stmt::If(if_stmt(inner)?)]), true),
            Expr::Block(b) => (Some(stmts(&b.block)?), false),
            other => (Some(vec![expr_stmt(other, false)?]), false),
        },
    };
    Ok(If { cond: (*i.cond).clone(), then, els, else_if })
}

/// The model of a `#[derive(DeviceStruct)]` struct that `check::device_struct` accepted.
pub fn device_struct(item: &syn::ItemStruct) -> crate::ir::StructDecl {
    let fields = item.fields.iter().filter_map(|f| f.ident.clone().map(|n| (n, f.ty.clone()))).collect();
    crate::ir::StructDecl { name: item.ident.clone(), fields }
}
