"""
cases.py -- the conformance cases, as data.

A case is the exact bytes a client sends (or a small driver for timing),
and the outcome we require: the statuses of the responses in order, the
state of the connection afterwards ("closed", or "open": a probe request
on the same connection is answered; "stalled": open, but the probe got no
answer within 3 s), and how many requests reached the
upstream ("fwd": heads the replica or origin received; an int or a
(low, high) range).  `check` looks at what the upstream received, through
its echo of each request.  `alt` lists other outcomes that RFC 9112 also
allows (a proxy may normalise where we reject); the runner reports them as
ALT, which --strict (used for ingressd) counts as a failure.

The rules are those of docs/http.md; where RFC 9112 lets a server choose,
the case says so in `rfc`.
"""

GROUPS = ("conformance", "malformed", "smuggling", "limits", "slow")


class Outcome:
	def __init__(self, statuses, conn, fwd, check=None):
		self.statuses = list(statuses)
		self.conn = conn
		self.fwd = fwd if isinstance(fwd, tuple) else (fwd, fwd)
		self.check = check

	def __repr__(self):
		fwd = self.fwd[0] if self.fwd[0] == self.fwd[1] else \
		    "%d-%d" % self.fwd
		return "%s %s fwd=%s" % (self.statuses or "no response",
		    self.conn, fwd)


class Case:
	def __init__(self, cid, group, title, send, statuses, conn, fwd,
	    check=None, alt=(), rfc="", driver=None, needs=None,
	    read_timeout=3.0, xfail=None):
		self.id = cid
		self.group = group
		self.title = title
		self.send = send
		self.driver = driver
		self.expect = Outcome(statuses, conn, fwd, check)
		self.alt = list(alt)
		self.rfc = rfc
		self.needs = needs		# a ctx attribute that must be set
		self.read_timeout = read_timeout
		# Known to fail on ingressd until the daemon changes: the
		# reason names the change (reported XFAIL, not FAIL).
		self.xfail = xfail
		self.interim = None
		self.driver_fail = None		# set by a driver: failed


class Ctx:
	"""What the suite knows about the proxy under test."""

	def __init__(self, max_request_line=8192, max_header_bytes=32768,
	    max_headers=100, max_body=1048576, header_timeout=None,
	    body_timeout=None):
		self.max_request_line = max_request_line
		self.max_header_bytes = max_header_bytes
		self.max_headers = max_headers
		self.max_body = max_body
		self.header_timeout = header_timeout
		self.body_timeout = body_timeout


def req(method, target, headers=(), body=b"", version="HTTP/1.1",
    host="example.com"):
	"""Request bytes; headers are (name, value) pairs sent as given;
	Host first unless host is None."""
	lines = ["%s %s %s" % (method, target, version)]
	if host is not None:
		lines.append("Host: " + host)
	for k, v in headers:
		lines.append("%s: %s" % (k, v))
	return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked(*parts, trailer=b""):
	out = b""
	for p in parts:
		out += b"%x\r\n" % len(p) + p + b"\r\n"
	return out + b"0\r\n" + trailer + b"\r\n"


def post_te(target, te, body, host="example.com"):
	return req("POST", target, [("Transfer-Encoding", te)], body, host=host)


H = b"Host: example.com\r\n"

# --- checks on what the upstream received ---------------------------------


def echo_at(rs, i):
	if i >= len(rs):
		return None
	return rs[i].echo()


def want(i, **fields):
	"""The echo of response i has these fields (headers: a dict of
	lowercased name -> value, None meaning absent)."""
	def check(rs):
		e = echo_at(rs, i)
		if e is None:
			return "response %d is not an echo" % i
		for k, v in fields.items():
			if k == "headers":
				for hk, hv in v.items():
					got = e.get("headers", {}).get(hk)
					if got != hv:
						return "header %s: %r, want %r" % (
						    hk, got, hv)
			elif e.get(k) != v:
				return "%s: %r, want %r" % (k, e.get(k), v)
		return None
	return check


def all_of(*checks):
	def check(rs):
		for c in checks:
			why = c(rs)
			if why:
				return why
		return None
	return check


# --- drivers: cases that need timing ----------------------------------------


def drive_expect(conn, ctx, case):
	"""Expect: 100-continue: the body goes only after the 100 (or after
	a second, as clients do when none comes)."""
	conn.send(req("POST", "/c/expect", [("Content-Length", "5"),
	    ("Expect", "100-continue")]))
	case.interim = conn.read_interim(1.0)
	conn.send(b"hello")


def drive_keepalive_serial(conn, ctx, case):
	"""Ten requests one after the other on one connection."""
	out = []
	for i in range(10):
		conn.send(req("GET", "/c/serial/%d" % i))
		out.append(conn.read_response())
	return out


