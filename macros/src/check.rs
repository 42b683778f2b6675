//! The supported subset, checked on the `syn` tree before anything is lowered.
//!
//! This module owns the *syntactic* rules: the signature (no `async`/`unsafe`/generics/`self`,
//! scalar, array and tuple types), where `sync!()` may stand (any statement, not a value), the shape
//! and position of `spawn!` (a statement, a call to a named function), and which expressions,
//! statements, methods and types belong to the subset. It reports every violation it finds (into
//! an [`Errors`]), each on the exact span, so the user sees all problems at once. Rules that need
//! name resolution (spawned values read before `sync!()`, frame types, shadowing) live in `lower`.

use crate::error::{self, Errors};
use crate::syntax::{self, macro_kind, MacroKind};
use syn::{Expr, FnArg, ItemFn, Pat, ReturnType, Signature, Stmt, Type};

/// What the function is: a task (may spawn and sync) or a device helper (may not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `#[gpu_cilk]`
    Task,
    /// `#[gpu_cilk::device]`
    Device,
    /// `#[gpu_cilk(warp)]`: a leaf task a whole warp runs (no `spawn!`/`sync!`/`alloc!`; its
    /// cooperative loops are `for i in lanes(lo, hi)`).
    Warp,
    /// `#[gpu_cilk(block)]`: a leaf task a whole thread block runs (no `spawn!`/`sync!`/`alloc!`;
    /// its cooperative loops are `for i in threads(lo, hi)`, its scratch `shared!([v; N])` and its
    /// barrier `block_sync!()`; no local of the body is assigned inside a `threads` loop, so every
    /// value outside those loops is the same on every thread and every barrier is reached by all).
    Block,
}

/// Where a statement list sits, for `sync!()` diagnostics and for what it may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The function body's own statements.
    Top,
    /// Inside a loop body.
    Loop,
    /// Inside an `if`/`else` branch.
    Branch,
    /// Inside a nested block.
    Block,
    /// Inside an expression whose value is used (`let v = { .. };`).
    Value,
}

/// Checks `item` against the subset; every problem goes into `errors`.
pub fn function(item: &ItemFn, mode: Mode, errors: &mut Errors) {
    let generic = item.sig.generics.type_params().next().is_some();
    let own_generic = generic.then(|| item.sig.ident.clone());
    let mut c = Checker { errors, mode, in_lanes: false, loops_in_lanes: 0, own_generic, coop_locals: Vec::new() };
    c.signature(&item.sig);
    c.stmts(&item.block.stmts, Place::Top, true);
    temp_shadows(item, errors);
    temp_part_writes(item, errors);
    slice_provenance(item, errors);
}

/// A `#[derive(DeviceStruct)]` struct: `#[repr(C)]`, named fields, no generics, every field a
/// scalar, a fixed-size array of those or another device struct, no name CUDA reserves.
pub fn device_struct(item: &syn::ItemStruct, errors: &mut Errors) {
    let repr_c = item.attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.parse_args_with(syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated)
                .is_ok_and(|ids| ids.iter().any(|i| i == "C"))
    });
    if !repr_c {
        errors.push(error::STRUCT_REPR.on(&item.ident));
    }
    if !item.generics.params.is_empty() || !matches!(item.fields, syn::Fields::Named(_)) {
        errors.push(error::STRUCT_SHAPE.on(&item.ident));
    }
    let reserved = |n: &str| {
        crate::syntax::CXX_KEYWORDS.contains(&n) || n.starts_with("gc_") || n.starts_with("GC_") || n.contains("__")
    };
    if reserved(&item.ident.to_string()) {
        errors.push(error::STRUCT_NAME.on(&item.ident));
    }
    fn field_ok(ty: &Type) -> bool {
        match ty {
            Type::Array(a) => field_ok(&a.elem),
            Type::Paren(p) => field_ok(&p.elem),
            Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let n = p.path.segments[0].ident.to_string();
                p.path.segments[0].arguments.is_none()
                    && ((SCALARS.contains(&n.as_str()) && n != "i128" && n != "u128") || syntax::is_struct_type(ty))
            }
            _ => false,
        }
    }
    for f in &item.fields {
        if let Some(n) = &f.ident {
            if reserved(&n.to_string()) {
                errors.push(error::STRUCT_NAME.on(n));
            }
        }
        if !field_ok(&f.ty) {
            errors.push(error::STRUCT_FIELD.on(&f.ty));
        }
    }
}

/// Every slice a task sees must lie inside a slice it was given (its children's `Args` outlive
/// the segment, so a slice of a local array would dangle): sub-slices `&x[..]` and
/// `x.split_at(_mut)(..)` only of *slice names* — the slice parameters and the locals bound to
/// a slice name, a sub-slice or a split of one — and a slice name is never declared again (so
/// the name always means that slice). Conservative and by name, in textual order.
fn slice_provenance(item: &ItemFn, errors: &mut Errors) {
    use std::collections::HashSet;
    use syn::visit::Visit;
    struct Names<'e> {
        names: HashSet<String>,
        errors: &'e mut Errors,
    }
    impl Names<'_> {
        fn is_name(&self, e: &Expr) -> bool {
            syntax::slice_name(e, &self.names).is_some()
        }
        fn declare(&mut self, pat: &Pat, slice: bool) {
            for id in syntax::pat_binders(pat) {
                if self.names.contains(&id.to_string()) {
                    self.errors.push(error::slice_shadowed(&id));
                } else if slice {
                    self.names.insert(id.to_string());
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for Names<'_> {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            if let Some(init) = &l.init {
                self.visit_expr(&init.expr);
            }
            let slice = syntax::local_binds_slice(l, &self.names);
            self.declare(&l.pat, slice);
        }
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            self.visit_expr(&f.expr);
            self.declare(&f.pat, false);
            self.visit_block(&f.body);
        }
        fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
            let e = Expr::Reference(r.clone());
            if let Some((_, base, _)) = syntax::sub_slice(&e) {
                if !self.is_name(base) {
                    self.errors.push(error::SLICE_BASE.on(base));
                }
            }
            syn::visit::visit_expr_reference(self, r);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let method = m.method.to_string();
            let narrows =
                method == "split_at" || method == "split_at_mut" || syntax::VIEW_SPLITS.contains(&method.as_str());
            if narrows && !self.is_name(&m.receiver) {
                let msg = if method.starts_with("split_at") { error::SLICE_BASE } else { error::VIEW_BASE };
                self.errors.push(msg.on(&m.receiver));
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            // The arguments of `spawn!` are where sub-slices go to children.
            if macro_kind(mac) == Some(MacroKind::Spawn) {
                if let Ok(call) = syntax::spawn_call(mac) {
                    for a in call.args.iter().chain(&call.priority) {
                        self.visit_expr(a);
                    }
                }
            }
        }
    }
    let mut n = Names { names: syntax::slice_params(item), errors };
    n.visit_block(&item.block);
}

