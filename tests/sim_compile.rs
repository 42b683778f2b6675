//! Every task of every example, workload and fixture, assembled into one CUDA program exactly as
//! the cuda backend assembles it (`program::assemble`), built for the host simulation of device
//! code (`backend::cuda::sim`: g++ with `kernels/sim/gc_sim.h`): a second compiler checks the
//! generated CUDA C++, every program's kernels are found and loadable, and its `gc_layout` kernel
//! runs (the element sizes the scheduler reads back). The scheduler's kernels are not run here:
//! driving them on the simulation is the cuda backend's to wire up. The program list is
//! `tests/nvrtc_compile.rs`'s; keep them in step.
//!
//! Skips with a printed reason when no C++ compiler can be run, unless `GPU_CILK_REQUIRE_SIM=1`,
//! which turns that into a failure (CI sets it).

#![cfg(target_os = "linux")]
#![allow(dead_code)]

use gpu_cilk::runtime::backend::cuda::program::assemble as assemble_program;
use gpu_cilk::runtime::backend::cuda::sim::{compiler_version, SimBuffer, SimProgram};
use gpu_cilk::runtime::backend::cuda::{DevicePtr, LaunchDims, ProgramSource};
use gpu_cilk::runtime::{CilkTask, Registry};

#[path = "../examples/workloads/queens.rs"]
mod queens_workload;
#[path = "support/temps.rs"]
mod temps;

#[path = "support/backends.rs"]
mod backends;
#[path = "support/fixtures.rs"]
mod fixtures;
#[path = "support/random_tree.rs"]
mod random_tree;

use fixtures::*;
use random_tree::rnode;

/// The whole CUDA program for the tasks reachable from `T`, assembled by the runtime exactly as
/// the cuda backend assembles it before compiling it for a device.
fn assemble<T: CilkTask>() -> String {
    assemble_program(&Registry::of::<T>()).expect("every task has a CUDA fragment").source
}

fn programs() -> Vec<(&'static str, String)> {
    vec![
        ("fib", assemble::<fib::Task>()),
        ("queens", assemble::<queens_workload::queens::Task>()),
        ("queens_bits", assemble::<queens_workload::queens_bits::Task>()),
        ("wide", assemble::<wide::Task>()),
        ("ping", assemble::<ping::Task>()),
        ("walk", assemble::<walk::Task>()),
        ("early", assemble::<early::Task>()),
        ("mixed", assemble::<mixed::Task>()),
        ("rnode", assemble::<rnode::Task>()),
        ("generated_regressions", assemble::<generated_regressions::Task>()),
        ("scatter_sum", assemble::<temps::scatter_sum::Task>()),
        ("tree_root", assemble::<temps::tree_root::Task>()),
        ("two_rounds", assemble::<temps::two_rounds::Task>()),
        ("waves", assemble::<temps::waves::Task>()),
    ]
}

#[test]
fn every_fixture_builds_for_the_host_simulation() {
    if let Err(e) = compiler_version() {
        backends::gate::sim_missing("every_fixture_builds_for_the_host_simulation", &e);
        return;
    }
    // Two builds at a time (g++ is single-threaded; CI machines have two cores or more).
    let programs = programs();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((name, src)) = programs.get(i) else { break };
                match SimProgram::compile(&ProgramSource::new(*name, src.as_str())) {
                    Ok(p) => {
                        let q0 = format!("gc_{name}_q0");
                        for k in [q0.as_str(), "gc_root", "gc_layout", "gc_regrow", "gc_unspill", "gc_temp_heap_init"] {
                            if !p.kernels().iter().any(|x| x == k) {
                                failures
                                    .lock()
                                    .unwrap()
                                    .push(format!("{name}: kernel `{k}` not found in {:?}", p.kernels()));
                            }
                        }
                        let tasks = src.matches("#define GC_QBASE_").count(); // one per task
                        let sizes = SimBuffer::<u64>::zeroed(3 * tasks).unwrap();
                        // SAFETY: `gc_layout(gc_u64* out)` writes out[0 .. 3 × tasks): per task the
                        // pre-spawn element, the continuation element and the argument struct.
                        let layout = unsafe { p.kernel::<DevicePtr<u64>>("gc_layout") }.unwrap();
                        layout.launch(LaunchDims::linear(1, 1), &sizes.ptr()).unwrap();
                        let sizes = sizes.to_vec();
                        // Elements end in a pointer (8-aligned); argument structs are at least 1 byte.
                        let bad = sizes.chunks(3).any(|t| t[0] % 8 != 0 || t[1] % 8 != 0 || t.contains(&0));
                        if bad {
                            failures.lock().unwrap().push(format!("{name}: gc_layout wrote {sizes:?}"));
                        }
                        eprintln!(
                            "{name}: {} kernels, element sizes {sizes:?}, built in {:?}{}",
                            p.kernels().len(),
                            p.build_time(),
                            if p.cache_hit() { " (cached)" } else { "" }
                        );
                    }
                    Err(e) => failures.lock().unwrap().push(format!("{name}: {e}")),
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "the host simulation could not build:\n{}", failures.join("\n\n"));
}
