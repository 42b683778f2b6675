//! The writer's own type inference, only as far as literals need it: Rust's unsuffixed literals
//! take the type of what they meet, C++'s do not, so the writer must spell `(gc_u32)2`.
//!
//! This module owns [`Writer::ty_of`] (the static type of an expression where it can be read off
//! the source: suffixed literals, casts, declared locals, comparisons, known methods) and the
//! inference of an unannotated `let x = 0;` from the later uses of `x` in its block. It emits no
//! text.

use super::ty::{arith_fn, prim, prim_assoc, tok, ty_of_type, Ty, PRIMS};
use super::writer::Writer;
use crate::ir::{Dest, Stmt};
use syn::visit::Visit;
use syn::{BinOp, Expr, Ident, Lit, UnOp};

impl Writer<'_> {
    pub(super) fn ty_of(&self, e: &Expr) -> Option<Ty> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) if !i.suffix().is_empty() => Some(prim(i.suffix())),
                Lit::Float(f) if !f.suffix().is_empty() => Some(prim(f.suffix())),
                Lit::Bool(_) => Some(prim("bool")),
                _ => None,
            },
            Expr::Path(p) => {
                if let Some(id) = p.path.get_ident() {
                    return self.lookup(&id.to_string()).and_then(|b| b.ty.clone());
                }
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                (segs.len() == 2 && PRIMS.contains(&segs[0].as_str())).then(|| prim(&segs[0]))
            }
            Expr::Cast(c) => Some(ty_of_type(&c.ty)),
            Expr::Paren(p) => self.ty_of(&p.expr),
            Expr::Group(g) => self.ty_of(&g.expr),
            Expr::Unary(u) => match u.op {
                UnOp::Not(_) | UnOp::Neg(_) => self.ty_of(&u.expr),
                _ => None,
            },
            Expr::Binary(b) => match b.op {
                BinOp::Eq(_) | BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) => {
                    Some(prim("bool"))
                }
                BinOp::And(_) | BinOp::Or(_) => Some(prim("bool")),
                BinOp::Shl(_) | BinOp::Shr(_) => self.ty_of(&b.left),
                _ => self.ty_of(&b.left).or_else(|| self.ty_of(&b.right)),
            },
            Expr::Index(i) => match self.ty_of(&i.expr) {
                Some(Ty::Array(e, _)) | Some(Ty::Temp(e)) | Some(Ty::Slice(e)) | Some(Ty::Mat(e)) => Some(*e),
                _ => None,
            },
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                match name.as_str() {
                    "count_ones" | "count_zeros" | "leading_zeros" | "trailing_zeros" => Some(prim("u32")),
                    "is_power_of_two" | "is_nan" | "is_empty" | "total_lt" | "total_le" => Some(prim("bool")),
                    "len" => Some(prim("usize")),
                    "load" | "fetch_max" | "fetch_min" | "fetch_add" => match self.ty_of(&m.receiver) {
                        Some(Ty::Bound(_, e)) => Some(*e),
                        other => other,
                    },
                    "split_at" | "split_at_mut" => match self.ty_of(&m.receiver) {
                        Some(t @ Ty::Slice(_)) => Some(Ty::Tuple(vec![t.clone(), t])),
                        _ => None,
                    },
                    // A view's shape and narrowings (`gc_mat`).
                    "rows" | "cols" | "stride" if matches!(self.ty_of(&m.receiver), Some(Ty::Mat(_))) => {
                        Some(prim("usize"))
                    }
                    "block" | "block_mut" | "split_rows" | "split_rows_mut" | "split_cols" | "split_cols_mut"
                    | "quadrants" | "quadrants_mut" => match self.ty_of(&m.receiver) {
                        Some(t @ Ty::Mat(_)) if name.starts_with("block") => Some(t),
                        Some(t @ Ty::Mat(_)) if name.starts_with("quadrants") => Some(Ty::Tuple(vec![t; 4])),
                        Some(t @ Ty::Mat(_)) => Some(Ty::Tuple(vec![t.clone(), t])),
                        _ => None,
                    },
                    _ => self.ty_of(&m.receiver).or_else(|| m.args.first().and_then(|a| self.ty_of(a))),
                }
            }
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if prim_assoc(&p.path).is_some() => prim_assoc(&p.path).map(|(t, _)| prim(&t)),
                _ => None,
            },
            Expr::If(i) => block_tail(&i.then_branch.stmts).and_then(|t| self.ty_of(t)),
            Expr::Block(b) => block_tail(&b.block.stmts).and_then(|t| self.ty_of(t)),
            Expr::Repeat(r) => self.ty_of(&r.expr).map(|t| Ty::Array(Box::new(t), tok(&r.len))),
            Expr::Array(a) => {
                a.elems.iter().find_map(|x| self.ty_of(x)).map(|t| Ty::Array(Box::new(t), a.elems.len().to_string()))
            }
            Expr::Tuple(t) if !t.elems.is_empty() => {
                t.elems.iter().map(|x| self.ty_of(x)).collect::<Option<Vec<Ty>>>().map(Ty::Tuple)
            }
            Expr::Reference(_) => crate::syntax::sub_slice(e).and_then(|(_, base, _)| self.ty_of(base)),
            Expr::Field(f) => match (&f.member, self.ty_of(&f.base)) {
                (syn::Member::Unnamed(i), Some(Ty::Tuple(es))) => es.get(i.index as usize).cloned(),
                _ => None,
            },
            Expr::Struct(st) => st.path.get_ident().map(|n| Ty::Named(n.to_string())),
            _ => None,
        }
    }

    /// The type a literal meeting `e` takes: `e`'s type, or `decltype` of it.
    pub(super) fn ty_or_decltype(&self, e: &Expr, text: &str) -> Option<Ty> {
        if is_poly_literal(e) {
            return None;
        }
        Some(self.ty_of(e).unwrap_or_else(|| Ty::Named(format!("gc_noref_t<decltype({text})>"))))
    }

    /// The type of an unannotated `let x = <literal>` (or loop variable) from how `x` is used.
    pub(super) fn infer_from_uses(&self, name: &Ident, rest: &[Stmt], tail: Option<&Expr>) -> Option<Ty> {
        let mut f = UseFinder { name: name.to_string(), others: Vec::new(), indexed: false };
        for s in rest {
            walk_stmt_exprs(s, &mut |e| f.visit_expr(e));
        }
        if let Some(t) = tail {
            f.visit_expr(t);
        }
        for o in &f.others {
            if let Some(t) = self.ty_of(o) {
                if t != Ty::Named(String::new()) {
                    return Some(t);
                }
            }
        }
        f.indexed.then(|| prim("usize"))
    }
}

