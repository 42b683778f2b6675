//! How a generated module names the functions its task or helper spawns and calls, so that using
//! a function that neither `#[gpu_cilk]` nor `#[gpu_cilk::device]` compiled is one clear error
//! at the call (issue 8, point 3) instead of rustc's errors about generated names.
//!
//! Inside the module that `#[gpu_cilk] fn f` (or `#[gpu_cilk::device] fn f`) generates, a callee
//! written as a single name `g` is reached as `__gpu_cilk_callee_g`, bound twice:
//!
//! - `use super::g as __gpu_cilk_callee_g;` — an explicit import binds `g` in every namespace it
//!   exists in: the function (value namespace) and, when a macro compiled `g`, the module `g`
//!   (type namespace) with `Task`, `args`, `Output`, `Device` and `__DEVICE`;
//! - `use self::__gpu_cilk_stand_ins::*;` — a glob that brings a *stand-in* module
//!   `__gpu_cilk_callee_g` with the same items, whose `Device` (the unit struct
//!   `g_is_not_annotated` beside them, the name rustc's error prints) implements nothing.
//!
//! Explicit imports shadow globs, so `__gpu_cilk_callee_g::Task` is `g`'s task when `g` is
//! `#[gpu_cilk]`, and the stand-in otherwise. The stand-in's `Task` is
//! `<Device as TaskFunction>::Task` and every call is checked with
//! `<__gpu_cilk_callee_g::Device as DeviceFunction>::EXISTS`, so the runtime's
//! `#[diagnostic::on_unimplemented]` messages name the problem, spanned at `g`. One `spawn!` names
//! `g` in several places (the spawn, `register`, the frame, the read-back after `sync!()`); all of
//! them carry `g`'s span and fail with the same message, which rustc reports once. The frame
//! stores the child's result as `g::Output`, a plain type even in the stand-in (`()`), so the
//! frame struct never fails; the read-back `<g::Device as TaskFunction>::output(x)` is what fails,
//! leaving `x` without a type for the user's code to mismatch. The renaming keeps callees apart
//! from the module's own items (`args`, `task`, `Task`, ..). Callees written as paths
//! (`other::g`, `self::g`) are named relative to the module and keep rustc's own errors.
//!
//! This module owns those names and the stand-ins; it knows nothing of segments or CUDA text.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path};

/// The single name of a callee path (`g`, not `other::g`, `self::g` or `::g`).
fn single_name(p: &Path) -> Option<&Ident> {
    match p.segments.first() {
        Some(seg) if p.leading_colon.is_none() && p.segments.len() == 1 && seg.arguments.is_none() => Some(&seg.ident),
        _ => None,
    }
}

/// The name under which the generated module reaches the single-name callee `g`.
fn alias(name: &Ident) -> Ident {
    format_ident!("__gpu_cilk_callee_{}", name, span = name.span())
}

