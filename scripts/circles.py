#!/usr/bin/env python3
"""Fails on a circle between source files, read from their object files.

    scripts/circles.py NAME=OBJDIR[:SRCROOT] ...
    scripts/circles.py --self-test

A file uses another when its object file needs a symbol (a function it
calls, a variable it reads) that the other's object file defines (nm(1):
each undefined symbol to the file that defines it; weak definitions, such
as inline functions and templates a header gives every file, tie nobody).
Each NAME is one group of objects (the extension, the client library, the
command), checked apart. Prints each group's files and uses, and every
circle (a strongly connected set of two or more files) with the symbols
that tie it; exits 1 if there is one. The object files are found under
OBJDIR (*.o); SRCROOT, if given, is cut from the source names shown
(CMake's objects are named after their sources: a/b.cpp.o).
"""
import os
import subprocess
import sys
import tempfile
from collections import defaultdict


def objects(root):
    for folder, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".o"):
                yield os.path.join(folder, f)


def source_name(obj, root):
    rel = os.path.relpath(obj, root)
    rel = rel[:-2]  # .o
    for ext in (".cpp", ".c"):
        if rel.endswith(ext):
            return rel
    return rel + ".c"


def symbols(objs):
    """{object: (defined, undefined)} strong symbols, two nm calls in all."""
    table = {o: (set(), set()) for o in objs}

    def nm(flag):
        out = subprocess.run(["nm", flag, "-P", "-A", *objs], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            obj, _, rest = line.partition(": ")
            parts = rest.split()
            if obj in table and parts:
                yield obj, parts

    for obj, parts in nm("--defined-only"):
        if len(parts) >= 2 and parts[1] in "TDBRGSC":  # strong, global
            table[obj][0].add(parts[0])
    for obj, parts in nm("--undefined-only"):
        table[obj][1].add(parts[0])
    return table


def circles(graph):
    """Tarjan's strongly connected components of two or more nodes."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check(name, objdir, srcroot):
    objs = list(objects(objdir))
    files = {source_name(o, srcroot or objdir): syms for o, syms in symbols(objs).items()} \
        if objs else {}
    if not files:
        print(f"{name}: no object files under {objdir} (build first)")
        return None
    owner = {}
    for f, (defined, _) in files.items():
        for s in defined:
            owner[s] = f
    graph = defaultdict(set)
    why = defaultdict(set)
    for f, (_, undefined) in files.items():
        graph[f]
        for s in undefined:
            g = owner.get(s)
            if g is not None and g != f:
                graph[f].add(g)
                why[(f, g)].add(s)
    uses = sum(len(v) for v in graph.values())
    found = circles(graph)
    print(f"{name}: {len(files)} files, {uses} uses, {len(found)} circle(s)")
    for part in found:
        print(f"  circle: {', '.join(part)}")
        members = set(part)
        for f in part:
            for g in sorted(graph[f] & members):
                names = sorted(why[(f, g)])
                shown = ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")
                print(f"    {f} -> {g}: {shown}")
    return found


def self_test():
    """Three files, a and b calling each other, c calling a: one circle."""
    with tempfile.TemporaryDirectory() as tmp:
        sources = {"a.c": "int b(void); int a(void) { return b(); }\n",
                   "b.c": "int a(void); int b(void) { return a() + 1; }\n",
                   "c.c": "int a(void); int c(void) { return a(); }\n"}
        for name, text in sources.items():
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            subprocess.run(["cc", "-c", path, "-o", path[:-2] + ".o"], check=True)
        found = check("self-test", tmp, "")
    if found != [["a.c", "b.c"]]:
        print(f"self-test: expected the one circle a.c, b.c; found {found}")
        return 1
    print("self-test: ok")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    ok = True
    for spec in argv:
        name, _, rest = spec.partition("=")
        objdir, _, srcroot = rest.partition(":")
        found = check(name, objdir, srcroot)
        ok = found == [] and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
