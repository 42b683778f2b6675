// A user item with the name of a task hides the task's generated module `knap`: one error, at
// the task's name, that says so (not E0428 and errors about generated names).
use gpu_cilk::prelude::*;

mod knap {
    pub fn capacity() -> u32 {
        10
    }
}

#[gpu_cilk]
fn knap(w: u32, n: u32) -> u64 {
    if n == 0 {
        return w as u64;
    }
    let a = spawn!(leaf(w, n - 1));
    let b = spawn!(knap(w + 1, n - 1)); // its own module, reached by its hidden name
    sync!();
    a.max(b)
}

#[gpu_cilk]
fn leaf(w: u32, n: u32) -> u64 {
    (w + n) as u64
}

fn main() {
    assert_eq!(knap::capacity(), 10);
    let _ = leaf::task(1, 2);
}

