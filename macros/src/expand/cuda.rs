//! The CUDA text as Rust items: the `CilkTask::CUDA` constant of a task (a `CudaFragment`), and
//! in the module of every task and `#[gpu_cilk::device]` helper `f` the device form: the marker
//! `f::Device` and the static `f::__DEVICE` (a `DeviceFn`), with a check of every call it makes.
//!
//! This module owns the Rust side of the CUDA contract: how the text that `write` produced (the
//! IR's [`Fragment`] and [`DeviceText`], handed over by the pipeline in `lib.rs`) is embedded,
//! and how the device functions it calls are referenced (through `callees`). It writes no CUDA.

use super::callees::{self, Callees};
use super::stored::stored_type;
use crate::ir::{DeviceText, Fragment, Function, StructDecl};
use proc_macro2::TokenStream;
use quote::quote;

/// `const CUDA: Option<&'static CudaFragment> = Some(&CudaFragment { .. });` for the task's
/// `impl CilkTask` (inside the generated module).
/// `structs`: the device struct types the task names (their `DEF`s, each a check that the type
/// derives `DeviceStruct`).
pub fn cuda_const(fragment: &Fragment, structs: &[syn::Path]) -> TokenStream {
    let f = fragment;
    let (name, decls, types, defs) = (&f.name, &f.decls, &f.types, &f.defs);
    let sites = &f.sites;
    let uses_temps = f.uses_temps;
    let helpers = f.helpers.iter().map(callees::device_ref);
    let sum_of = match &f.sum_of {
        Some(c) => quote!(::core::option::Option::Some(&[#(#c),*])),
        None => quote!(::core::option::Option::None),
    };
    let structs = struct_defs(structs);
    quote! {
        const CUDA: ::core::option::Option<&'static ::gpu_cilk::runtime::CudaFragment> =
            ::core::option::Option::Some(&::gpu_cilk::runtime::CudaFragment {
                name: #name,
                decls: #decls,
                types: #types,
                defs: #defs,
                sites: &[#(#sites),*],
                helpers: &[#(#helpers),*],
                uses_temps: #uses_temps,
                sum_of: #sum_of,
                structs: &[#(#structs),*],
            });
    }
}

/// `<S as DeviceStruct>::DEF` of every struct type, spanned at the type (an error names it).
fn struct_defs(structs: &[syn::Path]) -> Vec<TokenStream> {
    structs
        .iter()
        .map(|p| quote::quote_spanned!(syn::spanned::Spanned::span(p)=> <#p as ::gpu_cilk::runtime::DeviceStruct>::DEF))
        .collect()
}

/// `const ARGS_LAYOUT: ArgsLayout = ..;`: the Rust layout of `Args` (offsets from `offset_of!`)
/// with the C name of each field, which the cuda backend checks against `<name>_args`.
/// `args` is the type `Args` (or `Args<T, ..>` of a generic task).
pub fn args_layout_const(params: &[crate::ir::Param], fragment: &Fragment, args: &TokenStream) -> TokenStream {
    let fields = params.iter().zip(&fragment.arg_cnames).map(|(p, cname)| {
        let (name, ty) = (&p.name, stored_type(&p.ty));
        quote! {
            ::gpu_cilk::runtime::FieldLayout {
                name: #cname,
                offset: ::core::mem::offset_of!(#args, #name),
                size: ::core::mem::size_of::<#ty>(),
            }
        }
    });
    quote! {
        const ARGS_LAYOUT: ::gpu_cilk::runtime::ArgsLayout = ::gpu_cilk::runtime::ArgsLayout {
            size: ::core::mem::size_of::<#args>(),
            fields: &[#(#fields),*],
        };
    }
}

/// `OUTPUT_LAYOUT`: the size of `Output` and, for a tuple, each element's offset and size (the C
/// struct `<name>_ret` names them `f0`, `f1`, ..). `out` is the type to measure (`Output`, or a
/// generic task's written result type).
pub fn output_layout_const(output: &Option<syn::Type>, out: &TokenStream) -> TokenStream {
    let fields: Vec<TokenStream> = match output {
        Some(syn::Type::Tuple(t)) => t
            .elems
            .iter()
            .enumerate()
            .map(|(i, ty)| {
                let idx = syn::Index::from(i);
                let name = format!("f{i}");
                quote! {
                    ::gpu_cilk::runtime::FieldLayout {
                        name: #name,
                        offset: ::core::mem::offset_of!(#out, #idx),
                        size: ::core::mem::size_of::<#ty>(),
                    }
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    quote! {
        const OUTPUT_LAYOUT: ::gpu_cilk::runtime::ArgsLayout = ::gpu_cilk::runtime::ArgsLayout {
            size: ::core::mem::size_of::<#out>(),
            fields: &[#(#fields),*],
        };
    }
}

/// The device form of the module's function: `Device` (implementing `DeviceFunction`, and
/// `TaskFunction` for a task), `__DEVICE` (its `DeviceFn`: the serial device function) and one
/// `DeviceFunction` check per call it makes.
pub fn device_items(device: &DeviceText, task: bool, structs: &[syn::Path]) -> TokenStream {
    let (name, decl, def, sites, site_base) =
        (&device.name, &device.decl, &device.def, &device.sites, &device.site_base);
    let structs = struct_defs(structs);
    let helpers = device.helpers.iter().map(callees::device_ref);
    let checks = device.calls.iter().map(callees::call_check);
    let task_function = task.then(|| {
        quote! {
            #[diagnostic::do_not_recommend]
            impl ::gpu_cilk::runtime::TaskFunction for Device {
                type Task = Task;
            }
        }
    });
    quote! {
        /// The marker of this function's device form (see `DeviceFunction`).
        #[doc(hidden)]
        pub struct Device;

        #[diagnostic::do_not_recommend]
        impl ::gpu_cilk::runtime::DeviceFunction for Device {}

        #task_function

        /// This function's serial device function, for the CUDA programs that call it.
        #[doc(hidden)]
        pub static __DEVICE: ::gpu_cilk::runtime::DeviceFn = ::gpu_cilk::runtime::DeviceFn {
            name: #name,
            decl: #decl,
            def: #def,
            sites: &[#(#sites),*],
            site_base: #site_base,
            helpers: &[#(#helpers),*],
            structs: &[#(#structs),*],
        };

        #(#checks)*
    }
}

/// The module `mod h { .. }` of a `#[gpu_cilk::device]` helper `h`: its device form, how it
/// names its callees, and the `Task`/`args` that make `spawn!(h(..))` a clear error.
pub fn helper_module(f: &Function, device: &DeviceText) -> TokenStream {
    let (vis, name) = (&f.vis, &f.name);
    let mut names = Callees::of(name, &super::naming::helper_module(name));
    for h in &device.helpers {
        names.add(h, None);
    }
    let callee_items = names.items();
    let items = device_items(device, false, &f.structs);
    let not_a_task = callees::spawn_target_items(name.span(), f.params.len());
    // A generic helper's result may name its type parameters, which the module does not have.
    let output = match &f.output {
        Some(t) if !f.generics.iter().any(|g| crate::syntax::mentions(t, g)) => quote!(#t),
        _ => quote!(()),
    };
    let doc = format!(" The device form of the helper `{name}`, generated by `#[gpu_cilk::device]`.");
    let marker = super::naming::marker_item();
    let body = quote! {
            #![doc(hidden)]
            #![allow(
                unused,
                non_snake_case,
                non_camel_case_types,
                non_upper_case_globals,
                missing_docs,
                unknown_or_malformed_diagnostic_attributes,
                clippy::all
            )]
            use super::*;
            #marker
            #callee_items
            #items
            #not_a_task
            /// The helper's return type.
            pub type Output = #output;
    };
    super::naming::hidden_module(name, vis, &super::naming::helper_module(name), &doc, "helper", body)
}

/// `unsafe impl TempElem for S` (so `alloc!(S, n)` works on the host): a hidden `#[repr(C)]`
/// struct of the fields' cells, with the struct's layout, loaded and stored field by field.
fn temp_elem_impl(s: &StructDecl) -> TokenStream {
    let name = &s.name;
    let elem = quote!(::gpu_cilk::runtime::TempElem);
    let (names, tys): (Vec<_>, Vec<_>) = s.fields.iter().map(|(f, t)| (f, t)).unzip();
    quote! {
        const _: () = {
            // `__` in the name: no device struct can be called this (`check::device_struct`).
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            #[repr(C)]
            pub struct __GcCell { #(#names: <#tys as #elem>::Cell),* }
            // SAFETY: a `#[repr(C)]` struct of the fields' cells, in the order of the
            // `#[repr(C)]` struct's fields: each is valid all-zero, has its field's size and
            // alignment (at most 8) and no drop glue, and is accessed only through its own load
            // and store, so the struct of them is too and has the struct's layout.
            unsafe impl #elem for #name {
                type Cell = __GcCell;
                #[inline]
                fn load(c: &__GcCell) -> Self {
                    #name { #(#names: <#tys as #elem>::load(&c.#names)),* }
                }
                #[inline]
                fn store(c: &__GcCell, v: Self) {
                    #(<#tys as #elem>::store(&c.#names, v.#names);)*
                }
            }
        };
    }
}

/// `impl DeviceStruct for S`: the struct's C++ definition `def` (written by `write`) and its Rust
/// layout (`size_of`, `offset_of!` of each field), with the `DEF`s of the device structs its
/// fields use (each a check that they derive `DeviceStruct` too).
pub fn device_struct_impl(s: &StructDecl, def: &str) -> TokenStream {
    let name = &s.name;
    let name_str = name.to_string();
    let fields = s.fields.iter().map(|(f, _)| {
        let fs = f.to_string();
        quote! { ::gpu_cilk::runtime::StructField { name: #fs, offset: ::core::mem::offset_of!(#name, #f) } }
    });
    let mut deps: Vec<syn::Path> = Vec::new();
    for (_, t) in &s.fields {
        let mut t = t;
        while let syn::Type::Array(a) = t {
            t = &a.elem;
        }
        if let syn::Type::Path(p) = t {
            if crate::syntax::is_struct_type(t) && !deps.contains(&p.path) {
                deps.push(p.path.clone());
            }
        }
    }
    let deps = struct_defs(&deps);
    let temp_elem = temp_elem_impl(s);
    quote! {
        #temp_elem
        impl ::gpu_cilk::runtime::DeviceStruct for #name {
            const DEF: &'static ::gpu_cilk::runtime::StructDef = &::gpu_cilk::runtime::StructDef {
                name: #name_str,
                def: #def,
                size: ::core::mem::size_of::<#name>(),
                fields: &[#(#fields),*],
                deps: &[#(#deps),*],
            };
        }
    }
}
