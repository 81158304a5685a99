"""The tfloop command starts without TensorFlow, has --version, and runs as python -m tfloop."""
import subprocess
import sys

import pytest
from support import scaled_timeout

from tfloop.cli import COMMANDS, main
from tfloop.version import __version__


def run_python(code, *args):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=scaled_timeout(20))


def test_help_imports_no_tensorflow():
    out = run_python("import sys; from tfloop.cli import main\n"
                     "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
                     "print('TF LOADED' if 'tensorflow' in sys.modules else 'NO TF')")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("NO TF") and out.stderr == ""
    for command in COMMANDS:
        assert command in out.stdout


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "export"])
def test_each_command_imports_no_tensorflow(command, run_dir):
    code = ("import sys; from tfloop.cli import main\n"
            f"main([{command!r}, sys.argv[1]] + (['-o', sys.argv[1] + '/p.html'] "
            f"if {command!r} == 'plot' else ['--timeout', '0'] if {command!r} == 'watch' "
            "else []))\n"
            "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'")
    out = run_python(code, run_dir)
    assert out.returncode == 0, out.stderr


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"tfloop {__version__}"


def test_python_dash_m(run_dir):
    out = subprocess.run([sys.executable, "-m", "tfloop", "stats", run_dir, "--columns", "^cost$",
                          "--format", "csv"], capture_output=True, text=True,
                         timeout=scaled_timeout(20))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "epoch_num,global_step,cost"


def test_setup_py_version_matches():
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "setup.py")) as f:
        assert re.search(r'version="([^"]+)"', f.read()).group(1) == __version__


def test_export_help_lists_the_exporter_options(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["export", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tfloop export") and "--output-names" in out


def test_export_help_imports_no_tensorflow():
    out = run_python("import runpy, sys\nsys.argv = ['tfloop', 'export', '--help']\n"
                     "try:\n    runpy.run_module('tfloop', run_name='__main__')\n"
                     "except SystemExit as stop:\n    assert stop.code == 0\n"
                     "print('TF LOADED' if 'tensorflow' in sys.modules else 'NO TF')")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: tfloop export") and "--output-names" in out.stdout
    assert out.stdout.strip().endswith("NO TF") and out.stderr == ""
