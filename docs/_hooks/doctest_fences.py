"""A griffe extension for the API reference (mkdocs.yml): the doctest examples in jkern's
docstrings (`>>> ...` lines and their output) are fenced as `pycon` code blocks, so they
render as code instead of being read as Markdown (where `x["a"]["b"]` looks like a link).
Blocks already inside a fence are left alone."""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """`text` with every run of doctest lines (a `>>>` line, then its `...` continuations
    and output up to a blank line) between ```pycon fences at the run's indentation."""
    out: list[str] = []
    lines = text.split("\n")
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
