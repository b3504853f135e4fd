"""Where the window's file dialogs start: the folder of the last file chosen in any of them.

Every dialog started in the process's working folder (often the app's own checkout, or ``/``
when launched from a desktop menu), so a user picking a pair, then a calibration, then a model
of one rig walked to the same folder three times. The folder is kept in the settings, so the
next session starts there too.
"""

from __future__ import annotations

from pathlib import Path

from app.ui.settings import Settings


class FolderMemory:
    """The last folder of one window's dialogs (kept in ``settings.last_folder``)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def start(self, name: str = "") -> str:
        """The folder to open a dialog in ("" when the remembered one is gone: the working
        folder, as before), joined with a suggested file ``name`` for a save dialog."""
        folder = self.settings.last_folder
        if not folder or not Path(folder).is_dir():
            return name
        return str(Path(folder) / name) if name else folder

    def chose(self, path: str, folder: bool = False) -> None:
        """A dialog returned ``path`` (a file, or a ``folder``): its folder is where the next starts."""
        if path:
            self.settings.last_folder = str(Path(path) if folder else Path(path).parent)
