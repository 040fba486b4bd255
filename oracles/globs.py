"""The path globs of the libraries, families and packs (write sets, predicate paths, state paths).

One meaning everywhere a glob is matched, so a write set validated by a loader matches in the
oracle exactly as it was read.
"""

from __future__ import annotations

import re


def glob_to_regex(glob: str) -> re.Pattern[str]:
    """``**`` spans directories, ``*`` and ``?`` stay within one segment.

    ``a/**`` matches ``a`` itself and everything below it: a write set that allows a directory's
    contents allows creating the directory.
    """
    suffix = ""
    if glob.endswith("/**"):
        glob, suffix = glob[:-3], "(?:/.*)?"
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("^" + "".join(out) + suffix + "$")
