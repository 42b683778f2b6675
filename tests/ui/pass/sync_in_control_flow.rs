//! `sync!()` wherever a statement can stand (the shapes that used to be rejected): in a branch
//! with a spawn destination that is never read, in a `while` with a spawn per iteration, in a
//! `loop` left by `break`, in a block, and in a branch of a task with a slice parameter (`halve`,
//! once `tests/ui/slice_in_machine.rs`). Runs on the serial and cpu backends against the plain
//! functions.

use gpu_cilk::prelude::*;

#[gpu_cilk]
fn in_branch(n: u32) -> u64 {
    let _x = spawn!(leaf(n));
    if n > 2 {
        sync!();
    }
    0
}

#[gpu_cilk]
fn in_while(n: u32) -> u64 {
    let mut total: u64 = 0;
    let mut i: u32 = 0;
    while i < n {
        let x = spawn!(leaf(i));
        sync!();
        total += x;
        i += 1;
    }
    total
}

#[gpu_cilk]
fn in_loop_and_block(n: u32) -> u64 {
    let mut k: u32 = 0;
    let mut s: u64 = 0;
    loop {
        {
            let y = spawn!(leaf(k));
            sync!();
            s = s * 3 + y;
        }
        k += 1;
        if k >= n {
            break;
        }
    }
    s
}

#[gpu_cilk]
fn halve(a: &mut [u32]) {
    if a.len() > 1 {
        spawn!(halve(&mut a[1..]));
        sync!();
        a[0] += a[1];
    }
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64 + 1
}

fn main() {
    for backend in [BackendKind::Serial, BackendKind::Cpu] {
        let rt = Runtime::with_config(Config::default().backend(backend)).expect("runtime");
        for n in [0u32, 1, 3, 6] {
            assert_eq!(rt.run(in_branch::task(n)).expect("runs"), in_branch(n));
            assert_eq!(rt.run(in_while::task(n)).expect("runs"), in_while(n));
            assert_eq!(rt.run(in_loop_and_block::task(n)).expect("runs"), in_loop_and_block(n));
            let mut v: Vec<u32> = (1..=n).collect();
            let mut expect = v.clone();
            halve(&mut expect);
            rt.run(halve::task(&mut v)).expect("runs");
            assert_eq!(v, expect);
        }
    }
    assert_eq!(in_while(3), 1 + 2 + 3);
    let mut v = vec![1u32, 2, 3];
    halve(&mut v);
    assert_eq!(v, [6, 5, 3]);
}
