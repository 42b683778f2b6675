use gpu_cilk::prelude::*;

fn main() {
    let t = alloc!(f32, 4);
}
