"""Eager coroutines (Replica(eager=True) only): run a handler's coroutine in
the caller until it first suspends, and give it an asyncio.Task only then.

Most requests to a replica finish without ever waiting (a GET whose answer
is computed at once): for them a Task, its first call_soon, its done
callback and a loop pass in between are pure overhead.  Python 3.12's eager
task factory does the same; this is the >= 3.9 form of it.

The caller steps the coroutine once itself (coro.send(None)).  If that
raised StopIteration, the coroutine finished and that is the end.  If it
yielded (an awaited Future, or None from a bare `await asyncio.sleep(0)`),
resume(coro, yielded) is a coroutine for a Task that hands the yielded value
to the Task as if the Task had stepped it itself, then passes every later
send and throw (cancellation) through.  The caller runs the first step in a
copy of the context, as a Task would, and creates the Task in it.

One visible difference, documented in python/README.md, and why this is
an opt-in: until the first suspension there is no current task, so
asyncio.current_task() is None and asyncio.timeout() or a TaskGroup opened
before the first await raise RuntimeError.  (3.12's own eager Task keeps
current_task() right; the default path uses it there: conn.py.)
"""


class _Continue:
    """An awaitable whose iterator is the rest of a started coroutine."""

    __slots__ = ("coro", "first")

    def __init__(self, coro, first):
        self.coro = coro
        self.first = first

    def __await__(self):
        coro, yielded = self.coro, self.first
        self.coro = self.first = None
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as e:  # noqa: B902 -- passed on
                try:
                    yielded = coro.throw(e)
                except StopIteration as s:
                    return s.value
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration as s:
                    return s.value


async def resume(coro, yielded):
    """The rest of coro, which start() left suspended on yielded."""
    return await _Continue(coro, yielded)
