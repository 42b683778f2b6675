use gpu_cilk::prelude::*;

#[derive(Clone, Copy, Default, Debug, DeviceStruct)]
#[repr(C)]
struct P {
    x: f32,
    w: [u32; 2],
}

#[gpu_cilk]
fn set_parts(t: Temp<P>, i: usize) {
    t[i].x = 1.0;
    t[i].w[1] += 2;
    let mut p = t[i];
    p.x = 3.0;
    t[i] = p;
}

#[gpu_cilk]
fn own(n: usize) -> f32 {
    let t = alloc!(P, n);
    (t[0]).x = 2.0;
    t[0].x
}

fn main() {}
