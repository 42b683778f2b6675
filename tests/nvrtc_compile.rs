//! Every task of every example, workload and fixture, assembled into one CUDA program exactly as
//! the cuda backend assembles it, compiled with NVRTC for `compute_80` and `compute_90` (no GPU
//! needed). Skips with a printed reason when NVRTC cannot be loaded, unless
//! `GPU_CILK_REQUIRE_NVRTC=1`, which turns that into a failure (CI sets it).
//!
//! The assembly (which the runtime's program builder must reproduce byte for byte):
//! 1. `#define GC_QBASE_<name> <base>` per registered task, in registry order, bases the
//!    cumulative `SYNCS + 2`;
//! 2. `kernels/include/gpu_cilk/runtime.cuh`, `xmalloc.cuh` and `temp.cuh` (the device heap of
//!    task-scoped temporaries, `alloc!`);
//! 3. every task's `decls`, then every task's `types` (registry order);
//! 4. every device function reachable from the tasks' `helpers` (depth-first, in list order,
//!    each once by name; cycles are normal: a recursive task's serial form names itself):
//!    all `decl`s, then all `def`s;
//! 5. every task's `defs`.

#![allow(dead_code)]

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::backend::cuda::{compile_ptx, Arch};
use gpu_cilk::runtime::{CilkTask, DeviceFn, Registry};

#[path = "../examples/workloads/fib.rs"]
mod fib_workload;
#[path = "../examples/workloads/queens.rs"]
mod queens_workload;
#[path = "support/temps.rs"]
mod temps;

// ---- fixtures (the shapes of tests/compile_subset.rs and tests/support/random_tree.rs)

#[gpu_cilk]
pub fn fib(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let x = spawn!(fib(n - 1));
    let y = spawn!(fib(n - 2));
    sync!();
    x + y
}

#[gpu_cilk]
pub fn wide(d: u32, k: u32) -> u64 {
    if d == 0 {
        return 1;
    }
    let mut parts: [u64; 8] = [0; 8];
    let mut i = 0;
    while i < k {
        parts[i as usize] = spawn!(wide(d - 1, k));
        i += 1;
    }
    spawn!(fib(3));
    sync!();
    let mut s: u64 = 1;
    for j in 0..k as usize {
        s += parts[j];
    }
    let extra = spawn!(fib(d));
    sync!();
    s + extra
}

#[gpu_cilk]
fn ping(n: u32) -> u64 {
    if n == 0 {
        return 1;
    }
    let a = spawn!(pong(n - 1));
    let b = spawn!(other::pang(n - 1));
    sync!();
    a + 2 * b + weight(n)
}

#[gpu_cilk]
fn pong(n: u32) -> u64 {
    if n == 0 {
        return 2;
    }
    let mut acc: u64 = n as u64;
    let p = spawn!(ping(n - 1));
    sync!();
    acc += p;
    let q = spawn!(other::pang(n / 2));
    sync!();
    acc * 3 + q
}

mod other {
    use super::*;

    #[gpu_cilk]
    pub fn pang(n: u32) -> u64 {
        if n < 2 {
            return 5;
        }
        let x = spawn!(super::ping(n - 1));
        sync!();
        x % 1000 + 7
    }
}

#[gpu_cilk::device]
fn weight(n: u32) -> u64 {
    let mut w: u64 = 0;
    for i in 0..=n {
        w = w.wrapping_add((i as u64).pow(2));
    }
    w.min(1000)
}

#[gpu_cilk]
fn walk(depth: u32, width: u32) {
    if depth == 0 {
        return;
    }
    for _i in 0..width {
        spawn!(walk(depth - 1, width));
    }
    spawn!(leaf(depth));
    sync!();
    spawn!(leaf(depth + 100));
}

#[gpu_cilk]
fn leaf(x: u32) -> u32 {
    x.count_ones()
}

#[gpu_cilk]
fn early(n: u32) -> u64 {
    if n < 3 {
        return n as u64;
    }
    let mut parts: [u64; 3] = [0; 3];
    parts[0] = spawn!(early(n - 1));
    if n % 2 == 0 {
        return 10 * n as u64;
    }
    parts[1] = spawn!(early(n - 2));
    spawn!(fib(n));
    let mut k: u32 = 0;
    while k < n {
        if k == 4 {
            return 1000 + k as u64;
        }
        k += 1;
    }
    sync!();
    parts[0] + parts[1] + parts[2]
}

#[gpu_cilk]
fn mixed(n: u32) -> i64 {
    let base: i64 = n as i64 - 3;
    let mut sign = 1i64;
    if n == 0 {
        sign = -1;
    } else if n == 1 {
        sign = 2;
    } else {
        sign += 1;
    }
    let direct = fib(n.min(10)) as i64;
    let a = spawn!(mixed_leaf(n));
    sync!();
    let b: i64 = a * sign;
    let c = spawn!(mixed_leaf(n + 1));
    sync!();
    base + b + c + direct
}

