//! How a parameter or frame field is stored in a task's `Args`/`Frame` and read back: a slice
//! `&[T]`/`&mut [T]` or a shared bound `&Max<T>` as a `RawSlice` (see the runtime's `slice`
//! module for the lifetime story), a view `Mat<T>`/`MatMut<T>` as a `RawMat` (the runtime's
//! `view` module), every other type as itself.
//!
//! This module owns that mapping (the stored type, the conversion into it, the conversion back),
//! which both the task module (`expand`) and its layout constant (`cuda`) use; it emits no
//! segments and no CUDA text, and depends only on `syntax`.

use crate::syntax;
use proc_macro2::TokenStream;
use quote::quote;
use syn::Type;

/// The type a parameter or frame field has in `Args`/`Frame`: a slice `&[T]`/`&mut [T]` is stored
/// as its `RawSlice<T>` (see the runtime's `slice` module for the lifetime story).
/// A shared bound `&Max<T>` is stored as a one-element `RawSlice<Max<T>>` (so the cuda backend
/// moves it like a slice, see `SliceField::bound`).
pub(super) fn stored_type(ty: &Type) -> TokenStream {
    if let Some(r) = bound_elem(ty) {
        return quote!(::gpu_cilk::runtime::RawSlice<#r>);
    }
    if let Some((_, elem)) = syntax::view_type(ty) {
        return quote!(::gpu_cilk::runtime::RawMat<#elem>);
    }
    match syntax::slice_type(ty) {
        Some((_, elem)) => quote!(::gpu_cilk::runtime::RawSlice<#elem>),
        None => quote!(#ty),
    }
}

/// `Max<T>` of a bound parameter type `&Max<T>`.
pub(super) fn bound_elem(ty: &Type) -> Option<&Type> {
    syntax::bound_type(ty)?;
    match ty {
        Type::Reference(r) => Some(&r.elem),
        Type::Paren(p) => bound_elem(&p.elem),
        Type::Group(g) => bound_elem(&g.elem),
        _ => None,
    }
}

/// `name` as stored in `Args`/`Frame`: `RawSlice::from_mut(name)` for a slice, else `name`.
/// SAFETY (of the emitted block): in `args` the caller of that `unsafe fn` vouches for the slice;
/// at a sync the slice is this task's own, valid until the task ends, and the frame goes only to
/// this task's continuation (runtime `slice` module, rule 2).
pub(super) fn to_stored(name: &syn::Ident, ty: &Type) -> TokenStream {
    if bound_elem(ty).is_some() {
        return quote!(#name: unsafe { ::gpu_cilk::runtime::RawSlice::from_one(#name) });
    }
    let raw = match syntax::view_type(ty) {
        Some(_) => quote!(::gpu_cilk::runtime::RawMat),
        None => quote!(::gpu_cilk::runtime::RawSlice),
    };
    match syntax::slice_type(ty) {
        Some((true, _)) => quote!(#name: unsafe { #raw::from_mut(#name) }),
        Some((false, _)) => quote!(#name: unsafe { #raw::from_ref(#name) }),
        None => quote!(#name),
    }
}

/// The reference again from a stored slice `name` (an `unsafe` expression; the caller states why
/// it holds), or `None` when `ty` is not a slice.
pub(super) fn from_stored(name: &syn::Ident, ty: &Type) -> Option<TokenStream> {
    if bound_elem(ty).is_some() {
        return Some(quote!(unsafe { #name.as_one() }));
    }
    match syntax::slice_type(ty) {
        Some((true, _)) => Some(quote!(unsafe { #name.as_mut() })),
        Some((false, _)) => Some(quote!(unsafe { #name.as_ref() })),
        None => None,
    }
}

/// The hidden local that keeps a view parameter's `RawMat` in a segment (`__gc_raw_<name>`): a
/// `MatMut` is not `Copy`, so a spawn may move the view itself before the sync that stores it in
/// the frame again; the raw pair is stored instead (the child got a narrowing or the view, and
/// the continuation runs only after the child ended: runtime `slice` module, rule 2).
pub(super) fn raw_name(name: &syn::Ident) -> syn::Ident {
    syn::Ident::new(&format!("__gc_raw_{name}"), proc_macro2::Span::mixed_site())
}

/// `name` as stored in the frame again at a sync: as [`to_stored`], but a view is its raw pair
/// from the segment's start ([`raw_name`]).
pub(super) fn to_stored_again(name: &syn::Ident, ty: &Type) -> TokenStream {
    if syntax::view_type(ty).is_some() {
        let raw = raw_name(name);
        return quote!(#name: #raw);
    }
    to_stored(name, ty)
}
