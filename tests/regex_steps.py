"""Count the work a backtracking regex engine does, so tests can prove a pattern linear.

Python's ``re`` gives no step count and this machine has no hardware
counters, and wall-clock asserts are not allowed in the suite. So a pattern is
parsed with ``re``'s own parser and run on a small backtracking machine that
explores the same search tree as ``re``'s engine, in the same order (leftmost
start first, then alternatives and repeats by priority, possessive repeats and
atomic groups committed, lookarounds as sub-searches). Every instruction
executed is a step. ``re`` prunes some branches that this machine explores
(literal-prefix scans, a look at the next character before backing off), so
its work is at most of the order counted here: a pattern whose count grows
linearly with the input is linear in ``re`` too.

Each run also checks its matches against ``re.finditer``'s, so the machine
cannot quietly drift from the engine it models.
"""

from __future__ import annotations

import importlib
import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# re's own parser and opcode names (private modules; their shape is stable within 3.11+).
C: Any = importlib.import_module("re._constants")
sre_parse: Any = importlib.import_module("re._parser")

MAXREPEAT = C.MAXREPEAT


class Unsupported(Exception):
    """The pattern uses a construct this machine does not model (a test should fail on it)."""


class StepLimit(Exception):
    """The run went past its step budget: far from linear."""


@dataclass
class Op:
    kind: str
    pred: Callable[[str], bool] | None = None
    x: int = 0
    y: int = 0
    test: Callable[[str, int], bool] | None = None
    prog: list[Op] | None = None
    behind: bool = False
    negate: bool = False
    width: int = 0


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_CATEGORIES: dict[Any, Callable[[str], bool]] = {
    C.CATEGORY_DIGIT: lambda ch: unicodedata.decimal(ch, None) is not None,
    C.CATEGORY_NOT_DIGIT: lambda ch: unicodedata.decimal(ch, None) is None,
    C.CATEGORY_SPACE: str.isspace,
    C.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    C.CATEGORY_WORD: _is_word,
    C.CATEGORY_NOT_WORD: lambda ch: not _is_word(ch),
}


def _equals(char: str) -> Callable[[str], bool]:
    return lambda ch: ch == char


def _between(low: int, high: int) -> Callable[[str], bool]:
    return lambda ch: low <= ord(ch) <= high


def _folded(pred: Callable[[str], bool], ignore_case: bool) -> Callable[[str], bool]:
    if not ignore_case:
        return pred
    return lambda ch: pred(ch) or pred(ch.lower()) or pred(ch.upper())


def _charset(items: list[tuple[Any, Any]], ignore_case: bool) -> Callable[[str], bool]:
    negate = False
    tests: list[Callable[[str], bool]] = []
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            tests.append(_equals(chr(av)))
        elif op is C.RANGE:
            tests.append(_between(av[0], av[1]))
        elif op is C.CATEGORY:
            tests.append(_CATEGORIES[av])
        else:
            raise Unsupported(f"charset item {op}")

    def member(ch: str) -> bool:
        return any(t(ch) for t in tests)

    folded = _folded(member, ignore_case)
    return (lambda ch: not folded(ch)) if negate else folded


def _at(code: Any, flags: int) -> Callable[[str, int], bool]:
    multiline = bool(flags & re.MULTILINE)

    def boundary(text: str, i: int) -> bool:
        before = i > 0 and _is_word(text[i - 1])
        after = i < len(text) and _is_word(text[i])
        return before != after

    if code is C.AT_BEGINNING:
        return (lambda t, i: i == 0 or t[i - 1] == "\n") if multiline else (lambda t, i: i == 0)
    if code is C.AT_END:
        if multiline:
            return lambda t, i: i == len(t) or t[i] == "\n"
        return lambda t, i: i == len(t) or (i == len(t) - 1 and t[i] == "\n")
    if code is C.AT_BEGINNING_STRING:
        return lambda t, i: i == 0
    if code is C.AT_END_STRING:
        return lambda t, i: i == len(t)
    if code is C.AT_BOUNDARY:
        return boundary
    if code is C.AT_NON_BOUNDARY:
        return lambda t, i: not boundary(t, i)
    raise Unsupported(f"anchor {code}")


