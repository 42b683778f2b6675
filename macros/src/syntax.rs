//! Token recognizers shared by the stages that read the user's `syn` tree: which macro a
//! `Macro` invokes (`spawn!`, `sync!`, `alloc!`), the call inside `spawn!`, the arguments of
//! `alloc!`, `Temp<T>` types, single-name patterns and paths, spawn destinations.
//!
//! This module owns *recognizing* the DSL's shapes, nothing else: it reports malformed `spawn!`
//! and `alloc!` bodies (their catalogue entries live in `error`) but decides nothing about where
//! they may stand (that is `check`) or what they mean (that is `parse` and `lower`). `check`,
//! `parse`, `lower`, `expand` and `write` read it; it depends only on `error` and `ir`.

use crate::error;
use crate::ir::Dest;
use std::collections::HashSet;
use syn::punctuated::Punctuated;
use syn::{Expr, FnArg, ItemFn, Macro, Pat, Path, Token, Type};

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
    match macro_name(mac)?.to_string().as_str() {
        "spawn" => Some(MacroKind::Spawn),
        "sync" => Some(MacroKind::Sync),
        "alloc" => Some(MacroKind::Alloc),
        _ => None,
    }
}

/// The last segment of a macro's path, when it has no generic arguments (how [`macro_kind`] and
/// [`block_macro`] recognize our macros through any path).
fn macro_name(mac: &Macro) -> Option<&syn::Ident> {
    let last = mac.path.segments.last()?;
    last.arguments.is_none().then_some(&last.ident)
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

thread_local! {
    /// The type parameters of the function being compiled (see [`with_type_params`]).
    static TYPE_PARAMS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with the type parameters of `generics` (each bounded by `Key`, which `check`
/// enforces) recognized as scalar element types wherever the recognizers ask for one
/// ([`temp_elem_name`], hence slices `&[T]` and temporaries `Temp<T>`), and restores the previous
/// set afterwards. One macro invocation compiles one function, on one thread.
pub fn with_type_params<R>(generics: &syn::Generics, f: impl FnOnce() -> R) -> R {
    let names: Vec<String> = generics.type_params().map(|p| p.ident.to_string()).collect();
    let saved = TYPE_PARAMS.with(|t| std::mem::replace(&mut *t.borrow_mut(), names));
    let out = f();
    TYPE_PARAMS.with(|t| *t.borrow_mut() = saved);
    out
}

/// `name` is a type parameter of the function being compiled.
pub fn is_type_param(name: &str) -> bool {
    TYPE_PARAMS.with(|t| t.borrow().iter().any(|n| n == name))
}

/// Names of library types that are never device structs (they have their own rules or errors).
const NOT_STRUCTS: &[&str] = &[
    "Vec", "VecDeque", "Box", "String", "str", "HashMap", "BTreeMap", "Rc", "Arc", "Temp", "Max", "Min", "Sum",
    "Option", "Result", "Self", "Mat", "MatMut",
];

/// `ty` is a plain name that may be a device struct (`#[derive(DeviceStruct)]`): one path
/// segment without arguments that is no scalar, type parameter or library type. Whether it
/// derives `DeviceStruct` is rustc's to check (generated code names `<S as DeviceStruct>::DEF`).
pub fn is_struct_type(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            let n = seg.ident.to_string();
            seg.arguments.is_none()
                && !TEMP_SCALARS.contains(&n.as_str())
                && !["bool", "i128", "u128"].contains(&n.as_str())
                && !NOT_STRUCTS.contains(&n.as_str())
                && !is_type_param(&n)
        }
        Type::Paren(p) => is_struct_type(&p.elem),
        Type::Group(g) => is_struct_type(&g.elem),
        _ => false,
    }
}

/// The device struct types an item names, each once, in order of appearance: in its signature,
/// its `let` annotations and casts, nested in arrays, slices and tuples, and as the path of a
/// struct literal `S { .. }`.
pub fn struct_types(item: &ItemFn) -> Vec<Path> {
    use syn::visit::Visit;
    struct Finder(Vec<Path>);
    impl Finder {
        fn add(&mut self, p: &Path) {
            if !self.0.iter().any(|q| q == p) {
                self.0.push(p.clone());
            }
        }
    }
    impl<'ast> Visit<'ast> for Finder {
        fn visit_type(&mut self, t: &'ast Type) {
            if is_struct_type(t) {
                if let Type::Path(p) = t {
                    self.add(&p.path);
                }
            }
            syn::visit::visit_type(self, t);
        }
        fn visit_expr_struct(&mut self, e: &'ast syn::ExprStruct) {
            self.add(&e.path);
            syn::visit::visit_expr_struct(self, e);
        }
        fn visit_macro(&mut self, m: &'ast Macro) {
            // `alloc!(S, n)`: a temporary of a device struct.
            if macro_kind(m) == Some(MacroKind::Alloc) {
                if let Ok(AllocArgs(ty, _, _)) = m.parse_body::<AllocArgs>() {
                    self.visit_type(&ty);
                }
            }
            // `spawn!(f(S { .. }))`: the call inside is an expression too.
            if macro_kind(m) == Some(MacroKind::Spawn) {
                if let Ok(exprs) = m.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
                    for e in &exprs {
                        self.visit_expr(e);
                    }
                }
            }
        }
    }
    let mut f = Finder(Vec::new());
    f.visit_signature(&item.sig);
    f.visit_block(&item.block);
    f.0
}

