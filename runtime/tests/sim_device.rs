//! The host simulation of device code itself (`backend::cuda::sim`, `kernels/sim/gc_sim.h`),
//! with the kernels of `kernels/tests/sim_test.cu`:
//!
//! - every intrinsic of a one-lane warp, the bit intrinsics, atomics of every type (independent
//!   and cooperative), 3-D thread and block indices, a grid of a million threads;
//! - dynamic shared memory: one buffer per block in both modes, `__syncthreads` and its
//!   count / and / or forms in cooperative launches;
//! - concurrency: a cooperative grid whose threads spin-wait on each other (a grid barrier) runs,
//!   and the same kernel in independent mode is killed at its timeout with a message that says
//!   to launch it cooperatively;
//! - `__device__` globals persist across (forked) launches, and each load has its own;
//! - faults come back as errors naming kernel, block and thread (trap, assert, invalid address,
//!   a bad warp mask, `__syncthreads` in independent mode), and the process lives on;
//! - launch checks (shape, parameter bytes, unknown kernel) and compile errors (g++'s log; a
//!   static `__shared__` points to `gc_dynamic_smem()`), a kernel of two parameters, in-process
//!   launches;
//! - the test source is valid CUDA too: NVRTC compiles it (when it loads).
//!
//! Skips visibly without a C++ compiler unless `GPU_CILK_REQUIRE_SIM=1`.

#![cfg(target_os = "linux")]

use gpu_cilk_runtime::backend::cuda::sim::{LaunchMode, LaunchOptions, SimBuffer, SimKernel, SimProgram};
use gpu_cilk_runtime::backend::cuda::{compile, nvrtc_version, Arch, DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
use gpu_cilk_runtime::Error;
use std::sync::OnceLock;
use std::time::Duration;

use gpu_cilk_test_support::target::sim_device;

const TEST_CU: &str = include_str!("../../kernels/tests/sim_test.cu");

/// Mirrors `SimParams` of sim_test.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct Params {
    out: DevicePtr<u64>,
    counters: DevicePtr<u64>,
    n: u64,
    arg: u64,
}
// SAFETY: repr(C): two 8-byte device addresses and two u64 (32 bytes), the layout of `SimParams`.
unsafe impl DeviceCopy for Params {}

fn source() -> ProgramSource {
    ProgramSource::new("sim_test", TEST_CU).header("gpu_cilk/portable.cuh", gpu_cilk_kernels::PORTABLE_CUH)
}

/// The program, built once per test binary (or `None` after printing why the test skips).
fn program(test: &str) -> Option<SimProgram> {
    sim_device(test)?;
    static PROGRAM: OnceLock<Result<SimProgram, String>> = OnceLock::new();
    match PROGRAM.get_or_init(|| SimProgram::compile(&source()).map_err(|e| e.to_string())) {
        Ok(p) => Some(p.clone()),
        Err(e) => panic!("building sim_test.cu: {e}"),
    }
}

