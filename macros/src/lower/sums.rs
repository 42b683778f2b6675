//! Sum-of-children tasks: a straight-line task whose result is its children's results added to a
//! constant. `fib` (`x + y`), `queens` (a loop adding up an array of spawn results), a tree count
//! (`1 + Σ sizes[j]`) and a chain (`below + 1`) have this shape. The persistent device scheduler
//! runs a tree of such tasks as one SUM GROUP (persistent.cuh): each task's constant goes into one
//! cell that its descendants add into, so no task of the group needs a frame or a continuation,
//! and the group's root learns that the tree is done from one counter.
//!
//! This module owns the recognition only: [`sum_form`] reads a lowered [`Task`] and returns the
//! constant, or `None` when the task has any other shape (the task then runs as it always does).
//! It is conservative: what it accepts must mean exactly "result = base + every child's result"
//! on every path. Whether the callees qualify as well is not known here (each task is compiled
//! alone): the cuda backend decides that when it assembles a program (`program.rs`).

use crate::ir::{visit_exprs, visit_spawns, Dest, End, FieldOrigin, FieldType, Stmt, Task};
use std::collections::HashMap;
use syn::visit::Visit;
use syn::{BinOp, Expr, Lit, Type};

/// The integer result types a sum group adds up (wrapping, as Rust's release build does, so the
/// order of the additions does not matter; 32 or 64 bits: the device adds with one atomic).
const SUM_TYPES: &[&str] = &["u32", "u64", "i32", "i64", "usize", "isize"];

/// The shape's constant (`1` in `1 + Σ sizes[j]`), when `task`'s result is that constant plus the
/// result of every child it spawns, on every path that reaches its one `sync!()`; 0 for a leaf
/// task (no sync, no spawn: its result is its return value).
///
/// Accepted: one top-level `sync!()`, no state machine; an integer result; every spawn writes a
/// top-level local or an element of a top-level array that is initialized to zero and written by
/// nothing but spawns, no spawn has a priority, and no `return` can follow a spawn; after the sync
/// only the sum: a tail `x + y + 1`, or `let mut t = c;` followed by `t += x;` and
/// `for i in 0..N { t += a[i]; }` over whole arrays, then the tail `t` (each spawned-into local and
/// array element counted exactly once).
pub fn sum_form(task: &Task) -> Option<u128> {
    // Temporaries (`alloc!`) are freed when their task returns, which a member never does after
    // a sync (it has no continuation).
    if task.machine.is_some() || !is_sum_type(task.output.as_ref()?) || task.frame.iter().any(|f| f.temp) {
        return None;
    }
    if task.segments.iter().any(|seg| any_alloc(&seg.body)) {
        return None;
    }
    // A leaf (no sync, no spawn): its result is its return value, a sum of no children.
    if task.segments.len() == 1 && task.segments[0].spawns == 0 {
        return Some(0);
    }
    if task.segments.len() != 2 {
        return None;
    }
    let (pre, post) = (&task.segments[0], &task.segments[1]);
    if !matches!(pre.end, End::Sync) || post.spawns != 0 {
        return None;
    }
    // The destinations: scalar locals, and arrays with their lengths.
    let mut ok = true;
    let mut scalars: Vec<String> = Vec::new();
    let mut arrays: HashMap<String, u64> = HashMap::new();
    visit_spawns(&pre.body, &mut |site| {
        if site.priority.is_some() {
            ok = false;
        }
        match &site.dest {
            Dest::Discard => ok = false,
            Dest::Local { name, .. } => scalars.push(name.to_string()),
            Dest::Element { array, index } => {
                let name = array.to_string();
                match array_len(task, &name) {
                    Some(n) if !mentions(index, &name) => {
                        arrays.insert(name, n);
                    }
                    _ => ok = false,
                }
            }
        }
    });
    scalars.sort();
    scalars.dedup();
    if !ok || (scalars.is_empty() && arrays.is_empty()) {
        return None;
    }
    let dests: Vec<&str> = scalars.iter().map(String::as_str).chain(arrays.keys().map(String::as_str)).collect();
    for d in &dests {
        let field = task.frame.iter().find(|f| f.name == d)?;
        if field.origin != FieldOrigin::Local || field.temp {
            return None;
        }
    }
    if !segment0_ok(&pre.body, &dests) {
        return None;
    }
    continuation_base(&post.body, &post.end, &scalars, &arrays)
}

fn is_sum_type(t: &Type) -> bool {
    matches!(t, Type::Path(p) if p.qself.is_none() && p.path.get_ident().is_some_and(|i| SUM_TYPES.iter().any(|s| i == s)))
}

