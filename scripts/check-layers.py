#!/usr/bin/env python3
"""Check that the modules of runtime/src and macros/src import each other one way only (no cycle).

What it reads: every .rs file under runtime/src and macros/src (Python 3 standard library only; a
small tokenizer, not a Rust parser). Comments, string and char literals are blanked first.

Edges: module A -> module B when code in A names an item that B defines, through
  - a `use` declaration (`use crate::..`, `use super::..`, `use self::..`, `use child::..`,
    nested `{..}` trees included), or
  - a path in code starting with `crate::`, `super::`, `self::`, a child module's name, or a name
    that a `use` of the module bound.
Paths are resolved to the module that *defines* the item: through the module tree, then through
the `use`/`pub use` bindings of the module the path passes (so `crate::Error` counts as a use of
`error`, not of `lib.rs`). Naming a module itself (`use crate::backend::cuda;`) is no edge; the
items reached through it are. `mod x;` declarations are no edges. External crates are ignored.

Granularity (the nodes of the graph):
  - the crate root (`lib.rs`) and every top-level module (`runtime::channel`, `macros::write`,
    with everything below it folded in), except that
  - under runtime's `backend`, each of `backend::{serial,cpu,cuda}` and each of their direct
    children (`backend::cuda::sim`, `backend::cpu::steal`, ...) is its own node, and
    `backend/mod.rs` is the node `backend`.
  So a cycle between two files of one folder module (write/expr.rs and write/infer.rs) is not
  reported, a cycle between two top-level modules, or between `backend::cuda::device` and
  `backend::cuda::module`, or between `backend::cuda` (its mod.rs) and one of its children, is.
  `--fine` makes every module its own node (informational; not what CI checks).

Ignored: test modules (`#[cfg(test)] mod tests { .. }`, `#[cfg(..test..)] mod x;` and the files
below them), which may use `super::` freely.

Exit status 1 and a listing of every cycle (strongly connected component, with the lines that
make each edge) when there is one; 0 otherwise. `--self-test` checks the checker on a made-up crate
with known edges and cycles (CI runs it first). `--edges` prints the whole graph, `--layers` the
modules by layer (0: imports nothing of its crate).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = {"runtime": ROOT / "runtime" / "src", "macros": ROOT / "macros" / "src"}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def blank(src: str) -> str:
    """Replace comments, string and char literals by spaces, keeping newlines and offsets."""
    out = list(src)
    i, n = 0, len(src)

    def wipe(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif (m := re.match(r'b?r(#*)"', src[i:])) and (i == 0 or not re.match(r"\w", src[i - 1])):
            close = '"' + m.group(1)
            j = src.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            wipe(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        elif c == "'":
            if src.startswith("\\", i + 1):
                j = src.find("'", i + 2)
                j = n if j < 0 else j
                wipe(i, j + 1)
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":
                wipe(i, i + 3)
                i += 3
            else:  # a lifetime or a label
                i += 1
        else:
            i += 1
    return "".join(out)


def matching_brace(text: str, start: int) -> int:
    depth = 0
    for k in range(start, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text)


QUOTE_RE = re.compile(r"(?<![\w:])(?:quote|quote_spanned|parse_quote|parse_quote_spanned)\s*!\s*([({\[])")


def blank_quotes(text: str) -> str:
    """Blank the bodies of `quote!`-like invocations: they are tokens of generated code."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    out = list(text)
    for m in QUOTE_RE.finditer(text):
        open_, close = m.group(1), pairs[m.group(1)]
        depth = 0
        for k in range(m.start(1), len(text)):
            if text[k] == open_:
                depth += 1
            elif text[k] == close:
                depth -= 1
                if depth == 0:
                    break
            elif out[k] != "\n":
                out[k] = " "
    return "".join(out)


def use_tree(tree: str) -> list[tuple[list[str], str]]:
    """Expand `a::{b, c::d as e, self}` into ([segments], bound name) pairs."""
    tree = re.sub(r"\s*::\s*", "::", " ".join(tree.split()))
    tree = re.sub(r"\s*([{},])\s*", r"\1", tree)
    out: list[tuple[list[str], str]] = []

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(prefix: list[str], s: str) -> None:
        s = s.strip()
        if not s:
            return
        brace = s.find("{")
        if brace >= 0 and s.endswith("}"):
            head = [p for p in s[:brace].split("::") if p]
            for part in split_top(s[brace + 1 : -1]):
                walk(prefix + head, part)
            return
        alias = None
        m = re.match(r"(.*?)\s+as\s+(" + IDENT + r")$", s)
        if m:
            s, alias = m.group(1), m.group(2)
        segs = [p for p in s.split("::") if p]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        full = prefix + segs
        out.append((full, alias or (full[-1] if full else "")))

    walk([], tree)
    return out


