use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let a = alloc!(bool, 4);
    let b = alloc!(u64);
    let mut c = alloc!(u64, 4);
    for i in 0..n {
        let d = alloc!(u64, 4);
    }
    let e = 1 + alloc!(u64, 4);
    alloc!(u64, 2);
    sync!();
    0
}

#[gpu_cilk::device]
fn h(n: u32) -> u32 {
    let t = alloc!(u32, 4);
    n
}

fn main() {}