def _drip(conn, case, pieces, interval, limit):
	"""Send pieces one per interval until the proxy answers or closes.
	Not cut off within limit seconds: case.driver_fail says so."""
	import select
	import time
	t_end = time.monotonic() + limit
	for p in pieces:
		if time.monotonic() > t_end:
			break
		r, _, _ = select.select([conn.sock], [], [], interval)
		if r:
			return		# the proxy answered or closed: stop
		if not conn.send(p):
			return
	case.driver_fail = "still dripping after %.0fs: not cut off" % limit


def drive_header_drip(conn, ctx, case):
	"""Slowloris: a header line every 0.25 s, for longer than the
	header timeout."""
	conn.send(b"GET /t/drip HTTP/1.1\r\n" + H)
	pieces = [b"X-Drip-%d: x\r\n" % i for i in range(1000)]
	_drip(conn, case, pieces, 0.25, ctx.header_timeout + 2)


def drive_header_stall(conn, ctx, case):
	conn.send(b"GET /t/stall HTTP/1.1\r\n" + H + b"X-A: b\r\n")


def drive_body_stall(conn, ctx, case):
	conn.send(req("POST", "/t/body", [("Content-Length", "10")], b"abcde"))


def drive_body_drip(conn, ctx, case):
	"""A body byte every 0.25 s: each read is within the body timeout,
	the whole is not."""
	conn.send(req("POST", "/t/bodydrip", [("Content-Length", "1000")]))
	_drip(conn, case, [b"x"] * 1000, 0.25, ctx.body_timeout * 3 + 2)


def drive_nothing(conn, ctx, case):
	pass


def drive_chunked_over(conn, ctx, case):
	"""A chunked body that grows past max_body, sent piece by piece."""
	conn.send(post_te("/l/chunked-over", "chunked", b""))
	piece = b"x" * 65536
	total = 0
	while total <= ctx.max_body:
		if not conn.send(b"%x\r\n" % len(piece) + piece + b"\r\n"):
			return
		total += len(piece)
	conn.send(b"0\r\n\r\n")


# --- the cases ----------------------------------------------------------------


