//! Generic tasks and helpers (`T: Key`): a lifetime parameter is allowed, a generic task is
//! spawned with its type arguments (`spawn!(g::<T>(..))`), a generic helper is called with or
//! without them, and each instantiation runs on the serial and cpu backends.
use gpu_cilk::prelude::*;

#[gpu_cilk::device]
fn larger<T: Key>(x: T, y: T) -> T {
    if x < y {
        y
    } else {
        x
    }
}

/// The largest key of `a` (not empty) into `out[0]`; `out` (as long as `a`) is the scratch.
#[gpu_cilk]
fn max_into<T: Key>(a: &[T], out: &mut [T]) {
    if a.len() <= 4 {
        let mut m: T = a[0];
        for i in 1..a.len() {
            m = larger(m, a[i]);
        }
        out[0] = m;
        return;
    }
    let h: usize = a.len() / 2;
    let (l, r) = out.split_at_mut(h);
    spawn!(max_into::<T>(&a[..h], l));
    spawn!(max_into::<T>(&a[h..], r));
    sync!();
    out[0] = larger::<T>(out[0], out[h]);
}

/// A lifetime parameter names nothing the subset could use, and is fine.
#[gpu_cilk]
fn count<'a>(n: u32) -> u64 {
    n as u64
}

fn main() {
    let keys: Vec<i64> = (0..100).map(|i| (i * 37) % 101 - 50).collect();
    let floats: Vec<f32> = keys.iter().map(|&k| k as f32 * 0.5).collect();
    for kind in [BackendKind::Serial, BackendKind::Cpu] {
        let rt = Runtime::with_backend(kind).unwrap();
        let mut out = vec![0i64; keys.len()];
        rt.run(max_into::task(&keys, &mut out)).unwrap();
        assert_eq!(out[0], 50);
        let mut out = vec![0.0f32; floats.len()];
        rt.run(max_into::task(&floats, &mut out)).unwrap();
        assert_eq!(out[0], 25.0);
        assert_eq!(rt.run(count::task(3)).unwrap(), 3);
    }
}
