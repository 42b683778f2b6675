//! Block-task fixtures (`#[gpu_cilk(block)]`): a block-wide scan in shared memory and a recursive
//! splitter that spawns it on its leaves. Run by `tests/block_tasks.rs` on every backend and
//! compiled with NVRTC by `tests/device_compile.rs`.

use gpu_cilk::prelude::*;

/// Inclusive prefix sums of `a` (wrapping), 64 keys at a time: each chunk is scanned in shared
/// memory with log-step phases (Hillis–Steele), then written back with the carry of the chunks
/// before it. Returns the sum of `a`.
#[gpu_cilk(block)]
pub fn block_scan(a: &mut [u64]) -> u64 {
    let mut s = shared!([0u64; 64]);
    let mut tmp = shared!([0u64; 64]);
    let mut carry: u64 = 0;
    let mut base: usize = 0;
    while base < a.len() {
        let m: usize = (a.len() - base).min(64);
        for t in threads(0, 64) {
            s[t] = if t < m { a[base + t] } else { 0 };
        }
        let mut d: usize = 1;
        while d < 64 {
            for t in threads(0, 64) {
                tmp[t] = if t >= d { s[t].wrapping_add(s[t - d]) } else { s[t] };
            }
            for t in threads(0, 64) {
                s[t] = tmp[t];
            }
            d *= 2;
        }
        for t in threads(0, m) {
            a[base + t] = s[t].wrapping_add(carry);
        }
        carry = carry.wrapping_add(s[63]);
        base += 64;
    }
    block_sync!();
    carry
}

/// Splits `a` in halves down to `leaf` keys and scans each leaf with a block task; combines the
/// leaves' sums in order (so a lost or doubled leaf changes the result).
#[gpu_cilk]
#[allow(unused_assignments)] // `y` starts at 0 only because a frame local is initialized where declared
pub fn scan_parts(a: &mut [u64], leaf: usize) -> u64 {
    let mut x: u64 = 0;
    let mut y: u64 = 0;
    if a.len() <= leaf {
        x = spawn!(block_scan(a));
    } else {
        let h: usize = a.len() / 2;
        let (lo, hi) = a.split_at_mut(h);
        x = spawn!(scan_parts(lo, leaf));
        y = spawn!(scan_parts(hi, leaf));
    }
    sync!();
    x.wrapping_mul(1_000_003).wrapping_add(y)
}
