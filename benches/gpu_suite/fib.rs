//! fib(n): serial Rust, rayon on all cores, the hand-written CUDA peer `benches/cuda/fib_levels.cu`
//! (level by level, a warp-aggregated append per level; with and without the up-sweep of child
//! results) and gpu-cilk's `cpu` and `cuda` backends on `examples/workloads/fib.rs`. Every result
//! is checked against the closed form.
//!
//! Owns the fib kernels' parameter mirror; shares the row and output code of [`crate::common`].

use crate::common::{gpu_cilk_rows, measure, run_cilk, timed, Device, Row};
use crate::fib_workload;
use crate::Args;
use gpu_cilk::runtime::backend::cuda::{self, CudaDevice, DeviceCopy, DevicePtr, Kernel, LaunchDims, ProgramSource};
use gpu_cilk::Runtime;
use std::hint::black_box;
use std::time::{Duration, Instant};

const FIB_CU: &str = include_str!("../cuda/fib_levels.cu");

/// The hand-written peer as an NVRTC program.
pub(crate) fn program() -> ProgramSource {
    ProgramSource::new("fib_levels", FIB_CU)
}

fn fib_serial(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    fib_serial(n - 1) + fib_serial(n - 2)
}

fn fib_rayon(n: u32, cutoff: u32) -> u64 {
    if n < cutoff.max(2) {
        return fib_serial(n);
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1, cutoff), || fib_rayon(n - 2, cutoff));
    a + b
}

/// fib(n) iteratively (the oracle for large n).
pub(crate) fn fib_exact(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// Calls in fib(n)'s recursion tree: 2·fib(n+1) − 1.
pub(crate) fn fib_calls(n: u32) -> u64 {
    2 * fib_exact(n + 1) - 1
}

pub(crate) fn bench_fib(args: &Args, device: Device) -> Vec<Row> {
    let n = args.fib;
    let calls = fib_calls(n) as f64;
    let want = fib_exact(n);
    let check = |v: &u64| if *v == want { Ok(()) } else { Err(format!("fib({n}) = {v}, expected {want}")) };
    let mut rows = Vec::new();

    if !args.gpu_only {
        let mut row = Row::new("fib", n, "serial Rust", calls, "calls/s");
        (row.times, row.verified) = measure(args.warmup, args.reps, || Ok(timed(|| fib_serial(black_box(n)))), check);
        rows.push(row);
        let mut row = Row::new("fib", n, "rayon", calls, "calls/s");
        row.note = format!("join, serial below n={}", args.fib_cutoff);
        (row.times, row.verified) =
            measure(args.warmup, args.reps, || Ok(timed(|| fib_rayon(black_box(n), args.fib_cutoff))), check);
        rows.push(row);
    }

    for tree in [false, true] {
        let name = if tree { "CUDA levels down+up" } else { "CUDA levels down" };
        let mut row = Row::new("fib", n, name, calls, "calls/s");
        row.note = if tree {
            "per level: warp-aggregated append; then per-level up-sweep of child results".into()
        } else {
            "per level: warp-aggregated append, leaf values summed per warp".into()
        };
        match device {
            Err(e) => row = row.na(format!("n/a: {e}")),
            Ok(dev) => match FibGpu::new(dev, n) {
                Err(e) => row = row.na(format!("n/a: {e}")),
                Ok(mut g) => {
                    (row.times, row.verified) = measure(
                        args.warmup,
                        args.reps,
                        || g.run(tree).map_err(|e| e.to_string()),
                        |(v, nodes): &(u64, u64)| {
                            check(v)?;
                            if *nodes != fib_calls(n) {
                                return Err(format!("fib({n}) tree had {nodes} nodes, expected {}", fib_calls(n)));
                            }
                            Ok(())
                        },
                    );
                }
            },
        }
        rows.push(row);
    }
    rows.extend(gpu_cilk_rows(args, |rt, backend| cilk_columns(rt, backend, args)));
    rows
}

#[repr(C)]
#[derive(Clone, Copy)]
struct FibParams {
    vals: DevicePtr<u32>,
    first_child: DevicePtr<u32>,
    result: DevicePtr<u64>,
    leaf_sum: DevicePtr<u64>,
    next_free: DevicePtr<u32>,
    overflow: DevicePtr<u32>,
    level_start: u32,
    level_count: u32,
    capacity: u32,
    record_tree: u32,
}
// SAFETY: repr(C) POD mirroring `struct FibParams` in cuda/fib_levels.cu field for field.
unsafe impl DeviceCopy for FibParams {}

struct FibGpu<'d> {
    dev: &'d CudaDevice,
    down: Kernel<FibParams>,
    up: Kernel<FibParams>,
    n: u32,
    vals: cuda::DeviceBuffer<u32>,
    first_child: cuda::DeviceBuffer<u32>,
    result: cuda::DeviceBuffer<u64>,
    leaf_sum: cuda::DeviceBuffer<u64>,
    /// [next_free, overflow]
    counters: cuda::DeviceBuffer<u32>,
    capacity: u32,
}