def _can_be_empty(items: Any) -> bool:
    for op, av in items:
        if op in (C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY):
            return False
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            if av[0] > 0 and not _can_be_empty(av[2]):
                return False
        elif op is C.SUBPATTERN:
            if not _can_be_empty(av[3]):
                return False
        elif op is C.ATOMIC_GROUP:
            if not _can_be_empty(av):
                return False
        elif op is C.BRANCH and not any(_can_be_empty(alt) for alt in av[1]):
            return False
    return True


class _Compiler:
    def __init__(self) -> None:
        self.prog: list[Op] = []

    def emit(self, op: Op) -> int:
        self.prog.append(op)
        return len(self.prog) - 1

    def seq(self, items: Any, flags: int) -> None:
        for op, av in items:
            self.item(op, av, flags)

    def item(self, op: Any, av: Any, flags: int) -> None:
        ic = bool(flags & re.IGNORECASE)
        if op is C.LITERAL:
            self.emit(Op("char", pred=_folded(_equals(chr(av)), ic)))
        elif op is C.NOT_LITERAL:
            same = _folded(_equals(chr(av)), ic)
            self.emit(Op("char", pred=lambda ch: not same(ch)))
        elif op is C.IN:
            self.emit(Op("char", pred=_charset(av, ic)))
        elif op is C.ANY:
            dotall = bool(flags & re.DOTALL)
            self.emit(Op("char", pred=(lambda ch: True) if dotall else (lambda ch: ch != "\n")))
        elif op is C.AT:
            self.emit(Op("assert", test=_at(av, flags)))
        elif op is C.SUBPATTERN:
            _group, add, remove, body = av
            self.seq(body, (flags | add) & ~remove)
        elif op is C.BRANCH:
            self.branch(av[1], flags)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            self.repeat(av, flags, lazy=op is C.MIN_REPEAT)
        elif op is C.POSSESSIVE_REPEAT:
            self.emit(Op("atomic", prog=_sub(lambda c: c.repeat(av, flags, lazy=False))))
        elif op is C.ATOMIC_GROUP:
            self.emit(Op("atomic", prog=_sub(lambda c: c.seq(av, flags))))
        elif op in (C.ASSERT, C.ASSERT_NOT):
            direction, body = av
            sub = _sub(lambda c: c.seq(body, flags))
            width = 0
            if direction < 0:
                lo, hi = body.getwidth()
                if lo != hi:
                    raise Unsupported("variable-width lookbehind")
                width = lo
            self.emit(
                Op("look", prog=sub, behind=direction < 0, negate=op is C.ASSERT_NOT, width=width)
            )
        else:
            raise Unsupported(f"opcode {op}")

    def branch(self, alternatives: list[Any], flags: int) -> None:
        jumps = []
        for index, alt in enumerate(alternatives):
            if index < len(alternatives) - 1:
                split = self.emit(Op("split"))
                self.prog[split].x = len(self.prog)
                self.seq(alt, flags)
                jumps.append(self.emit(Op("jmp")))
                self.prog[split].y = len(self.prog)
            else:
                self.seq(alt, flags)
        for jump in jumps:
            self.prog[jump].x = len(self.prog)

    def repeat(self, av: Any, flags: int, *, lazy: bool) -> None:
        low, high, body = av
        for _ in range(low):
            self.seq(body, flags)
        if high == MAXREPEAT:
            if _can_be_empty(body):
                raise Unsupported("an unbounded repeat of something that can match empty")
            top = self.emit(Op("split"))
            self.seq(body, flags)
            self.emit(Op("jmp", x=top))
            self._order(top, len(self.prog), lazy)
            return
        splits = []
        for _ in range(high - low):
            splits.append(self.emit(Op("split")))
            self.seq(body, flags)
        end = len(self.prog)
        for split in splits:
            self._order(split, end, lazy)

    def _order(self, split: int, exit_to: int, lazy: bool) -> None:
        """Greedy: the body first, then the exit; lazy: the other way round."""
        body = split + 1
        self.prog[split].x, self.prog[split].y = (exit_to, body) if lazy else (body, exit_to)


