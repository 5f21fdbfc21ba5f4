#!/usr/bin/env python3
"""tokens.py -- streams a reply token by token, the way an LLM server does.

    GET  /tokens?prompt=hello+there&max_tokens=20&ms=25
    POST /tokens   {"prompt": "hello there", "max_tokens": 20, "ms": 25}

200 text/event-stream, one event per token, then a last one:

    data: {"index": 0, "token": "You"}

    ...
    data: [DONE]

The "model" is a stand-in (it answers with the prompt and a fixed text);
what matters is the shape: an async generator whose every yield becomes a
DATA frame at once, so the client sees tokens as they are made.  If the
client goes away, ingressd cancels the stream and asyncio.CancelledError
stops the generator at its next await.  Bad parameters get 400.
"""
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(
    __file__))))

from ingressd_replica import HTTPError, Response, serve  # noqa: E402

FILLER = ("and that is all there is to say about it , said the model , "
          "token after token , until the budget ran out .").split()


def parameters(req, body):
    p = dict(req.args)
    if body:
        try:
            j = json.loads(body)
        except ValueError:
            raise HTTPError(400, "body is not JSON\n")
        if not isinstance(j, dict):
            raise HTTPError(400, "body is not a JSON object\n")
        p.update(j)
    try:
        n = int(p.get("max_tokens", 16))
        ms = float(p.get("ms", 20))
    except (TypeError, ValueError):
        raise HTTPError(400, "max_tokens and ms must be numbers\n")
    if not 1 <= n <= 4096 or not 0 <= ms <= 10000:
        raise HTTPError(400, "max_tokens in 1..4096, ms in 0..10000\n")
    return str(p.get("prompt", "")), n, ms / 1000.0


def tokens(prompt):
    """The reply, one word at a time, forever."""
    yield "You"
    yield "said"
    for w in prompt.split():
        yield w
    while True:
        for w in FILLER:
            yield w


async def generate(req, prompt, n, delay):
    sent = 0
    try:
        for i, tok in zip(range(n), tokens(prompt)):
            await asyncio.sleep(delay)  # "inference"
            yield "data: %s\n\n" % json.dumps({"index": i,
                                               "token": tok})
            sent += 1
        yield "data: [DONE]\n\n"
    except asyncio.CancelledError:
        sys.stderr.write("tokens: stream %d cancelled after %d "
                         "tokens\n" % (req.stream, sent))
        raise


async def handler(req):
    prompt, n, delay = parameters(req, await req.body())
    return Response(generate(req, prompt, n, delay), 200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache"})


if __name__ == "__main__":
    sys.exit(serve(handler))
