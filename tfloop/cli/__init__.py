"""The ``tfloop`` command: look into log directories from the shell, without TensorFlow.

    tfloop stats train_log/mnist          # stats.json as a table (csv, markdown, json)
    tfloop plot train_log/a train_log/b   # curves, overlaid, as PNG/SVG or HTML
    tfloop watch train_log/mnist          # follow a training until it ends (or dies)
    tfloop ckpts train_log/mnist          # checkpoints, best checkpoints, resume point
    tfloop info train_log/mnist           # command, versions, duration, final and best stats
    tfloop export train_log/mnist ...     # a SavedModel or frozen graph (imports TensorFlow)

Each subcommand lives in its own module with ``add_arguments(parser)`` and ``run(args)``.
"""
import argparse
import importlib
import sys

from tfloop.version import __version__

__all__ = ["main", "COMMANDS"]

COMMANDS = {
    "stats": "print stats.json of one or more log directories as a table",
    "plot": "plot the stats of one or more runs (PNG/SVG with matplotlib, or HTML)",
    "watch": "follow a training's stats.json until it finishes, stops, fails or dies",
    "ckpts": "list checkpoints, the best ones kept, and the resume point",
    "info": "what a run was: command, versions, duration, final and best stats",
    "export": "export a checkpoint as a SavedModel or a frozen graph (imports TensorFlow)",
}


def _parser(command=None):
    """The command's parser; only ``command``'s module is imported, for its options (the other
    commands' modules are not loaded)."""
    parser = argparse.ArgumentParser(prog="tfloop", description="Inspect tfloop log directories.")
    parser.add_argument("--version", action="version", version=f"tfloop {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        if name == command:
            importlib.import_module(f"tfloop.cli.{name}").add_arguments(sub)
    return parser


def main(argv=None):
    """Entry point of the ``tfloop`` command; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(argv[0] if argv else None).parse_args(argv)
    return importlib.import_module(f"tfloop.cli.{args.command}").run(args)


if __name__ == "__main__":
    sys.exit(main())