def conformance(ctx):
	g = "conformance"
	C = []

	def c(cid, title, send, statuses=(200,), conn="open", fwd=1,
	    check=None, **kw):
		C.append(Case(g + "." + cid, g, title, send, statuses, conn,
		    fwd, check, **kw))

	c("get", "simple GET is forwarded as sent",
	    req("GET", "/c/get"),
	    check=want(0, method="GET", path="/c/get",
	    headers={"host": "example.com"}))
	c("query", "path and query are forwarded unchanged",
	    req("GET", "/c/q?a=1&b=%20x&c"),
	    check=want(0, path="/c/q", query="a=1&b=%20x&c"))
	c("percent", "percent-encoding and dot segments are not rewritten",
	    req("GET", "/c/a%2Fb/%2e%2e/x"),
	    check=want(0, path="/c/a%2Fb/%2e%2e/x"))
	c("post-cl", "POST with Content-Length",
	    req("POST", "/c/post", [("Content-Length", "11")], b"hello world"),
	    check=want(0, method="POST", body="hello world", body_length=11))
	c("post-chunked", "POST chunked: the upstream gets the de-chunked body",
	    post_te("/c/chunked", "chunked", chunked(b"hello", b" world")),
	    check=want(0, body="hello world", body_length=11))
	c("chunked-trailer", "chunked with a trailer section",
	    post_te("/c/trailer", "chunked", chunked(b"abc",
	    trailer=b"X-Trailer: t\r\n")),
	    check=want(0, body="abc"))
	c("chunked-ext", "chunked with a chunk extension",
	    post_te("/c/ext", "chunked", b"5;name=value\r\nhello\r\n0\r\n\r\n"),
	    check=want(0, body="hello"))
	c("chunked-hex", "chunk size in upper-case hex with leading zeros",
	    post_te("/c/hex", "chunked", b"00A\r\n0123456789\r\n0\r\n\r\n"),
	    check=want(0, body="0123456789"))
	c("chunked-many", "a hundred small chunks",
	    post_te("/c/many", "chunked", chunked(*[b"ab"] * 100)),
	    check=want(0, body_length=200))
	c("te-case", "Transfer-Encoding value is case-insensitive",
	    post_te("/c/te-case", "Chunked", chunked(b"xyz")),
	    check=want(0, body="xyz"))
	c("cl-zero", "POST with Content-Length: 0",
	    req("POST", "/c/cl0", [("Content-Length", "0")]),
	    check=want(0, body_length=0))
	c("cl-leading-zeros", "Content-Length with leading zeros is a number",
	    req("POST", "/c/cl003", [("Content-Length", "003")], b"abc"),
	    check=want(0, body="abc"))
	c("binary-body", "every byte value in a body arrives intact",
	    req("POST", "/c/bin", [("Content-Length", "256")],
	    bytes(range(256))), check=want(0, body_length=256))
	c("get-body", "a GET with a body: the body is a body",
	    req("GET", "/c/getbody", [("Content-Length", "5")], b"hello"),
	    check=want(0, method="GET", body="hello"))
	c("http10", "HTTP/1.0 without Host: answered, then closed",
	    req("GET", "/c/10", version="HTTP/1.0", host=None),
	    conn="closed", check=want(0, path="/c/10"))
	c("http10-keepalive", "HTTP/1.0 with Connection: keep-alive stays open",
	    req("GET", "/c/10ka", [("Connection", "keep-alive")],
	    version="HTTP/1.0", host=None), check=want(0, path="/c/10ka"))
	c("connection-close", "Connection: close: answered, then closed",
	    req("GET", "/c/close", [("Connection", "close")]), conn="closed")
	c("pipelined", "three pipelined GETs, answered in order",
	    req("GET", "/c/p1") + req("GET", "/c/p2") + req("GET", "/c/p3"),
	    statuses=(200, 200, 200), fwd=3,
	    check=all_of(want(0, path="/c/p1"), want(1, path="/c/p2"),
	    want(2, path="/c/p3")))
	c("pipelined-bodies", "pipelined POST (length), POST (chunked), GET",
	    req("POST", "/c/pb1", [("Content-Length", "3")], b"one") +
	    post_te("/c/pb2", "chunked", chunked(b"two")) + req("GET", "/c/pb3"),
	    statuses=(200, 200, 200), fwd=3,
	    check=all_of(want(0, body="one"), want(1, body="two"),
	    want(2, path="/c/pb3")))
	c("serial", "ten requests in turn on one connection",
	    None, statuses=(200,) * 10, fwd=10,
	    driver=drive_keepalive_serial, check=want(9, path="/c/serial/9"))
	c("head", "HEAD: a response without a body",
	    req("HEAD", "/c/head"))
	c("methods", "PUT, DELETE, PATCH and OPTIONS are forwarded",
	    req("PUT", "/c/m", [("Content-Length", "1")], b"p") +
	    req("DELETE", "/c/m") + req("PATCH", "/c/m",
	    [("Content-Length", "1")], b"q") + req("OPTIONS", "/c/m"),
	    statuses=(200,) * 4, fwd=4,
	    check=all_of(want(0, method="PUT"), want(1, method="DELETE"),
	    want(2, method="PATCH"), want(3, method="OPTIONS")))
	c("expect-100", "Expect: 100-continue: 100, then the answer",
	    None, driver=drive_expect, check=want(0, body="hello"))
	c("obs-text", "a value with obs-text (0x80-0xFF) is forwarded",
	    req("GET", "/c/obs", [("X-Text", "caf\xe9")]),
	    check=want(0, headers={"x-text": "caf\u00e9"}))
	c("leading-crlf", "an empty line before the request line is skipped",
	    b"\r\n" + req("GET", "/c/crlf"), check=want(0, path="/c/crlf"),
	    rfc="RFC 9112 2.2: SHOULD ignore at least one empty line")
	c("ows", "whitespace around a value is not part of it",
	    req("GET", "/c/ows", [("X-Ows", " \t value \t")]),
	    check=want(0, headers={"x-ows": "value"}))
	c("empty-value", "a field with an empty value is forwarded",
	    req("GET", "/c/empty", [("X-Empty", "")]),
	    check=want(0, headers={"x-empty": ""}))
	c("repeated", "a repeated field is forwarded, in order",
	    req("GET", "/c/dup", [("X-Dup", "a"), ("X-Dup", "b")]),
	    check=want(0, headers={"x-dup": "a, b"}))
	c("host-port", "Host with a port is forwarded as sent",
	    req("GET", "/c/hostport", host="example.com:8080"),
	    check=want(0, headers={"host": "example.com:8080"}))
	c("absolute-form", "absolute-form with a matching Host: the "
	    "origin-form and the authority are forwarded",
	    b"GET http://example.com/c/abs?x=1 HTTP/1.1\r\n" + H + b"\r\n",
	    check=want(0, path="/c/abs", query="x=1",
	    headers={"host": "example.com"}),
	    rfc="RFC 9112 3.2.2: a server MUST accept the absolute-form")
	c("absolute-other-host", "absolute-form with another Host: the "
	    "authority wins",
	    b"GET HTTP://example.com:8080/c/abs2 HTTP/1.1\r\n"
	    b"Host: other.example\r\n\r\n",
	    check=want(0, path="/c/abs2", headers={"host": "example.com:8080"}),
	    rfc="RFC 9112 3.2.2: the authority replaces Host")
	c("absolute-empty-path", "absolute-form without a path: forwarded "
	    "as /",
	    b"GET https://example.com HTTP/1.1\r\n" + H + b"\r\n",
	    check=want(0, path="/", headers={"host": "example.com"}),
	    rfc="RFC 9112 3.2.1: an empty path is sent as /")
	c("hop-by-hop", "fields named in Connection, and Keep-Alive, are "
	    "not forwarded",
	    req("GET", "/c/hop", [("Connection", "keep-alive, X-Hop"),
	    ("X-Hop", "1"), ("Keep-Alive", "timeout=5"), ("X-E2e", "2")]),
	    check=want(0, headers={"x-hop": None, "keep-alive": None,
	    "x-e2e": "2"}),
	    rfc="RFC 9110 7.6.1: a proxy MUST remove them")
	big = "v" * 4000
	c("big-value", "a 4000-byte value is forwarded whole",
	    req("GET", "/c/big", [("X-Big", big)]),
	    check=want(0, headers={"x-big": big}))
	n = min(ctx.max_headers, 100) - 1
	c("many-fields", "%d fields plus Host (the limit) are forwarded" % n,
	    req("GET", "/c/fields", [("X-F%d" % i, str(i)) for i in range(n)]),
	    check=want(0, headers={"x-f%d" % (n - 1): str(n - 1)}))
	return C


