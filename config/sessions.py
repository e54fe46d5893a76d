"""Sessions in the database (the embedded default, without Redis): Django's, with the read every request makes of its
session built once per process (corpus.internals); rebuilding that read took a sixth of the CPU of a saved answer
on SQLite (benchmarks/hit_profile.py). An expired session is no session, as in Django's."""

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.utils import timezone

from corpus.internals import MARKER_TEXT, CompiledQuery


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self):
        found = _SESSION(session_key=self.session_key)
        if found and found[0].expire_date > timezone.now():
            return found[0]
        self._session_key = None
        return None


_SESSION = CompiledQuery(lambda session_key: SessionStore.get_model_class().objects.filter(session_key=session_key),
                         session_key=MARKER_TEXT)