#[gpu_cilk]
fn mixed_leaf(n: u32) -> i64 {
    (n as i64) * 2 - 5
}

/// SplitMix64 (random_tree.rs).
#[gpu_cilk::device]
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

#[gpu_cilk]
pub fn noise(h: u64) -> u64 {
    h.rotate_left(7)
}

#[gpu_cilk]
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

// ---- assembly

const RUNTIME_CUH: &str = include_str!("../kernels/include/gpu_cilk/runtime.cuh");
const XMALLOC_CUH: &str = include_str!("../kernels/include/gpu_cilk/xmalloc.cuh");
const TEMP_CUH: &str = include_str!("../kernels/include/gpu_cilk/temp.cuh");

fn collect_helpers(list: &[&'static DeviceFn], seen: &mut Vec<&'static DeviceFn>) {
    for &h in list {
        if seen.iter().any(|s| s.name == h.name) {
            continue;
        }
        seen.push(h);
        collect_helpers(h.helpers, seen);
    }
}

/// The whole CUDA program for the tasks reachable from `T`.
fn assemble<T: CilkTask>() -> String {
    let reg = Registry::of::<T>();
    let mut src = String::new();
    let mut base = 0;
    for e in reg.entries() {
        src.push_str(&format!("#define GC_QBASE_{} {}\n", e.name, base));
        base += e.syncs + 2;
    }
    src.push_str(RUNTIME_CUH);
    src.push('\n');
    src.push_str(XMALLOC_CUH);
    src.push('\n');
    src.push_str(TEMP_CUH);
    src.push('\n');
    let frags: Vec<_> = reg
        .entries()
        .iter()
        .map(|e| e.cuda.unwrap_or_else(|| panic!("task `{}` has no CUDA fragment", e.name)))
        .collect();
    for f in &frags {
        src.push_str(f.decls);
    }
    for f in &frags {
        src.push_str(f.types);
    }
    let mut helpers = Vec::new();
    for f in &frags {
        collect_helpers(f.helpers, &mut helpers);
    }
    for h in &helpers {
        src.push_str(h.decl);
    }
    for h in &helpers {
        src.push_str(h.def);
    }
    for f in &frags {
        src.push_str(f.defs);
    }
    src
}

fn programs() -> Vec<(&'static str, String)> {
    vec![
        ("fib", assemble::<fib_workload::fib::Task>()),
        ("queens", assemble::<queens_workload::queens::Task>()),
        ("queens_bits", assemble::<queens_workload::queens_bits::Task>()),
        ("wide", assemble::<wide::Task>()),
        ("ping", assemble::<ping::Task>()),
        ("walk", assemble::<walk::Task>()),
        ("early", assemble::<early::Task>()),
        ("mixed", assemble::<mixed::Task>()),
        ("rnode", assemble::<rnode::Task>()),
        ("scatter_sum", assemble::<temps::scatter_sum::Task>()),
        ("tree_root", assemble::<temps::tree_root::Task>()),
        ("two_rounds", assemble::<temps::two_rounds::Task>()),
        ("waves", assemble::<temps::waves::Task>()),
    ]
}

#[test]
fn every_fixture_compiles_with_nvrtc() {
    let require = std::env::var("GPU_CILK_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
    if let Err(e) = gpu_cilk::runtime::backend::cuda::nvrtc_version() {
        assert!(!require, "GPU_CILK_REQUIRE_NVRTC=1 but NVRTC cannot be loaded: {e}");
        eprintln!("skipping: NVRTC cannot be loaded ({e}); source scripts/nvrtc-env.sh to run this test");
        return;
    }
    let mut failures = Vec::new();
    for (name, src) in programs() {
        if let Ok(dir) = std::env::var("GPU_CILK_DUMP_CUDA") {
            let _ = std::fs::write(format!("{dir}/{name}.cu"), &src);
        }
        for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
            match compile_ptx(&src, name, arch) {
                Ok(ptx) => assert!(ptx.contains(&format!("gc_{name}_q0")), "{name}: no q0 kernel in the PTX"),
                Err(e) => failures.push(format!("{name} ({}): {e}", arch.compute())),
            }
        }
    }
    assert!(failures.is_empty(), "NVRTC failed:\n{}", failures.join("\n\n"));
}

#[test]
fn assembly_is_deterministic() {
    assert_eq!(programs(), programs());
}

#[test]
fn sites_name_the_rust_source() {
    let f = <fib_workload::fib::Task as CilkTask>::CUDA.expect("fragment");
    assert_eq!(f.name, "fib");
    assert_eq!(f.sites.len(), 2, "{:?}", f.sites);
    assert!(
        f.sites
            .iter()
            .all(|s| s.contains("examples/workloads/fib.rs:12:") || s.contains("examples/workloads/fib.rs:13:")),
        "{:?}",
        f.sites
    );
}
