//! Plain structs that tasks pass, return, store and index: `#[derive(gpu_cilk::DeviceStruct)]`
//! on a `#[repr(C)]` struct of scalars, arrays and other such structs (see "Plain structs" in
//! `docs/dsl.md`).
//!
//! This module owns the contract between the derive and the cuda backend: [`DeviceStruct`] (the
//! trait the derive implements, whose bound generated task code names for every struct type a
//! task or helper mentions) and [`StructDef`] (the struct's C++ definition and its Rust layout,
//! which the cuda backend writes into the program before the tasks and checks on the device:
//! the size by `static_assert`, each field's offset by the layout probe, like the arguments').

/// A plain struct usable in tasks. Implemented by `#[derive(gpu_cilk::DeviceStruct)]`, which
/// checks that the struct is `#[repr(C)]` with named fields of scalars, arrays and other such
/// structs, and writes [`DeviceStruct::DEF`] from the same declaration.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a device struct: a task can take, return and store a struct only if it derives `gpu_cilk::DeviceStruct`",
    label = "not `#[derive(gpu_cilk::DeviceStruct)]`",
    note = "write `#[derive(Clone, Copy, Default, Debug, gpu_cilk::DeviceStruct)] #[repr(C)]` on the struct (its fields scalars, arrays or other device structs)"
)]
pub trait DeviceStruct: Copy + Default + Send + Sync + 'static {
    /// The struct's C++ definition and Rust layout.
    const DEF: &'static StructDef;
}

/// One device struct: its C++ name and definition, its Rust layout, and the device structs its
/// fields use (defined before it).
#[derive(Debug)]
pub struct StructDef {
    /// The C++ name (the Rust name).
    pub name: &'static str,
    /// `struct Point { gc_f32 x; gc_f32 y; };`
    pub def: &'static str,
    /// `size_of` in Rust.
    pub size: usize,
    /// Each field's C++ name, Rust offset and size.
    pub fields: &'static [StructField],
    /// The device structs of its fields.
    pub deps: &'static [&'static StructDef],
}

/// Where one field of a device struct lies in Rust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructField {
    /// The field's name (the same in C++).
    pub name: &'static str,
    /// Its byte offset.
    pub offset: usize,
}

/// `defs` and every struct they use, each once, every struct after the ones its fields use.
pub fn in_dependency_order<'a>(defs: impl IntoIterator<Item = &'a &'static StructDef>) -> Vec<&'static StructDef> {
    fn visit(d: &'static StructDef, out: &mut Vec<&'static StructDef>) {
        if out.iter().any(|x| std::ptr::eq(*x, d) || x.name == d.name) {
            return;
        }
        for dep in d.deps {
            visit(dep, out);
        }
        out.push(d);
    }
    let mut out = Vec::new();
    for d in defs {
        visit(d, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    static INNER: StructDef = StructDef { name: "Inner", def: "", size: 4, fields: &[], deps: &[] };
    static OUTER: StructDef = StructDef { name: "Outer", def: "", size: 8, fields: &[], deps: &[&INNER] };

    #[test]
    fn a_struct_comes_after_the_structs_of_its_fields_and_each_once() {
        let order = in_dependency_order(&[&OUTER, &INNER, &OUTER]);
        let names: Vec<&str> = order.iter().map(|d| d.name).collect();
        assert_eq!(names, ["Inner", "Outer"]);
    }
}
