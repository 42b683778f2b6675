use gpu_cilk::prelude::*;

struct Tree;

impl Tree {
    #[gpu_cilk]
    fn count(&self, n: u32) -> u64 {
        n as u64
    }
}

fn main() {}
