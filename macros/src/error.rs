//! The catalogue of diagnostics, and [`Errors`], the collector that lets a user see every problem
//! at once.
//!
//! Every rejection the compiler reports is a [`Msg`] here: a one-line statement of what is wrong
//! and a `hint:` line saying what to write instead. `docs/dsl.md` lists them; `tests/ui/` pins
//! their text and spans. Messages that name something from the source are built by the `fn`s at
//! the end of this file.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// A diagnostic: what is wrong, and what to write instead.
#[derive(Debug, Clone, Copy)]
pub struct Msg {
    /// The first line.
    pub text: &'static str,
    /// The `hint:` line.
    pub hint: &'static str,
}

impl Msg {
    /// This message on the span of `tokens` (first to last token).
    pub fn on<T: ToTokens>(self, tokens: T) -> syn::Error {
        syn::Error::new_spanned(tokens, self.render())
    }

    /// This message at `span`.
    pub fn on_span(self, span: Span) -> syn::Error {
        syn::Error::new(span, self.render())
    }

    fn render(self) -> String {
        format!("{}\nhint: {}", self.text, self.hint)
    }
}

/// A message with text built from the source, on the span of `tokens`.
pub fn custom<T: ToTokens>(tokens: T, text: &str, hint: &str) -> syn::Error {
    syn::Error::new_spanned(tokens, format!("{text}\nhint: {hint}"))
}

/// A message with text built from the source, at `span`.
pub fn custom_at(span: Span, text: &str, hint: &str) -> syn::Error {
    syn::Error::new(span, format!("{text}\nhint: {hint}"))
}

/// Collects many `syn::Error`s; [`Errors::finish`] combines them into one.
#[derive(Debug, Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
}

impl Errors {
    /// No errors yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `e`.
    pub fn push(&mut self, e: syn::Error) {
        self.errors.push(e);
    }

    /// No error recorded.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// The number of errors.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// `Ok(value)` when nothing was recorded, else every error combined.
    pub fn finish<T>(self, value: T) -> Result<T, syn::Error> {
        let mut it = self.errors.into_iter();
        match it.next() {
            None => Ok(value),
            Some(mut first) => {
                for e in it {
                    first.combine(e);
                }
                Err(first)
            }
        }
    }

    /// Every error as `compile_error!` invocations.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.errors.iter().map(syn::Error::to_compile_error).collect()
    }
}

// ---- the attribute and the item ---------------------------------------------------------------

/// `#[gpu_cilk(..)]` with arguments.
pub const ATTR_ARGS: Msg = Msg {
    text: "`#[gpu_cilk]` takes no arguments other than `warp`, `block` and `host = path`",
    hint:
        "write `#[gpu_cilk]`, `#[gpu_cilk(warp)]` for a task a whole warp runs or `#[gpu_cilk(block)]` for one a thread block runs; add `host = path` for its host form",
};
/// `host = path` on a task that spawns.
pub const HOST_SPAWN: Msg = Msg {
    text: "a host form (`host = ..`) replaces a leaf task on the host backends; this task spawns",
    hint: "give the host form to the leaf tasks it spawns, or remove `host = ..`",
};
/// `spawn!` in a `#[gpu_cilk(warp)]` task.
pub const WARP_SPAWN: Msg = Msg {
    text: "`spawn!` cannot be used in a `#[gpu_cilk(warp)]` task: a warp task is a leaf",
    hint: "spawn from a plain `#[gpu_cilk]` task, and spawn the warp task from there",
};
/// `sync!` in a `#[gpu_cilk(warp)]` task.
pub const WARP_SYNC: Msg = Msg {
    text: "`sync!` cannot be used in a `#[gpu_cilk(warp)]` task: a warp task is a leaf",
    hint: "remove it; a warp task has no children to wait for",
};
/// `alloc!` in a `#[gpu_cilk(warp)]` task.
pub const WARP_ALLOC: Msg = Msg {
    text: "`alloc!` cannot be used in a `#[gpu_cilk(warp)]` task",
    hint: "allocate in the task that spawns it and pass the `Temp`",
};
/// `for i in lanes(..)` outside a `#[gpu_cilk(warp)]` task.
pub const LANES_OUTSIDE_WARP: Msg = Msg {
    text: "`lanes(..)` loops can only be used in a `#[gpu_cilk(warp)]` task",
    hint: "mark the task `#[gpu_cilk(warp)]`, or write `for i in lo..hi`",
};
/// A `lanes` loop inside another.
pub const LANES_NESTED: Msg = Msg {
    text: "a `lanes(..)` loop cannot stand inside another `lanes(..)` loop",
    hint: "write the inner loop as `for j in lo..hi` (each lane runs it whole)",
};
/// `lanes(..)` anywhere but the iterator of a `for`.
pub const LANES_POSITION: Msg =
    Msg { text: "`lanes(..)` can only be the iterator of a `for` loop", hint: "write `for i in lanes(lo, hi) { .. }`" };