/// A temporary's name may be bound only once in the whole function (the emitters rewrite `t[i]`
/// on temporaries by name).
fn temp_shadows(item: &ItemFn, errors: &mut Errors) {
    let temps = syntax::temp_names(item);
    if temps.is_empty() {
        return;
    }
    struct Binders(Vec<syn::Ident>);
    impl<'ast> syn::visit::Visit<'ast> for Binders {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut b = Binders(Vec::new());
    for arg in &item.sig.inputs {
        if let FnArg::Typed(pt) = arg {
            syn::visit::Visit::visit_pat(&mut b, &pt.pat);
        }
    }
    syn::visit::Visit::visit_block(&mut b, &item.block);
    for t in &temps {
        let mut seen = 0;
        for id in &b.0 {
            if id == t {
                seen += 1;
                if seen == 2 {
                    errors.push(error::temp_shadowed(id));
                }
            }
        }
    }
}

/// `t[i].x = v`, `t[i].a[j] op= v` on a temporary `t` (an `alloc!` or a `Temp` parameter): the
/// host writes an element whole (`Temp::set`), so a part of one cannot be assigned.
fn temp_part_writes(item: &ItemFn, errors: &mut Errors) {
    let temps = syntax::temp_names(item);
    if temps.is_empty() {
        return;
    }
    struct Finder<'n>(&'n [syn::Ident], Vec<syn::Error>);
    impl Finder<'_> {
        /// `place` is a field or element of `t[i]` (one step or more below the indexing).
        fn part_of_temp(&self, place: &Expr) -> bool {
            let (mut e, mut below) = (place, false);
            loop {
                match e {
                    Expr::Field(f) => e = &f.base,
                    Expr::Paren(p) => {
                        e = &p.expr;
                        continue;
                    }
                    Expr::Index(i) => {
                        let base = match &*i.expr {
                            Expr::Path(p) => syntax::single_ident(p),
                            _ => None,
                        };
                        if below && base.is_some_and(|b| self.0.contains(&b)) {
                            return true;
                        }
                        e = &i.expr;
                    }
                    _ => return false,
                }
                below = true;
            }
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Finder<'_> {
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            if self.part_of_temp(&a.left) {
                self.1.push(error::TEMP_PART_WRITE.on(&a.left));
            }
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if is_compound_assign(&b.op) && self.part_of_temp(&b.left) {
                self.1.push(error::TEMP_PART_WRITE.on(&b.left));
            }
            syn::visit::visit_expr_binary(self, b);
        }
    }
    let mut f = Finder(&temps, Vec::new());
    syn::visit::Visit::visit_block(&mut f, &item.block);
    for e in f.1 {
        errors.push(e);
    }
}

/// `+=`, `-=`, .. `>>=`.
fn is_compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp as B;
    matches!(
        op,
        B::AddAssign(_)
            | B::SubAssign(_)
            | B::MulAssign(_)
            | B::DivAssign(_)
            | B::RemAssign(_)
            | B::BitXorAssign(_)
            | B::BitAndAssign(_)
            | B::BitOrAssign(_)
            | B::ShlAssign(_)
            | B::ShrAssign(_)
    )
}

struct Checker<'a> {
    errors: &'a mut Errors,
    mode: Mode,
    /// Inside the body of a `for i in lanes(..)` loop.
    in_lanes: bool,
    /// Loops between the innermost `lanes` loop and here (a `break` at 0 would leave it).
    loops_in_lanes: u32,
    /// The function's name when it has type parameters (its own spawns must name them).
    own_generic: Option<syn::Ident>,
    /// In a block task's `threads` loop: the names bound inside it (the loop variable, its
    /// `let`s and inner loop variables), the only locals its body may assign.
    coop_locals: Vec<syn::Ident>,
}

/// The methods the subset accepts (each has a direct CUDA translation).
pub const METHODS: &[&str] = &[
    "total_lt",
    "total_le",
    "min",
    "max",
    "clamp",
    "abs",
    "abs_diff",
    "pow",
    "signum",
    "count_ones",
    "count_zeros",
    "leading_zeros",
    "trailing_zeros",
    "rotate_left",
    "rotate_right",
    "is_power_of_two",
    "rem_euclid",
    "div_euclid",
    "sqrt",
    "powi",
    "powf",
    "exp",
    "ln",
    "log2",
    "sin",
    "cos",
    "tan",
    "floor",
    "ceil",
    "round",
    "trunc",
    "mul_add",
    "len",
    "is_empty",
    "split_at",
    "split_at_mut",
    "fetch_max",
    "fetch_min",
    "fetch_add",
    "load",
];

