use gpu_cilk::prelude::*;

// `lanes(..)` loops belong to `#[gpu_cilk(warp)]` tasks only.
#[gpu_cilk]
fn task(a: &mut [u32]) {
    for i in lanes(0, a.len()) {
        a[i] = 0;
    }
}

#[gpu_cilk::device]
fn helper(a: &mut [u32]) {
    for i in gpu_cilk::lanes(0, a.len()) {
        a[i] = 0;
    }
}

#[gpu_cilk(wrap)]
fn typo(n: u32) -> u32 {
    n
}

fn main() {}