/// `return` inside a `lanes` loop.
pub const LANES_RETURN: Msg = Msg {
    text: "`return` cannot stand inside a `lanes(..)` loop: the warp's lanes must leave it together",
    hint: "set a value in the loop and return after it",
};
/// `break` of a `lanes` loop.
pub const LANES_BREAK: Msg = Msg {
    text: "a `lanes(..)` loop cannot be left with `break`: its iterations are independent",
    hint: "skip the rest of an iteration with `continue`, or test a condition in the body",
};
/// `spawn!` in a `#[gpu_cilk(block)]` task.
pub const BLOCK_SPAWN: Msg = Msg {
    text: "`spawn!` cannot be used in a `#[gpu_cilk(block)]` task: a block task is a leaf",
    hint: "spawn from a plain `#[gpu_cilk]` task, and spawn the block task from there",
};
/// `sync!` in a `#[gpu_cilk(block)]` task.
pub const BLOCK_SYNC: Msg = Msg {
    text: "`sync!` cannot be used in a `#[gpu_cilk(block)]` task: a block task is a leaf",
    hint: "remove it; a block task has no children to wait for (`block_sync!()` is the block's barrier)",
};
/// `alloc!` in a `#[gpu_cilk(block)]` task.
pub const BLOCK_ALLOC: Msg = Msg {
    text: "`alloc!` cannot be used in a `#[gpu_cilk(block)]` task",
    hint: "allocate in the spawning task and pass the `Temp`; block-shared scratch is `shared!([v; N])`",
};
/// `for i in threads(..)` outside a `#[gpu_cilk(block)]` task.
pub const THREADS_OUTSIDE_BLOCK: Msg = Msg {
    text: "`threads(..)` loops can only be used in a `#[gpu_cilk(block)]` task",
    hint: "mark the task `#[gpu_cilk(block)]`, or write `for i in lo..hi`",
};
/// A `threads` loop inside another.
pub const THREADS_NESTED: Msg = Msg {
    text: "a `threads(..)` loop cannot stand inside another `threads(..)` loop",
    hint: "write the inner loop `for j in lo..hi`: each thread runs it whole",
};
/// `return` inside a `threads` loop.
pub const THREADS_RETURN: Msg = Msg {
    text: "`return` cannot stand inside a `threads(..)` loop: the block's threads must leave it together",
    hint: "record the result in a slice or a `shared!` array and return after the loop",
};
/// `break` of a `threads` loop.
pub const THREADS_BREAK: Msg = Msg {
    text: "a `threads(..)` loop cannot be left with `break`: its iterations are independent",
    hint: "skip the rest of an iteration with `continue`, or test a condition in the body",
};
/// A local of the task assigned inside a `threads` loop (each thread would hold its own value).
pub const THREADS_ESCAPE: Msg = Msg {
    text: "a local declared outside a `threads(..)` loop cannot be assigned inside it: each thread of the block would hold its own value",
    hint: "write per-iteration results to a slice or a `shared!` array element, and read them after the loop",
};
/// `threads(..)` anywhere but the iterator of a `for`.
pub const THREADS_POSITION: Msg = Msg {
    text: "`threads(..)` can only be the iterator of a `for` loop",
    hint: "write `for i in threads(lo, hi) { .. }`",
};
/// `block_sync!()` outside a `#[gpu_cilk(block)]` task.
pub const BLOCK_SYNC_OUTSIDE: Msg = Msg {
    text: "`block_sync!()` can only be used in a `#[gpu_cilk(block)]` task",
    hint: "mark the task `#[gpu_cilk(block)]`, or remove it (it is a no-op on one thread)",
};
/// `block_sync!()` inside a `threads` loop (its body depends on the thread).
pub const BLOCK_SYNC_IN_THREADS: Msg = Msg {
    text: "`block_sync!()` cannot stand inside a `threads(..)` loop: its iterations, and every branch in them, depend on the thread, so some threads would never reach the barrier",
    hint: "end the loop and write `block_sync!();` after it (every `threads(..)` loop already ends with a barrier)",
};
/// `block_sync!()` anywhere but as a statement.
pub const BLOCK_SYNC_POSITION: Msg = Msg {
    text: "`block_sync!()` is a statement and takes no arguments",
    hint: "write `block_sync!();` on its own line",
};
/// `shared!` outside a `#[gpu_cilk(block)]` task.
pub const SHARED_OUTSIDE_BLOCK: Msg = Msg {
    text: "`shared!` arrays can only be used in a `#[gpu_cilk(block)]` task",
    hint: "mark the task `#[gpu_cilk(block)]`, or write a local array `[v; N]`",
};
/// `shared!` anywhere but as the initializer of a top-level `let`.
pub const SHARED_POSITION: Msg = Msg {
    text: "`shared!` can only initialize a `let` at the top level of a block task's body",
    hint: "write `let mut s = shared!([0u32; 256]);` before the first `threads(..)` loop",
};
/// `shared!` whose argument is not `[v; N]` with a typed element.
pub const SHARED_SHAPE: Msg = Msg {
    text: "`shared!` takes an array repeat `[v; N]` with a literal value whose type is known",
    hint: "write `shared!([0u32; N])`, or annotate the `let`: `let s: [f32; 256] = shared!([0.0; 256]);`",
};
/// `#[gpu_cilk::device(..)]` with arguments.
pub const DEVICE_ATTR_ARGS: Msg =
    Msg { text: "`#[gpu_cilk::device]` takes no arguments", hint: "write `#[gpu_cilk::device]` on its own" };