/// An unsuffixed numeric literal (or an arithmetic expression of only such): its type comes
/// from context.
pub(super) fn is_poly_literal(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.suffix().is_empty(),
            Lit::Float(f) => f.suffix().is_empty(),
            _ => false,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => is_poly_literal(&u.expr),
        Expr::Paren(p) => is_poly_literal(&p.expr),
        Expr::Binary(b) if arith_fn(&b.op).is_some() => is_poly_literal(&b.left) && is_poly_literal(&b.right),
        _ => false,
    }
}

/// A float literal, or an expression of literals with one.
pub(super) fn is_float_lit(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => matches!(l.lit, Lit::Float(_)),
        Expr::Unary(u) => is_float_lit(&u.expr),
        Expr::Paren(p) => is_float_lit(&p.expr),
        Expr::Binary(b) => is_float_lit(&b.left) || is_float_lit(&b.right),
        _ => false,
    }
}

/// The tail expression of a block.
pub(super) fn block_tail(stmts: &[syn::Stmt]) -> Option<&Expr> {
    match stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => Some(e),
        _ => None,
    }
}

/// The tail expression of a block that has nothing else.
pub(super) fn block_tail_only(stmts: &[syn::Stmt]) -> Option<&Expr> {
    if stmts.len() == 1 {
        block_tail(stmts)
    } else {
        None
    }
}

/// Every expression directly held by a statement tree (not descending into expressions).
fn walk_stmt_exprs<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a Expr)) {
    match s {
        Stmt::Let(l) => {
            if let Some(e) = &l.init {
                f(e);
            }
        }
        Stmt::Spawn(site) => {
            for a in site.exprs() {
                f(a);
            }
            if let Dest::Element { index, .. } = &site.dest {
                f(index);
            }
        }
        Stmt::If(i) => {
            f(&i.cond);
            for s in &i.then {
                walk_stmt_exprs(s, f);
            }
            for s in i.els.iter().flatten() {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::While { cond, body } => {
            f(cond);
            for s in body {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::Loop { body } | Stmt::Block(body) => {
            for s in body {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::For(fl) => {
            f(&fl.start);
            f(&fl.end);
            for s in &fl.body {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::Return(Some(e)) | Stmt::Expr { expr: e, .. } => f(e),
        Stmt::Return(None) | Stmt::Sync(_) | Stmt::Jump(_) => {}
    }
}

/// Finds the operands `name` is combined, compared or assigned with, in order.
struct UseFinder {
    name: String,
    others: Vec<Expr>,
    indexed: bool,
}

impl UseFinder {
    fn is_name(&self, e: &Expr) -> bool {
        match e {
            Expr::Path(p) => p.path.get_ident().is_some_and(|i| *i == self.name),
            Expr::Paren(p) => self.is_name(&p.expr),
            _ => false,
        }
    }
}

impl<'a> Visit<'a> for UseFinder {
    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        if !matches!(
            b.op,
            BinOp::Shl(_) | BinOp::Shr(_) | BinOp::ShlAssign(_) | BinOp::ShrAssign(_) | BinOp::And(_) | BinOp::Or(_)
        ) {
            if self.is_name(&b.left) {
                self.others.push((*b.right).clone());
            } else if self.is_name(&b.right) {
                self.others.push((*b.left).clone());
            }
        }
        syn::visit::visit_expr_binary(self, b);
    }
    fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
        if self.is_name(&a.left) {
            self.others.push((*a.right).clone());
        } else if self.is_name(&a.right) {
            self.others.push((*a.left).clone());
        }
        syn::visit::visit_expr_assign(self, a);
    }
    fn visit_expr_index(&mut self, i: &'a syn::ExprIndex) {
        if self.is_name(&i.index) {
            self.indexed = true;
        }
        syn::visit::visit_expr_index(self, i);
    }
}
