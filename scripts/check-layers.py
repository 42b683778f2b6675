#!/usr/bin/env python3
"""Check that the files of runtime/src and macros/src import each other one way only (no cycle),
and only in the directions that the table below allows.

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
items reached through it are. `mod x;` declarations are no edges. External crates are ignored, and
so are trait impls (an `impl Trait for Type` in B that A relies on is no edge A -> B: only names
count).

Nodes: every module is its own node: each file (`lib.rs`, `task.rs`, `backend/cpu/steal/job.rs`,
`write/mod.rs`, ...) and each inline non-test module (`mod sealed { .. }`). So a cycle between two
files of one folder (write/expr.rs and write/infer.rs), or between a folder's mod.rs and one of
its children, is reported like one between two top-level modules.

Ignored: test modules (`#[cfg(test)] mod tests { .. }`, `#[cfg(..test..)] mod x;` and the files
below them), which may use `super::` freely.

Directions. A *unit* is a top-level module (with everything below it), except that under
runtime's `backend` each of `backend::{serial,cpu,cuda}` (its mod.rs) and each direct child of
one (`backend::cuda::sim`, `backend::cpu::steal`, ...) is a unit, and `backend/mod.rs` is the unit
`backend`; the crate root is `(lib.rs)`. A file may import the files of its own unit (one way
only: the cycle check) and those of the units that its unit's row allows. The rows below are the
rule, read by the script itself: `crate  importer patterns : allowed patterns`, tried in order,
the first row whose importer pattern matches the unit applies; `*` matches any text, `!pat` in
the allowed list forbids what a later pattern would allow, a capital name is a group (defined
after the rows). Every unit must match a row.

    runtime  (lib.rs)                   : *
    runtime  runtime                    : resident backend backend::* CORE BASE
    runtime  resident                   : backend::cuda::memory backend::cuda::resident CORE BASE
    runtime  backend::cuda::sim_backend : backend::cuda backend::cuda::* CORE BASE
    runtime  backend::cuda              : !backend::cuda::sim_backend backend::cuda::* CORE BASE
    runtime  backend::cuda::*           : !backend::cuda::sim_backend backend::cuda::* CORE BASE
    runtime  backend::cpu               : backend::cpu::* CORE BASE
    runtime  backend::cpu::*            : backend::cpu::* CORE BASE
    runtime  backend backend::serial    : CORE BASE
    runtime  CORE                       : CORE BASE
    runtime  BASE                       : BASE
    macros   (lib.rs)                   : *
    macros   STAGES                     : syntax BASE
    macros   syntax                     : BASE
    macros   BASE                       : BASE

    runtime  CORE   = task stats config temp key device_struct
    runtime  BASE   = error slice view alloc heap channel ticket_queue backoff bound priority
    macros   STAGES = check parse lower write expand host
    macros   BASE   = ir error

In words: nothing imports the crate root; `Runtime` knows every backend, no backend knows
`Runtime`, `resident` or another backend; a backend's mod.rs sits above its children (a child
never imports it; cuda's `sim_backend` sits above cuda's mod.rs); the core (`task`, `stats`,
`config`, `temp`, `key`, `device_struct`) knows no backend, the base (`error` and the data structures) nothing above it.
In the macros the stages never import each other, only `syntax`, `ir` and `error`.

Exit status 1 and a listing of every cycle (strongly connected component, with the lines that
make each edge) and of every import against the table (the file, the line, the path, and the row
it breaks), or of a unit no row matches; 0 otherwise. `--self-test` checks the checker on a
made-up crate with known edges, cycles and direction violations (CI runs it first). `--edges`
prints the whole graph, `--layers` the modules by layer (0: imports nothing of its crate).
"""

from __future__ import annotations

import fnmatch
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


def name(path: tuple[str, ...]) -> str:
    return "::".join(path) if path else "(lib.rs)"


def unit(crate: str, path: tuple[str, ...]) -> str:
    """The unit of the directions table that module `path` belongs to."""
    if crate == "runtime" and path[:1] == ("backend",):
        return name(path[:3])
    return name(path[:1])


Ref = tuple[str, int, str]  # file shown, line, path as written


