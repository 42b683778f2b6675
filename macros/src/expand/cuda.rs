//! The CUDA text as Rust items: the `CilkTask::CUDA` constant of a task (a `CudaFragment`), and
//! in the module of every task and `#[gpu_cilk::device]` helper `f` the device form: the marker
//! `f::Device` and the static `f::__DEVICE` (a `DeviceFn`), with a check of every call it makes.
//!
//! This module owns the Rust side of the CUDA contract: how the text that `write` produced (the
//! IR's [`Fragment`] and [`DeviceText`], handed over by the pipeline in `lib.rs`) is embedded,
//! and how the device functions it calls are referenced (through `callees`). It writes no CUDA.

use super::callees::{self, Callees};
use super::stored::stored_type;
use crate::ir::{DeviceText, Fragment, Function};
use proc_macro2::TokenStream;
use quote::quote;

/// `const CUDA: Option<&'static CudaFragment> = Some(&CudaFragment { .. });` for the task's
/// `impl CilkTask` (inside the generated module).
pub fn cuda_const(fragment: &Fragment) -> TokenStream {
    let f = fragment;
    let (name, decls, types, defs) = (&f.name, &f.decls, &f.types, &f.defs);
    let sites = &f.sites;
    let uses_temps = f.uses_temps;
    let helpers = f.helpers.iter().map(callees::device_ref);
    let sum_of = match &f.sum_of {
        Some(c) => quote!(::core::option::Option::Some(&[#(#c),*])),
        None => quote!(::core::option::Option::None),
    };
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
            });
    }
}

/// `const ARGS_LAYOUT: ArgsLayout = ..;`: the Rust layout of `Args` (offsets from `offset_of!`)
/// with the C name of each field, which the cuda backend checks against `<name>_args`.
pub fn args_layout_const(params: &[crate::ir::Param], fragment: &Fragment) -> TokenStream {
    let fields = params.iter().zip(&fragment.arg_cnames).map(|(p, cname)| {
        let (name, ty) = (&p.name, stored_type(&p.ty));
        quote! {
            ::gpu_cilk::runtime::FieldLayout {
                name: #cname,
                offset: ::core::mem::offset_of!(Args, #name),
                size: ::core::mem::size_of::<#ty>(),
            }
        }
    });
    quote! {
        const ARGS_LAYOUT: ::gpu_cilk::runtime::ArgsLayout = ::gpu_cilk::runtime::ArgsLayout {
            size: ::core::mem::size_of::<Args>(),
            fields: &[#(#fields),*],
        };
    }
}

/// `OUTPUT_LAYOUT`: the size of `Output` and, for a tuple, each element's offset and size (the C
/// struct `<name>_ret` names them `f0`, `f1`, ..).
pub fn output_layout_const(output: &Option<syn::Type>) -> TokenStream {
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
                        offset: ::core::mem::offset_of!(Output, #idx),
                        size: ::core::mem::size_of::<#ty>(),
                    }
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    quote! {
        const OUTPUT_LAYOUT: ::gpu_cilk::runtime::ArgsLayout = ::gpu_cilk::runtime::ArgsLayout {
            size: ::core::mem::size_of::<Output>(),
            fields: &[#(#fields),*],
        };
    }
}

/// The device form of the module's function: `Device` (implementing `DeviceFunction`, and
/// `TaskFunction` for a task), `__DEVICE` (its `DeviceFn`: the serial device function) and one
/// `DeviceFunction` check per call it makes.
pub fn device_items(device: &DeviceText, task: bool) -> TokenStream {
    let (name, decl, def, sites, site_base) =
        (&device.name, &device.decl, &device.def, &device.sites, &device.site_base);
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
    let items = device_items(device, false);
    let not_a_task = callees::spawn_target_items(name.span(), f.params.len());
    let output = match &f.output {
        Some(t) => quote!(#t),
        None => quote!(()),
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
