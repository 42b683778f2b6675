//! A block task (`#[gpu_cilk(block)]`) spawned by a plain task: a `shared!` array, `threads`
//! loops with `continue`, a barrier under a branch every thread takes alike, a result; the serial
//! function and the cpu backend agree. A host form (`host = path`) replaces it on the host.
use gpu_cilk::prelude::*;

#[gpu_cilk(block)]
fn block_max(a: &[u32]) -> u32 {
    let mut best = shared!([0u32; 32]);
    for t in threads(0, 32) {
        let mut i = t;
        while i < a.len() {
            if a[i] > best[t] {
                best[t] = a[i];
            }
            i += 32;
        }
    }
    if a.len() > 1 {
        block_sync!();
    }
    let mut m: u32 = 0;
    for t in 0..32 {
        m = m.max(best[t]);
    }
    m
}

#[gpu_cilk(block, host = sum_host)]
fn block_sum(a: &[u32]) -> u32 {
    let mut s: u32 = 0;
    for i in 0..a.len() {
        s = s.wrapping_add(a[i]);
    }
    s
}

fn sum_host(a: &[u32]) -> u32 {
    a.iter().fold(0u32, |s, x| s.wrapping_add(*x))
}

#[gpu_cilk]
fn both(a: &[u32]) -> u32 {
    let x = spawn!(block_max(a));
    let y = spawn!(block_sum(a));
    sync!();
    x.wrapping_mul(31).wrapping_add(y)
}

fn main() {
    let a: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761) % 977).collect();
    let want = both(&a);
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu)).expect("cpu backend");
    assert_eq!(rt.run(both::task(&a)).expect("runs"), want);
}
