"""Regenerate the bundled synthetic transcripts in ctxbench/data/bundled/ (same as `ctxbench generate`)."""

import sys

from ctxbench.datagen.cli import cli

if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
