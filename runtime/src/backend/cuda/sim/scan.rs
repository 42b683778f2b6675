//! Finding the kernels of a program and writing their entry points: a small lexer over g++'s
//! preprocessed output that finds every *defined* `extern "C" __global__` function, and the C++
//! appended to the program (`gc_sim_entry_NAME`, `gc_sim_params_NAME`, the list of names).
//!
//! Owns: the text of the program as the simulation sees it. Must not touch: the compiler
//! (`build.rs` runs it) or the object it produces.

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
}

/// The tokens of preprocessed C++ that matter for finding kernels: identifiers, string literals
/// (their contents), punctuation; numbers become identifiers, line markers are skipped.
fn lex(text: &str) -> Vec<Tok> {
    let mut toks = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_alphanumeric() || c == b'_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                toks.push(Tok::Ident(line[s..i].to_string()));
            } else if c == b'"' || c == b'\'' {
                let s = i + 1;
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let e = i.min(b.len());
                if c == b'"' {
                    toks.push(Tok::Str(line.get(s..e).unwrap_or("").to_string()));
                }
                i += 1;
            } else if c.is_ascii_whitespace() {
                i += 1;
            } else {
                toks.push(Tok::Punct(c as char));
                i += 1;
            }
        }
    }
    toks
}

/// The index just past the parenthesized group starting at `toks[open]` (a `(`).
fn skip_group(toks: &[Tok], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < toks.len() {
        match toks[i] {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    toks.len()
}

/// The names of the `extern "C" __global__` kernels *defined* in preprocessed source, in order.
pub(super) fn find_kernels(preprocessed: &str) -> Vec<String> {
    let toks = lex(preprocessed);
    let mut names: Vec<String> = Vec::new();
    for i in 2..toks.len() {
        if toks[i] != Tok::Ident("__global__".into())
            || toks[i - 2] != Tok::Ident("extern".into())
            || toks[i - 1] != Tok::Str("C".into())
        {
            continue;
        }
        // `void`, attributes, then NAME ( params ) {
        let mut j = i + 1;
        let mut last: Option<&str> = None;
        while j < toks.len() {
            match &toks[j] {
                Tok::Ident(id) => {
                    last = Some(id);
                    j += 1;
                }
                Tok::Punct('(') => {
                    if matches!(last, Some("__launch_bounds__" | "__attribute__" | "__align__" | "alignas")) {
                        last = None;
                        j = skip_group(&toks, j);
                        continue;
                    }
                    break;
                }
                Tok::Punct('[') | Tok::Punct(']') | Tok::Punct('*') | Tok::Punct(':') => j += 1,
                _ => {
                    last = None;
                    break;
                }
            }
        }
        let Some(name) = last else { continue };
        if j >= toks.len() || name == "void" {
            continue;
        }
        let after = skip_group(&toks, j);
        if toks.get(after) == Some(&Tok::Punct('{')) && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The C++ appended to the program: the entry points and the list of kernels (see gc_sim.h).
pub(super) fn wrapper(source_file: &str, kernels: &[String]) -> String {
    let mut w = format!("#include \"{source_file}\"\n\n// Entry points of the host simulation (gc_sim.h).\n");
    for k in kernels {
        w.push_str(&format!(
            "extern \"C\" void gc_sim_entry_{k}(const void* p) {{ gc_sim_invoke({k}, p); }}\n\
             extern \"C\" unsigned long long gc_sim_params_{k}(void) {{ return gc_sim_param_bytes({k}); }}\n"
        ));
    }
    w.push_str("extern \"C\" const char* const gc_sim_kernel_names[] = {");
    for k in kernels {
        w.push_str(&format!("\"{k}\", "));
    }
    w.push_str("nullptr};\n");
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_defined_extern_c_kernels_only() {
        let pre = r#"
# 1 "x.cu"
extern "C" __global__ void a(P p) { }
extern "C" __global__ void b(P p);
extern "C" __global__ void b(P p) { int x = f(1); }
extern "C" __global__ void __launch_bounds__(256, 2) c(Q q) {}
extern "C" __global__ __launch_bounds__(128) void d() {}
__global__ void not_extern_c(P p) {}
extern "C" __device__ void not_global(P p) {}
static const char* s = "extern \"C\" __global__ void in_string() {}";
extern "C" __global__ void e(gc_root_params<fib_task> p) { gc_push_root(p); }
"#;
        assert_eq!(find_kernels(pre), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn wrapper_declares_entries_and_names() {
        let w = wrapper("p.cu", &["k1".into(), "k2".into()]);
        assert!(w.starts_with("#include \"p.cu\""));
        assert!(w.contains("extern \"C\" void gc_sim_entry_k1(const void* p) { gc_sim_invoke(k1, p); }"));
        assert!(w.contains("gc_sim_params_k2(void) { return gc_sim_param_bytes(k2); }"));
        assert!(w.contains("gc_sim_kernel_names[] = {\"k1\", \"k2\", nullptr};"));
    }
}
