//! `syn::ItemFn` → [`Function`]: the signature and the statement tree, with `spawn!`/`sync!`
//! recognized.
//!
//! This module owns the syntax of the two macros (what counts as `spawn!`/`sync!`, how a spawn's
//! call and destination are read) and the structuring of statement-position control flow. It runs
//! after `check`, so it assumes the subset; anything unexpected still comes back as a `syn::Error`
//! rather than a panic.

use crate::error;
use crate::ir::{Alloc, Dest, For, Function, If, Let, LetDecl, Param, SpawnSite, Stmt};
use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, Macro, Pat, Path, ReturnType, Token, Type};

/// Which of our macros a `Macro` invokes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacroKind {
    /// `spawn!(..)`
    Spawn,
    /// `sync!(..)`
    Sync,
    /// `alloc!(..)`
    Alloc,
}

/// `spawn!`, `gpu_cilk::spawn!`, `::gpu_cilk::prelude::spawn!`, ... (any path ending in `spawn`
/// or `sync` with no generic arguments).
pub fn macro_kind(mac: &Macro) -> Option<MacroKind> {
    let last = mac.path.segments.last()?;
    if !last.arguments.is_none() {
        return None;
    }
    if last.ident == "spawn" {
        Some(MacroKind::Spawn)
    } else if last.ident == "sync" {
        Some(MacroKind::Sync)
    } else if last.ident == "alloc" {
        Some(MacroKind::Alloc)
    } else {
        None
    }
}

/// The `spawn!` invoked by `expr`, if `expr` is one.
pub fn as_spawn(expr: &Expr) -> Option<&Macro> {
    match expr {
        Expr::Macro(m) if macro_kind(&m.mac) == Some(MacroKind::Spawn) => Some(&m.mac),
        Expr::Group(g) => as_spawn(&g.expr),
        _ => None,
    }
}

/// The `alloc!` invoked by `expr`, if `expr` is one.
pub fn as_alloc(expr: &Expr) -> Option<&Macro> {
    match expr {
        Expr::Macro(m) if macro_kind(&m.mac) == Some(MacroKind::Alloc) => Some(&m.mac),
        Expr::Group(g) => as_alloc(&g.expr),
        _ => None,
    }
}

/// The element types `alloc!` accepts (the runtime's `Scalar`).
pub const TEMP_SCALARS: &[&str] =
    &["u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize", "f32", "f64"];

/// `alloc!(T, len)`: the element type (checked against [`TEMP_SCALARS`]) and the length.
pub fn alloc_args(mac: &Macro) -> syn::Result<(Type, Expr)> {
    struct Args(Type, Expr);
    impl syn::parse::Parse for Args {
        fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
            let ty: Type = input.parse()?;
            input.parse::<Token![,]>()?;
            let len: Expr = input.parse()?;
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            }
            if !input.is_empty() {
                return Err(input.error("extra"));
            }
            Ok(Args(ty, len))
        }
    }
    let Args(ty, len) = mac.parse_body::<Args>().map_err(|_| error::ALLOC_ARGS.on(mac))?;
    if temp_elem_name(&ty).is_none() {
        return Err(error::ALLOC_ELEM.on(&ty));
    }
    Ok((ty, len))
}

/// `f32` for the type `f32` when it is a [`TEMP_SCALARS`] type.
pub fn temp_elem_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            let n = seg.ident.to_string();
            (seg.arguments.is_none() && TEMP_SCALARS.contains(&n.as_str())).then_some(n)
        }
        Type::Paren(p) => temp_elem_name(&p.elem),
        Type::Group(g) => temp_elem_name(&g.elem),
        _ => None,
    }
}

/// For `Temp<T>` (any path ending in `Temp` with one type argument): `Some(T)`.
pub fn temp_type_elem(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            if seg.ident != "Temp" {
                return None;
            }
            match &seg.arguments {
                syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => Some(t),
                    _ => None,
                },
                _ => None,
            }
        }
        Type::Paren(p) => temp_type_elem(&p.elem),
        Type::Group(g) => temp_type_elem(&g.elem),
        _ => None,
    }
}

