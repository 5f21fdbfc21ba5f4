"""A plain HTTP/1.1 origin for the HTTP upstream tests: Python's
ThreadingHTTPServer, run as its own process (so a test can SIGKILL it),
reporting what it sees as JSON lines in --report.

  http_origin.py --port N --report FILE [--health-file FILE]

GET /hello          JSON: the connection's number, path, headers
GET /health         200, or 503 while --health-file holds "fail"
GET /slow?s=S       answers after S seconds, or reports "client_closed"
                    as soon as the proxy closes the connection meanwhile
GET /big?n=N        N bytes of body (Content-Length), written in 64 KiB
POST /upload?rate=R reads the body (Content-Length or chunked) at about
                    R bytes/s and answers its length and sha256
Events: listening, conn (a connection accepted), request, health,
client_closed, closed (a connection ended).
"""

import argparse
import hashlib
import http.server
import itertools
import json
import os
import select
import socket
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()
CONN_IDS = itertools.count(1)
ARGS = None


def report(event, **kw):
	kw["event"] = event
	kw["t"] = time.time()
	with LOCK:
		with open(ARGS.report, "a") as f:
			f.write(json.dumps(kw) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
	protocol_version = "HTTP/1.1"

	def setup(self):
		super().setup()
		self.conn_id = next(CONN_IDS)
		report("conn", conn=self.conn_id)

	def finish(self):
		try:
			super().finish()
		finally:
			report("closed", conn=self.conn_id)

	def log_message(self, fmt, *args):
		pass

	def send_body(self, status, body, ctype="application/json"):
		self.send_response(status)
		self.send_header("Content-Type", ctype)
		self.send_header("Content-Length", str(len(body)))
		self.end_headers()
		self.wfile.write(body)

	def do_GET(self):
		u = urllib.parse.urlsplit(self.path)
		q = urllib.parse.parse_qs(u.query)
		if u.path != "/health":
			report("request", conn=self.conn_id, path=self.path)
		if u.path == "/health":
			ok = True
			if ARGS.health_file and os.path.exists(ARGS.health_file):
				with open(ARGS.health_file) as f:
					ok = f.read().strip() != "fail"
			report("health", conn=self.conn_id, ok=ok)
			self.send_body(200 if ok else 503, b"ok\n" if ok else
			    b"failing\n", "text/plain")
		elif u.path == "/hello":
			body = json.dumps({"conn": self.conn_id, "path": self.path,
			    "port": ARGS.port,
			    "headers": {k.lower(): v for k, v in
			    self.headers.items()}}).encode()
			self.send_body(200, body)
		elif u.path == "/slow":
			self.slow(float(q.get("s", ["1"])[0]))
		elif u.path == "/big":
			self.big(int(q.get("n", ["0"])[0]))
		else:
			self.send_body(404, b"no such path\n", "text/plain")

	def slow(self, seconds):
		"""Wait, watching for the proxy to give up (EOF)."""
		deadline = time.monotonic() + seconds
		sock = self.connection
		while time.monotonic() < deadline:
			r, _, _ = select.select([sock], [], [],
			    max(0.0, min(0.05, deadline - time.monotonic())))
			if r:
				try:
					d = sock.recv(1, socket.MSG_PEEK)
				except OSError:
					d = b""
				if not d:
					report("client_closed", conn=self.conn_id,
					    path=self.path)
					self.close_connection = True
					return
		self.send_body(200, b'{"slept": true}')

	def big(self, n):
		self.send_response(200)
		self.send_header("Content-Type", "application/octet-stream")
		self.send_header("Content-Length", str(n))
		self.end_headers()
		block = b"x" * 65536
		left = n
		try:
			while left > 0:
				k = min(left, len(block))
				self.wfile.write(block[:k])
				left -= k
		except OSError:
			report("client_closed", conn=self.conn_id, path=self.path)
			self.close_connection = True

	def read_body(self, rate):
		"""The request body, Content-Length or chunked, at rate B/s."""
		h = hashlib.sha256()
		total = 0
		t0 = time.monotonic()

		def take(k):
			nonlocal total
			d = self.rfile.read(k)
			h.update(d)
			total += len(d)
			if rate > 0:
				ahead = total / rate - (time.monotonic() - t0)
				if ahead > 0:
					time.sleep(ahead)
			return len(d)
		if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
			while True:
				size = int(self.rfile.readline().split(b";")[0], 16)
				if size == 0:
					while self.rfile.readline() not in (b"\r\n", b""):
						pass
					break
				left = size
				while left > 0:
					left -= take(min(left, 65536))
				self.rfile.readline()
		else:
			left = int(self.headers.get("Content-Length", "0"))
			while left > 0:
				got = take(min(left, 65536))
				if got == 0:
					break
				left -= got
		return total, h.hexdigest()

	def do_POST(self):
		u = urllib.parse.urlsplit(self.path)
		q = urllib.parse.parse_qs(u.query)
		report("request", conn=self.conn_id, path=self.path)
		n, digest = self.read_body(float(q.get("rate", ["0"])[0]))
		self.send_body(200, json.dumps({"length": n,
		    "sha256": digest}).encode())


def main():
	global ARGS
	p = argparse.ArgumentParser()
	p.add_argument("--port", type=int, required=True)
	p.add_argument("--report", required=True)
	p.add_argument("--health-file")
	ARGS = p.parse_args()
	srv = http.server.ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
	srv.daemon_threads = True
	report("listening", port=ARGS.port)
	try:
		srv.serve_forever(poll_interval=0.05)
	except KeyboardInterrupt:
		pass
	return 0


if __name__ == "__main__":
	sys.exit(main())
