"""MMW's local agent (see docs/agent.md)."""

__version__ = "0.1.0"