/// `ty` names `name` somewhere as a path (`T`, `&[T]`, `[T; 4]`, `Temp<T>`, `g::Output<T>`).
pub fn mentions(ty: &Type, name: &syn::Ident) -> bool {
    use syn::visit::Visit;
    struct Finder<'n> {
        name: &'n syn::Ident,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, p: &'ast syn::Path) {
            if p.is_ident(self.name) {
                self.found = true;
            }
            syn::visit::visit_path(self, p);
        }
    }
    let mut f = Finder { name, found: false };
    f.visit_type(ty);
    f.found
}

/// The type arguments of a call or spawn path's last segment (`cilkmerge::<T>` → `[T]`), and the
/// path without them (`cilkmerge`).
pub fn split_type_args(p: &Path) -> (Path, Vec<Type>) {
    let mut bare = p.clone();
    let mut args = Vec::new();
    if let Some(last) = bare.segments.last_mut() {
        if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
            args = a
                .args
                .iter()
                .filter_map(|g| match g {
                    syn::GenericArgument::Type(t) => Some(t.clone()),
                    _ => None,
                })
                .collect();
        }
        last.arguments = syn::PathArguments::None;
    }
    (bare, args)
}

/// An element type of a temporary: a [`TEMP_SCALARS`] type, a type parameter, or a device
/// struct (rustc checks that it derives `DeviceStruct`, which implements the runtime's
/// `TempElem`).
pub fn is_temp_elem(ty: &Type) -> bool {
    temp_elem_name(ty).is_some() || is_struct_type(ty)
}

/// `alloc!(T, len)` or `alloc!(T, len, uninit)`: the element type (checked by
/// [`is_temp_elem`]) and the length. See [`alloc_uninit`] for the third argument.
pub fn alloc_args(mac: &Macro) -> syn::Result<(Type, Expr)> {
    let AllocArgs(ty, len, _) = mac.parse_body::<AllocArgs>().map_err(|_| error::ALLOC_ARGS.on(mac))?;
    if !is_temp_elem(&ty) {
        return Err(error::ALLOC_ELEM.on(&ty));
    }
    Ok((ty, len))
}

/// Whether an `alloc!` that parses (see [`alloc_args`]) was written `alloc!(T, len, uninit)`:
/// the cuda backend then skips zeroing the temporary.
pub fn alloc_uninit(mac: &Macro) -> bool {
    mac.parse_body::<AllocArgs>().map(|a| a.2).unwrap_or(false)
}

/// The arguments of `alloc!`: type, length, `uninit` written.
struct AllocArgs(Type, Expr, bool);

