//! Expander tests in the style of cxx's `macro/src/tests.rs`: feed `quote!{}` input to the
//! pipeline, re-parse the output as a `syn::File` (it must be valid Rust), pretty-print it and
//! snapshot it with insta; the IR `dump` is snapshotted beside it. Review every snapshot by
//! reading it: they are the contract with the runtime (compare `tests/hand_expanded.rs`).

mod block;
mod dump;
mod views;

use crate::ir;
use dump::dump;
use proc_macro2::TokenStream;
use quote::quote;

fn expand(attr: TokenStream, item: TokenStream) -> String {
    let out = crate::task_macro(attr, item);
    let file: syn::File = match syn::parse2(out.clone()) {
        Ok(f) => f,
        Err(e) => panic!("expansion is not valid Rust: {e}\n{out}"),
    };
    prettyplease::unparse(&file)
}

fn lowered(item: TokenStream) -> ir::Task {
    let func: syn::ItemFn = syn::parse2(item).expect("item parses");
    crate::syntax::with_type_params(&func.sig.generics, || {
        let mut errors = crate::error::Errors::new();
        crate::check::function(&func, crate::check::Mode::Task, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        let model = crate::parse::function(&func).expect("model");
        crate::lower::task(model).expect("lowers")
    })
}

fn fib() -> TokenStream {
    quote! {
        pub fn fib(n: u32) -> u64 {
            if n < 2 {
                return n as u64;
            }
            let x = spawn!(fib(n - 1));
            let y = spawn!(fib(n - 2));
            sync!();
            x + y
        }
    }
}

fn queens() -> TokenStream {
    quote! {
        pub fn queens(n: u32, row: u32, board: [u8; 16]) -> u64 {
            if row == n { return 1; }
            let mut counts: [u64; 16] = [0; 16];
            let mut col: u32 = 0;
            while col < n {
                let mut ok = true;
                let mut r: u32 = 0;
                while r < row {
                    let c = board[r as usize] as u32;
                    if c == col || c + (row - r) == col || col + (row - r) == c { ok = false; break; }
                    r += 1;
                }
                if ok {
                    let mut next = board;
                    next[row as usize] = col as u8;
                    counts[col as usize] = spawn!(queens(n, row + 1, next));
                }
                col += 1;
            }
            sync!();
            let mut total: u64 = 0;
            for i in 0..16 { total += counts[i]; }
            total
        }
    }
}

fn wide() -> TokenStream {
    quote! {
        pub fn wide(d: u32, k: u32) -> u64 {
            if d == 0 { return 1; }
            let mut parts: [u64; 8] = [0; 8];
            let mut i = 0;
            while i < k { parts[i as usize] = spawn!(wide(d - 1, k)); i += 1; }
            spawn!(fib(3));
            sync!();
            let mut s: u64 = 1;
            for j in 0..k as usize { s += parts[j]; }
            let extra = spawn!(fib(d));
            sync!();
            s + extra
        }
    }
}

fn visit() -> TokenStream {
    quote! {
        /// Walks a binary tree of the given depth, counting nothing: a unit task.
        fn visit(depth: u32, mut budget: u32) {
            if depth == 0 {
                return;
            }
            budget -= 1;
            spawn!(visit(depth - 1, budget));
            if budget > 3 {
                spawn!(self::visit(depth - 1, budget));
            }
            sync!();
            spawn!(leaves::touch(depth));
        }
    }
}

#[test]
fn fib_expansion() {
    insta::assert_snapshot!(expand(quote!(), fib()));
}

#[test]
fn fib_ir() {
    insta::assert_snapshot!(dump(&lowered(fib())));
}

#[test]
fn queens_expansion() {
    insta::assert_snapshot!(expand(quote!(), queens()));
}

#[test]
fn queens_ir() {
    insta::assert_snapshot!(dump(&lowered(queens())));
}

#[test]
fn wide_expansion() {
    insta::assert_snapshot!(expand(quote!(), wide()));
}

#[test]
fn wide_ir() {
    insta::assert_snapshot!(dump(&lowered(wide())));
}

#[test]
fn unit_task_expansion() {
    insta::assert_snapshot!(expand(quote!(), visit()));
}

#[test]
fn unit_task_ir() {
    insta::assert_snapshot!(dump(&lowered(visit())));
}

#[test]
fn errors_come_with_the_serial_function() {
    let out = crate::task_macro(
        quote!(),
        quote! {
            fn f(n: u32) -> u32 {
                let v = match n { 0 => 1, _ => 2 };
                let x = spawn!(g(n));
                sync!();
                x + v
            }
        },
    );
    let file: syn::File = syn::parse2(out).expect("valid Rust");
    let text = prettyplease::unparse(&file);
    assert!(text.contains("compile_error!"), "{text}");
    assert!(text.contains("let x = g(n);"), "{text}");
    assert!(!text.contains("sync!"), "{text}");
    assert!(!text.contains("mod f"), "{text}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let func: syn::ItemFn = syn::parse2(quote! {
        async fn f<const N: usize>(x: &[String]) -> String {
            let c = |a: u32| a + 1;
            let v = { sync!(); 1 };
            println!("hi");
            let [a, b] = [1, 2];
            let t = (1, 2, 3, 4, 5);
            spawn!(x.len());
        }
    })
    .expect("parses");
    let mut errors = crate::error::Errors::new();
    crate::check::function(&func, crate::check::Mode::Task, &mut errors);
    // async, a const generic, slice of a non-scalar, String return, closure, sync in a value, println!, let
    // pattern, 5-tuple, spawn of a method call.
    assert_eq!(errors.len(), 10, "{errors:#?}");
}

