"""Resuming a run exactly: the state saved beside each checkpoint, restoring it, and stopping
cleanly on SIGTERM/SIGINT so that there is always a checkpoint to resume from.

``AutoResumeTrainConfig`` (in :mod:`tfloop.train.config`) puts these together.
"""
from tfloop.resume.preemption import SignalHandler
from tfloop.resume.saver import ResumeStateSaver
from tfloop.resume.session_init import ResumeInit, find_resume_checkpoint

__all__ = ["ResumeStateSaver", "ResumeInit", "SignalHandler", "find_resume_checkpoint"]