def malformed(ctx):
	g = "malformed"
	C = []

	def m(cid, title, send, statuses=(400,), conn="closed", fwd=0, **kw):
		C.append(Case(g + "." + cid, g, title, send, statuses, conn,
		    fwd, **kw))

	G = b"GET /m HTTP/1.1\r\n"
	normalised = Outcome((200,), "open", 1)
	lf_rfc = "RFC 9112 2.2: a recipient MAY accept a bare LF"
	m("lf-request-line", "bare LF ends the request line",
	    b"GET /m HTTP/1.1\nHost: a\r\n\r\n", alt=[normalised],
	    rfc=lf_rfc)
	m("lf-header", "bare LF ends a header line",
	    G + b"Host: a\nX: b\r\n\r\n", alt=[normalised], rfc=lf_rfc)
	m("lf-end", "bare LF as the empty line", G + b"Host: a\r\n\n",
	    alt=[normalised], rfc=lf_rfc)
	m("lf-everywhere", "bare LF on every line", b"GET /m HTTP/1.1\nHost: "
	    b"a\n\n", alt=[normalised], rfc=lf_rfc)
	m("cr-header", "bare CR inside a value", G + H + b"X: a\rb\r\n\r\n")
	m("cr-request-line", "bare CR ends the request line",
	    b"GET /m HTTP/1.1\rHost: a\r\n\r\n")
	m("fold-space", "obs-fold with a space", G + H + b"X: a\r\n b\r\n\r\n",
	    alt=[Outcome((200,), "open", 1)],
	    rfc="RFC 9112 5.2: reject with 400, or replace with SP")
	m("fold-tab", "obs-fold with a tab", G + H + b"X: a\r\n\tb\r\n\r\n",
	    alt=[Outcome((200,), "open", 1)],
	    rfc="RFC 9112 5.2: reject with 400, or replace with SP")
	m("fold-first", "whitespace before the first field line",
	    G + b" " + H + b"\r\n",
	    rfc="RFC 9112 2.2: reject, or ignore the line")
	m("space-colon", "whitespace between name and colon",
	    G + b"Host : example.com\r\n\r\n",
	    rfc="RFC 9112 5.1: MUST reject with 400")
	m("tab-colon", "a tab between name and colon",
	    G + H + b"X\t: a\r\n\r\n", rfc="RFC 9112 5.1: MUST reject with 400")
	m("empty-name", "a field line with an empty name", G + H + b": a\r\n\r\n")
	m("no-colon", "a field line without a colon", G + H + b"NoColon\r\n\r\n")
	m("bad-name", "a name with a separator", G + H + b"X(y): a\r\n\r\n")
	m("utf8-name", "a name with non-ASCII bytes",
	    G + H + b"X\xc3\xa9: a\r\n\r\n")
	m("space-in-name", "a name with a space inside", G + H + b"X Y: a\r\n\r\n")
	m("nul-value", "NUL in a value", G + H + b"X: a\x00b\r\n\r\n")
	m("ctl-value", "a control character in a value",
	    G + H + b"X: a\x01b\r\n\r\n")
	m("del-value", "DEL in a value", G + H + b"X: a\x7fb\r\n\r\n")
	m("double-space", "two spaces after the method",
	    b"GET  /m HTTP/1.1\r\n" + H + b"\r\n")
	m("trailing-space", "a space after the version",
	    b"GET /m HTTP/1.1 \r\n" + H + b"\r\n")
	m("lower-version", "http/1.1 in lower case",
	    b"GET /m http/1.1\r\n" + H + b"\r\n")
	m("version-1.2", "HTTP/1.2", b"GET /m HTTP/1.2\r\n" + H + b"\r\n",
	    statuses=(505,), alt=[Outcome((200,), "open", 1),
	    Outcome((400,), "closed", 0)],
	    rfc="RFC 9112 2.3: MAY be processed as 1.1; we answer 505")
	m("version-2.0", "HTTP/2.0 in an HTTP/1 request line",
	    b"GET /m HTTP/2.0\r\n" + H + b"\r\n", statuses=(505,),
	    alt=[Outcome((400,), "closed", 0)])
	m("http09", "an HTTP/0.9 simple request", b"GET /m\r\n\r\n")
	# A proxy that speaks h2c with prior knowledge (ingressd since issue
	# 14) answers no HTTP/1 status: it waits for the client's SETTINGS.
	m("h2-preface", "the HTTP/2 connection preface",
	    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", statuses=(),
	    alt=[Outcome((400,), "closed", 0), Outcome((505,), "closed", 0)])
	m("tls", "a TLS ClientHello on the plain-text port",
	    b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(32)))
	m("no-host", "HTTP/1.1 without Host", b"GET /m HTTP/1.1\r\n\r\n",
	    rfc="RFC 9112 3.2: MUST respond 400")
	m("two-hosts", "two Host fields", G + b"Host: a\r\nHost: b\r\n\r\n",
	    rfc="RFC 9112 3.2: MUST respond 400")
	m("host-slash", "Host with a path", G + b"Host: a/b\r\n\r\n",
	    rfc="RFC 9112 3.2: MUST respond 400 to an invalid Host")
	m("host-userinfo", "Host with userinfo", G + b"Host: u@a\r\n\r\n",
	    rfc="RFC 9112 3.2: MUST respond 400 to an invalid Host")
	m("method-sep", "a method with a separator",
	    b"G(T /m HTTP/1.1\r\n" + H + b"\r\n")
	m("method-unknown", "an unknown method", b"FOO /m HTTP/1.1\r\n" + H +
	    b"\r\n", statuses=(501,), alt=[normalised],
	    rfc="RFC 9110 9.1: 501 for an unrecognised method; a proxy may "
	    "forward it")
	m("method-lower", "methods are case-sensitive: get",
	    b"get /m HTTP/1.1\r\n" + H + b"\r\n", statuses=(501,),
	    alt=[normalised, Outcome((400,), "closed", 0)])
	m("connect", "CONNECT is not supported",
	    b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
	    statuses=(501,), alt=[Outcome((400,), "closed", 0),
	    Outcome((405,), "closed", 0), Outcome((405,), "open", 0)])
	m("absolute-userinfo", "absolute-form with userinfo in the authority",
	    b"GET http://u@example.com/m HTTP/1.1\r\n" + H + b"\r\n",
	    rfc="RFC 9110 4.2.4: a sender MUST NOT send userinfo in http")
	m("absolute-scheme", "absolute-form with a scheme other than http(s)",
	    b"GET ftp://example.com/m HTTP/1.1\r\n" + H + b"\r\n")
	m("absolute-no-host", "absolute-form with an empty authority",
	    b"GET http:///m HTTP/1.1\r\n" + H + b"\r\n",
	    rfc="RFC 9110 4.2.1: an http URI with an empty host is invalid")
	m("fragment", "a target with a fragment",
	    b"GET /m#frag HTTP/1.1\r\n" + H + b"\r\n")
	m("space-target", "a space inside the target",
	    b"GET /a b HTTP/1.1\r\n" + H + b"\r\n")
	m("utf8-target", "raw non-ASCII bytes in the target",
	    b"GET /caf\xc3\xa9 HTTP/1.1\r\n" + H + b"\r\n",
	    alt=[Outcome((200,), "open", 1)])
	m("ctl-target", "a control character in the target",
	    b"GET /a\x01b HTTP/1.1\r\n" + H + b"\r\n")
	m("nul-target", "NUL in the target",
	    b"GET /a\x00b HTTP/1.1\r\n" + H + b"\r\n")
	m("empty-lines", "twenty empty lines before the request line",
	    b"\r\n" * 20 + req("GET", "/m/empty"),
	    alt=[Outcome((200,), "open", 1)])
	m("expect-unknown", "an expectation other than 100-continue",
	    req("GET", "/m/expect", [("Expect", "teapot")]), statuses=(417,),
	    alt=[normalised], rfc="RFC 9110 10.1.1: MAY answer 417")
	m("garbage-after", "a valid request, then garbage",
	    req("GET", "/m/ok") + b"\x00\x01\x02 nonsense\r\n\r\n",
	    statuses=(200, 400), fwd=1, alt=[Outcome((200,), "closed", 1)])
	return C