def _sub(build: Callable[[_Compiler], None]) -> list[Op]:
    c = _Compiler()
    build(c)
    c.emit(Op("match"))
    return c.prog


def compile_steps(pattern: re.Pattern[str]) -> list[Op]:
    """``pattern`` as a program for :class:`Machine`; raises :class:`Unsupported`."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    flags = parsed.state.flags
    return _sub(lambda c: c.seq(parsed, flags))


class Machine:
    """Runs compiled programs over one text, counting every instruction as a step."""

    def __init__(self, text: str, limit: int) -> None:
        self.text = text
        self.steps = 0
        self.limit = limit

    def run(self, prog: list[Op], start: int, must_end: int | None = None) -> int | None:
        """The end of the first match of ``prog`` anchored at ``start``, by priority; or None."""
        text, n = self.text, len(self.text)
        stack = [(0, start)]
        while stack:
            pc, sp = stack.pop()
            while True:
                self.steps += 1
                if self.steps > self.limit:
                    raise StepLimit(self.steps)
                op = prog[pc]
                kind = op.kind
                if kind == "char":
                    assert op.pred is not None
                    if sp < n and op.pred(text[sp]):
                        pc, sp = pc + 1, sp + 1
                        continue
                    break
                if kind == "split":
                    stack.append((op.y, sp))
                    pc = op.x
                elif kind == "jmp":
                    pc = op.x
                elif kind == "assert":
                    assert op.test is not None
                    if not op.test(text, sp):
                        break
                    pc += 1
                elif kind == "look":
                    assert op.prog is not None
                    if op.behind:
                        found = sp >= op.width and self.run(op.prog, sp - op.width, sp) is not None
                    else:
                        found = self.run(op.prog, sp) is not None
                    if found == op.negate:
                        break
                    pc += 1
                elif kind == "atomic":
                    assert op.prog is not None
                    end = self.run(op.prog, sp)
                    if end is None:
                        break
                    pc, sp = pc + 1, end
                else:  # match
                    if must_end is not None and sp != must_end:
                        break
                    return sp
        return None


def finditer_steps(
    pattern: re.Pattern[str], text: str, limit: int = 5_000_000
) -> tuple[int, list[tuple[int, int]]]:
    """``(steps, spans)`` of ``pattern.finditer(text)`` as a backtracking engine does it.

    Raises AssertionError when the spans differ from ``re``'s (the model is
    wrong for this pattern) and :class:`StepLimit` past ``limit`` steps.
    """
    prog = compile_steps(pattern)
    machine = Machine(text, limit)
    spans: list[tuple[int, int]] = []
    pos = 0
    while pos <= len(text):
        for start in range(pos, len(text) + 1):
            end = machine.run(prog, start)
            if end is not None:
                spans.append((start, end))
                pos = end if end > start else end + 1
                break
        else:
            break
    expected = [m.span() for m in pattern.finditer(text)]
    assert spans == expected, (pattern.pattern, text[:200], spans[:5], expected[:5])
    return machine.steps, spans


def alphabet(pattern: re.Pattern[str]) -> str:
    """The characters that steer ``pattern``: its literals, class bounds and a few more."""
    chars = set("aZ0_ \n/.-x")
    for op, av in _walk(sre_parse.parse(pattern.pattern, pattern.flags)):
        if op in (C.LITERAL, C.NOT_LITERAL):
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update((chr(av[0]), chr(av[1])))
    return "".join(sorted(chars))


def width(pattern: re.Pattern[str]) -> tuple[int, int]:
    """The least and most characters a match of ``pattern`` can span."""
    low, high = sre_parse.parse(pattern.pattern, pattern.flags).getwidth()
    return int(low), int(high)


def fragments(pattern: re.Pattern[str]) -> list[str]:
    """The literal runs of ``pattern`` (``://``, ``-----BEGIN``): pieces of inputs that get far."""
    found: set[str] = set()

    def runs(items: Any) -> None:
        current: list[str] = []
        for op, av in items:
            if op is C.LITERAL:
                current.append(chr(av))
                continue
            if len(current) > 1:
                found.add("".join(current))
            current = []
            if op is C.SUBPATTERN:
                runs(av[3])
            elif op is C.BRANCH:
                for alt in av[1]:
                    runs(alt)
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                runs(av[2])
            elif op is C.ATOMIC_GROUP:
                runs(av)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                runs(av[1])
        if len(current) > 1:
            found.add("".join(current))

    runs(sre_parse.parse(pattern.pattern, pattern.flags))
    return sorted(found)


def _walk(items: Any) -> Any:
    for op, av in items:
        yield op, av
        if op is C.IN:
            yield from av
        elif op is C.SUBPATTERN:
            yield from _walk(av[3])
        elif op is C.BRANCH:
            for alt in av[1]:
                yield from _walk(alt)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            yield from _walk(av[2])
        elif op is C.ATOMIC_GROUP:
            yield from _walk(av)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            yield from _walk(av[1])


def growth(pattern: re.Pattern[str], make: Callable[[int], str], base: int) -> tuple[float, int]:
    """How the steps grow from ``make(base)`` through ``make(4 * base)``, and the steps at 4x.

    Returns ``(s(4n) - s(2n)) / (s(2n) - s(n))``: 2 for linear work (once
    the input is longer than the pattern's own bounded repeats), 4 for
    quadratic. Counts, not times: the same on any machine, under any load.
    """
    s1, s2, s4 = (finditer_steps(pattern, make(k * base))[0] for k in (1, 2, 4))
    return (s4 - s2) / max(1, s2 - s1), s4


class _Counting:
    """A compiled pattern that adds the length of every text it is given to ``counter``."""

    def __init__(self, pattern: re.Pattern[str], counter: list[int]) -> None:
        self._pattern = pattern
        self._counter = counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)

    def _seen(self, string: str, pos: int = 0) -> None:
        self._counter[0] += max(0, len(string) - pos)

    def sub(self, repl: Any, string: str, count: int = 0) -> Any:
        self._seen(string)
        return self._pattern.sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> Any:
        self._seen(string)
        return self._pattern.split(string, maxsplit)


