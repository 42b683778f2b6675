//! A warp task (`#[gpu_cilk(warp)]`) spawned by a plain task: `lanes` loops with `continue`, a
//! nested ordinary loop, a result; the serial function and the cpu backend agree.
use gpu_cilk::prelude::*;

#[gpu_cilk(warp)]
fn prefix_rows(a: &mut [u64], n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    for i in lanes(0, a.len() / n) {
        if i % 7 == 3 {
            continue;
        }
        let mut s: u64 = 0;
        for j in 0..n {
            s += a[i * n + j];
            a[i * n + j] = s;
        }
    }
    let mut total: u64 = 0;
    for k in 0..a.len() {
        total += a[k];
    }
    total
}

#[gpu_cilk]
fn both(a: &mut [u64], n: usize) -> u64 {
    let h: usize = a.len() / 2;
    let (x, y) = a.split_at_mut(h);
    let s = spawn!(prefix_rows(x, n));
    let t = spawn!(prefix_rows(y, n));
    sync!();
    s + t
}

fn main() {
    let mut a: Vec<u64> = (0..64).collect();
    let mut b = a.clone();
    let want = both(&mut a, 4);
    let rt = Runtime::with_backend(BackendKind::Cpu).expect("cpu backend");
    let got = rt.run(both::task(&mut b, 4)).expect("runs");
    assert_eq!((got, &b), (want, &a));
}