fn kernel(p: &SimProgram, name: &str) -> SimKernel<Params> {
    // SAFETY: every kernel of sim_test.cu but `sim_two_params` takes one `SimParams`; each launch
    // below passes buffers covering what the kernel indexes (its header comment), except the
    // fault kernels, whose invalid accesses are the point and run in a child process.
    unsafe { p.kernel::<Params>(name) }.unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn params(out: &SimBuffer<u64>, counters: &SimBuffer<u64>, n: u64, arg: u64) -> Params {
    Params { out: out.ptr(), counters: counters.ptr(), n, arg }
}

fn zeroed(n: usize) -> SimBuffer<u64> {
    SimBuffer::zeroed(n).unwrap()
}

#[test]
fn intrinsics_of_a_one_lane_warp() {
    let Some(p) = program("intrinsics_of_a_one_lane_warp") else { return };
    let out = zeroed(40);
    let x: u32 = 0xF0F0_0001;
    kernel(&p, "sim_intrinsics").launch(LaunchDims::linear(1, 32), &params(&out, &out, 0, x as u64)).unwrap();
    let o = out.to_vec();
    let x64 = x as u64;
    let expect: [(usize, u64, &str); 40] = [
        (0, x.count_ones() as u64, "__popc"),
        (1, 2 * x.count_ones() as u64, "__popcll"),
        (2, 1, "__ffs"),
        (3, 0, "__ffs(0)"),
        (4, 41, "__ffsll"),
        (5, (x >> 4).leading_zeros() as u64, "__clz"),
        (6, 32, "__clz(0)"),
        (7, (x64 >> 8).leading_zeros() as u64, "__clzll"),
        (8, 64, "__clzll(0)"),
        (9, x.reverse_bits() as u64, "__brev"),
        (10, x64.reverse_bits(), "__brevll"),
        (11, 0x5511_4400, "__byte_perm"),
        (12, (x64 * 0x1234_5678) >> 32, "__umulhi"),
        (13, (((x64 << 30) as u128 * 0x0123_4567_89ab_cdef_u128) >> 64) as u64, "__umul64hi"),
        (14, 1, "__activemask"),
        (15, 1, "__ballot_sync(true)"),
        (16, 0, "__ballot_sync(false)"),
        (17, 1, "__any_sync"),
        (18, 0, "__all_sync(false)"),
        (19, x64 + 1, "__shfl_sync"),
        (20, x64 + 2, "__shfl_up_sync"),
        (21, ((x as i32).wrapping_add(3)) as i64 as u64, "__shfl_down_sync"),
        (22, x64 + 4, "__shfl_xor_sync"),
        (23, 1, "__match_any_sync"),
        (24, x64, "__reduce_add_sync"),
        (25, 7, "__reduce_min_sync"),
        (26, -7i64 as u64, "__reduce_max_sync"),
        (27, x64, "__reduce_and_sync"),
        (28, x64, "__reduce_or_sync"),
        (29, x64, "__reduce_xor_sync"),
        (30, 0, "gc_lane"),
        (31, 1, "gc_warp_size"),
        (32, 0, "gc_lane_mask_lt"),
        (33, 1, "warpSize"),
        (34, 1, "clock64 is monotone"),
        (35, 1, "gc_globaltimer is monotone"),
        (36, 1.5f32.to_bits() as u64, "__float_as_uint"),
        (37, (-2.0f64).to_bits(), "__double_as_longlong"),
        (38, 1, "sqrtf"),
        (39, 1, "fma"),
    ];
    for (i, want, what) in expect {
        assert_eq!(o[i], want, "out[{i}] ({what}): {:#x}, expected {want:#x}", o[i]);
    }
}

fn check_atomics(c: &[u64], t: u64, what: &str) {
    let lo = |v: u64| v & 0xffff_ffff;
    assert_eq!(lo(c[0]), t, "{what}: int add");
    assert_eq!(lo(c[1]), 2 * t, "{what}: unsigned add");
    assert_eq!(c[2], 3 * t, "{what}: u64 add");
    assert_eq!(f32::from_bits(lo(c[3]) as u32), t as f32 * 0.5, "{what}: float add");
    assert_eq!(f64::from_bits(c[4]), t as f64 * 0.25, "{what}: double add");
    assert_eq!(lo(c[5]) as u32 as i32, -(t as i32), "{what}: int sub");
    assert_eq!(lo(c[6]), 0, "{what}: unsigned min");
    assert_eq!(lo(c[7]), t - 1, "{what}: unsigned max");
    assert_eq!(c[8], 5, "{what}: u64 min");
    assert_eq!(c[9], 3 * (t - 1), "{what}: u64 max");
    assert_eq!(c[10] as i64, -((t - 1) as i64), "{what}: long long min");
    assert_eq!(lo(c[11]), t - 1, "{what}: int max");
    assert_eq!(lo(c[12]), t % 10, "{what}: atomicInc wraps at 9");
    assert_eq!(lo(c[13]), (5 - t % 5) % 5, "{what}: atomicDec wraps at 4");
    assert_eq!(c[14], t, "{what}: CAS loop");
    assert_eq!(c[15] + c[19], t * (t + 1) / 2, "{what}: exch chain");
    let or = if t >= 64 { u64::MAX } else { (1u64 << t) - 1 };
    assert_eq!(c[16], or, "{what}: or");
    assert_eq!(c[17], (0..t).fold(0, |a, g| a ^ g), "{what}: xor");
    assert_eq!(c[18], !or, "{what}: and");
    assert_eq!((lo(c[20]), c[20] >> 32), (t, t), "{what}: _block / _system scopes");
}

#[test]
fn atomics_of_every_type() {
    let Some(p) = program("atomics_of_every_type") else { return };
    let k = kernel(&p, "sim_atomics");
    for (dims, mode) in [
        (LaunchDims::linear(64, 256), LaunchMode::Independent),
        (LaunchDims::linear(3, 100), LaunchMode::Independent),
        (LaunchDims::linear(4, 64), LaunchMode::Cooperative),
    ] {
        let threads = dims.threads();
        let mut c = zeroed(21);
        let mut init = vec![0u64; 21];
        init[6] = 0xffff_ffff;
        init[8] = u64::MAX;
        init[18] = u64::MAX;
        c.copy_from(&init);
        let out = zeroed(1);
        let k = kernel(&p, k.name()).options(LaunchOptions::mode(mode));
        k.launch(dims, &params(&out, &c, threads, 0)).unwrap();
        check_atomics(&c.to_vec(), threads, &format!("{threads} threads, {mode:?}"));
    }
}

#[test]
fn thread_and_block_indices_in_three_dimensions() {
    let Some(p) = program("thread_and_block_indices_in_three_dimensions") else { return };
    let dims = LaunchDims { grid: (3, 2, 2), block: (4, 3, 2), shared_mem_bytes: 0 };
    for mode in [LaunchMode::Independent, LaunchMode::Cooperative] {
        let out = zeroed(dims.threads() as usize);
        kernel(&p, "sim_ids").options(LaunchOptions::mode(mode)).launch(dims, &params(&out, &out, 0, 0)).unwrap();
        let o = out.to_vec();
        for (i, v) in o.iter().enumerate() {
            assert_eq!(*v, ((i as u64 / 24) << 32) | (i as u64 % 24), "{mode:?}: slot {i}");
        }
    }
}

#[test]
fn a_million_threads() {
    let Some(p) = program("a_million_threads") else { return };
    let n = 1u64 << 20;
    let out = zeroed(n as usize);
    kernel(&p, "sim_iota").launch(LaunchDims::cover(n as usize, 256), &params(&out, &out, n, 3)).unwrap();
    let o = out.to_vec();
    assert!(o.iter().enumerate().all(|(i, &v)| v == 3 * i as u64), "iota over {n} threads");
}

#[test]
fn shared_memory_and_barriers_in_cooperative_launches() {
    let Some(p) = program("shared_memory_and_barriers_in_cooperative_launches") else { return };
    let (blocks, threads) = (4u32, 64u32);
    let dims = LaunchDims::linear(blocks, threads).shared_mem(threads * 8);
    let out = zeroed((blocks * threads + blocks) as usize);
    let c = zeroed(2 * blocks as usize);
    kernel(&p, "sim_smem_barrier").cooperative().launch(dims, &params(&out, &c, 0, 0)).unwrap();
    let o = out.to_vec();
    for b in 0..blocks as u64 {
        for t in 0..threads as u64 {
            let want = (b << 32) | ((t + 1) % threads as u64);
            assert_eq!(o[(b * threads as u64 + t) as usize], want, "block {b} thread {t}: neighbour after the barrier");
        }
        assert_eq!(o[(blocks * threads) as usize + b as usize], threads as u64 * 8, "gc_dynamic_smem_bytes");
    }
    let c = c.to_vec();
    assert_eq!(&c[..blocks as usize], &vec![threads as u64 / 2; blocks as usize], "__syncthreads_count");
    assert_eq!(&c[blocks as usize..], &vec![1; blocks as usize], "__syncthreads_and / _or");
}

#[test]
fn one_shared_buffer_per_block_in_independent_launches() {
    let Some(p) = program("one_shared_buffer_per_block_in_independent_launches") else { return };
    let (blocks, threads) = (16u64, 256u64);
    let out = zeroed((blocks * threads) as usize);
    let dims = LaunchDims::linear(blocks as u32, threads as u32).shared_mem(4);
    kernel(&p, "sim_smem_tickets").launch(dims, &params(&out, &out, 0, 0)).unwrap();
    let o = out.to_vec();
    for b in 0..blocks as usize {
        let mut tickets: Vec<u64> = o[b * threads as usize..(b + 1) * threads as usize].to_vec();
        tickets.sort_unstable();
        let base = 0xA5A5_A5A5u64; // the simulation's fill of fresh shared memory
        assert_eq!(tickets, (base..base + threads).collect::<Vec<_>>(), "block {b}: tickets from one counter");
    }
}

#[test]
fn spinning_threads_need_a_cooperative_launch() {
    let Some(p) = program("spinning_threads_need_a_cooperative_launch") else { return };
    let k = kernel(&p, "sim_grid_barrier");
    let dims = LaunchDims::linear(4, 32);
    let threads = dims.threads();
    let rounds = 20;
    let out = zeroed(threads as usize);
    let c = zeroed(3);
    let k = k.cooperative();
    k.launch(dims, &params(&out, &c, rounds, threads)).unwrap();
    assert_eq!(c.to_vec(), [rounds * threads, 0, rounds * threads], "[arrivals, stale neighbours, departures]");

    // Independent: two host threads run one simulated thread each, which wait forever for the rest.
    let out = zeroed(threads as usize);
    let c = zeroed(3);
    let opts = LaunchOptions {
        mode: LaunchMode::Independent,
        host_threads: Some(2),
        timeout: Duration::from_secs(2),
        ..LaunchOptions::default()
    };
    let err =
        kernel(&p, "sim_grid_barrier").options(opts).launch(dims, &params(&out, &c, rounds, threads)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::SimKernelFailed { .. }), "{msg}");
    assert!(msg.contains("sim_grid_barrier") && msg.contains("did not finish") && msg.contains("cooperative"), "{msg}");
}

