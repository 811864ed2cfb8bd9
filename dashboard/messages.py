"""What a page says when something fails: the error in plain words, without the server's paths.

An error from ingest or from the KB names the file it is about; on the server that file lives
under a temporary upload folder or a configured directory whose path means nothing to the user
and tells an outsider about the machine. `plain` keeps each path's last component (the file or
folder name the user knows) and drops the rest.
"""

from __future__ import annotations

import re

#: an absolute POSIX path of two or more components (or a Windows drive path)
_PATH = re.compile(r"(?:[A-Za-z]:\\|/)(?:[^\s/\\:'\"()\[\],;]+[/\\])+([^\s/\\:'\"()\[\],;]+)")


def plain(error: BaseException | str) -> str:
    """`error` as one line for the page: paths reduced to their last component."""
    text = str(error) if not isinstance(error, str) else error
    text = " ".join(text.split())
    return _PATH.sub(lambda m: m.group(1), text)
