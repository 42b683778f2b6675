//! IR → Rust tokens: the serial function and the task module (and a helper's module).
//!
//! This module owns the Rust emitter. For `#[gpu_cilk] fn f(..) -> R { .. }` it produces:
//!
//! 1. the plain serial function `f` (spawn = call, sync = nothing), the oracle (`serial`);
//! 2. the task module, `mod __gpu_cilk_task_f` re-exported as `f` (see `naming`), with `Args`
//!    (the parameters, `#[repr(C)]`), `Frame` (the frame fields, `#[repr(C)]`), the marker `Task`, the constructors `args(..)` and `task(..)`, `Output`, and
//!    `impl CilkTask for Task` whose `prespawn`/`resume` are the segments and whose `CUDA` is the
//!    fragment that `write` wrote; beside it the device form `Device` + `__DEVICE` (`cuda`) and
//!    the names of the functions it spawns and calls, with their stand-ins (`callees`). How a
//!    parameter is stored in `Args`/`Frame` (slices as `RawSlice`) is `stored`'s.
//!
//! For `#[gpu_cilk::device] fn h` it produces `h` unchanged and its module (`h`, declared as
//! `__gpu_cilk_device_h`) with the device form ([`helper_module`]).
//!
//! Generated locals (`__args`, `__cx`, `__frame`, `__segment`, `__f`, `__reg`) are created with
//! `Span::mixed_site()` so user code can neither see nor shadow them; user names keep their own
//! spans. Runtime items are named only as `::gpu_cilk::runtime::..`. Output order follows the IR,
//! which is deterministic (no hash iteration anywhere).

mod callees;
mod cuda;
mod naming;
mod serial;
mod stored;

pub use cuda::{device_struct_impl, helper_module};
mod race_witness;
pub use serial::serial_fn;

use crate::ir::{Dest, DeviceText, End, FieldType, For, Fragment, If, Machine, Segment, SpawnSite, Stmt, Task, Term};
use crate::syntax;
use callees::Callees;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use serial::TempIndex;
use stored::{bound_elem, from_stored, stored_type, to_stored};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, ItemFn, Path, Type};

