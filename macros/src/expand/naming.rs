//! Where the generated module of a function lives and how user code still reaches it as `f::..`
//! (issue 28, point 1).
//!
//! `#[gpu_cilk] fn f` (and `#[gpu_cilk::device] fn f`) generates its module under a hidden name,
//! `__gpu_cilk_task_f` (`__gpu_cilk_device_f`), and re-exports it as `f` through a **glob**:
//!
//! ```text
//! <vis> mod __gpu_cilk_task_f { .. }
//! mod __gpu_cilk_export_f { <vis'> use super::__gpu_cilk_task_f as f; }
//! <vis> use __gpu_cilk_export_f::*;
//! const _: () = { const __GPU_CILK_MODULE: bool = false; { use f::*; if !__GPU_CILK_MODULE { panic!(..) } } };
//! ```
//!
//! An explicit item of the user's named `f` in the type namespace (`mod f`, `struct f {..}`, a
//! `use` of another `f`) shadows a glob instead of clashing with it, so it no longer makes rustc
//! report `E0428` and then fail every reference to the generated module. The `const` is the one
//! error that remains: inside its inner block, `use f::*` brings the generated module's
//! `__GPU_CILK_MODULE` (`true`), which shadows the outer block's `false`; when `f` is the user's
//! item instead, the outer `false` is seen and the constant evaluation panics with a message
//! that names the task and says to rename, spanned at the function's name.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, Visibility};

/// The hidden name of the module of task `name`.
pub fn task_module(name: &Ident) -> Ident {
    format_ident!("__gpu_cilk_task_{}", name, span = name.span())
}

/// The hidden name of the module of device helper `name`.
pub fn helper_module(name: &Ident) -> Ident {
    format_ident!("__gpu_cilk_device_{}", name, span = name.span())
}

/// The item inside every generated module that the collision check looks for.
pub fn marker_item() -> TokenStream {
    quote! {
        #[doc(hidden)]
        pub const __GPU_CILK_MODULE: bool = true;
    }
}

/// `vis` as written inside a module one level below the one that declares the function: the
/// re-export in `__gpu_cilk_export_f` must be visible wherever the generated module is.
fn export_vis(vis: &Visibility) -> TokenStream {
    match vis {
        Visibility::Public(_) => quote!(pub),
        Visibility::Inherited => quote!(pub(super)),
        Visibility::Restricted(r) => {
            let path = &r.path;
            let first = path.segments.first().map(|s| s.ident.to_string());
            match first.as_deref() {
                Some("crate") if path.segments.len() == 1 => quote!(pub(crate)),
                Some("self") if path.segments.len() == 1 => quote!(pub(super)),
                Some("super") if r.in_token.is_none() => quote!(pub(in super::super)),
                Some("self") => {
                    let rest = path.segments.iter().skip(1);
                    quote!(pub(in super #(:: #rest)*))
                }
                Some("super") => quote!(pub(in super::#path)),
                _ => quote!(#vis),
            }
        }
    }
}

/// The hidden module `module` (declared with `vis`, its items `body`, documented by `doc`), the
/// glob re-export that names it `name`, and the check that `name` is that module. `kind` is
/// what the function is ("task", "helper") for the message.
pub fn hidden_module(
    name: &Ident,
    vis: &Visibility,
    module: &Ident,
    doc: &str,
    kind: &str,
    body: TokenStream,
) -> TokenStream {
    let export = format_ident!("__gpu_cilk_export_{}", name);
    let inner_vis = export_vis(vis);
    let span = name.span();
    let message = format!(
        "the {kind} `{name}` needs the name `{name}` for its generated module (`{name}::..`), but another \
         item named `{name}` in this module (a `mod`, a type or a `use`) hides it: rename the {kind} or the \
         other item"
    );
    let marker = Ident::new("__GPU_CILK_MODULE", span);
    let check = quote_spanned! {span=>
        #[allow(non_upper_case_globals)]
        const _: () = {
            const #marker: bool = false;
            {
                #[allow(unused_imports)]
                use #name::*;
                if !#marker {
                    ::core::panic!(#message);
                }
            }
        };
    };
    quote! {
        #[doc = #doc]
        #vis mod #module {
            #body
        }

        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports)]
        mod #export {
            #inner_vis use super::#module as #name;
        }

        #[allow(unused_imports)]
        #vis use #export::*;

        #check
    }
}
