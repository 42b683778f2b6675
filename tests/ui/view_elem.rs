use gpu_cilk::prelude::*;

// A view holds integer or float scalars (or device structs), as a slice does.
#[gpu_cilk]
fn names(a: Mat<String>) -> u32 {
    a.rows() as u32
}

#[gpu_cilk]
fn nested(a: MatMut<[u32; 4]>) {
    let _r = a.rows();
}

fn main() {}