#[test]
fn attribute_arguments_are_rejected() {
    let out = crate::task_macro(quote!(debug), fib()).to_string();
    assert!(out.contains("takes no arguments"), "{out}");
}

/// A helper that calls a helper by name and one by path: its module holds the device form and
/// the `Task`/`args`/`Output` that make `spawn!` of it a clear error.
#[test]
fn helper_expansion() {
    let out = crate::device_macro(
        quote!(),
        quote! {
            pub fn twice(x: u64) -> u64 {
                mix(util::mix(x))
            }
        },
    );
    let file: syn::File = match syn::parse2(out.clone()) {
        Ok(f) => f,
        Err(e) => panic!("expansion is not valid Rust: {e}\n{out}"),
    };
    insta::assert_snapshot!(prettyplease::unparse(&file));
}

#[test]
fn device_helpers_pass_through_or_report() {
    let ok = crate::device_macro(
        quote!(),
        quote!(
            fn sq(x: u64) -> u64 {
                x * x
            }
        ),
    )
    .to_string();
    assert!(!ok.contains("compile_error"), "{ok}");
    let bad = crate::device_macro(
        quote!(),
        quote!(
            fn sq(x: u64) -> u64 {
                spawn!(sq(x));
                x
            }
        ),
    )
    .to_string();
    assert!(bad.contains("cannot be used in a `#[gpu_cilk::device]` helper"), "{bad}");
}

// ---- CUDA fragments (write/): review each snapshot by reading it (compare kernels/tests/fib_hand.cu).

fn cuda(item: TokenStream) -> String {
    let func: syn::ItemFn = syn::parse2(item.clone()).expect("item parses");
    let task = lowered(item);
    let (f, dev) = crate::syntax::with_type_params(&func.sig.generics, || {
        (crate::write::task_fragment(&task), crate::write::task_device_fn(&task))
    });
    let helpers: Vec<String> = f.helpers.iter().map(ir::path_text).collect();
    let decls = f.decls.strip_prefix(crate::write::PRELUDE).unwrap_or(&f.decls);
    format!(
        "{decls}\n{}\n{}\n// sites: {:?}\n// helpers: {:?}\n\n// ---- device fn {}\n{}{}// sites: {:?}\n// helpers: {:?}\n",
        f.types,
        f.defs,
        f.sites,
        helpers,
        dev.name,
        dev.decl,
        dev.def,
        dev.sites,
        dev.helpers.iter().map(ir::path_text).collect::<Vec<_>>()
    )
}

fn device(item: TokenStream) -> String {
    let func: syn::ItemFn = syn::parse2(item).expect("item parses");
    let f = crate::parse::function(&func).expect("model");
    let d = crate::write::device_fn(&f);
    let helpers: Vec<String> = d.helpers.iter().map(ir::path_text).collect();
    format!("{}{}// sites: {:?}\n// helpers: {:?}\n", d.decl, d.def, d.sites, helpers)
}

fn queens_bits() -> TokenStream {
    quote! {
        pub fn queens_bits(n: u32, cols: u32, left: u32, right: u32) -> u64 {
            let full: u32 = (1u32 << n) - 1;
            if cols == full {
                return 1;
            }
            let mut counts: [u64; 32] = [0; 32];
            let mut avail: u32 = full & !(cols | left | right);
            while avail != 0 {
                let bit = avail & avail.wrapping_neg();
                let i = bit.trailing_zeros();
                counts[i as usize] = spawn!(queens_bits(n, cols | bit, ((left | bit) << 1) & full, (right | bit) >> 1));
                avail &= avail - 1;
            }
            sync!();
            let mut total: u64 = 0;
            for i in 0..32 {
                total += counts[i];
            }
            total
        }
    }
}

fn rnode() -> TokenStream {
    quote! {
        pub fn rnode(seed: u64, depth: u32) -> u64 {
            let h: u64 = mix(seed);
            if depth == 0 || h % 7 == 0 {
                return h % 1000;
            }
            let fan: u32 = ((h >> 8) % 5) as u32;
            let mut vals: [u64; 4] = [0; 4];
            let mut i: u32 = 0;
            while i < fan {
                vals[i as usize] = spawn!(rnode(mix(seed.wrapping_add(i as u64 + 1)), depth - 1));
                i += 1;
            }
            let mut extra: u64 = 0;
            if (h >> 12) % 3 == 0 {
                extra = spawn!(rnode(seed ^ 0x5555, depth - 1));
            }
            if (h >> 16) % 4 == 0 {
                spawn!(noise(h));
            }
            if (h >> 20) % 9 == 0 {
                return h % 77;
            }
            sync!();
            let mut acc: u64 = h % 13;
            for j in 0..4 {
                acc = acc.wrapping_mul(31).wrapping_add(vals[j]);
            }
            acc = acc.wrapping_add(extra);
            if (h >> 24) % 3 == 0 {
                return acc;
            }
            let more = spawn!(rnode(acc, depth / 2));
            sync!();
            acc ^ more
        }
    }
}

#[test]
fn fib_cuda() {
    insta::assert_snapshot!(cuda(fib()));
}

#[test]
fn cuda_prelude() {
    insta::assert_snapshot!(crate::write::PRELUDE);
}

#[test]
fn queens_cuda() {
    insta::assert_snapshot!(cuda(queens()));
}

#[test]
fn queens_bits_cuda() {
    insta::assert_snapshot!(cuda(queens_bits()));
}

#[test]
fn wide_cuda() {
    insta::assert_snapshot!(cuda(wide()));
}

#[test]
fn unit_task_cuda() {
    insta::assert_snapshot!(cuda(visit()));
}

#[test]
fn rnode_cuda() {
    insta::assert_snapshot!(cuda(rnode()));
}

