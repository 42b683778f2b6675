//! The C++ vocabulary of the CUDA writer: Rust types as C++ types ([`Ty`]), user names as C++
//! identifiers that cannot meet the writer's own ([`mangle`]), and Rust operators as the
//! templates of the writer's prelude that give them Rust semantics (`gc_add` wraps, `gc_div`
//! checks).
//!
//! This module owns spelling only: it emits no statements and knows nothing of scopes or tasks.

use syn::{BinOp, Path, Type};

/// A Rust type as the writer sees it (only as precise as literals and casts need).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ty {
    /// A Rust scalar: `u32`, `f64`, `bool`, ...
    Prim(String),
    Unit,
    Array(Box<Ty>, String),
    /// A task-scoped temporary `Temp<T>` (`gc_temp<T>`).
    Temp(Box<Ty>),
    /// A slice `&[T]` / `&mut [T]` (`gc_slice<T>`, the device form of `RawSlice<T>`).
    Slice(Box<Ty>),
    /// A strided view `Mat<T>` / `MatMut<T>` (`gc_mat<T>`, the device form of `RawMat<T>`).
    Mat(Box<Ty>),
    /// A shared bound `&Max<T>` / `&Min<T>` / `&Sum<T>` (`gc_bound_max<T>`, .., the device
    /// form of the one-element `RawSlice<Max<T>>`): the kind in lower case, the value type.
    Bound(String, Box<Ty>),
    /// A tuple of 2 to 4 elements (`gc_tuple<n><..>`).
    Tuple(Vec<Ty>),
    /// A C++ type spelled out (`fib_ret`, `decltype(x)`).
    Named(String),
}

/// The Rust scalar types.
pub(super) const PRIMS: &[&str] =
    &["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "usize", "isize", "f32", "f64", "bool"];

impl Ty {
    /// The C++ spelling.
    pub(super) fn cxx(&self) -> String {
        match self {
            Ty::Prim(p) => format!("gc_{p}"),
            Ty::Unit => "gc_unit".into(),
            Ty::Array(e, n) => format!("gc_array<{}, {n}>", e.cxx()),
            Ty::Temp(e) => format!("gc_temp<{}>", e.cxx()),
            Ty::Slice(e) => format!("gc_slice<{}>", e.cxx()),
            Ty::Mat(e) => format!("gc_mat<{}>", e.cxx()),
            Ty::Bound(k, e) => format!("gc_bound_{k}<{}>", e.cxx()),
            Ty::Tuple(es) => {
                let es: Vec<String> = es.iter().map(Ty::cxx).collect();
                format!("gc_tuple{}<{}>", es.len(), es.join(", "))
            }
            Ty::Named(s) => s.clone(),
        }
    }
    pub(super) fn is_float(&self) -> bool {
        matches!(self, Ty::Prim(p) if p == "f32" || p == "f64")
    }
    pub(super) fn is_int(&self) -> bool {
        matches!(self, Ty::Prim(p) if p != "f32" && p != "f64" && p != "bool")
    }
    pub(super) fn is_bool(&self) -> bool {
        matches!(self, Ty::Prim(p) if p == "bool")
    }
}

/// The scalar type called `s`.
pub(super) fn prim(s: &str) -> Ty {
    Ty::Prim(s.to_string())
}

/// A written Rust type.
pub(super) fn ty_of_type(t: &Type) -> Ty {
    if let Some(elem) = crate::syntax::temp_type_elem(t) {
        return Ty::Temp(Box::new(ty_of_type(elem)));
    }
    if let Some((_, elem)) = crate::syntax::view_type(t) {
        return Ty::Mat(Box::new(ty_of_type(elem)));
    }
    if let Some((_, elem)) = crate::syntax::slice_type(t) {
        return Ty::Slice(Box::new(ty_of_type(elem)));
    }
    if let Some((kind, elem)) = crate::syntax::bound_type(t) {
        return Ty::Bound(kind.to_lowercase(), Box::new(ty_of_type(elem)));
    }
    match t {
        Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let id = p.path.segments[0].ident.to_string();
            if PRIMS.contains(&id.as_str()) {
                Ty::Prim(id)
            } else if crate::syntax::is_type_param(&id) {
                // A type parameter (`T: Key`) is the template parameter of the same name.
                Ty::Named(mangle(&id))
            } else {
                Ty::Named(id)
            }
        }
        Type::Array(a) => Ty::Array(Box::new(ty_of_type(&a.elem)), tok(&a.len)),
        Type::Tuple(t) if t.elems.is_empty() => Ty::Unit,
        Type::Tuple(t) => Ty::Tuple(t.elems.iter().map(ty_of_type).collect()),
        Type::Paren(p) => ty_of_type(&p.elem),
        Type::Group(g) => ty_of_type(&g.elem),
        other => Ty::Named(tok(other)),
    }
}

