"""tfloop plot: PNG/SVG through matplotlib, a self-contained HTML page, runs overlaid."""
import json
import re

import pytest
from cli_support import make_logdir

from tfloop.cli import main
from tfloop.cli.plot import collect_series, make_figure, smooth


@pytest.mark.slow
def test_png_of_one_run(run_dir, tmp_path, capsys):
    out = tmp_path / "curves.png"
    assert main(["plot", run_dir, "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert capsys.readouterr().out.strip() == f"Wrote {out}: 4 stat(s) of 1 run(s)."


def test_html_overlays_two_runs(tmp_path, capsys):
    a = make_logdir(tmp_path / "a")
    b = make_logdir(tmp_path / "b", records=[{"epoch_num": 1, "global_step": 3, "cost": 0.7},
                                             {"epoch_num": 2, "global_step": 6, "cost": 0.6}])
    out = tmp_path / "cmp.html"
    main(["plot", a, b, "-o", str(out), "--stats", "^cost$"])
    assert capsys.readouterr().out.strip() == f"Wrote {out}: 1 stat(s) of 2 run(s)."
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http://" not in \
        page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count("<svg") == 1 and page.count("<polyline") == 2
    assert re.findall(r"<title>(\w+)</title></polyline>", page) == ["a", "b"]


def test_svg_and_epoch_axis(run_dir, tmp_path):
    out = tmp_path / "c.svg"
    main(["plot", run_dir, "-o", str(out), "--x", "epoch", "--stats", "val-"])
    assert "<svg" in out.read_text()


def test_series_by_epoch_and_smoothing(run_dir):
    with open(f"{run_dir}/stats.json") as f:
        records = json.load(f)
    series = collect_series([("r", records)], x="epoch")
    assert series["cost"] == [("r", [1, 2, 3], [0.5, 0.25, 0.3])]
    assert series["lr"] == [("r", [2, 3], [0.01, 0.001])]
    assert smooth([1.0, 1.0, 1.0], 0.9) == pytest.approx([1.0, 1.0, 1.0])
    assert smooth([0.0, 1.0], 0.5) == pytest.approx([0.0, 2 / 3])


def test_bad_arguments(run_dir, tmp_path):
    with pytest.raises(SystemExit, match="write a .png, .svg, .pdf or .html file"):
        main(["plot", run_dir, "-o", str(tmp_path / "x.jpg")])
    with pytest.raises(SystemExit, match="Nothing to plot: no stat with numbers matches"):
        main(["plot", run_dir, "-o", str(tmp_path / "x.html"), "--stats", "nope"])
    with pytest.raises(SystemExit, match=r"--smooth must be in \[0, 1\), got 1.5"):
        main(["plot", run_dir, "--smooth", "1.5"])


def test_missing_matplotlib_is_explained(run_dir, tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(SystemExit) as stop:
        main(["plot", run_dir, "-o", str(tmp_path / "x.png")])
    assert str(stop.value) == (
        "tfloop plot needs matplotlib for .png/.svg/.pdf output: pip install matplotlib (or pip "
        "install 'tfloop-train[plot]'), or write an .html file, which needs nothing.")


@pytest.mark.parametrize("count, stats", [pytest.param(8, 5, marks=pytest.mark.slow), (2, 1)])
def test_the_legend_of_many_runs_covers_no_chart_and_no_title(count, stats):
    from matplotlib import pyplot
    runs = [(f"train_log/lr-sweep-run-{i}", []) for i in range(count)]
    series = {f"stat-{s}": [(name, [1, 2, 3], [s, i, 1]) for i, (name, _) in enumerate(runs)]
              for s in range(stats)}
    fig = make_figure(series, runs, "global step")
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [name for name, _ in runs]
    figure_box = fig.bbox
    assert legend.x0 >= figure_box.x0 and legend.x1 <= figure_box.x1 and legend.y0 >= 0
    for ax in fig.axes:
        if ax.get_visible():
            assert not legend.overlaps(ax.get_tightbbox(renderer)), ax.get_title()
    pyplot.close(fig)