#[test]
fn noise_cuda() {
    insta::assert_snapshot!(cuda(quote! {
        pub fn noise(h: u64) -> u64 {
            h.rotate_left(7)
        }
    }));
}

#[test]
fn mix_device_cuda() {
    insta::assert_snapshot!(device(quote! {
        pub fn mix(x: u64) -> u64 {
            let mut z = x.wrapping_add(0x9e3779b97f4a7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
            z ^ (z >> 31)
        }
    }));
}

#[test]
fn cuda_is_deterministic() {
    let a = cuda(queens());
    let b = cuda(queens());
    assert_eq!(a, b);
}

/// The Strassen pattern: a temporary filled by children, combined after the sync.
fn scatter_sum() -> TokenStream {
    quote! {
        fn scatter_sum(k: u32, seed: u64) -> u64 {
            let t = alloc!(u64, k as usize);
            if k == 0 {
                return 0;
            }
            for i in 0..k as usize {
                spawn!(fill(t, i, seed + i as u64));
            }
            sync!();
            let mut s: u64 = 0;
            for i in 0..t.len() {
                s += t[i];
            }
            t[0] += s;
            t[0]
        }
    }
}

#[test]
fn alloc_expansion() {
    insta::assert_snapshot!(expand(quote!(), scatter_sum()));
}

#[test]
fn alloc_ir() {
    insta::assert_snapshot!(dump(&lowered(scatter_sum())));
}

#[test]
fn alloc_cuda() {
    insta::assert_snapshot!(cuda(scatter_sum()));
}

#[test]
fn a_return_that_may_leave_children_running_with_a_live_temporary_is_rejected() {
    let errs = |tokens: TokenStream| -> Vec<String> {
        let item: syn::ItemFn = syn::parse2(tokens).expect("parses");
        match crate::compile_task(&item, false) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string().lines().next().unwrap_or_default().to_string()).collect(),
        }
    };
    // After a spawn in the same segment, with a temporary live: rejected (return and tail).
    let m = errs(quote! {
        fn f(n: u32) -> u64 {
            let t = alloc!(u64, 4);
            spawn!(g(t));
            if n > 3 { return 1; }
            2
        }
    });
    assert_eq!(m.len(), 2, "{m:#?}");
    assert!(m[0].starts_with("this return may leave children running while the temporary `t` is freed"));
    // Before the spawn, or after a sync: fine.
    assert!(errs(quote! {
        fn f(n: u32) -> u64 {
            let t = alloc!(u64, 4);
            if n > 3 { return 1; }
            spawn!(g(t));
            sync!();
            if n > 4 { return 2; }
            t[0]
        }
    })
    .is_empty());
}

// ---- sync!() inside control flow: the state machine (ir::Machine) ------------------------------

/// A base case that spawns and syncs inside its `if`.
fn branch_sync() -> TokenStream {
    quote! {
        pub fn bsum(lo: u32, hi: u32) -> u64 {
            if hi - lo <= 2 {
                let x = spawn!(leaf(lo));
                let y = spawn!(leaf(hi));
                sync!();
                return x * 3 + y;
            }
            let mid = lo + (hi - lo) / 2;
            let a = spawn!(bsum(lo, mid));
            let b = spawn!(bsum(mid, hi));
            sync!();
            a + b
        }
    }
}

/// A `for` with a spawn and a sync per iteration and a loop-carried local.
fn loop_sync() -> TokenStream {
    quote! {
        pub fn rounds(n: u32, r: u32) -> u64 {
            let mut acc: u64 = 0;
            for i in 0..r {
                let a = spawn!(leaf(n + i));
                sync!();
                acc = acc * 7 + a;
            }
            acc
        }
    }
}

/// A `while` whose condition reads the child's result.
fn while_sync() -> TokenStream {
    quote! {
        pub fn steps(n: u64) -> u32 {
            let mut x: u64 = n;
            let mut count: u32 = 0;
            while x > 1 {
                x = spawn!(collatz(x));
                sync!();
                count += 1;
            }
            count
        }
    }
}

/// Nested loops with a sync in each, `continue` and `break` of the inner one.
fn nested_sync() -> TokenStream {
    quote! {
        pub fn grid(n: u32, m: u32) -> u64 {
            let mut total: u64 = 0;
            let mut i: u32 = 0;
            while i < n {
                let mut row: u64 = 0;
                for j in 0..m {
                    if (i + j) % 3 == 0 {
                        continue;
                    }
                    let v = spawn!(leaf(i * m + j));
                    sync!();
                    row += v;
                    if row > 2500 {
                        break;
                    }
                }
                let extra = spawn!(leaf(i));
                sync!();
                total = total * 3 + row + extra;
                i += 1;
            }
            total
        }
    }
}

/// Slice parameters in a state machine: a `while` with two syncs per iteration, the `&mut`
/// parameter handed to children as sub-slices and written after each sync.
fn slice_loop_sync() -> TokenStream {
    quote! {
        pub fn chunk_sums(a: &mut [u32], out: &mut [u64], chunk: usize) -> u64 {
            let mut total: u64 = 0;
            let mut k: usize = 0;
            while k < out.len() {
                let lo: usize = k * chunk;
                let hi: usize = (lo + chunk).min(a.len());
                let mid: usize = lo + (hi - lo) / 2;
                let c = &mut a[lo..hi];
                let (l, r) = c.split_at_mut(mid - lo);
                spawn!(scale(l, 3));
                spawn!(scale(r, 5));
                sync!();
                let x = spawn!(slice_sum(&a[lo..mid]));
                let y = spawn!(slice_sum(&a[mid..hi]));
                sync!();
                out[k] = x + y;
                total += x + y;
                k += 1;
            }
            total
        }
    }
}