/// The attribute on something other than a `fn`.
pub const NOT_A_FN: Msg = Msg {
    text: "`#[gpu_cilk]` can only be applied to a free function",
    hint: "write `#[gpu_cilk] fn name(params) -> T { .. }` at module level",
};
/// `#[gpu_cilk::device]` on something other than a `fn`.
pub const DEVICE_NOT_A_FN: Msg = Msg {
    text: "`#[gpu_cilk::device]` can only be applied to a free function",
    hint: "write `#[gpu_cilk::device] fn name(params) -> T { .. }` at module level",
};

// ---- the signature ------------------------------------------------------------------------------

/// `async fn`.
pub const ASYNC_FN: Msg = Msg {
    text: "a `#[gpu_cilk]` function cannot be `async`",
    hint: "remove `async`: `spawn!`/`sync!` already express the parallelism",
};
/// `unsafe fn`.
pub const UNSAFE_FN: Msg = Msg {
    text: "a `#[gpu_cilk]` function cannot be `unsafe`",
    hint: "remove `unsafe`; the subset has no raw pointers, so nothing in it needs `unsafe`",
};
/// `const fn`.
pub const CONST_FN: Msg = Msg { text: "a `#[gpu_cilk]` function cannot be `const`", hint: "remove `const`" };
/// `extern "C" fn`.
pub const EXTERN_FN: Msg = Msg {
    text: "a `#[gpu_cilk]` function cannot have an explicit ABI",
    hint: "remove the `extern` ABI; the generated code decides the calling convention",
};
/// A `where` clause.
pub const GENERICS: Msg = Msg {
    text: "a `where` clause is not supported on a `#[gpu_cilk]` function",
    hint: "write the bound in the parameter list: `fn f<T: Key>(a: &[T])`",
};
/// `fn f<const N: usize>`.
pub const CONST_GENERIC: Msg = Msg {
    text: "const generic parameters are not supported in a `#[gpu_cilk]` function",
    hint: "pass the value as a parameter (`n: usize`), or write one function per value",
};
/// A type parameter bounded by something other than `Key` (or not at all).
pub const TYPE_PARAM_BOUND: Msg = Msg {
    text: "a type parameter of a `#[gpu_cilk]` function must be bounded by `Key` alone",
    hint:
        "write `T: Key` (`gpu_cilk::Key`, in the prelude: the integer and float scalars, copied, stored and compared \
           with `<`, `==`, ..); the device knows no other trait",
};
/// `fn f<T: Key = u32>`.
pub const TYPE_PARAM_DEFAULT: Msg = Msg {
    text: "a type parameter of a `#[gpu_cilk]` function cannot have a default",
    hint: "remove `= ..`: every call fixes the type through its arguments",
};
/// `self` receiver.
pub const SELF_RECEIVER: Msg = Msg {
    text: "a `#[gpu_cilk]` function cannot be a method (`self` parameter)",
    hint: "make it a free function and pass the fields it needs as parameters",
};
/// `...` variadic.
pub const VARIADIC: Msg =
    Msg { text: "a `#[gpu_cilk]` function cannot be variadic", hint: "pass a fixed-size array `[T; N]` instead" };
/// Non-identifier parameter pattern.
pub const PARAM_PATTERN: Msg = Msg {
    text: "parameters must be plain identifiers",
    hint: "write `name: Type` and destructure inside the body with separate `let`s",
};

// ---- types --------------------------------------------------------------------------------------

