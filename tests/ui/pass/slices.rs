//! Slices in and out of a root task on the serial and cpu backends: sub-slices to children,
//! `split_at_mut`, a `&[T]` and a `&mut [T]`, results found in the caller's `Vec`.
use gpu_cilk::prelude::*;

#[gpu_cilk::device]
fn total(a: &[u64]) -> u64 {
    let mut s: u64 = 0;
    for i in 0..a.len() {
        s += a[i];
    }
    s
}

#[gpu_cilk]
fn prefix_double(src: &[u64], dst: &mut [u64]) -> u64 {
    if dst.is_empty() {
        return 0;
    }
    if dst.len() <= 2 {
        for i in 0..dst.len() {
            dst[i] = 2 * src[i];
        }
        return total(src);
    }
    let m = dst.len() / 2;
    let (lo, hi) = dst.split_at_mut(m);
    let x = spawn!(prefix_double(&src[..m], lo));
    let y = spawn!(prefix_double(&src[m..], hi));
    sync!();
    x + y
}

fn main() {
    let src: Vec<u64> = (0..37).collect();
    for kind in [BackendKind::Serial, BackendKind::Cpu] {
        let rt = Runtime::with_backend(kind).expect("host backend");
        let mut dst = vec![0u64; 37];
        let sum = rt.run(prefix_double::task(&src, &mut dst)).expect("runs");
        assert_eq!(sum, (0..37).sum::<u64>());
        assert!(dst.iter().enumerate().all(|(i, &d)| d == 2 * i as u64), "{dst:?}");
    }
}