def graph(crates: dict[str, Path] | None = None):
    """The module graph: edges (node pairs, with the references that make them), the nodes, and
    each node's crate and unit. Nodes are `crate::module::path` (every module its own node)."""
    edges: dict[tuple[str, str], list[Ref]] = defaultdict(list)
    nodes: dict[str, tuple[str, str]] = {}
    for crate, src in (crates or CRATES).items():
        mods = load(crate, src)
        for path, mod in mods.items():
            a = f"{crate}::{name(path)}"
            nodes[a] = (crate, unit(crate, path))
            for segs, line, file in mod.refs:
                target = absolute(mods, path, segs)
                if target is None:
                    continue
                owner = resolve(mods, target)
                if owner == target:  # the path names a module, not an item in it
                    continue
                b = f"{crate}::{name(owner)}"
                if a != b:
                    nodes.setdefault(b, (crate, unit(crate, owner)))
                    shown = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file
                    edges[(a, b)].append((str(shown), line, "::".join(segs)))
    return edges, nodes


ROW_RE = re.compile(r"^    (\w+)\s+(\S.*?)\s+:(?:\s+(.*))?$")  # ` : ` splits: `::` does not
GROUP_RE = re.compile(r"^    (\w+)\s+([A-Z][A-Z_]*)\s*=(.*)$")


class Rules:
    """The directions table (see the module docs): rows per crate, in order, and groups."""

    def __init__(self, text: str):
        self.rows: dict[str, list[tuple[list[str], list[str], str]]] = defaultdict(list)
        self.groups: dict[tuple[str, str], list[str]] = {}
        for line in text.splitlines():
            if m := GROUP_RE.match(line):
                self.groups[(m.group(1), m.group(2))] = m.group(3).split()
            elif m := ROW_RE.match(line):
                self.rows[m.group(1)].append((m.group(2).split(), (m.group(3) or "").split(), " ".join(line.split())))

    def expand(self, crate: str, pats: list[str]) -> list[str]:
        out = []
        for p in pats:
            neg, bare = (p[:1] == "!"), p.lstrip("!")
            out += [("!" if neg else "") + g for g in self.groups.get((crate, bare), [bare])]
        return out

    def row(self, crate: str, u: str) -> tuple[list[str], str] | None:
        """The allowed patterns of the first row for unit `u`, and the row as written."""
        for importers, allowed, text in self.rows.get(crate, []):
            if any(fnmatch.fnmatchcase(u, p) for p in self.expand(crate, importers)):
                return self.expand(crate, allowed), text
        return None

    def allows(self, crate: str, a: str, b: str) -> bool:
        found = self.row(crate, a)
        if found is None:
            return False
        for p in found[0]:
            if p[:1] == "!" and fnmatch.fnmatchcase(b, p[1:]):
                return False
            if p[:1] != "!" and fnmatch.fnmatchcase(b, p):
                return True
        return False


def directions(edges, nodes, rules: Rules) -> list[str]:
    """Every unit no row matches, and every reference that imports a unit its row does not allow."""
    out = []
    for crate, u in sorted(set(nodes.values())):
        if rules.row(crate, u) is None:
            out.append(f"{crate}::{u}: no row of the directions table matches this unit (add one)")
    for (a, b), where in sorted(edges.items()):
        (crate, ua), (_, ub) = nodes[a], nodes[b]
        found = rules.row(crate, ua)
        if ua == ub or found is None or rules.allows(crate, ua, ub):
            continue
        text = found[1]
        for file, line, path in where:
            out.append(f"{file}:{line}: {path}: {crate}::{ua} may not import {crate}::{ub} (row `{text}`)")
    return out


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
    "lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod e;\npub use a::Thing;\n",
    "a.rs": "use crate::c::{self, Leaf as L};\npub struct Thing;\nfn f() -> L { c::leaf() }\n"
    "#[cfg(test)]\nmod tests { use super::*; use crate::b::Other; }\n",
    # b may not import a (the table below): a direction violation, in an inline module.
    "b.rs": "pub struct Other;\nmod inner { fn g(_: &crate::Thing) {} }\n"
    "// crate::c::Leaf\nconst S: &str = \"crate::c::Leaf\";\n",
    "c.rs": "pub struct Leaf;\npub fn leaf() -> Leaf { Leaf }\nfn q() { quote! { crate::b::Other } }\n",
    # A file-level cycle inside one unit (`d`), which folding the unit into one node would hide.
    "d/mod.rs": "mod x;\nmod y;\n",
    "d/x.rs": "pub struct X;\nfn f(_: super::y::Y) {}\n",
    "d/y.rs": "use super::x::X;\npub struct Y;\nfn f(_: X) {}\n",
    # No row of the table matches `e`.
    "e.rs": "pub struct E;\n",
    "backend/mod.rs": "pub mod cpu;\n",
    "backend/cpu/mod.rs": "mod store;\npub(crate) trait Erased {}\nfn run() { store::go() }\n",
    "backend/cpu/store.rs": "use super::Erased;\npub fn go() {}\n",
}