/// The length of the frame array `name` (declared `[T; N]` with a literal `N`).
fn array_len(task: &Task, name: &str) -> Option<u64> {
    let field = task.frame.iter().find(|f| f.name == name)?;
    match &field.ty {
        FieldType::Declared(Type::Array(a)) => int_lit(&a.len),
        _ => None,
    }
}

fn int_lit(e: &Expr) -> Option<u64> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<u64>().ok(),
            _ => None,
        },
        Expr::Paren(p) => int_lit(&p.expr),
        _ => None,
    }
}

/// A zero: `0`, `0u64`, `[0; N]`, `[0, 0, ..]`.
fn is_zero(e: &Expr) -> bool {
    match e {
        Expr::Repeat(r) => is_zero(&r.expr),
        Expr::Array(a) => a.elems.iter().all(is_zero),
        Expr::Paren(p) => is_zero(&p.expr),
        other => int_lit(other) == Some(0),
    }
}

/// Whether `e` names `name` anywhere (as a path, also inside closures or blocks).
fn mentions(e: &Expr, name: &str) -> bool {
    struct Finder<'a> {
        name: &'a str,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, p: &'ast syn::Path) {
            if p.get_ident().is_some_and(|i| i == self.name) {
                self.found = true;
            }
            syn::visit::visit_path(self, p);
        }
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            if p.ident == self.name {
                self.found = true;
            }
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut f = Finder { name, found: false };
    f.visit_expr(e);
    f.found
}

fn has_return(e: &Expr) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
            self.0 = true;
        }
    }
    let mut f = Finder(false);
    f.visit_expr(e);
    f.0
}

/// Whether `p` holds for a statement of `stmts` or of a block nested in them.
fn any_stmt(stmts: &[Stmt], p: &dyn Fn(&Stmt) -> bool) -> bool {
    stmts.iter().any(|s| {
        p(s) || match s {
            Stmt::If(i) => any_stmt(&i.then, p) || i.els.as_deref().is_some_and(|e| any_stmt(e, p)),
            Stmt::While { body, .. } | Stmt::Loop { body } | Stmt::Block(body) => any_stmt(body, p),
            Stmt::For(fl) => any_stmt(&fl.body, p),
            _ => false,
        }
    })
}

fn any_alloc(stmts: &[Stmt]) -> bool {
    any_stmt(stmts, &|s| matches!(s, Stmt::Let(l) if l.alloc.is_some()))
}

fn stmt_has_spawn(s: &Stmt) -> bool {
    let mut any = false;
    visit_spawns(std::slice::from_ref(s), &mut |_| any = true);
    any
}

/// A `return` statement anywhere in `s`, or a `return` inside one of its expressions.
fn stmt_has_return(s: &Stmt) -> bool {
    let stmts = std::slice::from_ref(s);
    let mut any = any_stmt(stmts, &|s| matches!(s, Stmt::Return(_)));
    visit_exprs(stmts, &mut |e| any |= has_return(e), &mut |_| {});
    any
}

/// Segment 0: the destinations are declared once, at top level, as zeros (or by the spawn's own
/// `let`), and named nowhere else; no `return` follows a spawn (at top level: no return after the
/// first statement that spawns, nor inside it).
fn segment0_ok(body: &[Stmt], dests: &[&str]) -> bool {
    let mut spawned = false;
    for s in body {
        let spawns = stmt_has_spawn(s);
        if (spawned || spawns) && stmt_has_return(s) {
            return false;
        }
        spawned |= spawns;
        // A top-level declaration of a destination: zero, and its initializer names nothing else.
        if let Stmt::Let(l) = s {
            if dests.iter().any(|d| l.name == d) && !(l.init.as_ref().is_some_and(is_zero) && l.alloc.is_none()) {
                return false;
            }
        }
    }
    let mut ok = true;
    let mut lets: HashMap<String, usize> = HashMap::new();
    visit_exprs(
        body,
        &mut |e| {
            if dests.iter().any(|d| mentions(e, d)) {
                ok = false;
            }
        },
        &mut |name| *lets.entry(name.to_string()).or_default() += 1,
    );
    // Declared at most once (the spawn's own `let x = spawn!(..)` declares none here).
    ok && dests.iter().all(|d| lets.get(*d).copied().unwrap_or(0) <= 1)
}

/// What the continuation adds up: every scalar destination once and every array element once.
#[derive(Default)]
struct Tally {
    base: u128,
    scalars: HashMap<String, u32>,
    /// Per array: every element covered by a whole loop, or these constant indices.
    whole: HashMap<String, u32>,
    elems: HashMap<(String, u64), u32>,
}

