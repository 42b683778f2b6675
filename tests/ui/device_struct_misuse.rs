use gpu_cilk::prelude::*;

// No `#[repr(C)]`.
#[derive(Clone, Copy, Default, DeviceStruct)]
struct NoRepr {
    x: f32,
}

// A tuple struct.
#[derive(Clone, Copy, Default, DeviceStruct)]
#[repr(C)]
struct Tuple(f32, f32);

// Fields the device cannot hold, and a name CUDA reserves.
#[derive(Clone, Copy, Default, DeviceStruct)]
#[repr(C)]
struct Fields {
    pair: (f32, f32),
    wide: u128,
    new: u32,
}

// An enum.
#[derive(Clone, Copy, DeviceStruct)]
#[repr(C)]
enum Kind {
    A,
}

fn main() {}
