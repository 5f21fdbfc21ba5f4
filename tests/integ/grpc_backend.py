"""A grpcio server for the h2c upstream tests (run with /usr/bin/python3):
generic handlers on raw bytes, no code generation.

	grpc_backend.py PORT NAME EVENTS_FILE [CERT KEY]

Methods under /t.S/: Unary (echoes the request; initial metadata x-init,
trailing metadata the client's x-md and x-md-bin back), ServerStream (the
request 3 times), ClientStream (the requests joined), Bidi (each request
back), Abort (INVALID_ARGUMENT "bad thing"), Slow (up to 10 s, noting in
EVENTS_FILE "cancelled TAG" when the call is cancelled, TAG from x-tag),
Who (answers NAME).  SIGTERM: stop with a 5 s grace (GOAWAY, in-flight
calls finish).  With CERT and KEY it serves over TLS
(grpc.ssl_server_credentials, ALPN h2) instead of h2c."""

import signal
import sys
import threading
import time

import grpc

port, name, events = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lock = threading.Lock()


def note(line):
	with lock, open(events, "a") as f:
		f.write(line + "\n")


def md(context):
	return dict(context.invocation_metadata())


def unary(req, context):
	m = md(context)
	context.send_initial_metadata((("x-init", "1"),))
	trail = [("x-trail", "done")]
	if "x-md" in m:
		trail.append(("x-md", m["x-md"]))
	if "x-md-bin" in m:
		trail.append(("x-md-bin", m["x-md-bin"]))
	context.set_trailing_metadata(tuple(trail))
	return req


def server_stream(req, context):
	for _ in range(3):
		yield req


def client_stream(it, context):
	return b"".join(it)


def bidi(it, context):
	for r in it:
		yield r


def abort(req, context):
	context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad thing")


def slow(req, context):
	tag = md(context).get("x-tag", "")
	done = threading.Event()
	context.add_callback(lambda: done.set())
	note("started " + tag)
	end = time.monotonic() + float(req.decode() or "10")
	while time.monotonic() < end:
		if not context.is_active() or done.is_set():
			note("cancelled " + tag)
			return b""
		time.sleep(0.02)
	note("finished " + tag)
	return name.encode()


def who(req, context):
	return name.encode()


H = grpc.unary_unary_rpc_method_handler
handlers = {
	"Unary": H(unary),
	"ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
	"ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
	"Bidi": grpc.stream_stream_rpc_method_handler(bidi),
	"Abort": H(abort),
	"Slow": H(slow),
	"Who": H(who),
}

server = grpc.server(__import__("concurrent.futures").futures
    .ThreadPoolExecutor(max_workers=200),
    options=[("grpc.so_reuseport", 0)])
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
    "t.S", handlers),))
if len(sys.argv) > 5:
	with open(sys.argv[4], "rb") as f:
		cert = f.read()
	with open(sys.argv[5], "rb") as f:
		key = f.read()
	server.add_secure_port("127.0.0.1:%d" % port,
	    grpc.ssl_server_credentials(((key, cert),)))
else:
	server.add_insecure_port("127.0.0.1:%d" % port)
server.start()
stopped = threading.Event()


def on_term(sig, frame):
	threading.Thread(target=lambda: (server.stop(5).wait(),
	    stopped.set())).start()


signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
while not stopped.wait(0.2):
	pass