/// Methods of atomics that would move a shared bound both ways (rejected with their own message).
const BOUND_WRITES: &[&str] =
    &["store", "swap", "fetch_sub", "fetch_update", "compare_exchange", "get_mut", "into_inner"];

fn method_allowed(name: &str) -> bool {
    METHODS.contains(&name)
        || name.starts_with("wrapping_")
        || name.starts_with("saturating_")
        || syntax::VIEW_SPLITS.contains(&name)
        || ["rows", "cols", "stride"].contains(&name)
}

const SCALARS: &[&str] =
    &["i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64", "bool"];

/// Checks a type of the subset: a scalar, a fixed-size array of subset types, or a temporary
/// `Temp<T>` of a scalar or device struct `T`.
pub fn check_type(ty: &Type) -> Result<(), syn::Error> {
    if let Some(elem) = syntax::temp_type_elem(ty) {
        return if syntax::is_temp_elem(elem) { Ok(()) } else { Err(error::ALLOC_ELEM.on(elem)) };
    }
    if syntax::bound_path(ty).is_some() {
        // `Max<u64>` by value: a bound is shared, passed as `&Max<u64>`.
        return Err(error::BOUND_FORM.on(ty));
    }
    match ty {
        _ if syntax::view_type(ty).is_some() => Ok(()),
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last();
            let name = seg.map(|s| s.ident.to_string()).unwrap_or_default();
            if name == "Mat" || name == "MatMut" {
                return Err(error::VIEW_ELEM.on(ty));
            }
            if syntax::is_struct_type(ty) {
                // A device struct: rustc checks that it derives `DeviceStruct`.
                return Ok(());
            }
            if p.path.segments.len() == 1 && (SCALARS.contains(&name.as_str()) || syntax::is_type_param(&name)) {
                if seg.is_some_and(|s| !s.arguments.is_none()) {
                    return Err(error::TYPE_OTHER.on(ty));
                }
                return Ok(());
            }
            if ["Vec", "VecDeque", "Box"].contains(&name.as_str()) {
                // The slice hint names the element when a slice can hold it (integers and floats).
                let elem = seg.and_then(single_type_argument).filter(|t| is_slice_elem(t));
                return Err(error::heap_sequence(ty, &name, elem));
            }
            if ["String", "str"].contains(&name.as_str()) {
                return Err(error::TYPE_STRING.on(ty));
            }
            if ["HashMap", "BTreeMap", "Rc", "Arc"].contains(&name.as_str()) {
                return Err(error::TYPE_HEAP.on(ty));
            }
            Err(error::TYPE_OTHER.on(ty))
        }
        Type::Array(a) if syntax::slice_type(&a.elem).is_some() => {
            Err(crate::syntax::slice_or_view(&a.elem, error::TYPE_SLICE_NESTED, error::TYPE_VIEW_NESTED).on(ty))
        }
        Type::Array(a) => check_type(&a.elem),
        Type::Paren(p) => check_type(&p.elem),
        Type::Group(g) => check_type(&g.elem),
        _ if syntax::slice_type(ty).is_some() => Ok(()),
        _ if syntax::bound_type(ty).is_some() => Ok(()),
        Type::Reference(r) if syntax::bound_path(&r.elem).is_some() => Err(error::BOUND_FORM.on(ty)),
        Type::Reference(r) if matches!(&*r.elem, Type::Path(p) if p.path.is_ident("str")) => {
            Err(error::TYPE_STRING.on(ty))
        }
        Type::Reference(_) | Type::Slice(_) | Type::Ptr(_) => Err(error::TYPE_REFERENCE.on(ty)),
        Type::ImplTrait(_) | Type::TraitObject(_) => Err(error::TYPE_IMPL_TRAIT.on(ty)),
        Type::Tuple(t) if (2..=4).contains(&t.elems.len()) => {
            for e in &t.elems {
                if matches!(e, Type::Tuple(_)) || syntax::temp_type_elem(e).is_some() {
                    return Err(error::TYPE_TUPLE.on(ty));
                }
                if syntax::slice_type(e).is_some() {
                    return Err(
                        crate::syntax::slice_or_view(e, error::TYPE_SLICE_NESTED, error::TYPE_VIEW_NESTED).on(ty)
                    );
                }
                check_type(e)?;
            }
            Ok(())
        }
        Type::Tuple(_) => Err(error::TYPE_TUPLE.on(ty)),
        _ => Err(error::TYPE_OTHER.on(ty)),
    }
}

/// An integer or float scalar (`u32`, `f64`, ..): what a slice may hold.
fn is_slice_elem(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1
        && p.path.segments[0].ident != "bool"
        && SCALARS.contains(&p.path.segments[0].ident.to_string().as_str()))
}

/// The `T` of `Vec<T>` (`Box<[T]>`'s `T` too), when it is one type.
fn single_type_argument(seg: &syn::PathSegment) -> Option<&Type> {
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else { return None };
    let mut types = args.args.iter().filter_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    match (types.next(), types.next()) {
        (Some(Type::Slice(s)), None) => Some(&s.elem),
        (Some(t), None) => Some(t),
        _ => None,
    }
}

