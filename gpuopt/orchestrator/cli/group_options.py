"""Options given at a command group's level (`gpuopt daemon --config c.toml run`): a
subcommand either honours them or they are refused (exit 2), never silently dropped."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

import typer

T = TypeVar("T")


def _given(ctx: Any, name: str) -> bool:
    """Given on the command line (not a default or an environment variable). Compared by
    name: typer vendors its own click, whose ParameterSource is not click's."""
    source = ctx.get_parameter_source(name)
    return getattr(source, "name", None) == "COMMANDLINE"


def _flag(ctx: Any, name: str) -> str:
    for param in ctx.command.params:
        if param.name == name and param.opts:
            return str(param.opts[0])
    return f"--{name.replace('_', '-')}"


def refuse_unhonoured(ctx: typer.Context, honoured: Collection[str]) -> None:
    """In a group's callback, when a subcommand follows: every option given to the group
    on the command line that the subcommand does not honour is a user error."""
    from gpuopt.core.errors import UserError

    sub = ctx.invoked_subcommand
    if sub is None:
        return
    for name in ctx.params:
        if _given(ctx, name) and name not in honoured:
            flag = _flag(ctx, name)
            raise UserError(f"{flag} is an option of `{ctx.command_path}` itself, not of "
                            f"`{ctx.command_path} {sub}`: give it after `{sub}` if "
                            f"`{sub} --help` lists it, or leave out the subcommand",
                            exit_code=2)


def from_group(ctx: typer.Context, name: str, value: T) -> T:
    """A subcommand's option ``name``: its own value, else what was given to the group
    (`gpuopt daemon --config c.toml run`). Given to both, differently: a user error."""
    from gpuopt.core.errors import UserError

    parent = ctx.parent
    if parent is None or name not in parent.params or not _given(parent, name):
        return value
    group_value: T = parent.params[name]
    if _given(ctx, name) and value != group_value:
        flag = _flag(ctx, name)
        raise UserError(f"{flag} given twice, differently: {group_value} to "
                        f"`{parent.command_path}` and {value} to `{ctx.command_path}`",
                        exit_code=2)
    return group_value
