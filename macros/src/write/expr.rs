//! Expressions → C++ expression text with Rust semantics: wrapping arithmetic, checked division
//! and indexing (each check a numbered fault site), masked shifts, saturating float → int casts,
//! the supported methods, calls of device functions (`h(x)` → `h_dev(cx, x)`).
//!
//! This module owns the translation of one `syn::Expr`; what cannot be translated becomes a
//! `static_assert` through [`Writer::unsupported`]. Statements are `stmt`'s.

use super::infer::{block_tail, block_tail_only, is_float_lit, is_poly_literal};
use super::ty::{arith_fn, callee_cname, callee_targs, prim, prim_assoc, tok, ty_of_type, Ty};
use super::writer::Writer;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident, Lit, UnOp};

impl Writer<'_> {
    fn lit(&mut self, l: &syn::ExprLit, want: Option<&Ty>) -> String {
        match &l.lit {
            Lit::Int(i) => {
                let digits = i.base10_digits();
                let big = digits.parse::<u128>().map_or(true, |v| v > i64::MAX as u128);
                let text = if big { format!("{digits}ull") } else { digits.to_string() };
                if !i.suffix().is_empty() {
                    format!("({}){text}", prim(i.suffix()).cxx())
                } else if let Some(t) = want {
                    if t.is_float() {
                        format!("({}){text}.0", t.cxx())
                    } else {
                        format!("({}){text}", t.cxx())
                    }
                } else {
                    text
                }
            }
            Lit::Float(f) => {
                let mut text = f.base10_digits().to_string();
                if !text.contains(['.', 'e', 'E']) {
                    text.push_str(".0");
                }
                let t = if !f.suffix().is_empty() { Some(prim(f.suffix())) } else { want.cloned() };
                match t {
                    Some(t) if t.cxx() != "gc_f64" => format!("({}){text}", t.cxx()),
                    _ => text,
                }
            }
            Lit::Bool(b) => if b.value { "true" } else { "false" }.into(),
            _ => self.unsupported("this literal", l.span()),
        }
    }

    /// `e` as C++ text; `want` is the type the context gives a literal in it.
    pub(super) fn expr(&mut self, e: &Expr, want: Option<&Ty>) -> String {
        match e {
            Expr::Lit(l) => self.lit(l, want),
            Expr::Path(p) => {
                if let Some(id) = p.path.get_ident() {
                    return match self.lookup(&id.to_string()) {
                        Some(b) => b.cxx.clone(),
                        // Not a local, a parameter or a frame field: a module `const` or `static`
                        // (compiles on the host, but device code cannot see it).
                        None => self.unsupported(
                            &format!("the name `{id}` (device code sees only locals, parameters and literals; use a literal or a `#[gpu_cilk::device]` function returning the value)"),
                            id.span(),
                        ),
                    };
                }
                match prim_assoc(&p.path) {
                    Some((t, c)) if c == "MAX" => format!("gc_max_of<{}>()", prim(&t).cxx()),
                    Some((t, c)) if c == "MIN" => format!("gc_min_of<{}>()", prim(&t).cxx()),
                    Some((t, c)) if c == "BITS" => format!("(gc_u32)(sizeof({}) * 8)", prim(&t).cxx()),
                    _ => self.unsupported(&format!("the path `{}`", tok(&p.path)), p.span()),
                }
            }
            Expr::Paren(p) => self.expr(&p.expr, want),
            Expr::Group(g) => self.expr(&g.expr, want),
            Expr::Cast(c) => {
                let to = ty_of_type(&c.ty);
                let from = self.ty_of(&c.expr);
                let inner = self.expr(&c.expr, None);
                if from.as_ref().is_some_and(Ty::is_float) && to.is_int() {
                    format!("gc_cast_sat<{}>({inner})", to.cxx())
                } else if is_atom(&inner) {
                    format!("({}){inner}", to.cxx())
                } else {
                    format!("({})({inner})", to.cxx())
                }
            }
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) => {
                    if let Expr::Lit(l) = &*u.expr {
                        let t = self.ty_of(e).or_else(|| want.cloned());
                        let v = self.lit(l, None);
                        return match t {
                            Some(t) => format!("({})-{v}", t.cxx()),
                            None => format!("-{v}"),
                        };
                    }
                    let v = self.expr(&u.expr, want);
                    format!("gc_neg({v})")
                }
                UnOp::Not(_) => {
                    let t = self.ty_of(&u.expr).or_else(|| want.cloned());
                    let v = self.expr(&u.expr, want);
                    if t.as_ref().is_some_and(Ty::is_bool) {
                        if is_atom(&v) {
                            format!("!{v}")
                        } else {
                            format!("!({v})")
                        }
                    } else {
                        format!("gc_not({v})")
                    }
                }
                _ => self.unsupported("this unary operator", u.span()),
            },
            // `block_sync!()` (check allows it as a statement only): the block's barrier in a block
            // task's cooperative entry, nothing on one thread.
            Expr::Macro(m) if crate::syntax::block_macro(&m.mac) == Some(crate::syntax::BlockMacro::Sync) => {
                if self.block_coop() {
                    "gc_block_sync()".to_string()
                } else {
                    "(void)0".to_string()
                }
            }
            Expr::Binary(b) => self.binary(b, want),
            Expr::Index(i) => self.index(i),
            Expr::MethodCall(m) => {
                let args: Vec<&Expr> = m.args.iter().collect();
                self.method(&m.method, &m.receiver, &args, m.span())
            }
            Expr::Call(c) => self.call(c),
            Expr::If(i) => self.if_expr(i, want),
            Expr::Block(b) if b.block.stmts.len() == 1 => match block_tail(&b.block.stmts) {
                Some(t) => self.expr(t, want),
                None => self.unsupported("a block expression with statements", b.span()),
            },
            Expr::Repeat(r) => {
                let t = match want {
                    Some(Ty::Array(e, n)) => Some((*e.clone(), n.clone())),
                    _ => None,
                }
                .or_else(|| self.ty_of(&r.expr).map(|t| (t, tok(&r.len))))
                .unwrap_or_else(|| (prim(if is_float_lit(&r.expr) { "f64" } else { "i32" }), tok(&r.len)));
                let v = self.expr(&r.expr, Some(&t.0));
                format!("gc_array_splat<{}, {}>({v})", t.0.cxx(), t.1)
            }
            Expr::Array(a) => {
                let elem = match want {
                    Some(Ty::Array(e, _)) => Some(*e.clone()),
                    _ => None,
                }
                .or_else(|| a.elems.iter().find_map(|x| self.ty_of(x)))
                // An element of a type the writer cannot name (`s.c[1]` of a device struct): its
                // C++ type, not a literal's default (`[s.c[1], s.c[0] ^ 5]` of `u16`s).
                .or_else(|| {
                    let x = a.elems.iter().find(|x| !is_poly_literal(x))?;
                    let text = self.probe().expr(x, None);
                    self.ty_or_decltype(x, &text)
                })
                .unwrap_or_else(|| untyped_array_elem(a));
                let vals: Vec<String> = a.elems.iter().map(|x| self.expr(x, Some(&elem))).collect();
                format!("gc_array<{}, {}>{{{{{}}}}}", elem.cxx(), a.elems.len(), vals.join(", "))
            }
            Expr::Tuple(t) if !t.elems.is_empty() => {
                let want: Vec<Option<Ty>> = match want {
                    Some(Ty::Tuple(es)) if es.len() == t.elems.len() => es.iter().cloned().map(Some).collect(),
                    _ => t.elems.iter().map(|x| self.ty_of(x)).collect(),
                };
                let tys: Vec<Ty> = want.into_iter().map(|t| t.unwrap_or_else(|| prim("i32"))).collect();
                let vals: Vec<String> = t.elems.iter().zip(&tys).map(|(x, ty)| self.expr(x, Some(ty))).collect();
                format!("{}{{{}}}", Ty::Tuple(tys).cxx(), vals.join(", "))
            }
            Expr::Field(f) => match &f.member {
                syn::Member::Unnamed(i) => {
                    let base = self.expr(&f.base, None);
                    format!("({base}).f{}", i.index)
                }
                // A field of a device struct: the C++ struct has the Rust field names.
                syn::Member::Named(n) => {
                    let base = self.expr(&f.base, None);
                    format!("({base}).{n}")
                }
            },
            Expr::Struct(st) => self.struct_literal(st),
            Expr::Reference(r) => match crate::syntax::sub_slice(e) {
                Some((_, base, range)) => self.sub_slice(base, range),
                None => self.unsupported("a reference", r.span()),
            },
            Expr::Return(r) => self.unsupported("`return` inside an expression", r.span()),
            other => self.unsupported("this expression", other.span()),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary, want: Option<&Ty>) -> String {
        let (l, r) = (&*b.left, &*b.right);
        let infix = |op: &str, w: &mut Self, t: Option<Ty>| {
            let ls = w.expr(l, t.as_ref());
            let rs = w.expr(r, t.as_ref());
            format!("{} {op} {}", paren_infix(l, ls), paren_infix(r, rs))
        };
        match b.op {
            BinOp::And(_) => infix("&&", self, None),
            BinOp::Or(_) => infix("||", self, None),
            BinOp::Eq(_) | BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) => {
                let op = tok(&b.op);
                let t = self.operand_type(l, r, None);
                infix(&op, self, t)
            }
            BinOp::Shl(_) | BinOp::Shr(_) => {
                let f = if matches!(b.op, BinOp::Shl(_)) { "gc_shl" } else { "gc_shr" };
                let t = self.ty_of(l).or_else(|| want.cloned());
                let ls = self.expr(l, t.as_ref());
                let rs = self.expr(r, None);
                format!("{f}({ls}, {rs})")
            }
            _ => {
                let Some(f) = arith_fn(&b.op) else {
                    return self.unsupported("a compound assignment inside an expression", b.span());
                };
                let t = self.operand_type(l, r, want);
                let ls = self.expr(l, t.as_ref());
                let rs = self.expr(r, t.as_ref());
                if f == "gc_div" || f == "gc_rem" {
                    let s = self.site(b.op.span());
                    format!("{f}(cx, {ls}, {rs}, {s})")
                } else {
                    format!("{f}({ls}, {rs})")
                }
            }
        }
    }

    /// The type both operands of a binary operator share, as far as a literal among them needs it.
    fn operand_type(&self, l: &Expr, r: &Expr, want: Option<&Ty>) -> Option<Ty> {
        if let Some(t) = self.ty_of(l).or_else(|| self.ty_of(r)) {
            return Some(t);
        }
        if let Some(w) = want {
            if !w.is_bool() {
                return Some(w.clone());
            }
        }
        // Neither side's type is known here: a literal takes `decltype` of the other side.
        if is_poly_literal(l) && !is_poly_literal(r) {
            let text = self.probe().expr(r, None);
            return self.ty_or_decltype(r, &text);
        }
        if is_poly_literal(r) && !is_poly_literal(l) {
            let text = self.probe().expr(l, None);
            return self.ty_or_decltype(l, &text);
        }
        None
    }

    fn index(&mut self, i: &syn::ExprIndex) -> String {
        let base = self.expr(&i.expr, None);
        if let (Some(Ty::Mat(_)), Expr::Tuple(t)) = (self.ty_of(&i.expr), &*i.index) {
            // `m[(i, j)]` of a view: `m.at(cx, i, j, site)`.
            let ij: Vec<String> =
                t.elems.iter().map(|x| strip_usize_cast(&self.expr(x, Some(&prim("usize"))))).collect();
            let s = self.site(i.index.span());
            return format!("{base}.at(cx, (gc_u64)({}), (gc_u64)({}), {s})", ij[0], ij[1]);
        }
        let idx = self.expr(&i.index, Some(&prim("usize")));
        let s = self.site(i.index.span());
        let idx = strip_usize_cast(&idx);
        format!("{base}.at(cx, (gc_u64)({idx}), {s})")
    }

    /// `&a[lo..hi]` (any of `lo..`, `..hi`, `..`, `lo..=hi`): `a.sub(cx, lo, hi, site)`, checked
    /// as Rust checks a range index (a fault at the range's location).
    fn sub_slice(&mut self, base: &Expr, range: &syn::ExprRange) -> String {
        let b = self.expr(base, None);
        let u = prim("usize");
        let lo = match &range.start {
            Some(x) => strip_usize_cast(&self.expr(x, Some(&u))),
            None => "0".to_string(),
        };
        let hi = match (&range.end, &range.limits) {
            (Some(x), syn::RangeLimits::HalfOpen(_)) => strip_usize_cast(&self.expr(x, Some(&u))),
            (Some(x), syn::RangeLimits::Closed(_)) => format!("{} + 1", strip_usize_cast(&self.expr(x, Some(&u)))),
            (None, _) => format!("({b}).len()"),
        };
        let s = self.site(range.span());
        format!("{b}.sub(cx, (gc_u64)({lo}), (gc_u64)({hi}), {s})")
    }

    /// A view's method (`gc_mat`): its shape, or a checked narrowing (`c.quadrants_mut(h, h)` is
    /// `c.quadrants(cx, h, h, site)`: the device view has no `&mut` to tell apart).
    fn view_method(&mut self, name: &str, r: &str, args: &[&Expr], span: Span) -> Option<String> {
        if matches!(name, "rows" | "cols" | "stride") {
            return Some(format!("{r}.{name}()"));
        }
        let f = name.strip_suffix("_mut").unwrap_or(name);
        if !matches!(f, "block" | "split_rows" | "split_cols" | "quadrants") {
            return None;
        }
        let u = prim("usize");
        let a: Vec<String> =
            args.iter().map(|a| format!("(gc_u64)({})", strip_usize_cast(&self.expr(a, Some(&u))))).collect();
        let s = self.site(span);
        Some(format!("{r}.{f}(cx, {}, {s})", a.join(", ")))
    }

    fn method(&mut self, m: &Ident, recv: &Expr, args: &[&Expr], span: Span) -> String {
        let name = m.to_string();
        let mut t = self.ty_of(recv).or_else(|| args.first().and_then(|a| self.ty_of(a)));
        if t.is_none() && !args.is_empty() {
            // `h(x).wrapping_add(7)`: a literal argument takes the receiver's C++ type.
            let text = self.probe().expr(recv, None);
            t = self.ty_or_decltype(recv, &text);
        }
        let r = self.expr(recv, t.as_ref());
        // A receiver of a type the writer cannot name (a child's result `g_ret`): its C++ type.
        let t = t.or_else(|| self.ty_or_decltype(recv, &r));
        if let Some(Ty::Bound(_, e)) = self.ty_of(recv) {
            // A shared bound: `load()`, `fetch_max(v)`, `fetch_min(v)`, `fetch_add(v)`.
            if name == "load" {
                return format!("{r}.load()");
            }
            let a = args.first().map(|a| self.expr(a, Some(&e))).unwrap_or_default();
            return format!("{r}.{name}(cx, ({})({a}))", e.cxx());
        }
        if name == "len" {
            // `Temp<T>`, slices (`gc_slice<T>::len()`) and arrays (`gc_array<T, N>::len()`).
            return format!("{r}.len()");
        }
        if name == "is_empty" && matches!(self.ty_of(recv), Some(Ty::Temp(_)) | Some(Ty::Slice(_))) {
            return format!("!{r}.len()");
        }
        if (name == "split_at" || name == "split_at_mut") && matches!(self.ty_of(recv), Some(Ty::Slice(_))) {
            let m = args.first().map(|a| self.expr(a, Some(&prim("usize")))).unwrap_or_default();
            let s = self.site(span);
            return format!("{r}.split_at(cx, (gc_u64)({}), {s})", strip_usize_cast(&m));
        }
        if let Some(Ty::Mat(_)) = self.ty_of(recv) {
            if let Some(v) = self.view_method(&name, &r, args, span) {
                return v;
            }
        }
        let arg = |w: &mut Self, i: usize, t: Option<&Ty>| args.get(i).map(|a| w.expr(a, t)).unwrap_or_default();
        let same = |w: &mut Self, f: &str| {
            let a = arg(w, 0, t.as_ref());
            format!("{f}({r}, {a})")
        };
        match name.as_str() {
            "wrapping_add" => same(self, "gc_add"),
            "wrapping_sub" => same(self, "gc_sub"),
            "wrapping_mul" => same(self, "gc_mul"),
            "wrapping_neg" => format!("gc_neg({r})"),
            "wrapping_div" | "wrapping_rem" => {
                let a = arg(self, 0, t.as_ref());
                let s = self.site(span);
                let f = if name == "wrapping_div" { "gc_div" } else { "gc_rem" };
                format!("{f}(cx, {r}, {a}, {s})")
            }
            "wrapping_shl" | "wrapping_shr" => {
                let a = arg(self, 0, None);
                let f = if name == "wrapping_shl" { "gc_shl" } else { "gc_shr" };
                format!("{f}({r}, {a})")
            }
            "min" | "max" => same(self, &format!("gc_{name}")),
            // `Key`'s total order: the order-preserving image of runtime.cuh's `gc_priority`,
            // the same map as the host's `Priority::key`.
            "total_lt" | "total_le" => {
                let a = arg(self, 0, t.as_ref());
                let op = if name == "total_lt" { "<" } else { "<=" };
                format!("(gc_priority({r}) {op} gc_priority({a}))")
            }
            "clamp" => {
                let a = arg(self, 0, t.as_ref());
                let b = arg(self, 1, t.as_ref());
                format!("gc_clamp({r}, {a}, {b})")
            }
            "abs" => format!("gc_abs({r})"),
            "pow" => {
                let a = arg(self, 0, Some(&prim("u32")));
                format!("gc_pow({r}, {a})")
            }
            "count_ones" | "count_zeros" | "leading_zeros" | "trailing_zeros" | "is_power_of_two" => {
                format!("gc_{name}({r})")
            }
            "rotate_left" | "rotate_right" => {
                let a = arg(self, 0, Some(&prim("u32")));
                let f = if name == "rotate_left" { "gc_rotl" } else { "gc_rotr" };
                format!("{f}({r}, {a})")
            }
            "sqrt" | "floor" | "ceil" | "trunc" | "round" | "sin" | "cos" | "tan" | "exp" | "exp2" | "log2"
            | "log10" | "cbrt" => format!("{name}({r})"),
            "ln" => format!("log({r})"),
            "is_nan" => format!("({r} != {r})"),
            "powf" | "hypot" | "atan2" => {
                let a = arg(self, 0, t.as_ref());
                let f = if name == "powf" { "pow" } else { &name };
                format!("{f}({r}, {a})")
            }
            "powi" => {
                let a = arg(self, 0, Some(&prim("i32")));
                format!("pow({r}, {a})")
            }
            "mul_add" => {
                let a = arg(self, 0, t.as_ref());
                let b = arg(self, 1, t.as_ref());
                format!("fma({r}, {a}, {b})")
            }
            _ => self.unsupported(&format!("the method `{name}`"), span),
        }
    }

    fn call(&mut self, c: &syn::ExprCall) -> String {
        let Expr::Path(p) = &*c.func else {
            return self.unsupported("a call of a non-path", c.span());
        };
        if let Some((_, method)) = prim_assoc(&p.path) {
            // `u64::max(a, b)` is `a.max(b)`.
            let args: Vec<&Expr> = c.args.iter().collect();
            if let Some((first, rest)) = args.split_first() {
                return self.method(&Ident::new(&method, p.span()), first, rest, c.span());
            }
        }
        // A device function: a `#[gpu_cilk::device]` helper or another task's serial form.
        self.call_site(&p.path);
        let args: Vec<String> = c.args.iter().map(|a| self.expr(a, None)).collect();
        let mut all = vec!["cx".to_string()];
        all.extend(args);
        format!("{}_dev{}({})", callee_cname(&p.path), callee_targs(&p.path), all.join(", "))
    }

    /// `S { x: a, y: b }`: a lambda that starts from a value-initialized `S` and assigns the
    /// fields in the written order (Rust's order of evaluation; C++ aggregate initialization
    /// would need the declaration order, which only the struct's own declaration knows).
    fn struct_literal(&mut self, st: &syn::ExprStruct) -> String {
        let name = st.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let v = self.fresh("s");
        let mut body = format!("{name} {v}{{}}; ");
        for f in &st.fields {
            let syn::Member::Named(n) = &f.member else {
                return self.unsupported("a struct literal with unnamed fields", st.span());
            };
            let want = Ty::Named(format!("decltype({v}.{n})"));
            let val = self.expr(&f.expr, Some(&want));
            body.push_str(&format!("{v}.{n} = {val}; "));
        }
        format!("([&]() {{ {body}return {v}; }}())")
    }

    fn if_expr(&mut self, i: &syn::ExprIf, want: Option<&Ty>) -> String {
        let then = block_tail_only(&i.then_branch.stmts);
        let els = match &i.else_branch {
            Some((_, e)) => match &**e {
                Expr::Block(b) => block_tail_only(&b.block.stmts),
                other @ Expr::If(_) => Some(other),
                _ => None,
            },
            None => None,
        };
        let (Some(then), Some(els)) = (then, els) else {
            return self.unsupported("an `if` expression whose branches are not single values", i.span());
        };
        let t = want.cloned().or_else(|| self.ty_of(then)).or_else(|| self.ty_of(els));
        let c = self.expr(&i.cond, None);
        let a = self.expr(then, t.as_ref());
        let b = self.expr(els, t.as_ref());
        format!("({c} ? {a} : {b})")
    }
}

