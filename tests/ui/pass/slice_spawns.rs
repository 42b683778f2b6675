use gpu_cilk::prelude::*;

#[gpu_cilk]
fn fill(a: &mut [u32], v: u32) {
    for i in 0..a.len() {
        a[i] = v;
    }
}

#[gpu_cilk]
fn sum(a: &[u32]) -> u64 {
    let mut s = 0u64;
    for i in 0..a.len() {
        s += a[i] as u64;
    }
    s
}

// Not races, and they must compile: readers share a slice; a sync separates writers; disjoint
// halves; a writer in each branch of an `if`.
#[gpu_cilk]
fn fine(a: &mut [u32], b: &[u32], n: u32) -> u64 {
    let x = spawn!(sum(b));
    let y = spawn!(sum(b));
    sync!();
    spawn!(fill(a, 1));
    sync!();
    spawn!(fill(a, 2));
    sync!();
    let (lo, hi) = a.split_at_mut(1);
    spawn!(fill(lo, 3));
    spawn!(fill(hi, 4));
    sync!();
    if n > 2 {
        spawn!(fill(a, 5));
    } else {
        spawn!(fill(a, 6));
    }
    sync!();
    x + y
}

fn main() {
    let mut a = vec![0u32; 4];
    let b = vec![1u32, 2, 3];
    let rt = Runtime::new().expect("runtime");
    assert_eq!(rt.run(fine::task(&mut a, &b, 3)).expect("run"), 12);
    assert_eq!(a, [5, 5, 5, 5]);
}
