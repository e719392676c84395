"""A griffe extension of the reference site (mkdocs.yml): a class's special members stay off its page.

The Python handler renders what griffe calls public: a module's ``__all__``, and in a class every
name without a leading underscore plus the special ones (``__repr__``, ``__aenter__``,
``__slots__``...). The reference keeps a class to its public members: the special ones are taken
out of the class here (marking them not public would not reach a class shown through a re-export),
all but ``__init__``, whose signature becomes the class's own (``merge_init_into_class``).
A repository tool, not in the wheel.
"""

from __future__ import annotations

from typing import Any

from griffe import Class, Extension, GriffeLoader

__all__ = ["HideSpecialMembers"]


class HideSpecialMembers(Extension):
    """Takes each ``__name__`` member but ``__init__`` out of a class, once griffe has read it all."""

    def on_class(self, *, cls: Class, loader: GriffeLoader, **kwargs: Any) -> None:
        special = [name for name in cls.members if name.startswith("__") and name.endswith("__")]
        for name in special:
            if name != "__init__":
                cls.del_member(name)