def _scanning(method: str) -> Callable[..., Any]:
    def call(self: _Counting, string: str, pos: int = 0, *rest: int) -> Any:
        self._seen(string, pos)
        return getattr(self._pattern, method)(string, pos, *rest)

    return call


for _method in ("search", "match", "fullmatch", "finditer", "findall"):
    setattr(_Counting, _method, _scanning(_method))


def count_work(fn: Callable[[], object], modules: list[Any]) -> tuple[int, int]:
    """``(python lines run, characters handed to regexes)`` while ``fn`` runs.

    Every module-level pattern of ``modules`` (and each pattern in a module
    tuple of ``(name, pattern)`` pairs) is swapped for a counting one for the
    call. With every pattern linear in its input (:func:`growth`), work linear
    in both counts is linear work.
    """
    chars = [0]
    swapped: list[tuple[Any, str, Any]] = []
    for module in modules:
        for attr, value in list(vars(module).items()):
            if isinstance(value, re.Pattern):
                swapped.append((module, attr, value))
                setattr(module, attr, _Counting(value, chars))
            elif (
                isinstance(value, tuple)
                and value
                and all(
                    isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], re.Pattern)
                    for v in value
                )
            ):
                swapped.append((module, attr, value))
                setattr(module, attr, tuple((k, _Counting(p, chars)) for k, p in value))
    lines = [0]

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            lines[0] += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
        for module, attr, value in swapped:
            setattr(module, attr, value)
    return lines[0], chars[0]
