use gpu_cilk::prelude::*;

#[gpu_cilk]
fn bump(a: &mut [u32]) {
    for i in 0..a.len() {
        a[i] += 1;
    }
}

// The child's slice would point into this task's segment, gone once the segment ends at the sync.
#[gpu_cilk]
fn root() -> u32 {
    let mut arr: [u32; 4] = [0; 4];
    spawn!(bump(&mut arr[..2]));
    let (lo, hi) = arr.split_at_mut(2);
    sync!();
    arr[0]
}

// A slice parameter's name always means that slice.
#[gpu_cilk]
fn shadow(a: &mut [u32]) {
    let mut a = [1u32; 4];
    spawn!(bump(&mut a[..]));
    sync!();
}

fn main() {}
