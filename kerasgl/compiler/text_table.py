"""A plain-text table that fits a width: summary()'s layout.

Columns keep their natural width when the table fits; otherwise the widest of the flexible ones
give way, down to a floor each, and their cells wrap onto more lines (as Keras's own summary
wraps them). A row may carry a note, printed on its own line(s) under the row across the whole
width (summary() puts there what a fusion folded into a layer).
"""
from __future__ import annotations

import re
import shutil
import textwrap

DEFAULT_WIDTH = 100       # when the output is not a terminal and COLUMNS is unset
MIN_WIDTH = 60
SEPARATOR = "  "
NOTE_INDENT = "    "
_TREE_PREFIX = re.compile(r"^(\s*(?:└ )?)")


def terminal_width() -> int:
    """The terminal's columns (COLUMNS when set), DEFAULT_WIDTH when not a terminal."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def fit_widths(natural: list[int], stages: list[list[int]], width: int) -> list[int]:
    """Column widths summing (with separators) to at most `width`. Each stage is a floor per
    column; the stages are tried in turn (each lower than the last: no word broken, then names
    broken, ...), and within a stage the column with the most room above its floor gives way
    first. Past the last stage the table stays wider than `width`."""
    widths = list(natural)
    excess = sum(widths) + len(SEPARATOR) * (len(widths) - 1) - width
    for floors in stages:
        floors = [min(f, w) for f, w in zip(floors, widths)]
        while excess > 0:
            room = [w - f for w, f in zip(widths, floors)]
            widest = max(range(len(widths)), key=lambda i: (room[i], widths[i]))
            if room[widest] <= 0:
                break
            widths[widest] -= 1
            excess -= 1
    return widths


def longest_word(texts) -> int:
    return max([len(word) for text in texts for word in text.split()] or [1])


def wrap_cell(text: str, width: int) -> list[str]:
    """A cell's lines at this width, breaking at spaces first (a tree prefix `  └ ` repeats as
    indentation on the following lines)."""
    if len(text) <= width:
        return [text]
    prefix = _TREE_PREFIX.match(text).group(1)
    lines = textwrap.wrap(text, width, subsequent_indent=" " * len(prefix),
                          break_on_hyphens=False) or [""]
    return lines


def render(columns: tuple, rows: list[tuple], notes: list[str], width: int,
           floors: list[int], keep_whole: tuple = (), right_aligned: tuple = ()
           ) -> tuple[list[str], int]:
    """(lines, table width): the header and every row, each row followed by its note (if any)
    wrapped across the table's width. Columns give way in three stages: down to their longest
    word (the `keep_whole` ones not at all), then down to `floors` (words broken), then the
    `keep_whole` ones down to `floors` too."""
    natural = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    words = [longest_word([c] + [r[i] for r in rows]) for i, c in enumerate(columns)]
    whole = [n if i in keep_whole else max(f, w)
             for i, (n, f, w) in enumerate(zip(natural, floors, words))]
    broken = [n if i in keep_whole else f for i, (n, f) in enumerate(zip(natural, floors))]
    widths = fit_widths(natural, [whole, broken, floors], width)
    total = sum(widths) + len(SEPARATOR) * (len(widths) - 1)

    def lines_of(cells) -> list[str]:
        wrapped = [wrap_cell(c, w) for c, w in zip(cells, widths)]
        height = max(len(w) for w in wrapped)
        out = []
        for k in range(height):
            parts = []
            for i, (lines, w) in enumerate(zip(wrapped, widths)):
                text = lines[k] if k < len(lines) else ""
                parts.append(text.rjust(w) if i in right_aligned else text.ljust(w))
            out.append(SEPARATOR.join(parts).rstrip())
        return out

    out = lines_of(columns) + ["=" * total]
    for row, note in zip(rows, notes):
        out += lines_of(row)
        if note:
            prefix = _TREE_PREFIX.match(row[0]).group(1)
            indent = NOTE_INDENT + " " * len(prefix)
            out += textwrap.wrap(note, max(20, total), initial_indent=indent,
                                 subsequent_indent=indent + "  ", break_on_hyphens=False)
    return out, total


def wrap_text(line: str, width: int, indent: str = "    ") -> list[str]:
    """A free text line (a header, a plan's description) wrapped to the width."""
    if len(line) <= width:
        return [line]
    lead = re.match(r"^\s*", line).group(0)
    return textwrap.wrap(line, width, initial_indent="", subsequent_indent=lead + indent,
                         break_on_hyphens=False, drop_whitespace=True) or [line]
