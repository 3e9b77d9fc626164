"""Hooks on the task queue (no tasks of our own): the request id travels with the tasks a
request enqueues, each task's log lines carry it, and failures are counted.

A task enqueued while a request is answered gets that request's id in front of its own id
(`<request id>~<task uuid>`): the id is stored with the task anyway, so nothing else
changes, and the worker binds it to the task's log lines.
"""

from huey.contrib.djhuey import HUEY
from huey.signals import SIGNAL_ENQUEUED, SIGNAL_ERROR

from kernodeck.observability import logcontext, recording


def _request_id_of(task) -> str:
    head, separator, _rest = str(task.id).partition(logcontext.TASK_ID_SEPARATOR)
    return head if separator else ""


@HUEY.signal(SIGNAL_ENQUEUED)
def task_tag_with_request(signal, task, *args, **kwargs):
    request_id = logcontext.request_id()
    if request_id and not _request_id_of(task):
        task.id = f"{request_id}{logcontext.TASK_ID_SEPARATOR}{task.id}"


@HUEY.pre_execute()
def task_log_context_bind(task):
    # Inside a request (immediate mode) the request's id stays; in the worker it is the
    # id of the request that enqueued the task, or the task's own.
    request = logcontext.current_request()
    request_id = logcontext.request_id() or _request_id_of(task) or str(task.id)
    task._kernodeck_log_tokens = logcontext.bind(
        request_id=request_id, request=request, task=task.name
    )


@HUEY.post_execute()
def task_log_context_unbind(task, task_value, exc):
    tokens = getattr(task, "_kernodeck_log_tokens", None)
    if tokens is not None:
        task._kernodeck_log_tokens = None
        logcontext.unbind(tokens)


@HUEY.signal(SIGNAL_ERROR)
def task_failure_count(signal, task, *args, **kwargs):
    recording.task_failure_observe(task=task.name)