impl Tally {
    /// A term of a sum: a destination, an element with a constant index, a literal.
    fn term(&mut self, e: &Expr, scalars: &[String], arrays: &HashMap<String, u64>) -> bool {
        match e {
            Expr::Paren(p) => self.term(&p.expr, scalars, arrays),
            Expr::Binary(b) if matches!(b.op, BinOp::Add(_)) => {
                self.term(&b.left, scalars, arrays) && self.term(&b.right, scalars, arrays)
            }
            Expr::Path(p) => match p.path.get_ident().map(|i| i.to_string()) {
                Some(n) if scalars.contains(&n) => {
                    *self.scalars.entry(n).or_default() += 1;
                    true
                }
                _ => false,
            },
            Expr::Index(ix) => match (&*ix.expr, int_lit(&ix.index)) {
                (Expr::Path(p), Some(k)) => match p.path.get_ident().map(|i| i.to_string()) {
                    Some(n) if arrays.get(&n).is_some_and(|len| k < *len) => {
                        *self.elems.entry((n, k)).or_default() += 1;
                        true
                    }
                    _ => false,
                },
                _ => false,
            },
            other => match int_lit(other) {
                Some(v) => {
                    self.base = self.base.saturating_add(v as u128);
                    true
                }
                None => false,
            },
        }
    }

    /// Every scalar counted once; every array once, whole or element by element.
    fn complete(&self, scalars: &[String], arrays: &HashMap<String, u64>) -> bool {
        let scalars_once =
            scalars.iter().all(|s| self.scalars.get(s) == Some(&1)) && self.scalars.len() == scalars.len();
        let arrays_once = arrays.iter().all(|(a, len)| {
            let whole = self.whole.get(a).copied().unwrap_or(0);
            let parts: Vec<u32> = (0..*len).map(|k| self.elems.get(&(a.clone(), k)).copied().unwrap_or(0)).collect();
            (whole == 1 && parts.iter().all(|&c| c == 0)) || (whole == 0 && parts.iter().all(|&c| c == 1))
        });
        scalars_once && arrays_once && self.base <= u64::MAX as u128
    }
}

/// The continuation: the base when it returns exactly the base plus every destination.
fn continuation_base(body: &[Stmt], end: &End, scalars: &[String], arrays: &HashMap<String, u64>) -> Option<u128> {
    let mut tally = Tally::default();
    let mut acc: Option<String> = None;
    let mut stmts = body;
    // `return e;` as the last statement is the tail `e`.
    let tail: &Expr = match (end, body.last()) {
        (End::Tail(e), _) => e,
        (End::FallOff, Some(Stmt::Return(Some(e)))) => {
            stmts = &body[..body.len() - 1];
            e
        }
        _ => return None,
    };
    for (i, s) in stmts.iter().enumerate() {
        match s {
            // `let mut t = c;` first.
            Stmt::Let(l) if i == 0 && l.mutable && l.alloc.is_none() => {
                let init = l.init.as_ref()?;
                if !tally.term(init, &[], &HashMap::new()) {
                    return None;
                }
                acc = Some(l.name.to_string());
            }
            // `t += term;`
            Stmt::Expr { expr: Expr::Binary(b), .. } if matches!(b.op, BinOp::AddAssign(_)) => {
                if !is_name(&b.left, acc.as_deref()?) || !tally.term(&b.right, scalars, arrays) {
                    return None;
                }
            }
            // `for i in 0..N { t += a[i]; }` over a whole array.
            Stmt::For(fl) if !fl.lanes && !fl.inclusive && int_lit(&fl.start) == Some(0) => {
                let [Stmt::Expr { expr: Expr::Binary(b), .. }] = fl.body.as_slice() else { return None };
                if !matches!(b.op, BinOp::AddAssign(_)) || !is_name(&b.left, acc.as_deref()?) {
                    return None;
                }
                let Expr::Index(ix) = &*b.right else { return None };
                let Expr::Path(p) = &*ix.expr else { return None };
                let array = p.path.get_ident()?.to_string();
                let len = *arrays.get(&array)?;
                if !is_name(&ix.index, &fl.var.to_string()) || int_lit(&fl.end) != Some(len) {
                    return None;
                }
                *tally.whole.entry(array).or_default() += 1;
            }
            _ => return None,
        }
    }
    // The tail: `t`, or a sum of terms (with `t` among them when there is one).
    let mut acc_seen = acc.is_none();
    if !tail_terms(tail, acc.as_deref(), &mut acc_seen, &mut tally, scalars, arrays) || !acc_seen {
        return None;
    }
    tally.complete(scalars, arrays).then_some(tally.base)
}