/// Tokens as text (array lengths, paths in messages).
pub(super) fn tok<T: quote::ToTokens>(t: &T) -> String {
    t.to_token_stream().to_string()
}

/// The emitter's own names in generated functions (parameters and locals of `seg0`, `resume`, ..).
const EMITTER_NAMES: &[&str] = &["a", "cx", "f", "k", "out", "ret", "L"];
/// CUDA's device functions and built-in variables that a local of the same name would hide.
const DEVICE_NAMES: &[&str] =
    &["min", "max", "abs", "sqrt", "pow", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"];

/// A user name as a C++ identifier that cannot meet the emitter's own names.
pub(super) fn mangle(name: &str) -> String {
    let name = name.strip_prefix("r#").unwrap_or(name);
    if EMITTER_NAMES.contains(&name)
        || DEVICE_NAMES.contains(&name)
        || crate::syntax::CXX_KEYWORDS.contains(&name)
        || name.starts_with("gc_")
        || name.starts_with("GC_")
        || name.contains("__")
    {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// The C++ name of the function a call or spawn names (its last segment, mangled).
pub(super) fn callee_cname(p: &Path) -> String {
    p.segments.last().map(|s| mangle(&s.ident.to_string())).unwrap_or_default()
}

/// `template <typename T, ..> ` and `<T, ..>` of a generic function (both empty otherwise): the
/// device form of a generic task or helper is a C++ template over its type parameters.
pub(super) fn template_of(generics: &[syn::Ident]) -> (String, String) {
    if generics.is_empty() {
        return (String::new(), String::new());
    }
    let names: Vec<String> = generics.iter().map(|g| mangle(&g.to_string())).collect();
    let params: Vec<String> = names.iter().map(|n| format!("typename {n}")).collect();
    (format!("template <{}> ", params.join(", ")), format!("<{}>", names.join(", ")))
}

/// `<gc_u32, T>` of a call or spawn written with type arguments (`g::<u32, T>`), empty otherwise.
pub(super) fn callee_targs(p: &Path) -> String {
    let args = crate::syntax::split_type_args(p).1;
    if args.is_empty() {
        return String::new();
    }
    let args: Vec<String> = args.iter().map(|t| ty_of_type(t).cxx()).collect();
    format!("<{}>", args.join(", "))
}

/// The prelude template of a binary operator (`+` → `gc_add`), `None` for comparisons, logic,
/// shifts and assignments.
pub(super) fn arith_fn(op: &BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Add(_) => "gc_add",
        BinOp::Sub(_) => "gc_sub",
        BinOp::Mul(_) => "gc_mul",
        BinOp::Div(_) => "gc_div",
        BinOp::Rem(_) => "gc_rem",
        BinOp::BitAnd(_) => "gc_and",
        BinOp::BitOr(_) => "gc_or",
        BinOp::BitXor(_) => "gc_xor",
        _ => return None,
    })
}

/// The prelude template of a compound assignment (`+=` → `gc_add`).
pub(super) fn compound_fn(op: &BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::AddAssign(_) => "gc_add",
        BinOp::SubAssign(_) => "gc_sub",
        BinOp::MulAssign(_) => "gc_mul",
        BinOp::DivAssign(_) => "gc_div",
        BinOp::RemAssign(_) => "gc_rem",
        BinOp::BitAndAssign(_) => "gc_and",
        BinOp::BitOrAssign(_) => "gc_or",
        BinOp::BitXorAssign(_) => "gc_xor",
        BinOp::ShlAssign(_) => "gc_shl",
        BinOp::ShrAssign(_) => "gc_shr",
        _ => return None,
    })
}

/// `u64::max` → `("u64", "max")`.
pub(super) fn prim_assoc(p: &Path) -> Option<(String, String)> {
    let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [t, m] if PRIMS.contains(&t.as_str()) => Some((t.clone(), m.clone())),
        _ => None,
    }
}
