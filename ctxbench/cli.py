"""The ``ctxbench`` command: one entry point, one subcommand per job.

Each subcommand lives in its own module and is imported only when used, so
``ctxbench --help`` stays fast. ``run`` hands its arguments to Hydra unchanged.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from ctxbench.errors import CtxbenchError

# name -> (module:function taking argv and returning an exit code, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("ctxbench.run_app:cli", "replay transcripts through strategies (a Hydra app: overrides, -m sweeps)"),
    "import": ("ctxbench.transcripts.importer:cli", "convert agent transcripts (any known format) to canonical JSONL"),
    "generate": ("ctxbench.datagen.cli:cli", "regenerate the bundled synthetic transcripts in datasets/"),
    "calibrate": ("ctxbench.tokens.calibrate:cli", "measure tokenizer chars/token and estimator error on transcripts"),
    "report": ("ctxbench.report.cli:report_cli", "gather runs into tables, plots, HTML and Markdown"),
    "baseline": ("ctxbench.report.gate:baseline_cli", "store the current results summary as a CI baseline"),
    "check": ("ctxbench.report.gate:check_cli", "compare results with a baseline; non-zero exit on regression"),
    "bench": ("ctxbench.bench:cli", "measure replay speed against the tokenizer floor, memory and sweep scaling"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: ctxbench <command> [args...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`ctxbench <command> --help` shows a command's own options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] in ("-V", "--version"):
        from ctxbench import __version__

        print(f"ctxbench {__version__}")
        return 0
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
    try:
        return int(func(rest) or 0)
    except CtxbenchError as exc:
        print(f"ctxbench {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ctxbench {name}: interrupted; results already written are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
