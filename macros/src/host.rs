//! A task's host form: `#[gpu_cilk(host = path)]` or `#[gpu_cilk(warp, host = path)]` on a leaf
//! task (one that does not spawn). On the host backends (serial, cpu) the task is the call
//! `path(params..)`: its serial function's body becomes that call, and its `prespawn` (what the
//! cpu schedulers run for a task or an inline call) calls the serial function. The device form is
//! still the body as written, so a program states the GPU algorithm and the plain Rust a host
//! runs best, for instance a warp task that sorts 1024 keys with a whole warp and, on the host,
//! `sort_unstable`. The two must compute the same result (the differential tests compare the
//! backends); `path` takes the task's parameters in order and returns its output type, which
//! rustc checks at the call.
//!
//! This module is the whole feature: the attribute's argument ([`split`]) and the IR's field
//! ([`attach`]); `expand` reads `Task::host`.

use crate::error;
use crate::ir::Task;
use proc_macro2::{TokenStream, TokenTree};

/// Splits `host = path` off the attribute's arguments: the rest (for `warp`) and the path.
/// `None` when `host` is malformed or given twice.
pub fn split(attr: &TokenStream) -> Option<(TokenStream, Option<syn::Path>)> {
    let parts: Vec<Vec<TokenTree>> = attr.clone().into_iter().fold(vec![Vec::new()], |mut parts, t| {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(Vec::new()),
            _ => parts.last_mut().map(|last| last.push(t)).unwrap_or_default(),
        }
        parts
    });
    let (mut rest, mut host) = (Vec::new(), None);
    for part in parts {
        let is_host = matches!(part.first(), Some(TokenTree::Ident(i)) if i == "host");
        if !is_host {
            rest.push(part.into_iter().collect::<TokenStream>());
            continue;
        }
        let eq = matches!(part.get(1), Some(TokenTree::Punct(p)) if p.as_char() == '=');
        if !eq || host.is_some() {
            return None;
        }
        host = Some(syn::parse2::<syn::Path>(part.into_iter().skip(2).collect()).ok()?);
    }
    // A trailing comma leaves one empty part; any other empty part is malformed for `warp_attr`.
    if rest.last().is_some_and(TokenStream::is_empty) && rest.len() > 1 {
        rest.pop();
    }
    let mut out = TokenStream::new();
    for (k, part) in rest.into_iter().enumerate() {
        if k > 0 {
            out.extend(quote::quote!(,));
        }
        out.extend(part);
    }
    Some((out, host))
}

/// Records `host` in `task`; an error on the path when the task spawns (a host form replaces the
/// whole task, so its children would never run as tasks).
pub fn attach(task: &mut Task, host: Option<syn::Path>) -> Result<(), syn::Error> {
    if let Some(path) = &host {
        if task.machine.is_some() || task.segments.len() > 1 || task.fanout != Some(0) {
            return Err(error::HOST_SPAWN.on(path));
        }
    }
    task.host = host;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split;
    use quote::quote;

    fn show(attr: proc_macro2::TokenStream) -> Option<(String, Option<String>)> {
        split(&attr).map(|(rest, host)| (rest.to_string(), host.map(|p| quote!(#p).to_string())))
    }

    #[test]
    fn host_is_split_off_and_the_rest_kept() {
        assert_eq!(show(quote!()), Some((String::new(), None)));
        assert_eq!(show(quote!(warp)), Some(("warp".into(), None)));
        assert_eq!(show(quote!(host = sort_base)), Some((String::new(), Some("sort_base".into()))));
        assert_eq!(show(quote!(warp, host = a::b)), Some(("warp".into(), Some("a :: b".into()))));
        assert_eq!(show(quote!(host = a::b, warp)), Some(("warp".into(), Some("a :: b".into()))));
        assert_eq!(show(quote!(warp, host = f,)), Some(("warp".into(), Some("f".into()))));
        assert_eq!(show(quote!(debug)), Some(("debug".into(), None)));
        // Malformed: no `=`, no path, twice.
        assert_eq!(show(quote!(host)), None);
        assert_eq!(show(quote!(host =)), None);
        assert_eq!(show(quote!(host = f, host = g)), None);
    }

    #[test]
    fn the_host_form_is_the_serial_function_and_prespawn_calls_it() {
        let item: syn::ItemFn = syn::parse_quote! {
            pub fn rows(a: &mut [f32], mut n: usize) {
                for i in lanes(0, n) {
                    a[i] = 0.0;
                }
            }
        };
        let host: syn::Path = syn::parse_quote!(plain::rows_host);
        let out =
            crate::compile_task_host(&item, crate::syntax::Width::Warp, Some(host)).expect("compiles").to_string();
        let file: syn::File = syn::parse_str(&out).expect("valid Rust");
        let serial = file.items.iter().find_map(|i| match i {
            syn::Item::Fn(f) if f.sig.ident == "rows" => Some(f),
            _ => None,
        });
        let body = serial.map(|f| quote!(#f).to_string()).unwrap_or_default();
        assert!(body.contains("{ plain :: rows_host (a , n) }"), "{body}");
        assert!(out.contains("fn prespawn"), "{out}");
        assert!(
            out.contains("Step :: Return (< Self as :: gpu_cilk :: runtime :: CilkTask > :: serial (__args))"),
            "{out}"
        );
        // The device form is still the body: its lanes loop is in the CUDA text.
        assert!(out.contains("gc_lane()"), "{out}");
        // Without a host form the serial function is the body.
        let plain = crate::compile_task_host(&item, crate::syntax::Width::Warp, None).expect("compiles").to_string();
        assert!(!plain.contains("rows_host"));
    }

    #[test]
    fn a_task_that_spawns_has_no_host_form() {
        let item: syn::ItemFn = syn::parse_quote! {
            fn fib(n: u32) -> u64 {
                if n < 2 {
                    return n as u64;
                }
                let x = spawn!(fib(n - 1));
                let y = spawn!(fib(n - 2));
                sync!();
                x + y
            }
        };
        let e = crate::compile_task_host(&item, crate::syntax::Width::Lane, Some(syn::parse_quote!(fib_host)))
            .expect_err("spawns");
        assert!(e.to_string().contains("this task spawns"), "{e}");
    }
}