def smuggling(ctx):
	g = "smuggling"
	C = []

	def s(cid, title, send, statuses=(400,), conn="closed", fwd=0, **kw):
		C.append(Case(g + "." + cid, g, title, send, statuses, conn,
		    fwd, **kw))

	P = b"POST /s HTTP/1.1\r\n" + H
	G2 = req("GET", "/s/smuggled")
	closed1 = Outcome((200,), "closed", 1, want(0, body_length=0))
	closed1_5 = Outcome((200,), "closed", 1, want(0, body="hello"))
	te_rfc = "RFC 9112 6.1: MAY reject, or read as chunked and MUST close"
	s("cl-te", "Content-Length and Transfer-Encoding (CL.TE)",
	    P + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"
	    b"0\r\n\r\nG", alt=[closed1], rfc=te_rfc)
	s("te-cl", "Transfer-Encoding and Content-Length (TE.CL)",
	    P + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
	    b"5\r\nhello\r\n0\r\n\r\n", alt=[closed1_5], rfc=te_rfc)
	s("te-cl0", "Content-Length: 0 with chunked",
	    P + b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n"
	    b"5\r\nhello\r\n0\r\n\r\n", alt=[closed1_5], rfc=te_rfc)
	s("cl-cl", "two different Content-Lengths",
	    P + b"Content-Length: 3\r\nContent-Length: 5\r\n\r\nhello",
	    rfc="RFC 9112 6.3: MUST treat as unrecoverable (400)")
	s("cl-cl-same", "two identical Content-Lengths",
	    P + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	    alt=[Outcome((200,), "open", 1, want(0, body="hello"))],
	    rfc="RFC 9110 8.6: MAY accept identical values")
	s("cl-list", "Content-Length: 5, 5",
	    P + b"Content-Length: 5, 5\r\n\r\nhello",
	    alt=[Outcome((200,), "open", 1, want(0, body="hello"))],
	    rfc="RFC 9110 8.6: MAY accept a list of identical values")
	s("cl-list-diff", "Content-Length: 3, 5", P +
	    b"Content-Length: 3, 5\r\n\r\nhello")
	s("cl-plus", "Content-Length: +5", P + b"Content-Length: +5\r\n\r\nhello")
	s("cl-neg", "Content-Length: -1", P + b"Content-Length: -1\r\n\r\n")
	s("cl-hex", "Content-Length: 0x5", P + b"Content-Length: 0x5\r\n\r\nhello")
	s("cl-space", "Content-Length: 1 0", P + b"Content-Length: 1 0\r\n\r\n"
	    b"0123456789")
	s("cl-empty", "an empty Content-Length", P + b"Content-Length:\r\n\r\n")
	s("cl-overflow", "Content-Length above 2^64",
	    P + b"Content-Length: 18446744073709551617\r\n\r\n",
	    alt=[Outcome((413,), "closed", 0)])
	s("cl-space-colon", "Content-Length : 5 (space before the colon)",
	    P + b"Content-Length : 5\r\n\r\nhello")
	s("te-gzip", "Transfer-Encoding: gzip",
	    P + b"Transfer-Encoding: gzip\r\n\r\nxyz",
	    alt=[Outcome((501,), "closed", 0)],
	    rfc="RFC 9112 6.1: 501 for an unknown coding; 400 when chunked "
	    "is not final")
	s("te-gzip-chunked", "Transfer-Encoding: gzip, chunked",
	    P + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	    alt=[Outcome((501,), "closed", 0), Outcome((200,), "open", 1)],
	    rfc="a proxy may forward codings it does not decode")
	s("te-chunked-gzip", "Transfer-Encoding: chunked, gzip (not final)",
	    P + b"Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
	    alt=[Outcome((501,), "closed", 0)],
	    rfc="RFC 9112 6.3: MUST respond 400 and close")
	s("te-identity", "Transfer-Encoding: identity",
	    P + b"Transfer-Encoding: identity\r\n\r\n",
	    alt=[Outcome((501,), "closed", 0)])
	s("te-xchunked", "Transfer-Encoding: xchunked",
	    P + b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
	    alt=[Outcome((501,), "closed", 0)])
	s("te-twice", "Transfer-Encoding: chunked twice",
	    P + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
	    b"\r\n0\r\n\r\n", alt=[Outcome((501,), "closed", 0)],
	    rfc="RFC 9112 6.1: chunked MUST NOT be applied twice")
	s("te-http10", "Transfer-Encoding on HTTP/1.0",
	    b"POST /s HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
	    b"5\r\nhello\r\n0\r\n\r\n", alt=[closed1_5],
	    rfc="RFC 9112 6.1: faulty framing; MUST close after")
	s("te-trailing-ws", "whitespace after chunked (llhttp does not "
	    "take it as chunked: refused, never read two ways)",
	    req("POST", "/s/te-ows", [("Transfer-Encoding", "chunked \t")],
	    chunked(b"xyz")),
	    alt=[Outcome((200,), "open", 1, want(0, body="xyz")),
	    Outcome((501,), "closed", 0)],
	    rfc="RFC 9112 5: OWS after a value is allowed")
	s("te-fold", "Transfer-Encoding folded onto the next line",
	    P + b"Transfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n\r\n"
	    b"0\r\n\r\n")
	s("te-space-colon", "Transfer-Encoding : chunked, with Content-Length",
	    P + b"Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n"
	    b"0\r\n\r\n")
	s("te-vtab", "Transfer-Encoding with a vertical tab",
	    P + b"Transfer-Encoding: \x0bchunked\r\nContent-Length: 5\r\n\r\n"
	    b"0\r\n\r\n", alt=[Outcome((501,), "closed", 0)])
	s("te-nul-name", "NUL inside the Transfer-Encoding name",
	    P + b"Transfer-Encoding\x00: chunked\r\nContent-Length: 5\r\n\r\n"
	    b"0\r\n\r\n")
	bad_chunk = [Outcome((400,), "closed", 1)]
	s("chunk-size-bad", "chunk size not hex",
	    post_te("/s", "chunked", b"zz\r\nhello\r\n0\r\n\r\n"),
	    fwd=(0, 1), alt=bad_chunk)
	s("chunk-size-0x", "chunk size with 0x",
	    post_te("/s", "chunked", b"0x5\r\nhello\r\n0\r\n\r\n"), fwd=(0, 1))
	s("chunk-size-overflow", "chunk size above 2^64",
	    post_te("/s", "chunked", b"fffffffffffffffff1\r\nx\r\n0\r\n\r\n"),
	    fwd=(0, 1), alt=[Outcome((413,), "closed", (0, 1))])
	s("chunk-size-space", "a space before the chunk size",
	    post_te("/s", "chunked", b" 5\r\nhello\r\n0\r\n\r\n"), fwd=(0, 1))
	s("chunk-size-neg", "a negative chunk size",
	    post_te("/s", "chunked", b"-5\r\nhello\r\n0\r\n\r\n"), fwd=(0, 1))
	s("chunk-too-long", "chunk data longer than its size",
	    post_te("/s", "chunked", b"3\r\nhello\r\n0\r\n\r\n"), fwd=(0, 1))
	s("chunk-lf-size", "bare LF after the chunk size",
	    post_te("/s", "chunked", b"5\nhello\r\n0\r\n\r\n"), fwd=(0, 1))
	s("chunk-lf-data", "bare LF after the chunk data",
	    post_te("/s", "chunked", b"5\r\nhello\n0\r\n\r\n"), fwd=(0, 1))
	s("chunk-lf-last", "bare LF ending the message",
	    post_te("/s", "chunked", b"5\r\nhello\r\n0\r\n\n"), fwd=(0, 1))
	s("chunk-ext-cr", "a bare CR in a chunk extension",
	    post_te("/s", "chunked", b"5;a\rb\r\nhello\r\n0\r\n\r\n"),
	    fwd=(0, 1))
	s("trailer-lf", "bare LF in a trailer line",
	    post_te("/s", "chunked", b"5\r\nhello\r\n0\r\nX: y\n\r\n"),
	    fwd=(0, 1), alt=[Outcome((200,), "open", 1, want(0, body="hello"))],
	    rfc="RFC 9112 2.2 (fields): a recipient MAY accept a bare LF")
	s("trailer-fold", "obs-fold in the trailer section",
	    post_te("/s", "chunked", b"5\r\nhello\r\n0\r\nX: y\r\n z\r\n\r\n"),
	    fwd=(0, 1))
	s("cr-injection", "a CR inside a value hiding a second field",
	    P + b"X: a\rTransfer-Encoding: chunked\r\nContent-Length: 5\r\n"
	    b"\r\nhello")
	s("trailer-cl", "Content-Length in a trailer does not change framing",
	    post_te("/s/trailer", "chunked", b"5\r\nhello\r\n0\r\n"
	    b"Content-Length: 50\r\n\r\n") + req("GET", "/s/after"),
	    statuses=(200, 200), conn="open", fwd=2,
	    check=all_of(want(0, body="hello"), want(1, path="/s/after")))
	body = req("GET", "/s/hidden")
	s("get-body", "a request hidden in a GET body stays a body",
	    req("GET", "/s/outer", [("Content-Length", str(len(body)))], body),
	    statuses=(200,), conn="open", fwd=1,
	    check=want(0, path="/s/outer", body=body.decode()))
	s("cl-then-request", "bytes after a Content-Length body are the next "
	    "request", req("POST", "/s/one", [("Content-Length", "5")],
	    b"hello") + G2, statuses=(200, 200), conn="open", fwd=2,
	    check=all_of(want(0, body="hello"), want(1, path="/s/smuggled")))
	s("chunked-then-garbage", "garbage after the last chunk is a bad "
	    "request", post_te("/s/c", "chunked", chunked(b"hello")) +
	    b"XYZ\r\n\r\n", statuses=(200, 501), fwd=1,
	    alt=[Outcome((200,), "closed", 1), Outcome((200, 400), "closed",
	    1)])
	s("close-then-request", "nothing is read after Connection: close",
	    req("GET", "/s/close", [("Connection", "close")]) + G2,
	    statuses=(200,), fwd=1, check=want(0, path="/s/close"),
	    rfc="RFC 9112 9.6: MUST NOT process further requests")
	s("http10-then-request", "nothing is read after an HTTP/1.0 request",
	    req("GET", "/s/10", version="HTTP/1.0", host=None) + G2,
	    statuses=(200,), fwd=1, check=want(0, path="/s/10"))
	return C


