"""Celery time limits of every task, in seconds. At the soft limit the task raises SoftTimeLimitExceeded, which fails
its Job row with a message in words (Job.run); GRACE later the worker kills the child outright. Every hard limit
stays under the broker's visibility timeout (CELERY_VISIBILITY_TIMEOUT, 6 h), so a task still running is never
handed to a second worker."""

MINUTE = 60
HOUR = 60 * MINUTE
GRACE = 2 * MINUTE
# One provider call or a few (MTurk, Prolific): retries wait between runs, outside the task.
CALL = 10 * MINUTE
# One document through the assistance or an evaluator: at worst about two hours of LLM calls with three voters.
DOCUMENT = 3 * HOUR
