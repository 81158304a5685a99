"""Writing benchmark results: machine description, markdown tables, atomic files."""
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import tempfile


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _mem_total_gb():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2.0 ** 20, 1)
    except OSError:
        pass
    return None


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.strip()
    except OSError:
        return None


def machine_info():
    """What the numbers were measured on."""
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": _mem_total_gb(),
        "loadavg_start": os.getloadavg(),
        "python": platform.python_version(),
        "tensorflow": _version("tensorflow-cpu") or _version("tensorflow"),
        "keras": _version("keras"),
        "git_commit": _git_commit(),
    }


def machine_line(info):
    load = info.get("loadavg_start")
    end = info.get("loadavg_end")
    return ("Machine: {cpu}, {cores} cores, {memory_gb} GB; Python {python}, TensorFlow "
            "{tensorflow}, Keras {keras}; commit {git_commit} (plus working-tree changes); load "
            "average {load} at start, {end} at end.".format(
                load=" ".join(f"{x:.1f}" for x in load) if load else "?",
                end=" ".join(f"{x:.1f}" for x in end) if end else "?", **info))


def table(headers, rows):
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def _write_atomic(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path, data):
    _write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def write_text(path, text):
    _write_atomic(path, text)
