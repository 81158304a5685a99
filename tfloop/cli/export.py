"""``tfloop export LOGDIR --model MODULE:CLASS ...``: export a log directory's best or latest
checkpoint as a SavedModel (for TF Serving and ``tf.saved_model.load``), a frozen graph or a
TFLite model.

    tfloop export train_log/mnist --model mnist_convnet:Model --output-names prob \\
        --output export/mnist --model-version next
    tfloop export train_log/mnist --model examples.mnist_convnet:Model --output-names prob \\
        --checkpoint latest --format compact --output mnist.pb

Only :func:`run` imports TensorFlow (and ``tfloop.predict``), so ``tfloop export --help`` starts
as fast as the other commands.
"""
import argparse
import importlib
import importlib.util
import json
import logging
import os
import sys

from tfloop.utils.logdir_format import best_checkpoint_records

__all__ = ["add_arguments", "run", "import_model_module", "load_model", "find_checkpoint"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tfloop export`` to ``parser``."""
    parser.add_argument("logdir", metavar="LOGDIR", help="the log directory of a training run")
    parser.add_argument("--model", required=True,
                        help="the model, MODULE:NAME (a ModelDesc class, or a function returning "
                             "a ModelDesc); MODULE is found as 'python -m' finds it, from the "
                             "current directory (examples.mnist_convnet), or is a file "
                             "(examples/mnist_convnet.py); its own directory is importable too")
    parser.add_argument("--model-args", default="{}",
                        help="keyword arguments of the model's constructor, as JSON")
    parser.add_argument("--output", required=True,
                        help="the SavedModel directory (new or empty; with --model-version, the "
                             "model's base directory), the .pb file or the .tflite file")
    parser.add_argument("--output-names", nargs="+", required=True,
                        help="the tensors to export as outputs (an unknown name is answered "
                             "with the graph's close matches)")
    parser.add_argument("--input-names", nargs="+",
                        help="the tensors to feed (default: the model's inputs; a SavedModel's "
                             "signature takes those the outputs depend on)")
    parser.add_argument("--checkpoint", default="auto",
                        help="'best' (kept by MinSaver/MaxSaver), 'latest', 'auto' (best when "
                             "kept, else latest; the default), or a checkpoint path")
    parser.add_argument("--stat", help="with several best checkpoints: the stat to choose by")
    parser.add_argument("--format", choices=["serving", "compact", "tflite"], default="serving",
                        help="a SavedModel (default), a frozen GraphDef or a TFLite model")
    parser.add_argument("--model-version", metavar="N|next",
                        help="with --format serving: write OUTPUT/N, TF Serving's layout "
                             "(OUTPUT is the model's base path); 'next': one above the highest "
                             "version in OUTPUT")
    parser.add_argument("--select-tf-ops", action="store_true",
                        help="with --format tflite: keep TensorFlow ops TFLite lacks (run by its "
                             "Flex delegate)")
    parser.add_argument("--signature-name", default="serving_default",
                        help="the SavedModel's signature key")
    parser.add_argument("--tags", nargs="+", default=["serve"], help="the SavedModel's tags")
    parser.add_argument("--verbose", action="store_true",
                        help="show tfloop's log lines (the layers built, the variables "
                             "restored); by default only warnings and the result")


def _put_first_on_path(directory):
    if directory not in sys.path:
        sys.path.insert(0, directory)


def import_model_module(name: str, option: str = "--model"):
    """Import the module of ``--model`` as ``python -m`` would run it, or from a file path.

    The current directory comes first on ``sys.path`` (``examples.mnist_convnet`` from a
    repository's root), and the module's own directory is added too, so that it imports its
    neighbours as it does when run as a script (``from digits import ...``). While it is
    imported, ``sys.argv`` is the module's path alone, as for a script run with no arguments.
    """
    if name.endswith(".py") or os.sep in name:
        path = os.path.abspath(name)
        if not os.path.isfile(path):
            raise SystemExit(f"{option}: no file {name}.")
        directory, module_name = os.path.split(path[:-len(".py")] if path.endswith(".py")
                                               else path)
        _put_first_on_path(directory)
        name = module_name
    _put_first_on_path(os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as e:
        raise SystemExit(f"{option}: cannot import {name}: {e}.") from None
    if spec is None:
        raise SystemExit(f"{option}: cannot import {name}: no such module from "
                         f"{os.getcwd()} (give MODULE as 'python -m' takes it, or a .py file).")
    if spec.has_location and spec.origin:
        directory = os.path.dirname(spec.origin)
        if directory not in sys.path:
            sys.path.insert(1, directory)
    return _import_with_neutral_argv(name, spec.origin or name, option)


def _import_with_neutral_argv(name, path, option):
    """Import ``name`` with ``sys.argv`` as if it were run with no arguments: a module that
    parses the command line at import must not read ``tfloop export``'s."""
    argv = sys.argv
    sys.argv = [path]
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise SystemExit(f"{option}: cannot import {name}: {e}.") from None
    except SystemExit as e:
        raise SystemExit(f"{option}: importing {name} exited (status {e.code}): it runs code "
                         "at import that exits, such as parsing a command line with required "
                         "arguments; put that code under 'if __name__ == \"__main__\":'.") \
            from None
    finally:
        sys.argv = argv


def load_model(path: str, kwargs: dict):
    """Import ``MODULE:NAME`` and call it with ``kwargs``: the model to export."""
    module_name, sep, attr = path.rpartition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise SystemExit(f"--model {path!r}: give MODULE:NAME, e.g. mnist_convnet:Model.")
    module = import_model_module(module_name, f"--model {path!r}")
    factory = getattr(module, attr, None)
    if factory is None:
        names = sorted(n for n in dir(module) if not n.startswith("_"))
        raise SystemExit(f"--model {path!r}: {module.__name__} has no {attr!r}; it has "
                         f"{', '.join(names)}.")
    from tfloop.model_desc import ModelDescBase
    model = factory(**kwargs)
    if not isinstance(model, ModelDescBase):
        raise SystemExit(f"--model {path!r} gave {model!r}, not a ModelDesc.")
    return model


def _kept_best(logdir):
    return [r for r in best_checkpoint_records(logdir) if r["checkpoints"]]


def find_checkpoint(logdir: str, which: str = "auto", stat: "str | None" = None):
    """The checkpoint to export and a sentence saying which it is.

    Args:
        logdir (str): the log directory.
        which (str): ``"best"``, ``"latest"``, ``"auto"`` or a checkpoint path.
        stat (str): the stat whose best checkpoint to take, when several are kept.
    """
    from tfloop.tfutils.varmanip import get_checkpoint_path
    if which not in ("best", "latest", "auto"):
        return get_checkpoint_path(which), f"checkpoint {which}"
    if not os.path.isdir(logdir):
        raise SystemExit(f"{logdir} is not a directory: give the log directory of a run.")
    records = _kept_best(logdir)
    if stat is not None:
        records = [r for r in records if r.get("stat") == stat]
        if not records:
            raise SystemExit(f"No best checkpoint for the stat {stat!r} in {logdir} (kept: "
                             f"{', '.join(r.get('stat', '?') for r in _kept_best(logdir))}"
                             " or none).")
    if which == "best" or (which == "auto" and records):
        if not records:
            raise SystemExit(f"No best checkpoint in {logdir} (MinSaver/MaxSaver keep them); use "
                             "--checkpoint latest.")
        if len(records) > 1:
            raise SystemExit(f"{logdir} keeps best checkpoints for several stats: "
                             f"{', '.join(r['stat'] for r in records)}; choose one with --stat.")
        best = min(records[0]["checkpoints"], key=lambda c: c.get("rank", 1))
        path = get_checkpoint_path(os.path.join(logdir, best["checkpoint"]))
        return path, (f"the best checkpoint by {records[0]['stat']} ({records[0]['mode']}: "
                      f"{best.get('value')} at global step {best.get('global_step')})")
    path = get_checkpoint_path(logdir)
    return path, f"the latest checkpoint {os.path.basename(path)}"


def run(args: argparse.Namespace) -> int:
    """Export as ``args`` say; returns the exit code. Bad input exits with its one-line reason."""
    tfloop_logger = logging.getLogger("tfloop")
    level = tfloop_logger.level
    if not args.verbose:
        tfloop_logger.setLevel(logging.WARNING)
    try:
        return _run(args)
    except (OSError, KeyError, ValueError, TypeError) as e:
        message = e.args[0] if type(e) is KeyError and e.args else e
        raise SystemExit(f"tfloop export: {message}") from None
    finally:
        tfloop_logger.setLevel(level)


def _model_version(args):
    """``--model-version`` as an int, ``"next"`` or None (checking ``--select-tf-ops`` too)."""
    if args.select_tf_ops and args.format != "tflite":
        raise SystemExit("--select-tf-ops applies to --format tflite only.")
    if args.model_version is None:
        return None
    if args.format != "serving":
        raise SystemExit(f"--model-version applies to --format serving (TF Serving's layout), "
                         f"not --format {args.format}.")
    if args.model_version == "next":
        return "next"
    if not args.model_version.isdigit():
        raise SystemExit(f"--model-version must be a version number (0, 1, 2, ...) or 'next', "
                         f"got {args.model_version!r}.")
    return int(args.model_version)


def _export_tflite(exporter, output, select_tf_ops):
    """``exporter.export_tflite``; TFLite's ``ConverterError`` (its message names the ops it
    cannot convert and their layers) is said as the command's error."""
    try:
        exporter.export_tflite(output, select_tf_ops=select_tf_ops)
    except Exception as e:
        if type(e).__name__ != "ConverterError":
            raise
        raise SystemExit(f"tfloop export: {e}") from None


def _run(args):
    try:
        kwargs = json.loads(args.model_args)
    except ValueError as e:
        raise SystemExit(f"--model-args must be a JSON object: {e}.") from None
    if not isinstance(kwargs, dict):
        raise SystemExit(f"--model-args must be a JSON object, got {args.model_args!r}.")
    version = _model_version(args)
    checkpoint, description = find_checkpoint(args.logdir, args.checkpoint, args.stat)
    model = load_model(args.model, kwargs)
    from tfloop.predict.config import PredictConfig
    from tfloop.tfutils.export import ModelExporter
    config = PredictConfig(model=model, session_init=checkpoint, input_names=args.input_names,
                           output_names=args.output_names)
    exporter = ModelExporter(config)
    output = args.output
    if args.format == "compact":
        exporter.export_compact(output)
    elif args.format == "tflite":
        _export_tflite(exporter, output, args.select_tf_ops)
    elif version is not None:
        output = exporter.export_serving_version(args.output, None if version == "next" else
                                                 version, tags=args.tags,
                                                 signature_name=args.signature_name)
    else:
        exporter.export_serving(output, tags=args.tags, signature_name=args.signature_name)
    kind = {"compact": "frozen graph", "serving": "SavedModel", "tflite": "TFLite model"}
    print(f"Exported {description} as a {kind[args.format]} to {output}.")
    if exporter.left_out_inputs:
        print(f"Left out of the signature: the input(s) {', '.join(exporter.left_out_inputs)}, "
              "which no output depends on (--input-names keeps them).")
    return 0