/// The names of an item's temporaries: `Temp<T>` parameters and `let t = alloc!(..)` bindings.
pub fn temp_names(item: &ItemFn) -> Vec<syn::Ident> {
    let mut out = Vec::new();
    for arg in &item.sig.inputs {
        if let FnArg::Typed(pt) = arg {
            if let (Pat::Ident(pi), Some(_)) = (&*pt.pat, temp_type_elem(&pt.ty)) {
                out.push(pi.ident.clone());
            }
        }
    }
    for s in &item.block.stmts {
        if let syn::Stmt::Local(l) = s {
            if let (Some((name, _, _)), Some(init)) = (let_binding(&l.pat), &l.init) {
                if as_alloc(&init.expr).is_some() {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The `sync!` invoked by `expr`, if `expr` is one.
pub fn as_sync(expr: &Expr) -> Option<&Macro> {
    match expr {
        Expr::Macro(m) if macro_kind(&m.mac) == Some(MacroKind::Sync) => Some(&m.mac),
        _ => None,
    }
}

/// The call inside `spawn!(path(args))`: the callee path and the arguments.
pub fn spawn_call(mac: &Macro) -> syn::Result<(Path, Vec<Expr>)> {
    if mac.tokens.is_empty() {
        return Err(error::SPAWN_EMPTY.on(mac));
    }
    let exprs = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)?;
    if exprs.len() != 1 {
        return Err(if exprs.is_empty() { error::SPAWN_EMPTY.on(mac) } else { error::SPAWN_MANY.on(&mac.tokens) });
    }
    let Some(expr) = exprs.into_iter().next() else { return Err(error::SPAWN_EMPTY.on(mac)) };
    match expr {
        Expr::Call(call) => match *call.func {
            Expr::Path(p) if p.qself.is_none() => {
                if p.path.segments.iter().any(|s| !s.arguments.is_none()) {
                    return Err(error::SPAWN_GENERIC.on(&p.path));
                }
                Ok((p.path, call.args.into_iter().collect()))
            }
            other => Err(error::SPAWN_NOT_CALL.on(other)),
        },
        Expr::MethodCall(m) => Err(error::SPAWN_METHOD.on(m)),
        other => Err(error::SPAWN_NOT_CALL.on(other)),
    }
}

/// The single name bound by a `let` pattern (`x`, `mut x`, `x: T`), with its mutability and
/// annotation; `None` for any other pattern.
pub fn let_binding(pat: &Pat) -> Option<(syn::Ident, bool, Option<Type>)> {
    match pat {
        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
            Some((pi.ident.clone(), pi.mutability.is_some(), None))
        }
        Pat::Type(pt) => {
            let (name, m, _) = let_binding(&pt.pat)?;
            Some((name, m, Some((*pt.ty).clone())))
        }
        _ => None,
    }
}

/// The destination of `lhs = spawn!(..)`: a local or an element of a local array.
pub fn assign_dest(lhs: &Expr) -> Option<Dest> {
    match lhs {
        Expr::Path(p) => single_ident(p).map(|name| Dest::Local { name, decl: None }),
        Expr::Index(ix) => match &*ix.expr {
            Expr::Path(p) => single_ident(p).map(|array| Dest::Element { array, index: (*ix.index).clone() }),
            _ => None,
        },
        Expr::Paren(p) => assign_dest(&p.expr),
        Expr::Group(g) => assign_dest(&g.expr),
        _ => None,
    }
}

/// `x` for the path expression `x` (no `::`, no generics, no qualified self).
pub fn single_ident(p: &syn::ExprPath) -> Option<syn::Ident> {
    if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1 {
        let seg = &p.path.segments[0];
        if seg.arguments.is_none() {
            return Some(seg.ident.clone());
        }
    }
    None
}

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
                if as_spawn(e).is_none() && as_sync(e).is_none() && !matches!(e, Expr::Return(_)) && !contains_spawn(e)
                {
                    tail = Some(e.clone());
                    continue;
                }
            }
        }
        body.push(stmt(s)?);
    }
    Ok(Function {
        name: item.sig.ident.clone(),
        vis: item.vis.clone(),
        attrs: item.attrs.clone(),
        params,
        output,
        body,
        tail,
    })
}

/// Whether a `spawn!` occurs anywhere inside `e`.
pub fn contains_spawn(e: &Expr) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_macro(&mut self, m: &'ast Macro) {
            if macro_kind(m) == Some(MacroKind::Spawn) {
                self.0 = true;
            }
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_expr(&mut f, e);
    f.0
}

fn stmts(block: &syn::Block) -> syn::Result<Vec<Stmt>> {
    block.stmts.iter().map(stmt).collect()
}

fn spawn_site(mac: &Macro, dest: Dest) -> syn::Result<Stmt> {
    let (path, args) = spawn_call(mac)?;
    Ok(Stmt::Spawn(SpawnSite { index: 0, callee: 0, path, args, dest, in_loop: false, span: mac_span(mac) }))
}

fn mac_span(mac: &Macro) -> Span {
    let start = mac.path.span();
    start.join(mac.delimiter.span().close()).unwrap_or(start)
}

fn stmt(s: &syn::Stmt) -> syn::Result<Stmt> {
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
                let alloc = Some(Box::new(Alloc { elem, len, span: mac_span(mac) }));
                return Ok(Stmt::Let(Let { name, mutable, ty, init: None, frame: false, alloc }));
            }
            Ok(Stmt::Let(Let { name, mutable, ty, init: init.cloned(), frame: false, alloc: None }))
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
            let Expr::Range(r) = &*f.expr else { return Err(error::FOR_ITER.on(&f.expr)) };
            let (Some(start), Some(end)) = (&r.start, &r.end) else { return Err(error::FOR_ITER.on(&f.expr)) };
            Ok(Stmt::For(For {
                var,
                mutable,
                start: (**start).clone(),
                end: (**end).clone(),
                inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
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
