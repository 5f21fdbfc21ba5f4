#!/usr/bin/env python3
"""
echo_server.py -- an HTTP/1.1 origin that records what a proxy sends it.

The upstream for the conformance suite when the proxy under test speaks
HTTP to its backends (nginx, HAProxy).  Every request it reads is recorded
(Record: method, target, headers as received, body, complete) and answered
like replica-echo answers behind ingressd, so the suite reads both the same
way:

    200 application/json
    {"method", "path", "query", "headers": {lowercased name: value, repeats
     joined with ", "}, "body_length", "body" (when UTF-8, at most 64 KiB)}

"?status=NNN" in the target sets the status.  Header values are decoded as
Latin-1, as replica-echo does for bytes that are not UTF-8.

It is strict about what it reads (the proxy must send clean HTTP/1.1): a head
it cannot parse is recorded as a protocol error and the connection closed.

    python3 echo_server.py --listen 127.0.0.1:9000     standalone
    EchoServer("127.0.0.1", 0).start()                 in-process
"""

import argparse
import json
import socket
import threading
import time

MAX_HEAD = 1 << 20
BODY_IN_JSON = 65536


class Record:
	"""One request as the upstream saw it."""

	def __init__(self, method, target, version, headers):
		self.method = method
		self.target = target
		self.version = version
		self.headers = headers		# [(name, value)] as received
		self.body = b""
		self.complete = False		# the whole body was read
		self.t = time.monotonic()

	def header(self, name):
		name = name.lower()
		vals = [v for k, v in self.headers if k.lower() == name]
		return ", ".join(vals) if vals else None


class _Conn:
	def __init__(self, server, sock):
		self.server = server
		self.sock = sock
		self.buf = bytearray()

	def fill(self):
		d = self.sock.recv(65536)
		if not d:
			raise EOFError
		self.buf += d

	def line(self):
		while True:
			i = self.buf.find(b"\n")
			if i >= 0:
				if i == 0 or self.buf[i - 1] != 0x0d:
					raise ValueError("bare LF")
				ln = bytes(self.buf[:i - 1])
				del self.buf[:i + 1]
				return ln
			if len(self.buf) > MAX_HEAD:
				raise ValueError("line too long")
			self.fill()

	def exact(self, n):
		while len(self.buf) < n:
			self.fill()
		d = bytes(self.buf[:n])
		del self.buf[:n]
		return d

	def head(self):
		line = self.line()
		while line == b"":
			line = self.line()
		parts = line.decode("latin-1").split(" ")
		if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
			raise ValueError("bad request line %r" % line)
		headers = []
		for _ in range(10000):
			ln = self.line()
			if ln == b"":
				break
			k, sep, v = ln.decode("latin-1").partition(":")
			if not sep or not k or k != k.strip():
				raise ValueError("bad header line %r" % ln)
			headers.append((k, v.strip(" \t")))
		return Record(parts[0], parts[1], parts[2], headers)

	def body(self, rec):
		te = (rec.header("transfer-encoding") or "").lower()
		cl = rec.header("content-length")
		if te:
			if te.replace(" ", "").split(",")[-1] != "chunked":
				raise ValueError("transfer-encoding %r" % te)
			out = bytearray()
			while True:
				size = int(self.line().split(b";")[0], 16)
				if size == 0:
					while self.line() != b"":
						pass
					break
				out += self.exact(size)
				if self.exact(2) != b"\r\n":
					raise ValueError("chunk without CRLF")
			rec.body = bytes(out)
		elif cl is not None:
			n = int(cl)
			while len(rec.body) < n:
				want = min(n - len(rec.body), 65536)
				if not self.buf:
					self.fill()
				take = min(want, len(self.buf))
				rec.body += bytes(self.buf[:take])
				del self.buf[:take]
		rec.complete = True

	def respond(self, rec):
		path, _, query = rec.target.partition("?")
		hdrs = {}
		for k, v in rec.headers:
			k = k.lower()
			hdrs[k] = hdrs[k] + ", " + v if k in hdrs else v
		doc = {"method": rec.method, "path": path, "query": query,
		    "headers": hdrs, "body_length": len(rec.body)}
		if len(rec.body) <= BODY_IN_JSON:
			try:
				doc["body"] = rec.body.decode("utf-8")
			except UnicodeDecodeError:
				pass
		status = 200
		for kv in query.split("&"):
			if kv.startswith("status="):
				try:
					status = int(kv[7:])
				except ValueError:
					pass
		body = json.dumps(doc).encode()
		close = rec.version == "HTTP/1.0" or "close" in \
		    (rec.header("connection") or "").lower()
		head = "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n" \
		    "Content-Length: %d\r\n%s\r\n" % (status, len(body),
		    "Connection: close\r\n" if close else "")
		self.sock.sendall(head.encode() + (b"" if rec.method == "HEAD"
		    else body))
		return not close

	def run(self):
		try:
			while True:
				rec = self.head()
				self.server.record(rec)
				if "100-continue" in (rec.header("expect") or
				    "").lower():
					self.sock.sendall(b"HTTP/1.1 100 Continue"
					    b"\r\n\r\n")
				self.body(rec)
				if not self.respond(rec):
					break
		except (EOFError, OSError):
			pass
		except (ValueError, UnicodeDecodeError) as e:
			self.server.protocol_error(str(e))
		finally:
			try:
				self.sock.close()
			except OSError:
				pass


class EchoServer:
	"""A threaded recording echo origin on host:port (0: any port)."""

	def __init__(self, host="127.0.0.1", port=0):
		self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
		self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		self.lsock.bind((host, port))
		self.lsock.listen(512)
		self.port = self.lsock.getsockname()[1]
		self.lock = threading.Lock()
		self.records = []
		self.errors = []
		self.stopping = False

	def record(self, rec):
		with self.lock:
			self.records.append(rec)

	def protocol_error(self, why):
		with self.lock:
			self.errors.append(why)

	def count(self):
		with self.lock:
			return len(self.records)

	def since(self, n):
		with self.lock:
			return list(self.records[n:])

	def _accept(self):
		while not self.stopping:
			try:
				s, _ = self.lsock.accept()
			except OSError:
				return
			c = _Conn(self, s)
			threading.Thread(target=c.run, daemon=True).start()

	def start(self):
		threading.Thread(target=self._accept, daemon=True).start()
		return self

	def stop(self):
		self.stopping = True
		try:
			self.lsock.close()
		except OSError:
			pass


def main():
	ap = argparse.ArgumentParser(description="recording HTTP echo origin")
	ap.add_argument("--listen", default="127.0.0.1:9000")
	a = ap.parse_args()
	host, port = a.listen.rsplit(":", 1)
	srv = EchoServer(host, int(port)).start()
	print("echo_server listening on %s:%d" % (host, srv.port), flush=True)
	try:
		while True:
			time.sleep(3600)
	except KeyboardInterrupt:
		srv.stop()


if __name__ == "__main__":
	main()
