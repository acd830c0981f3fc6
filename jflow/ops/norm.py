"""norm ops (issue 6): definition, xla kernel and SBP signatures side by side."""

from __future__ import annotations
