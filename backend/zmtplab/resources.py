"""What the package ships besides its code: the web pages, the lessons and the sample captures the lessons play.

An installed package (a wheel, the container image) holds them as package data, found with
`importlib.resources`: `zmtplab/frontend/`, `zmtplab/lessons/` and `zmtplab/captures/`. In a checkout of the
repository (an editable install) the pages and the captures are the repository's own `frontend/` and
`captures/`, beside `backend/`, where the wheel's build takes them from (`pyproject.toml`). The server's
settings override both (`ZMTPLAB_FRONTEND_DIR`, `ZMTPLAB_SAMPLE_CAPTURES_DIR`).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

PACKAGE = __name__.rpartition(".")[0]
CHECKOUT_ROOT = Path(__file__).resolve().parents[2]  # backend/zmtplab/resources.py -> the repository


def _shipped(name: str) -> Path | None:
    """The package's data directory `name`: inside the installed package, else the repository's directory of
    that name (a checkout); None when neither is there."""
    packaged = files(PACKAGE) / name
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    checkout = CHECKOUT_ROOT / name
    return checkout if checkout.is_dir() else None


def frontend_dir() -> Path | None:
    """The web pages (`index.html`, `capture.html`, `lessons.html`, `corpus.html`, their modules and styles)."""
    return _shipped("frontend")


def lessons_dir() -> Path:
    """The lessons (`<id>.yaml`, their translations in `<lang>/<id>.yaml`): the `zmtplab.lessons` package's own
    data, installed or not."""
    found = _shipped("lessons")
    if found is None:  # (a package imported from a zip: nothing of ours is served from one)
        raise FileNotFoundError(f"the lessons of {PACKAGE} are not on a file system")
    return found


def sample_captures_dir() -> Path | None:
    """The sample captures (`*.pcapng`) lessons play by file name."""
    return _shipped("captures")
