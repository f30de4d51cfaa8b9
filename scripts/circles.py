#!/usr/bin/env python3
"""Fails on a circle between source files, and on an include that runs back up.

    scripts/circles.py [--layered NAME]... NAME=OBJDIR[:SRCDIR[:INCDIR...]] ...
    scripts/circles.py --self-test

Each NAME is one group of files (the extension, the client library, its
test double, the command, the command's core library), checked apart.

Files.  The group's sources, named as their object files under OBJDIR
(*.o; CMake names its objects after their sources: a/b.cpp.o), read from
SRCDIR (default OBJDIR; an object whose source is not there is left out),
and the headers of the project they include: an `#include "x"` is looked
up in the including file's folder, then in each INCDIR, as the compiler
does; a name found in none of them (a system or PostgreSQL header, another
group's) is no file of the group.  A header and
a source of the same name in one folder (floors.h beside floors.c) are one
file: the header declares what the source defines.

Arrows.  A file uses another when its object file needs a symbol (a
function it calls, a variable it reads) that the other's object file
defines (nm(1); weak definitions, such as inline functions and templates a
header gives every file, tie nobody).  A file includes another when one of
its two halves includes a half of the other.

Floors.  A file that uses and includes nothing of its group stands on
floor 1, any other one floor above the highest of what it uses or
includes: possible exactly when no loop runs through uses and includes.
A circle is such a loop made of uses alone (files that call each other) or
of includes alone (headers that include each other).  Any other loop holds
an include that brings no use along: A includes B but needs no symbol that
B defines (it reads a type or a macro of B's header, or nothing at all).
That include, from A to a file B that reaches A again through uses and
includes, is an arrow back up: A cannot stand above B (an include between
two files of one circle belongs to the circle).  It is mended by
dropping the include, or by moving what A reads into a header apart from
B's source (as the extension's family headers are: lease.h, no lease.c).
A group with no circle and no arrow back up stands on floors, every arrow
pointing down.

Prints each group's count of files, floors, uses and includes (and, for a
group named by --layered, the files of each floor), then every circle with
what ties it, and every arrow back up with the way back.
Exits 1 on a circle in any group, or on an arrow back up in a group named
by --layered.
"""
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict, deque

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def objects(root):
    for folder, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".o"):
                yield os.path.join(folder, f)


def source_name(obj, root):
    rel = os.path.relpath(obj, root)[:-2]  # .o
    return rel if rel.endswith((".cpp", ".c")) else rel + ".c"


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


def demangle(names):
    """C++ symbols as c++filt(1) writes them; C names as they are."""
    if not any(n.startswith("_Z") for n in names):
        return names
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def includes(sources, srcdir, incdirs):
    """{name: set of included names} over the sources and the headers they reach."""
    roots = [os.path.realpath(d) for d in [srcdir, *incdirs]]

    def name_of(path):
        for root in roots:
            if path.startswith(root + os.sep):
                return os.path.relpath(path, root)
        return None

    found, todo = {}, [os.path.realpath(os.path.join(srcdir, s)) for s in sources]
    while todo:
        path = todo.pop()
        name = name_of(path)
        if name is None or name in found or not os.path.isfile(path):
            continue
        found[name] = set()
        with open(path, errors="replace") as f:
            text = f.read()
        for written in INCLUDE.findall(text):
            for folder in [os.path.dirname(path), *roots]:
                target = os.path.realpath(os.path.join(folder, written))
                if os.path.isfile(target) and name_of(target) is not None:
                    found[name].add(name_of(target))
                    todo.append(target)
                    break
    return found


def strong_sets(graph):
    """Tarjan's strongly connected components: {node: component number}."""
    index, low, stack, on, part_of = {}, {}, [], set(), {}
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
            while True:
                w = stack.pop()
                on.discard(w)
                part_of[w] = v
                if w == v:
                    break

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return part_of


def circles(graph):
    """The strongly connected sets of two or more nodes, each sorted."""
    parts = defaultdict(list)
    for v, part in strong_sets(graph).items():
        parts[part].append(v)
    return sorted(sorted(p) for p in parts.values() if len(p) > 1)


