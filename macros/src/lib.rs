//! The gpu-cilk compiler: `#[gpu_cilk]` and `#[gpu_cilk::device]`.
//!
//! This crate is a thin `#[proc_macro_attribute]` entry over ordinary modules that work on
//! `proc_macro2` tokens (so they are unit-testable), one per step of a pipeline that reads like a
//! sentence: **check** the item against the subset (collecting every problem), **parse** it into
//! the model of the function, **lower** that to the IR (segments, frame, callees), then **write**
//! the IR as CUDA C++ text and **expand** the IR and that text into Rust. The pipeline lives in
//! this file ([`compile_task_host`], [`device_macro`]); the stages never call each other.
//!
//! - [`check`]: the syntactic subset, on the `syn` tree (runs first);
//! - [`parse`]: `syn::ItemFn` → [`ir::Function`] (statement tree, `spawn!`/`sync!` structured);
//! - [`lower`]: name resolution, liveness across syncs, frame layout, semantic errors →
//!   [`ir::Task`];
//! - [`write`]: IR → CUDA C++ text ([`ir::Fragment`] of a task, [`ir::DeviceText`] of a device
//!   function); emits no Rust;
//! - [`expand`]: IR + that text → Rust tokens (serial function, task module with its device form
//!   and the names of its callees, a helper's module);
//! - [`ir`]: the IR types, the only input of the emitters;
//! - [`syntax`]: recognizers of the DSL's token shapes, shared by the stages;
//! - [`error`]: the catalogue of diagnostics and the error collector;
//! - [`host`]: a leaf task's host form (`host = path`), recorded in the IR.
//!
//! Dependencies point one way: this file → `check`, `parse`, `lower`, `write`, `expand` →
//! `syntax` → `ir`, `error` (`ir` and `error` depend on no other module of the crate).
//!
//! On error the macro emits every `compile_error!` **together with** the serial form of the
//! user's function, so the rest of the crate still type-checks and only the real problems show.
//! See `docs/dsl.md` for the subset and the expansion model.

#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod check;
mod error;
mod expand;
mod host;
mod ir;
mod lower;
mod parse;
mod syntax;
mod write;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;

/// Compiles a Cilk-style function (`spawn!`/`sync!`) into a task that every gpu-cilk backend can
/// run. Keeps the plain function callable (the serial oracle) and adds a module of the same name
/// with `task(..)`, `args(..)` and the `CilkTask` implementation. See `docs/dsl.md`.
#[proc_macro_attribute]
pub fn gpu_cilk(attr: TokenStream, item: TokenStream) -> TokenStream {
    task_macro(attr.into(), item.into()).into()
}

/// Marks a helper that tasks call directly (not spawned): checked against the subset (no
/// `spawn!`/`sync!`) and emitted unchanged.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    device_macro(attr.into(), item.into()).into()
}

/// Makes a `#[repr(C)]` struct of scalars, arrays and other such structs usable in tasks (as
/// parameters, results, locals and slice elements): implements `DeviceStruct` with the struct's
/// CUDA C++ definition and its Rust layout, which the cuda backend checks on the device.
#[proc_macro_derive(DeviceStruct)]
pub fn derive_device_struct(item: TokenStream) -> TokenStream {
    device_struct_derive(item.into()).into()
}

