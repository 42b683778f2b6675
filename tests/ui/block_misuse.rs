use gpu_cilk::prelude::*;

// A block task is a leaf: no spawn!, sync! or alloc!.
#[gpu_cilk(block)]
fn spawns(n: u32) -> u64 {
    let x = spawn!(leaf(n));
    sync!();
    let t = alloc!(u32, 4);
    x + t.len() as u64
}

// A `threads` loop is left by all threads together (no return, break or `?` out of it); a
// barrier never stands in it (its body, and every branch there, is the thread's own); no local of
// the task is assigned in it (each thread would hold its own value after it).
#[gpu_cilk(block)]
fn leaves(a: &mut [u32]) -> u32 {
    let mut last: usize = 0;
    for i in threads(0, a.len()) {
        if a[i] == 0 {
            return 1;
        }
        if a[i] == 1 {
            break;
        }
        if i == 0 {
            block_sync!();
        }
        last = i;
        let v: u32 = a.get(i)?;
        a[i] = v;
        for j in threads(0, i) {
            a[j] += 1;
        }
    }
    last as u32
}

// `shared!` only initializes a top-level `let`, with an array repeat of a typed literal;
// `block_sync!()` only as a statement; `threads(..)` only as a `for` iterator.
#[gpu_cilk(block)]
fn places(a: &mut [u32]) -> u32 {
    if a.len() > 1 {
        let s = shared!([0u32; 4]);
        a[0] = s[0];
    }
    let t = shared!([0; 4]);
    let r = threads(0, a.len());
    let b = block_sync!();
    t[0]
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
