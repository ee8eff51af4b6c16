"""``make bench``: run every benchmark in turn (``--quick`` for a short run)."""

from __future__ import annotations

import sys

from benchmarks import structured


def main() -> None:
    """Run the benchmarks with the command-line flags passed through."""
    args = sys.argv[1:]
    structured.main(args)


if __name__ == "__main__":
    main()
