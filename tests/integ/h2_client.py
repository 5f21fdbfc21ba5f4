"""h2_client.py -- a raw HTTP/2 client for the HTTP/2 edge's tests: frames
built and read by hand (RFC 9113 section 4), headers encoded with hpack
(python3-hpack, which python3-h2 brings), so a test can send what no
well-behaved client would and see every frame the daemon answers."""

import socket
import struct
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, \
    GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4

NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0, 1, 2, 3
STREAM_CLOSED, REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM = 5, 7, 8, 11


def frame(ftype, flags, sid, payload=b""):
	return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
	    struct.pack(">I", sid) + payload


class Frame:
	def __init__(self, ftype, flags, sid, payload):
		self.type, self.flags, self.sid, self.payload = \
		    ftype, flags, sid, payload

	def error_code(self):
		"""RST_STREAM's or GOAWAY's error code."""
		if self.type == RST_STREAM:
			return struct.unpack(">I", self.payload[:4])[0]
		return struct.unpack(">I", self.payload[4:8])[0]

	def __repr__(self):
		return "Frame(type=%d flags=%#x sid=%d len=%d)" % (
		    self.type, self.flags, self.sid, len(self.payload))


class H2:
	"""One connection: send frames, read frames, decode header blocks."""

	def __init__(self, port, preface=PREFACE, settings=True, timeout=5.0):
		self.sock = socket.create_connection(("127.0.0.1", port),
		    timeout=timeout)
		self.enc = hpack.Encoder()
		self.dec = hpack.Decoder()
		self.dec.max_allowed_table_size = 65536
		self.buf = b""
		self.closed = False
		self.frames = []
		if preface:
			self.sock.sendall(preface)
		if settings:
			self.send(frame(SETTINGS, 0, 0))

	def close(self):
		self.sock.close()

	def send(self, data):
		self.sock.sendall(data)

	def headers(self, sid, hdrs, end_stream=True, end_headers=True):
		block = self.enc.encode(hdrs)
		parts = [block[i:i + 16384] for i in range(0, len(block), 16384)]
		out = []
		for i, p in enumerate(parts):
			last = i == len(parts) - 1
			flags = (END_HEADERS if last and end_headers else 0)
			if i == 0 and end_stream:
				flags |= END_STREAM
			out.append(frame(HEADERS if i == 0 else CONTINUATION,
			    flags, sid, p))
		self.send(b"".join(out))

	def request(self, sid, path, method="GET", extra=(), authority=
	    "localhost", end_stream=True):
		hdrs = [(":method", method), (":scheme", "http"),
		    (":authority", authority), (":path", path)] + list(extra)
		self.headers(sid, hdrs, end_stream)

	def data(self, sid, payload, end_stream=True):
		self.send(frame(DATA, END_STREAM if end_stream else 0, sid,
		    payload))

	def read_frame(self, deadline):
		while len(self.buf) < 9 or len(self.buf) < 9 + \
		    int.from_bytes(self.buf[:3], "big"):
			left = deadline - time.monotonic()
			if left <= 0 or self.closed:
				return None
			self.sock.settimeout(left)
			try:
				chunk = self.sock.recv(65536)
			except socket.timeout:
				return None
			except ConnectionResetError:
				chunk = b""
			if not chunk:
				self.closed = True
				return None
			self.buf += chunk
		n = int.from_bytes(self.buf[:3], "big")
		f = Frame(self.buf[3], self.buf[4],
		    struct.unpack(">I", self.buf[5:9])[0] & 0x7fffffff,
		    self.buf[9:9 + n])
		self.buf = self.buf[9 + n:]
		if f.type == SETTINGS and not f.flags & ACK:
			self.send(frame(SETTINGS, ACK, 0))
		self.frames.append(f)
		return f

	def until(self, pred, timeout=5.0):
		"""Read frames until pred(frame) is true: that frame, or None
		at the timeout or the connection's close."""
		deadline = time.monotonic() + timeout
		while True:
			f = self.read_frame(deadline)
			if f is None or pred(f):
				return f

	def goaway(self, timeout=5.0):
		return self.until(lambda f: f.type == GOAWAY, timeout)

	def wait_closed(self, timeout=5.0):
		self.until(lambda f: False, timeout)
		return self.closed

	def response(self, sid, timeout=5.0):
		"""(headers dict, body, trailers dict or None, rst code or
		None) of stream sid, read to its end."""
		hdrs, body, trailers = None, b"", None
		deadline = time.monotonic() + timeout
		block = b""
		while True:
			f = self.read_frame(deadline)
			if f is None:
				raise AssertionError("stream %d: no end (frames %r)"
				    % (sid, self.frames[-5:]))
			if f.type == WINDOW_UPDATE or f.sid != sid:
				continue
			if f.type == RST_STREAM:
				return hdrs, body, trailers, f.error_code()
			if f.type in (HEADERS, CONTINUATION):
				block += self._block(f)
				if not f.flags & END_HEADERS:
					continue
				fields = dict((k.decode() if isinstance(k, bytes)
				    else k, v.decode() if isinstance(v, bytes)
				    else v) for k, v in self.dec.decode(block))
				block = b""
				if hdrs is None:
					hdrs = fields
				else:
					trailers = fields
			elif f.type == DATA:
				body += f.payload
				if f.payload:
					self.send(frame(WINDOW_UPDATE, 0, 0,
					    struct.pack(">I", len(f.payload))) +
					    frame(WINDOW_UPDATE, 0, sid,
					    struct.pack(">I", len(f.payload))))
			if f.flags & END_STREAM:
				return hdrs, body, trailers, None

	@staticmethod
	def _block(f):
		p = f.payload
		if f.type == HEADERS:
			pad = 0
			if f.flags & 0x8:
				pad = p[0]
				p = p[1:]
			if f.flags & 0x20:
				p = p[5:]
			if pad:
				p = p[:-pad]
		return p


def grpc_frame(msg):
	"""A gRPC length-prefixed message (uncompressed)."""
	return b"\x00" + struct.pack(">I", len(msg)) + msg
