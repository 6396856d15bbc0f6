"""A scratch distribution on ``PYTHONPATH`` for the plug-in tests: a ``dist-info`` whose
``entry_points.txt`` is given, and the modules it names."""

from __future__ import annotations

from pathlib import Path

__all__ = ["fake_distribution"]


def fake_distribution(site: Path, name: str, entry_points: str,
                      modules: dict[str, str]) -> Path:
    """Write ``<site>/<name>-0.1.dist-info`` (METADATA and ``entry_points``) and one
    ``<module>.py`` per item of ``modules``; returns ``site`` (for ``PYTHONPATH``)."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    for module, text in modules.items():
        (site / f"{module}.py").write_text(text)
    return site