SELF_TEST_RULES = """
    runtime  (lib.rs)      : *
    runtime  LOW           : c
    runtime  d             : !c LOW
    runtime  backend::cpu* : backend::cpu*
    runtime  backend       :
    runtime  LOW  = a b c
"""


def self_test() -> int:
    """The checker on a small made-up crate whose edges, cycles and violations are known."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        for file, text in SELF_TEST.items():
            (src / file).parent.mkdir(parents=True, exist_ok=True)
            (src / file).write_text(text)
        edges, nodes = graph({"runtime": src})
        got = sorted(f"{a.split('::', 1)[1]} -> {b.split('::', 1)[1]}" for a, b in edges)
        want = [
            "(lib.rs) -> a",
            "a -> c",
            "backend::cpu -> backend::cpu::store",
            "backend::cpu::store -> backend::cpu",
            "b::inner -> a",
            "d::x -> d::y",
            "d::y -> d::x",
        ]
        found = [sorted(n.split("::", 1)[1] for n in comp) for comp in cycles(edges)]
        want_cycles = [["backend::cpu", "backend::cpu::store"], ["d::x", "d::y"]]
        broken = [re.sub(r"^.*/src/", "", v) for v in directions(edges, nodes, Rules(SELF_TEST_RULES))]
        want_broken = [
            "runtime::e: no row of the directions table matches this unit (add one)",
            "b.rs:2: crate::Thing: runtime::b may not import runtime::a (row `runtime LOW : c`)",
        ]
    ok = got == sorted(want) and found == want_cycles and broken == want_broken
    ok = ok and len(Rules(__doc__ or "").rows) == len(CRATES)
    print(f"check-layers self-test: {'ok' if ok else 'FAILED'}")
    if not ok:
        print(f"  edges  {got}\n  wanted {sorted(want)}\n  cycles {found}\n  wanted {want_cycles}")
        print(f"  broken {broken}\n  wanted {want_broken}")
    return 0 if ok else 1


def main() -> int:
    flags = set(sys.argv[1:])
    if flags - {"--self-test", "--edges", "--layers"}:
        print(f"usage: {sys.argv[0]} [--self-test | --edges | --layers]", file=sys.stderr)
        return 2
    if "--self-test" in flags:
        return self_test()
    edges, nodes = graph()
    if "--edges" in flags:
        for (a, b), where in sorted(edges.items()):
            file, line, path = where[0]
            print(f"{a} -> {b}   ({len(where)}x, e.g. {file}:{line}: {path})")
    found = cycles(edges)
    if "--layers" in flags and not found:
        succ = defaultdict(set)
        for a, b in edges:
            succ[a].add(b)
        height: dict[str, int] = {}

        def h(v: str) -> int:
            if v not in height:
                height[v] = 1 + max((h(w) for w in succ[v]), default=-1)
            return height[v]

        for crate in CRATES:
            print(f"{crate} (layer 0 imports nothing of its crate; each module only imports lower layers):")
            mine = sorted((h(v), v) for v in nodes if v.startswith(crate + "::"))
            for level in sorted({lv for lv, _ in mine}):
                print(f"  {level}: " + ", ".join(v.split("::", 1)[1] for lv, v in mine if lv == level))
    for comp in found:
        print("cycle among: " + ", ".join(comp))
        members = set(comp)
        for (a, b), where in sorted(edges.items()):
            if a in members and b in members:
                print(f"  {a} -> {b}")
                for file, line, path in where[:5]:
                    print(f"      {file}:{line}: {path}")
                if len(where) > 5:
                    print(f"      ... and {len(where) - 5} more")
    broken = directions(edges, nodes, Rules(__doc__ or ""))
    for v in broken:
        print(f"direction: {v}")
    if found or broken:
        print(f"check-layers: {len(found)} cycle(s), {len(broken)} direction violation(s) among {len(nodes)} modules")
        return 1
    print(f"check-layers: no cycle and every direction allowed among {len(nodes)} modules ({len(edges)} edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
