"""``tfloop export``: export a log directory's checkpoint for serving (needs TensorFlow).

Its options are defined next to the exporter, in :mod:`tfloop.predict.export_command`, which is
imported only when this command runs so that the rest of the CLI starts without TensorFlow.
"""
import argparse

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("arguments", nargs=argparse.REMAINDER,
                        help="LOGDIR and the export options; see 'tfloop export --help'")


def run(args):
    return run_arguments(args.arguments)


def run_arguments(arguments):
    """Parse ``tfloop export``'s own options (``--help`` included) and export."""
    from tfloop.predict import export_command
    parser = argparse.ArgumentParser(prog="tfloop export",
                                     description="Export a log directory's checkpoint.")
    export_command.add_arguments(parser)
    return export_command.run(parser.parse_args(arguments))
