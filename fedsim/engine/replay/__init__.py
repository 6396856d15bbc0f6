"""Event tables and the one replay (docs/INTERNALS.md section 3)."""
