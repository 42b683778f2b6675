//! Callees that the generated modules must name correctly: a helper in another module called by
//! path and imported by `use`, a helper calling helpers, tasks named like the items of a task
//! module (`args`, `task`) spawned from other tasks, mutual recursion, a `self::` path and a plain
//! call of a task. Runs on the serial and cpu backends against the plain functions. (A plain call
//! of a function named `args` or `task` from a task body would mean the generated constructor.)

use gpu_cilk::prelude::*;

mod util {
    /// A helper in another module.
    #[gpu_cilk::device]
    pub fn mix(x: u64) -> u64 {
        x.wrapping_mul(0x9e3779b97f4a7c15) ^ (x >> 7)
    }
}

use util::mix;

/// A helper calling a helper by its imported name and by its path.
#[gpu_cilk::device]
fn twice(x: u64) -> u64 {
    mix(util::mix(x))
}

/// A task named like the generated `args` constructor.
#[gpu_cilk]
fn args(n: u32) -> u64 {
    n as u64 + 1
}

/// A task named like the generated `task` constructor, spawning itself and `args`.
#[gpu_cilk]
fn task(n: u32) -> u64 {
    if n == 0 {
        return 1;
    }
    let a = spawn!(args(n));
    let b = spawn!(task(n - 1));
    sync!();
    a + b
}

#[gpu_cilk]
fn even(n: u32) -> bool {
    if n == 0 {
        return true;
    }
    let r = spawn!(odd(n - 1));
    sync!();
    r
}

#[gpu_cilk]
fn odd(n: u32) -> bool {
    if n == 0 {
        return false;
    }
    let r = spawn!(even(n - 1));
    sync!();
    r
}

/// A task that `root` calls plainly (its serial form runs inside `root`).
#[gpu_cilk]
fn odd_sum(n: u32) -> u64 {
    let mut s: u64 = 0;
    for i in 0..n {
        if i % 2 == 1 {
            s += i as u64;
        }
    }
    s
}

#[gpu_cilk]
fn root(n: u32) -> u64 {
    let t: u64 = odd_sum(n);
    let x = spawn!(self::task(n));
    let e = spawn!(even(n));
    sync!();
    twice(t) ^ x ^ (e as u64)
}

fn main() {
    for kind in [BackendKind::Serial, BackendKind::Cpu] {
        let rt = Runtime::with_backend(kind).expect("backend");
        for n in 0..6 {
            assert_eq!(rt.run(root::task(n)).expect("runs"), root(n), "root({n}) on {kind:?}");
        }
    }
}
