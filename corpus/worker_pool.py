"""How many of a Celery worker's pool processes are running a task at this moment.

The worker's main process makes a counter in shared memory before it forks its pool (config.celery_app); each pool
process adds one while it runs a task. An import then splits its texts on the cores its idle siblings leave free
(corpus.importing.split_processes): on a 2-core machine whose worker has two pool processes, an import alone splits
in two processes, and in one while its sibling works. Outside a worker (a command, a test) there is no counter."""

import multiprocessing

_running = None


def share_among_pool() -> None:
    """In the worker's main process, before the pool forks: the children inherit the counter's shared memory."""
    global _running
    _running = multiprocessing.Value("i", 0)


def task_started() -> None:
    if _running is not None:
        with _running.get_lock():
            _running.value += 1


def task_ended() -> None:
    if _running is not None:
        with _running.get_lock():
            _running.value = max(0, _running.value - 1)


def busy_siblings() -> int | None:
    """The other pool processes running a task now, or None outside a worker's pool. A pool process killed mid-task
    never ends its count: its siblings then see one busy process too many until the worker restarts, which only makes
    them split with fewer processes."""
    if _running is None:
        return None
    return max(0, _running.value - 1)
