use gpu_cilk::prelude::*;

// A bound only moves one way: `store` (and `swap`, ..) would move it both ways.
#[gpu_cilk]
fn overwrite(best: &Max<u64>, v: u64) {
    best.store(v);
}

// A bound cannot be kept in a local across a `sync!()` (only the parameter is in the frame).
#[gpu_cilk]
fn kept(best: &Max<u64>, n: u64) {
    let b: &Max<u64> = best;
    if n > 0 {
        spawn!(kept(best, n - 1));
    }
    sync!();
    b.fetch_max(n);
}

// Bounds are passed by shared reference (`&Max<u64>`).
#[gpu_cilk]
fn by_value(best: Max<u64>) {}

#[gpu_cilk]
fn by_mut(best: &mut Max<u64>) {}

// A bound cannot be returned.
#[gpu_cilk]
fn returned(n: u64) -> &Max<u64> {
    n
}

// Not yet in a task whose `sync!()` stands in a loop.
#[gpu_cilk]
fn looping(best: &Max<u64>, n: u64) {
    let mut i: u64 = 0;
    while i < n {
        spawn!(looping(best, i));
        sync!();
        i += 1;
    }
}

fn main() {}