impl syn::parse::Parse for AllocArgs {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let ty: Type = input.parse()?;
        input.parse::<Token![,]>()?;
        let len: Expr = input.parse()?;
        let mut uninit = false;
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if !input.is_empty() {
                let id: syn::Ident = input.parse()?;
                if id != "uninit" {
                    return Err(syn::Error::new(id.span(), "not `uninit`"));
                }
                uninit = true;
                if input.peek(Token![,]) {
                    input.parse::<Token![,]>()?;
                }
            }
        }
        if !input.is_empty() {
            return Err(input.error("extra"));
        }
        Ok(AllocArgs(ty, len, uninit))
    }
}

/// `f32` for the type `f32` when it is a [`TEMP_SCALARS`] type.
pub fn temp_elem_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            let n = seg.ident.to_string();
            (seg.arguments.is_none() && (TEMP_SCALARS.contains(&n.as_str()) || is_type_param(&n))).then_some(n)
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

/// For `&[T]` / `&mut [T]` with `T` a [`TEMP_SCALARS`] type (no lifetime written): `Some((mutable,
/// T))`. The slice parameters of the subset; a strided view `Mat<T>` / `MatMut<T>` ([`view_type`])
/// is one too (it narrows, crosses the task boundary and is race-checked like a slice; where the
/// two differ, callers ask [`view_type`]).
pub fn slice_type(ty: &Type) -> Option<(bool, &Type)> {
    if let Some(v) = view_type(ty) {
        return Some(v);
    }
    match ty {
        Type::Reference(r) if r.lifetime.is_none() => match &*r.elem {
            Type::Slice(s) if temp_elem_name(&s.elem).is_some() || is_struct_type(&s.elem) => {
                Some((r.mutability.is_some(), &*s.elem))
            }
            _ => None,
        },
        Type::Paren(p) => slice_type(&p.elem),
        Type::Group(g) => slice_type(&g.elem),
        _ => None,
    }
}

/// For a strided 2-D view `Mat<T>` / `MatMut<T>` (any path ending so, one type argument, no
/// lifetime written) with `T` a slice element: `Some((mutable, T))`.
pub fn view_type(ty: &Type) -> Option<(bool, &Type)> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            let mutable = match seg.ident.to_string().as_str() {
                "Mat" => false,
                "MatMut" => true,
                _ => return None,
            };
            match &seg.arguments {
                syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) if temp_elem_name(t).is_some() || is_struct_type(t) => {
                        Some((mutable, t))
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        Type::Paren(p) => view_type(&p.elem),
        Type::Group(g) => view_type(&g.elem),
        _ => None,
    }
}

/// The slice message, or its view form when `ty` is a view `Mat<T>`/`MatMut<T>`.
pub fn slice_or_view(ty: &Type, slice: error::Msg, view: error::Msg) -> error::Msg {
    if view_type(ty).is_some() {
        view
    } else {
        slice
    }
}

/// The methods that narrow a view (`c.quadrants_mut(h, h)`, ..): like a sub-slice, their value
/// lies inside the receiver.
pub const VIEW_SPLITS: &[&str] = &[
    "block",
    "block_mut",
    "split_rows",
    "split_rows_mut",
    "split_cols",
    "split_cols_mut",
    "quadrants",
    "quadrants_mut",
];

/// The kinds of shared monotone bounds (`gpu_cilk::Max`, `Min`, `Sum`).
pub const BOUND_KINDS: &[&str] = &["Max", "Min", "Sum"];

/// The value types of a shared bound (the device has atomics for these).
pub const BOUND_ELEMS: &[&str] = &["u32", "i32", "u64", "i64"];

/// The last path segment of `ty` when it names a shared bound kind (`Max`, `gpu_cilk::Min`, ..),
/// with its generic argument if there is exactly one type.
pub fn bound_path(ty: &Type) -> Option<(String, Option<&Type>)> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            let kind = seg.ident.to_string();
            if !BOUND_KINDS.contains(&kind.as_str()) {
                return None;
            }
            let elem = match &seg.arguments {
                syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => Some(t),
                    _ => None,
                },
                _ => None,
            };
            Some((kind, elem))
        }
        Type::Paren(p) => bound_path(&p.elem),
        Type::Group(g) => bound_path(&g.elem),
        _ => None,
    }
}