/// Slice parameters with a sync inside a branch.
fn slice_branch_sync() -> TokenStream {
    quote! {
        pub fn slice_bsum(a: &[u32], out: &mut [u64]) -> u64 {
            if a.len() > 4 {
                let m = a.len() / 2;
                let (al, ar) = a.split_at(m);
                let (ol, or) = out.split_at_mut(m);
                let x = spawn!(slice_bsum(al, ol));
                let y = spawn!(slice_bsum(ar, or));
                sync!();
                out[0] += 1;
                return x + y + a[a.len() - 1] as u64;
            }
            let mut s: u64 = 0;
            for i in 0..a.len() {
                out[i] = a[i] as u64 * 2;
                s += out[i];
            }
            s
        }
    }
}

#[test]
fn slice_loop_sync_expansion() {
    insta::assert_snapshot!(expand(quote!(), slice_loop_sync()));
}

#[test]
fn slice_loop_sync_cuda() {
    insta::assert_snapshot!(cuda(slice_loop_sync()));
}

#[test]
fn slice_branch_sync_expansion() {
    insta::assert_snapshot!(expand(quote!(), slice_branch_sync()));
}

#[test]
fn slice_branch_sync_cuda() {
    insta::assert_snapshot!(cuda(slice_branch_sync()));
}

#[test]
fn branch_sync_ir() {
    insta::assert_snapshot!(dump(&lowered(branch_sync())));
}

#[test]
fn branch_sync_expansion() {
    insta::assert_snapshot!(expand(quote!(), branch_sync()));
}

#[test]
fn branch_sync_cuda() {
    insta::assert_snapshot!(cuda(branch_sync()));
}

#[test]
fn loop_sync_ir() {
    insta::assert_snapshot!(dump(&lowered(loop_sync())));
}

#[test]
fn loop_sync_expansion() {
    insta::assert_snapshot!(expand(quote!(), loop_sync()));
}

#[test]
fn loop_sync_cuda() {
    insta::assert_snapshot!(cuda(loop_sync()));
}

#[test]
fn while_sync_ir() {
    insta::assert_snapshot!(dump(&lowered(while_sync())));
}

#[test]
fn while_sync_expansion() {
    insta::assert_snapshot!(expand(quote!(), while_sync()));
}

#[test]
fn while_sync_cuda() {
    insta::assert_snapshot!(cuda(while_sync()));
}

#[test]
fn nested_sync_ir() {
    insta::assert_snapshot!(dump(&lowered(nested_sync())));
}

#[test]
fn nested_sync_expansion() {
    insta::assert_snapshot!(expand(quote!(), nested_sync()));
}

#[test]
fn nested_sync_cuda() {
    insta::assert_snapshot!(cuda(nested_sync()));
}

// ---- arrays and tuples as results ---------------------------------------------------------------

/// A task returning `[u32; 5]`, spawning itself into `[u32; 5]` destinations.
fn array_result() -> TokenStream {
    quote! {
        pub fn hash5(seed: u32, depth: u32) -> [u32; 5] {
            if depth == 0 {
                return [seed, seed ^ 0x5a5a, seed.wrapping_mul(3), seed.rotate_left(7), 1];
            }
            let a = spawn!(hash5(seed + 1, depth - 1));
            let b = spawn!(hash5(seed * 7, depth - 1));
            sync!();
            let mut out: [u32; 5] = [0; 5];
            for i in 0..5usize {
                out[i] = a[i].wrapping_mul(31) ^ b[(i + 1) % 5];
            }
            out
        }
    }
}

/// A helper returning `(u64, u64)`, and a destructuring `let` of its result.
fn tuple_helper() -> TokenStream {
    quote! {
        pub fn minmax(a: u64, b: u64) -> (u64, u64) {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            (lo, hi.max(lo))
        }
    }
}

#[test]
fn array_result_expansion() {
    insta::assert_snapshot!(expand(quote!(), array_result()));
}

#[test]
fn array_result_cuda() {
    insta::assert_snapshot!(cuda(array_result()));
}

#[test]
fn tuple_helper_expansion() {
    let out = crate::device_macro(quote!(), tuple_helper());
    let file: syn::File = syn::parse2(out).expect("valid Rust");
    insta::assert_snapshot!(prettyplease::unparse(&file));
}

#[test]
fn tuple_helper_cuda() {
    insta::assert_snapshot!(device(tuple_helper()));
}

// ---- issue 8: what the random program generator (test-support/src/program_gen.rs) found ----

#[test]
fn parenthesized_comparisons_keep_their_parentheses() {
    let d = device(quote! {
        pub fn cmp(w: u64, x: u64, y: u64, z: u64) -> bool {
            (w == x) != (y == z) && (w != x) == (y < z)
        }
    });
    // Without them C++ reads `w == x != y == z` as `((w == x) != y) == z`.
    assert!(d.contains("(w == x) != (y == z)"), "{d}");
    assert!(d.contains("(w != x) == (y < z)"), "{d}");
}

#[test]
fn a_literal_argument_of_a_method_on_a_call_takes_the_call_s_type() {
    let d = device(quote! {
        pub fn m(x: u64) -> u64 {
            h(x, 3).wrapping_add(7).max(11)
        }
    });
    // `gc_add(h_dev(..), 7)` is ambiguous in C++ (an int and a gc_u64): the literal is cast.
    assert!(d.contains("gc_add(h_dev(cx, x, 3), (gc_noref_t<decltype(h_dev(cx, x, 3))>)7)"), "{d}");
}