fn tail_terms(
    e: &Expr,
    acc: Option<&str>,
    acc_seen: &mut bool,
    tally: &mut Tally,
    scalars: &[String],
    arrays: &HashMap<String, u64>,
) -> bool {
    match e {
        Expr::Paren(p) => tail_terms(&p.expr, acc, acc_seen, tally, scalars, arrays),
        Expr::Binary(b) if matches!(b.op, BinOp::Add(_)) => {
            tail_terms(&b.left, acc, acc_seen, tally, scalars, arrays)
                && tail_terms(&b.right, acc, acc_seen, tally, scalars, arrays)
        }
        _ if acc.is_some_and(|a| is_name(e, a)) => !std::mem::replace(acc_seen, true),
        _ => tally.term(e, scalars, arrays),
    }
}

fn is_name(e: &Expr, name: &str) -> bool {
    match e {
        Expr::Path(p) => p.path.get_ident().is_some_and(|i| i == name),
        Expr::Paren(p) => is_name(&p.expr, name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::sum_form;
    use crate::{lower, parse};
    use quote::quote;

    fn form(item: proc_macro2::TokenStream) -> Option<u128> {
        let f: syn::ItemFn = syn::parse2(item).expect("a fn");
        let task = lower::task(parse::function(&f).expect("parses")).expect("lowers");
        sum_form(&task)
    }

    #[test]
    fn fib_chain_and_counts_are_sums() {
        let fib = quote! { fn fib(n: u32) -> u64 { if n < 2 { return n as u64; } let x = spawn!(fib(n - 1)); let y = spawn!(fib(n - 2)); sync!(); x + y } };
        assert_eq!(form(fib), Some(0));
        let chain = quote! { fn chain(n: u32) -> u64 { if n == 0 { return 0; } let below = spawn!(chain(n - 1)); sync!(); below + 1 } };
        assert_eq!(form(chain), Some(1));
        let count = quote! {
            fn node(h: u64, m: u32) -> u64 {
                if h % 7 == 0 { return 1; }
                let mut sizes: [u64; 8] = [0; 8];
                let mut i: u32 = 0;
                while i < m && i < 8 { sizes[i as usize] = spawn!(node(h + i as u64, m)); i += 1; }
                sync!();
                let mut total: u64 = 1;
                for j in 0..8 { total += sizes[j]; }
                total
            }
        };
        assert_eq!(form(count), Some(1));
        let leaf = quote! { fn leaf(n: u32) -> u64 { let mut s = 0u64; for i in 0..n { s += i as u64; } s } };
        assert_eq!(form(leaf), Some(0));
        let pair = quote! {
            fn roots(lo: u32, hi: u32) -> u64 {
                if hi <= lo { return 0; }
                let mut r: [u64; 2] = [0; 2];
                if hi - lo == 1 { r[0] = spawn!(leaf(lo)); } else { r[0] = spawn!(roots(lo, lo + 1)); r[1] = spawn!(roots(lo + 1, hi)); }
                sync!();
                r[0] + r[1]
            }
        };
        assert_eq!(form(pair), Some(0));
    }

    #[test]
    fn other_shapes_are_not() {
        // A product, a max, a discarded spawn, a priority, a destination written by hand, a return
        // after a spawn, an element counted twice, an element left out, a float.
        for item in [
            quote! { fn f(n: u32) -> u64 { let x = spawn!(f(n - 1)); let y = spawn!(f(n - 2)); sync!(); x * y } },
            quote! { fn f(n: u32) -> u64 { let x = spawn!(f(n - 1)); let y = spawn!(f(n - 2)); sync!(); x.max(y) } },
            quote! { fn f(n: u32) -> u64 { let x = spawn!(f(n - 1)); spawn!(f(n - 2)); sync!(); x } },
            quote! { fn f(n: u32) -> u64 { let x = spawn!(f(n - 1), priority = n as u64); sync!(); x } },
            quote! { fn f(n: u32) -> u64 { let mut x: u64 = 0; x += 5; if n > 1 { x = spawn!(f(n - 1)); } sync!(); x } },
            quote! { fn f(n: u32) -> u64 { let x = spawn!(f(n - 1)); if n > 3 { return 2; } sync!(); x } },
            quote! { fn f(n: u32) -> u64 { let mut a: [u64; 2] = [0; 2]; a[0] = spawn!(f(n - 1)); sync!(); a[0] + a[0] + a[1] } },
            quote! { fn f(n: u32) -> u64 { let mut a: [u64; 2] = [0; 2]; a[0] = spawn!(f(n - 1)); sync!(); a[0] } },
            quote! { fn f(n: u32) -> f64 { let x = spawn!(f(n - 1)); sync!(); x + 1.0 } },
            quote! { fn f(n: u32) -> u64 { let mut a: [u64; 2] = [1; 2]; a[0] = spawn!(f(n - 1)); sync!(); a[0] + a[1] } },
        ] {
            assert_eq!(form(item.clone()), None, "{item}");
        }
    }
}