/// For `&Max<T>` / `&Min<T>` / `&Sum<T>` with `T` one of [`BOUND_ELEMS`] (shared, no lifetime
/// written): `Some((kind, T))`. A shared monotone bound parameter.
pub fn bound_type(ty: &Type) -> Option<(String, &Type)> {
    match ty {
        Type::Reference(r) if r.mutability.is_none() && r.lifetime.is_none() => {
            let (kind, elem) = bound_path(&r.elem)?;
            let elem = elem?;
            let name = temp_elem_name(elem)?;
            BOUND_ELEMS.contains(&name.as_str()).then_some((kind, elem))
        }
        Type::Paren(p) => bound_type(&p.elem),
        Type::Group(g) => bound_type(&g.elem),
        _ => None,
    }
}

/// `&a[lo..hi]`, `&mut a[lo..]`, `&a[..]`, ...: a sub-slice expression; `Some((mutable, base,
/// range))`.
pub fn sub_slice(e: &Expr) -> Option<(bool, &Expr, &syn::ExprRange)> {
    match e {
        Expr::Reference(r) => match &*r.expr {
            Expr::Index(ix) => match &*ix.index {
                Expr::Range(range) => Some((r.mutability.is_some(), &ix.expr, range)),
                _ => None,
            },
            _ => None,
        },
        Expr::Paren(p) => sub_slice(&p.expr),
        Expr::Group(g) => sub_slice(&g.expr),
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
pub fn spawn_call(mac: &Macro) -> syn::Result<SpawnCall> {
    if mac.tokens.is_empty() {
        return Err(error::SPAWN_EMPTY.on(mac));
    }
    let exprs = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)?;
    if exprs.is_empty() {
        return Err(error::SPAWN_EMPTY.on(mac));
    }
    let mut exprs = exprs.into_iter();
    let Some(expr) = exprs.next() else { return Err(error::SPAWN_EMPTY.on(mac)) };
    let priority = match (exprs.next(), exprs.next()) {
        (None, _) => None,
        (Some(Expr::Assign(a)), None) if is_name(&a.left, "priority") => Some(*a.right),
        (Some(Expr::Assign(a)), None) => return Err(error::SPAWN_OPTION.on(&a.left)),
        _ => return Err(error::SPAWN_MANY.on(&mac.tokens)),
    };
    match expr {
        Expr::Call(call) => match *call.func {
            Expr::Path(p) if p.qself.is_none() => {
                let n = p.path.segments.len();
                let earlier = p.path.segments.iter().take(n.saturating_sub(1)).any(|s| !s.arguments.is_none());
                if earlier || !type_args_only(&p.path) {
                    return Err(error::SPAWN_GENERIC.on(&p.path));
                }
                Ok(SpawnCall { path: p.path, args: call.args.into_iter().collect(), priority })
            }
            other => Err(error::SPAWN_NOT_CALL.on(other)),
        },
        Expr::MethodCall(m) => Err(error::SPAWN_METHOD.on(m)),
        other => Err(error::SPAWN_NOT_CALL.on(other)),
    }
}

/// The last segment of `p` has no generic arguments, or only types (`f::<T>`, `f::<u32, T>`):
/// what a call or spawn of a generic function may name.
pub fn type_args_only(p: &Path) -> bool {
    match p.segments.last().map(|s| &s.arguments) {
        None | Some(syn::PathArguments::None) => true,
        Some(syn::PathArguments::AngleBracketed(a)) => {
            a.args.iter().all(|g| matches!(g, syn::GenericArgument::Type(_)))
        }
        Some(syn::PathArguments::Parenthesized(_)) => false,
    }
}

/// What `spawn!(path(args)[, priority = key])` says.
pub struct SpawnCall {
    /// The callee as written.
    pub path: Path,
    /// The call's arguments.
    pub args: Vec<Expr>,
    /// The `priority = key` option.
    pub priority: Option<Expr>,
}

/// `e` is the plain name `name`.
fn is_name(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Path(p) if p.qself.is_none() && p.path.is_ident(name))
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

/// The names (with `mut`) of `let (a, mut b)` and the annotation, if any.
pub type TupleBinding = (Vec<(syn::Ident, bool)>, Option<Type>);

/// `let (a, mut b)[: (A, B)] = ..`: the names (with `mut`) and the annotation, for a tuple of
/// 2 to 4 plain names.
pub fn tuple_binding(pat: &Pat) -> Option<TupleBinding> {
    match pat {
        Pat::Tuple(t) if (2..=4).contains(&t.elems.len()) => {
            let mut names = Vec::new();
            for e in &t.elems {
                match e {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        names.push((pi.ident.clone(), pi.mutability.is_some()))
                    }
                    _ => return None,
                }
            }
            Some((names, None))
        }
        Pat::Type(pt) => {
            let (names, _) = tuple_binding(&pt.pat)?;
            Some((names, Some((*pt.ty).clone())))
        }
        Pat::Paren(p) => tuple_binding(&p.pat),
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

/// `lanes(lo, hi)` / `gpu_cilk::lanes(lo, hi)` (any path whose last segment is `lanes`, two
/// arguments): the cooperative loop of a `#[gpu_cilk(warp)]` task. `Some((lo, hi))`.
pub fn lanes_call(e: &Expr) -> Option<(&Expr, &Expr)> {
    range_call(e, "lanes")
}

/// `threads(lo, hi)` / `gpu_cilk::threads(lo, hi)`: the cooperative loop of a
/// `#[gpu_cilk(block)]` task. `Some((lo, hi))`.
pub fn threads_call(e: &Expr) -> Option<(&Expr, &Expr)> {
    range_call(e, "threads")
}

/// A cooperative loop's iterator of either width (`lanes` or `threads`).
pub fn coop_call(e: &Expr) -> Option<(&Expr, &Expr)> {
    lanes_call(e).or_else(|| threads_call(e))
}

/// A call `name(lo, hi)` through any path whose last segment is `name`, without generic arguments.
fn range_call<'e>(e: &'e Expr, name: &str) -> Option<(&'e Expr, &'e Expr)> {
    let Expr::Call(c) = e else { return None };
    let Expr::Path(p) = &*c.func else { return None };
    if p.qself.is_some() || p.path.segments.last().map(|s| s.ident != name).unwrap_or(true) {
        return None;
    }
    if p.path.segments.iter().any(|s| !s.arguments.is_none()) || c.args.len() != 2 {
        return None;
    }
    Some((&c.args[0], &c.args[1]))
}

/// The macros of block tasks (`#[gpu_cilk(block)]`), which `gpu_cilk` defines with their serial
/// meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockMacro {
    /// `block_sync!()`: the block's barrier.
    Sync,
    /// `shared!([v; N])`: a block-shared scratch array.
    Shared,
}

