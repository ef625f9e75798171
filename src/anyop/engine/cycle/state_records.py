"""What a handling cycle writes of the engine's own state: progress records, the diff-base,
the finalizer's release, and in which order (docs/architecture.md, "Once per cause"); and where,
when the server drops the state from the status.

A base of the :class:`~anyop.engine.cycle.reconciler.Reconciler`, which has the attributes. Pure: it
only puts things into patches; the reconciler sends them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from anyop.engine.cycle.handler_calls import Cycle, Logger, utcnow
from anyop.engine.cycle.patch_writer import Endpoint
from anyop.handlers.causes import ChangingCause
from anyop.handlers.progression import Progress, superseded_message
from anyop.handlers.records import ResourceChangingHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.patches import Patch
from anyop.kube.resources import Resource
from anyop.logs import object_logger
from anyop.storage.defaults import Persistence, anyop_storages, written_first
from anyop.storage.diffbase import EssenceTooLargeError, StatusDiffBaseStorage, status_was_pruned
from anyop.storage.finalizers import allow_deletion
from anyop.storage.progress import ParsedRecord, ProgressStorage

__all__ = ["FAILURES_KEY", "StateRecords", "last_cause_failed", "note_failures"]

FAILURES_KEY = "anyop-failures"
"""The progress storage's key of the note of which handlers the last finished cause failed."""


def note_failures(
    cause: ChangingCause, progress: Progress, patch: Patch, storage: ProgressStorage
) -> None:
    """Note the handlers that the finished cause failed (for ``@on.resume(failed_only=True)``);
    a cause that failed none removes the note. Kept by the progress storage, as a record whose
    ``subrefs`` are the failed handlers' ids."""
    failed = tuple(sorted(key for key in progress if progress[key].failure))
    if failed:
        note = ParsedRecord(purpose=cause.reason, failure=True, subrefs=failed, stopped=utcnow())
        storage.write(key=FAILURES_KEY, record=note, body=cause.body, patch=patch)
    elif storage.read(key=FAILURES_KEY, body=cause.body) is not None:
        storage.purge(key=FAILURES_KEY, body=cause.body, patch=patch)
    storage.flush()


def last_cause_failed(body: Mapping[str, Any], storage: ProgressStorage) -> bool:
    """Whether the object's last finished cause failed a handler (see :func:`note_failures`)."""
    note = storage.read(key=FAILURES_KEY, body=body)
    return note is not None and bool(note.failure)


class StateRecords:
    """Recording the engine's state into a cycle's patch (a base of the reconciler)."""

    registry: OperatorRegistry
    resource: Resource
    persistence: Persistence

    def _supersede(
        self,
        cycle: Cycle,
        cause: ChangingCause,
        progress: Progress,
        *,
        handlers: Sequence[ResourceChangingHandler],
    ) -> Progress:
        """Kopf's superseding: a cause that comes while another one's handlers are unfinished
        takes over those of them that it selects too; the others' records are purged now.

        Logs ``Creation is superseded by updating: 1 succeeded; 0 failed; 1 left to the
        moment.`` once (the next cycle finds no records of the old purpose).
        """
        extras = progress.extras
        if not extras:
            return progress
        for extra, counts in extras.items():
            cycle.logger.info(superseded_message(extra, cause.reason, counts))
        progress = progress.with_purpose(cause.reason, handlers)
        stale = progress.superseded()
        storage = self.persistence.progress
        gone = [(key, *progress[key].subrefs) for key in stale]
        for key in dict.fromkeys(key for keys in gone for key in keys):
            storage.purge(key=key, body=cause.body, patch=cycle.state)
        storage.flush()
        return progress.without(stale)

    def _record(
        self,
        cause: ChangingCause,
        progress: Progress,
        patch: Patch,
        *,
        store_essence: bool,
        held: bool = False,
        alongside: bool = False,
    ) -> bool:
        """Put the progress into the patch; when done, also the diff-base or the release.

        A deletion ``held`` by daemons keeps its progress (its delete handlers are not re-run)
        and its finalizer until they exit. A finished deletion is never purged: its release
        comes last, and where other writes come before it (``alongside``: results, the user's
        patch), they carry the finished records, so that no state in between shows the delete
        handlers undone. Returns whether the diff-base was put in (the cause is finished and
        the handled essence is what the object will hold).
        """
        storage = self.persistence.progress
        if not progress.done or held:
            progress.store(body=cause.body, patch=patch, storage=storage)
            return False
        if cause.deleted:
            if alongside:
                progress.store(body=cause.body, patch=patch, storage=storage)
            patch.fns.append(allow_deletion(self.persistence.finalizer))
            return False
        stored = store_essence or cause.old != cause.new
        if stored and not self._store_diffbase(cause, patch):
            # The finished records stay instead: no handler runs again for this cause.
            progress.store(body=cause.body, patch=patch, storage=storage)
            return False
        # Done: the purge would take back every record that storing them put into the patch.
        owned = self.registry.changing.for_resource(self.resource)
        progress.purge(body=cause.body, patch=patch, storage=storage, handlers=owned)
        note_failures(cause, progress, patch, storage)
        return stored

    def _store_diffbase(self, cause: ChangingCause, patch: Patch) -> bool:
        """Put the diff-base into the patch: the essence, or its digest where it does not fit.

        Returns whether either was put in. The digest (RELIABILITY.md §5 row 34) is said once
        per object, with a warning; where not even the digest fits, an error says so.
        """
        storage, logger = self.persistence.diffbase, object_logger(cause.body)
        try:
            storage.store(body=cause.body, patch=patch, essence=cause.new)
            return True
        except EssenceTooLargeError as error:
            refusal = error
        try:
            newly = storage.store_digest(body=cause.body, patch=patch, essence=cause.new)
        except EssenceTooLargeError as error:
            logger.error(f"The state cannot be stored: {refusal} {error}")
            return False
        (logger.warning if newly else logger.debug)(
            f"Only a digest of the handled state is kept: {refusal} Changes are still "
            f"detected and handled, but the handlers' old and diff lack the old values of "
            f"what changed."
        )
        return True

    def _first(self, state: Patch, *, diffbase: bool) -> Endpoint:
        """Which merge-patch of the cycle goes first: the one with the state that is read first.

        The diff-base's where the cycle stored it (a state with it and without the purge of the
        records reads as a finished cause), else the records'. For storages that anyop does not
        know, the main endpoint's if the state has a part there (annotations are read first by
        Kopf's storages), else the status's.
        """
        persistence = self.persistence
        where = written_first(persistence.diffbase if diffbase else persistence.progress)
        if where is not None:
            return where
        return "main" if len(state) > ("status" in state) else "status"

    def _pruned(self, patch: Patch, response: Mapping[str, Any], logger: Logger) -> bool:
        """Whether the server dropped our state from the status; if so, use annotations now.

        WARNING: without this, a structural schema that prunes ``status.anyop`` would make
        every cycle look like a creation and re-run the creation handlers forever.
        """
        diffbase = self.persistence.diffbase
        if not isinstance(diffbase, StatusDiffBaseStorage):
            return False
        if not status_was_pruned(patch, response, name=diffbase.name):
            return False
        logger.warning(
            f"The server dropped status.{diffbase.name} (its schema does not keep unknown "
            f"status fields); anyop keeps its state of {self.resource} in annotations instead."
        )
        fallback = anyop_storages()
        self.persistence = dataclasses.replace(fallback, finalizer=self.persistence.finalizer)
        return True
