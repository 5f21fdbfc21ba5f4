"""
client.py -- a raw HTTP/1.1 client for the conformance suite.

It writes exactly the bytes a case gives it and reads whatever comes back
itself: responses framed by Content-Length, chunked or the close, 1xx
interim responses, HEAD, and the connection state afterwards.  A peer that
resets the connection is treated as a close; bytes that do not parse as a
response are kept as `junk`, never silently dropped.
"""

import json
import socket
import time


class Closed(Exception):
	"""The peer closed (EOF or reset) before a complete response."""


class Response:
	def __init__(self):
		self.status = 0
		self.reason = ""
		self.version = ""
		self.headers = []
		self.body = b""
		self.interim = []		# 1xx statuses before this one

	def header(self, name):
		name = name.lower()
		for k, v in self.headers:
			if k.lower() == name:
				return v
		return None

	def echo(self):
		"""The upstream's JSON description of what it received, or
		None when this response is not one."""
		if self.status < 200 or self.status >= 300:
			return None
		try:
			d = json.loads(self.body.decode("utf-8"))
		except (UnicodeDecodeError, ValueError):
			return None
		return d if isinstance(d, dict) and "method" in d else None

	def __repr__(self):
		return "<%d %s %r>" % (self.status, self.reason, self.body[:80])


class Conn:
	def __init__(self, host, port, timeout=5.0):
		self.sock = socket.create_connection((host, port), timeout=timeout)
		self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
		self.buf = bytearray()
		self.eof = False
		self.timeout = timeout

	def close(self):
		try:
			self.sock.close()
		except OSError:
			pass

	def send(self, data):
		"""Send; a peer that already closed is not an error here (what
		it answered is still read)."""
		try:
			self.sock.sendall(data)
			return True
		except OSError:
			return False

	def shutdown_write(self):
		try:
			self.sock.shutdown(socket.SHUT_WR)
		except OSError:
			pass

	def _fill(self, deadline):
		if self.eof:
			raise Closed()
		left = deadline - time.monotonic()
		if left <= 0:
			raise socket.timeout()
		self.sock.settimeout(left)
		try:
			d = self.sock.recv(262144)
		except (ConnectionResetError, BrokenPipeError):
			d = b""
		if not d:
			self.eof = True
			raise Closed()
		self.buf += d

	def _line(self, deadline):
		while True:
			i = self.buf.find(b"\r\n")
			if i >= 0:
				ln = bytes(self.buf[:i])
				del self.buf[:i + 2]
				return ln
			if len(self.buf) > 1 << 20:
				raise ValueError("response line too long")
			self._fill(deadline)

	def _exact(self, n, deadline):
		while len(self.buf) < n:
			self._fill(deadline)
		d = bytes(self.buf[:n])
		del self.buf[:n]
		return d

	def _head(self, deadline):
		r = Response()
		line = self._line(deadline).decode("latin-1")
		parts = line.split(" ", 2)
		if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or \
		    not parts[1].isdigit():
			raise ValueError("bad status line %r" % line)
		r.version = parts[0]
		r.status = int(parts[1])
		r.reason = parts[2] if len(parts) > 2 else ""
		while True:
			ln = self._line(deadline)
			if not ln:
				return r
			k, sep, v = ln.decode("latin-1").partition(":")
			if not sep:
				raise ValueError("bad header line %r" % ln)
			r.headers.append((k.strip(), v.strip(" \t")))

	def read_response(self, method="GET", timeout=None):
		"""One final response (1xx are collected in .interim).
		Raises Closed, socket.timeout or ValueError."""
		deadline = time.monotonic() + (timeout or self.timeout)
		interim = []
		while True:
			r = self._head(deadline)
			if 100 <= r.status < 200:
				interim.append(r.status)
				continue
			break
		r.interim = interim
		te = (r.header("transfer-encoding") or "").lower()
		cl = r.header("content-length")
		if method == "HEAD" or r.status in (204, 304):
			pass
		elif "chunked" in te:
			out = bytearray()
			while True:
				size = int(self._line(deadline).split(b";")[0],
				    16)
				if size == 0:
					break
				out += self._exact(size, deadline)
				self._exact(2, deadline)
			while self._line(deadline):
				pass
			r.body = bytes(out)
		elif cl is not None:
			r.body = self._exact(int(cl), deadline)
		else:
			try:
				while True:
					self._fill(deadline)
			except Closed:
				pass
			r.body = bytes(self.buf)
			self.buf.clear()
		return r

	def read_interim(self, timeout):
		"""A 1xx status if one arrives within timeout, else None (any
		final response is left in the buffer)."""
		deadline = time.monotonic() + timeout
		try:
			while b"\r\n\r\n" not in self.buf:
				self._fill(deadline)
		except (socket.timeout, Closed):
			return None
		head = bytes(self.buf).split(b"\r\n", 1)[0]
		parts = head.split(b" ")
		if len(parts) >= 2 and parts[1][:1] == b"1":
			end = self.buf.find(b"\r\n\r\n")
			del self.buf[:end + 4]
			return int(parts[1])
		return None

	def wait_closed(self, timeout):
		"""True when the peer closes within timeout; bytes that arrive
		meanwhile stay in the buffer."""
		deadline = time.monotonic() + timeout
		try:
			while True:
				self._fill(deadline)
		except Closed:
			return True
		except socket.timeout:
			return False
