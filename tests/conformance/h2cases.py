"""
h2cases.py -- the HTTP/2 section of the conformance suite (RFC 9113), with
python3-h2 as the client (its own header validation off, so it sends what a
broken or hostile client would).  Each case opens an h2c connection (prior
knowledge), sends one request, and compares what came back -- a response
status, RST_STREAM or GOAWAY with its code -- and how many requests reached
the upstream with what RFC 9113 asks.  The connection must then still serve
a good request unless the case ends it.

Run by run.py for a proxy that speaks h2c on its listener (--h2; on by
default with --ingressd).
"""

import socket
import time

import h2.config
import h2.connection
import h2.events

PROTOCOL_ERROR = 1

# (id, title, rfc, extra fields or (name, value) list replacing the head,
#  DATA or None, expected: "rst:CODE" | "status:N" | "goaway:CODE", fwd).
# fwd None: not asserted -- a streaming proxy forwards the head before the
# DATA that breaks content-length arrives, then cuts the request (CANCEL).
BASE = [(":method", "GET"), (":scheme", "http"), (":authority", "example.com"),
    (":path", "/h2")]


def head(drop=(), add=(), replace=None):
	hs = [h for h in (replace or BASE) if h[0] not in drop]
	return hs + list(add)


CASES = [
	("h2-ok", "a plain GET over h2c", "9113 8.3", head(), None,
	    "status:200", 1),
	("h2-no-method", "no :method", "9113 8.3.1", head(drop=(":method",)),
	    None, "rst:1", 0),
	("h2-no-path", "no :path", "9113 8.3.1", head(drop=(":path",)), None,
	    "rst:1", 0),
	("h2-uppercase-name", "an upper-case field name", "9113 8.2.1",
	    head(add=[("X-Upper", "1")]), None, "rst:1", 0),
	("h2-connection-field", "connection: keep-alive", "9113 8.2.2",
	    head(add=[("connection", "keep-alive")]), None, "rst:1", 0),
	("h2-transfer-encoding", "transfer-encoding: chunked", "9113 8.2.2",
	    head(add=[("transfer-encoding", "chunked")]), None, "rst:1", 0),
	("h2-te-gzip", "te other than trailers", "9113 8.2.2",
	    head(add=[("te", "gzip")]), None, "rst:1", 0),
	("h2-te-trailers", "te: trailers is allowed", "9113 8.2.2",
	    head(add=[("te", "trailers")]), None, "status:200", 1),
	("h2-pseudo-after-regular", "a pseudo-header after a regular field",
	    "9113 8.3", [(":method", "GET"), (":scheme", "http"),
	    (":authority", "example.com"), ("x-a", "1"), (":path", "/h2")],
	    None, "rst:1", 0),
	("h2-cl-longer", "content-length larger than the DATA", "9113 8.1.1",
	    head(replace=[(":method", "POST")] + BASE[1:],
	    add=[("content-length", "10")]), b"abc", "rst:1", None),
	("h2-cl-shorter", "content-length smaller than the DATA",
	    "9113 8.1.1", head(replace=[(":method", "POST")] + BASE[1:],
	    add=[("content-length", "2")]), b"abc", "rst:1", None),
]


class H2Result:
	"""What run.py's report and JSON need of a result."""

	def __init__(self, cid, title, rfc, expect):
		self.case = type("C", (), {"id": cid, "group": "http2",
		    "title": title, "rfc": rfc, "expect": expect})()
		self.verdict, self.why, self.got = "FAIL", "", "nothing"
		self.statuses, self.conn, self.fwd = [], "?", -1
		self.seconds = 0.0

	def actual(self):
		return "%s fwd=%d" % (self.got, self.fwd)


def exchange(host, port, hdrs, body, timeout=3.0):
	"""One stream on a fresh connection: (what ended it, the connection
	still serves a second request)."""
	cfg = h2.config.H2Configuration(client_side=True,
	    validate_outbound_headers=False, normalize_outbound_headers=False,
	    validate_inbound_headers=False)
	conn = h2.connection.H2Connection(config=cfg)
	s = socket.create_connection((host, port), timeout=timeout)
	try:
		conn.initiate_connection()
		conn.send_headers(1, hdrs, end_stream=body is None)
		if body is not None:
			conn.send_data(1, body, end_stream=True)
		s.sendall(conn.data_to_send())
		got = read_until(s, conn, 1, timeout)
		if got.startswith("goaway"):
			return got, False
		conn.send_headers(3, BASE, end_stream=True)
		s.sendall(conn.data_to_send())
		return got, read_until(s, conn, 3, timeout) == "status:200"
	finally:
		s.close()


def read_until(s, conn, sid, timeout):
	deadline = time.monotonic() + timeout
	status = None
	while time.monotonic() < deadline:
		try:
			data = s.recv(65536)
		except socket.timeout:
			break
		if not data:
			return "closed"
		for ev in conn.receive_data(data):
			if isinstance(ev, h2.events.ResponseReceived) and \
			    ev.stream_id == sid:
				status = dict(ev.headers).get(b":status", b"?")
			elif isinstance(ev, h2.events.StreamReset) and \
			    ev.stream_id == sid:
				return "rst:%d" % ev.error_code
			elif isinstance(ev, h2.events.ConnectionTerminated):
				return "goaway:%d" % ev.error_code
			elif isinstance(ev, h2.events.DataReceived):
				conn.acknowledge_received_data(
				    ev.flow_controlled_length, ev.stream_id)
			elif isinstance(ev, h2.events.StreamEnded) and \
			    ev.stream_id == sid:
				s.sendall(conn.data_to_send())
				return "status:%s" % status.decode()
		s.sendall(conn.data_to_send())
	return "status:%s" % status.decode() if status else "nothing"


def run_h2(args, rec, k=()):
	"""Every case (or those whose id contains one of k), printed as
	run.py prints its own; a list of H2Result."""
	out = []
	for cid, title, rfc, hdrs, body, expect, fwd in CASES:
		if k and not any(x in cid for x in k):
			continue
		r = H2Result(cid, title, rfc, expect)
		t0 = time.monotonic()
		before = rec.count()
		try:
			r.got, alive = exchange(args.host, args.port, hdrs, body)
		except OSError as e:
			r.why, alive = "error: %r" % e, False
		time.sleep(0.05)
		r.fwd = rec.count() - before - (1 if alive else 0)
		r.conn = "open" if alive else "closed"
		r.seconds = time.monotonic() - t0
		if r.got != expect:
			r.why = r.why or "expected %s" % expect
		elif not alive:
			r.why = "the connection did not serve the next request"
		elif fwd is not None and r.fwd != fwd:
			r.why = "expected fwd=%d" % fwd
		else:
			r.verdict = "PASS"
		line = "%-5s %-36s %s" % (r.verdict, cid, r.actual())
		if r.verdict != "PASS":
			line += "  -- " + r.why
		print(line, flush=True)
		out.append(r)
	return out
