use gpu_cilk::prelude::*;

// A bound other than `Key`.
#[gpu_cilk]
fn f<T: Copy>(x: T, n: u32) -> u64 {
    n as u64
}

// No bound at all.
#[gpu_cilk]
fn g<T>(x: T) {}

// `Key` and more.
#[gpu_cilk]
fn h<T: Key + Copy>(x: T) {}

// A const generic parameter.
#[gpu_cilk]
fn k<const N: usize>(n: u32) -> u32 {
    n
}

// A type parameter no parameter's type fixes.
#[gpu_cilk::device]
fn zero<T: Key>(n: u32) -> u32 {
    n
}

// A default.
#[gpu_cilk]
fn d<T: Key = u32>(x: T) {}

// A where clause.
#[gpu_cilk]
fn w<T>(x: T)
where
    T: Key,
{
}

fn main() {}
