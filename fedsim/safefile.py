"""Safe file operations for every output fedsim writes (issue 21, "Files").

Rules, applied to the *last* component of every output path (the folders above it are the
user's choice and are not inspected):

* an output file is a new path or an existing **regular** file: a symlink (dangling or
  not), a directory, a device, a FIFO or a socket is refused with a one-line
  :class:`~fedsim.errors.ConfigError` naming the option (:func:`check_output_file`), before
  any work starts;
* an output directory is a new path or an existing directory that is not a symlink
  (:func:`check_output_dir`); the nearest existing ancestor must be a writable directory;
* an empty path (``--out ''``) is refused: it would write into the current folder;
* a file is written through a fresh temporary file created with ``O_EXCL`` in the target
  folder (:func:`tempfile.mkstemp`: an unpredictable name, mode 0600), flushed, fsynced and
  renamed over the target with :func:`os.replace` (:func:`atomic_writer`); a failure of the
  disk or a limit (ENOSPC, EDQUOT, EFBIG, EMFILE, EROFS) is an ``OSError`` naming the target
  with its cause, and leaves no partial file.  The target is
  checked again just before the rename, so a symlink or device planted during the work is
  refused, never replaced or written through.  The temporary file is removed on failure;
  one left by ``kill -9`` is removed by :func:`remove_stale_temporaries` when the run
  directory is next locked;
* a lock file is opened with ``O_NOFOLLOW`` and must be a regular file (:func:`open_lock`):
  a symlink planted at ``run_dir/.lock`` is refused and its target is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from fedsim.errors import ConfigError, FedsimError
from fedsim.faults import fault_point

__all__ = ["check_output_file", "check_output_dir", "atomic_writer", "atomic_write_bytes",
           "atomic_write_text", "atomic_write_json_file", "open_lock",
           "remove_stale_temporaries", "TMP_PREFIX", "kind_of", "path_option"]

#: prefix of every temporary file fedsim creates next to an output
TMP_PREFIX = ".tmp-"


def kind_of(path: Path) -> str | None:
    """``None`` if nothing is at ``path`` (not even a dangling link), else ``"file"``,
    ``"directory"``, ``"symlink"``, ``"device"``, ``"FIFO"``, ``"socket"`` or ``"other"``
    (of the path itself, without following a symlink)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    m = st.st_mode
    if stat.S_ISLNK(m):
        return "symlink"
    if stat.S_ISREG(m):
        return "file"
    if stat.S_ISDIR(m):
        return "directory"
    if stat.S_ISCHR(m) or stat.S_ISBLK(m):
        return "device"
    if stat.S_ISFIFO(m):
        return "FIFO"
    if stat.S_ISSOCK(m):
        return "socket"
    return "other"


def _nonempty(option: str, path: Any) -> Path:
    if path is None or str(path) == "":
        raise ConfigError(f"{option} must be a path, got {option}={str(path or '')!r} "
                          "(empty)")
    return Path(path)


def _writable_ancestor(option: str, path: Path) -> None:
    anc = path.parent if str(path.parent) else Path(".")
    while kind_of(anc) is None and anc != anc.parent:
        anc = anc.parent
    k = kind_of(anc)
    if k == "symlink":
        k = "directory" if anc.is_dir() else "symlink"
    if k != "directory":
        raise ConfigError(f"{option} must be creatable, got {option}={str(path)!r} "
                          f"({str(anc)!r} is not a directory)")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} must be in a writable directory, got "
                          f"{option}={str(path)!r} ({str(anc)!r} is not writable)")


def check_output_file(option: str, path: Any, *, suffixes: tuple[str, ...] = (),
                      create_parents: bool = True) -> Path:
    """Check an output file path (module doc); returns it as a :class:`Path`.

    ``suffixes``: the accepted file name endings (e.g. ``(".png", ".pdf")``), checked
    case-insensitively; ``create_parents=False`` requires the folder to exist already.
    """
    p = _nonempty(option, path)
    k = kind_of(p)
    if k not in (None, "file"):
        raise ConfigError(f"{option} must be a regular file or a new path, got "
                          f"{option}={str(p)!r} (a {k})")
    if suffixes and p.suffix.lower() not in suffixes:
        raise ConfigError(f"{option} must end in one of {list(suffixes)}, got "
                          f"{option}={str(p)!r}")
    parent = p.parent if str(p.parent) else Path(".")
    if not create_parents and not parent.is_dir():
        raise ConfigError(f"{option} must be in an existing directory, got "
                          f"{option}={str(p)!r} ({str(parent)!r} does not exist)")
    _writable_ancestor(option, p)
    if k == "file" and not os.access(p, os.W_OK):
        raise ConfigError(f"{option} must be a writable file, got {option}={str(p)!r}")
    return p


