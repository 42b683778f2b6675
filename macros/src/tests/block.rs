//! Block tasks (`#[gpu_cilk(block)]`): the cooperative entry the writer makes of `threads` loops,
//! `shared!` arrays and `block_sync!()`, the serial forms beside it, and what `check` rejects.

use super::expand;
use proc_macro2::TokenStream;
use quote::quote;

/// A block-wide sum: per-thread partial sums into a shared array, then a tree of halvings.
fn block_sum() -> TokenStream {
    quote! {
        pub fn block_sum(a: &[u64], out: &mut [u64]) -> u64 {
            let mut part = shared!([0u64; 64]);
            let n = a.len();
            for t in threads(0, 64) {
                let mut acc: u64 = 0;
                let mut i = t;
                while i < n {
                    acc = acc.wrapping_add(a[i]);
                    i += 64;
                }
                part[t] = acc;
            }
            let mut width: usize = 32;
            while width > 0 {
                for t in gpu_cilk::threads(0, width) {
                    part[t] = part[t].wrapping_add(part[t + width]);
                }
                width /= 2;
            }
            block_sync!();
            out[0] = part[0];
            part[0]
        }
    }
}

fn lowered_block(item: TokenStream) -> crate::ir::Task {
    let func: syn::ItemFn = syn::parse2(item).expect("item parses");
    let mut errors = crate::error::Errors::new();
    crate::check::function(&func, crate::check::Mode::Block, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    let model = crate::parse::function(&func).expect("model");
    let mut t = crate::lower::task(model).expect("lowers");
    t.block = true;
    t
}

#[test]
fn block_task_cuda() {
    let task = lowered_block(block_sum());
    let f = crate::write::task_fragment(&task);
    let dev = crate::write::task_device_fn(&task);
    assert!(f.types.contains("static const bool BLOCK = true;"), "{}", f.types);
    assert!(f.types.contains("static const gc_u64 SCRATCH = ((sizeof(gc_array<gc_u64, 64>) + 15) / 16 * 16);"));
    // The cooperative entry: two `threads` loops (a barrier before and after each) and the fill
    // of `part` (a barrier after it) over the block's threads, and the written barrier; `seg0`
    // and the serial form run plain loops.
    assert_eq!(f.defs.matches("gc_block_thread()").count(), 3, "{}", f.defs);
    assert_eq!(f.defs.matches("gc_block_sync();").count(), 6, "{}", f.defs);
    assert_eq!(f.defs.matches("gc_scratch + (0)").count(), 1, "{}", f.defs);
    assert!(!dev.def.contains("gc_block"), "{}", dev.def);
    // Never a sum group's member.
    assert!(!f.types.contains("SUM"), "{}", f.types);
    insta::assert_snapshot!(format!(
        "{}\n{}\n// sites: {:?}\n\n// ---- device fn\n{}",
        f.types, f.defs, f.sites, dev.def
    ));
}

#[test]
fn block_task_expansion() {
    insta::assert_snapshot!(expand(quote!(block), block_sum()));
}

/// Two `shared!` arrays: the second starts after the first, rounded up to 16 bytes.
#[test]
fn shared_arrays_are_laid_out_in_order() {
    let task = lowered_block(quote! {
        fn two(out: &mut [f32]) {
            let mut a: [f32; 3] = shared!([1.0; 3]);
            let mut b = shared!([false; 5]);
            for t in threads(0, 3) {
                a[t] = a[t] * 2.0;
                b[t] = true;
            }
            out[0] = a[2];
        }
    });
    let f = crate::write::task_fragment(&task);
    let (a, b) = ("sizeof(gc_array<gc_f32, 3>)", "sizeof(gc_array<gc_bool, 5>)");
    assert!(f.defs.contains("gc_scratch + (0)"), "{}", f.defs);
    assert!(f.defs.contains(&format!("gc_scratch + ((({a} + 15) / 16 * 16)))")), "{}", f.defs);
    assert!(f.types.contains(&format!("SCRATCH = (({a} + 15) / 16 * 16) + (({b} + 15) / 16 * 16);")), "{}", f.types);
}

fn errs(mode: crate::check::Mode, item: TokenStream) -> Vec<String> {
    let func: syn::ItemFn = syn::parse2(item).expect("item parses");
    let mut errors = crate::error::Errors::new();
    crate::check::function(&func, mode, &mut errors);
    errors.finish(()).err().map(|e| e.into_iter().map(|x| x.to_string()).collect()).unwrap_or_default()
}

#[test]
fn block_task_misuse() {
    use crate::check::Mode;
    let leaf = errs(Mode::Block, quote! { fn b(n: u32) { spawn!(b(n)); sync!(); let t = alloc!(u32, 4); } });
    assert!(leaf[0].starts_with("`spawn!` cannot be used in a `#[gpu_cilk(block)]` task"), "{leaf:?}");
    assert!(leaf[1].starts_with("`sync!` cannot be used in a `#[gpu_cilk(block)]` task"), "{leaf:?}");
    assert!(leaf[2].starts_with("`alloc!` cannot be used in a `#[gpu_cilk(block)]` task"), "{leaf:?}");
    let inner = errs(
        Mode::Block,
        quote! { fn b(n: usize, o: &mut [u32]) -> u32 {
            let mut k: usize = 0;
            for i in threads(0, n) {
                for j in threads(0, n) {}
                if i > 2 { return 1; }
                if i > 3 { break; }
                while i > 4 { break; }
                if i == 0 { block_sync!(); }
                k = i;
                k += 1;
                let mut own: usize = i;
                own += 1;
                o[i] = own as u32;
            }
            0
        } },
    );
    assert_eq!(inner.len(), 6, "{inner:?}");
    assert!(inner[0].starts_with("a `threads(..)` loop cannot stand inside another"), "{inner:?}");
    assert!(inner[1].starts_with("`return` cannot stand inside a `threads(..)` loop"), "{inner:?}");
    assert!(inner[2].starts_with("a `threads(..)` loop cannot be left with `break`"), "{inner:?}");
    assert!(inner[3].starts_with("`block_sync!()` cannot stand inside a `threads(..)` loop"), "{inner:?}");
    assert!(inner[4].starts_with("a local declared outside a `threads(..)` loop"), "{inner:?}");
    assert!(inner[5].starts_with("a local declared outside a `threads(..)` loop"), "{inner:?}");
    // Block-only constructs elsewhere.
    for mode in [Mode::Task, Mode::Warp, Mode::Device] {
        let e = errs(
            mode,
            quote! { fn t(n: usize) { let s = shared!([0u32; 4]); for i in threads(0, n) {} block_sync!(); } },
        );
        assert_eq!(e.len(), 3, "{mode:?}: {e:?}");
        assert!(e[0].starts_with("`shared!` arrays can only be used in a `#[gpu_cilk(block)]` task"), "{e:?}");
        assert!(e[1].starts_with("`threads(..)` loops can only be used in a `#[gpu_cilk(block)]` task"), "{e:?}");
        assert!(e[2].starts_with("`block_sync!()` can only be used in a `#[gpu_cilk(block)]` task"), "{e:?}");
    }
    let lanes = errs(Mode::Block, quote! { fn b(n: usize) { for i in lanes(0, n) {} } });
    assert!(lanes[0].starts_with("`lanes(..)` loops can only be used in a `#[gpu_cilk(warp)]` task"), "{lanes:?}");
    // Where `shared!` and `block_sync!` may stand, and what `shared!` takes.
    let place = errs(
        Mode::Block,
        quote! { fn b(n: usize) {
            if n > 0 { let s = shared!([0u32; 4]); }
            let t = shared!([0; 4]);
            let u = shared!(x);
            let v = block_sync!();
            block_sync!(now);
            let r = threads(0, n);
        } },
    );
    assert_eq!(place.len(), 6, "{place:?}");
    assert!(place[0].starts_with("`shared!` can only initialize a `let` at the top level"), "{place:?}");
    assert!(place[1].starts_with("`shared!` takes an array repeat"), "{place:?}");
    assert!(place[2].starts_with("`shared!` takes an array repeat"), "{place:?}");
    assert!(place[3].starts_with("`block_sync!()` is a statement"), "{place:?}");
    assert!(place[4].starts_with("`block_sync!()` is a statement"), "{place:?}");
    assert!(place[5].starts_with("`threads(..)` can only be the iterator"), "{place:?}");
    // A barrier under a branch outside the loops is taken by every thread: accepted.
    let ok = errs(
        Mode::Block,
        quote! { fn b(n: usize) { if n > 2 { block_sync!(); } while n > 3 { block_sync!(); break; } } },
    );
    assert!(ok.is_empty(), "{ok:?}");
    // `#[gpu_cilk(block)]` parses; `#[gpu_cilk(block, host = f)]` too.
    let out = crate::task_macro(quote!(block, host = h), quote! { fn f(a: &mut [u32]) { a[0] = 1; } }).to_string();
    assert!(!out.contains("compile_error"), "{out}");
}