def limits(ctx):
	g = "limits"
	C = []

	def l(cid, title, send, statuses, conn="closed", fwd=0, **kw):
		C.append(Case(g + "." + cid, g, title, send, statuses, conn,
		    fwd, **kw))

	def line_of(n):
		"""A request whose request line is n bytes (without CRLF)."""
		path = "/l/" + "a" * (n - len("GET /l/ HTTP/1.1"))
		return req("GET", path)

	too_big = [Outcome((400,), "closed", 0)]
	n = ctx.max_request_line
	l("line-at", "a request line of exactly the limit (%d)" % n,
	    line_of(n), (200,), conn="open", fwd=1)
	l("line-over", "a request line one byte over the limit",
	    line_of(n + 1), (414,), alt=too_big)
	l("line-huge", "a request line of 1 MiB, no CRLF",
	    b"GET /" + b"a" * (1 << 20), (414,), alt=too_big)
	per = 4000
	k = ctx.max_header_bytes // (per + 12) + 1
	l("header-bytes-over", "header section over the limit (%d bytes)" %
	    ctx.max_header_bytes,
	    req("GET", "/l/hb", [("X-Big-%d" % i, "v" * per) for i in range(k)]),
	    (431,), alt=too_big)
	l("header-count-over", "one field over the limit (%d)" % ctx.max_headers,
	    req("GET", "/l/hc", [("X-C%d" % i, "v") for i in
	    range(ctx.max_headers)]), (431,), alt=too_big)
	l("header-endless", "an endless header section (no empty line)",
	    b"GET /l/endless HTTP/1.1\r\n" + H + b"X-Long: " + b"x" *
	    (ctx.max_header_bytes * 2), (431,), alt=too_big)
	l("body-at", "a body of exactly the limit (%d)" % ctx.max_body,
	    req("POST", "/l/body-at", [("Content-Length", str(ctx.max_body))],
	    b"b" * ctx.max_body), (200,), conn="open", fwd=1,
	    check=want(0, body_length=ctx.max_body))
	# Answering 413 and then reading (discarding) the announced body
	# before the next request is also correct: "stalled" here, since
	# the suite never sends that body.
	discard = [Outcome((413,), "stalled", 0)]
	l("body-over-cl", "Content-Length over the limit: 413 before the body",
	    req("POST", "/l/body-over", [("Content-Length",
	    str(ctx.max_body + 1))]), (413,), alt=discard)
	l("body-huge-cl", "Content-Length of 1 TB",
	    req("POST", "/l/body-tb", [("Content-Length", "1000000000000")]),
	    (413,), alt=discard)
	l("expect-over", "Expect: 100-continue with a body over the limit: "
	    "413, no 100", req("POST", "/l/expect-over", [("Content-Length",
	    str(ctx.max_body + 1)), ("Expect", "100-continue")]), (413,),
	    alt=discard)
	l("body-over-chunked", "a chunked body that passes the limit",
	    None, (413,), fwd=(0, 1), driver=drive_chunked_over,
	    read_timeout=10.0)
	trailer = b"".join(b"X-T%d: %s\r\n" % (i, b"t" * 4000) for i in
	    range(ctx.max_header_bytes // 4000 + 1))
	l("trailer-over", "a trailer section over the header limit",
	    post_te("/l/trailer", "chunked", b"5\r\nhello\r\n0\r\n" + trailer +
	    b"\r\n"), (431,), fwd=(0, 1),
	    alt=[Outcome((400,), "closed", (0, 1)),
	    Outcome((200,), "open", 1, want(0, body="hello"))])
	return C


def slow(ctx):
	g = "slow"
	C = []

	def t(cid, title, driver, statuses, fwd, need, timeout, **kw):
		C.append(Case(g + "." + cid, g, title, None, statuses,
		    "closed", fwd, driver=driver, needs=need,
		    read_timeout=timeout, **kw))

	silent = Outcome((), "closed", 0)
	ht = (ctx.header_timeout or 0) + 3
	bt = (ctx.body_timeout or 0) + 3
	t("header-drip", "slowloris: a field line every 0.25 s, past the "
	    "header timeout", drive_header_drip, (408,), 0, "header_timeout",
	    ht, alt=[silent])
	t("header-stall", "half a head, then nothing", drive_header_stall,
	    (408,), 0, "header_timeout", ht, alt=[silent])
	t("idle-connect", "a connection that sends nothing", drive_nothing,
	    (408,), 0, "header_timeout", ht, alt=[silent])
	t("body-stall", "half a body, then nothing", drive_body_stall,
	    (408,), (0, 1), "body_timeout", bt,
	    alt=[Outcome((), "closed", (0, 1))])
	t("body-drip", "a body byte every 0.25 s: every gap is short, the "
	    "whole is not", drive_body_drip, (408,), (0, 1), "body_timeout",
	    (ctx.body_timeout or 0) * 3 + 4,
	    alt=[Outcome((), "closed", (0, 1))])
	return C


def all_cases(ctx):
	out = []
	for fn in (conformance, malformed, smuggling, limits, slow):
		out += fn(ctx)
	return out
