#!/usr/bin/env python3
"""plain_echo.py -- the echo of python/examples/echo.py as a plain Python
HTTP/1.1 server, without ingressd: the baseline bench/python.sh compares the
Python replica against.  Same JSON, same work per request.

    python3 python/bench/plain_echo.py --mode asyncio   --listen 127.0.0.1:9000
    python3 python/bench/plain_echo.py --mode threading --listen 127.0.0.1:9000

asyncio: one asyncio.Protocol, keep-alive, Content-Length bodies (enough for
the benchmark; it is not a general HTTP server).  threading: the standard
library's http.server.ThreadingHTTPServer with protocol_version HTTP/1.1.
Stops on SIGTERM or SIGINT.
"""
import argparse
import asyncio
import http.server
import json
import signal
import sys
import threading

BODY_MAX = 65536
HELLO = False  # --hello: answer "Hello world!" instead of the echo


def describe(method, target, headers, body):
	path, _, query = target.partition("?")
	h = {}
	for name, value in headers:
		name = name.lower()
		h[name] = h[name] + ", " + value if name in h else value
	out = {"method": method, "path": path, "query": query, "headers": h,
	    "body_length": len(body)}
	if len(body) <= BODY_MAX:
		try:
			out["body"] = body.decode("utf-8")
		except UnicodeDecodeError:
			pass
	out.update(replica="plain", deployment="", request_id="",
	    conn_pings=0)
	return json.dumps(out, separators=(",", ":")).encode()


class EchoProtocol(asyncio.Protocol):
	def connection_made(self, t):
		self.t = t
		self.buf = b""

	def data_received(self, data):
		self.buf += data
		while True:
			end = self.buf.find(b"\r\n\r\n")
			if end < 0:
				return
			lines = self.buf[:end].decode("latin-1").split("\r\n")
			method, target, version = lines[0].split(" ", 2)
			headers = []
			length = 0
			close = version == "HTTP/1.0"
			for ln in lines[1:]:
				k, _, v = ln.partition(":")
				v = v.strip()
				headers.append((k, v))
				kl = k.lower()
				if kl == "content-length":
					length = int(v)
				elif kl == "connection":
					close = v.lower() == "close"
			if len(self.buf) < end + 4 + length:
				return
			body = self.buf[end + 4:end + 4 + length]
			self.buf = self.buf[end + 4 + length:]
			if HELLO:
				self.t.write(b"HTTP/1.1 200 OK\r\ncontent-type: "
				    b"text/plain; charset=utf-8\r\n"
				    b"content-length: 12\r\n\r\nHello world!")
			else:
				out = describe(method, target, headers, body)
				self.t.write(b"HTTP/1.1 200 OK\r\ncontent-type: "
				    b"application/json\r\ncontent-length: "
				    b"%d\r\n\r\n" % len(out) + out)
			if close:
				self.t.close()
				return


async def serve_asyncio(host, port):
	loop = asyncio.get_running_loop()
	server = await loop.create_server(EchoProtocol, host, port,
	    reuse_address=True, backlog=1024)
	stop = asyncio.Event()
	for sig in (signal.SIGTERM, signal.SIGINT):
		loop.add_signal_handler(sig, stop.set)
	await stop.wait()
	server.close()


class Handler(http.server.BaseHTTPRequestHandler):
	protocol_version = "HTTP/1.1"
	# One write per response and no Nagle: unbuffered, the head and the
	# body go out in two writes and wait on delayed ACKs (40 ms each).
	wbufsize = 65536
	disable_nagle_algorithm = True

	def handle_one(self):
		n = int(self.headers.get("content-length") or 0)
		body = self.rfile.read(n) if n else b""
		out = describe(self.command, self.path, self.headers.items(),
		    body)
		self.send_response(200)
		self.send_header("content-type", "application/json")
		self.send_header("content-length", str(len(out)))
		self.end_headers()
		self.wfile.write(out)

	do_GET = do_POST = do_PUT = handle_one

	def log_message(self, *args):
		pass


class Server(http.server.ThreadingHTTPServer):
	daemon_threads = True
	request_queue_size = 1024

	def handle_error(self, request, client_address):
		# wrk resets its connections when a run ends: not news.
		if not isinstance(sys.exc_info()[1], ConnectionError):
			http.server.ThreadingHTTPServer.handle_error(self,
			    request, client_address)


def serve_threading(host, port):
	srv = Server((host, port), Handler)
	signal.signal(signal.SIGTERM, lambda *a: threading.Thread(
	    target=srv.shutdown).start())
	try:
		srv.serve_forever()
	except KeyboardInterrupt:
		pass
	srv.server_close()


def main():
	ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
	ap.add_argument("--mode", choices=("asyncio", "threading"),
	    default="asyncio")
	ap.add_argument("--listen", default="127.0.0.1:9000")
	ap.add_argument("--hello", action="store_true",
	    help='answer "Hello world!" (asyncio mode only)')
	a = ap.parse_args()
	global HELLO
	HELLO = a.hello
	host, _, port = a.listen.rpartition(":")
	if a.mode == "asyncio":
		asyncio.run(serve_asyncio(host, int(port)))
	else:
		serve_threading(host, int(port))
	return 0


if __name__ == "__main__":
	sys.exit(main())
