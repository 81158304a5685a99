"""Packaging for tfloop.

TensorFlow is an extra, not a base requirement, so that users pick the build they need:
``pip install .[cpu]`` (tensorflow-cpu) or ``pip install .[gpu]`` (tensorflow with CUDA).
"""
from setuptools import find_packages, setup

TF_VERSION = ">=2.16"

setup(
    name="tfloop",
    version="0.1.0",
    description="A tensorpack-style training loop for TensorFlow graphs: one session.run per step, "
                "everything else a callback.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["tfloop", "tfloop.*"]),
    python_requires=">=3.10",
    # google-crc32c: the checksums of the checkpoints ModelSaver writes in place.
    install_requires=["numpy", "tabulate", "tqdm", "google-crc32c"],
    extras_require={
        "cpu": ["tensorflow-cpu" + TF_VERSION],
        "gpu": ["tensorflow[and-cuda]" + TF_VERSION],
        "test": ["pytest>=7", "pytest-timeout", "tensorboard", "pandas", "scikit-learn",
                 "matplotlib", "pyzmq", "lmdb", "tensorpack==0.11", "ruff", "mypy",
                 "opencv-python-headless", "pycocotools", "scipy", "mlflow", "wandb", "optuna",
                 "h5py", "nbclient", "nbformat", "ipykernel", "ray[train,tune]"],
        "examples": ["scikit-learn", "ipython", "tensorboard", "matplotlib"],
        "plot": ["matplotlib"],
        # tensorpack's FasterRCNN example: COCO annotations and scoring, mask pasting, images.
        "coco": ["pycocotools", "scipy", "opencv-python-headless"],
        "dataflow": ["pyzmq", "lmdb"],
        "viz": ["opencv-python-headless", "matplotlib"],
        "mlflow": ["mlflow"],
        "wandb": ["wandb"],
        "optuna": ["optuna"],
        "ray": ["ray[train,tune]"],
        "datasets": ["scipy", "opencv-python-headless"],
        "hdf5": ["h5py"],
    },
    entry_points={"console_scripts": ["tfloop=tfloop.cli:main"]},
)
