//! Statements → C++ statements: `let` (with the inferred type of an unannotated literal),
//! structured control flow (`gc_progress()` first in every loop body), returns (which free the
//! task's temporaries), compound assignments and spawns (`gc_spawn` in a segment, a call of the
//! child's serial device function in a device function).
//!
//! This module owns statement emission; expressions are `expr`'s, whole functions `task`'s.

use super::expr::strip_usize_cast;
use super::infer::{is_float_lit, is_poly_literal};
use super::ty::{callee_cname, callee_targs, compound_fn, mangle, prim, ty_of_type, Ty};
use super::writer::{Mode, Writer};
use crate::ir::{Dest, For, If, SpawnSite, Stmt};
use syn::spanned::Spanned;
use syn::Expr;

impl Writer<'_> {
    /// A statement list; `tail` is the expression that follows it (a block's value), which the
    /// inference of unannotated literals also reads.
    pub(super) fn stmts(&mut self, stmts: &[Stmt], tail: Option<&Expr>) {
        for (i, s) in stmts.iter().enumerate() {
            self.stmt(s, stmts.get(i + 1..).unwrap_or_default(), tail);
        }
    }

    /// `gc_progress();` as the first statement of a loop body (see runtime.cuh).
    fn progress_line(&mut self) {
        self.depth += 1;
        self.line("gc_progress();");
        self.depth -= 1;
    }

    fn block(&mut self, stmts: &[Stmt]) {
        self.depth += 1;
        self.push();
        self.stmts(stmts, None);
        self.pop();
        self.depth -= 1;
    }

    /// In a serial device form: returns at once when serial forms unwind (a guard tripped;
    /// persistent.cuh, INLINE LIMITS). One load and a branch. Live temporaries are not freed (a
    /// free at every check made Strassen's PTX half again as large): a serial form that allocates
    /// is marked `GC_DEV_DIRTY`, so an unwinding through it has failed the run, which leaves its
    /// temporaries behind like every task a fault stops.
    pub(super) fn unwind_check(&mut self) {
        let t = self.ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx);
        self.line(&format!("if (gc_unwinding(cx)) return {t}();"));
    }

    fn stmt(&mut self, s: &Stmt, rest: &[Stmt], tail: Option<&Expr>) {
        let calls = self.calls.len();
        self.stmt_inner(s, rest, tail);
        // In a serial device form, a value returned by a call of another one (a spawn, or a plain
        // call in the statement) is a placeholder when that call unwound: return before using it.
        let called =
            matches!(s, Stmt::Spawn(_)) || (matches!(s, Stmt::Let(_) | Stmt::Expr { .. }) && self.calls.len() > calls);
        if self.mode == Mode::Device && called {
            self.unwind_check();
        }
    }

    fn stmt_inner(&mut self, s: &Stmt, rest: &[Stmt], tail: Option<&Expr>) {
        match s {
            Stmt::Let(l) if l.alloc.is_some() => {
                let Some(a) = &l.alloc else { return };
                let elem = ty_of_type(&a.elem);
                let len = self.expr(&a.len, Some(&prim("usize")));
                let len = strip_usize_cast(&len);
                let site = self.site(a.span);
                let ty = Ty::Temp(Box::new(elem.clone()));
                let name = self.declare(&l.name, Some(ty.clone()));
                self.line(&format!(
                    "{} {name} = gc_alloc_temp<{}>(cx, (gc_u64)({len}), {site}{});",
                    ty.cxx(),
                    elem.cxx(),
                    if a.uninit { ", false" } else { "" }
                ));
                // An exhausted heap has raised a fault (the run fails); end the segment now.
                let fail = match self.mode {
                    Mode::Segment => "{ *ret = Ret(); return false; }".to_string(),
                    Mode::Device => {
                        format!("return {}();", self.ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx))
                    }
                };
                self.line(&format!("if ({name}.ptr == nullptr) {fail}"));
                self.temps.push(name);
            }
            Stmt::Let(l) if l.init.as_ref().is_some_and(|e| crate::syntax::as_shared(e).is_some()) => {
                self.shared_let(l, rest, tail)
            }
            Stmt::Let(l) => {
                let mut ty = l.ty.as_ref().map(ty_of_type).or_else(|| l.init.as_ref().and_then(|e| self.ty_of(e)));
                if ty.is_none() {
                    if let Some(init) = &l.init {
                        if is_poly_literal(init) {
                            let default = if is_float_lit(init) { "f64" } else { "i32" };
                            ty = Some(self.infer_from_uses(&l.name, rest, tail).unwrap_or_else(|| prim(default)));
                        }
                    }
                }
                let init = l.init.as_ref().map(|e| self.expr(e, ty.as_ref()));
                let name = self.declare(&l.name, ty.clone());
                let decl = match (&ty, init) {
                    (Some(t), Some(i)) => format!("{} {name} = {i};", t.cxx()),
                    (Some(t), None) => format!("{} {name} = {}();", t.cxx(), t.cxx()),
                    (None, Some(i)) => format!("auto {name} = {i};"),
                    (None, None) => {
                        let u = self.unsupported("a `let` without type or initializer", l.name.span());
                        format!("int {name} = {u};")
                    }
                };
                self.line(&decl);
            }
            Stmt::Spawn(site) => self.spawn(site),
            Stmt::If(i) => {
                self.if_stmt(i, "");
                self.line("}");
            }
            Stmt::While { cond, body } => {
                let calls = self.calls.len();
                let c = self.expr(cond, None);
                self.line(&format!("while ({c}) {{"));
                // Rust loops may run forever; C++ may assume a loop without side effects ends.
                self.progress_line();
                if self.mode == Mode::Device && self.calls.len() > calls {
                    // The condition calls a serial form: a placeholder must not keep the loop going.
                    self.depth += 1;
                    self.unwind_check();
                    self.depth -= 1;
                }
                self.block(body);
                self.line("}");
            }
            Stmt::Loop { body } => {
                self.line("for (;;) {");
                self.progress_line();
                self.block(body);
                self.line("}");
            }
            Stmt::For(f) => self.for_stmt(f),
            Stmt::Block(b) => {
                self.line("{");
                self.block(b);
                self.line("}");
            }
            Stmt::Return(e) => self.ret(e.as_ref()),
            Stmt::Expr { expr, .. } => self.expr_stmt(expr),
            // The serial device form runs the children at their spawns: a sync has nothing to do.
            Stmt::Sync(_) if self.mode == Mode::Device => {}
            Stmt::Sync(span) => {
                let u = self.unsupported("`sync!()` inside a segment", *span);
                self.line(&format!("(void){u};"));
            }
            Stmt::Jump(k) => self.line(&format!("goto gc_b{k};")),
        }
    }

    fn if_stmt(&mut self, i: &If, prefix: &str) {
        let c = self.expr(&i.cond, None);
        self.line(&format!("{prefix}if ({c}) {{"));
        self.block(&i.then);
        if let Some(e) = &i.els {
            match e.as_slice() {
                [Stmt::If(inner)] if i.else_if => self.if_stmt(inner, "} else "),
                _ => {
                    self.line("} else {");
                    self.block(e);
                }
            }
        }
    }

    fn for_stmt(&mut self, f: &For) {
        let ty = self
            .ty_of(&f.start)
            .or_else(|| self.ty_of(&f.end))
            .or_else(|| self.infer_from_uses(&f.var, &f.body, None))
            .unwrap_or_else(|| prim("i32"));
        let t = ty.cxx();
        let lo = self.expr(&f.start, Some(&ty));
        let hi = self.expr(&f.end, Some(&ty));
        let (it, end) = (self.fresh("i"), self.fresh("end"));
        self.line("{");
        self.depth += 1;
        self.line(&format!("{t} {end} = {hi};"));
        let coop = f.lanes && self.coop && !self.in_lanes;
        // A block task's loop is spread over the block's threads, a warp task's over its lanes.
        let (first, step, wait) = if self.block_coop() {
            ("gc_block_thread()", "gc_block_threads()", "gc_block_sync();")
        } else {
            ("(gc_u64)gc_lane()", "(gc_u64)gc_warp_size()", "__syncwarp();")
        };
        // The value of the loop variable in an iteration (a cooperative loop counts in 64 bits).
        let mut value = it.clone();
        if coop {
            // A cooperative loop: lane l of the warp runs lo + l, lo + l + 32, ..; all lanes wait
            // for each other after it (their writes are then visible to the whole warp). The
            // count and the steps are 64-bit offsets from `lo`, so no step wraps around `T`'s end
            // (`(gc_u64)` of a negative `lo` sign-extends: the difference is still exact).
            if self.block_coop() {
                // A block task's loop also starts with a barrier: what every thread read of the
                // block's data before the loop has been read before any iteration writes it.
                self.line("gc_block_sync();");
            }
            let (base, cnt) = (self.fresh("lo"), self.fresh("cnt"));
            self.line(&format!("{t} {base} = {lo};"));
            self.line(&format!("gc_u64 {cnt} = {base} < {end} ? (gc_u64){end} - (gc_u64){base} : (gc_u64)0;"));
            self.line(&format!("for (gc_u64 {it} = {first}; {it} < {cnt}; {it} += {step}) {{"));
            value = format!("({t})((gc_u64){base} + {it})");
            self.in_lanes = true;
        } else if f.inclusive {
            let go = self.fresh("go");
            self.line(&format!("bool {go} = {lo} <= {end};"));
            self.line(&format!(
                "for ({t} {it} = {lo}; {go}; {go} = {it} != {end}, {it} = {go} ? ({t})({it} + 1) : {it}) {{"
            ));
        } else {
            self.line(&format!("for ({t} {it} = {lo}; {it} < {end}; {it} = ({t})({it} + 1)) {{"));
        }
        self.depth += 1;
        self.push();
        let v = self.declare(&f.var, Some(ty.clone()));
        self.line(&format!("{t} {v} = {value};"));
        self.stmts(&f.body, None);
        self.pop();
        self.depth -= 1;
        self.line("}");
        if coop {
            self.in_lanes = false;
            self.line(wait);
        }
        self.depth -= 1;
        self.line("}");
    }

    /// `let s = shared!([v; N]);`: in a block task's cooperative entry a reference to the next
    /// `N` elements of the block's scratch, which the block fills with `v` and then waits for
    /// (every thread runs it: check allows it at the top level only); elsewhere the local
    /// `[v; N]`.
    fn shared_let(&mut self, l: &crate::ir::Let, rest: &[Stmt], tail: Option<&Expr>) {
        let Some((_, Some(repeat))) = l.init.as_ref().and_then(crate::syntax::as_shared) else { return };
        let repeat = Expr::Repeat(repeat);
        if !self.block_coop() {
            let plain = crate::ir::Let { init: Some(repeat), ..l.clone() };
            return self.stmt_inner(&Stmt::Let(plain), rest, tail);
        }
        let Some(Ty::Array(elem, n)) = l.ty.as_ref().map(ty_of_type).or_else(|| self.ty_of(&repeat)) else {
            let u = self.unsupported("a `shared!` array of unknown type", l.name.span());
            return self.line(&format!("{u};"));
        };
        let Expr::Repeat(r) = &repeat else { return };
        let v = self.expr(&r.expr, Some(&elem));
        let arr = Ty::Array(elem.clone(), n.clone()).cxx();
        let off = self.scratch_offset();
        self.scratch.push(format!("sizeof({arr})"));
        let name = self.declare(&l.name, Some(Ty::Array(elem.clone(), n.clone())));
        self.line(&format!("{arr}& {name} = *reinterpret_cast<{arr}*>(gc_scratch + ({off}));"));
        let it = self.fresh("i");
        self.line(&format!(
            "for (gc_u64 {it} = gc_block_thread(); {it} < (gc_u64)({n}); {it} += gc_block_threads()) {name}.v[{it}] = ({})({v});",
            elem.cxx()
        ));
        self.line("gc_block_sync();");
    }

    /// A return of `e` (freeing the task's live temporaries).
    pub(super) fn ret(&mut self, e: Option<&Expr>) {
        let v = match (e, &self.ret) {
            (Some(e), Some(t)) => {
                let t = t.clone();
                self.expr(e, Some(&t))
            }
            (Some(e), None) => {
                if !matches!(e, Expr::Tuple(t) if t.elems.is_empty()) {
                    self.expr_stmt(e);
                }
                "gc_unit{}".into()
            }
            (None, _) => "gc_unit{}".into(),
        };
        let frees: Vec<String> = self.temps.iter().map(|t| format!("gc_free_temp(cx, {t});")).collect();
        match self.mode {
            Mode::Segment => {
                self.line(&format!("*ret = {v};"));
                for f in &frees {
                    self.line(f);
                }
                self.line("return false;");
            }
            Mode::Device if frees.is_empty() => self.line(&format!("return {v};")),
            Mode::Device => {
                let rv = self.fresh("rv");
                let t = self.ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx);
                self.line("{");
                self.depth += 1;
                self.line(&format!("{t} {rv} = {v};"));
                for f in &frees {
                    self.line(f);
                }
                self.line(&format!("return {rv};"));
                self.depth -= 1;
                self.line("}");
            }
        }
    }

    fn expr_stmt(&mut self, e: &Expr) {
        match e {
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    self.unsupported("a labelled `break` or `break` with a value", b.span());
                }
                self.line("break;");
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    self.unsupported("a labelled `continue`", c.span());
                }
                self.line("continue;");
            }
            Expr::Return(r) => self.ret(r.expr.as_deref()),
            Expr::Assign(a) => {
                let t = self.ty_of(&a.left);
                let rhs = self.expr(&a.right, t.as_ref());
                let lhs = self.expr(&a.left, None);
                self.line(&format!("{lhs} = {rhs};"));
            }
            Expr::Binary(b) if compound_fn(&b.op).is_some() => {
                let f = compound_fn(&b.op).unwrap_or_default();
                let t = self.ty_of(&b.left);
                let shift = f == "gc_shl" || f == "gc_shr";
                let rhs = self.expr(&b.right, if shift { None } else { t.as_ref() });
                let site = (f == "gc_div" || f == "gc_rem").then(|| self.site(b.op.span()));
                let simple = matches!(&*b.left, Expr::Path(_));
                let lhs = self.expr(&b.left, None);
                let place = if simple {
                    lhs
                } else {
                    let lv = self.fresh("lv");
                    self.line("{");
                    self.depth += 1;
                    self.line(&format!("auto& {lv} = {lhs};"));
                    lv
                };
                let value = match site {
                    Some(s) => format!("{f}(cx, {place}, {rhs}, {s})"),
                    None => format!("{f}({place}, {rhs})"),
                };
                self.line(&format!("{place} = {value};"));
                if !simple {
                    self.depth -= 1;
                    self.line("}");
                }
            }
            Expr::Paren(p) => self.expr_stmt(&p.expr),
            other => {
                let v = self.expr(other, None);
                self.line(&format!("{v};"));
            }
        }
    }

    /// The task's own output type, for a spawn of itself (`self_call`).
    fn self_output(&self, self_call: bool) -> Option<Ty> {
        let t = self.task?;
        if !self_call {
            return None;
        }
        t.output.as_ref().map(ty_of_type)
    }

    fn spawn(&mut self, site: &SpawnSite) {
        let callee = callee_cname(&site.path);
        let ctargs = callee_targs(&site.path);
        let self_call = self.task.is_some_and(|t| t.name == callee.as_str());
        let params: Vec<Option<Ty>> = match self.task {
            Some(t) if self_call => t.params.iter().map(|p| Some(ty_of_type(&p.ty))).collect(),
            _ => Vec::new(),
        };
        let args: Vec<String> = site
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| self.expr(a, params.get(i).cloned().flatten().as_ref()))
            .collect();
        // `priority = key`: evaluated in a statement before the call (its checks fault as on the
        // host), as its order-preserving u64 image. A serial device form runs the call at once, so there
        // it orders nothing; a segment hands it to `gc_spawn_prio` (the persistent scheduler's
        // ready heap, ready_heap.cuh; the levels scheduler ignores it).
        let priority = site.priority.as_ref().map(|p| {
            let key = self.expr(p, None);
            if self.mode == Mode::Device {
                self.line(&format!("(void)({key}); // priority: a serial call orders nothing"));
                String::new()
            } else {
                let k = self.fresh("prio");
                self.line(&format!("const gc_u64 {k} = gc_priority({key});"));
                k
            }
        });
        if self.mode == Mode::Device {
            self.helper(&site.path);
            let mut all = vec!["cx".to_string()];
            all.extend(args);
            let call = format!("{callee}_dev{ctargs}({})", all.join(", "));
            match &site.dest {
                Dest::Discard => self.line(&format!("{call};")),
                Dest::Local { name, decl: Some(d) } => {
                    let ty = d.ty.as_ref().map(ty_of_type).or_else(|| self.self_output(self_call));
                    let n = self.declare(name, ty.clone());
                    let t = ty.map_or("auto".to_string(), |t| t.cxx());
                    self.line(&format!("{t} {n} = {call};"));
                }
                Dest::Local { name, decl: None } => {
                    let n = self.expr(&syn::parse_quote!(#name), None);
                    self.line(&format!("{n} = {call};"));
                }
                Dest::Element { array, index } => {
                    let e: Expr = syn::parse_quote!(#array[#index]);
                    let lhs = self.expr(&e, None);
                    self.line(&format!("{lhs} = {call};"));
                }
            }
            return;
        }
        let task_cname = self.task_cname.clone();
        // A generic task's frame is named by its typedef (a template-id with several arguments
        // would split the macro's arguments).
        let frame = if self.targs.is_empty() { format!("{task_cname}_frame") } else { "Frame".to_string() };
        let own = format!("{task_cname}_task{}", self.targs);
        // `gc_spawn` returns the child's value when the scheduler ran it at once (inline), else a
        // placeholder the child's result replaces in the frame: either way the destination local
        // takes it, so the frame this segment stores is right.
        let (target, offset) = match &site.dest {
            Dest::Discard => (None, "~0ull".to_string()),
            Dest::Local { name, decl } => {
                if let Some(d) = decl {
                    let ty =
                        d.ty.as_ref()
                            .map(ty_of_type)
                            .or_else(|| self.self_output(self_call))
                            .unwrap_or_else(|| Ty::Named(format!("{callee}_ret{ctargs}")));
                    let n = self.declare(name, Some(ty.clone()));
                    self.line(&format!("{} {n} = {}();", ty.cxx(), ty.cxx()));
                }
                let local = self.expr(&syn::parse_quote!(#name), None);
                (Some(local), format!("GC_OFFSETOF({frame}, {})", mangle(&name.to_string())))
            }
            Dest::Element { array, index } => {
                let arr = self.expr(&syn::parse_quote!(#array), None);
                let idx = self.expr(index, Some(&prim("usize")));
                let idx = strip_usize_cast(&idx);
                let s = self.site(index.span());
                let i = self.fresh("i");
                self.line(&format!("const gc_u64 {i} = (gc_u64)({idx});"));
                (
                    Some(format!("{arr}.at(cx, {i}, {s})")),
                    format!(
                        "gc_elem_offset(cx, {arr}, GC_OFFSETOF({frame}, {}), {i}, {s})",
                        mangle(&array.to_string())
                    ),
                )
            }
        };
        let s = self.site(site.span);
        // The Args of a template instantiation is a dependent name: `typename`.
        let child = format!("{callee}_task{ctargs}");
        let child_args = if ctargs.is_empty() { format!("{child}::Args") } else { format!("typename {child}::Args") };
        let call = match priority {
            Some(k) => {
                format!("gc_spawn_prio<{own}, {child}>(cx, {child_args}{{{}}}, {offset}, {s}, {k})", args.join(", "))
            }
            None => format!("gc_spawn<{own}, {child}>(cx, {child_args}{{{}}}, {offset}, {s})", args.join(", ")),
        };
        match target {
            Some(t) => self.line(&format!("{t} = {call};")),
            None => self.line(&format!("{call};")),
        }
    }
}
