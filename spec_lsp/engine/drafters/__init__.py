"""Where draft tokens come from: the `Drafter` protocol and its sources."""