class Module:
    def __init__(self, crate: str, path: tuple[str, ...], file: Path):
        self.crate, self.path, self.file = crate, path, file
        self.children: set[str] = set()
        self.uses: dict[str, tuple[str, ...]] = {}  # bound name -> absolute path (unresolved)
        self.refs: list[tuple[tuple[str, ...], int, Path]] = []  # absolute paths named, with lines


def module_path(src: Path, file: Path) -> tuple[str, ...]:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


MOD_RE = re.compile(
    r"((?:#\s*\[[^\]]*\]\s*)*)(?:pub\s*(?:\([^)]*\))?\s*)?\bmod\s+(" + IDENT + r")\s*([;{])"
)
USE_RE = re.compile(r"(?<![\w:])use\s+([^;]+);")
PATH_RE = re.compile(r"(?<![\w:$.])(" + IDENT + r"(?:\s*::\s*" + IDENT + r")+)")


def is_test_cfg(attrs: str) -> bool:
    """Whether the attributes compile the item in tests only (`cfg(test)`, `cfg(all(test, ..))`)."""
    conds = re.findall(r"cfg\s*\(([^\]]*)\)", attrs)
    return any(re.search(r"\btest\b", re.sub(r"\bnot\s*\(\s*test\s*\)", "", c)) for c in conds)


def load(crate: str, src: Path) -> dict[tuple[str, ...], Module]:
    modules: dict[tuple[str, ...], Module] = {}
    skipped: set[tuple[str, ...]] = set()
    files = sorted(src.rglob("*.rs"), key=lambda f: len(module_path(src, f)))
    for file in files:
        path = module_path(src, file)
        if any(path[: k] in skipped for k in range(1, len(path) + 1)):
            continue
        text = blank_quotes(blank(file.read_text()))
        # Inline modules: test ones are blanked, the others become modules of their own.
        regions: list[tuple[int, int, str]] = []
        for m in MOD_RE.finditer(text):
            attrs, name, end = m.group(1), m.group(2), m.group(3)
            if end == ";":
                if is_test_cfg(attrs):
                    skipped.add(path + (name,))
                continue
            close = matching_brace(text, m.end() - 1)
            if is_test_cfg(attrs):
                text = text[: m.start()] + re.sub(r"[^\n]", " ", text[m.start() : close + 1]) + text[close + 1 :]
            else:
                regions.append((m.end(), close, name))
        if path in skipped:
            continue
        mod = modules.setdefault(path, Module(crate, path, file))
        for m in MOD_RE.finditer(text):
            if m.group(3) == ";":
                mod.children.add(m.group(2))

        def where(pos: int) -> tuple[str, ...]:
            inner = [r for r in regions if r[0] <= pos <= r[1]]
            inner.sort(key=lambda r: r[0])
            return path + tuple(r[2] for r in inner)

        for r in sorted(regions):
            sub = where(r[0])
            modules.setdefault(sub, Module(crate, sub, file))
            modules[sub[:-1]].children.add(sub[-1])
        spans: list[tuple[int, int]] = []
        for m in USE_RE.finditer(text):
            spans.append((m.start(), m.end()))
            here = modules[where(m.start())]
            line = text.count("\n", 0, m.start()) + 1
            for segs, name in use_tree(m.group(1)):
                if segs:
                    here.uses[name] = tuple(segs)
                    here.refs.append((tuple(segs), line, file))
        for m in PATH_RE.finditer(text):
            if any(a <= m.start() < b for a, b in spans):
                continue
            segs = tuple(re.sub(r"\s+", "", m.group(1)).split("::"))
            here = modules[where(m.start())]
            here.refs.append((segs, text.count("\n", 0, m.start()) + 1, file))
    return modules


def absolute(mods: dict, at: tuple[str, ...], segs: tuple[str, ...]) -> tuple[str, ...] | None:
    """The crate-relative path a path written in module `at` names, or None (external)."""
    if not segs:
        return None
    head = segs[0]
    if head == "crate":
        return segs[1:]
    if head in ("self", "super"):
        cur = list(at)
        i = 0
        while i < len(segs) and segs[i] in ("self", "super"):
            if segs[i] == "super":
                if not cur:
                    return None
                cur.pop()
            i += 1
        return tuple(cur) + segs[i:]
    mod = mods.get(at)
    if mod is None:
        return None
    if head in mod.children:
        return at + segs
    if head in mod.uses and mod.uses[head][:1] != (head,):
        base = absolute(mods, at, mod.uses[head])
        return None if base is None else base + segs[1:]
    return None


def resolve(mods: dict, segs: tuple[str, ...], depth: int = 0) -> tuple[str, ...]:
    """The module that defines the item `segs` (crate-relative) names, through use bindings."""
    cur: tuple[str, ...] = ()
    for i, s in enumerate(segs):
        if cur + (s,) in mods:
            cur = cur + (s,)
            continue
        mod = mods.get(cur)
        if mod is not None and s in mod.uses and depth < 32:
            target = absolute(mods, cur, mod.uses[s])
            if target is not None and target != cur + (s,):
                return resolve(mods, target + segs[i + 1 :], depth + 1)
        return cur
    return cur