def floors(graph):
    """{node: floor}, 1 for a node that points at nothing; loops share one."""
    part_of = strong_sets(graph)
    floor = {}

    def of(part):
        if part not in floor:
            floor[part] = 0  # a loop: its own members do not raise it
            below = [of(part_of[w]) for v in graph if part_of[v] == part
                     for w in graph[v] if part_of[w] != part]
            floor[part] = 1 + max(below, default=0)
        return floor[part]

    return {v: of(part_of[v]) for v in graph}


def way(graph, start, goal):
    """The shortest way from start to goal, as a list of nodes."""
    back, todo = {start: None}, deque([start])
    while todo:
        v = todo.popleft()
        if v == goal:
            path = []
            while v is not None:
                path.append(v)
                v = back[v]
            return path[::-1]
        for w in sorted(graph[v]):
            if w not in back:
                back[w] = v
                todo.append(w)
    return []


class Group:
    """A group's files (a source and its header are one), uses and includes."""

    def __init__(self, files, included):
        stem = lambda name: os.path.splitext(name)[0]  # noqa: E731
        self.name = {}
        for f in sorted(files) + sorted(included):
            self.name.setdefault(stem(f), f)  # the source names the file
        self.uses = {v: set() for v in self.name}
        self.inc = {v: set() for v in self.name}
        self.why = defaultdict(set)
        owner = {s: stem(f) for f, (defined, _) in files.items() for s in defined}
        for f, (_, undefined) in files.items():
            for s in undefined:
                if owner.get(s, stem(f)) != stem(f):
                    self.uses[stem(f)].add(owner[s])
                    self.why[(stem(f), owner[s])].add(s)
        for f, targets in included.items():
            for t in targets:
                if stem(t) != stem(f):
                    self.inc[stem(f)].add(stem(t))
                    self.why[(stem(f), stem(t))].add('#include "' + t + '"')
        self.both = {v: self.uses[v] | self.inc[v] for v in self.name}

    def tie(self, a, b, most=4):
        names = sorted(self.why[(a, b)])
        shown = ", ".join(demangle(names[:most])) + (" ..." if len(names) > most else "")
        return f"{self.name[a]} -> {self.name[b]}: {shown}"

    def circles(self):
        """[(graph, files)]: the circles of uses, then those of includes."""
        return [(g, part) for g in (self.uses, self.inc) for part in circles(g)]

    def back_up(self):
        """[(a, b)]: includes without a use that close a loop, but in a circle."""
        loop, calls, ring = (strong_sets(g) for g in (self.both, self.uses, self.inc))
        return [(a, b) for a in sorted(self.inc) for b in sorted(self.inc[a] - self.uses[a])
                if loop[a] == loop[b] and calls[a] != calls[b] and ring[a] != ring[b]]

    def floors(self):
        return {self.name[v]: n for v, n in floors(self.both).items()}


def check(name, objdir, srcdir, incdirs, layered):
    """Prints the group; returns (circles, arrows back up, floors), or None."""
    srcdir = srcdir or objdir
    # an object whose source is gone (a renamed file's, left behind) is none
    objs = [o for o in objects(objdir)
            if os.path.isfile(os.path.join(srcdir, source_name(o, objdir)))]
    if not objs:
        print(f"{name}: no object files of sources in {srcdir} under {objdir} (build first)")
        return None
    files = {source_name(o, objdir): syms for o, syms in symbols(objs).items()}
    group = Group(files, includes(files, srcdir, incdirs))
    found, back, floor = group.circles(), group.back_up(), group.floors()
    uses = sum(len(v) for v in group.uses.values())
    incs = sum(len(v) for v in group.inc.values())
    print(f"{name}: {len(group.name)} files on {max(floor.values())} floors, {uses} uses, "
          f"{incs} includes; {len(found)} circle(s), {len(back)} arrow(s) back up"
          + (" (not enforced here)" if back and not layered else ""))
    if layered:
        for n in sorted(set(floor.values()), reverse=True):
            print(f"  floor {n:2}: {', '.join(sorted(f for f in floor if floor[f] == n))}")
    for graph, part in found:
        kind = "circle" if graph is group.uses else "circle of includes"
        print(f"  {kind}: {', '.join(group.name[v] for v in part)}")
        for a in part:
            for b in sorted(graph[a] & set(part)):
                print(f"    {group.tie(a, b)}")
    for a, b in back:
        print(f"  arrow back up: {group.tie(a, b)}")
        steps = way(group.both, b, a)
        for x, y in zip(steps, steps[1:]):
            print(f"    and back: {group.tie(x, y)}")
    return ([[group.name[v] for v in part] for _, part in found],
            [(group.name[a], group.name[b]) for a, b in back], floor)


