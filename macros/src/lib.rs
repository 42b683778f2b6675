//! The gpu-cilk compiler: `#[gpu_cilk]` and `#[gpu_cilk::device]`.
//!
//! This crate is a thin `#[proc_macro_attribute]` entry over ordinary modules that work on
//! `proc_macro2` tokens (so they are unit-testable), one per step of a pipeline that reads like a
//! sentence: **parse** the item, **check** it against the subset (collecting every problem),
//! build the **model** of the function, **lower** it to the IR (segments, frame, callees) and
//! **expand** the IR into Rust. A CUDA C++ emitter reads the same IR.
//!
//! - [`ir`]: the IR types, the only input of the emitters;
//! - [`parse`]: `syn::ItemFn` → [`ir::Function`] (statement tree, `spawn!`/`sync!` recognized);
//! - [`check`]: the syntactic subset;
//! - [`lower`]: name resolution, liveness across syncs, frame layout, semantic errors;
//! - [`expand`]: IR → Rust tokens (serial function + task module);
//! - [`write`]: IR → CUDA C++ (the task's `CudaFragment`, device functions);
//! - [`error`]: the catalogue of diagnostics and the error collector.
//!
//! On error the macro emits every `compile_error!` **together with** the serial form of the
//! user's function, so the rest of the crate still type-checks and only the real problems show.
//! See `docs/dsl.md` for the subset and the expansion model.

#![deny(missing_docs)]

mod check;
mod error;
mod expand;
// Parts of the IR (and its `dump`) are read only by tests and by the CUDA emitter.
#[allow(dead_code)]
mod ir;
mod lower;
mod parse;
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

/// `#[gpu_cilk]` on `proc_macro2` tokens: parse → check → model → lower → expand.
pub(crate) fn task_macro(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    if !attr.is_empty() {
        let e = error::ATTR_ARGS.on(&attr).to_compile_error();
        return fallback(e, item);
    }
    let func = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(f)) => f,
        Ok(other) => return fallback(error::NOT_A_FN.on(item_head(&other)).to_compile_error(), item),
        Err(e) => return fallback(e.to_compile_error(), item),
    };
    match compile_task(&func) {
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

/// The pipeline for one function that parsed as `syn::ItemFn`.
pub(crate) fn compile_task(func: &syn::ItemFn) -> Result<TokenStream2, syn::Error> {
    let mut errors = error::Errors::new();
    check::function(func, check::Mode::Task, &mut errors);
    errors.finish(())?;
    let model = parse::function(func)?;
    let task = lower::task(model)?;
    Ok(expand::expand_task(&task, func))
}

/// `#[gpu_cilk::device]` on `proc_macro2` tokens.
pub(crate) fn device_macro(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    if !attr.is_empty() {
        return fallback(error::DEVICE_ATTR_ARGS.on(&attr).to_compile_error(), item);
    }
    let func = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(f)) => f,
        Ok(other) => return fallback(error::DEVICE_NOT_A_FN.on(item_head(&other)).to_compile_error(), item),
        Err(e) => return fallback(e.to_compile_error(), item),
    };
    let mut errors = error::Errors::new();
    check::function(&func, check::Mode::Device, &mut errors);
    let errors = errors.to_compile_errors();
    let serial = expand::serial_fn(&func);
    let cuda = if errors.is_empty() {
        parse::function(&func).map(|f| write::helper_static(&f)).unwrap_or_default()
    } else {
        TokenStream2::new()
    };
    quote!(#errors #serial #cuda)
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
