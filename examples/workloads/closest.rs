//! The closest pair of points in the plane, divide and conquer over `&[Point]`: a workload of
//! plain structs (`#[derive(DeviceStruct)]`, see "Plain structs" in `docs/dsl.md`) as slice
//! elements, parameters, results, spawn destinations and locals. Shared by the differential test
//! `tests/structs.rs`.
//!
//! - [`closest`]`(p)`: the closest pair of `p` (at least 2 points, sorted by `x`): the halves in
//!   parallel, then the pairs that cross the middle, only those closer in `x` than the best so
//!   far ([`cross`]); up to 8 points every pair ([`brute`]).
//!
//! Coordinates are small integers held in `f32`, so every squared distance is exact and the
//! result is the same bits on every backend (with or without fused multiply-adds).

use gpu_cilk::prelude::*;

/// A point in the plane.
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceStruct)]
#[repr(C)]
pub struct Point {
    /// Its x coordinate.
    pub x: f32,
    /// Its y coordinate.
    pub y: f32,
}

/// Two points and their squared distance (a struct holding structs).
#[derive(Clone, Copy, Debug, Default, PartialEq, DeviceStruct)]
#[repr(C)]
pub struct Pair {
    /// The squared distance of `a` and `b`.
    pub d2: f32,
    /// The point of the pair with the smaller index.
    pub a: Point,
    /// The other point.
    pub b: Point,
}

/// The squared distance of `a` and `b`.
#[gpu_cilk::device]
pub fn dist2(a: Point, b: Point) -> f32 {
    let dx: f32 = a.x - b.x;
    let dy: f32 = a.y - b.y;
    dx * dx + dy * dy
}

/// The closer of `l` and `r` (`l` on ties).
#[gpu_cilk::device]
pub fn closer(l: Pair, r: Pair) -> Pair {
    if r.d2 < l.d2 {
        r
    } else {
        l
    }
}

/// The closest pair of `p` (2 or more points), every pair tried.
#[gpu_cilk::device]
pub fn brute(p: &[Point]) -> Pair {
    let mut best = Pair { d2: dist2(p[0], p[1]), a: p[0], b: p[1] };
    for i in 0..p.len() {
        for j in i + 1..p.len() {
            let d: f32 = dist2(p[i], p[j]);
            if d < best.d2 {
                best = Pair { a: p[i], b: p[j], d2: d };
            }
        }
    }
    best
}

/// `best`, or a closer pair of one point left of `mid` and one right of it (`p` sorted by `x`).
#[gpu_cilk::device]
pub fn cross(p: &[Point], mid: usize, best: Pair) -> Pair {
    let mut out: Pair = best;
    let mut i: usize = mid;
    while i > 0 {
        i -= 1;
        let dx: f32 = p[mid].x - p[i].x;
        if dx * dx >= out.d2 {
            break;
        }
        let mut j: usize = mid;
        while j < p.len() {
            let ex: f32 = p[j].x - p[i].x;
            if ex * ex >= out.d2 {
                break;
            }
            let d: f32 = dist2(p[i], p[j]);
            if d < out.d2 {
                out = Pair { d2: d, a: p[i], b: p[j] };
            }
            j += 1;
        }
    }
    out
}

/// The closest pair of `p` (at least 2 points, sorted by `x`).
#[gpu_cilk]
pub fn closest(p: &[Point]) -> Pair {
    if p.len() <= 8 {
        return brute(p);
    }
    let mid: usize = p.len() / 2;
    let l = spawn!(closest(&p[..mid]));
    let r = spawn!(closest(&p[mid..]));
    sync!();
    cross(p, mid, closer(l, r))
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` points with integer coordinates in `0..side`, sorted by `x` (then `y`).
pub fn points(n: usize, side: u32, seed: u64) -> Vec<Point> {
    let mut v: Vec<Point> = (0..n as u64)
        .map(|i| {
            let h = splitmix(seed ^ i);
            Point { x: (h as u32 % side) as f32, y: ((h >> 32) as u32 % side) as f32 }
        })
        .collect();
    v.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    v
}

/// The smallest squared distance of any two points of `p`, by trying every pair (the check of
/// [`closest`]).
pub fn min_dist2(p: &[Point]) -> f32 {
    let mut best = f32::INFINITY;
    for i in 0..p.len() {
        for j in i + 1..p.len() {
            best = best.min(dist2(p[i], p[j]));
        }
    }
    best
}
