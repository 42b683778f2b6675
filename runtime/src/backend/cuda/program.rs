//! Assembling one CUDA program from the task functions reachable from a root, for one device
//! scheduler. In order: one `#define GC_QBASE_<task>` (its first queue in the levelized channel
//! table) and `#define GC_ID_<task>` (its index) per task; the device library (`runtime.cuh`, the
//! scheduler's header, the allocator and `temp.cuh`); the ABI checks; the device structs
//! (`#[derive(DeviceStruct)]`) of every task and helper, each after the structs of its fields,
//! with their sizes checked; every task's `decls` (with the checks of its argument struct); every
//! task's `types`; every device helper (prototypes, then definitions); every task's `defs`; the
//! scheduler's entry points (written here, from the task list, so kernel names have one home:
//! [`super::abi`]); the layout probe (which also checks the structs' field offsets).
//!
//! A generic task's fragment is a family of C++ templates: its text goes in once, and each
//! instantiation in the registry (`CilkTask::TYPE_ARGS`) gets, after the `decls`, its ids as a
//! specialization of `gc_task_ids` and its names (`<name>__<type args>_task`, `_args`, `_ret`) as
//! typedefs, which everything below uses like a plain task's names ([`ProgramTask::c_name`]).
//!
//! The tests that compile generated code with NVRTC assemble through [`assemble`] too, so CI
//! compiles exactly what a GPU would run.

use super::abi::{self, DeviceScheduler};
use crate::device_struct::in_dependency_order;
use crate::error::{Error, Result};
use crate::task::{ArgsLayout, CudaFragment, DeviceFn, Registry};
use std::fmt::Write as _;

/// A task's place in an assembled program.
#[derive(Clone, Debug)]
pub struct ProgramTask {
    /// The task's name.
    pub name: &'static str,
    /// Its first queue in the levelized channel table (queues `qbase ..= qbase + syncs + 1`).
    pub qbase: u32,
    /// Its number of syncs.
    pub syncs: usize,
    /// The compiler's bound on spawns per segment, if any.
    pub fanout: Option<usize>,
    /// Its fragment.
    pub fragment: &'static CudaFragment,
    /// The device types of its type arguments (a generic task's instantiation; empty otherwise).
    pub type_args: &'static [&'static str],
    /// Its C identifier in the program: the fragment's name, or for an instantiation of a generic
    /// task `<name>__<type args>` (`cilksort__gc_u32`), which the program defines as typedefs of
    /// the template's instantiation (`cilksort__gc_u32_task` is `cilksort_task<gc_u32>`).
    pub c_name: String,
    /// The Rust layout of its arguments (checked against the C struct in the program).
    pub args_layout: ArgsLayout,
    /// The Rust layout of its result.
    pub output_layout: ArgsLayout,
}

/// An assembled program.
#[derive(Clone, Debug)]
pub struct AssembledProgram {
    /// The scheduler it is assembled for.
    pub scheduler: DeviceScheduler,
    /// Tasks in registry order (the root first); a task's index is its id on the device.
    pub tasks: Vec<ProgramTask>,
    /// Queues per level of the levelized channel table, all tasks.
    pub queues_per_level: u32,
    /// The CUDA C++ source.
    pub source: String,
    /// The layout facts its probe kernel `gc_abi_layout` reports, in order.
    pub(crate) probes: Vec<abi::Probe>,
    /// The fault sites of every device function (helpers and tasks' serial forms), numbered from
    /// [`DEVICE_SITE_BASE`]: (function name, Rust source location).
    pub device_sites: Vec<(&'static str, &'static str)>,
}

/// Fault sites of device functions are numbered from here (task segments' sites, below it, are
/// numbered per task: the fault record names the task).
pub const DEVICE_SITE_BASE: u32 = 0x8000_0000;

impl AssembledProgram {
    /// Whether some task of the program allocates temporaries (`alloc!`), so the program's state
    /// needs the device temporary heap.
    pub fn uses_temps(&self) -> bool {
        self.tasks.iter().any(|t| t.fragment.uses_temps)
    }

    /// Whether some task of the program spawns with a priority (`spawn!(f(..), priority = key)`),
    /// so the persistent scheduler serves prioritized ready work from its heap (ready_heap.cuh).
    pub fn uses_priorities(&self) -> bool {
        uses_priorities(&self.tasks)
    }
}

/// Whether a fragment spawns with a priority (`gc_spawn_prio<` calls, written by the compiler).
fn uses_priorities(tasks: &[ProgramTask]) -> bool {
    tasks.iter().any(|t| t.fragment.defs.contains("gc_spawn_prio<"))
}

