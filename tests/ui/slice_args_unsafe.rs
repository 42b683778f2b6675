use gpu_cilk::prelude::*;
use gpu_cilk::runtime::RawSlice;

#[gpu_cilk]
fn bump(a: &mut [u32]) {
    for i in 0..a.len() {
        a[i] += 1;
    }
}

fn main() {
    let mut v = vec![1u32, 2, 3];
    // `args` of a task with slices erases the borrow: only generated code and `task(..)` call it.
    let _args = bump::args(&mut v);
    // Nor can safe code build the pair itself (only the empty `RawSlice::default()`).
    let _args = bump::Args { a: RawSlice::from_mut(&mut v) };
}
