use gpu_cilk::prelude::*;

// A warp task is a leaf: no spawn!, sync! or alloc!.
#[gpu_cilk(warp)]
fn spawns(n: u32) -> u64 {
    let x = spawn!(leaf(n));
    sync!();
    let t = alloc!(u32, 4);
    x + t.len() as u64
}

// A `lanes` loop is left by all lanes together: no return or break out of it, no lanes loop
// inside it, and `lanes(..)` only as a `for` iterator.
#[gpu_cilk(warp)]
fn leaves(a: &mut [u32]) -> u32 {
    let r = lanes(0, a.len());
    for i in lanes(0, a.len()) {
        if a[i] == 0 {
            return 1;
        }
        if a[i] == 1 {
            break;
        }
        for j in lanes(0, i) {
            a[j] += 1;
        }
        while a[i] > 9 {
            break; // fine: leaves the inner loop
        }
    }
    0
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