/// `&T`, `&[T]`, `*const T`.
pub const TYPE_REFERENCE: Msg = Msg {
    text: "this reference or pointer type is not supported in the gpu-cilk subset",
    hint:
        "slices of scalars are: `&[T]` or `&mut [T]` (no lifetime); otherwise pass a fixed-size array `[T; N]` by value",
};
/// A slice inside an array or a tuple type.
pub const TYPE_SLICE_NESTED: Msg = Msg {
    text: "a slice cannot be an element of an array or a tuple type",
    hint: "pass each slice as a parameter of its own",
};
/// A slice as a function's result.
pub const RETURN_SLICE: Msg = Msg {
    text: "a `#[gpu_cilk]` task or helper cannot return a slice",
    hint: "take a `&mut [T]` parameter and write the result into it",
};
/// A sub-slice or split of something that is not a slice parameter or slice local.
pub const SLICE_BASE: Msg = Msg {
    text: "sub-slices can only be taken of a slice parameter or of a local bound to a slice of one",
    hint: "a slice of a local array would dangle once this task's children run: pass the array by value, or slice a `&[T]`/`&mut [T]` parameter",
};
/// A view `Mat<T>` / `MatMut<T>` of an element a view cannot hold.
pub const VIEW_ELEM: Msg = Msg {
    text: "a matrix view `Mat<T>` / `MatMut<T>` holds integer or float scalars or device structs",
    hint: "view a matrix of `u32`, `f32`, .. (or of a `#[derive(DeviceStruct)]` struct), written without a lifetime: `MatMut<f32>`",
};
/// A view narrowed from something that is not a view it was given.
pub const VIEW_BASE: Msg = Msg {
    text: "a matrix view can only be narrowed (`block`, `split_rows`, `quadrants`, ..) from a view parameter or a local bound to a view of one",
    hint: "narrow a `Mat<T>`/`MatMut<T>` parameter, or a block of it bound with `let`",
};
/// A view as a function's result.
pub const RETURN_VIEW: Msg = Msg {
    text: "a `#[gpu_cilk]` task or helper cannot return a matrix view",
    hint: "take a `MatMut<T>` parameter and write the result into it",
};
/// A view inside an array or tuple type.
pub const TYPE_VIEW_NESTED: Msg = Msg {
    text: "a matrix view cannot be an element of an array or a tuple type",
    hint: "pass each view as a parameter of its own; bind the blocks of a split without a type: `let (top, bottom) = a.split_rows_mut(h);`",
};
/// A view local that lives across a `sync!()`.
pub const VIEW_FRAME: Msg = Msg {
    text: "a matrix view local cannot live across a `sync!()`: only view parameters are kept in the task frame",
    hint: "narrow the parameter again after the `sync!()` (`let (d00, d01, d10, d11) = c.quadrants_mut(h, h);`)",
};
/// A slice-typed local that lives across a `sync!()`.
pub const SLICE_FRAME: Msg = Msg {
    text: "a slice local cannot live across a `sync!()`: only slice parameters are kept in the task frame",
    hint: "slice the parameter again after the `sync!()` (`let l = &mut a[..mid];`)",
};
/// `Max<u64>` by value, `&mut Max<u64>`, `&Max<u8>`, `&'a Max<u64>`.
pub const BOUND_FORM: Msg = Msg {
    text: "a shared bound is passed as `&Max<T>`, `&Min<T>` or `&Sum<T>` with `T` one of `u32`, `i32`, `u64`, `i64`",
    hint: "take `best: &Max<u64>` (shared by every task of the run; it changes only through `fetch_max`, `fetch_min` or `fetch_add`)",
};
/// A local holding a shared bound that lives across a `sync!()`.
pub const BOUND_FRAME: Msg = Msg {
    text: "a shared bound cannot be stored in a local that lives across a `sync!()`: only bound parameters are kept in the task frame",
    hint: "use the parameter itself after the `sync!()`",
};
/// A shared bound returned.
pub const RETURN_BOUND: Msg = Msg {
    text: "a `#[gpu_cilk]` task or helper cannot return a shared bound",
    hint: "read it with `.load()` and return the value",
};
/// A bound parameter of a task whose body is a state machine.
pub const BOUND_MACHINE: Msg = Msg {
    text: "shared bound parameters are not supported yet in a task with a `sync!()` inside a branch, loop or block",
    hint: "keep the `sync!()`s at the top level of the body",
};
/// `best.store(v)`, `best.swap(v)`, ...: a write that is not monotone.
pub fn bound_write(method: &syn::Ident) -> syn::Error {
    custom_at(
        method.span(),
        &format!(
            "`{method}` would move a shared bound both ways: a `Max` only grows (`fetch_max`), a `Min` only shrinks (`fetch_min`), a `Sum` only adds (`fetch_add`)"
        ),
        "write `best.fetch_max(v)`, and read it with `best.load()`",
    )
}
/// `impl Trait` / `dyn Trait`.
pub const TYPE_IMPL_TRAIT: Msg = Msg {
    text: "`impl Trait` and `dyn Trait` types are not supported in the gpu-cilk subset",
    hint: "use a concrete scalar type (`u32`, `u64`, `f32`, `bool`, ..) or a fixed-size array",
};
/// A tuple type.
pub const TYPE_TUPLE: Msg = Msg {
    text: "this tuple type is not supported in the gpu-cilk subset",
    hint: "tuples of 2 to 4 scalars or arrays are results and locals, not parameters: use separate parameters, or a fixed-size array `[T; N]`",
};
/// `HashMap`, `BTreeMap`, `Rc`, `Arc`.
pub const TYPE_HEAP: Msg = Msg {
    text: "heap-allocated types are not supported in the gpu-cilk subset",
    hint: "pass the data as slices `&[T]` / `&mut [T]` of scalars, or as fixed-size arrays `[T; N]`",
};
/// `String`, `str`.
pub const TYPE_STRING: Msg = Msg {
    text: "strings are not supported in the gpu-cilk subset",
    hint: "pass the bytes as a slice `&[u8]` (`text.as_bytes()` at the call)",
};
/// `Vec<T>`, `VecDeque<T>`, `Box<[T]>` (a parameter, a result or a local): the data belongs in a
/// slice that the caller owns. `elem` is `T` when it is a scalar.
pub fn heap_sequence(ty: &syn::Type, name: &str, elem: Option<&syn::Type>) -> syn::Error {
    let elem = elem.map_or_else(|| "T".to_string(), |t| t.to_token_stream().to_string());
    custom(
        ty,
        &format!("`{name}` is not supported in the gpu-cilk subset: a task cannot own heap memory"),
        &format!(
            "take a slice parameter: `&[{elem}]` to read the data, `&mut [{elem}]` to write results into it; \
             the caller keeps the data and passes `&v` / `&mut v` (on cuda it is copied to the device and back)"
        ),
    )
}
/// Any other type.
pub const TYPE_OTHER: Msg = Msg {
    text: "this type is not supported in the gpu-cilk subset",
    hint: "use an integer or float scalar (`u32`, `i64`, `f32`, ..), `bool`, or a fixed-size array `[T; N]` of them",
};

