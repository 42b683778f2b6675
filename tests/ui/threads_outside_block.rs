use gpu_cilk::prelude::*;

// `threads(..)` loops, `shared!` arrays and `block_sync!()` belong to `#[gpu_cilk(block)]` tasks.
#[gpu_cilk]
fn task(a: &mut [u32]) {
    let s = shared!([0u32; 4]);
    for i in threads(0, a.len()) {
        a[i] = s[0];
    }
    block_sync!();
}

#[gpu_cilk(warp)]
fn warp_task(a: &mut [u32]) {
    for i in threads(0, a.len()) {
        a[i] = 0;
    }
}

#[gpu_cilk(block)]
fn block_task(a: &mut [u32]) {
    for i in lanes(0, a.len()) {
        a[i] = 0;
    }
}

#[gpu_cilk::device]
fn helper(a: &mut [u32]) {
    block_sync!();
    for i in gpu_cilk::threads(0, a.len()) {
        a[i] = 0;
    }
}

fn main() {}