#[test]
fn device_globals_persist_across_launches() {
    let Some(p) = program("device_globals_persist_across_launches") else { return };
    let out = zeroed(5);
    kernel(&p, "sim_global_set").launch(LaunchDims::linear(1, 1), &params(&out, &out, 0, 1234)).unwrap();
    kernel(&p, "sim_global_get").launch(LaunchDims::linear(1, 1), &params(&out, &out, 0, 0)).unwrap();
    assert_eq!(out.to_vec(), [1234, 1234, 1235, 1236, 1237]);
    // A second load of the same (cached) object has globals of its own, as a second module load
    // on a GPU does: programs loaded side by side (tests on parallel threads) never share them.
    let again = SimProgram::compile(&source()).unwrap();
    let out2 = zeroed(5);
    kernel(&again, "sim_global_get").launch(LaunchDims::linear(1, 1), &params(&out2, &out2, 0, 0)).unwrap();
    assert_eq!(out2.to_vec()[0], 0, "a fresh load starts from zeroed globals");
    kernel(&p, "sim_global_get").launch(LaunchDims::linear(1, 1), &params(&out2, &out2, 0, 0)).unwrap();
    assert_eq!(out2.to_vec()[0], 1234, "the first load keeps its own");
}

fn expect_fault(p: &SimProgram, name: &str, dims: LaunchDims, prm: Params, wants: &[&str]) {
    let err = kernel(p, name).launch(dims, &prm).expect_err(name);
    let msg = err.to_string();
    assert!(matches!(err, Error::SimKernelFailed { .. }), "{name}: {msg}");
    for w in wants {
        assert!(msg.contains(w), "{name}: `{w}` not in: {msg}");
    }
    eprintln!("{name}: {msg}");
}