// ---- sync! --------------------------------------------------------------------------------------

/// `sync!()` used as a value.
pub const SYNC_IN_EXPR: Msg = Msg {
    text: "`sync!()` must be a statement of its own, not part of an expression",
    hint: "write `sync!();` on its own line",
};
/// `alloc!` in a function whose `sync!()` stands inside control flow.
pub const ALLOC_IN_MACHINE: Msg = Msg {
    text: "`alloc!` cannot be used in a function with a `sync!()` inside a branch, loop or block",
    hint: "allocate the temporary in the caller and pass it as a `Temp<T>` parameter, or keep every `sync!()` of this function at the top level of its body",
};
/// `break`/`continue` inside a value, in a loop that contains a `sync!()`.
pub const JUMP_IN_VALUE: Msg = Msg {
    text: "`break`/`continue` of a loop that contains a `sync!()` must be a statement of its own",
    hint: "write `if cond { break; }` rather than using `break`/`continue` inside an expression whose value is used",
};
/// `sync!(x)`.
pub const SYNC_ARGS: Msg =
    Msg { text: "`sync!()` takes no arguments", hint: "write `sync!();`: it waits for every child spawned so far" };

// ---- spawn! -------------------------------------------------------------------------------------

/// `spawn!()`.
pub const SPAWN_EMPTY: Msg =
    Msg { text: "`spawn!` needs a call to a `#[gpu_cilk]` function", hint: "write `spawn!(f(a, b))`" };
/// `spawn!(f(a), g(b))`.
pub const SPAWN_MANY: Msg = Msg {
    text: "`spawn!` takes exactly one call",
    hint: "write one `spawn!` per child: `let x = spawn!(f(a)); let y = spawn!(g(b));`",
};
/// `spawn!(f(a), prio = 1)`.
pub const SPAWN_OPTION: Msg = Msg {
    text: "the only option of `spawn!` is `priority = <key>`",
    hint: "write `spawn!(f(a), priority = key)` with an integer, float or `bool` key (larger runs first)",
};
/// `spawn!(x.f())`.
pub const SPAWN_METHOD: Msg = Msg {
    text: "`spawn!` cannot spawn a method call",
    hint: "spawn a free `#[gpu_cilk]` function: `spawn!(f(x, ..))`",
};
/// `spawn!(|| ..)`, `spawn!(a + b)`, ...
pub const SPAWN_NOT_CALL: Msg = Msg {
    text: "`spawn!` takes a call to a named `#[gpu_cilk]` function",
    hint: "write `spawn!(f(a, b))`; to compute a value without a task, write the expression without `spawn!`",
};
/// `spawn!(f::<T>(..))`.
pub const SPAWN_GENERIC: Msg = Msg {
    text: "the spawned function can only be given type arguments, on its name",
    hint: "write `spawn!(f(..))`, or `spawn!(f::<T>(..))` for a generic task",
};
/// `spawn!(f(..))` of the generic task `f` itself.
pub const SPAWN_OWN_GENERIC: Msg = Msg {
    text: "a generic task spawns itself with its type arguments",
    hint: "write `spawn!(f::<T>(..))` (every spawn of a generic task names them)",
};
/// `spawn!` nested inside an expression.
pub const SPAWN_IN_EXPR: Msg = Msg {
    text: "`spawn!` must be a statement of its own",
    hint: "write `let x = spawn!(f(..));`, `x = spawn!(f(..));`, `a[i] = spawn!(f(..));` or `spawn!(f(..));`, and use `x` after `sync!()`",
};
/// `s.f = spawn!(..)`, `*p = spawn!(..)`, `a[i][j] = spawn!(..)`.
pub const SPAWN_DEST: Msg = Msg {
    text: "a spawned result can only be stored in a local or in an element of a local array",
    hint: "write `x = spawn!(..)` or `a[i] = spawn!(..)` with `x`/`a` declared at the top level of the function body",
};
/// `let (a, b) = spawn!(..)`.
pub const SPAWN_LET_PATTERN: Msg = Msg {
    text: "a spawned result must be bound to a single name",
    hint: "write `let x = spawn!(f(..));`, or `spawn!(f(..));` to discard the result",
};
/// `spawn!` in a `#[gpu_cilk::device]` helper.
pub const SPAWN_IN_DEVICE: Msg = Msg {
    text: "`spawn!` cannot be used in a `#[gpu_cilk::device]` helper",
    hint: "make the helper a `#[gpu_cilk]` task, or call the function directly without `spawn!`",
};
/// `sync!` in a `#[gpu_cilk::device]` helper.
pub const SYNC_IN_DEVICE: Msg = Msg {
    text: "`sync!` cannot be used in a `#[gpu_cilk::device]` helper",
    hint: "a device helper spawns nothing, so it has nothing to wait for: remove `sync!()`",
};