def node(crate: str, path: tuple[str, ...], fine: bool) -> str:
    if fine:
        keep = path
    elif crate == "runtime" and path[:1] == ("backend",):
        keep = path[:3]
    else:
        keep = path[:1]
    return f"{crate}::" + ("::".join(keep) if keep else "(lib.rs)")


def graph(fine: bool, crates: dict[str, Path] | None = None) -> tuple[dict[tuple[str, str], list[str]], set[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    nodes: set[str] = set()
    for crate, src in (crates or CRATES).items():
        mods = load(crate, src)
        for path, mod in mods.items():
            nodes.add(node(crate, path, fine))
            for segs, line, file in mod.refs:
                target = absolute(mods, path, segs)
                if target is None:
                    continue
                owner = resolve(mods, target)
                if owner == target:  # the path names a module, not an item in it
                    continue
                a, b = node(crate, path, fine), node(crate, owner, fine)
                if a != b:
                    shown = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file
                    edges[(a, b)].append(f"{shown}:{line}: {'::'.join(segs)}")
    return edges, nodes


def cycles(edges) -> list[list[str]]:
    succ: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(set(succ) | {b for _, b in edges}):
        if v not in index:
            visit(v)
    return out


SELF_TEST = {
    # A cycle through a re-export and a `super::` path in an inline module; a test module's
    # `use super::*` and paths in comments, strings and `quote!` bodies are no edges.
    "lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub use a::Thing;\n",
    "a.rs": "use crate::c::{self, Leaf as L};\npub struct Thing;\nfn f() -> L { c::leaf() }\n"
    "#[cfg(test)]\nmod tests { use super::*; use crate::b::Other; }\n",
    "b.rs": "pub struct Other;\nmod inner { fn g(_: &crate::Thing) {} }\n"
    "// crate::c::Leaf\nconst S: &str = \"crate::c::Leaf\";\n",
    "c.rs": "pub struct Leaf;\npub fn leaf() -> Leaf { Leaf }\nfn q() { quote! { crate::b::Other } }\n",
    "backend/mod.rs": "pub mod cpu;\n",
    "backend/cpu/mod.rs": "mod store;\npub(crate) trait Erased {}\nfn run() { store::go() }\n",
    "backend/cpu/store.rs": "use super::Erased;\npub fn go() {}\n",
}


def self_test() -> int:
    """The checker on a small made-up crate whose edges and cycles are known."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        for name, text in SELF_TEST.items():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_text(text)
        edges, nodes = graph(False, {"runtime": src})
        got = sorted(f"{a.split('::', 1)[1]} -> {b.split('::', 1)[1]}" for a, b in edges)
        want = [
            "(lib.rs) -> a",
            "a -> c",
            "backend::cpu -> backend::cpu::store",
            "backend::cpu::store -> backend::cpu",
            "b -> a",
        ]
        found = [sorted(n.split("::", 1)[1] for n in comp) for comp in cycles(edges)]
        want_cycles = [["backend::cpu", "backend::cpu::store"]]
    ok = got == sorted(want) and found == want_cycles
    print(f"check-layers self-test: {'ok' if ok else 'FAILED'}")
    if not ok:
        print(f"  edges  {got}\n  wanted {sorted(want)}\n  cycles {found}\n  wanted {want_cycles}")
    return 0 if ok else 1


def main() -> int:
    if "--self-test" in sys.argv:
        return self_test()
    fine = "--fine" in sys.argv
    edges, nodes = graph(fine)
    if "--edges" in sys.argv:
        for (a, b), where in sorted(edges.items()):
            print(f"{a} -> {b}   ({len(where)}x, e.g. {where[0]})")
    found = cycles(edges)
    if "--layers" in sys.argv and not found:
        succ = defaultdict(set)
        for a, b in edges:
            succ[a].add(b)
        height: dict[str, int] = {}

        def h(v: str) -> int:
            if v not in height:
                height[v] = 1 + max((h(w) for w in succ[v]), default=-1)
            return height[v]

        every = nodes
        for crate in CRATES:
            print(f"{crate} (layer 0 imports nothing of its crate; each module only imports lower layers):")
            mine = sorted((h(v), v) for v in every if v.startswith(crate + "::"))
            for level in sorted({lv for lv, _ in mine}):
                print(f"  {level}: " + ", ".join(v.split("::", 1)[1] for lv, v in mine if lv == level))
    for comp in found:
        print("cycle among: " + ", ".join(comp))
        members = set(comp)
        for (a, b), where in sorted(edges.items()):
            if a in members and b in members:
                print(f"  {a} -> {b}")
                for w in where[:5]:
                    print(f"      {w}")
                if len(where) > 5:
                    print(f"      ... and {len(where) - 5} more")
    if found:
        print(f"check-layers: {len(found)} cycle(s) among {len(nodes)} modules")
        return 1
    print(f"check-layers: no cycle among {len(nodes)} modules ({len(edges)} edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
