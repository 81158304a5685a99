"""docs/notebooks.md as a notebook, run by a real Jupyter kernel (nbclient + ipykernel).

The page's ```python blocks are the cells, in order; the training cell runs twice (a rerun).
Then the test's own cells train with slow steps (an epoch of about two seconds) and interrupt a
training, and the test reads what the cells show: the stream output, as the notebook got it.
The kernel listens on 127.0.0.1 only and is shut down at the end.
"""
import json
import os
import re
import sys

import nbformat
import numpy as np
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "notebooks.md")
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

SLOW_EPOCH = """
import json, time
from tfloop import Callback

class SlowSteps(Callback):
    def _trigger_step(self):
        time.sleep(0.05)

class Outputs(Callback):
    '''prob of x[:8] on the weights in the training session, when training ends.'''
    def _setup_graph(self):
        self.predict = self.trainer.get_predictor(["x"], ["prob"])

    def _before_train(self):
        self.first = self.predict(x[:8])[0]

    def _after_train(self):
        self.last = self.predict(x[:8])[0]

logger.set_logger_dir("train_log/slow", action="delete")
outputs = Outputs()
slow = SimpleTrainer()
launch_train_with_config(TrainConfig(model=Model(), data=data, max_epoch=1, steps_per_epoch=40,
                                     callbacks=[SlowSteps(), outputs]), slow)
"""

COMPARE = """
after, = slow.get_predictor(["x"], ["prob"])(x[:8])
print(json.dumps({"first": outputs.first.tolist(), "last": outputs.last.tolist(),
                  "after": after.tolist()}))
"""

ENDLESS = """
logger.set_logger_dir("train_log/endless", action="delete")
stopped = SimpleTrainer()
launch_train_with_config(TrainConfig(model=Model(), data=data, max_epoch=10**6, steps_per_epoch=40,
                                     callbacks=[SlowSteps()]), stopped)
"""

AFTER_INTERRUPT = """
import os
status = open("train_log/endless/status.json").read()
saved = os.path.exists(f"train_log/endless/model-{stopped.global_step}.index")
print(json.dumps({"step": stopped.global_step, "status": status, "saved": saved,
                  "prob": stopped.get_predictor(["x"], ["prob"])(x[:8])[0].tolist()}))
"""


def page_cells():
    with open(PAGE, encoding="utf-8") as f:
        return [match.group(1) for match in _BLOCK.finditer(f.read())]


def kernel_manager(tmp_path):
    """A kernel of this interpreter, importing this checkout's tfloop, on 127.0.0.1."""
    spec_dir = tmp_path / "kernels" / "tfloop-test"
    spec_dir.mkdir(parents=True)
    env = {"PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "tfloop test", "language": "python", "env": env}))
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    return KernelManager(kernel_name="tfloop-test", kernel_spec_manager=specs, ip="127.0.0.1",
                         transport="tcp")


def stream_text(cell):
    """Every stdout message of a cell, in order."""
    return [out["text"] for out in cell.outputs
            if out["output_type"] == "stream" and out["name"] == "stdout"]


def rendered(text):
    """The lines a notebook shows: each carriage return redraws its line."""
    return [line.rpartition("\r")[2] for line in text.split("\n") if line.rpartition("\r")[2]]


def bar_displays(text, epoch):
    return [part for part in text.replace("\n", "\r").split("\r")
            if part.startswith(f"Epoch {epoch}:")]


def json_line(cell):
    return json.loads([line for line in "".join(stream_text(cell)).splitlines()
                       if line.startswith("{")][-1])


def interrupt_after_progress(client, km, code):
    """Run ``code``; once its bar has shown progress, interrupt the kernel. Returns the reply's
    content and the stdout text."""
    kc = client.kc
    msg_id = kc.execute(code)
    text, interrupted, reply = "", False, None
    deadline = scaled_timeout(120)
    while reply is None:
        msg = kc.get_iopub_msg(timeout=deadline)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            text += msg["content"]["text"]
            if not interrupted and any(" 0/40" not in d for d in bar_displays(text, 1)):
                km.interrupt_kernel()
                interrupted = True
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            reply = kc.get_shell_msg(timeout=deadline)["content"]
    assert interrupted
    return reply, text


@pytest.mark.slow
def test_the_page_runs_as_a_notebook_with_a_live_bar_and_predictions_after_training(tmp_path):
    cells = page_cells()
    training = next(i for i, c in enumerate(cells) if "launch_train_with_config(" in c)
    sources = cells[:training + 1] + [cells[training]] + cells[training + 1:]
    sources += [SLOW_EPOCH, COMPARE]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    km = kernel_manager(tmp_path)
    workdir = tmp_path / "work"
    workdir.mkdir()
    import nbclient
    client = nbclient.NotebookClient(nb, km=km, timeout=scaled_timeout(300),
                                     resources={"metadata": {"path": str(workdir)}})
    try:
        with client.setup_kernel():
            assert km.has_kernel and km.ip == "127.0.0.1"
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            reply, interrupted_text = interrupt_after_progress(client, km, ENDLESS)
            after_interrupt = nbformat.v4.new_code_cell(AFTER_INTERRUPT)
            nb.cells.append(after_interrupt)
            client.execute_cell(after_interrupt, len(nb.cells) - 1)
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    assert not km.is_alive()

    # The page's training cell, and its rerun: one bar line per epoch, at 100%, few lines.
    for index in (training, training + 1):
        text = "".join(stream_text(nb.cells[index]))
        lines = rendered(text)
        bars = [line for line in lines if line.startswith("Epoch ")]
        assert [b.split(":")[0] for b in bars] == ["Epoch 1", "Epoch 2", "Epoch 3"]
        assert all("100%|██████████| 24/24" in b for b in bars)
        assert len(lines) <= 10, lines
    # The slow epoch: redrawn live (several refreshes between 0 and 100%, sent as the epoch went
    # on, in separate messages), one line in the end.
    slow = nb.cells[len(sources) - 2]
    text = "".join(stream_text(slow))
    displays = bar_displays(text, 1)
    counts = [int(re.search(r"\| *(\d+)/40", d).group(1)) for d in displays]
    assert counts[0] == 0 and counts[-1] == 40 and len([c for c in counts if 0 < c < 40]) >= 2
    assert len([m for m in stream_text(slow) if "Epoch 1:" in m]) >= 2
    assert [line for line in rendered(text) if line.startswith("Epoch")] == [displays[-1]]
    # Predicting after training gives what the model gave in the training session at its end.
    values = json_line(nb.cells[len(sources) - 1])
    np.testing.assert_allclose(values["after"], values["last"], rtol=1e-5, atol=1e-6)
    assert not np.allclose(values["first"], values["last"], atol=1e-3)
    # Interrupted: a clean stop at a step of the first epoch, KeyboardInterrupt, and predictions.
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    stopped = json_line(after_interrupt)
    assert 0 < stopped["step"] < 40 * 1000
    assert json.loads(stopped["status"])["state"] == "stopped" and stopped["saved"]
    assert np.asarray(stopped["prob"]).shape == (8, 10)
    assert "Epoch 1:" in interrupted_text