// ---- statements and expressions -----------------------------------------------------------------

/// A closure.
pub const CLOSURE: Msg = Msg {
    text: "closures are not supported in the gpu-cilk subset",
    hint: "write a `#[gpu_cilk::device]` helper function and call it",
};
/// `match`.
pub const MATCH: Msg =
    Msg { text: "`match` is not supported in the gpu-cilk subset", hint: "use `if`/`else if`/`else`" };
/// `?`.
pub const TRY: Msg = Msg {
    text: "the `?` operator is not supported in the gpu-cilk subset",
    hint: "there are no `Result`s or `Option`s on the device: test the condition with `if` and `return` early",
};
/// `let (a, b) = ..`
pub const LET_PATTERN: Msg = Msg {
    text: "only `let name`, `let mut name` and tuple bindings `let (a, mut b) = ..` are supported",
    hint: "bind each value with its own `let`",
};
/// `let .. else`.
pub const LET_ELSE: Msg =
    Msg { text: "`let ... else` is not supported in the gpu-cilk subset", hint: "use `if`/`else` and `return`" };
/// `if let` / `while let`.
pub const IF_LET: Msg = Msg {
    text: "`if let` and `while let` are not supported in the gpu-cilk subset",
    hint: "there are no enums on the device: test a condition with plain `if` / `while`",
};
/// `loop { break v; }`.
pub const BREAK_VALUE: Msg = Msg {
    text: "`break` with a value is not supported in the gpu-cilk subset",
    hint: "assign the value to a `let mut` local before the loop, then `break;`",
};
/// `'outer: loop`, `break 'outer`.
pub const LABEL: Msg = Msg {
    text: "labeled loops, blocks and breaks are not supported in the gpu-cilk subset",
    hint: "use a `bool` flag and test it after the inner loop",
};
/// `&x`, `*x`, `&raw`.
pub const REFERENCE: Msg = Msg {
    text: "references and dereferences are not supported in the gpu-cilk subset",
    hint: "use values (scalars and fixed-size arrays are copied); of references only sub-slices `&a[lo..hi]` / `&mut a[lo..hi]` of a slice are supported",
};
/// `S { a, b }`.
pub const STRUCT_LIT: Msg = Msg {
    text: "only a literal of a device struct naming every field is supported (`Point { x: a, y: b }`)",
    hint: "write every field out (no `..base`), with the struct's plain name (`#[derive(gpu_cilk::DeviceStruct)]`)",
};
/// `(a, b)`.
pub const TUPLE: Msg = Msg {
    text: "tuples of more than 4 elements are not supported in the gpu-cilk subset",
    hint: "use separate locals, or a fixed-size array `[T; N]` when the elements share a type",
};
/// `"text"`, `'c'`, `b"bytes"`.
pub const STRING_LIT: Msg = Msg {
    text: "string, byte-string and char literals are not supported in the gpu-cilk subset",
    hint: "use integer, float or `bool` literals",
};
/// A range outside `for`.
pub const RANGE: Msg =
    Msg { text: "ranges are only supported as the iterator of a `for` loop", hint: "write `for i in a..b { .. }`" };
/// `for x in something_else`.
pub const FOR_ITER: Msg = Msg {
    text: "`for` loops must iterate over a range `a..b` or `a..=b`",
    hint: "write `for i in 0..n { .. a[i] .. }`",
};
/// `for (a, b) in ..`.
pub const FOR_PATTERN: Msg =
    Msg { text: "the `for` loop variable must be a plain identifier", hint: "write `for i in a..b`" };
