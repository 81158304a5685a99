#!/usr/bin/env python
"""Write docs/cli.md and docs/images/mnist_convnet.png from a real run of the main example.

Trains ``examples/mnist_convnet.py`` for a few epochs in a temporary directory, runs every
``tfloop`` command on its log directory and puts their actual output into the page, so that the
page shows what the commands print today. ``tests/docs/test_cli_page.py`` checks that the page is
current (the same commands, printing the same rows and columns).

    python docs/generate_cli_page.py                 # rewrite docs/cli.md and the PNG
    python docs/generate_cli_page.py --output /tmp/cli.md --image /tmp/p.png --max-epoch 2
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGDIR = "train_log/mnist_convnet"

COMMANDS = [
    ("stats", "The run's `stats.json` as a table, one row per epoch, and how the run stands "
              "(`--format csv`, `markdown` or `json` for other tools, which print float32 values "
              "with their shortest digits and the run's state on stderr; `--last N`, "
              "`--columns REGEX` to narrow it). A log directory without records yet is an "
              "error:",
     ["stats", LOGDIR, "--columns", "entropy|val-error-top1|learning_rate"]),
    ("stats --best", "The best epoch of each stat (the minimum, or the maximum for names like "
                     "accuracy); hyper-parameters set by a callback, like `learning_rate`, are "
                     "shown as `param` and not ranked. Several log directories give one table "
                     "with a `run` column:",
     ["stats", LOGDIR, "--best"]),
    ("plot", "Curves of every stat, one chart each; several log directories are overlaid. "
             "`-o curves.html` writes one self-contained page instead (no matplotlib needed), "
             "`--stats REGEX` picks the charts, `--x epoch` and `--smooth 0.6` as in TensorBoard:",
     ["plot", LOGDIR, "-o", "mnist_convnet.png"]),
    ("ckpts", "Checkpoints with their sizes, the best checkpoints kept by `MinSaver`/`MaxSaver`, "
              "and where a resumed run would start:",
     ["ckpts", LOGDIR]),
    ("info", "What the run was: its command, versions, duration, how it stands (`running`, "
             "`finished`, `stopped (reason)`, `failed (error)`, or `died` when its process is "
             "gone without saying how training ended, e.g. after `kill -9`), and the final and "
             "best value of each stat:",
     ["info", LOGDIR]),
    ("watch", "Follows a training as it runs, one line per epoch, and stops when the run ends: "
              "finished or stopped (exit code 0), failed or died (exit code 1). It waits for a "
              "log directory that does not exist yet, saying so. Here the run has ended, so it "
              "prints what there is and returns:",
     ["watch", LOGDIR]),
]

HEADER = """# The `tfloop` command

`tfloop` looks into log directories from the shell. It starts in a fraction of a second: it reads
files and imports no TensorFlow (only `tfloop export` does). `python -m tfloop` is the same
command; `tfloop --version` prints the version; `tfloop COMMAND --help` lists each command's
options.

Every output below is real: `docs/generate_cli_page.py` trained the main example
(`python examples/mnist_convnet.py --max-epoch {max_epoch}`) and ran each command on its log
directory to write this page.
"""

EXPORT = ("export", "Exports a log directory's best checkpoint (kept by `MinSaver`/`MaxSaver`), or "
                     "its latest, for serving: a SavedModel (here in TF Serving's layout, "
                     "`--model-version next` numbering the version directory), a frozen graph "
                     "with `--format compact`, or a TFLite model with `--format tflite`. The "
                     "signature takes the inputs the outputs depend on (the label is left out) "
                     "unless `--input-names` says otherwise. It is the one command that imports "
                     "TensorFlow, and only to export (`tfloop export --help` does not). `--model` "
                     "is found the way `python -m` finds a module, here from the repository's "
                     "root; an output name that is not in the graph is answered with close "
                     "matches or the model's named results. See [predict.md](predict.md) for the "
                     "options and the Python API, [deploying.md](deploying.md) for TF Serving, "
                     "TFLite, ONNX and MLflow:",
          ["export", LOGDIR, "--model", "examples.mnist_convnet:Model", "--output-names", "prob",
           "--output", "export/mnist_convnet", "--model-version", "next"])


def run(argv, cwd, env):
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    return out.stdout


def generate(max_epoch, image):
    """The page's text; trains in a temporary directory and writes the plot to ``image``."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg")
    sections = [HEADER.format(max_epoch=max_epoch)]
    with tempfile.TemporaryDirectory() as work:
        run([sys.executable, os.path.join(ROOT, "examples", "mnist_convnet.py"), "--max-epoch",
             str(max_epoch), "--logdir", LOGDIR], work, env)
        for title, text, args in COMMANDS:
            sections.append(command_section(title, text, args, work, env))
            if args[0] == "plot":
                os.replace(os.path.join(work, args[-1]), image)
        sections.append("![The curves `tfloop plot` draws for the main example]"
                        "(images/mnist_convnet.png)\n")
        os.symlink(os.path.join(ROOT, "examples"), os.path.join(work, "examples"))
        sections.append(command_section(*EXPORT, work, env))   # as from the repository's root
    return "\n".join(sections)


def command_section(title, text, args, work, env):
    """The page's section of one command: its text, the command line and what it printed."""
    output = run([sys.executable, "-m", "tfloop"] + args, work, env)
    for prefix in (os.path.realpath(work), work, ROOT):  # paths as a user would see them
        output = output.replace(prefix + os.sep, "")
    shown = " ".join(["tfloop"] + [shlex.quote(a) for a in args])
    return f"## tfloop {title}\n\n{text}\n\n```text\n$ {shown}\n{output.rstrip()}\n```\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "cli.md"))
    parser.add_argument("--image", default=os.path.join(ROOT, "docs", "images",
                                                        "mnist_convnet.png"))
    parser.add_argument("--max-epoch", type=int, default=6)
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.image)), exist_ok=True)
    page = generate(args.max_epoch, args.image)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(page)
    print(f"Wrote {args.output} and {args.image}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