/// `block_sync!` / `shared!` through any path, without generic arguments.
pub fn block_macro(mac: &Macro) -> Option<BlockMacro> {
    match macro_name(mac)?.to_string().as_str() {
        "block_sync" => Some(BlockMacro::Sync),
        "shared" => Some(BlockMacro::Shared),
        _ => None,
    }
}

/// `shared!([v; N])` as an expression: the macro and its array repeat `[v; N]` (`None` for the
/// repeat when the argument has another shape).
pub fn as_shared(e: &Expr) -> Option<(&Macro, Option<syn::ExprRepeat>)> {
    let Expr::Macro(m) = e else { return None };
    if block_macro(&m.mac) != Some(BlockMacro::Shared) {
        return None;
    }
    let repeat = match m.mac.parse_body::<Expr>() {
        Ok(Expr::Repeat(r)) => Some(r),
        _ => None,
    };
    Some((&m.mac, repeat))
}

/// How wide a task runs: `#[gpu_cilk]`, `#[gpu_cilk(warp)]` or `#[gpu_cilk(block)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// One thread (a plain task).
    Lane,
    /// One warp.
    Warp,
    /// One thread block.
    Block,
}

/// The arguments of `#[gpu_cilk(..)]`: the task's [`Width`] (none, `warp` or `block`), `None` for
/// anything else.
pub fn width_attr(attr: &proc_macro2::TokenStream) -> Option<Width> {
    if attr.is_empty() {
        return Some(Width::Lane);
    }
    let id: syn::Ident = syn::parse2(attr.clone()).ok()?;
    match id.to_string().as_str() {
        "warp" => Some(Width::Warp),
        "block" => Some(Width::Block),
        _ => None,
    }
}