/// `unsafe { }`.
pub const UNSAFE_BLOCK: Msg = Msg {
    text: "`unsafe` blocks are not supported in the gpu-cilk subset",
    hint: "the subset needs no `unsafe`: remove it",
};
/// `async`, `.await`, `yield`, `try {}`, `const {}`.
pub const ASYNC_EXPR: Msg = Msg {
    text: "`async`, `.await`, `yield`, `try` and `const` blocks are not supported in the gpu-cilk subset",
    hint: "use `spawn!`/`sync!` for parallelism and plain blocks for grouping",
};
/// An item (fn, struct, use, ..) inside the body.
pub const ITEM_IN_BODY: Msg = Msg {
    text: "items (functions, types, `use`, consts) cannot be declared inside a `#[gpu_cilk]` function",
    hint: "declare it at module level (helpers as `#[gpu_cilk::device] fn`)",
};
/// Calling something that is not a named function.
pub const CALL_NOT_PATH: Msg = Msg {
    text: "only calls to named functions are supported in the gpu-cilk subset",
    hint: "call a `#[gpu_cilk]` task or a `#[gpu_cilk::device]` helper by name: `f(a, b)`",
};
/// Turbofish on a method or function.
pub const TURBOFISH: Msg = Msg {
    text: "generic arguments (turbofish) are not supported in the gpu-cilk subset",
    hint: "call the function without `::<..>`; use an `as` cast to fix a literal's type",
};
/// An unsupported expression of another kind.
pub const EXPR_OTHER: Msg = Msg {
    text: "this expression is not supported in the gpu-cilk subset",
    hint: "see docs/dsl.md for the supported subset",
};
/// A `QSelf` path `<T as Trait>::x`.
pub const QSELF_PATH: Msg = Msg {
    text: "qualified paths `<T as Trait>::..` are not supported in the gpu-cilk subset",
    hint: "call a function by its plain path",
};

// ---- frames and spawned values (found by `lower`) -----------------------------------------------

/// Reading a spawn destination before the sync.
pub fn read_before_sync(use_span: Span, name: &syn::Ident) -> syn::Error {
    custom_at(
        use_span,
        &format!("`{name}` holds the result of a `spawn!` and cannot be used before the next `sync!()`"),
        &format!("the child may still be running: add `sync!();` before this use of `{name}`"),
    )
}

/// Spawn into a local that is declared inside a block.
pub fn spawn_into_nested(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("`{name}` is declared inside a block, so it goes out of scope before the `sync!()` that would make the spawned result readable"),
        &format!("declare `{name}` at the top level of the function body, before this block"),
    )
}

/// Spawn into something that is not a local of the function.
pub fn spawn_into_unknown(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("cannot find local `{name}` to store the spawned result in"),
        &format!("declare it at the top level of the function body first: `let mut {name} = ..;`"),
    )
}

/// A frame field of a function with nested syncs declared where another of its name is visible.
pub fn machine_shadowed(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("`{name}` is declared again where another `{name}` that lives in the task frame is visible (or with another type)"),
        &format!("a function with a `sync!()` inside a branch, loop or block keeps its locals in one frame: rename this `{name}`"),
    )
}

/// The variable of a `for` loop that contains a `sync!()` has no known type.
pub fn for_type_unknown(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!(
            "the type of `{name}` is not known, and it lives in the task frame because the loop contains a `sync!()`"
        ),
        "give the range a type: a suffixed literal (`0u32..n`), a cast (`0..n as usize`) or a typed local",
    )
}

/// A frame-resident local whose type the macro cannot know.
pub fn frame_type_unknown(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!(
            "`{name}` lives across a `sync!()`, so it is stored in the task frame, and its type must be written out"
        ),
        &format!("annotate it: `let {name}: u64 = ..;` (or use a suffixed literal like `0u64`)"),
    )
}

/// A frame-resident local declared without an initializer.
pub fn frame_uninit(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("`{name}` lives across a `sync!()` and must be initialized where it is declared"),
        &format!("write `let {name}: T = <initial value>;`"),
    )
}

/// A frame-resident name shadowed (or shadowing) at the top level.
pub fn frame_shadowed(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("`{name}` is declared twice at the top level of the function body, and one of them lives across a `sync!()` (in the task frame)"),
        &format!("rename one of them: frame fields are named after their locals (e.g. `{name}2`)"),
    )
}

/// A slice name declared again.
pub fn slice_shadowed(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("`{name}` names a slice (a slice parameter, or a local bound to a slice of one) and cannot be declared again"),
        "rename the new binding, so that the name keeps meaning a slice the task was given",
    )
}

