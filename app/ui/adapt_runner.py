"""Adapting the model from the window: the job on a thread of its own, a progress dialog.

The frame worker keeps running while the model adapts (the job reads its own copy of the
source), so the window never freezes; the dialog's Cancel stops the job between steps, and
the job keeps its progress for a later run. Results and errors reach the GUI thread as queued
signals.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import QProgressDialog, QWidget

from app.engine.errors import UserError
from app.engine.session import AdaptCancelled, AdaptJob, AdaptProgress, AdaptResult
from app.vocabulary import window_words


class AdaptThread(QThread):
    """Runs one ``AdaptJob``; ``progressed`` (AdaptProgress), then ``succeeded`` (AdaptResult)
    or ``failed`` (one line)."""

    progressed = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal(str)  # stopped on request: news, not an error

    def __init__(self, job: AdaptJob, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.job = job

    def run(self) -> None:
        try:
            result = self.job.run(self.progressed.emit)
        except AdaptCancelled as exc:
            self.cancelled.emit(exc.worded(window_words))
        except UserError as exc:
            self.failed.emit(exc.worded(window_words))
        except Exception as exc:  # a bug must not kill the window: report it
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            self.failed.emit(f"adaptation failed unexpectedly: {detail}")
        else:
            self.succeeded.emit(result)

    def stop(self) -> None:
        """Cancel the job and wait for the thread (it stops at the next step or frame)."""
        self.job.cancel()
        self.wait()


class AdaptRunner(QObject):
    """Starts a job with a progress dialog; ``done(result)`` or ``error(message)`` on the GUI thread."""

    def __init__(
        self,
        parent: QWidget,
        done: Callable[[AdaptResult], None],
        error: Callable[[str], None],
        info: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(parent)
        self._parent = parent
        self._done, self._error = done, error
        self._info = info or error  # a cancelled run's news (where its progress is kept)
        self.worker: AdaptThread | None = None
        self.dialog: QProgressDialog | None = None

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.isRunning()

    def start(self, job: AdaptJob) -> None:
        if self.running:
            self._error("an adaptation is already running; cancel it first")
            return
        dialog = QProgressDialog("Adapting the model…", "Cancel", 0, 100, self._parent)
        dialog.setWindowTitle("Adapt model")
        dialog.setWindowModality(Qt.WindowModality.NonModal)  # the views stay live
        dialog.setMinimumDuration(0)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.canceled.connect(job.cancel)
        thread = AdaptThread(job, self)
        thread.progressed.connect(self._progress)
        thread.succeeded.connect(self._succeeded)
        thread.failed.connect(self._failed)
        thread.cancelled.connect(self._cancelled)
        self.worker, self.dialog = thread, dialog
        dialog.show()
        thread.start()

    def _progress(self, p: AdaptProgress) -> None:
        if self.dialog is not None:
            self.dialog.setLabelText(f"{p.stage}: {p.message}")
            self.dialog.setValue(round(100 * p.done / p.total) if p.total else 0)

    def _finish(self) -> None:
        if self.worker is not None:
            self.worker.wait()
            self.worker.deleteLater()
            self.worker = None
        if self.dialog is not None:
            self.dialog.close()
            self.dialog.deleteLater()
            self.dialog = None

    def _succeeded(self, result: AdaptResult) -> None:
        self._finish()
        self._done(result)

    def _failed(self, message: str) -> None:
        self._finish()
        self._error(message)

    def _cancelled(self, message: str) -> None:
        self._finish()
        self._info(message)

    def shutdown(self) -> None:
        """Closing the window: cancel a running job (its progress is kept) and join its thread."""
        if self.worker is not None:
            for signal in (self.worker.progressed, self.worker.succeeded, self.worker.failed):
                signal.disconnect()  # nothing is applied to a closing window
            self.worker.stop()
        self._finish()