#[test]
fn untyped_array_literals_are_i32_unless_a_literal_needs_more() {
    let d = device(quote! {
        pub fn arrays(n: u32) -> u64 {
            g([1, 2, 3, 4], [5000000000, 7], [n, 2])
        }
    });
    assert!(d.contains("gc_array<gc_i32, 4>{{(gc_i32)1, (gc_i32)2, (gc_i32)3, (gc_i32)4}}"), "{d}");
    assert!(d.contains("gc_array<gc_i64, 2>{{(gc_i64)5000000000, (gc_i64)7}}"), "{d}");
    assert!(d.contains("gc_array<gc_u32, 2>{{n, (gc_u32)2}}"), "{d}");
}

#[test]
fn array_len_is_the_array_s_len() {
    let d = device(quote! {
        pub fn total(a: [u64; 5]) -> u64 {
            let mut s: u64 = 0;
            for i in 0..a.len() {
                s += a[i];
            }
            s
        }
    });
    assert!(d.contains("a_.len()") && !d.contains("static_assert"), "{d}");
}

#[test]
fn a_unit_task_may_end_in_an_if() {
    let c = cuda(quote! {
        pub fn tail_if(t: Temp<u64>, n: u32) {
            let v: u64 = n as u64 * 3;
            if n % 2 == 0 {
                t[0] = v;
            } else {
                t[1] = v + 1;
            }
        }
    });
    assert!(!c.contains("static_assert"), "{c}");
    assert!(c.contains("} else {"), "{c}");
}

/// cilksort (`examples/workloads/sort.rs`): slice parameters kept in the frame across three
/// sequential syncs, sub-slices passed to spawns of itself and of another task (`cilkmerge`).
fn cilksort() -> TokenStream {
    quote! {
        pub fn cilksort(a: &mut [u32], tmp: &mut [u32]) {
            let n: usize = a.len();
            if n <= 32 {
                insertion_sort(a);
                return;
            }
            let q: usize = n / 4;
            spawn!(cilksort(&mut a[..q], &mut tmp[..q]));
            spawn!(cilksort(&mut a[q..2 * q], &mut tmp[q..2 * q]));
            spawn!(cilksort(&mut a[2 * q..3 * q], &mut tmp[2 * q..3 * q]));
            spawn!(cilksort(&mut a[3 * q..], &mut tmp[3 * q..n]));
            sync!();
            spawn!(cilkmerge(&a[..q], &a[q..2 * q], &mut tmp[..2 * q]));
            spawn!(cilkmerge(&a[2 * q..3 * q], &a[3 * q..], &mut tmp[2 * q..n]));
            sync!();
            spawn!(cilkmerge(&tmp[..2 * q], &tmp[2 * q..n], a));
            sync!();
        }
    }
}

/// Strassen's recursive step (`examples/workloads/strassen.rs`): `Temp<f32>` parameters with
/// offsets and strides, two `alloc!`s, three segments (sums, the seven products, `C`).
fn strassen() -> TokenStream {
    quote! {
        pub fn strassen(
            n: usize,
            a: Temp<f32>,
            a0: usize,
            lda: usize,
            b: Temp<f32>,
            b0: usize,
            ldb: usize,
            c: Temp<f32>,
            c0: usize,
            ldc: usize,
        ) {
            if n <= 64 || n % 2 == 1 {
                spawn!(base_mul(n, a, a0, lda, b, b0, ldb, c, c0, ldc));
                return;
            }
            let h: usize = n / 2;
            let hh: usize = h * h;

            let a12: usize = a0 + h;
            let a21: usize = a0 + h * lda;
            let a22: usize = a21 + h;
            let b12: usize = b0 + h;
            let b21: usize = b0 + h * ldb;
            let b22: usize = b21 + h;

            let s = alloc!(f32, 10 * hh);

            let m = alloc!(f32, 7 * hh);
            spawn!(comb(h, h, a, lda, 2, a0, 1.0, a22, 1.0, 0, 0.0, 0, 0.0, s, 0, h));
            spawn!(comb(h, h, b, ldb, 2, b0, 1.0, b22, 1.0, 0, 0.0, 0, 0.0, s, hh, h));
            spawn!(comb(h, h, a, lda, 2, a21, 1.0, a22, 1.0, 0, 0.0, 0, 0.0, s, 2 * hh, h));
            spawn!(comb(h, h, b, ldb, 2, b12, 1.0, b22, -1.0, 0, 0.0, 0, 0.0, s, 3 * hh, h));
            spawn!(comb(h, h, b, ldb, 2, b21, 1.0, b0, -1.0, 0, 0.0, 0, 0.0, s, 4 * hh, h));
            spawn!(comb(h, h, a, lda, 2, a0, 1.0, a12, 1.0, 0, 0.0, 0, 0.0, s, 5 * hh, h));
            spawn!(comb(h, h, a, lda, 2, a21, 1.0, a0, -1.0, 0, 0.0, 0, 0.0, s, 6 * hh, h));
            spawn!(comb(h, h, b, ldb, 2, b0, 1.0, b12, 1.0, 0, 0.0, 0, 0.0, s, 7 * hh, h));
            spawn!(comb(h, h, a, lda, 2, a12, 1.0, a22, -1.0, 0, 0.0, 0, 0.0, s, 8 * hh, h));
            spawn!(comb(h, h, b, ldb, 2, b21, 1.0, b22, 1.0, 0, 0.0, 0, 0.0, s, 9 * hh, h));
            sync!();
            spawn!(strassen(h, s, 0, h, s, hh, h, m, 0, h));
            spawn!(strassen(h, s, 2 * hh, h, b, b0, ldb, m, hh, h));
            spawn!(strassen(h, a, a0, lda, s, 3 * hh, h, m, 2 * hh, h));
            spawn!(strassen(h, a, a22, lda, s, 4 * hh, h, m, 3 * hh, h));
            spawn!(strassen(h, s, 5 * hh, h, b, b22, ldb, m, 4 * hh, h));
            spawn!(strassen(h, s, 6 * hh, h, s, 7 * hh, h, m, 5 * hh, h));
            spawn!(strassen(h, s, 8 * hh, h, s, 9 * hh, h, m, 6 * hh, h));
            sync!();
            let c12: usize = c0 + h;
            let c21: usize = c0 + h * ldc;
            let c22: usize = c21 + h;

            spawn!(comb(h, h, m, h, 4, 0, 1.0, 3 * hh, 1.0, 4 * hh, -1.0, 6 * hh, 1.0, c, c0, ldc));

            spawn!(comb(h, h, m, h, 2, 2 * hh, 1.0, 4 * hh, 1.0, 0, 0.0, 0, 0.0, c, c12, ldc));

            spawn!(comb(h, h, m, h, 2, hh, 1.0, 3 * hh, 1.0, 0, 0.0, 0, 0.0, c, c21, ldc));

            spawn!(comb(h, h, m, h, 4, 0, 1.0, hh, -1.0, 2 * hh, 1.0, 5 * hh, 1.0, c, c22, ldc));
            sync!();
        }
    }
}