/// `#[derive(DeviceStruct)]` without `#[repr(C)]`.
pub const STRUCT_REPR: Msg = Msg {
    text: "a device struct must be `#[repr(C)]`, so that Rust and CUDA lay it out alike",
    hint: "add `#[repr(C)]` to the struct",
};
/// `#[derive(DeviceStruct)]` on an enum, a union, a tuple struct or a generic struct.
pub const STRUCT_SHAPE: Msg = Msg {
    text: "`DeviceStruct` can only be derived for a struct with named fields and no generic parameters",
    hint: "write `struct Point { x: f32, y: f32 }`",
};
/// A field a device struct cannot hold.
pub const STRUCT_FIELD: Msg = Msg {
    text: "a field of a device struct must be a scalar, a fixed-size array or another device struct",
    hint: "use `u8`..`u64`, `i8`..`i64`, `usize`, `isize`, `f32`, `f64`, `bool`, `[T; N]` or a struct that derives `DeviceStruct`",
};
/// A device struct or field name that CUDA reserves.
pub const STRUCT_NAME: Msg = Msg {
    text: "this name cannot be used in a device struct: CUDA C++ reserves it (a keyword, or the `gc_` prefix)",
    hint: "rename it",
};

/// A type parameter that no parameter's type mentions.
pub fn type_param_unused(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("the type parameter `{name}` must appear in the type of a parameter"),
        &format!("take a value or a slice of it (`x: {name}`, `a: &[{name}]`), so that every call fixes it"),
    )
}

/// A macro other than `spawn!`/`sync!`.
pub fn other_macro(mac: &syn::Macro) -> syn::Error {
    let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
    custom(
        mac,
        &format!("macros are not supported in the gpu-cilk subset (found `{name}!`); only `spawn!` and `sync!` are"),
        "write the code out, or move it to host code around `Runtime::run`",
    )
}

/// A method outside the allowed list.
pub fn method_not_allowed(method: &syn::Ident) -> syn::Error {
    custom(
        method,
        &format!("the method `{method}` is not supported in the gpu-cilk subset"),
        "supported methods: min, max, clamp, abs, abs_diff, pow, signum, wrapping_*, saturating_*, count_ones, count_zeros, leading_zeros, trailing_zeros, rotate_left/right, is_power_of_two, rem_euclid, div_euclid, sqrt, powi, powf, exp, ln, log2, sin, cos, tan, floor, ceil, round, trunc, mul_add, len; otherwise write a `#[gpu_cilk::device]` helper",
    )
}

// ---- Task-scoped temporaries (`alloc!`).

/// `alloc!` anywhere but `let t = alloc!(T, n);` at the top level of a task body.
pub const ALLOC_POSITION: Msg = Msg {
    text: "`alloc!` must initialize a `let` directly in the body of a `#[gpu_cilk]` function",
    hint: "write `let t = alloc!(f32, n);` as a statement of the function body (not in a loop, branch, block or expression)",
};

/// `alloc!` with the wrong number of arguments.
pub const ALLOC_ARGS: Msg = Msg {
    text: "`alloc!` takes an element type and a length",
    hint: "write `alloc!(f32, n)` (`n` a `usize` expression), or `alloc!(f32, n, uninit)` to skip zeroing it on cuda",
};

/// `alloc!(T, n)` with a `T` that is not an integer or float scalar or a device struct.
pub const ALLOC_ELEM: Msg = Msg {
    text: "the element type of a temporary must be an integer or float scalar or a device struct",
    hint: "use one of u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, or a struct that derives `DeviceStruct`",
};

/// `t[i].x = v` (or `t[i].a[j] += v`) on a temporary: an element is read and written whole.
pub const TEMP_PART_WRITE: Msg = Msg {
    text: "a part of a temporary's element cannot be assigned: elements are read and written whole",
    hint: "read the element, change it and write it back: `let mut e = t[i]; e.x = v; t[i] = e;`",
};

/// `let mut t = alloc!(..)`.
pub const ALLOC_MUT: Msg = Msg {
    text: "a temporary cannot be bound with `let mut`",
    hint: "write `let t = alloc!(..);` (its elements are still writable: `t[i] = v`)",
};

/// `alloc!` in a `#[gpu_cilk::device]` helper.
pub const ALLOC_IN_DEVICE: Msg = Msg {
    text: "`alloc!` cannot be used in a `#[gpu_cilk::device]` helper",
    hint: "allocate in the calling task and pass the `Temp` as an argument",
};

/// `-> Temp<T>`.
pub const RETURN_TEMP: Msg = Msg {
    text: "a temporary cannot be returned: it is freed when its task ends",
    hint: "return a scalar; pass the `Temp` to children that write into it instead",
};

/// A name bound twice when one of the bindings is a temporary.
pub fn temp_shadowed(name: &syn::Ident) -> syn::Error {
    custom(
        name,
        &format!("`{name}` names a temporary (`alloc!` or a `Temp` parameter) and cannot be declared again"),
        "give the other binding a different name",
    )
}

/// `return` that may leave children running while the task's temporaries are freed.
pub fn temp_return_outstanding(span: Span, names: &[String]) -> syn::Error {
    custom_at(
        span,
        &format!(
            "this return may leave children running while the temporar{} {} {} freed",
            if names.len() == 1 { "y" } else { "ies" },
            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
            if names.len() == 1 { "is" } else { "are" },
        ),
        "a task that allocates frees its temporaries when it returns, so every return after a `spawn!` in the same segment must come after a `sync!()`; move the return after a `sync!();`",
    )
}