/// The module path of callee `p` as seen from inside a generated module: `__gpu_cilk_callee_g`
/// for `g`; `self::g` → `super::g`, `super::g` → `super::super::g`; anything else as written.
/// Every token carries `p`'s span, so errors about the callee point at the call.
pub fn module_path(p: &Path) -> TokenStream {
    let span = p.span();
    // A generic callee's type arguments (`g::<T>`) belong to its items, not to its module.
    let bare = crate::syntax::split_type_args(p).0;
    let p = &bare;
    if let Some(name) = single_name(p) {
        let alias = alias(name);
        return quote_spanned!(span=> #alias);
    }
    match p.segments.first() {
        Some(first) if p.leading_colon.is_none() && first.ident == "self" => {
            let rest = p.segments.iter().skip(1);
            quote_spanned!(span=> super #(:: #rest)*)
        }
        Some(first) if p.leading_colon.is_none() && first.ident == "super" => quote_spanned!(span=> super::#p),
        _ => quote_spanned!(span=> #p),
    }
}

/// `&<callee>::__DEVICE`: the device function of a callee, for a `helpers` list.
pub fn device_ref(p: &Path) -> TokenStream {
    let module = module_path(p);
    quote_spanned!(p.span()=> &#module::__DEVICE)
}

/// `const _: () = <callee::Device as DeviceFunction>::EXISTS;`: the check of one call.
pub fn call_check(p: &Path) -> TokenStream {
    let module = module_path(p);
    quote_spanned!(p.span()=>
        const _: () = <#module::Device as ::gpu_cilk::runtime::DeviceFunction>::EXISTS;
    )
}

/// The single-name callees of one generated module, in order of first use.
#[derive(Default)]
pub struct Callees {
    /// The name as first written, and the number of arguments of its first `spawn!` (`None`:
    /// only called).
    names: Vec<(Ident, Option<usize>)>,
    /// The module's own function and the hidden name of the module (see `naming`): a function
    /// that spawns or calls itself reaches its own module by that name, never through
    /// `super::f`, which a user item named `f` may hide.
    own: Option<(Ident, Ident)>,
}

impl Callees {
    /// The callees of the module `module` generated for the function `name`.
    pub fn of(name: &Ident, module: &Ident) -> Self {
        Callees { names: Vec::new(), own: Some((name.clone(), module.clone())) }
    }

    /// Records `p`, spawned with `args` arguments (`Some`) or called (`None`).
    pub fn add(&mut self, p: &Path, args: Option<usize>) {
        let bare = crate::syntax::split_type_args(p).0;
        let Some(name) = single_name(&bare) else { return };
        match self.names.iter_mut().find(|(n, _)| n == name) {
            Some((_, spawned)) => {
                if spawned.is_none() {
                    *spawned = args;
                }
            }
            None => self.names.push((name.clone(), args)),
        }
    }

    /// The imports and the stand-ins, for the top of the generated module.
    pub fn items(&self) -> TokenStream {
        if self.names.is_empty() {
            return TokenStream::new();
        }
        let imports = self.names.iter().map(|(name, _)| {
            let alias = alias(name);
            match &self.own {
                Some((own, module)) if own == name => quote_spanned!(name.span()=> use super::#module as #alias;),
                _ => quote_spanned!(name.span()=> use super::#name as #alias;),
            }
        });
        let stand_ins = self.names.iter().map(|(name, spawned)| stand_in(name, *spawned));
        let markers = self.names.iter().map(|(name, _)| {
            let marker = marker(name);
            quote_spanned! {name.span()=>
                #[doc(hidden)]
                #[allow(non_camel_case_types, dead_code)]
                struct #marker {}
            }
        });
        quote! {
            #(#imports)*
            #(#markers)*
            use self::__gpu_cilk_stand_ins::*;
            /// What each callee is when no macro compiled it (see `__gpu_cilk_callee_*`).
            mod __gpu_cilk_stand_ins {
                #(#stand_ins)*
            }
        }
    }
}

/// The type a stand-in's `Device` is: `g_is_not_annotated`, a unit struct of the generated module
/// that implements nothing. rustc's E0277 names it ("the trait `TaskFunction` is not implemented
/// for `g_is_not_annotated`", `__gpu_cilk_task_f::g_is_not_annotated` when several tasks spawn `g`), so the
/// name says what is wrong rather than where the stand-in lives.
fn marker(name: &Ident) -> Ident {
    format_ident!("{}_is_not_annotated", name, span = name.span())
}

/// The stand-in module of `name`: a `Device` that implements nothing, a `__DEVICE` that is never
/// part of a program (using the stand-in is a compile error), and for a spawned callee the `Task`,
/// `args` and `Output` that a spawn names.
fn stand_in(name: &Ident, spawned: Option<usize>) -> TokenStream {
    let alias = alias(name);
    let marker = marker(name);
    let span = name.span();
    let task = spawned.map(|n| {
        let items = spawn_target_items(span, n);
        quote_spanned!(span=> #items pub type Output = ();)
    });
    quote_spanned! {span=>
        pub mod #alias {
            pub type Device = super::super::#marker;
            #task
            pub static __DEVICE: ::gpu_cilk::runtime::DeviceFn = ::gpu_cilk::runtime::DeviceFn {
                name: "",
                decl: "",
                def: "",
                sites: &[],
                site_base: "",
                helpers: &[],
                structs: &[],
            };
        }
    }
}

/// `Task` and `args` of a module whose `Device` is not a task: a `spawn!` of it names them, and
/// `Task` is the failing `<Device as TaskFunction>::Task` (its message is the error); `args` takes
/// any `arity` arguments so that it adds no error of its own.
pub fn spawn_target_items(span: Span, arity: usize) -> TokenStream {
    let params: Vec<Ident> = (0..arity).map(|i| format_ident!("A{}", i, span = span)).collect();
    quote_spanned! {span=>
        pub type Task = <Device as ::gpu_cilk::runtime::TaskFunction>::Task;
        pub fn args<#(#params),*>(#(_: #params),*) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Path {
        syn::parse_str(s).expect("path")
    }

    #[test]
    fn single_names_are_aliased_and_paths_made_module_relative() {
        let text = |s: &str| module_path(&path(s)).to_string();
        assert_eq!(text("fib"), "__gpu_cilk_callee_fib");
        assert_eq!(text("self::fib"), "super :: fib");
        assert_eq!(text("super::fib"), "super :: super :: fib");
        assert_eq!(text("other::fib"), "other :: fib");
        assert_eq!(text("::other::fib"), ":: other :: fib");
    }

    #[test]
    fn each_single_name_is_imported_once_with_the_arity_of_its_first_spawn() {
        let mut names = Callees::default();
        names.add(&path("mix"), None);
        names.add(&path("fib"), Some(1));
        names.add(&path("mix"), Some(2));
        names.add(&path("fib"), Some(3));
        names.add(&path("other::g"), Some(1));
        let text = names.items().to_string();
        assert_eq!(text.matches("use super :: mix as __gpu_cilk_callee_mix ;").count(), 1, "{text}");
        assert_eq!(text.matches("use super :: fib as __gpu_cilk_callee_fib ;").count(), 1, "{text}");
        assert!(text.contains("pub fn args < A0 , A1 > (_ : A0 , _ : A1) { }"), "{text}");
        assert!(text.contains("pub fn args < A0 > (_ : A0) { }"), "{text}");
        assert!(!text.contains("other"), "{text}");
        assert!(Callees::default().items().is_empty());
    }

    #[test]
    fn the_own_function_is_reached_by_the_hidden_module_name() {
        let own: Ident = syn::parse_str("fib").expect("ident");
        let module: Ident = syn::parse_str("__gpu_cilk_task_fib").expect("ident");
        let mut names = Callees::of(&own, &module);
        names.add(&path("fib"), Some(1));
        names.add(&path("leaf"), Some(1));
        let text = names.items().to_string();
        assert!(text.contains("use super :: __gpu_cilk_task_fib as __gpu_cilk_callee_fib ;"), "{text}");
        assert!(text.contains("use super :: leaf as __gpu_cilk_callee_leaf ;"), "{text}");
    }
}
