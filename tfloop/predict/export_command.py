"""``tfloop export LOGDIR --model MODULE:CLASS ...``: export a log directory's best or latest
checkpoint as a SavedModel (for TF Serving and ``tf.saved_model.load``) or a frozen graph.

    tfloop export train_log/mnist --model mnist_convnet:Model --output-names prob \\
        --output export/mnist/1
    tfloop export train_log/mnist --model mnist_convnet:Model --output-names prob \\
        --checkpoint latest --format compact --output mnist.pb
"""
import argparse
import glob
import importlib
import json
import os
import sys

__all__ = ["add_arguments", "run", "load_model", "find_checkpoint"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tfloop export`` to ``parser``."""
    parser.add_argument("logdir", help="the log directory of a training run")
    parser.add_argument("--model", required=True,
                        help="the model's import path, MODULE:NAME (a ModelDesc class, or a "
                             "function returning a ModelDesc); the current directory is "
                             "importable")
    parser.add_argument("--model-args", default="{}",
                        help="keyword arguments of the model's constructor, as JSON")
    parser.add_argument("--output", required=True,
                        help="the SavedModel directory (new or empty) or the .pb file")
    parser.add_argument("--output-names", nargs="+", required=True,
                        help="the tensors to export as outputs")
    parser.add_argument("--input-names", nargs="+",
                        help="the tensors to feed (default: the model's inputs)")
    parser.add_argument("--checkpoint", default="auto",
                        help="'best' (kept by MinSaver/MaxSaver), 'latest', 'auto' (best when "
                             "kept, else latest; the default), or a checkpoint path")
    parser.add_argument("--stat", help="with several best checkpoints: the stat to choose by")
    parser.add_argument("--format", choices=["serving", "compact"], default="serving",
                        help="a SavedModel (default) or a frozen GraphDef")
    parser.add_argument("--signature-name", default="serving_default",
                        help="the SavedModel's signature key")
    parser.add_argument("--tags", nargs="+", default=["serve"], help="the SavedModel's tags")


def load_model(path: str, kwargs: dict):
    """Import ``MODULE:NAME`` and call it with ``kwargs``: the model to export."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise SystemExit(f"--model {path!r}: give MODULE:NAME, e.g. mnist_convnet:Model.")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"--model {path!r}: cannot import {module_name}: {e}.") from None
    factory = getattr(module, attr, None)
    if factory is None:
        names = sorted(n for n in dir(module) if not n.startswith("_"))
        raise SystemExit(f"--model {path!r}: {module_name} has no {attr!r}; it has "
                         f"{', '.join(names)}.")
    from tfloop.model_desc import ModelDescBase
    model = factory(**kwargs)
    if not isinstance(model, ModelDescBase):
        raise SystemExit(f"--model {path!r} gave {model!r}, not a ModelDesc.")
    return model


def _best_records(logdir):
    records = []
    for path in sorted(glob.glob(os.path.join(glob.escape(logdir), "*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("mode") in ("min", "max") and \
                isinstance(record.get("checkpoints"), list) and record["checkpoints"]:
            records.append(record)
    return records


def find_checkpoint(logdir: str, which: str = "auto", stat: str | None = None):
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
    records = _best_records(logdir)
    if stat is not None:
        records = [r for r in records if r.get("stat") == stat]
        if not records:
            raise SystemExit(f"No best checkpoint for the stat {stat!r} in {logdir} (kept: "
                             f"{', '.join(r.get('stat', '?') for r in _best_records(logdir))}"
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
    try:
        return _run(args)
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise SystemExit(f"tfloop export: {e}") from None


def _run(args):
    try:
        kwargs = json.loads(args.model_args)
    except ValueError as e:
        raise SystemExit(f"--model-args must be a JSON object: {e}.") from None
    if not isinstance(kwargs, dict):
        raise SystemExit(f"--model-args must be a JSON object, got {args.model_args!r}.")
    checkpoint, description = find_checkpoint(args.logdir, args.checkpoint, args.stat)
    model = load_model(args.model, kwargs)
    from tfloop.predict.config import PredictConfig
    from tfloop.tfutils.export import ModelExporter
    config = PredictConfig(model=model, session_init=checkpoint, input_names=args.input_names,
                           output_names=args.output_names)
    exporter = ModelExporter(config)
    if args.format == "compact":
        exporter.export_compact(args.output)
    else:
        exporter.export_serving(args.output, tags=args.tags, signature_name=args.signature_name)
    kind = "frozen graph" if args.format == "compact" else "SavedModel"
    print(f"Exported {description} as a {kind} to {args.output}.")
    return 0