#[test]
fn faults_come_back_as_errors() {
    let Some(p) = program("faults_come_back_as_errors") else { return };
    let out = zeroed(256);
    let dims = LaunchDims::linear(4, 64);
    let prm = |arg| params(&out, &out, 256, arg);
    expect_fault(&p, "sim_trap", dims, prm(77), &["`sim_trap`", "block (1, 0, 0), thread (13, 0, 0)", "__trap()"]);
    expect_fault(
        &p,
        "sim_assert",
        dims,
        prm(200),
        &["block (3, 0, 0), thread (8, 0, 0)", "assertion", "sim_gid() != p.arg"],
    );
    expect_fault(&p, "sim_bad_address", dims, prm(5), &["thread (5, 0, 0)", "SIGSEGV"]);
    expect_fault(&p, "sim_bad_mask", dims, prm(0), &["__ballot_sync", "member mask 0x2"]);
    expect_fault(&p, "sim_syncthreads", dims, prm(0), &["__syncthreads()", "independent mode", "cooperative"]);
    // The process and the program live on.
    kernel(&p, "sim_iota").launch(LaunchDims::cover(256, 64), &params(&out, &out, 256, 2)).unwrap();
    assert_eq!(out.to_vec()[255], 510);
}

#[test]
fn launches_are_checked() {
    let Some(p) = program("launches_are_checked") else { return };
    let out = zeroed(8);
    let k = kernel(&p, "sim_iota");
    let prm = params(&out, &out, 0, 0);
    let err = k.launch(LaunchDims::linear(1, 2048), &prm).unwrap_err().to_string();
    assert!(err.contains("invalid launch configuration"), "{err}");
    let err = k.launch(LaunchDims::linear(1, 64).shared_mem(1 << 20), &prm).unwrap_err().to_string();
    assert!(err.contains("shared memory"), "{err}");
    let err = kernel(&p, "sim_iota").cooperative().launch(LaunchDims::linear(64, 128), &prm).unwrap_err().to_string();
    assert!(err.contains("exceed the limit"), "{err}");
    // SAFETY: not launched: the parameter size check refuses it.
    let err = unsafe { p.kernel::<u64>("sim_iota") }.err().expect("size mismatch").to_string();
    assert!(err.contains("takes 32 bytes of parameters"), "{err}");
    // SAFETY: as above: the name check refuses it.
    let err = unsafe { p.kernel::<Params>("no_such_kernel") }.err().expect("unknown kernel").to_string();
    assert!(err.contains("no extern \"C\" __global__ kernel") && err.contains("sim_iota"), "{err}");
    assert!(p.kernels().iter().any(|k| k == "sim_two_params"), "{:?}", p.kernels());
    // Zero-sized grids are refused, as by CUDA.
    let err = k.launch(LaunchDims::linear(0, 64), &prm).unwrap_err().to_string();
    assert!(err.contains("invalid launch configuration"), "{err}");
}

