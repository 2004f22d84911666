"""Devices: ``cpu`` (host memory) and ``cuda:N`` (device memory through the CUDA driver API)."""

from __future__ import annotations

from typing import Any

from .errors import DeviceError


class Device:
    """A device: ``Device("cpu")``, ``Device("cuda")``, ``Device("cuda:1")``."""

    __slots__ = ("type", "index")

    def __init__(self, spec: str, index: int | None = None) -> None:
        kind, _, idx = spec.partition(":")
        if kind not in ("cpu", "cuda"):
            raise DeviceError(f"unknown device {spec!r}: use 'cpu', 'cuda' or 'cuda:N'")
        if idx:
            if not idx.isdigit():
                raise DeviceError(f"bad device index in {spec!r}: write 'cuda:N' with N >= 0")
            index = int(idx)
        if kind == "cpu":
            index = None
        elif index is None:
            index = 0
        self.type = kind
        self.index = index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = as_device(other)
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = Device("cpu")


def as_device(value: Any) -> Device:
    """Coerce a Device, a string or a torch device to a Device."""
    if isinstance(value, Device):
        return value
    if value is None:
        return CPU
    if isinstance(value, str):
        return Device(value)
    if isinstance(value, int):
        return Device("cuda", value)
    if type(value).__module__ == "torch":
        return Device(str(value))
    raise DeviceError(f"cannot use {value!r} as a device: pass 'cpu', 'cuda' or 'cuda:N'")