/// Programs of the persistent scheduler with more spawn sites than this get `gc_spawn` out of line
/// (`GC_OUTLINE_SPAWNS`, persistent.cuh): inlined at Strassen's 32 sites it made 2.9 MB of PTX that
/// the driver's JIT compiled for minutes; fib (2 sites) and queens keep the inlined fast path.
/// `GPU_CILK_NVRTC_FLAGS=-DGC_OUTLINE_SPAWNS=0` (or `=1`) overrides the choice.
pub const OUTLINE_SPAWNS_ABOVE: usize = 6;

/// Spawn sites of the persistent form, over all tasks (`gc_spawn<` and `gc_spawn_prio<` calls in
/// the fragments).
fn spawn_sites(tasks: &[ProgramTask]) -> usize {
    tasks
        .iter()
        .map(|t| t.fragment.defs.matches("gc_spawn<").count() + t.fragment.defs.matches("gc_spawn_prio<").count())
        .sum()
}

/// Which tasks the persistent scheduler runs as sum groups (persistent.cuh, SUM GROUPS): those
/// whose result is a constant plus their children's results (`CudaFragment::sum_of`) and whose
/// callees are all such tasks as well — the largest such set (a task with one callee of any other
/// shape runs its continuation as usual, and so does every task that spawns it).
fn sum_groups(tasks: &[ProgramTask]) -> Vec<bool> {
    let mut sum: Vec<bool> = tasks.iter().map(|t| t.fragment.sum_of.is_some()).collect();
    loop {
        let mut changed = false;
        for (i, t) in tasks.iter().enumerate() {
            let Some(callees) = t.fragment.sum_of else { continue };
            let all = callees.iter().all(|c| tasks.iter().position(|u| u.fragment.name == *c).is_some_and(|j| sum[j]));
            if sum[i] && !all {
                sum[i] = false;
                changed = true;
            }
        }
        if !changed {
            return sum;
        }
    }
}

/// Assembles the levelized program for `reg` (root first). Every task must carry a CUDA fragment.
pub fn assemble(reg: &Registry) -> Result<AssembledProgram> {
    assemble_for(reg, DeviceScheduler::Levels)
}