def passes(result, layered):
    """No circle, and in a layered group no arrow back up (None: no objects)."""
    return result is not None and not result[0] and not (layered and result[1])


SELF_TEST = {
    # a.c and b.c call each other: a circle of uses; c.c only calls a.c.
    "uses": ({"a.c": "int b(void); int a(void) { return b(); }\n",
              "b.c": "int a(void); int b(void) { return a() + 1; }\n",
              "c.c": "int a(void); int c(void) { return a(); }\n"},
             [["a.c", "b.c"]], [], None),
    # x.h and y.h include each other (guarded): a circle of includes.
    "includes": ({"x.h": '#pragma once\n#include "y.h"\n', "y.h": '#pragma once\n#include "x.h"\n',
                  "s.c": '#include "x.h"\nint s(void) { return 0; }\n'},
                 [["x.h", "y.h"]], [], None),
    # e.c includes r.h and uses nothing of it; r.c calls e(), declared in
    # base.h: that include runs back up.
    "back up": ({"base.h": "int e(void);\n", "r.h": "int r(void);\n",
                 "e.c": '#include "base.h"\n#include "r.h"\nint e(void) { return 1; }\n',
                 "r.c": '#include "base.h"\n#include "r.h"\nint r(void) { return e(); }\n'},
                [], [("e.c", "r.c")], None),
    # A family: f.h over f_one.c and f_two.c, which calls f_one.c; k.c uses
    # f_two.c.  One way down, on four floors.
    "floors": ({"f.h": "int one(void);\nint two(void);\n",
                "f_one.c": '#include "f.h"\nint one(void) { return 1; }\n',
                "f_two.c": '#include "f.h"\nint two(void) { return one(); }\n',
                "k.c": '#include "f.h"\nint k(void) { return two(); }\n'},
               [], [], {"f.h": 1, "f_one.c": 2, "f_two.c": 3, "k.c": 4}),
}


def self_test():
    """Each case above, built and checked as a group of its own."""
    failed = 0
    for case, (sources, want_circles, want_back, want_floors) in SELF_TEST.items():
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in sources.items():
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            for path in (os.path.join(tmp, n) for n in sources if n.endswith(".c")):
                subprocess.run(["cc", "-c", path, "-o", path[:-2] + ".o"], check=True)
            result = check(f"self-test {case}", tmp, "", [], True)
        found, back, floor = result
        # an arrow back up fails a layered group only
        verdicts = (passes(result, True), passes(result, False))
        if (found, back) != (want_circles, want_back) or want_floors not in (None, floor) \
                or verdicts != (not found and not back, not found):
            print(f"self-test {case}: expected circles {want_circles}, arrows back up "
                  f"{want_back}, floors {want_floors}; found {found}, {back}, {floor}")
            failed += 1
    print("self-test: ok" if not failed else f"self-test: {failed} case(s) failed")
    return 1 if failed else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    layered = set()
    while len(argv) >= 2 and argv[0] == "--layered":
        layered.add(argv[1])
        argv = argv[2:]
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    ok = True
    for spec in argv:
        name, _, rest = spec.partition("=")
        objdir, *dirs = rest.split(":")
        result = check(name, objdir, dirs[0] if dirs else "", dirs[1:], name in layered)
        ok = passes(result, name in layered) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
