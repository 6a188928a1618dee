"""Guides: per-row helpers plugged into the engine (a monitor is a guide)."""
from .base import Guide, RowView, TriggerRecord  # noqa: F401