impl Checker<'_> {
    fn err(&mut self, e: syn::Error) {
        self.errors.push(e);
    }

    fn ty(&mut self, ty: &Type) {
        if let Err(e) = check_type(ty) {
            self.err(e);
        }
    }

    /// Lifetime parameters are fine (the subset's types have no lifetimes to use them); each type
    /// parameter must be bounded by `Key` alone and appear in a parameter's type; const
    /// parameters are rejected.
    fn generics(&mut self, sig: &Signature) {
        for p in &sig.generics.params {
            match p {
                syn::GenericParam::Lifetime(_) => {}
                syn::GenericParam::Const(c) => self.err(error::CONST_GENERIC.on(c)),
                syn::GenericParam::Type(t) => {
                    let key = |b: &syn::TypeParamBound| {
                        matches!(b, syn::TypeParamBound::Trait(tb) if tb.lifetimes.is_none()
                            && matches!(tb.modifier, syn::TraitBoundModifier::None)
                            && tb.path.segments.last().is_some_and(|s| s.ident == "Key" && s.arguments.is_none()))
                    };
                    // `fn f<T>(..) where T: Key`: the where clause's own error says where to move the bound.
                    let bounded_in_where = t.bounds.is_empty() && sig.generics.where_clause.is_some();
                    if (t.bounds.len() != 1 || !t.bounds.iter().all(key)) && !bounded_in_where {
                        if t.bounds.is_empty() {
                            self.err(error::TYPE_PARAM_BOUND.on(&t.ident));
                        } else {
                            self.err(error::TYPE_PARAM_BOUND.on(&t.bounds));
                        }
                    }
                    if let Some(d) = &t.default {
                        self.err(error::TYPE_PARAM_DEFAULT.on(d));
                    }
                    let used = sig.inputs.iter().any(|a| match a {
                        FnArg::Typed(pt) => syntax::mentions(&pt.ty, &t.ident),
                        FnArg::Receiver(_) => false,
                    });
                    if !used {
                        self.err(error::type_param_unused(&t.ident));
                    }
                }
            }
        }
    }

    fn signature(&mut self, sig: &Signature) {
        if let Some(t) = &sig.constness {
            self.err(error::CONST_FN.on(t));
        }
        if let Some(t) = &sig.asyncness {
            self.err(error::ASYNC_FN.on(t));
        }
        if let Some(t) = &sig.unsafety {
            self.err(error::UNSAFE_FN.on(t));
        }
        if let Some(abi) = &sig.abi {
            self.err(error::EXTERN_FN.on(abi));
        }
        self.generics(sig);
        if let Some(w) = &sig.generics.where_clause {
            self.err(error::GENERICS.on(w));
        }
        if let Some(v) = &sig.variadic {
            self.err(error::VARIADIC.on(v));
        }
        for arg in &sig.inputs {
            match arg {
                FnArg::Receiver(r) => self.err(error::SELF_RECEIVER.on(r)),
                FnArg::Typed(pt) => {
                    match &*pt.pat {
                        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {}
                        other => self.err(error::PARAM_PATTERN.on(other)),
                    }
                    // A tuple's layout is Rust's choice: root arguments are bytes the host copies.
                    if matches!(&*pt.ty, Type::Tuple(t) if !t.elems.is_empty()) {
                        self.err(error::TYPE_TUPLE.on(&pt.ty));
                    } else {
                        self.ty(&pt.ty);
                    }
                }
            }
        }
        if let ReturnType::Type(_, ty) = &sig.output {
            match &**ty {
                Type::Tuple(t) if t.elems.is_empty() => {}
                other if syntax::temp_type_elem(other).is_some() => self.err(error::RETURN_TEMP.on(ty)),
                other if syntax::slice_type(other).is_some() => {
                    self.err(crate::syntax::slice_or_view(other, error::RETURN_SLICE, error::RETURN_VIEW).on(ty))
                }
                other if syntax::bound_type(other).is_some() => self.err(error::RETURN_BOUND.on(ty)),
                other => self.ty(other),
            }
        }
    }

    /// A statement list. `spawnable`: spawn statements may appear directly in it.
    fn stmts(&mut self, stmts: &[Stmt], place: Place, spawnable: bool) {
        for s in stmts {
            self.stmt(s, place, spawnable);
        }
    }

    fn stmt(&mut self, s: &Stmt, place: Place, spawnable: bool) {
        match s {
            Stmt::Local(local) => {
                match syntax::let_binding(&local.pat) {
                    Some((_, _, ty)) => {
                        if let Some(ty) = ty {
                            self.ty(&ty);
                        }
                    }
                    None if local.init.as_ref().is_some_and(|i| syntax::as_spawn(&i.expr).is_some()) => {
                        self.err(error::SPAWN_LET_PATTERN.on(&local.pat))
                    }
                    None if local.init.is_some() && syntax::tuple_binding(&local.pat).is_some() => {
                        if let Some((_, Some(ty))) = syntax::tuple_binding(&local.pat) {
                            self.ty(&ty);
                        }
                    }
                    None => self.err(error::LET_PATTERN.on(&local.pat)),
                }
                if let Some(init) = &local.init {
                    if let Some((_, div)) = &init.diverge {
                        self.err(error::LET_ELSE.on(div));
                    }
                    if let Some(mac) = syntax::as_alloc(&init.expr) {
                        if self.mode == Mode::Device {
                            return self.err(error::ALLOC_IN_DEVICE.on(mac));
                        }
                        if self.mode == Mode::Warp {
                            return self.err(error::WARP_ALLOC.on(mac));
                        }
                        if self.mode == Mode::Block {
                            return self.err(error::BLOCK_ALLOC.on(mac));
                        }
                        if place != Place::Top {
                            return self.err(error::ALLOC_POSITION.on(mac));
                        }
                        if let Some((_, true, _)) = syntax::let_binding(&local.pat) {
                            self.err(error::ALLOC_MUT.on(&local.pat));
                        }
                        match syntax::alloc_args(mac) {
                            Ok((_, len)) => self.expr(&len, place),
                            Err(e) => self.err(e),
                        }
                        return;
                    }
                    if let Some((mac, repeat)) = syntax::as_shared(&init.expr) {
                        let typed = syntax::let_binding(&local.pat).is_some_and(|(_, _, ty)| ty.is_some());
                        return self.shared(mac, repeat.as_ref(), place, typed);
                    }
                    match syntax::as_spawn(&init.expr) {
                        Some(mac) => self.spawn(mac, place, spawnable),
                        None => self.expr(&init.expr, place),
                    }
                }
            }
            Stmt::Item(item) => self.err(error::ITEM_IN_BODY.on(item)),
            Stmt::Macro(m) => self.stmt_macro(&m.mac, place, spawnable),
            Stmt::Expr(e, _) => self.stmt_expr(e, place, spawnable),
        }
    }

    fn stmt_macro(&mut self, mac: &syn::Macro, place: Place, spawnable: bool) {
        if let Some(b) = syntax::block_macro(mac) {
            return self.block_macro(mac, b, place, true);
        }
        match macro_kind(mac) {
            Some(MacroKind::Spawn) => self.spawn(mac, place, spawnable),
            Some(MacroKind::Sync) => self.sync(mac, place),
            Some(MacroKind::Alloc) => self.alloc_elsewhere(mac),
            None => self.err(error::other_macro(mac)),
        }
    }

    /// `block_sync!()` / `shared!(..)` anywhere but a `let`'s initializer (`stmt`: in statement
    /// position).
    fn block_macro(&mut self, mac: &syn::Macro, kind: syntax::BlockMacro, place: Place, stmt: bool) {
        let msg = match kind {
            _ if self.mode != Mode::Block && kind == syntax::BlockMacro::Sync => error::BLOCK_SYNC_OUTSIDE,
            _ if self.mode != Mode::Block => error::SHARED_OUTSIDE_BLOCK,
            syntax::BlockMacro::Shared => error::SHARED_POSITION,
            // A barrier in a cooperative loop: its iterations (and every branch in them) are the
            // thread's own, so some threads would not reach it. Outside those loops every value is
            // the same on every thread (`Mode::Block`), so every branch there is taken by all.
            syntax::BlockMacro::Sync if self.in_lanes => error::BLOCK_SYNC_IN_THREADS,
            syntax::BlockMacro::Sync if !stmt || place == Place::Value || !mac.tokens.is_empty() => {
                error::BLOCK_SYNC_POSITION
            }
            syntax::BlockMacro::Sync => return,
        };
        self.err(msg.on(mac));
    }

    /// `let s = shared!([v; N]);` (`repeat`: its argument when that is an array repeat; `typed`:
    /// the `let` has a type annotation).
    fn shared(&mut self, mac: &syn::Macro, repeat: Option<&syn::ExprRepeat>, place: Place, typed: bool) {
        if self.mode != Mode::Block || place != Place::Top {
            return self.block_macro(mac, syntax::BlockMacro::Shared, place, false);
        }
        let Some(r) = repeat else { return self.err(error::SHARED_SHAPE.on(mac)) };
        match &*r.expr {
            Expr::Lit(l)
                if typed
                    || matches!(&l.lit, syn::Lit::Int(i) if !i.suffix().is_empty())
                    || matches!(&l.lit, syn::Lit::Float(f) if !f.suffix().is_empty()) => {}
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(_), .. }) => {}
            _ => return self.err(error::SHARED_SHAPE.on(mac)),
        }
        self.expr(&r.len, place);
    }

    /// In a block task's `threads` loop: an assignment to `left` whose local was declared outside
    /// the loop (each thread would hold its own value of it after the loop).
    fn coop_assign(&mut self, left: &Expr) {
        if self.mode != Mode::Block || !self.in_lanes {
            return;
        }
        if let Expr::Path(p) = left {
            if let Some(id) = p.path.get_ident() {
                if !self.coop_locals.contains(id) {
                    self.err(error::THREADS_ESCAPE.on(left));
                }
            }
        }
    }

    /// `alloc!` anywhere but the initializer of a top-level `let`.
    fn alloc_elsewhere(&mut self, mac: &syn::Macro) {
        if self.mode == Mode::Block {
            self.err(error::BLOCK_ALLOC.on(mac));
        } else if self.mode == Mode::Warp {
            self.err(error::WARP_ALLOC.on(mac));
        } else if self.mode == Mode::Device {
            self.err(error::ALLOC_IN_DEVICE.on(mac));
        } else {
            self.err(error::ALLOC_POSITION.on(mac));
        }
    }

    fn sync(&mut self, mac: &syn::Macro, place: Place) {
        if self.mode == Mode::Device {
            return self.err(error::SYNC_IN_DEVICE.on(mac));
        }
        if self.mode == Mode::Warp {
            return self.err(error::WARP_SYNC.on(mac));
        }
        if self.mode == Mode::Block {
            return self.err(error::BLOCK_SYNC.on(mac));
        }
        // A statement anywhere in the body's control flow; not inside an expression whose value
        // is used (`let v = { sync!(); 1 };`), which has no place to resume at.
        if place == Place::Value {
            self.err(error::SYNC_IN_EXPR.on(mac));
        } else if !mac.tokens.is_empty() {
            self.err(error::SYNC_ARGS.on(&mac.tokens));
        }
    }

    /// A `spawn!` in statement position (`spawn!(..);`, `let x = spawn!(..);`, `x = spawn!(..);`).
    fn spawn(&mut self, mac: &syn::Macro, place: Place, spawnable: bool) {
        if self.mode == Mode::Device {
            return self.err(error::SPAWN_IN_DEVICE.on(mac));
        }
        if self.mode == Mode::Warp {
            return self.err(error::WARP_SPAWN.on(mac));
        }
        if self.mode == Mode::Block {
            return self.err(error::BLOCK_SPAWN.on(mac));
        }
        if !spawnable {
            return self.err(error::SPAWN_IN_EXPR.on(mac));
        }
        match syntax::spawn_call(mac) {
            Ok(call) => {
                if self.own_generic.as_ref().is_some_and(|own| call.path.is_ident(own)) {
                    // `spawn!(f(..))` of a generic `f` itself: rustc would say "missing generics for
                    // struct `Task`" and suggest `f<_>`.
                    self.err(error::SPAWN_OWN_GENERIC.on(&call.path));
                }
                for a in call.args.iter().chain(&call.priority) {
                    self.expr(a, place);
                }
            }
            Err(e) => self.err(e),
        }
    }

    /// An expression in statement position: control flow whose blocks are statement lists.
    fn stmt_expr(&mut self, e: &Expr, place: Place, spawnable: bool) {
        match e {
            Expr::Macro(m) => self.stmt_macro(&m.mac, place, spawnable),
            Expr::Assign(a) if syntax::as_spawn(&a.right).is_some() => {
                if syntax::assign_dest(&a.left).is_none() {
                    self.err(error::SPAWN_DEST.on(&a.left));
                } else if let Some(crate::ir::Dest::Element { index, .. }) = syntax::assign_dest(&a.left) {
                    self.expr(&index, place);
                }
                if let Some(mac) = syntax::as_spawn(&a.right) {
                    self.spawn(mac, place, spawnable);
                }
            }
            Expr::If(i) => self.if_expr(i, place, spawnable),
            Expr::While(w) => {
                self.label(&w.label);
                let inner = Self::loop_place(place);
                self.cond(&w.cond, inner);
                self.loops_in_lanes += 1;
                self.stmts(&w.body.stmts, inner, spawnable);
                self.loops_in_lanes -= 1;
            }
            Expr::Loop(l) => {
                self.label(&l.label);
                self.loops_in_lanes += 1;
                self.stmts(&l.body.stmts, Self::loop_place(place), spawnable);
                self.loops_in_lanes -= 1;
            }
            Expr::ForLoop(f) => {
                self.label(&f.label);
                self.for_head(f, place);
                if syntax::coop_call(&f.expr).is_some() && !self.in_lanes {
                    // The body of a cooperative loop: a `return` or a `break` out of it would
                    // leave the warp's lanes (the block's threads) apart (see docs/dsl.md, Warp
                    // tasks and Block tasks).
                    let saved = (self.in_lanes, self.loops_in_lanes);
                    self.in_lanes = true;
                    self.loops_in_lanes = 0;
                    self.coop_locals = syntax::pat_binders(&f.pat);
                    self.coop_locals.extend(bound_in(&f.body.stmts));
                    self.stmts(&f.body.stmts, Self::loop_place(place), spawnable);
                    (self.in_lanes, self.loops_in_lanes) = saved;
                    self.coop_locals.clear();
                } else {
                    self.loops_in_lanes += 1;
                    self.stmts(&f.body.stmts, Self::loop_place(place), spawnable);
                    self.loops_in_lanes -= 1;
                }
            }
            Expr::Block(b) => {
                self.label(&b.label);
                let inner = if place == Place::Top { Place::Block } else { place };
                self.stmts(&b.block.stmts, inner, spawnable);
            }
            _ => self.expr(e, place),
        }
    }

    /// The place of a loop body: a loop whose value is used stays a value.
    fn loop_place(place: Place) -> Place {
        if place == Place::Value {
            Place::Value
        } else {
            Place::Loop
        }
    }

    fn if_expr(&mut self, i: &syn::ExprIf, place: Place, spawnable: bool) {
        self.cond(&i.cond, place);
        let inner = match place {
            Place::Loop | Place::Value => place,
            _ => Place::Branch,
        };
        self.stmts(&i.then_branch.stmts, inner, spawnable);
        if let Some((_, els)) = &i.else_branch {
            match &**els {
                Expr::If(inner_if) => self.if_expr(inner_if, place, spawnable),
                Expr::Block(b) => self.stmts(&b.block.stmts, inner, spawnable),
                other => self.expr(other, inner),
            }
        }
    }

    fn label(&mut self, label: &Option<syn::Label>) {
        if let Some(l) = label {
            self.err(error::LABEL.on(l));
        }
    }

    fn cond(&mut self, cond: &Expr, place: Place) {
        if let Expr::Let(l) = cond {
            return self.err(error::IF_LET.on(l));
        }
        self.expr(cond, place);
    }

    fn for_head(&mut self, f: &syn::ExprForLoop, place: Place) {
        match &*f.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {}
            other => self.err(error::FOR_PATTERN.on(other)),
        }
        match &*f.expr {
            Expr::Range(r) if r.start.is_some() && r.end.is_some() => {
                if let Some(s) = &r.start {
                    self.expr(s, place);
                }
                if let Some(e) = &r.end {
                    self.expr(e, place);
                }
            }
            e if syntax::coop_call(e).is_some() => {
                let threads = syntax::threads_call(e).is_some();
                if !threads && self.mode != Mode::Warp {
                    return self.err(error::LANES_OUTSIDE_WARP.on(e));
                }
                if threads && self.mode != Mode::Block {
                    return self.err(error::THREADS_OUTSIDE_BLOCK.on(e));
                }
                if self.in_lanes {
                    return self.err(if threads { error::THREADS_NESTED } else { error::LANES_NESTED }.on(e));
                }
                if let Some((lo, hi)) = syntax::coop_call(e) {
                    self.expr(lo, place);
                    self.expr(hi, place);
                }
            }
            other => self.err(error::FOR_ITER.on(other)),
        }
    }

    /// An expression whose value is used: no `spawn!`/`sync!` inside (except in blocks of
    /// value-position control flow, which are checked as expressions too).
    fn expr(&mut self, e: &Expr, place: Place) {
        match e {
            Expr::Lit(l) => match &l.lit {
                syn::Lit::Int(_) | syn::Lit::Float(_) | syn::Lit::Bool(_) => {}
                _ => self.err(error::STRING_LIT.on(l)),
            },
            Expr::Path(p) => {
                if p.qself.is_some() {
                    self.err(error::QSELF_PATH.on(p));
                } else if p.path.segments.iter().any(|s| !s.arguments.is_none()) {
                    self.err(error::TURBOFISH.on(p));
                }
            }
            Expr::Binary(b) => {
                if compound_assign(&b.op) {
                    self.coop_assign(&b.left);
                }
                self.expr(&b.left, place);
                self.expr(&b.right, place);
            }
            Expr::Unary(u) => {
                if let syn::UnOp::Deref(_) = u.op {
                    self.err(error::REFERENCE.on(u));
                } else {
                    self.expr(&u.expr, place);
                }
            }
            Expr::Paren(p) => self.expr(&p.expr, place),
            Expr::Group(g) => self.expr(&g.expr, place),
            Expr::Cast(c) => {
                self.expr(&c.expr, place);
                self.ty(&c.ty);
            }
            Expr::Index(i) => {
                self.expr(&i.expr, place);
                self.expr(&i.index, place);
            }
            Expr::Call(_) if syntax::lanes_call(e).is_some() => self.err(error::LANES_POSITION.on(e)),
            Expr::Call(_) if syntax::threads_call(e).is_some() => self.err(error::THREADS_POSITION.on(e)),
            Expr::Call(c) => {
                match &*c.func {
                    Expr::Path(p) if p.qself.is_none() => {
                        // A generic helper or task may be called with type arguments (`h::<T>(..)`).
                        let n = p.path.segments.len();
                        let earlier = p.path.segments.iter().take(n.saturating_sub(1)).any(|s| !s.arguments.is_none());
                        if earlier || !syntax::type_args_only(&p.path) {
                            self.err(error::TURBOFISH.on(p));
                        } else {
                            for t in syntax::split_type_args(&p.path).1 {
                                self.ty(&t);
                            }
                        }
                    }
                    other => self.err(error::CALL_NOT_PATH.on(other)),
                }
                for a in &c.args {
                    self.expr(a, place);
                }
            }
            Expr::MethodCall(m) => {
                self.expr(&m.receiver, place);
                if BOUND_WRITES.contains(&m.method.to_string().as_str()) {
                    self.err(error::bound_write(&m.method));
                } else if !method_allowed(&m.method.to_string()) {
                    self.err(error::method_not_allowed(&m.method));
                }
                if let Some(t) = &m.turbofish {
                    self.err(error::TURBOFISH.on(t));
                }
                for a in &m.args {
                    self.expr(a, place);
                }
            }
            Expr::Assign(a) => {
                self.coop_assign(&a.left);
                self.expr(&a.left, place);
                self.expr(&a.right, place);
            }
            Expr::Array(a) => {
                for x in &a.elems {
                    self.expr(x, place);
                }
            }
            Expr::Repeat(r) => {
                self.expr(&r.expr, place);
                self.expr(&r.len, place);
            }
            // Value-position control flow: its blocks are statement lists in which spawns are not
            // allowed (their value is used) but everything else is.
            Expr::If(i) => self.if_expr(i, Place::Value, false),
            Expr::While(_) | Expr::Loop(_) | Expr::ForLoop(_) | Expr::Block(_) => {
                self.stmt_expr(e, Place::Value, false)
            }
            Expr::Break(b) => {
                if self.in_lanes && self.loops_in_lanes == 0 {
                    self.err(if self.mode == Mode::Block { error::THREADS_BREAK } else { error::LANES_BREAK }.on(b));
                }
                if let Some(l) = &b.label {
                    self.err(error::LABEL.on(l));
                }
                if let Some(v) = &b.expr {
                    self.err(error::BREAK_VALUE.on(v));
                }
            }
            Expr::Continue(c) => {
                if let Some(l) = &c.label {
                    self.err(error::LABEL.on(l));
                }
            }
            Expr::Return(r) => {
                if self.in_lanes {
                    self.err(if self.mode == Mode::Block { error::THREADS_RETURN } else { error::LANES_RETURN }.on(r));
                }
                if let Some(v) = &r.expr {
                    self.expr(v, place);
                }
            }
            Expr::Macro(m) if syntax::block_macro(&m.mac).is_some() => {
                if let Some(b) = syntax::block_macro(&m.mac) {
                    self.block_macro(&m.mac, b, place, false);
                }
            }
            Expr::Macro(m) => match macro_kind(&m.mac) {
                Some(MacroKind::Spawn) => self.spawn(&m.mac, place, false),
                Some(MacroKind::Sync) if self.mode == Mode::Device => self.err(error::SYNC_IN_DEVICE.on(&m.mac)),
                Some(MacroKind::Sync) => self.err(error::SYNC_IN_EXPR.on(&m.mac)),
                Some(MacroKind::Alloc) => self.alloc_elsewhere(&m.mac),
                None => self.err(error::other_macro(&m.mac)),
            },
            Expr::Closure(c) => self.err(error::CLOSURE.on(c)),
            Expr::Match(m) => self.err(error::MATCH.on(m.match_token)),
            Expr::Try(t) => self.err(error::TRY.on(t.question_token)),
            Expr::Let(l) => self.err(error::IF_LET.on(l)),
            Expr::Reference(_) if syntax::sub_slice(e).is_some() => {
                if let Some((_, base, range)) = syntax::sub_slice(e) {
                    self.expr(base, place);
                    for b in range.start.iter().chain(range.end.iter()) {
                        self.expr(b, place);
                    }
                }
            }
            Expr::Reference(r) => self.err(error::REFERENCE.on(r)),
            Expr::RawAddr(r) => self.err(error::REFERENCE.on(r)),
            Expr::Struct(s) => {
                // A literal of a device struct: `Point { x: a, y: b }`, every field written.
                if s.rest.is_some() || s.qself.is_some() || s.path.segments.len() != 1 {
                    self.err(error::STRUCT_LIT.on(s));
                } else {
                    for f in &s.fields {
                        self.expr(&f.expr, place);
                    }
                }
            }
            Expr::Tuple(t) if t.elems.is_empty() => {}
            Expr::Tuple(t) if (2..=4).contains(&t.elems.len()) => {
                for x in &t.elems {
                    self.expr(x, place);
                }
            }
            Expr::Tuple(t) => self.err(error::TUPLE.on(t)),
            // `t.0` of a tuple, `p.x` of a device struct.
            Expr::Field(f) => self.expr(&f.base, place),
            Expr::Range(r) => self.err(error::RANGE.on(r)),
            Expr::Unsafe(u) => self.err(error::UNSAFE_BLOCK.on(u.unsafe_token)),
            Expr::Async(_) | Expr::Await(_) | Expr::Yield(_) | Expr::TryBlock(_) | Expr::Const(_) => {
                self.err(error::ASYNC_EXPR.on(e))
            }
            _ => self.err(error::EXPR_OTHER.on(e)),
        }
    }
}

