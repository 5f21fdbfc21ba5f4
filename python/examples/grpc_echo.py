#!/usr/bin/env python3
"""grpc_echo.py -- the service ingressd.example.Echo on raw message bytes:
the Python twin of replica/examples/grpc-echo.c, answering the same.

  Unary         answers the request message unchanged
  ServerStream  answers the request message 3 times
  ClientStream  answers one message: every request message, joined
  BidiStream    answers each request message as it arrives
  Abort         answers no message: status INVALID_ARGUMENT, message
                "aborted: " and the request message (Trailers-Only)
  Stats         answers "cancels=N": the calls cancelled so far (client
                cancel, deadline), so a test can see the CANCEL arrive

Metadata: every request key x-echo-NAME comes back as response metadata
x-echo-NAME and as a trailer x-trail-NAME, same value (-bin keys too).

Run by ingressd (a spawn deployment), or by hand:
    python3 python/examples/grpc_echo.py --listen 127.0.0.1:9000
"""
import asyncio
import os
import sys

# The package lives next to this directory; an installed copy is not needed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(
    __file__))))

from ingressd_replica import serve  # noqa: E402
from ingressd_replica.grpc import GrpcService, StatusCode, abort  # noqa: E402

svc = GrpcService()
cancels = 0


def echo_metadata(ctx):
    for name, value in ctx.metadata.items():
        name = name.lower()
        if name.startswith("x-echo-"):
            ctx.set_header(name, value)
            ctx.set_trailer("x-trail-" + name[len("x-echo-"):], value)


@svc.unary("/ingressd.example.Echo/Unary")
async def unary(msg, ctx):
    echo_metadata(ctx)
    return msg


@svc.server_stream("/ingressd.example.Echo/ServerStream")
async def server_stream(msg, ctx):
    echo_metadata(ctx)
    for _ in range(3):
        yield msg


@svc.client_stream("/ingressd.example.Echo/ClientStream")
async def client_stream(messages, ctx):
    echo_metadata(ctx)
    return b"".join([m async for m in messages])


@svc.bidi_stream("/ingressd.example.Echo/BidiStream")
async def bidi_stream(messages, ctx):
    global cancels
    echo_metadata(ctx)
    try:
        async for m in messages:
            yield m
    except asyncio.CancelledError:
        cancels += 1
        raise


@svc.unary("/ingressd.example.Echo/Abort")
async def abort_call(msg, ctx):
    abort(StatusCode.INVALID_ARGUMENT,
          "aborted: " + msg[:200].decode("utf-8", "replace"))



@svc.unary("/ingressd.example.Echo/Stats")
async def stats(msg, ctx):
    return b"cancels=%d" % cancels


if __name__ == "__main__":
    serve(svc.handler)