def check_output_dir(option: str, path: Any) -> Path:
    """Check an output (run) directory path (module doc); returns it as a :class:`Path`."""
    p = _nonempty(option, path)
    k = kind_of(p)
    if k not in (None, "directory"):
        raise ConfigError(f"{option} must be a directory or a new path, got "
                          f"{option}={str(p)!r} (a {k})")
    if k == "directory":
        if not os.access(p, os.W_OK | os.X_OK):
            raise ConfigError(f"{option} must be a writable directory, got "
                              f"{option}={str(p)!r}")
    else:
        _writable_ancestor(option, p)
    return p


def _refuse_target(path: Path) -> None:
    k = kind_of(path)
    if k not in (None, "file"):
        raise FedsimError(f"refusing to write {path}: it is a {k}, not a regular file")


def _output_mode(path: Path) -> int:
    """The permissions of the file being replaced, else 0666 less the umask (what
    ``open(path, 'w')`` would give; ``mkstemp`` alone gives 0600)."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a fresh temporary file next to ``path``; on a clean exit fsync it and rename it
    over ``path`` (module doc).  ``mode`` is ``"w"`` (text, UTF-8) or ``"wb"``."""
    path = Path(path)
    _refuse_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX, suffix="-" + path.name)
    except OSError as exc:
        raise _named(exc, path) from None
    try:
        os.fchmod(fd, _output_mode(path))
        kw: dict[str, Any] = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, mode, **kw) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        fault_point(f"write:{path.name}")  # the kill -9 tests (fedsim.faults)
        _refuse_target(path)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        cause = _os_error_in(exc)
        if cause is not None:  # ENOSPC, EFBIG, ...: the target's name, not the temporary's
            raise _named(cause, path) from None
        raise
    with contextlib.suppress(OSError):  # make the rename durable; not supported everywhere
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _os_error_in(exc: BaseException) -> OSError | None:
    """The OSError (not a closed pipe) that ``exc`` is or that it was raised while handling
    (a writer such as matplotlib's PDF backend can fail again in its clean-up and mask the
    full disk with its own error)."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 8:
        if isinstance(e, OSError) and not isinstance(e, BrokenPipeError) and e.errno:
            return e
        e, seen = e.__cause__ or e.__context__, seen + 1
    return None


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` about ``path`` (a write error names no file, a temporary file's name means
    nothing to the user): the same errno and cause, so the CLI's one line names both."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through :func:`atomic_writer`."""
    with atomic_writer(path, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_writer`."""
    with atomic_writer(path, "w") as fh:
        fh.write(text)


def atomic_write_json_file(path: str | os.PathLike, obj: Any, default: Any = None) -> None:
    """Write ``obj`` as indented, sorted-key JSON to ``path`` through :func:`atomic_writer`."""
    text = json.dumps(obj, sort_keys=True, indent=1, default=default) + "\n"
    atomic_write_text(path, text)


def open_lock(path: str | os.PathLike) -> IO[str]:
    """Open (or create, mode 0600) the lock file ``path`` for reading and writing without
    following a symlink; refuse anything but a regular file (:class:`FedsimError`)."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO planted there must not block the open
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        k = kind_of(Path(path))
        if k in (None, "file"):  # a full disk, a limit, a read-only file system: say which
            raise _named(exc, Path(path)) from None
        raise FedsimError(f"cannot use the lock file {path}: it is a {k}; remove it") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FedsimError(f"cannot use the lock file {path}: it is not a regular file; "
                          "remove it")
    return os.fdopen(fd, "r+", encoding="utf-8")


def remove_stale_temporaries(folder: str | os.PathLike, depth: int = 1) -> int:
    """Remove fedsim's temporary files (``.tmp-*`` regular files) left in ``folder`` and its
    sub-folders down to ``depth`` by a killed process; returns how many.  Call it only while
    holding the folder's lock (no live writer then)."""
    n = 0
    folder = Path(folder)
    if kind_of(folder) != "directory":
        return 0
    for entry in os.scandir(folder):
        if entry.name.startswith(TMP_PREFIX) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                n += 1
        elif depth > 0 and entry.is_dir(follow_symlinks=False):
            n += remove_stale_temporaries(entry.path, depth - 1)
    return n


def path_option(option: str) -> Any:
    """An ``argparse`` type for a path option: the path, or a one-line usage error when the
    text is empty (``Path('')`` would silently mean the current folder)."""
    import argparse

    def parse(text: str) -> Path:
        if text == "" or text.strip() == "":
            raise argparse.ArgumentTypeError(f"{option} must be a path, got {option}={text!r}")
        if "\x00" in text:
            raise argparse.ArgumentTypeError(f"{option} must not contain a NUL byte")
        return Path(text)

    parse.__name__ = option.lstrip("-")
    return parse
