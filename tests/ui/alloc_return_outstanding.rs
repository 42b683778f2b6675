use gpu_cilk::prelude::*;

#[gpu_cilk]
fn fill(t: Temp<u64>, i: usize) {
    t[i] = i as u64;
}

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let t = alloc!(u64, 4);
    spawn!(fill(t, 0));
    if n > 3 {
        return 1;
    }
    sync!();
    t[0]
}

fn main() {}
