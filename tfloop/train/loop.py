"""The training loop's counters."""
import numbers

__all__ = ["TrainLoop"]


class TrainLoop:
    """Where training is: epoch, step in the epoch, global step, and the loop's bounds.

    ``epoch_num`` is ``starting_epoch - 1`` before the first epoch; ``local_step`` counts from 0 in
    each epoch; ``global_step`` counts every training step ever run (it continues on resume).
    ``starting_local_step`` is the step the first epoch starts at (a run resumed mid-epoch sets it
    before the main loop; ``steps_per_epoch`` means only that epoch's end is left).
    ``epoch_first_global_step`` is the global step at the start of the current epoch's step 0
    (for an epoch resumed mid-way, where it would have been), so the steps of the epoch that have
    finished are ``global_step - epoch_first_global_step``, even when a hook raised mid-step.
    """

    def __init__(self):
        self.starting_epoch = 1
        self.max_epoch = 1
        self.steps_per_epoch = 1
        self.steps_per_run = 1
        self.epoch_num = 0
        self.local_step = -1
        self.global_step = 0
        self.starting_local_step = 0
        self.epoch_first_global_step = 0

    def configure(self, steps_per_epoch, starting_epoch, max_epoch):
        """Check and set the loop's bounds; errors name the bad value and what is valid."""
        checked = []
        for name, value in (("steps_per_epoch", steps_per_epoch), ("starting_epoch", starting_epoch),
                            ("max_epoch", max_epoch)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{name} must be an int, got {value!r}.")
            checked.append(int(value))  # numpy integers too
        steps_per_epoch, starting_epoch, max_epoch = checked
        if steps_per_epoch <= 0:
            raise ValueError(f"steps_per_epoch must be a positive int, got {steps_per_epoch}.")
        if starting_epoch < 1:
            raise ValueError(f"starting_epoch must be >= 1, got {starting_epoch}.")
        if max_epoch < starting_epoch:
            raise ValueError(f"max_epoch ({max_epoch}) must be >= starting_epoch ({starting_epoch}).")
        self.steps_per_epoch = steps_per_epoch
        self.starting_epoch = starting_epoch
        self.max_epoch = max_epoch
        self.epoch_num = starting_epoch - 1
