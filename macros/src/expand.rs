//! IR → Rust tokens: the serial function and the task module.
//!
//! This module owns the Rust emitter. For `#[gpu_cilk] fn f(..) -> R { .. }` it produces:
//!
//! 1. the plain serial function `f` (spawn = call, sync = nothing), the oracle;
//! 2. `mod f` with `Args` (the parameters, `#[repr(C)]`), `Frame` (the frame fields,
//!    `#[repr(C)]`), the marker `Task`, the constructors `args(..)` and `task(..)`, and
//!    `impl CilkTask for Task` whose `prespawn`/`resume` are the segments.
//!
//! Generated locals (`__args`, `__cx`, `__frame`, `__segment`, `__f`, `__reg`) are created with
//! `Span::mixed_site()` so user code can neither see nor shadow them; user names keep their own
//! spans. Runtime items are named only as `::gpu_cilk::runtime::..`. Output order follows the IR,
//! which is deterministic (no hash iteration anywhere).

use crate::ir::{Dest, End, FieldType, For, If, Segment, SpawnSite, Stmt, Task};
use crate::parse::{self, MacroKind};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::visit_mut::VisitMut;
use syn::{Expr, ItemFn, Path, Type};

/// The serial function and the task module for a lowered `task` whose source is `item`.
pub fn expand_task(task: &Task, item: &ItemFn) -> TokenStream {
    let mut serial = serial_fn(item);
    // The subset has range loops but no iterators, so clippy's advice to iterate cannot be taken.
    serial.attrs.push(syn::parse_quote!(#[allow(clippy::needless_range_loop)]));
    let module = Emitter::new(task).module();
    let device = crate::write::task_static(task);
    quote! {
        #serial
        #device
        #module
    }
}

/// `item` with `spawn!(g(a))` replaced by `g(a)` and `sync!()` removed: the serial oracle.
///
/// Works on any input, also one that failed the checks (it is what the user gets beside the
/// errors, so the rest of the crate still type-checks): a `spawn!` whose body is not an
/// expression becomes `unreachable!()`.
pub fn serial_fn(item: &ItemFn) -> ItemFn {
    let mut out = item.clone();
    let mut ser = Serialize { allocs: false };
    ser.visit_block_mut(&mut out.block);
    let names: Vec<String> = parse::temp_names(item).iter().map(ToString::to_string).collect();
    if !names.is_empty() {
        TempIndex { names }.visit_block_mut(&mut out.block);
    }
    if ser.allocs {
        let scope = temp_scope_ident();
        out.block.stmts.insert(0, syn::parse_quote!(let #scope = ::gpu_cilk::runtime::TempScope::new();));
    }
    out
}

/// The serial function's `TempScope` guard (hygienic: user code cannot name it).
fn temp_scope_ident() -> syn::Ident {
    syn::Ident::new("__temps", Span::mixed_site())
}

/// Rewrites indexing of temporaries (by name): `t[i]` → `t.get(i)`, `t[i] = v` → `t.set(i, v)`,
/// `t[i] op= v` → `t.set(i, t.get(i) op v)` (the index evaluated once).
struct TempIndex {
    names: Vec<String>,
}

impl TempIndex {
    fn temp_base(&self, e: &Expr) -> Option<syn::Ident> {
        match e {
            Expr::Path(p) => parse::single_ident(p).filter(|n| self.names.iter().any(|t| n == t)),
            Expr::Paren(p) => self.temp_base(&p.expr),
            Expr::Group(g) => self.temp_base(&g.expr),
            _ => None,
        }
    }
}

fn compound_to_binary(op: &syn::BinOp) -> Option<TokenStream> {
    use syn::BinOp as B;
    Some(match op {
        B::AddAssign(_) => quote!(+),
        B::SubAssign(_) => quote!(-),
        B::MulAssign(_) => quote!(*),
        B::DivAssign(_) => quote!(/),
        B::RemAssign(_) => quote!(%),
        B::BitXorAssign(_) => quote!(^),
        B::BitAndAssign(_) => quote!(&),
        B::BitOrAssign(_) => quote!(|),
        B::ShlAssign(_) => quote!(<<),
        B::ShrAssign(_) => quote!(>>),
        _ => return None,
    })
}

impl VisitMut for TempIndex {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // Stores first (their left side must not become a `get`), then everything below.
        match e {
            Expr::Assign(a) => match &mut *a.left {
                Expr::Index(ix) if self.temp_base(&ix.expr).is_some() => {
                    self.visit_expr_mut(&mut ix.index);
                    self.visit_expr_mut(&mut a.right);
                }
                _ => syn::visit_mut::visit_expr_mut(self, e),
            },
            Expr::Binary(b) if compound_to_binary(&b.op).is_some() => match &mut *b.left {
                Expr::Index(ix) if self.temp_base(&ix.expr).is_some() => {
                    self.visit_expr_mut(&mut ix.index);
                    self.visit_expr_mut(&mut b.right);
                }
                _ => syn::visit_mut::visit_expr_mut(self, e),
            },
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
        let span = syn::spanned::Spanned::span(&*e);
        let new: Option<Expr> = match &*e {
            Expr::Assign(a) => match &*a.left {
                Expr::Index(ix) => self.temp_base(&ix.expr).map(|t| {
                    let (i, v) = (&ix.index, &a.right);
                    syn::parse_quote_spanned!(span=> #t.set(#i, #v))
                }),
                _ => None,
            },
            Expr::Binary(b) => match (&*b.left, compound_to_binary(&b.op)) {
                (Expr::Index(ix), Some(op)) => self.temp_base(&ix.expr).map(|t| {
                    let (i, v) = (&ix.index, &b.right);
                    let k = syn::Ident::new("__i", Span::mixed_site());
                    syn::parse_quote_spanned!(span=> { let #k: usize = #i; #t.set(#k, #t.get(#k) #op #v) })
                }),
                _ => None,
            },
            Expr::Index(ix) => self.temp_base(&ix.expr).map(|t| {
                let i = &ix.index;
                syn::parse_quote_spanned!(span=> #t.get(#i))
            }),
            _ => None,
        };
        if let Some(n) = new {
            *e = n;
        }
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
}

struct Serialize {
    allocs: bool,
}

impl Serialize {
    fn call_of(mac: &syn::Macro) -> Expr {
        match mac.parse_body::<Expr>() {
            Ok(mut e) => {
                Serialize { allocs: false }.visit_expr_mut(&mut e);
                e
            }
            Err(_) => syn::parse_quote_spanned!(mac.delimiter.span().join()=> ::core::unreachable!()),
        }
    }
}

impl VisitMut for Serialize {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let stmts = std::mem::take(&mut b.stmts);
        for mut s in stmts {
            let kind = match &s {
                syn::Stmt::Macro(m) => parse::macro_kind(&m.mac).map(|k| (k, m.mac.clone())),
                syn::Stmt::Expr(Expr::Macro(m), _) => parse::macro_kind(&m.mac).map(|k| (k, m.mac.clone())),
                _ => None,
            };
            match kind {
                Some((MacroKind::Sync, _)) => continue,
                Some((MacroKind::Alloc, mac)) => {
                    let span = mac.delimiter.span().join();
                    b.stmts.push(syn::parse_quote_spanned!(span=> ::core::unreachable!();));
                }
                Some((MacroKind::Spawn, mac)) => {
                    let call = Self::call_of(&mac);
                    b.stmts.push(syn::Stmt::Expr(call, Some(Default::default())));
                }
                None => {
                    self.visit_stmt_mut(&mut s);
                    b.stmts.push(s);
                }
            }
        }
    }

    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        if let Some(init) = &mut l.init {
            if let Some(mac) = parse::as_alloc(&init.expr) {
                if let Ok((ty, mut len)) = parse::alloc_args(mac) {
                    self.visit_expr_mut(&mut len);
                    let span = mac.delimiter.span().join();
                    self.allocs = true;
                    let scope = temp_scope_ident();
                    *init.expr = syn::parse_quote_spanned!(span=> #scope.alloc::<#ty>(#len));
                    return;
                }
            }
        }
        syn::visit_mut::visit_local_mut(self, l);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Macro(m) = e {
            match parse::macro_kind(&m.mac) {
                Some(MacroKind::Spawn) => *e = Self::call_of(&m.mac),
                Some(MacroKind::Sync) => *e = syn::parse_quote!(()),
                // Only as a `let` initializer (`visit_local_mut`); anywhere else it was rejected.
                Some(MacroKind::Alloc) => {
                    let span = m.mac.delimiter.span().join();
                    *e = syn::parse_quote_spanned!(span=> ::core::unreachable!());
                }
                None => {}
            }
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Rewrites `return e` into `return Step::Return(e)` inside user expressions; `frees` (the
/// task's live temporaries) run after `e` is evaluated.
struct Returns<'a> {
    frees: &'a TokenStream,
}

impl VisitMut for Returns<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Expr::Return(r) = e {
            let span = r.return_token.span;
            let value = match r.expr.take() {
                Some(v) => quote!(#v),
                None => quote!(()),
            };
            r.expr = Some(Box::new(step_return(span, value, self.frees)));
        }
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
}

/// `Step::Return(value)`, or `{ let v = value; <frees> Step::Return(v) }` when temporaries are live.
fn step_return(span: Span, value: TokenStream, frees: &TokenStream) -> Expr {
    if frees.is_empty() {
        return syn::parse_quote_spanned!(span=> ::gpu_cilk::runtime::Step::Return(#value));
    }
    let v = syn::Ident::new("__value", Span::mixed_site());
    syn::parse_quote_spanned!(span=> { let #v = #value; #frees ::gpu_cilk::runtime::Step::Return(#v) })
}

/// A callee path as seen from inside the generated module (`self::g` → `super::g`,
/// `super::g` → `super::super::g`; everything else resolves through `use super::*`).
fn module_relative(p: &Path) -> TokenStream {
    match p.segments.first() {
        Some(first) if p.leading_colon.is_none() && first.ident == "self" => {
            let rest = p.segments.iter().skip(1);
            quote!(super #(:: #rest)*)
        }
        Some(first) if p.leading_colon.is_none() && first.ident == "super" => quote!(super::#p),
        _ => quote!(#p),
    }
}

struct Emitter<'t> {
    task: &'t Task,
    cx: syn::Ident,
    args: syn::Ident,
    frame: syn::Ident,
    segment: syn::Ident,
    f: syn::Ident,
    reg: syn::Ident,
    spawner: syn::Ident,
    /// Names indexed as temporaries (`Temp` parameters and `alloc!` locals).
    temp_names: Vec<String>,
    /// The temporaries allocated by this task that are in scope at the statement being emitted.
    live: std::cell::RefCell<Vec<syn::Ident>>,
}

impl<'t> Emitter<'t> {
    /// A user expression with temporaries' indexing rewritten and `return`s made task returns.
    fn rw(&self, e: &Expr) -> Expr {
        let mut e = e.clone();
        if !self.temp_names.is_empty() {
            TempIndex { names: self.temp_names.clone() }.visit_expr_mut(&mut e);
        }
        let frees = self.frees();
        Returns { frees: &frees }.visit_expr_mut(&mut e);
        e
    }

    /// `__cx.free_temp(t);` for every live temporary.
    fn frees(&self) -> TokenStream {
        let cx = &self.cx;
        let live = self.live.borrow();
        quote!(#(#cx.free_temp(#live);)*)
    }

    fn new(task: &'t Task) -> Self {
        let id = |s: &str| syn::Ident::new(s, Span::mixed_site());
        Emitter {
            task,
            cx: id("__cx"),
            args: id("__args"),
            frame: id("__frame"),
            segment: id("__segment"),
            f: id("__f"),
            reg: id("__reg"),
            spawner: id("__S"),
            temp_names: task
                .params
                .iter()
                .filter(|p| parse::temp_type_elem(&p.ty).is_some())
                .map(|p| p.name.to_string())
                .chain(task.frame.iter().filter(|f| f.temp).map(|f| f.name.to_string()))
                .collect(),
            live: std::cell::RefCell::new(Vec::new()),
        }
    }

    fn output(&self) -> TokenStream {
        match &self.task.output {
            Some(t) => quote!(#t),
            None => quote!(()),
        }
    }

    fn callee_task(&self, callee: usize) -> TokenStream {
        match self.task.callees.get(callee) {
            Some(c) => {
                let p = module_relative(&c.path);
                quote!(#p::Task)
            }
            None => quote!(::core::compile_error!("gpu-cilk internal error: unknown callee")),
        }
    }

    fn field_type(&self, ty: &FieldType) -> TokenStream {
        match ty {
            FieldType::Declared(t) => quote!(#t),
            FieldType::OutputOf(c) => {
                let t = self.callee_task(*c);
                quote!(<#t as ::gpu_cilk::runtime::CilkTask>::Output)
            }
        }
    }

    fn default_of(ty: &FieldType) -> TokenStream {
        match ty {
            FieldType::Declared(t) => Self::default_of_type(t),
            FieldType::OutputOf(_) => quote!(::core::default::Default::default()),
        }
    }

    /// `Default::default()`, or `[d; N]` for arrays (any `N`, unlike `<[T; N]>::default()`).
    fn default_of_type(ty: &Type) -> TokenStream {
        match ty {
            Type::Array(a) => {
                let inner = Self::default_of_type(&a.elem);
                let len = &a.len;
                quote!([#inner; #len])
            }
            Type::Paren(p) => Self::default_of_type(&p.elem),
            _ => quote!(::core::default::Default::default()),
        }
    }

    fn module(&self) -> TokenStream {
        let t = self.task;
        let name = &t.name;
        let vis = &t.vis;
        let name_str = name.to_string();
        let output = self.output();
        let (args_id, frame_id, segment_id, cx_id, reg_id, s_id) =
            (&self.args, &self.frame, &self.segment, &self.cx, &self.reg, &self.spawner);
        let pnames: Vec<_> = t.params.iter().map(|p| &p.name).collect();
        let ptypes: Vec<_> = t.params.iter().map(|p| &p.ty).collect();
        let pbinds: Vec<_> = t
            .params
            .iter()
            .map(|p| {
                let n = &p.name;
                if p.mutable {
                    quote!(mut #n)
                } else {
                    quote!(#n)
                }
            })
            .collect();
        let fnames: Vec<_> = t.frame.iter().map(|f| &f.name).collect();
        let ftypes: Vec<_> = t.frame.iter().map(|f| self.field_type(&f.ty)).collect();
        let syncs = t.syncs();
        let syncs_lit = proc_macro2::Literal::usize_unsuffixed(syncs);
        let fanout = match t.fanout {
            Some(n) => {
                let n = proc_macro2::Literal::usize_unsuffixed(n);
                quote!(::core::option::Option::Some(#n))
            }
            None => quote!(::core::option::Option::None),
        };
        let prespawn = t.segments.first().map(|s| self.segment_body(s)).unwrap_or_default();
        let arms = t.segments.iter().skip(1).map(|s| {
            let k = proc_macro2::Literal::usize_unsuffixed(s.index);
            let body = self.segment_body(s);
            quote!(#k => { #body })
        });
        let unreachable = format!("`{name_str}` has {syncs} continuation{}", if syncs == 1 { "" } else { "s" });
        let registers = (0..t.callees.len()).map(|c| {
            let ct = self.callee_task(c);
            quote!(<#ct as ::gpu_cilk::runtime::CilkTask>::register(#reg_id);)
        });
        let cuda = crate::write::cuda_const(t);
        let doc = format!(
            " The task descriptor of the function `{name_str}`, generated by `#[gpu_cilk]`: run it with \
             `runtime.run({name_str}::task(..))`."
        );
        quote! {
            #[doc = #doc]
            #vis mod #name {
                #![allow(
                    unused,
                    non_snake_case,
                    non_camel_case_types,
                    non_upper_case_globals,
                    missing_docs,
                    private_interfaces,
                    private_bounds,
                    clippy::all
                )]
                use super::*;

                /// The parameters: one channel element of this task.
                #[repr(C)]
                #[derive(Clone, Copy, Debug)]
                pub struct Args {
                    #(pub #pnames: #ptypes,)*
                }

                /// The continuation frame: locals that live across a `sync!()` and spawn destinations.
                #[repr(C)]
                pub struct Frame {
                    #(pub #fnames: #ftypes,)*
                }

                /// The marker type that implements `CilkTask`.
                pub struct Task;

                /// The channel element for a call with these arguments.
                pub fn args(#(#pnames: #ptypes),*) -> Args {
                    Args { #(#pnames),* }
                }

                /// A root invocation: `runtime.run(task(..))`.
                pub fn task(#(#pnames: #ptypes),*) -> ::gpu_cilk::runtime::Call<Task> {
                    ::gpu_cilk::runtime::Call::new(args(#(#pnames),*))
                }

                impl ::gpu_cilk::runtime::CilkTask for Task {
                    type Args = Args;
                    type Frame = Frame;
                    type Output = #output;
                    const NAME: &'static str = #name_str;
                    const SYNCS: usize = #syncs_lit;
                    const FANOUT: ::core::option::Option<usize> = #fanout;
                    #cuda

                    fn serial(#args_id: Args) -> #output {
                        let Args { #(#pnames),* } = #args_id;
                        super::#name(#(#pnames),*)
                    }

                    fn prespawn<#s_id: ::gpu_cilk::runtime::Spawn<Self>>(
                        #args_id: Args,
                        #cx_id: &mut #s_id,
                    ) -> ::gpu_cilk::runtime::Step<Self> {
                        let Args { #(#pbinds),* } = #args_id;
                        #prespawn
                    }

                    fn resume<#s_id: ::gpu_cilk::runtime::Spawn<Self>>(
                        #segment_id: usize,
                        #frame_id: Frame,
                        #cx_id: &mut #s_id,
                    ) -> ::gpu_cilk::runtime::Step<Self> {
                        match #segment_id {
                            #(#arms)*
                            _ => ::core::unreachable!(#unreachable),
                        }
                    }

                    fn register(#reg_id: &mut ::gpu_cilk::runtime::Registry) {
                        if #reg_id.add::<Self>() {
                            #(#registers)*
                        }
                    }
                }
            }
        }
    }

    fn segment_body(&self, seg: &Segment) -> TokenStream {
        let t = self.task;
        let frame_id = &self.frame;
        let restore = if seg.index == 0 {
            quote!()
        } else {
            let binds = seg.restores.iter().filter_map(|&i| t.frame.get(i)).map(|f| {
                let n = &f.name;
                if f.mutable {
                    quote!(mut #n)
                } else {
                    quote!(#n)
                }
            });
            let rest = if seg.restores.len() < t.frame.len() { quote!(..) } else { quote!() };
            quote!(let Frame { #(#binds,)* #rest } = #frame_id;)
        };
        *self.live.borrow_mut() =
            t.frame.iter().filter(|f| f.temp && f.segment < seg.index).map(|f| f.name.clone()).collect();
        let body = self.stmts(&seg.body);
        let end = match &seg.end {
            End::Sync => {
                let inits = t.frame.iter().map(|f| {
                    let n = &f.name;
                    if f.segment <= seg.index {
                        quote!(#n)
                    } else {
                        let d = Self::default_of(&f.ty);
                        quote!(#n: #d)
                    }
                });
                quote!(::gpu_cilk::runtime::Step::Sync(Frame { #(#inits),* }))
            }
            End::Tail(e) => {
                let e = self.rw(e);
                let r = step_return(Span::mixed_site(), quote!(#e), &self.frees());
                quote!(#r)
            }
            End::FallOff if t.output.is_none() => {
                let r = step_return(Span::mixed_site(), quote!(()), &self.frees());
                quote!(#r)
            }
            End::FallOff => quote!(),
        };
        quote! {
            #restore
            #body
            #end
        }
    }

    fn stmts(&self, stmts: &[Stmt]) -> TokenStream {
        stmts.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&self, s: &Stmt) -> TokenStream {
        match s {
            Stmt::Let(l) => {
                let n = &l.name;
                let m = l.mutable.then(|| quote!(mut));
                let ty = l.ty.as_ref().map(|t| quote!(: #t));
                if let Some(a) = &l.alloc {
                    let (cx, elem, len) = (&self.cx, &a.elem, self.rw(&a.len));
                    let v = syn::Ident::new("__temp", Span::mixed_site());
                    let alloc = format_ident!("alloc_temp", span = a.span);
                    // On failure the scheduler records the error (naming the task and the size) and
                    // fails the run; the segment just ends.
                    let out = quote! {
                        let #m #n #ty = match #cx.#alloc::<#elem>(#len) {
                            ::core::option::Option::Some(#v) => #v,
                            ::core::option::Option::None => {
                                return ::gpu_cilk::runtime::Step::Return(::core::default::Default::default())
                            }
                        };
                    };
                    self.live.borrow_mut().push(n.clone());
                    return out;
                }
                let init = l.init.as_ref().map(|e| {
                    let e = self.rw(e);
                    quote!(= #e)
                });
                quote!(let #m #n #ty #init;)
            }
            Stmt::Spawn(site) => self.spawn(site),
            Stmt::If(i) => self.if_stmt(i),
            Stmt::While { cond, body } => {
                let cond = self.rw(cond);
                let body = self.stmts(body);
                quote!(while #cond { #body })
            }
            Stmt::Loop { body } => {
                let body = self.stmts(body);
                quote!(loop { #body })
            }
            Stmt::For(f) => self.for_stmt(f),
            Stmt::Block(b) => {
                let body = self.stmts(b);
                quote!({ #body })
            }
            Stmt::Return(e) => {
                let v = match e {
                    Some(e) => {
                        let e = self.rw(e);
                        quote!(#e)
                    }
                    None => quote!(()),
                };
                let r = step_return(Span::mixed_site(), v, &self.frees());
                quote!(return #r;)
            }
            Stmt::Expr { expr, semi } => {
                let e = self.rw(expr);
                let semi = semi.then(|| quote!(;));
                quote!(#e #semi)
            }
            Stmt::Sync(span) => {
                quote_spanned!(*span=> ::core::compile_error!("gpu-cilk internal error: sync!() inside a segment");)
            }
        }
    }

    fn if_stmt(&self, i: &If) -> TokenStream {
        let cond = self.rw(&i.cond);
        let then = self.stmts(&i.then);
        let els = match &i.els {
            None => quote!(),
            Some(e) if i.else_if => {
                let inner = self.stmts(e);
                quote!(else #inner)
            }
            Some(e) => {
                let inner = self.stmts(e);
                quote!(else { #inner })
            }
        };
        quote!(if #cond { #then } #els)
    }

    fn for_stmt(&self, f: &For) -> TokenStream {
        let var = &f.var;
        let m = f.mutable.then(|| quote!(mut));
        let start = self.rw(&f.start);
        let end = self.rw(&f.end);
        let op = if f.inclusive { quote!(..=) } else { quote!(..) };
        let body = self.stmts(&f.body);
        quote!(for #m #var in #start #op #end { #body })
    }

    fn spawn(&self, site: &SpawnSite) -> TokenStream {
        let cx = &self.cx;
        let f = &self.f;
        let callee = self.task.callees.get(site.callee).map(|c| module_relative(&c.path));
        let callee = callee.unwrap_or_else(|| module_relative(&site.path));
        let args = site.args.iter().map(|a| self.rw(a));
        let (decl, place) = match &site.dest {
            Dest::Discard => (quote!(), quote!(::gpu_cilk::runtime::Place::discard())),
            Dest::Local { name, decl } => {
                let decl = match decl {
                    None => quote!(),
                    Some(d) => {
                        let m = d.mutable.then(|| quote!(mut));
                        let ty = match &d.ty {
                            Some(t) => quote!(#t),
                            None => quote!(<#callee::Task as ::gpu_cilk::runtime::CilkTask>::Output),
                        };
                        let init = match &d.ty {
                            Some(t) => Self::default_of_type(t),
                            None => quote!(::core::default::Default::default()),
                        };
                        quote!(let #m #name: #ty = #init;)
                    }
                };
                (
                    decl,
                    quote!(::gpu_cilk::runtime::Place::field(
                        ::core::mem::offset_of!(Frame, #name),
                        |#f: &Frame| &#f.#name
                    )),
                )
            }
            Dest::Element { array, index } => {
                let index = self.rw(index);
                (
                    quote!(),
                    quote!(::gpu_cilk::runtime::Place::element(
                        ::core::mem::offset_of!(Frame, #array),
                        #index,
                        |#f: &Frame| &#f.#array
                    )),
                )
            }
        };
        let span = site.span;
        let spawn = format_ident!("spawn", span = span);
        quote! {
            #decl
            #cx.#spawn::<#callee::Task>(#callee::args(#(#args),*), #place);
        }
    }
}