/// The serial function and the task module for a lowered `task` whose source is `item`;
/// `fragment` and `device` are the task's CUDA text (written by `write`).
pub fn expand_task(task: &Task, item: &ItemFn, fragment: &Fragment, device: &DeviceText) -> TokenStream {
    // Spawns given one slice at once must borrow-check as simultaneous borrows (race_witness).
    let mut serial = match &task.host {
        Some(host) => serial_fn(&host_form(item, host)),
        None => serial_fn(&race_witness::with_witnesses(item)),
    };
    // The subset has range loops but no iterators, so clippy's advice to iterate cannot be taken.
    serial.attrs.push(syn::parse_quote!(#[allow(clippy::needless_range_loop)]));
    let module = Emitter::new(task).module(fragment, device);
    quote! {
        #serial
        #module
    }
}

/// `item` with the body `{ host(params..) }` (a task's host form, `crate::host`).
fn host_form(item: &ItemFn, host: &syn::Path) -> ItemFn {
    let params = item.sig.inputs.iter().filter_map(|arg| match arg {
        syn::FnArg::Typed(pt) => match &*pt.pat {
            syn::Pat::Ident(pi) => Some(pi.ident.clone()),
            _ => None,
        },
        syn::FnArg::Receiver(_) => None,
    });
    let mut out = item.clone();
    out.block = syn::parse_quote!({ #host(#(#params),*) });
    out
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

struct Emitter<'t> {
    task: &'t Task,
    cx: syn::Ident,
    args: syn::Ident,
    frame: syn::Ident,
    segment: syn::Ident,
    /// The parameter of a `Place`'s witness closure (`|__f: &Frame| &__f.x`).
    place_frame: syn::Ident,
    registry: syn::Ident,
    /// The generic parameter of `prespawn`/`resume` (the scheduler's `Spawn` implementation).
    spawner: syn::Ident,
    /// The current block of a [`crate::ir::Machine`] (`__block`) and the label of its loop.
    block: syn::Ident,
    label: syn::Lifetime,
    /// Names indexed as temporaries (`Temp` parameters and `alloc!` locals).
    temp_names: Vec<String>,
    /// The temporaries allocated by this task that are in scope at the statement being emitted.
    live: std::cell::RefCell<Vec<syn::Ident>>,
}

/// `let [mut] name: &[mut] [T] = unsafe { name.as_..() };` for a slice parameter at the start of
/// a segment. SAFETY (of the emitted block): the pair came from the root call's borrow or from a
/// parent's sub-slice, both valid until this task ends (runtime `slice` module, rules 1 and 2).
fn rebind_slice(name: &syn::Ident, mutable: bool, ty: &Type) -> TokenStream {
    match from_stored(name, ty) {
        Some(_) if syntax::view_type(ty).is_some() => {
            // A view keeps its raw pair for the frame (`stored::raw_name`).
            let m = mutable.then(|| quote!(mut));
            let raw = stored::raw_name(name);
            let e = from_stored(&raw, ty);
            quote!(let #raw = #name; let #m #name: #ty = #e;)
        }
        Some(e) => {
            let m = mutable.then(|| quote!(mut));
            quote!(let #m #name: #ty = #e;)
        }
        None => quote!(),
    }
}

impl<'t> Emitter<'t> {
    /// A user expression with temporaries' indexing rewritten and `return`s made task returns.
    fn user_expr(&self, e: &Expr) -> Expr {
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
        // SAFETY (of the emitted block): a task frees its temporaries only at its returns, after
        // its children (`lower::temps`), and no `Temp` leaves the task (it cannot be returned,
        // stored in a struct or a bound), so no copy is used after the free.
        quote!(#(unsafe { #cx.free_temp(#live) };)*)
    }

    fn new(task: &'t Task) -> Self {
        let id = |s: &str| syn::Ident::new(s, Span::mixed_site());
        Emitter {
            task,
            cx: id("__cx"),
            args: id("__args"),
            frame: id("__frame"),
            segment: id("__segment"),
            place_frame: id("__f"),
            registry: id("__reg"),
            spawner: id("__S"),
            block: id("__block"),
            label: syn::Lifetime::new("'__gc_machine", Span::mixed_site()),
            temp_names: task
                .params
                .iter()
                .filter(|p| syntax::temp_type_elem(&p.ty).is_some())
                .map(|p| p.name.to_string())
                .chain(task.frame.iter().filter(|f| f.temp).map(|f| f.name.to_string()))
                .collect(),
            live: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// `<T: Key, ..>` for a generic task's items, empty otherwise.
    fn gen_decl(&self) -> TokenStream {
        let g = &self.task.generics;
        if g.is_empty() {
            return quote!();
        }
        quote!(<#(#g: ::gpu_cilk::runtime::Key),*>)
    }

    /// `<T, ..>` after a generic task's item names, empty otherwise.
    fn gen_use(&self) -> TokenStream {
        let g = &self.task.generics;
        if g.is_empty() {
            return quote!();
        }
        quote!(<#(#g),*>)
    }

    /// The type parameters that `Frame`'s fields mention (a frame without them is not generic).
    fn frame_generics(&self) -> Vec<&syn::Ident> {
        let t = self.task;
        t.generics
            .iter()
            .filter(|g| {
                t.frame.iter().any(|f| match &f.ty {
                    FieldType::Declared(ty) => syntax::mentions(ty, g),
                    FieldType::OutputOf(c) => self
                        .callee_path(*c)
                        .is_some_and(|p| syntax::split_type_args(p).1.iter().any(|a| syntax::mentions(a, g))),
                })
            })
            .collect()
    }

    /// `Frame`, or `Frame<T: Key, ..>` with the type parameters it mentions (its declaration).
    fn frame_decl(&self) -> TokenStream {
        let g = self.frame_generics();
        if g.is_empty() {
            return quote!(Frame);
        }
        quote!(Frame<#(#g: ::gpu_cilk::runtime::Key),*>)
    }

    /// `Frame`, or `Frame<T, ..>` with the type parameters it mentions.
    fn frame_ty(&self) -> TokenStream {
        let g = self.frame_generics();
        if g.is_empty() {
            return quote!(Frame);
        }
        quote!(Frame<#(#g),*>)
    }

    fn output(&self) -> TokenStream {
        match &self.task.output {
            Some(t) => quote!(#t),
            None => quote!(()),
        }
    }

    /// The callee's path as first spawned (its span is that spawn's).
    fn callee_path(&self, callee: usize) -> Option<&Path> {
        self.task.callees.get(callee).map(|c| &c.path)
    }

    /// A frame field's type: a spawned child's result is `<callee>::Output`, a plain type also when
    /// the callee is not a task (see `callees`), so the frame itself never fails to compile.
    fn field_type(&self, ty: &FieldType) -> TokenStream {
        match ty {
            FieldType::Declared(t) => stored_type(t),
            FieldType::OutputOf(c) => match self.callee_path(*c) {
                Some(p) => output_of(p),
                None => quote!(::core::compile_error!("gpu-cilk internal error: unknown callee")),
            },
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

    fn module(&self, fragment: &Fragment, device: &DeviceText) -> TokenStream {
        let t = self.task;
        let name = &t.name;
        let vis = &t.vis;
        let name_str = name.to_string();
        let output = self.output();
        let (args_id, frame_id, segment_id, cx_id, registry_id, spawner_id) =
            (&self.args, &self.frame, &self.segment, &self.cx, &self.registry, &self.spawner);
        let param_names: Vec<_> = t.params.iter().map(|p| &p.name).collect();
        let param_types: Vec<_> = t.params.iter().map(|p| &p.ty).collect();
        let stored_types: Vec<_> = t.params.iter().map(|p| stored_type(&p.ty)).collect();
        let slices: Vec<_> = t.params.iter().filter_map(|p| syntax::slice_type(&p.ty).map(|s| (p, s))).collect();
        let bounds: Vec<_> = t.params.iter().filter_map(|p| bound_elem(&p.ty).map(|b| (p, b))).collect();
        let stored_inits: Vec<_> = t.params.iter().map(|p| to_stored(&p.name, &p.ty)).collect();
        let serial_args: Vec<_> = t
            .params
            .iter()
            .map(|p| {
                let n = &p.name;
                from_stored(n, &p.ty).unwrap_or_else(|| quote!(#n))
            })
            .collect();
        // `args`/`task`: a task with slice parameters makes `Args` only under the borrow of a
        // `Call<'a, _>` (runtime `slice` module, rule 1); any other task's `Args` borrow nothing.
        let (gdecl, guse) = (self.gen_decl(), self.gen_use());
        let frame_ty = self.frame_ty();
        let frame_decl = self.frame_decl();
        let generic_params = &t.generics;
        let constructors = if slices.is_empty() && bounds.is_empty() {
            quote! {
                /// The channel element for a call with these arguments.
                pub fn args #gdecl (#(#param_names: #param_types),*) -> Args #guse {
                    Args { #(#param_names),* }
                }

                /// A root invocation: `runtime.run(task(..))`.
                pub fn task #gdecl (#(#param_names: #param_types),*) -> ::gpu_cilk::runtime::Call<'static, Task #guse> {
                    ::gpu_cilk::runtime::Call::new(args(#(#param_names),*))
                }

                impl #gdecl ::gpu_cilk::runtime::OwnedArgs for Args #guse {}
            }
        } else {
            let lt = syn::Lifetime::new("'__gc_borrow", Span::mixed_site());
            let borrowed = t.params.iter().map(|p| match syntax::slice_type(&p.ty) {
                Some((true, e)) if syntax::view_type(&p.ty).is_some() => quote!(::gpu_cilk::runtime::MatMut<#lt, #e>),
                Some((false, e)) if syntax::view_type(&p.ty).is_some() => quote!(::gpu_cilk::runtime::Mat<#lt, #e>),
                Some((true, e)) => quote!(&#lt mut [#e]),
                Some((false, e)) => quote!(&#lt [#e]),
                None if bound_elem(&p.ty).is_some() => {
                    let b = bound_elem(&p.ty);
                    quote!(&#lt #b)
                }
                None => {
                    let ty = &p.ty;
                    quote!(#ty)
                }
            });
            quote! {
                /// The channel element for a call with these arguments.
                ///
                /// # Safety
                /// The slices must stay valid, and the `&mut` ones unaliased, for as long as any
                /// task may run with these `Args` (use `task(..)`, which ties them to its borrow).
                pub unsafe fn args #gdecl (#(#param_names: #param_types),*) -> Args #guse {
                    Args { #(#stored_inits),* }
                }

                /// A root invocation: `runtime.run(task(..))`. The call borrows the slices until
                /// the run that consumes it has ended.
                pub fn task<#lt #(, #generic_params: ::gpu_cilk::runtime::Key)*>(#(#param_names: #borrowed),*) -> ::gpu_cilk::runtime::Call<#lt, Task #guse> {
                    // SAFETY: the returned `Call` borrows every slice for `'__gc_borrow`, and a
                    // run consumes the call and ends before that borrow does.
                    ::gpu_cilk::runtime::Call::new(unsafe { args(#(#param_names),*) })
                }
            }
        };
        let slices_const = if slices.is_empty() && bounds.is_empty() {
            quote!()
        } else {
            let fields = slices.iter().map(|(p, (m, e))| {
                let (n, ns) = (&p.name, p.name.to_string());
                let view = syntax::view_type(&p.ty).is_some();
                quote! {
                    ::gpu_cilk::runtime::SliceField {
                        name: #ns,
                        offset: ::core::mem::offset_of!(Args #guse, #n),
                        elem_size: ::core::mem::size_of::<#e>(),
                        mutable: #m,
                        bound: false,
                        view: #view,
                    }
                }
            });
            let bound_fields = bounds.iter().map(|(p, b)| {
                let (n, ns) = (&p.name, p.name.to_string());
                quote! {
                    ::gpu_cilk::runtime::SliceField {
                        name: #ns,
                        offset: ::core::mem::offset_of!(Args #guse, #n),
                        elem_size: ::core::mem::size_of::<#b>(),
                        mutable: false,
                        bound: true,
                        view: false,
                    }
                }
            });
            quote!(const SLICES: &'static [::gpu_cilk::runtime::SliceField] = &[#(#fields,)* #(#bound_fields),*];)
        };
        let field_names: Vec<_> = t.frame.iter().map(|f| &f.name).collect();
        let field_types: Vec<_> = t.frame.iter().map(|f| self.field_type(&f.ty)).collect();
        let syncs = t.syncs();
        let syncs_lit = proc_macro2::Literal::usize_unsuffixed(syncs);
        let fanout = match t.fanout {
            Some(n) => {
                let n = proc_macro2::Literal::usize_unsuffixed(n);
                quote!(::core::option::Option::Some(#n))
            }
            None => quote!(::core::option::Option::None),
        };
        let unreachable = format!("`{name_str}` has {syncs} continuation{}", if syncs == 1 { "" } else { "s" });
        let machine_const = if t.machine.is_some() {
            quote!(
                const MACHINE: bool = true;
            )
        } else {
            quote!()
        };
        let (prespawn, resume, machine_fn, resume_field) = match &t.machine {
            None => {
                let prespawn = match &t.host {
                    // A leaf with a host form: the serial function is that form.
                    Some(_) => quote!(::gpu_cilk::runtime::Step::Return(
                        <Self as ::gpu_cilk::runtime::CilkTask>::serial(#args_id)
                    )),
                    None => t.segments.first().map(|s| self.segment_body(s)).unwrap_or_default(),
                };
                let arms: Vec<TokenStream> = t
                    .segments
                    .iter()
                    .skip(1)
                    .map(|s| {
                        let k = proc_macro2::Literal::usize_unsuffixed(s.index);
                        let body = self.segment_body(s);
                        quote!(#k => { #body })
                    })
                    .collect();
                let resume = quote! {
                    match #segment_id {
                        #(#arms)*
                        _ => ::core::unreachable!(#unreachable),
                    }
                };
                (prespawn, resume, quote!(), quote!())
            }
            Some(m) => {
                let inits = t.frame.iter().map(|f| {
                    let n = &f.name;
                    if f.origin == crate::ir::FieldOrigin::Param {
                        quote!(#n)
                    } else {
                        let d = Self::default_of(&f.ty);
                        quote!(#n: #d)
                    }
                });
                let prespawn = quote! {
                    let Args { #(#param_names),* } = #args_id;
                    __machine(Frame { __gc_resume: 0, #(#inits),* }, #cx_id)
                };
                let resume = quote!(__machine(#frame_id, #cx_id));
                let machine_fn = self.machine_fn(m);
                (prespawn, resume, machine_fn, quote!(pub __gc_resume: u32,))
            }
        };
        let registers = t.callees.iter().map(|c| {
            let ct = task_of(&c.path);
            quote_spanned!(c.path.span()=> <#ct as ::gpu_cilk::runtime::CilkTask>::register(#registry_id);)
        });
        let cuda = cuda::cuda_const(fragment, &t.structs);
        let args_layout = cuda::args_layout_const(&t.params, fragment, &quote!(Args #guse));
        // A generic task's `Output` is an alias of its instantiation's (`Output<T>`).
        let output_ty = if t.generics.is_empty() { quote!(Output) } else { output.clone() };
        let output_layout = cuda::output_layout_const(&t.output, &output_ty);
        // A generic task's `Device` has no one `Task` to name: it is a device form only.
        let device_items = cuda::device_items(device, t.generics.is_empty(), &t.structs);
        let (task_item, output_item, type_args) = if t.generics.is_empty() {
            (
                quote!(
                    pub struct Task;
                ),
                quote!(pub type Output = #output;),
                quote!(),
            )
        } else {
            (
                quote!(pub struct Task #guse(::core::marker::PhantomData<fn() -> (#(#generic_params,)*)>);),
                quote!(pub type Output #guse = <Task #guse as ::gpu_cilk::runtime::CilkTask>::Output;),
                quote!(const TYPE_ARGS: &'static [&'static str] = &[#(<#generic_params as ::gpu_cilk::runtime::Scalar>::CXX),*];),
            )
        };
        // The functions this task spawns (with the arity of their first spawn) or calls.
        let mut names = Callees::of(name, &naming::task_module(name));
        for site in t.segments.iter().flat_map(|s| spawn_sites(&s.body)) {
            names.add(&site.path, Some(site.args.len()));
        }
        for h in device.helpers.iter().chain(&fragment.helpers) {
            names.add(h, None);
        }
        let callee_items = names.items();
        let doc = format!(
            " The task descriptor of the function `{name_str}`, generated by `#[gpu_cilk]`: run it with \
             `runtime.run({name_str}::task(..))`."
        );
        let marker = naming::marker_item();
        let body = quote! {
                #![allow(
                    unused,
                    non_snake_case,
                    non_camel_case_types,
                    non_upper_case_globals,
                    missing_docs,
                    private_interfaces,
                    private_bounds,
                    unknown_or_malformed_diagnostic_attributes,
                    clippy::all
                )]
                use super::*;
                #marker
                #callee_items

                /// The parameters: one channel element of this task.
                #[repr(C)]
                #[derive(Clone, Copy, Debug)]
                pub struct Args #gdecl {
                    #(pub #param_names: #stored_types,)*
                }

                /// The continuation frame: locals that live across a `sync!()` and spawn destinations.
                #[repr(C)]
                pub struct #frame_decl {
                    #resume_field
                    #(pub #field_names: #field_types,)*
                }

                /// The marker type that implements `CilkTask`.
                #task_item

                #constructors

                /// The function's return type: how a spawning parent's frame stores the result.
                #output_item

                #device_items
                #machine_fn

                impl #gdecl ::gpu_cilk::runtime::CilkTask for Task #guse {
                    type Args = Args #guse;
                    type Frame = #frame_ty;
                    type Output = #output;
                    const NAME: &'static str = #name_str;
                    const SYNCS: usize = #syncs_lit;
                    const FANOUT: ::core::option::Option<usize> = #fanout;
                    #machine_const
                    #cuda
                    #args_layout
                    #output_layout
                    #slices_const
                    #type_args

                    fn serial(#args_id: Args #guse) -> #output {
                        let Args { #(#param_names),* } = #args_id;
                        // SAFETY (slices): as for a segment's parameters (`rebind_slice`).
                        super::#name(#(#serial_args),*)
                    }

                    fn prespawn<#spawner_id: ::gpu_cilk::runtime::Spawn<Self>>(
                        #args_id: Args #guse,
                        #cx_id: &mut #spawner_id,
                    ) -> ::gpu_cilk::runtime::Step<Self> {
                        #prespawn
                    }

                    fn resume<#spawner_id: ::gpu_cilk::runtime::Spawn<Self>>(
                        #segment_id: usize,
                        #frame_id: #frame_ty,
                        #cx_id: &mut #spawner_id,
                    ) -> ::gpu_cilk::runtime::Step<Self> {
                        #resume
                    }

                    fn register<#spawner_id: ::gpu_cilk::runtime::Registrar>(#registry_id: &mut #spawner_id) {
                        if #registry_id.add::<Self>() {
                            #(#registers)*
                        }
                    }
                }
        };
        naming::hidden_module(name, vis, &naming::task_module(name), &doc, "task", body)
    }

    fn segment_body(&self, seg: &Segment) -> TokenStream {
        let t = self.task;
        let frame_id = &self.frame;
        let restore = if seg.index == 0 {
            let args_id = &self.args;
            let binds = t.params.iter().map(|p| {
                let n = &p.name;
                if p.mutable {
                    quote!(mut #n)
                } else {
                    quote!(#n)
                }
            });
            let rebinds = t.params.iter().map(|p| rebind_slice(&p.name, p.mutable, &p.ty));
            quote!(let Args { #(#binds),* } = #args_id; #(#rebinds)*)
        } else {
            let restored: Vec<_> = seg.restores.iter().filter_map(|&i| t.frame.get(i)).collect();
            let binds = restored.iter().map(|f| {
                let n = &f.name;
                if f.mutable && !matches!(f.ty, FieldType::OutputOf(_)) {
                    quote!(mut #n)
                } else {
                    quote!(#n)
                }
            });
            // A child's result is read back through its callee's `TaskFunction::output` (the
            // identity for a task; the one error of a `spawn!` of anything else).
            let outputs = restored.iter().filter_map(|f| match f.ty {
                FieldType::OutputOf(c) => self.callee_path(c).map(|p| {
                    let m = f.mutable.then(|| quote!(mut));
                    let span = p.span();
                    let (n, value) = (&f.name, syn::Ident::new(&f.name.to_string(), span));
                    let module = callees::module_path(p);
                    if !syntax::split_type_args(p).1.is_empty() {
                        // A generic task's `Device` names no one `Task` (its type arguments do).
                        return quote_spanned!(span=> let #m #n = #value;);
                    }
                    quote_spanned! {span=>
                        let #m #n = <#module::Device as ::gpu_cilk::runtime::TaskFunction>::output(#value);
                    }
                }),
                FieldType::Declared(_) => None,
            });
            let rest = if seg.restores.len() < t.frame.len() { quote!(..) } else { quote!() };
            let rebinds = restored.iter().map(|f| match &f.ty {
                FieldType::Declared(ty) => rebind_slice(&f.name, f.mutable, ty),
                FieldType::OutputOf(_) => quote!(),
            });
            quote! {
                let Frame { #(#binds,)* #rest } = #frame_id;
                #(#outputs)*
                #(#rebinds)*
            }
        };
        *self.live.borrow_mut() =
            t.frame.iter().filter(|f| f.temp && f.segment < seg.index).map(|f| f.name.clone()).collect();
        let body = self.stmts(&seg.body);
        let end = match &seg.end {
            End::Sync => {
                let inits = t.frame.iter().map(|f| {
                    let n = &f.name;
                    if f.segment <= seg.index {
                        match &f.ty {
                            FieldType::Declared(ty) => stored::to_stored_again(n, ty),
                            FieldType::OutputOf(_) => quote!(#n),
                        }
                    } else {
                        let d = Self::default_of(&f.ty);
                        quote!(#n: #d)
                    }
                });
                quote!(::gpu_cilk::runtime::Step::Sync(Frame { #(#inits),* }))
            }
            End::Tail(e) => {
                let e = self.user_expr(e);
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

    /// `fn __machine(frame, cx)`: the blocks of a [`Machine`] as one loop over the current block,
    /// entered at the resume point stored in the frame (0 for a fresh call).
    fn machine_fn(&self, m: &Machine) -> TokenStream {
        let t = self.task;
        let (frame_id, cx_id, spawner_id, block, label) =
            (&self.frame, &self.cx, &self.spawner, &self.block, &self.label);
        let start = syn::Ident::new("__start", Span::mixed_site());
        let names: Vec<_> = t.frame.iter().map(|f| &f.name).collect();
        // A slice parameter is its `RawSlice` in the frame and the reference in the blocks: rebound
        // once on entry, stored again at every sync (the only slice fields: slice locals never
        // live in the frame).
        let slice_param = |f: &&crate::ir::FrameField| {
            f.origin == crate::ir::FieldOrigin::Param
                && matches!(&f.ty, FieldType::Declared(ty) if from_stored(&f.name, ty).is_some())
        };
        let stored: Vec<TokenStream> = t
            .frame
            .iter()
            .map(|f| match &f.ty {
                FieldType::Declared(ty) if slice_param(&f) => stored::to_stored_again(&f.name, ty),
                _ => {
                    let n = &f.name;
                    quote!(#n)
                }
            })
            .collect();
        // SAFETY (of the emitted blocks): as for a segment's parameters (`rebind_slice`); the
        // frame goes only to this task's continuation (runtime `slice` module, rule 2).
        let rebinds: Vec<TokenStream> = t
            .frame
            .iter()
            .filter(slice_param)
            .map(|f| match &f.ty {
                FieldType::Declared(ty) => rebind_slice(&f.name, f.mutable, ty),
                FieldType::OutputOf(_) => quote!(),
            })
            .collect();
        let arms = m.blocks.iter().enumerate().map(|(k, b)| {
            let lit = |j: usize| proc_macro2::Literal::u32_unsuffixed(j as u32);
            let kl = lit(k);
            let body = self.stmts(&b.stmts);
            let term = match &b.term {
                Term::Goto(j) => {
                    let j = lit(*j);
                    quote!(#block = #j;)
                }
                Term::Branch { cond, then, els } => {
                    let (c, a, e) = (self.user_expr(cond), lit(*then), lit(*els));
                    quote!(#block = if #c { #a } else { #e };)
                }
                Term::Sync(j) => {
                    let j = lit(*j);
                    quote!(return ::gpu_cilk::runtime::Step::Sync(Frame { __gc_resume: #j, #(#stored),* });)
                }
                Term::Tail(e) => {
                    let e = self.user_expr(e);
                    let r = step_return(Span::mixed_site(), quote!(#e), &self.frees());
                    quote!(return #r;)
                }
                Term::FallOff if t.output.is_none() => {
                    let r = step_return(Span::mixed_site(), quote!(()), &self.frees());
                    quote!(return #r;)
                }
                Term::FallOff => quote!(::core::unreachable!("control cannot fall off a function with a value");),
            };
            quote!(#kl => { #body #term })
        });
        let (g, guse, frame_ty) = (&t.generics, self.gen_use(), self.frame_ty());
        quote! {
            /// The task's blocks (a `sync!()` inside control flow makes the body a state machine).
            fn __machine<#(#g: ::gpu_cilk::runtime::Key,)* #spawner_id: ::gpu_cilk::runtime::Spawn<Task #guse>>(
                #frame_id: #frame_ty,
                #cx_id: &mut #spawner_id,
            ) -> ::gpu_cilk::runtime::Step<Task #guse> {
                let Frame { __gc_resume: #start, #(#names: mut #names),* } = #frame_id;
                #(#rebinds)*
                let mut #block: u32 = #start;
                #label: loop {
                    match #block {
                        #(#arms)*
                        _ => ::core::unreachable!("no such block"),
                    }
                }
            }
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
                    let (cx, elem, len) = (&self.cx, &a.elem, self.user_expr(&a.len));
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
                    let e = self.user_expr(e);
                    quote!(= #e)
                });
                quote!(let #m #n #ty #init;)
            }
            Stmt::Spawn(site) => self.spawn(site),
            Stmt::If(i) => self.if_stmt(i),
            Stmt::While { cond, body } => {
                let cond = self.user_expr(cond);
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
                        let e = self.user_expr(e);
                        quote!(#e)
                    }
                    None => quote!(()),
                };
                let r = step_return(Span::mixed_site(), v, &self.frees());
                quote!(return #r;)
            }
            Stmt::Expr { expr, semi } => {
                let e = self.user_expr(expr);
                let semi = semi.then(|| quote!(;));
                quote!(#e #semi)
            }
            Stmt::Sync(span) => {
                quote_spanned!(*span=> ::core::compile_error!("gpu-cilk internal error: sync!() inside a segment");)
            }
            Stmt::Jump(k) => {
                let (block, label) = (&self.block, &self.label);
                let k = proc_macro2::Literal::u32_unsuffixed(*k as u32);
                quote!({ #block = #k; continue #label; })
            }
        }
    }

    fn if_stmt(&self, i: &If) -> TokenStream {
        let cond = self.user_expr(&i.cond);
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
        let start = self.user_expr(&f.start);
        let end = self.user_expr(&f.end);
        let op = if f.inclusive { quote!(..=) } else { quote!(..) };
        let body = self.stmts(&f.body);
        quote!(for #m #var in #start #op #end { #body })
    }

    fn spawn(&self, site: &SpawnSite) -> TokenStream {
        let cx = &self.cx;
        let f = &self.place_frame;
        // This site's own path: an error about the callee points at this spawn.
        let callee_task = task_of(&site.path);
        let callee_args = args_of(&site.path);
        let frame_ty = self.frame_ty();
        let args = site.args.iter().map(|a| self.user_expr(a));
        let (decl, place) = match &site.dest {
            Dest::Discard => (quote!(), quote!(::gpu_cilk::runtime::Place::discard())),
            Dest::Local { name, decl } => {
                let decl = match decl {
                    None => quote!(),
                    Some(d) => {
                        let m = d.mutable.then(|| quote!(mut));
                        let ty = match &d.ty {
                            Some(t) => quote!(#t),
                            None => output_of(&site.path),
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
                        ::core::mem::offset_of!(#frame_ty, #name),
                        |#f: &#frame_ty| &#f.#name
                    )),
                )
            }
            Dest::Element { array, index } => {
                let index = self.user_expr(index);
                (
                    quote!(),
                    quote!(::gpu_cilk::runtime::Place::element(
                        ::core::mem::offset_of!(#frame_ty, #array),
                        #index,
                        |#f: &#frame_ty| &#f.#array
                    )),
                )
            }
        };
        let span = site.span;
        // A task with slice parameters names the site, for the race check of the cpu scheduler
        // (`Spawn::spawn_at`); only such a task can hand slices to its children.
        let has_slices = self.task.params.iter().any(|p| syntax::slice_type(&p.ty).is_some());
        if let Some(p) = &site.priority {
            // `spawn!(f(..), priority = key)`: the key goes to the scheduler as an order-preserving
            // `u64` (`Priority::key`, which names the misuse of a non-scalar key).
            let p = self.user_expr(p);
            let start = span.start();
            let loc = format!("{}:{}:{}", span.file(), start.line, start.column + 1);
            let spawn = format_ident!("spawn_prio", span = span);
            return quote! {
                #decl
                // SAFETY: as for the plain spawn below.
                #cx.#spawn::<#callee_task>(
                    unsafe { #callee_args(#(#args),*) },
                    #place,
                    ::gpu_cilk::runtime::Priority::key(#p),
                    #loc,
                );
            };
        }
        let spawn = format_ident!("{}", if has_slices { "spawn_at" } else { "spawn" }, span = span);
        let at = if has_slices {
            let start = span.start();
            let loc = format!("{}:{}:{}", span.file(), start.line, start.column + 1);
            quote!(, #loc)
        } else {
            quote!()
        };
        quote! {
            #decl
            // SAFETY (of the `unsafe` block, which only a callee with slice parameters needs):
            // the arguments are the user's expressions, which also compile outside any `unsafe`
            // in the serial function; the child's slices are sub-slices of this task's, valid
            // until it ends, and it ends after its children (runtime `slice` module, rule 2).
            #cx.#spawn::<#callee_task>(unsafe { #callee_args(#(#args),*) }, #place #at);
        }
    }
}

/// `<T, ..>` of a callee written with type arguments (`g::<T>`), empty otherwise.
fn type_args_of(p: &Path) -> TokenStream {
    let args = syntax::split_type_args(p).1;
    if args.is_empty() {
        return quote!();
    }
    quote_spanned!(p.span()=> <#(#args),*>)
}

/// `<callee>::Task` (`<callee>::Task<T>` for `g::<T>`) as seen from inside the generated module,
/// spanned at the callee.
fn task_of(p: &Path) -> TokenStream {
    let module = callees::module_path(p);
    let targs = type_args_of(p);
    quote_spanned!(p.span()=> #module::Task #targs)
}

/// `<callee>::args` (`<callee>::args::<T>` for `g::<T>`).
fn args_of(p: &Path) -> TokenStream {
    let module = callees::module_path(p);
    let targs = type_args_of(p);
    if targs.is_empty() {
        return quote_spanned!(p.span()=> #module::args);
    }
    quote_spanned!(p.span()=> #module::args::#targs)
}

/// `<callee>::Output` (`<callee>::Output<T>` for `g::<T>`): the type of a spawned child's result,
/// spanned at the callee.
fn output_of(p: &Path) -> TokenStream {
    let module = callees::module_path(p);
    let targs = type_args_of(p);
    quote_spanned!(p.span()=> #module::Output #targs)
}

/// The spawn sites of a statement list, in textual order.
fn spawn_sites(stmts: &[Stmt]) -> Vec<&SpawnSite> {
    let mut out = Vec::new();
    crate::ir::visit_spawns(stmts, &mut |s| out.push(s));
    out
}
