"""Packaging for tfloop, the single source of its metadata (pyproject.toml names only the build
backend).

The distribution is ``tfloop-train`` (``tfloop`` on PyPI is an unrelated project); the package it
installs is ``tfloop`` and its command ``tfloop``. TensorFlow is an extra, not a base requirement,
so that users pick the build they need: ``pip install 'tfloop-train[cpu]'`` (tensorflow-cpu) or
``pip install 'tfloop-train[gpu]'`` (tensorflow with CUDA); from a checkout, ``pip install
'.[cpu]'``.
"""
from setuptools import find_packages, setup

TF_VERSION = ">=2.16"

setup(
    name="tfloop-train",
    version="0.1.0",
    description="A tensorpack-style training loop for TensorFlow graphs: one session.run per step, "
                "everything else a callback.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    author="The tfloop Authors",
    license_expression="Apache-2.0",
    license_files=["LICENSE"],
    classifiers=[
        "Intended Audience :: Developers",
        "Intended Audience :: Science/Research",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Typing :: Typed",
    ],
    packages=find_packages(include=["tfloop", "tfloop.*"]),
    package_data={"tfloop": ["py.typed"]},
    python_requires=">=3.10",
    # google-crc32c: the checksums of the checkpoints ModelSaver writes in place.
    install_requires=["numpy", "tabulate", "tqdm", "google-crc32c"],
    extras_require={
        "cpu": ["tensorflow-cpu" + TF_VERSION],
        "gpu": ["tensorflow[and-cuda]" + TF_VERSION],
        "test": ["pytest>=7", "pytest-timeout", "pytest-xdist", "tensorboard", "pandas",
                 "scikit-learn", "matplotlib", "pyzmq", "lmdb", "tensorpack==0.11", "ruff", "mypy",
                 "opencv-python-headless", "pycocotools", "scipy", "mlflow", "wandb", "optuna",
                 "h5py", "nbclient", "nbformat", "ipykernel", "ray[train,tune]",
                 # tests/test_packaging.py builds the wheel without network (no build isolation);
                 # converting exports in the tests: ONNX and its runtime.
                 "build", "setuptools>=77", "tf2onnx", "onnxruntime"],
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
