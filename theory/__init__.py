"""Bounds of PersA-FL Theorems 1-3 and AREA Theorems 7-8, and exact-expectation oracles."""
