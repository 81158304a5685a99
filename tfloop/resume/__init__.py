"""Resuming a run exactly: the state saved beside each checkpoint, reading and restoring it,
and stopping cleanly on SIGTERM/SIGINT so that there is always a checkpoint to resume from.

``AutoResumeTrainConfig`` (in :mod:`tfloop.train.config`) names the checkpoint; the trainer
continues its run (``Trainer.train(resume_from=)``).
"""
from tfloop.resume.preemption import SignalHandler
from tfloop.resume.saver import ResumeStateSaver
from tfloop.resume.session_init import ResumeInit, find_resume_checkpoint

__all__ = ["ResumeStateSaver", "ResumeInit", "SignalHandler", "find_resume_checkpoint"]