/// Assembles the program for `reg` (root first) and scheduler `scheduler`.
pub fn assemble_for(reg: &Registry, scheduler: DeviceScheduler) -> Result<AssembledProgram> {
    let mut tasks = Vec::new();
    let mut qbase = 0u32;
    for e in reg.entries() {
        let fragment = e.cuda.ok_or_else(|| Error::BackendUnavailable {
            backend: "cuda",
            reason: format!(
                "task `{}` has no CUDA code (hand-written CilkTask impls run on host backends only)",
                e.name
            ),
        })?;
        tasks.push(ProgramTask {
            name: e.name,
            c_name: instance_name(fragment.name, e.type_args),
            type_args: e.type_args,
            qbase,
            syncs: e.syncs,
            fanout: e.fanout,
            fragment,
            args_layout: e.args_layout,
            output_layout: e.output_layout,
        });
        qbase += e.syncs as u32 + 2;
    }
    let mut src = String::new();
    for (i, t) in tasks.iter().enumerate().filter(|(_, t)| t.type_args.is_empty()) {
        let n = t.fragment.name;
        let _ = writeln!(src, "#define GC_QBASE_{n} {}u\n#define GC_ID_{n} {i}u", t.qbase);
    }
    if scheduler == DeviceScheduler::Persistent {
        let sums = sum_groups(&tasks);
        for (t, _) in tasks.iter().zip(&sums).filter(|(_, s)| **s) {
            let _ = writeln!(src, "#define GC_SUM_{} 1", t.fragment.name);
        }
        if sums.iter().any(|s| *s) {
            src.push_str("#define GC_SUMS 1\n");
        }
    }
    // The ids of a generic task's instantiations (`write_instance`), which its template reads.
    src.push_str("template <typename Task> struct gc_task_ids;\n");
    src.push_str(gpu_cilk_kernels::RUNTIME_CUH);
    src.push('\n');
    match scheduler {
        DeviceScheduler::Levels => src.push_str(gpu_cilk_kernels::LEVELS_CUH),
        DeviceScheduler::Persistent => {
            let sites = spawn_sites(&tasks);
            if sites > OUTLINE_SPAWNS_ABOVE {
                let _ = writeln!(
                    src,
                    "// {sites} spawn sites: gc_spawn out of line (code size, JIT time)\n\
                     #ifndef GC_OUTLINE_SPAWNS\n#define GC_OUTLINE_SPAWNS 1\n#endif"
                );
            }
            let prio = uses_priorities(&tasks);
            if prio {
                src.push_str("// priority spawns: the ready heap (ready_heap.cuh)\n#define GC_PRIORITIES 1\n");
            }
            src.push_str(gpu_cilk_kernels::TICKET_QUEUE_CUH);
            src.push('\n');
            src.push_str(gpu_cilk_kernels::PERSISTENT_CUH);
            if prio {
                src.push('\n');
                src.push_str(gpu_cilk_kernels::HEAP_CUH);
                src.push('\n');
                src.push_str(gpu_cilk_kernels::READY_HEAP_CUH);
                src.push('\n');
                src.push_str(&abi::prio_asserts());
            }
        }
    }
    src.push('\n');
    // The device heap of task-scoped temporaries (`alloc!`): always assembled, used only by
    // programs whose tasks allocate (see `uses_temps`).
    src.push_str(gpu_cilk_kernels::XMALLOC_CUH);
    src.push('\n');
    src.push_str(gpu_cilk_kernels::TEMP_CUH);
    src.push('\n');
    src.push_str(&abi::layout_asserts(scheduler));
    let mut helpers: Vec<&'static DeviceFn> = Vec::new();
    fn collect(h: &'static DeviceFn, out: &mut Vec<&'static DeviceFn>) {
        if out.iter().any(|x| std::ptr::eq(*x, h) || x.name == h.name) {
            return;
        }
        out.push(h);
        for inner in h.helpers {
            collect(inner, out);
        }
    }
    for t in &tasks {
        for h in t.fragment.helpers {
            collect(h, &mut helpers);
        }
    }
    // The device structs (`#[derive(DeviceStruct)]`) that tasks and helpers name, each after the
    // structs of its fields, with its size checked here and its offsets by the layout probe.
    let structs = in_dependency_order(
        tasks.iter().flat_map(|t| t.fragment.structs.iter()).chain(helpers.iter().flat_map(|h| h.structs.iter())),
    );
    if !structs.is_empty() {
        src.push_str("// ---- device structs (#[derive(DeviceStruct)])\n");
    }
    for d in &structs {
        let (n, size) = (d.name, d.size);
        let _ = writeln!(
            src,
            "{}\nstatic_assert(sizeof({n}) == {size}, \"gpu-cilk ABI: the device struct `{n}` is {size} bytes in Rust but a different size in CUDA\");",
            d.def
        );
    }
    // A generic task's fragment is a template: its text goes in once, however many
    // instantiations the program has.
    let first_of_fragment: Vec<bool> =
        (0..tasks.len()).map(|i| !tasks[..i].iter().any(|u| std::ptr::eq(u.fragment, tasks[i].fragment))).collect();
    for (i, t) in tasks.iter().enumerate() {
        if first_of_fragment[i] {
            src.push_str(t.fragment.decls);
        }
        if !t.type_args.is_empty() {
            write_instance(&mut src, t, i);
        }
        src.push_str(&abi::args_asserts(t.name, &t.c_name, &t.args_layout));
        src.push_str(&abi::output_asserts(t.name, &t.c_name, &t.output_layout));
        src.push('\n');
    }
    if scheduler == DeviceScheduler::Persistent {
        write_item_type(&mut src, &tasks);
    }
    for (i, t) in tasks.iter().enumerate() {
        if first_of_fragment[i] {
            src.push_str(t.fragment.types);
            src.push('\n');
        }
    }
    // Each device function's sites get a range of their own in one table, so a fault inside an
    // inline call or a helper names the function and the line it happened in.
    let mut device_sites = Vec::new();
    for h in &helpers {
        let _ = writeln!(src, "#define {} {}u", h.site_base, DEVICE_SITE_BASE as usize + device_sites.len());
        device_sites.extend(h.sites.iter().map(|s| (h.name, *s)));
    }
    for h in &helpers {
        src.push_str(h.decl);
        src.push('\n');
    }
    for h in &helpers {
        src.push_str(h.def);
        src.push('\n');
    }
    for (i, t) in tasks.iter().enumerate() {
        if first_of_fragment[i] {
            src.push_str(t.fragment.defs);
            src.push('\n');
        }
    }
    match scheduler {
        DeviceScheduler::Levels => write_levels_entries(&mut src, &tasks),
        DeviceScheduler::Persistent => write_persistent_entries(&mut src, &tasks),
    }
    let mut probes =
        abi::probes(scheduler, tasks.iter().map(|t| (t.name, t.c_name.as_str(), &t.args_layout, &t.output_layout)));
    for d in &structs {
        for f in d.fields {
            probes.push(abi::Probe {
                what: format!("offset of field `{}` of the device struct `{}`", f.name, d.name),
                cxx: format!("GC_OFFSETOF({}, {})", d.name, f.name),
                expected: f.offset as u64,
            });
        }
    }
    src.push_str(&abi::layout_probe(&probes));
    Ok(AssembledProgram { scheduler, tasks, queues_per_level: qbase, source: src, probes, device_sites })
}

