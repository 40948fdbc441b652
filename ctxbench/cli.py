"""The ``ctxbench`` command: one entry point, one subcommand per job.

Each subcommand lives in its own module and is imported only when used, so
``ctxbench --help`` stays fast. ``run`` hands its arguments to Hydra (after ``-q``).

Exit codes, the same for every command (docs/commands.md):
  0  done
  1  the command worked and its answer is "no": ``check`` found a regression, ``generate --check``
     found files that differ
  2  bad usage, config or input (one line on stderr naming the file and place; results already
     written are kept)
  3  internal error: a bug in ctxbench (the traceback is printed)
  130  interrupted (Ctrl-C); results already written are kept
  143  terminated (SIGTERM): handled like Ctrl-C (temporary files removed, results written are kept)
"""

from __future__ import annotations

import errno
import importlib
import os
import signal
import sys
import traceback
from collections.abc import Sequence

from ctxbench.errors import CtxbenchError

# name -> (module:function taking argv and returning an exit code, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("ctxbench.run_app:cli", "replay transcripts through strategies (a Hydra app: overrides, -m sweeps)"),
    "import": (
        "ctxbench.calibration.commands:import_cli",
        "convert agent transcripts (any known format) to canonical JSONL",
    ),
    "generate": ("ctxbench.datagen.cli:cli", "regenerate (or --check) the bundled synthetic transcripts"),
    "calibrate": (
        "ctxbench.calibration.commands:calibrate_cli",
        "measure tokenizer chars/token and estimator error on transcripts",
    ),
    "report": ("ctxbench.report.cli:report_cli", "gather runs into tables, plots, HTML and Markdown"),
    "view": ("ctxbench.view.cli:cli", "see what a strategy sent and dropped, call by call (static pages or --serve)"),
    "baseline": ("ctxbench.report.gate:baseline_cli", "store the current results summary as a CI baseline"),
    "check": ("ctxbench.report.gate:check_cli", "compare results with a baseline; non-zero exit on regression"),
    "ls": (
        "ctxbench.ls:cli",
        "list layers, strategies, estimators, judges, tokenizers, importers with their parameters",
    ),
    "bench": ("ctxbench.bench:cli", "measure replay speed against the tokenizer floor, memory and sweep scaling"),
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so every clean-up path of Ctrl-C runs for it too."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


# An OSError of these kinds is the user's disk or folder, not a bug: one line, exit 2.
_PLACE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR}


def describe(doc: str | None) -> str:
    """A module docstring's first paragraph as argparse help: one line of plain text (no RST
    double backticks, no %% escapes, which argparse prints as they are in a description)."""
    first = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(first.replace("``", "`").split())


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: ctxbench <command> [args...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`ctxbench <command> --help` shows a command's own options."]
    lines += [
        "Exit codes: 0 done, 1 check failed (regression), 2 bad usage/config/input, 3 internal error, "
        "130 interrupted, 143 terminated."
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        return _print(_usage())
    if args[0] in ("-V", "--version"):
        from ctxbench import __version__

        return _print(f"ctxbench {__version__}")
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"ctxbench: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, func_name = COMMANDS[name][0].split(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("ctxbench"):
            print(f"ctxbench: command {name!r} is not available in this build ({exc.name} missing)", file=sys.stderr)
            return 2
        raise
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return int(func(rest) or 0)
    except CtxbenchError as exc:
        print(f"ctxbench {name}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) or exc.errno not in _PLACE_ERRNOS:
            if isinstance(exc, BrokenPipeError):  # the reader went away (`ctxbench ls | head`): not an error
                return _reader_gone()
            return _internal_error(name)
        from ctxbench.atomic import reason

        print(f"ctxbench {name}: error: {exc.filename or 'a file'}: {reason(exc)}", file=sys.stderr)
        return 2
    except Terminated:
        print(f"ctxbench {name}: terminated (SIGTERM); results already written are kept", file=sys.stderr)
        # The clean-up ran while the exception unwound. End now: native threads still running (pyarrow's
        # readers under `import`) abort the interpreter's shutdown ("terminate called ...", SIGABRT).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(143)
    except KeyboardInterrupt:
        print(f"ctxbench {name}: interrupted; results already written are kept", file=sys.stderr)
        return 130
    except Exception:  # not an input or config problem: a bug, so show where
        return _internal_error(name)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _print(text: str) -> int:
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `ctxbench --help | head -3`
        return _reader_gone()
    return 0


def _reader_gone() -> int:
    # Python flushes stdout again at exit and would print "Exception ignored ... BrokenPipeError": point it at null.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _internal_error(name: str) -> int:
    traceback.print_exc()
    print(f"ctxbench {name}: internal error (a bug in ctxbench; the traceback above says where)", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