/// A shared and a mutable slice, `split_at_mut`, `..=` and `lo..` ranges, reading an element.
fn slice_split() -> TokenStream {
    quote! {
        pub fn halves(a: &[u32], out: &mut [u32]) -> u32 {
            if out.is_empty() {
                return 0;
            }
            if out.len() < 2 {
                return a[0];
            }
            let m = out.len() / 2;
            let (lo, hi) = out.split_at_mut(m);
            let x = spawn!(halves(&a[..=m], lo));
            let y = spawn!(halves(&a[m..], hi));
            sync!();
            x.max(y)
        }
    }
}

#[test]
fn cilksort_ir() {
    insta::assert_snapshot!(dump(&lowered(cilksort())));
}

#[test]
fn cilksort_expansion() {
    insta::assert_snapshot!(expand(quote!(), cilksort()));
}

#[test]
fn cilksort_cuda() {
    insta::assert_snapshot!(cuda(cilksort()));
}

/// A generic task (`T: Key`): generic spawns (`gsort::<T>`), a child's generic result in the
/// frame (`gmax::<T>`), a generic helper called by name.
fn generic_sort() -> TokenStream {
    quote! {
        pub fn gsort<T: Key>(a: &mut [T], tmp: &mut [T]) -> T {
            let n: usize = a.len();
            if n <= 32 {
                insertion_sort(a);
                return a[n - 1];
            }
            let h: usize = n / 2;
            spawn!(gsort::<T>(&mut a[..h], &mut tmp[..h]));
            spawn!(gsort::<T>(&mut a[h..], &mut tmp[h..n]));
            sync!();
            spawn!(gmerge::<T>(&a[..h], &a[h..], &mut tmp[..n]));
            let top = spawn!(gmax::<T>(&a[h..]));
            sync!();
            larger::<T>(top, tmp[n - 1])
        }
    }
}

#[test]
fn generic_sort_ir() {
    insta::assert_snapshot!(dump(&lowered(generic_sort())));
}

#[test]
fn generic_sort_expansion() {
    insta::assert_snapshot!(expand(quote!(), generic_sort()));
}

#[test]
fn generic_sort_cuda() {
    insta::assert_snapshot!(cuda(generic_sort()));
}