/// The C identifier of a task of the program: `name`, or `name__<args>` for an instantiation of
/// a generic task (the writer mangles a user name that contains `__`, so none can meet it).
pub fn instance_name(name: &str, type_args: &[&str]) -> String {
    if type_args.is_empty() {
        name.to_string()
    } else {
        format!("{name}__{}", type_args.join("__"))
    }
}

/// An instantiation of a generic task (number `id`): its ids (the template reads them from
/// `gc_task_ids`, declared at the top of the program) and the names the rest of the program uses
/// (`<c_name>_args`, `_ret`, `_task`), as typedefs of the template's instantiation.
fn write_instance(src: &mut String, t: &ProgramTask, id: usize) {
    let (n, c, a) = (t.fragment.name, &t.c_name, t.type_args.join(", "));
    let _ = writeln!(
        src,
        "template <> struct gc_task_ids<{n}_task<{a}> > {{ static const gc_u32 QBASE = {}u; static const gc_u32 ID = {id}u; }};\n\
         typedef {n}_args<{a}> {c}_args;\ntypedef {n}_ret<{a}> {c}_ret;\ntypedef {n}_task<{a}> {c}_task;",
        t.qbase
    );
}

/// The levelized scheduler's kernels: one per (task, queue), the root push, the element layouts.
fn write_levels_entries(src: &mut String, tasks: &[ProgramTask]) {
    src.push_str("// ---- entry points: levelized scheduler\n");
    for t in tasks {
        let n = &t.c_name;
        for q in 0..=t.syncs + 1 {
            let k = abi::queue_kernel(n, q);
            let _ = writeln!(src, "extern \"C\" __global__ void {k}(gc_launch L) {{ gc_run<{n}_task>(L, {q}); }}");
        }
    }
    if let Some(root) = tasks.first() {
        let n = &root.c_name;
        let _ =
            writeln!(src, "extern \"C\" __global__ void gc_root(gc_root_params p) {{ gc_push_root<{n}_task>(p); }}");
    }
    src.push_str("extern \"C\" __global__ void gc_layout(gc_u64* out) {\n");
    for (i, t) in tasks.iter().enumerate() {
        let n = &t.c_name;
        let _ = writeln!(
            src,
            "  out[{}] = sizeof(gc_pre<{n}_task>);\n  out[{}] = sizeof(gc_cont<{n}_task>);\n  out[{}] = sizeof({n}_task::Args);",
            3 * i,
            3 * i + 1,
            3 * i + 2
        );
    }
    src.push_str("}\n");
}

/// The persistent scheduler's item type: a `gc_pitem` with room for the largest argument struct.
fn write_item_type(src: &mut String, tasks: &[ProgramTask]) {
    let args: Vec<String> = tasks.iter().map(|t| format!("{}_args", t.c_name)).collect();
    let _ = writeln!(
        src,
        "// ---- the persistent scheduler's item: the largest argument struct, in 8-byte words\n\
         template <typename Any> struct gc_items {{\n  \
         static const gc_u32 TASKS = {};\n  \
         static const gc_u64 WORDS = gc_cmax_words<{}>();\n  \
         typedef gc_pitem<(int)WORDS> Item;\n}};",
        tasks.len(),
        args.join(", ")
    );
}

