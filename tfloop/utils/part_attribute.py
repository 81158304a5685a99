"""An object's attribute that is one of its parts': how the trainer, made of parts, keeps the
names its users and callbacks read (``trainer.epoch_num`` is ``trainer.loop.epoch_num``)."""
from __future__ import annotations

from typing import Any

__all__ = ["PartAttribute"]


class PartAttribute:
    """A class attribute that reads (and, if ``writable``, writes) an attribute of a part the
    object owns: ``owner.<name>`` is ``owner.<part>.<attribute>``. Methods come bound to the part.
    The docstring is the part's, so ``help()`` and the API docs describe the attribute where it
    lives.

    Args:
        part (str): the owner's attribute that holds the part.
        part_type (type): the part's class (where the docstring is read).
        attribute (str): the part's attribute; the owner's name for it when None.
        writable (bool): whether assigning ``owner.<name>`` assigns the part's attribute.

    Example:
        >>> class Trainer:
        ...     epoch_num = PartAttribute("loop", TrainLoop)
        ...     steps_per_epoch = PartAttribute("loop", TrainLoop, "known_steps_per_epoch")
        >>> trainer.epoch_num == trainer.loop.epoch_num
        True
    """

    def __init__(self, part: str, part_type: type, attribute: str | None = None,
                 writable: bool = False) -> None:
        self._part = part
        self._part_type = part_type
        self._attribute = attribute or ""
        self._writable = writable

    def __set_name__(self, owner: type, name: str) -> None:
        self._attribute = self._attribute or name
        self.__name__ = name
        member = getattr(self._part_type, self._attribute, None)
        if isinstance(member, property) or callable(member):
            self.__doc__ = member.__doc__

    def __get__(self, owner: Any, owner_type: type | None = None) -> Any:
        if owner is None:
            return self
        return getattr(getattr(owner, self._part), self._attribute)

    def __set__(self, owner: Any, value: Any) -> None:
        if not self._writable:
            raise AttributeError(f"{type(owner).__name__}.{self.__name__} is read-only: it is "
                                 f"{self._part}.{self._attribute}.")
        setattr(getattr(owner, self._part), self._attribute, value)

    def __repr__(self) -> str:
        return f"PartAttribute({self._part}.{self._attribute})"