/// The element type of an array literal none of whose elements has a type the writer knows
/// (unsuffixed literals): `i32`, or a wider type where a literal needs it. It may still differ
/// from the type Rust infers (from a callee's parameter, say): `gc_array` converts to an array of
/// the same length and another element type.
fn untyped_array_elem(a: &syn::ExprArray) -> Ty {
    let widest = a
        .elems
        .iter()
        .filter_map(|x| match x {
            Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => i.base10_digits().parse::<u128>().ok(),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    if widest > i64::MAX as u128 {
        prim("u64")
    } else if widest > i32::MAX as u128 {
        prim("i64")
    } else {
        prim("i32")
    }
}

/// Text that needs no parentheses as a cast operand.
fn is_atom(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        || (s.ends_with(')') && !s.starts_with('(') && balanced_call(s))
}

fn balanced_call(s: &str) -> bool {
    // `name(...)` whose first `(` closes at the end.
    let Some(open) = s.find('(') else { return false };
    if !s[..open]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '<' || c == '>' || c == ',' || c == ' ')
    {
        return false;
    }
    let mut depth = 0i32;
    for (i, c) in s.char_indices().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1 == s.len();
                }
            }
            _ => {}
        }
    }
    false
}

/// Parenthesizes an operand of an infix operator when it is itself infix.
fn paren_infix(e: &Expr, text: String) -> String {
    // `(a == b) != c`: the Rust parentheses are not in `text` (`Expr::Paren` writes its inner
    // expression), so look through them.
    let mut e = e;
    while let Expr::Paren(syn::ExprParen { expr, .. }) | Expr::Group(syn::ExprGroup { expr, .. }) = e {
        e = expr;
    }
    let infix = match e {
        Expr::Binary(b) => matches!(
            b.op,
            BinOp::And(_)
                | BinOp::Or(_)
                | BinOp::Eq(_)
                | BinOp::Ne(_)
                | BinOp::Lt(_)
                | BinOp::Le(_)
                | BinOp::Gt(_)
                | BinOp::Ge(_)
        ),
        _ => false,
    };
    if infix {
        format!("({text})")
    } else {
        text
    }
}

/// `(gc_usize)x` → `x` where the result is cast to `gc_u64` anyway.
pub(super) fn strip_usize_cast(s: &str) -> String {
    for p in ["(gc_usize)", "(gc_u64)"] {
        if let Some(rest) = s.strip_prefix(p) {
            if is_atom(rest) && !rest.starts_with('(') {
                return rest.to_string();
            }
            if rest.starts_with('(') && balanced_call(&format!("x{rest}")) {
                return rest[1..rest.len() - 1].to_string();
            }
        }
    }
    s.to_string()
}