#[test]
fn a_kernel_of_two_parameters() {
    let Some(p) = program("a_kernel_of_two_parameters") else { return };
    assert_eq!(p.param_bytes("sim_two_params").unwrap(), 12);
    let out = zeroed(64);
    let mut bytes = out.addr().to_le_bytes().to_vec();
    bytes.extend(77u32.to_le_bytes());
    // SAFETY: sim_two_params(u64* out, unsigned v) writes out[0..64): the launch has 64 threads.
    unsafe { p.launch("sim_two_params", LaunchDims::linear(2, 32), &LaunchOptions::default(), &bytes) }.unwrap();
    assert_eq!(out.to_vec(), vec![77; 64]);
}

#[test]
fn in_process_launches() {
    let Some(p) = program("in_process_launches") else { return };
    let out = zeroed(1000);
    let opts = LaunchOptions { isolate: false, ..LaunchOptions::default() };
    kernel(&p, "sim_iota")
        .options(opts.clone())
        .launch(LaunchDims::cover(1000, 128), &params(&out, &out, 1000, 5))
        .unwrap();
    assert_eq!(out.to_vec()[999], 4995);
    let c = zeroed(3);
    let dims = LaunchDims::linear(2, 16);
    let coop = LaunchOptions { mode: LaunchMode::Cooperative, ..opts };
    kernel(&p, "sim_grid_barrier").options(coop).launch(dims, &params(&out, &c, 5, 32)).unwrap();
    assert_eq!(c.to_vec(), [5 * 32, 0, 5 * 32]);
}

#[test]
fn compile_errors_carry_the_compilers_log() {
    if sim_device("compile_errors_carry_the_compilers_log").is_none() {
        return;
    }
    let err = SimProgram::compile(&ProgramSource::new("broken", "extern \"C\" __global__ void k() { nope(); }"))
        .expect_err("does not compile");
    let msg = err.to_string();
    assert!(matches!(err, Error::Compile { .. }), "{msg}");
    assert!(msg.contains("broken") && msg.contains("nope") && msg.contains("host simulation"), "{msg}");
    // Issue 8: the error names the compiler that failed (g++ or clang++), never NVRTC.
    let cxx = gpu_cilk_runtime::backend::cuda::sim::compiler();
    assert!(msg.starts_with(&format!("{cxx} (the cuda-sim host simulation) could not compile `broken`")), "{msg}");
    assert!(!msg.contains("NVRTC"), "{msg}");
    let err = SimProgram::compile(&ProgramSource::new(
        "static_shared",
        "extern \"C\" __global__ void k(int* o) { __shared__ int s[32]; s[0] = 1; o[0] = s[0]; }",
    ))
    .expect_err("static __shared__ does not compile")
    .to_string();
    assert!(err.contains("gc_dynamic_smem()"), "{err}");
}

#[test]
fn the_test_source_is_valid_cuda() {
    if let Err(e) = nvrtc_version() {
        eprintln!("SKIPPED the_test_source_is_valid_cuda: NVRTC cannot be loaded ({e})");
        return;
    }
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let ptx = compile(&source(), arch).unwrap_or_else(|e| panic!("NVRTC, {arch}: {e}"));
        for k in ["sim_intrinsics", "sim_atomics", "sim_grid_barrier", "sim_smem_barrier", "sim_two_params"] {
            assert!(ptx.contains(&format!(".entry {k}(")), "{arch}: {k} missing from the PTX");
        }
    }
}

#[test]
#[ignore]
fn launch_overhead() {
    let Some(p) = program("launch_overhead") else { return };
    let out = zeroed(256);
    for (name, opts) in [
        ("isolated", LaunchOptions::default()),
        ("in-process", LaunchOptions { isolate: false, ..LaunchOptions::default() }),
    ] {
        let k = kernel(&p, "sim_iota").options(opts);
        let t = std::time::Instant::now();
        for _ in 0..200 {
            k.launch(LaunchDims::linear(1, 32), &params(&out, &out, 32, 1)).unwrap();
        }
        eprintln!("{name}: {:?} per launch", t.elapsed() / 200);
    }
}
