"""The distribution as a user gets it.

Fast: setup.py names the distribution that the error messages name, and no install line in the
tree names ``tfloop``, which on PyPI is an unrelated project.

Slow: the wheel built from the checkout holds the package, its licence and its metadata, nothing
else; installed with the ``cpu`` extra into a new virtual environment it imports, runs ``tfloop
--help``, the README's quick-start and a user's mypy, from an empty directory. Both are built
without network (``python -m build --no-isolation``; build and setuptools come with the ``test``
extra). The new environment does not download TensorFlow again: a ``.pth`` file adds a directory
of links to the files of exactly the distributions installed here that the wheel's requirements
with the ``cpu`` extra pull in, and pip installs the wheel with ``--no-index``, so those
requirements must resolve to them. Nothing else installed here is visible to it.
"""
import email
import fnmatch
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support import scaled_timeout

from tfloop.version import DISTRIBUTION, __version__

ROOT = Path(__file__).resolve().parent.parent
# What building, testing and running the checkout leave in it, which a build must not see.
_LEFT_BY_RUNS = {".git", "__pycache__", "build", "dist", "train_log", ".pytest_cache",
                 ".mypy_cache", ".ruff_cache"}
_INSTALL_LINES = re.compile(r"(?<![\w./-])tfloop\[|pip install (?:-U )?['\"]?tfloop(?![\w-])")
_DIST_INFO = f"tfloop_train-{__version__}.dist-info"
_USER_SCRIPT = """\
from tfloop import ModelSaver, TrainConfig

config = TrainConfig(max_epoch="10", callbacks=[ModelSaver()])
reveal_type(config.max_epoch)
"""


def test_setup_py_names_the_distribution_the_messages_name():
    setup_py = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert re.search(r'\n    name="([^"]+)"', setup_py).group(1) == DISTRIBUTION == "tfloop-train"


def test_no_install_line_names_the_unrelated_tfloop_distribution():
    files = [ROOT / "README.md", ROOT / "setup.py", ROOT / ".ci" / "run"]
    for pattern in ("docs/**/*.md", "tfloop/**/*.py", "tests/**/*.py", "examples/**/*.py",
                    "bench/**/*.py"):
        files += [Path(path) for path in glob.glob(str(ROOT / pattern), recursive=True)]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in files
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _INSTALL_LINES.search(line)]
    assert found == []


