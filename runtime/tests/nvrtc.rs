//! NVRTC compiles CUDA C++ without a GPU: a tiny kernel, a program with an in-memory header, and a
//! broken program whose error keeps NVRTC's whole log. Skips visibly without NVRTC, and fails then
//! when `GPU_CILK_REQUIRE_NVRTC=1` (`scripts/test.sh` and CI set it).

use gpu_cilk_runtime::backend::cuda::{compile, compile_ptx, nvrtc_version, Arch, ProgramSource};
use gpu_cilk_runtime::Error;
use gpu_cilk_test_support::gate;

const TINY: &str = r#"extern "C" __global__ void add_one(unsigned long long* p, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}"#;

fn check_compiles() {
    let ptx = compile_ptx(TINY, "tiny", Arch::new(9, 0)).expect("tiny kernel compiles");
    assert!(ptx.contains(".entry add_one"), "{ptx}");
    assert!(ptx.contains(".target sm_90"), "{ptx}");

    let with_header = ProgramSource::new(
        "with_header",
        "#include \"gpu_cilk/one.cuh\"\nextern \"C\" __global__ void k(int* p) { *p = ONE; }",
    )
    .header("gpu_cilk/one.cuh", "#define ONE 1\n");
    assert!(compile(&with_header, Arch::new(9, 0)).unwrap().contains(".entry k"));

    let err = compile_ptx("extern \"C\" __global__ void broken() { undefined_thing(); }", "broken", Arch::new(9, 0))
        .unwrap_err();
    match &err {
        Error::Compile { task_or_program, log, .. } => {
            assert_eq!(task_or_program, "broken");
            assert!(log.contains("undefined_thing"), "{log}");
        }
        other => panic!("expected Error::Compile, got {other:?}"),
    }
    assert!(err.to_string().contains("NVRTC could not compile `broken`"));
    let (major, _) = nvrtc_version().unwrap();
    assert!(major >= 11);
}

/// Skips visibly without NVRTC, fails then when GPU_CILK_REQUIRE_NVRTC=1 (scripts/test.sh
/// and CI set it).
#[test]
fn compiles_a_tiny_kernel() {
    if let Err(why) = nvrtc_version() {
        gate::nvrtc_missing("compiles_a_tiny_kernel", &why);
        return;
    }
    check_compiles();
}
