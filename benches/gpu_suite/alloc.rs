//! The allocator benchmark (`benches/cuda/alloc_bench.cu`): the XMalloc paper's MilThreads and a
//! mixed-size variant, gpu-cilk's warp-coalesced `xmalloc` against CUDA's device malloc/free, with
//! 1..32 active lanes per warp. Every run checks the allocation counters.
//!
//! Owns the benchmark kernels' parameter mirror and the malloc-heap limit call.

use crate::common::{measure, timed, Device, Row};
use crate::Args;
use gpu_cilk::runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};

const ALLOC_CU: &str = include_str!("../cuda/alloc_bench.cu");

/// The benchmark with gpu-cilk's allocator as `gpu_cilk/xmalloc.cuh`.
pub(crate) fn program() -> ProgramSource {
    ProgramSource::new("alloc_bench", ALLOC_CU).header("gpu_cilk/xmalloc.cuh", gpu_cilk_kernels::XMALLOC_CUH)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct AllocParams {
    heap: DevicePtr<u64>,
    region: DevicePtr<u64>,
    bytes: u64,
    counters: DevicePtr<u64>,
    n: u64,
    lanes: u32,
    mixed: u32,
}
// SAFETY: repr(C) POD mirroring `struct AllocParams` in cuda/alloc_bench.cu.
unsafe impl DeviceCopy for AllocParams {}

/// Sets CUDA's device malloc heap (`cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE)`) on the calling
/// thread's current context and returns what the driver reports afterwards. cudarc's `sys` is not
/// reachable from this crate (the runtime does not re-export it), so the symbol is looked up in the
/// already loaded libcuda.
fn set_malloc_heap(bytes: usize) -> Result<usize, String> {
    use std::ffi::{c_char, c_int, c_void};
    extern "C" {
        fn dlopen(name: *const c_char, flags: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    type SetLimit = unsafe extern "C" fn(c_int, usize) -> c_int;
    type GetLimit = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
    const CU_LIMIT_MALLOC_HEAP_SIZE: c_int = 2;
    const RTLD_NOW: c_int = 2;
    // SAFETY: dlopen/dlsym with NUL-terminated names; the symbols, when found, are the driver
    // API's `CUresult cuCtxSetLimit(CUlimit, size_t)` / `cuCtxGetLimit(size_t*, CUlimit)`, called
    // with a valid limit and a valid out pointer.
    unsafe {
        let lib = dlopen(c"libcuda.so.1".as_ptr(), RTLD_NOW);
        if lib.is_null() {
            return Err("cannot dlopen libcuda.so.1".into());
        }
        let (set, get) = (dlsym(lib, c"cuCtxSetLimit".as_ptr()), dlsym(lib, c"cuCtxGetLimit".as_ptr()));
        if set.is_null() || get.is_null() {
            return Err("cuCtxSetLimit/cuCtxGetLimit not found in libcuda".into());
        }
        let set: SetLimit = std::mem::transmute::<*mut c_void, SetLimit>(set);
        let get: GetLimit = std::mem::transmute::<*mut c_void, GetLimit>(get);
        let rc = set(CU_LIMIT_MALLOC_HEAP_SIZE, bytes);
        let mut now = 0usize;
        let rc2 = get(&mut now, CU_LIMIT_MALLOC_HEAP_SIZE);
        if rc != 0 || rc2 != 0 {
            return Err(format!("cuCtxSetLimit(MALLOC_HEAP_SIZE) = {rc}, cuCtxGetLimit = {rc2}"));
        }
        Ok(now)
    }
}

pub(crate) fn bench_alloc(args: &Args, device: Device) -> Vec<Row> {
    let na = |e: String| vec![Row::new("alloc", "-", "xmalloc / CUDA malloc", 0.0, "allocs/s").na(format!("n/a: {e}"))];
    let dev = match device {
        Ok(d) => d,
        Err(e) => return na(e.to_string()),
    };
    let result = (|| -> gpu_cilk::runtime::Result<Vec<Row>> {
        let program = dev.load_program(&program())?;
        // SAFETY: all three take one `AllocParams`; heap is a 960-byte gc_xheap buffer, region
        // `bytes` long, counters 3 u64; threads past `n` or past `lanes` in their warp return.
        let (init, xm, cm) = unsafe {
            (
                program.kernel::<AllocParams>("ab_init")?,
                program.kernel::<AllocParams>("ab_xmalloc")?,
                program.kernel::<AllocParams>("ab_malloc")?,
            )
        };
        let heap_note = match set_malloc_heap(args.malloc_heap_mb << 20) {
            Ok(b) => format!("CUDA malloc heap {} MiB", b >> 20),
            Err(e) => format!("CUDA malloc heap not set ({e}); default 8 MiB"),
        };
        println!("alloc:   {heap_note}");
        let bytes = 256u64 << 20;
        let heap = dev.alloc_zeroed::<u64>(120)?;
        let region = dev.alloc_zeroed::<u64>((bytes / 8) as usize)?;
        let mut counters = dev.alloc_zeroed::<u64>(3)?;
        let n = args.alloc_n;
        let mut rows = Vec::new();
        for (variant, mixed) in [("MilThreads 8 B", 0u32), ("mixed 8-128 B", 1)] {
            let base = AllocParams {
                heap: heap.ptr(),
                region: region.ptr(),
                bytes,
                counters: counters.ptr(),
                n,
                lanes: 32,
                mixed,
            };
            init.launch(LaunchDims::cover(4096, 256), &base)?;
            dev.sync()?;
            for lanes in [1u32, 2, 4, 8, 16, 32] {
                let p = AllocParams { lanes, ..base };
                let threads = n.div_ceil(u64::from(lanes)) * 32;
                let dims = LaunchDims::cover(threads as usize, 256);
                let mut pair = Vec::new();
                for (name, k) in [("xmalloc", &xm), ("CUDA malloc", &cm)] {
                    let mut nulls = 0;
                    let (times, verified) = measure(
                        args.warmup,
                        args.reps,
                        || {
                            dev.copy_htod(&[0u64, 0, 0], &mut counters).map_err(|e| e.to_string())?;
                            dev.sync().map_err(|e| e.to_string())?;
                            let (t, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                                k.launch(dims, &p)?;
                                dev.sync()
                            });
                            r.map_err(|e| e.to_string())?;
                            Ok((t, dev.dtoh(&counters).map_err(|e| e.to_string())?))
                        },
                        |c: &Vec<u64>| {
                            if c[2] != 0 || c[0] + c[1] != n {
                                return Err(format!("{name} {variant} {lanes} lanes: counters {c:?}, n {n}"));
                            }
                            Ok(())
                        },
                    );
                    if let Ok(c) = dev.dtoh(&counters) {
                        nulls = c[0];
                    }
                    let mut row = Row::new("alloc", format!("{variant}, {lanes} lanes"), name, n as f64, "allocs/s");
                    row.note = format!("{threads} threads launched; {nulls} nulls");
                    if name == "xmalloc" && nulls != 0 {
                        row.note.push_str(" (WRONG: the 256 MiB heap suffices)");
                    }
                    row.times = times;
                    row.verified = verified.map(|v| v && (name != "xmalloc" || nulls == 0));
                    pair.push(row);
                }
                if let (Some(x), Some(c)) = (pair[0].throughput(), pair[1].throughput()) {
                    let note = format!("; speedup over CUDA malloc {:.1}x", x / c);
                    pair[0].note.push_str(&note);
                }
                pair[1].note.push_str(&format!("; {heap_note}"));
                rows.extend(pair);
            }
        }
        Ok(rows)
    })();
    result.unwrap_or_else(|e| na(e.to_string()))
}