def _run(args, **kwargs):
    out = subprocess.run([str(arg) for arg in args], capture_output=True, text=True, **kwargs)
    assert out.returncode == 0, f"{args}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _ignore_what_runs_leave(directory, names):
    return {name for name in names
            if name in _LEFT_BY_RUNS or name.endswith(".egg-info")
            or os.path.isfile(os.path.join(directory, name, "pyvenv.cfg"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(checkout copy, sdist, wheel)``: the sdist built from a copy of the checkout, and the
    wheel built from the sdist (what ``python -m build`` does), without network."""
    work = tmp_path_factory.mktemp("packaging")
    source, dist = work / "checkout", work / "dist"
    shutil.copytree(ROOT, source, ignore=_ignore_what_runs_leave)
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, source],
         timeout=scaled_timeout(60))
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    assert len(sdists) == len(wheels) == 1, os.listdir(dist)
    return source, sdists[0], wheels[0]


@pytest.mark.slow
def test_the_wheel_holds_the_package_its_licence_and_metadata_only(built):
    source, _, wheel = built
    package = {path.relative_to(source).as_posix() for path in (source / "tfloop").rglob("*")
               if path.is_file() and "__pycache__" not in path.parts}
    assert "tfloop/py.typed" in package and "tfloop/callbacks/base.py" in package
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        licence = archive.read(f"{_DIST_INFO}/licenses/LICENSE").decode()
        fields = email.message_from_bytes(archive.read(f"{_DIST_INFO}/METADATA"))
        entry_points = archive.read(f"{_DIST_INFO}/entry_points.txt").decode()
    assert {name for name in names if name.startswith("tfloop/")} == package
    assert names - package == {f"{_DIST_INFO}/{name}" for name in (
        "METADATA", "WHEEL", "RECORD", "entry_points.txt", "top_level.txt", "licenses/LICENSE")}
    assert licence == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("Copyright 2026 The tfloop Authors\n\n"
                              "                                 Apache License\n")
    assert (fields["Name"], fields["Version"]) == (DISTRIBUTION, __version__)
    assert (fields["License-Expression"], fields.get_all("License-File")) == ("Apache-2.0",
                                                                              ["LICENSE"])
    assert "Typing :: Typed" in fields.get_all("Classifier")
    assert 'tensorflow-cpu>=2.16; extra == "cpu"' in fields.get_all("Requires-Dist")
    assert "tfloop = tfloop.cli:main" in entry_points.splitlines()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\n    pip install build && python -m build\n" in readme
    readme_wheel = re.search(r'\n    pip install "\$\(ls (dist/\S+\.whl)\)\[cpu\]"\n', readme)
    assert fnmatch.fnmatch(f"dist/{wheel.name}", readme_wheel.group(1))


@pytest.mark.slow
def test_the_sdist_holds_what_builds_the_wheel_and_no_tests(built):
    _, sdist, _ = built
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = f"tfloop_train-{__version__}"
    assert {name.split("/")[1] for name in names if "/" in name} == {
        "LICENSE", "MANIFEST.in", "PKG-INFO", "README.md", "pyproject.toml", "setup.cfg",
        "setup.py", "tfloop", "tfloop_train.egg-info"}
    assert f"{top}/tfloop/py.typed" in names


def _requirement_closure(requirements, extras):
    """The distributions installed here that ``requirements`` (with ``extras``) pull in."""
    found, todo = {}, [(Requirement(line), set(extras) | {""}) for line in requirements]
    while todo:
        requirement, wanted = todo.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": extra})
                                          for extra in wanted):
            continue
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in found:
            continue
        try:
            found[key] = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{requirement} (a requirement of the wheel with its extras "
                        f"{sorted(extras)}) is not installed in the environment of the tests")
        todo += [(Requirement(line), requirement.extras | {""})
                 for line in found[key].requires or ()]
    return {canonicalize_name(dist.metadata["Name"]): dist for dist in found.values()}.values()


def _link_installed_files(dist, into):
    """Link ``dist``'s files into the site directory ``into``: a whole top-level entry where it is
    the distribution's own (a module, a regular package, its .dist-info or .libs), else file by
    file (a namespace package that other distributions share)."""
    for file in dist.files or ():
        if file.parts[0] == "..":  # a script or data file outside site-packages
            continue
        top = Path(dist.locate_file(file.parts[0]))
        own = (top.is_file() or (top / "__init__.py").exists()
               or top.suffix in (".dist-info", ".libs"))
        link = into.joinpath(*file.parts[:1 if own else None])
        if not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(top if own else Path(dist.locate_file(file)))


def _user_env(environment):
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PATH"] = f"{environment / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return dict(env, TF_CPP_MIN_LOG_LEVEL="2")


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """A new virtual environment holding the wheel with its ``cpu`` extra."""
    _, _, wheel = built
    environment = tmp_path_factory.mktemp("environment")
    _run([sys.executable, "-m", "venv", "--without-pip", environment], timeout=scaled_timeout(60))
    python = environment / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     env=_user_env(environment), timeout=scaled_timeout(20)).stdout.strip())
    with zipfile.ZipFile(wheel) as archive:
        fields = email.message_from_bytes(archive.read(f"{_DIST_INFO}/METADATA"))
    requirements = _requirement_closure(fields.get_all("Requires-Dist"), {"cpu"})
    assert "tensorflow-cpu" in {canonicalize_name(dist.metadata["Name"]) for dist in requirements}
    for dist in requirements:
        _link_installed_files(dist, environment / "requirements")
    (site / "requirements.pth").write_text(
        f"import site; site.addsitedir({str(environment / 'requirements')!r})\n")
    out = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-index",
                f"{wheel}[cpu]"], env=_user_env(environment), timeout=scaled_timeout(60))
    assert f"Successfully installed {DISTRIBUTION}-{__version__}\n" in out.stdout, out.stdout
    return environment


@pytest.mark.slow
def test_the_installed_wheel_imports_and_runs_the_command(installed, tmp_path):
    env = _user_env(installed)
    out = _run([installed / "bin" / "python", "-c", "import importlib.metadata, tfloop; "
                f"print(tfloop.__file__, importlib.metadata.version({DISTRIBUTION!r}))"],
               cwd=tmp_path, env=env, timeout=scaled_timeout(20))
    module, version = out.stdout.split()
    assert Path(module).is_relative_to(installed) and version == __version__
    out = _run([installed / "bin" / "tfloop", "--help"], cwd=tmp_path, env=env,
               timeout=scaled_timeout(20))
    assert out.stdout.startswith("usage: tfloop ") and "watch" in out.stdout
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_the_readme_quick_start_runs_on_the_installed_wheel(installed, tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.search(r"\n## In twenty-odd lines\n\n```python\n(.*?)```", readme, re.S).group(1)
    assert "max_epoch=10" in code
    _run([installed / "bin" / "python", "-c", code.replace("max_epoch=10", "max_epoch=2")],
         cwd=tmp_path, env=_user_env(installed), timeout=scaled_timeout(90))
    logdir = tmp_path / "train_log" / "quickstart"
    assert (logdir / "checkpoint").exists()
    assert '"epoch_num": 2' in (logdir / "stats.json").read_text()


@pytest.mark.slow
def test_a_users_mypy_sees_the_types_of_the_installed_wheel(installed, tmp_path):
    (tmp_path / "user_script.py").write_text(_USER_SCRIPT)
    out = subprocess.run([sys.executable, "-m", "mypy", "--python-executable",
                          installed / "bin" / "python", "--cache-dir", os.devnull,
                          "user_script.py"], cwd=tmp_path, env=_user_env(installed),
                         capture_output=True, text=True, timeout=scaled_timeout(90))
    assert "import-untyped" not in out.stdout, out.stdout
    assert out.stdout.splitlines()[:2] == [
        'user_script.py:3: error: Argument "max_epoch" to "TrainConfig" has incompatible type '
        '"str"; expected "int"  [arg-type]',
        'user_script.py:4: note: Revealed type is "int"'], out.stdout + out.stderr