/// `#[derive(DeviceStruct)]` on `proc_macro2` tokens: check → parse → write → expand.
pub(crate) fn device_struct_derive(item: TokenStream2) -> TokenStream2 {
    let item = match syn::parse2::<syn::DeriveInput>(item.clone()) {
        Ok(d) if matches!(d.data, syn::Data::Struct(_)) => match syn::parse2::<syn::ItemStruct>(item) {
            Ok(s) => s,
            Err(e) => return e.to_compile_error(),
        },
        Ok(d) => return error::STRUCT_SHAPE.on(&d.ident).to_compile_error(),
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = error::Errors::new();
    check::device_struct(&item, &mut errors);
    if let Err(e) = errors.finish(()) {
        return e.to_compile_error();
    }
    let decl = parse::device_struct(&item);
    expand::device_struct_impl(&decl, &write::struct_def(&decl))
}

/// `#[gpu_cilk]` on `proc_macro2` tokens: check → parse → lower → write → expand.
pub(crate) fn task_macro(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let (attr, host) = match host::split(&attr) {
        Some(split) => split,
        None => return fallback(error::ATTR_ARGS.on(&attr).to_compile_error(), item),
    };
    let width = match syntax::width_attr(&attr) {
        Some(w) => w,
        None => return fallback(error::ATTR_ARGS.on(&attr).to_compile_error(), item),
    };
    let func = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(f)) => f,
        Ok(other) => return fallback(error::NOT_A_FN.on(item_head(&other)).to_compile_error(), item),
        Err(e) => return fallback(e.to_compile_error(), item),
    };
    match compile_task_host(&func, width, host) {
        Ok(tokens) => tokens,
        Err(e) => {
            // The crate does not compile anyway: keep rustc's own output to the real errors.
            let mut serial = expand::serial_fn(&func);
            serial.attrs.push(syn::parse_quote!(#[allow(unused, unreachable_code)]));
            let errors = e.to_compile_error();
            quote!(#errors #serial)
        }
    }
}

/// [`compile_task_host`] without a host form (the tests' entry).
#[cfg(test)]
pub(crate) fn compile_task(func: &syn::ItemFn, warp: bool) -> Result<TokenStream2, syn::Error> {
    compile_task_host(func, if warp { syntax::Width::Warp } else { syntax::Width::Lane }, None)
}

/// The pipeline for one function that parsed as `syn::ItemFn`: check → parse → lower → write →
/// expand. `width`: written `#[gpu_cilk]`, `#[gpu_cilk(warp)]` or `#[gpu_cilk(block)]`; `host`:
/// its `host = path` (see [`host`]).
pub(crate) fn compile_task_host(
    func: &syn::ItemFn,
    width: syntax::Width,
    host: Option<syn::Path>,
) -> Result<TokenStream2, syn::Error> {
    // A type parameter (`T: Key`) is a scalar element type to every stage.
    syntax::with_type_params(&func.sig.generics, || compile_task_in_scope(func, width, host))
}

fn compile_task_in_scope(
    func: &syn::ItemFn,
    width: syntax::Width,
    host: Option<syn::Path>,
) -> Result<TokenStream2, syn::Error> {
    let mut errors = error::Errors::new();
    let mode = match width {
        syntax::Width::Lane => check::Mode::Task,
        syntax::Width::Warp => check::Mode::Warp,
        syntax::Width::Block => check::Mode::Block,
    };
    check::function(func, mode, &mut errors);
    errors.finish(())?;
    let model = parse::function(func)?;
    let mut task = lower::task(model)?;
    task.warp = width == syntax::Width::Warp;
    task.block = width == syntax::Width::Block;
    host::attach(&mut task, host)?;
    let fragment = write::task_fragment(&task);
    let device = write::task_device_fn(&task);
    Ok(expand::expand_task(&task, func, &fragment, &device))
}

/// `#[gpu_cilk::device]` on `proc_macro2` tokens: check → parse → write → expand (a helper has no
/// segments to lower).
pub(crate) fn device_macro(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    if !attr.is_empty() {
        return fallback(error::DEVICE_ATTR_ARGS.on(&attr).to_compile_error(), item);
    }
    let func = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(f)) => f,
        Ok(other) => return fallback(error::DEVICE_NOT_A_FN.on(item_head(&other)).to_compile_error(), item),
        Err(e) => return fallback(e.to_compile_error(), item),
    };
    syntax::with_type_params(&func.sig.generics, || {
        let mut errors = error::Errors::new();
        check::function(&func, check::Mode::Device, &mut errors);
        let errors = errors.to_compile_errors();
        let serial = expand::serial_fn(&func);
        let module = if errors.is_empty() {
            parse::function(&func).map(|f| expand::helper_module(&f, &write::device_fn(&f))).unwrap_or_default()
        } else {
            TokenStream2::new()
        };
        quote!(#errors #serial #module)
    })
}

/// The errors followed by the item as the user wrote it.
fn fallback(errors: TokenStream2, item: TokenStream2) -> TokenStream2 {
    quote!(#errors #item)
}

/// The tokens that name an item (its keyword and name), for the "not a fn" span.
fn item_head(item: &syn::Item) -> TokenStream2 {
    match item {
        syn::Item::Struct(s) => {
            let (k, n) = (&s.struct_token, &s.ident);
            quote!(#k #n)
        }
        syn::Item::Enum(e) => {
            let (k, n) = (&e.enum_token, &e.ident);
            quote!(#k #n)
        }
        syn::Item::Const(c) => {
            let (k, n) = (&c.const_token, &c.ident);
            quote!(#k #n)
        }
        syn::Item::Static(s) => {
            let (k, n) = (&s.static_token, &s.ident);
            quote!(#k #n)
        }
        syn::Item::Mod(m) => {
            let (k, n) = (&m.mod_token, &m.ident);
            quote!(#k #n)
        }
        syn::Item::Impl(i) => {
            let k = &i.impl_token;
            let t = &i.self_ty;
            quote!(#k #t)
        }
        syn::Item::Trait(t) => {
            let (k, n) = (&t.trait_token, &t.ident);
            quote!(#k #n)
        }
        other => quote!(#other),
    }
}