/// The identifiers a pattern binds, in textual order.
pub fn pat_binders(p: &Pat) -> Vec<syn::Ident> {
    struct B(Vec<syn::Ident>);
    impl<'ast> syn::visit::Visit<'ast> for B {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut b = B(Vec::new());
    syn::visit::Visit::visit_pat(&mut b, p);
    b.0
}

/// The names of `item`'s slice parameters (`a: &[T]`, `a: &mut [T]`): where the set of slice
/// names that `check` and the race witness track starts.
pub fn slice_params(item: &ItemFn) -> HashSet<String> {
    let mut names = HashSet::new();
    for arg in &item.sig.inputs {
        if let FnArg::Typed(pt) = arg {
            if let (Pat::Ident(pi), Some(_)) = (&*pt.pat, slice_type(&pt.ty)) {
                names.insert(pi.ident.to_string());
            }
        }
    }
    names
}

/// The slice name `e` is (a bare identifier in `names`, through parentheses), if it is one.
pub fn slice_name(e: &Expr, names: &HashSet<String>) -> Option<String> {
    match e {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()).filter(|n| names.contains(n)),
        Expr::Paren(p) => slice_name(&p.expr, names),
        Expr::Group(g) => slice_name(&g.expr, names),
        _ => None,
    }
}

/// Whether `let` binds slices: typed `&[T]`/`&mut [T]`, or initialised by a slice name, a
/// sub-slice of one or a split (`split_at`/`split_at_mut`) — one rule for `check`'s provenance
/// rules and the race witness.
pub fn local_binds_slice(l: &syn::Local, names: &HashSet<String>) -> bool {
    fn is_slice(e: &Expr, names: &HashSet<String>) -> bool {
        match e {
            Expr::MethodCall(m) => {
                m.method == "split_at"
                    || m.method == "split_at_mut"
                    || VIEW_SPLITS.contains(&m.method.to_string().as_str())
            }
            Expr::Paren(p) => is_slice(&p.expr, names),
            Expr::Group(g) => is_slice(&g.expr, names),
            e => slice_name(e, names).is_some() || sub_slice(e).is_some(),
        }
    }
    matches!(&l.pat, Pat::Type(t) if slice_type(&t.ty).is_some())
        || l.init.as_ref().is_some_and(|i| is_slice(&i.expr, names))
}

/// The C++ keywords (and `NULL`) that no generated identifier may be: the emitter renames a user's
/// local (`write::ty::mangle`), and a device struct or field with such a name is rejected
/// (`check::device_struct`).
pub const CXX_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "asm",
    "auto",
    "bool",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "default",
    "delete",
    "do",
    "double",
    "explicit",
    "export",
    "extern",
    "float",
    "friend",
    "goto",
    "inline",
    "int",
    "long",
    "namespace",
    "new",
    "noexcept",
    "nullptr",
    "operator",
    "private",
    "protected",
    "public",
    "register",
    "short",
    "signed",
    "sizeof",
    "static",
    "switch",
    "template",
    "this",
    "throw",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "and",
    "or",
    "not",
    "xor",
    "bitand",
    "bitor",
    "compl",
    "NULL",
];
