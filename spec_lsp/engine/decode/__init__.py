"""The speculative decode loop."""
