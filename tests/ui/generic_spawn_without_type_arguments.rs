use gpu_cilk::prelude::*;

#[gpu_cilk]
fn sum<T: Key>(a: &[T], out: &mut [T]) {
    if a.len() == 1 {
        out[0] = a[0];
    }
}

// A generic task is spawned with its type arguments: `spawn!(sum::<T>(..))`.
#[gpu_cilk]
fn outer<T: Key>(a: &[T], out: &mut [T]) {
    spawn!(sum(a, out));
    sync!();
}

fn main() {}