/// `+=`, `-=`, .. (`syn` parses them as binary expressions).
fn compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// The names that `let`s and `for` loops bind anywhere in `stmts`.
fn bound_in(stmts: &[Stmt]) -> Vec<syn::Ident> {
    struct Binders(Vec<syn::Ident>);
    impl<'a> syn::visit::Visit<'a> for Binders {
        fn visit_local(&mut self, l: &'a syn::Local) {
            self.0.extend(syntax::pat_binders(&l.pat));
            syn::visit::visit_local(self, l);
        }
        fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
            self.0.extend(syntax::pat_binders(&f.pat));
            syn::visit::visit_expr_for_loop(self, f);
        }
    }
    let mut b = Binders(Vec::new());
    for s in stmts {
        syn::visit::Visit::visit_stmt(&mut b, s);
    }
    b.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn messages(mode: Mode, item: proc_macro2::TokenStream) -> Vec<String> {
        let item: ItemFn = syn::parse2(item).expect("parses");
        let mut errors = Errors::new();
        function(&item, mode, &mut errors);
        match errors.finish(()) {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string().lines().next().unwrap_or_default().to_string()).collect(),
        }
    }

    #[test]
    fn the_examples_are_in_the_subset() {
        let ok = messages(
            Mode::Task,
            quote! {
                fn f(n: u32, b: [u8; 4]) -> u64 {
                    let mut a: [u64; 4] = [0; 4];
                    for i in 0..=3 { a[i] = spawn!(g(n, b)); }
                    if n > 1 { spawn!(h(n)); } else if n == 0 { let t = 1u64; } else { loop { break; } }
                    sync!();
                    let v = if n > 2 { a[0].wrapping_mul(3) } else { u64::MAX.min(a[1]) };
                    v + (n as u64).pow(2) + [1u64, 2][0]
                }
            },
        );
        assert_eq!(ok, Vec::<String>::new());
    }

    #[test]
    fn sync_may_stand_wherever_a_statement_can_but_not_in_a_value() {
        let m = messages(
            Mode::Task,
            quote! {
                fn f(n: u32) {
                    while n > 0 { sync!(); }
                    if n > 0 { sync!(); } else { for i in 0..n { { sync!(); } } }
                    { sync!(); }
                    let v = { sync!(); 1 };
                    let w = loop { sync!(); break; };
                    sync!(n);
                }
            },
        );
        assert_eq!(m.len(), 3, "{m:#?}");
        assert!(m[0].ends_with("not part of an expression"), "{m:#?}");
        assert!(m[1].ends_with("not part of an expression"), "{m:#?}");
        assert_eq!(m[2], "`sync!()` takes no arguments");
    }

    #[test]
    fn a_generic_task_spawns_itself_with_its_type_arguments() {
        let m = messages(
            Mode::Task,
            quote! {
                fn f<T: Key>(a: &[T]) {
                    spawn!(f(a));
                    spawn!(f::<T>(a));
                    spawn!(g(a));
                    sync!();
                }
            },
        );
        assert_eq!(m, ["a generic task spawns itself with its type arguments"]);
    }

    #[test]
    fn spawn_shapes_and_positions() {
        let m = messages(
            Mode::Task,
            quote! {
                fn f(n: u32) {
                    spawn!();
                    spawn!(g(n), g(n));
                    spawn!(n.g());
                    spawn!(n + 1);
                    spawn!(g::<u32>(n));
                    spawn!(g::<3>(n));
                    spawn!(m::<u32>::g(n));
                    let x = 1 + spawn!(g(n));
                    s.f = spawn!(g(n));
                    let (a, b) = spawn!(g(n));
                }
            },
        );
        assert_eq!(
            m,
            [
                "`spawn!` needs a call to a `#[gpu_cilk]` function",
                "`spawn!` takes exactly one call",
                "`spawn!` cannot spawn a method call",
                "`spawn!` takes a call to a named `#[gpu_cilk]` function",
                "the spawned function can only be given type arguments, on its name",
                "the spawned function can only be given type arguments, on its name",
                "`spawn!` must be a statement of its own",
                "a spawned result can only be stored in a local or in an element of a local array",
                "a spawned result must be bound to a single name",
            ]
        );
    }

    #[test]
    fn device_helpers_may_not_spawn_or_sync_but_may_return_arrays() {
        let m = messages(
            Mode::Device,
            quote!(
                fn h(x: u32) -> [u32; 2] {
                    spawn!(g(x));
                    sync!();
                    [x, x]
                }
            ),
        );
        assert_eq!(m.len(), 2, "{m:#?}");
        assert!(messages(
            Mode::Device,
            quote!(
                fn h(x: u32) -> [u32; 2] {
                    [x, x]
                }
            )
        )
        .is_empty());
    }
}
