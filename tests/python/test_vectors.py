"""The Python side of tests/vectors/frames.txt: ingressd_replica.wire must
decode every vector to the result src/wire.c gives (tests/unit/check_wire.c
checks the C side against the same file), and re-encode every valid frame
to exactly its bytes.

    python3 -m unittest discover -s tests/python -t tests/python
"""

import os
import struct
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from ingressd_replica import wire  # noqa: E402

VECTORS = os.environ.get("INGRESSD_VECTORS",
                         os.path.join(ROOT, "tests", "vectors", "frames.txt"))

# wire_result_str()'s names, in enum order.
RESULTS = ("ok", "NEED_MORE", "E_TYPE", "E_FLAGS", "E_RESERVED",
           "E_TOO_LARGE", "E_STREAM", "E_SHORT", "E_TRAILING", "E_LIMIT", "E_EMPTY",
           "E_VALUE")


def load_vectors(path=VECTORS):
    out = []
    with open(path) as fp:
        for lineno, line in enumerate(fp, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise AssertionError("%s:%d: want 3 fields" % (
                    path, lineno))
            out.append((parts[0], bytes.fromhex(parts[1]), parts[2]))
    return out


def decode(data):
    """(result name, frame, decoded payload) the way check_wire.c's
    run_vector() does it."""
    try:
        f, size = wire.decode_frame(data)
        if f is None:
            return "NEED_MORE", None, None
        if size != len(data):
            return "E_VECTOR_SIZE", None, None
        return "ok", f, wire.decode_payload(f)
    except wire.WireError as e:
        return e.result, None, None


def reencode(f, v):
    """Encode the decoded frame again with the package's encoders."""
    t = f.type
    if t == wire.HELLO:
        return wire.encode_hello(v.max_concurrency, v.deployment,
                                 v.replica_id, v.version)
    if t in (wire.PING, wire.PONG):
        return wire.encode_ping(v, t)
    if t == wire.REQUEST:
        return wire.encode_request(f.stream, v, f.flags)
    if t == wire.RESPONSE:
        return wire.encode_response(f.stream, v[0], v[1], f.flags)
    if t == wire.DATA:
        return wire.encode_data(f.stream, v, f.flags)
    if t == wire.END:
        return wire.encode_end(f.stream)
    if t == wire.CANCEL:
        return wire.encode_cancel(f.stream, v)
    if t == wire.ERROR:
        return wire.encode_error(f.stream, v[0], v[1])
    if t == wire.GOAWAY:
        return wire.encode_goaway(*v)
    if t == wire.WINDOW:
        return wire.encode_window(f.stream, v)
    if t == wire.TRAILERS:
        return wire.encode_trailers(f.stream, v)
    raise AssertionError("no encoder for type %d" % t)


class Vectors(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.vectors = load_vectors()

    def test_enough_vectors_and_every_result(self):
        self.assertGreaterEqual(len(self.vectors), 25)
        seen = {exp for _, _, exp in self.vectors}
        for r in RESULTS:
            self.assertIn(r, seen, "no vector expects %s" % r)
        self.assertEqual(seen - set(RESULTS), set(),
                         "vectors expect results wire.c does not have")

    def test_decode(self):
        for name, data, expected in self.vectors:
            with self.subTest(name):
                got, _, _ = decode(data)
                self.assertEqual(got, expected)

    def test_reencode_valid_frames(self):
        n = 0
        for name, data, expected in self.vectors:
            if expected != "ok":
                continue
            with self.subTest(name):
                _, f, v = decode(data)
                self.assertEqual(reencode(f, v).hex(), data.hex())
                n += 1
        self.assertGreaterEqual(n, 20)

    def test_decode_split_anywhere(self):
        # A decoder fed a prefix says NEED_MORE, or already the
        # header's error when the 12 header bytes are in.
        for name, data, expected in self.vectors:
            if expected == "NEED_MORE":
                continue
            with self.subTest(name):
                for cut in (0, 1, 11, 12, len(data) - 1):
                    if not 0 <= cut < len(data):
                        continue
                    got, _, _ = decode(data[:cut])
                    if cut < wire.HEADER_SIZE or got == "NEED_MORE":
                        self.assertEqual(got, "NEED_MORE"
                                         if cut < wire.HEADER_SIZE
                                         else got)
                    else:
                        self.assertEqual(got, expected)

    def test_frames_in_a_row(self):
        # Frames back to back in one buffer decode one after another.
        good = [d for _, d, e in self.vectors if e == "ok"]
        buf = b"".join(good)
        off, seen = 0, 0
        while off < len(buf):
            f, size = wire.decode_frame(buf, off)
            self.assertIsNotNone(f)
            self.assertEqual(buf[off:off + size], good[seen])
            off += size
            seen += 1
        self.assertEqual(seen, len(good))


class Encoders(unittest.TestCase):
    """Encoders refuse what the decoders refuse (wire.c: *_size() == 0)."""

    def head(self, **kw):
        h = wire.RequestHead(b"GET", b"/", fields=[])
        for k, v in kw.items():
            setattr(h, k, v)
        return h

    def test_request_limits(self):
        self.assertRaises(ValueError, wire.encode_request, 1,
                          self.head(method=b""))
        self.assertRaises(ValueError, wire.encode_request, 1,
                          self.head(target=b""))
        self.assertRaises(ValueError, wire.encode_request, 0, self.head())
        self.assertRaises(ValueError, wire.encode_request, 1, self.head(),
                          0x02)
        self.assertRaises(ValueError, wire.encode_request, 1,
                          self.head(deployment=b"d" * 256))
        self.assertRaises(ValueError, wire.encode_request, 1,
                          self.head(fields=[(b"h", b"v")] * 257))
        self.assertRaises(ValueError, wire.encode_request, 1,
                          self.head(fields=[(b"", b"v")]))
        self.assertRaises(ValueError, wire.encode_request, 1,
                          self.head(fields=[(b"n" * 256, b"v")]))
        # The limits themselves are fine.
        f = wire.encode_request(1, self.head(deployment=b"d" * 255,
                                             fields=[(b"n" * 255, b"v" * 65535)] * 15))
        self.assertEqual(decode(f)[0], "ok")

    def test_response_status_range(self):
        for bad in (0, 99, 1000, 65535):
            self.assertRaises(ValueError, wire.encode_response, 1, bad)
        for good in (100, 200, 999):
            f = wire.encode_response(1, good)
            self.assertEqual(wire.decode_payload(decode(f)[1])[0],
                             good)

    def test_payload_over_max(self):
        # 15 x 64 KiB values make a RESPONSE over 1 MiB.
        fields = [(b"h%d" % i, b"v" * 65535) for i in range(17)]
        self.assertRaises(ValueError, wire.encode_response, 1, 200,
                          fields)
        self.assertRaises(ValueError, wire.encode_data, 1,
                          b"x" * (wire.MAX_PAYLOAD + 1))
        self.assertRaises(ValueError, wire.encode_data, 1, b"")

    def test_data_split_at_max_data(self):
        body = bytes(range(256)) * 2049  # just over 2 x 256 KiB
        frames = b"".join(wire.data_frames(3, body, True))
        off, got, flags = 0, b"", []
        while off < len(frames):
            f, size = wire.decode_frame(frames, off)
            self.assertEqual(f.type, wire.DATA)
            self.assertLessEqual(f.length, wire.MAX_DATA)
            got += f.payload
            flags.append(f.flags)
            off += size
        self.assertEqual(got, body)
        self.assertEqual(flags, [0, 0, wire.FLAG_END])
        self.assertEqual(wire.data_frames(3, b"", True),
                         [wire.encode_end(3)])
        self.assertEqual(wire.data_frames(3, b"", False), [])

    def test_error_text_cut_at_max_text(self):
        f = wire.encode_error(1, wire.CODE_INTERNAL, b"e" * 5000)
        _, fr, v = decode(f)
        self.assertEqual(v, (wire.CODE_INTERNAL, b"e" * wire.MAX_TEXT))
        self.assertRaises(ValueError, wire.encode_goaway, 1, 7,
                          b"g" * 4097)

    def test_window_and_hello(self):
        self.assertRaises(ValueError, wire.encode_window, 1, 0)
        self.assertRaises(ValueError, wire.encode_hello, 0, b"", b"",
                          0)
        self.assertRaises(ValueError, wire.encode_hello, 0, b"x" * 256)
        f = wire.encode_hello(7, b"dep", b"rid")
        h = wire.decode_payload(decode(f)[1])
        self.assertEqual((h.version, h.max_concurrency, h.deployment,
                          h.replica_id), (2, 7, b"dep", b"rid"))

    def test_header_layout(self):
        self.assertEqual(wire.encode_header(5, wire.DATA, 1, 0x01020304),
                         struct.pack(">IBBHI", 5, 6, 1, 0, 0x01020304))


if __name__ == "__main__":
    unittest.main()