impl<'d> FibGpu<'d> {
    fn new(dev: &'d CudaDevice, n: u32) -> gpu_cilk::runtime::Result<Self> {
        let program = dev.load_program(&program())?;
        // SAFETY: both kernels take one `FibParams` (layout mirrored above); `run` passes
        // buffers of `capacity` nodes and the kernels check every append against it.
        let (down, up) = unsafe { (program.kernel("fib_down")?, program.kernel("fib_up")?) };
        let total = fib_calls(n);
        let capacity = u32::try_from(total).map_err(|_| {
            gpu_cilk::Error::Config(format!("fib({n}) has {total} calls, more than this peer's u32 arena"))
        })?;
        let cap = capacity as usize;
        Ok(FibGpu {
            dev,
            down,
            up,
            n,
            vals: dev.alloc_zeroed(cap)?,
            first_child: dev.alloc_zeroed(cap)?,
            result: dev.alloc_zeroed(cap)?,
            leaf_sum: dev.alloc_zeroed(1)?,
            counters: dev.alloc_zeroed(2)?,
            capacity,
        })
    }

    /// One run: fib(n) and the number of nodes the tree had. Timed from uploading the root to
    /// reading the result (the arena is allocated once, in `new`). One 8-byte read-back per level
    /// tells the host the next level's size.
    fn run(&mut self, tree: bool) -> gpu_cilk::runtime::Result<(Duration, (u64, u64))> {
        let dev = self.dev;
        dev.sync()?;
        let start = Instant::now();
        dev.copy_htod(&[self.n], &mut self.vals)?;
        dev.copy_htod(&[0u64], &mut self.leaf_sum)?;
        dev.copy_htod(&[1u32, 0u32], &mut self.counters)?; // next_free = 1 (the root), overflow = 0
        let counters = self.counters.ptr();
        let mut p = FibParams {
            vals: self.vals.ptr(),
            first_child: self.first_child.ptr(),
            result: self.result.ptr(),
            leaf_sum: self.leaf_sum.ptr(),
            next_free: counters,
            overflow: counters.offset(1),
            level_start: 0,
            level_count: 1,
            capacity: self.capacity,
            record_tree: tree as u32,
        };
        let mut levels = Vec::new();
        let mut host = [0u32; 2];
        while p.level_count > 0 {
            self.down.launch(LaunchDims::cover(p.level_count as usize, 256), &p)?;
            levels.push((p.level_start, p.level_count));
            dev.dtoh_into(&self.counters, &mut host)?;
            if host[1] != 0 {
                return Err(gpu_cilk::Error::Internal(format!("fib arena of {} nodes overflowed", self.capacity)));
            }
            p.level_start += p.level_count;
            p.level_count = host[0] - p.level_start;
        }
        let nodes = p.level_start as u64;
        let mut value = [0u64; 1];
        if tree {
            for &(s, c) in levels.iter().rev() {
                p.level_start = s;
                p.level_count = c;
                self.up.launch(LaunchDims::cover(c as usize, 256), &p)?;
            }
            dev.dtoh_into(&self.result, &mut value)?;
        } else {
            dev.dtoh_into(&self.leaf_sum, &mut value)?;
        }
        Ok((start.elapsed(), (value[0], nodes)))
    }
}

/// The gpu-cilk columns: `examples/workloads/fib.rs` on one runtime (or why it could not be built).
fn cilk_columns(rt: Result<&Runtime, String>, backend: &str, args: &Args) -> Vec<Row> {
    let n = args.fib;
    let want = fib_exact(n);
    vec![run_cilk(
        rt,
        args,
        "fib",
        n,
        &format!("gpu-cilk {backend}"),
        fib_workload::fib::task(n),
        want,
        fib_calls(n) as f64,
        "calls/s",
    )]
}