/// A generic helper: its device form is a function template.
#[test]
fn generic_helper_expansion() {
    let out = crate::device_macro(
        quote!(),
        quote! {
            pub fn lower_bound<T: Key>(b: &[T], x: T) -> usize {
                let mut lo: usize = 0;
                let mut hi: usize = b.len();
                while lo < hi {
                    let mid: usize = lo + (hi - lo) / 2;
                    if b[mid] < x {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        },
    );
    let file: syn::File = match syn::parse2(out.clone()) {
        Ok(f) => f,
        Err(e) => panic!("expansion is not valid Rust: {e}\n{out}"),
    };
    insta::assert_snapshot!(prettyplease::unparse(&file));
}

/// Plain structs: a slice of them, a struct result stored in the frame, a struct literal, field
/// access and a struct parameter of a helper.
fn closest() -> TokenStream {
    quote! {
        pub fn closest(p: &[Point]) -> Pair {
            if p.len() <= 8 {
                return brute(p);
            }
            let mid: usize = p.len() / 2;
            let l = spawn!(closest(&p[..mid]));
            let r = spawn!(closest(&p[mid..]));
            sync!();
            let c: Pair = Pair { d2: dist2(p[0], p[mid]), a: p[0], b: p[mid] };
            if c.d2 * 0.5 < l.d2.min(r.d2) {
                return c;
            }
            cross(p, mid, closer(l, r))
        }
    }
}

#[test]
fn closest_expansion() {
    insta::assert_snapshot!(expand(quote!(), closest()));
}

#[test]
fn closest_cuda() {
    insta::assert_snapshot!(cuda(closest()));
}

/// `#[derive(DeviceStruct)]`: the C++ definition (arrays and nested structs included) and the
/// Rust layout.
#[test]
fn device_struct_expansion() {
    let out = crate::device_struct_derive(quote! {
        #[repr(C)]
        pub struct Cell {
            pub w: f32,
            pub corners: [Point; 2],
            pub tag: u8,
        }
    });
    let file: syn::File = match syn::parse2(out.clone()) {
        Ok(f) => f,
        Err(e) => panic!("expansion is not valid Rust: {e}\n{out}"),
    };
    insta::assert_snapshot!(prettyplease::unparse(&file));
}

#[test]
fn device_struct_misuse_is_reported() {
    let text = |item: TokenStream| crate::device_struct_derive(item).to_string();
    assert!(text(quote!(
        pub struct P {
            x: f32,
        }
    ))
    .contains("must be `#[repr(C)]`"));
    assert!(text(quote!(
        #[repr(C)]
        pub struct P(f32);
    ))
    .contains("named fields"));
    assert!(text(quote!(
        #[repr(C)]
        pub enum P {
            A,
        }
    ))
    .contains("named fields"));
    assert!(text(quote!(
        #[repr(C)]
        pub struct P {
            x: Vec<f32>,
        }
    ))
    .contains("a scalar, a fixed-size array"));
    assert!(text(quote!(
        #[repr(C)]
        pub struct P {
            x: (f32, f32),
        }
    ))
    .contains("a scalar, a fixed-size array"));
    assert!(text(quote!(
        #[repr(C)]
        pub struct P {
            new: f32,
        }
    ))
    .contains("CUDA C++ reserves it"));
    assert!(text(quote!(
        #[repr(C)]
        pub struct P<T> {
            x: T,
        }
    ))
    .contains("named fields and no generic parameters"));
}

#[test]
fn strassen_cuda() {
    insta::assert_snapshot!(cuda(strassen()));
}

#[test]
fn slice_split_expansion() {
    insta::assert_snapshot!(expand(quote!(), slice_split()));
}

#[test]
fn slice_split_cuda() {
    insta::assert_snapshot!(cuda(slice_split()));
}

#[test]
fn slice_helper_cuda() {
    insta::assert_snapshot!(device(quote! {
        pub fn lower_bound(b: &[u32], x: u32) -> usize {
            let mut lo: usize = 0;
            let mut hi: usize = b.len();
            while lo < hi {
                let mid: usize = lo + (hi - lo) / 2;
                if b[mid] < x {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        }
    }));
}

#[test]
fn slice_misuse_is_reported() {
    let cases = [
        (
            quote!(
                fn f(a: &mut [u32]) -> &[u32] {
                    a
                }
            ),
            "cannot return a slice",
        ),
        (
            quote!(
                fn f(a: [&[u32]; 2]) {}
            ),
            "element of an array",
        ),
        (
            quote!(
                fn f(a: &Vec<u32>) {}
            ),
            "reference or pointer type",
        ),
        (
            quote!(
                fn f(a: &'static [u32]) {}
            ),
            "reference or pointer type",
        ),
        (
            quote!(
                fn f(a: &[u32]) -> u32 {
                    let b = &a;
                    0
                }
            ),
            "references and dereferences",
        ),
    ];
    for (item, want) in cases {
        let func: syn::ItemFn = syn::parse2(item).expect("parses");
        let mut errors = crate::error::Errors::new();
        crate::check::function(&func, crate::check::Mode::Task, &mut errors);
        let text = format!("{errors:?}");
        assert!(text.contains(want), "{want}: {text}");
    }
    let frame = quote! {
        fn f(a: &mut [u32]) {
            let l: &mut [u32] = &mut a[..1];
            spawn!(f(&mut a[1..]));
            sync!();
            l[0] = 1;
        }
    };
    let e = crate::compile_task(&syn::parse2(frame).expect("parses"), false).expect_err("slice local in the frame");
    assert!(e.to_string().contains("cannot live across"), "{e}");
    let machine = quote! {
        fn f(a: &mut [u32]) {
            if a.len() > 1 {
                spawn!(f(&mut a[1..]));
                sync!();
            }
        }
    };
    crate::compile_task(&syn::parse2(machine).expect("parses"), false).expect("slice parameters in a machine");
    let machine_local = quote! {
        fn f(a: &mut [u32]) {
            for i in 0..a.len() {
                let l: &mut [u32] = &mut a[i..];
                spawn!(f(&mut a[1..]));
                sync!();
                l[0] = 1;
            }
        }
    };
    let e = crate::compile_task(&syn::parse2(machine_local).expect("parses"), false)
        .expect_err("slice local in a machine's frame");
    assert!(e.to_string().contains("cannot live across"), "{e}");
}

#[test]
fn a_module_constant_in_device_code_is_a_clear_static_assert() {
    let d = device(quote! {
        pub fn below(n: u32) -> u32 {
            if n < LIMIT {
                return n;
            }
            n - 1
        }
    });
    // The CUDA program fails to compile with this message (the host backends see the constant).
    assert!(d.contains("static_assert(false, \"gpu-cilk: the name `LIMIT` (device code sees only locals"), "{d}");
    assert!(!d.contains("n < LIMIT"), "{d}");
}

// ---- Warp tasks (`#[gpu_cilk(warp)]`).

fn warp_rows() -> TokenStream {
    quote! {
        pub fn warp_rows(a: &mut [f32], n: usize, s: f32) -> u32 {
            if a.is_empty() {
                return 0;
            }
            for i in gpu_cilk::lanes(0, n) {
                let mut acc: f32 = 0.0;
                for j in 0..n {
                    acc += a[i * n + j];
                }
                if acc < 0.0 {
                    continue;
                }
                a[i * n] = acc * s;
            }
            for i in lanes(0, n) {
                a[i] += 1.0;
            }
            7
        }
    }
}

fn lowered_warp(item: TokenStream) -> ir::Task {
    let func: syn::ItemFn = syn::parse2(item).expect("item parses");
    let mut errors = crate::error::Errors::new();
    crate::check::function(&func, crate::check::Mode::Warp, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    let model = crate::parse::function(&func).expect("model");
    let mut t = crate::lower::task(model).expect("lowers");
    t.warp = true;
    t
}

#[test]
fn warp_task_cuda() {
    let task = lowered_warp(warp_rows());
    let f = crate::write::task_fragment(&task);
    let dev = crate::write::task_device_fn(&task);
    // The cooperative entry spreads the lanes loops; seg0 and the serial form do not.
    assert!(f.types.contains("static const bool WARP = true;"));
    assert_eq!(f.defs.matches("gc_lane()").count(), 2, "{}", f.defs);
    assert_eq!(f.defs.matches("__syncwarp();").count(), 2, "{}", f.defs);
    assert!(!dev.def.contains("gc_lane()"), "{}", dev.def);
    insta::assert_snapshot!(format!(
        "{}\n{}\n// sites: {:?}\n\n// ---- device fn\n{}",
        f.types, f.defs, f.sites, dev.def
    ));
}

#[test]
fn warp_task_expansion() {
    insta::assert_snapshot!(expand(quote!(warp), warp_rows()));
}

#[test]
fn warp_task_misuse() {
    fn errs(mode: crate::check::Mode, item: TokenStream) -> Vec<String> {
        let func: syn::ItemFn = syn::parse2(item).expect("item parses");
        let mut errors = crate::error::Errors::new();
        crate::check::function(&func, mode, &mut errors);
        errors.finish(()).err().map(|e| e.into_iter().map(|x| x.to_string()).collect()).unwrap_or_default()
    }
    use crate::check::Mode;
    let spawn = errs(Mode::Warp, quote! { fn w(n: u32) { spawn!(w(n)); sync!(); let t = alloc!(u32, 4); } });
    assert!(spawn[0].starts_with("`spawn!` cannot be used in a `#[gpu_cilk(warp)]` task"), "{spawn:?}");
    assert!(spawn[1].starts_with("`sync!` cannot be used in a `#[gpu_cilk(warp)]` task"), "{spawn:?}");
    assert!(spawn[2].starts_with("`alloc!` cannot be used in a `#[gpu_cilk(warp)]` task"), "{spawn:?}");
    let outside = errs(Mode::Task, quote! { fn t(n: usize) { for i in lanes(0, n) {} } });
    assert!(outside[0].starts_with("`lanes(..)` loops can only be used in a `#[gpu_cilk(warp)]` task"), "{outside:?}");
    let helper = errs(Mode::Device, quote! { fn h(n: usize) { for i in lanes(0, n) {} } });
    assert!(helper[0].starts_with("`lanes(..)` loops can only"), "{helper:?}");
    let inner = errs(
        Mode::Warp,
        quote! { fn w(n: usize) -> u32 { for i in lanes(0, n) { for j in lanes(0, n) {} if i > 2 { return 1; } if i > 3 { break; } while i > 4 { break; } } 0 } },
    );
    assert_eq!(inner.len(), 3, "{inner:?}");
    assert!(inner[0].starts_with("a `lanes(..)` loop cannot stand inside another"), "{inner:?}");
    assert!(inner[1].starts_with("`return` cannot stand inside a `lanes(..)` loop"), "{inner:?}");
    assert!(inner[2].starts_with("a `lanes(..)` loop cannot be left with `break`"), "{inner:?}");
    let pos = errs(Mode::Warp, quote! { fn w(n: usize) { let r = lanes(0, n); } });
    assert!(pos[0].starts_with("`lanes(..)` can only be the iterator"), "{pos:?}");
    // `#[gpu_cilk(foo)]` is still rejected.
    let out = crate::task_macro(quote!(foo), quote! { fn f() {} }).to_string();
    assert!(out.contains("takes no arguments other than `warp`"), "{out}");
}

#[test]
fn uninit_temporaries_are_not_zeroed_on_the_device() {
    let task = lowered(quote! {
        fn t(n: usize) -> f32 {
            let a = alloc!(f32, n, uninit);
            let b = alloc!(f32, n);
            a[0] = 1.0;
            a[0] + b[0]
        }
    });
    let f = crate::write::task_fragment(&task);
    assert!(f.defs.contains("gc_temp<gc_f32> a_ = gc_alloc_temp<gc_f32>(cx, (gc_u64)(n), 0u, false);"), "{}", f.defs);
    assert!(f.defs.contains("gc_temp<gc_f32> b = gc_alloc_temp<gc_f32>(cx, (gc_u64)(n), 1u);"), "{}", f.defs);
    let bad = crate::task_macro(quote!(), quote! { fn u(n: usize) { let a = alloc!(f32, n, zeroed); } }).to_string();
    assert!(bad.contains("`alloc!` takes an element type and a length"), "{bad}");
}

/// Best-first branch and bound: priority spawns (`priority = ub`) and two shared bounds.
fn bnb() -> TokenStream {
    quote! {
        pub fn bnb(sw: &[u64], i: usize, cap: u64, ub: u64, best: &Max<u64>, nodes: &Sum<u64>) {
            if ub <= best.load() {
                return;
            }
            nodes.fetch_add(1);
            best.fetch_max(cap);
            if i + 1 < sw.len() {
                spawn!(bnb(sw, i + 1, cap / 2, ub - 1, best, nodes), priority = ub - 1);
                spawn!(bnb(sw, i + 1, cap, ub - 2, best, nodes), priority = ub / 2);
            }
        }
    }
}

#[test]
fn bnb_ir() {
    insta::assert_snapshot!(dump(&lowered(bnb())));
}

#[test]
fn bnb_expansion() {
    insta::assert_snapshot!(expand(quote!(), bnb()));
}

#[test]
fn bnb_cuda() {
    insta::assert_snapshot!(cuda(bnb()));
}