/// The persistent scheduler's dispatch (`gc_prog`: one `switch` over the task ids), its kernel and
/// its layout kernel (item size, frame slot size, root argument size).
fn write_persistent_entries(src: &mut String, tasks: &[ProgramTask]) {
    src.push_str("// ---- entry points: persistent scheduler\nstruct gc_prog {\n");
    src.push_str("  typedef gc_items<void>::Item Item;\n");
    let _ = writeln!(src, "  static const gc_u32 TASKS = {};", tasks.len());
    src.push_str(
        "  static __device__ gc_frame_hdr* step(gc_pwarp* W, gc_lstack* L, gc_frame_hdr* e, gc_u64* stats) {\n    switch (e->task) {\n",
    );
    for (i, t) in tasks.iter().enumerate() {
        let _ = writeln!(src, "      case {i}u: return gc_lstep<{}_task>(W, L, e, stats);", t.c_name);
    }
    src.push_str("    }\n    return nullptr;\n  }\n");
    src.push_str(
        "  static __device__ gc_frame_hdr* resume(gc_pwarp* W, gc_lstack* L, gc_frame_hdr* h, gc_u64* stats) {\n    switch (h->task) {\n",
    );
    for (i, t) in tasks.iter().enumerate() {
        let _ = writeln!(src, "      case {i}u: return gc_presume<{}_task>(W, L, h, stats);", t.c_name);
    }
    src.push_str("    }\n    return nullptr;\n  }\n");
    // Warp tasks (`#[gpu_cilk(warp)]`): which ids they are, and their whole-warp entry.
    src.push_str("  static __device__ bool is_warp(gc_u32 task) {\n    switch (task) {\n");
    for (i, t) in tasks.iter().enumerate() {
        let _ = writeln!(src, "      case {i}u: return gc_is_warp<{}_task>::value;", t.c_name);
    }
    src.push_str("    }\n    return false;\n  }\n");
    src.push_str(
        "  static __device__ gc_frame_hdr* start_warp(gc_pwarp* W, gc_lstack* L, const Item& it, bool owner, gc_u64* stats) {\n    switch (it.h.task) {\n",
    );
    for (i, t) in tasks.iter().enumerate() {
        let _ =
            writeln!(src, "      case {i}u: return gc_pwarp_start<{}_task, Item>(W, L, it, owner, stats);", t.c_name);
    }
    src.push_str("    }\n    return nullptr;\n  }\n");
    // Block tasks (`#[gpu_cilk(block)]`): whether there are any, which ids, their whole-block entry.
    let blocks: Vec<String> = tasks.iter().map(|t| format!("gc_is_block<{}_task>::value", t.c_name)).collect();
    let _ = writeln!(src, "  static const bool HAS_BLOCK = false || {};", blocks.join(" || "));
    src.push_str("  static __device__ bool is_block(gc_u32 task) {\n    switch (task) {\n");
    for (i, b) in blocks.iter().enumerate() {
        let _ = writeln!(src, "      case {i}u: return {b};");
    }
    src.push_str("    }\n    return false;\n  }\n");
    src.push_str(
        "  static __device__ gc_frame_hdr* start_block(gc_pwarp* W, gc_lstack* L, const Item& it, bool owner, unsigned char* scratch, gc_u64* stats) {\n    switch (it.h.task) {\n",
    );
    for (i, t) in tasks.iter().enumerate() {
        let _ = writeln!(
            src,
            "      case {i}u: return gc_pblock_start<{}_task, Item>(W, L, it, owner, scratch, stats);",
            t.c_name
        );
    }
    src.push_str("    }\n    return nullptr;\n  }\n");
    if let Some(root) = tasks.first() {
        let n = &root.c_name;
        let _ = writeln!(
            src,
            "  static __device__ void write_root(unsigned char* dst, const unsigned char* args, void* result) {{\n    \
             gc_pitem_hdr* h = reinterpret_cast<gc_pitem_hdr*>(dst);\n    \
             h->task = 0u;\n    h->depth = 0u;\n    h->dest = result;\n    h->parent = nullptr;\n    \
             for (gc_u32 i = 0; i < sizeof({n}_args); ++i) dst[sizeof(gc_pitem_hdr) + i] = args[i];\n  }}"
        );
    }
    src.push_str("};\n");
    src.push_str(
        "extern \"C\" __global__ void __launch_bounds__(GC_PERSISTENT_THREADS) gc_persistent(gc_psched P) { gc_persistent_loop<gc_prog>(P); }\n",
    );
    let slots: Vec<String> = tasks.iter().map(|t| format!("gc_pslot<{}_task>", t.c_name)).collect();
    let args: Vec<String> = tasks.iter().map(|t| format!("{}_args", t.c_name)).collect();
    let _ = writeln!(
        src,
        "extern \"C\" __global__ void gc_playout(gc_u64* out) {{\n  \
         out[0] = sizeof(gc_prog::Item);\n  \
         out[1] = gc_cmax_bytes<{}>();\n  \
         out[2] = gc_cmax_bytes<{}>();\n  \
         out[3] = 0;\n{}}}",
        slots.join(", "),
        args.join(", "),
        tasks
            .iter()
            .map(|t| format!(
                "  if (gc_is_block<{0}_task>::scratch > out[3]) out[3] = gc_is_block<{0}_task>::scratch;\n",
                t.c_name
            ))
            .collect::<String>()
    );
}
