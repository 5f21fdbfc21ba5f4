#!/usr/bin/env python3
"""Write tests/vectors/frames.txt: wire protocol v2 test vectors.

Each vector is built here by hand, byte by byte, independently of the C
codec, with the result a conforming decoder must give (decode the frame,
then its payload by type).  Run from the repo root:

    python3 tests/vectors/gen_frames.py > tests/vectors/frames.txt

Format of frames.txt (see docs/protocol.md, "Test vectors"): '#' lines and
blank lines are comments; every other line is
name TAB hex-of-the-frame TAB expected, where expected is "ok" or a result
name such as E_TYPE.  NEED_MORE vectors hold a prefix of a frame.
"""
import struct
import sys

HELLO, PING, PONG, REQUEST, RESPONSE, DATA, END, CANCEL, ERROR, GOAWAY, \
    WINDOW, TRAILERS = range(1, 13)
FLAG_END = 0x01


def hdr(length, ftype, flags=0, stream=0, reserved=0):
    return struct.pack(">IBBHI", length, ftype, flags, reserved, stream)


def frame(ftype, payload, flags=0, stream=0, reserved=0):
    return hdr(len(payload), ftype, flags, stream, reserved) + payload


def s8(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">B", len(b)) + b


def s16(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">H", len(b)) + b


def fields(pairs):
    out = struct.pack(">H", len(pairs))
    for n, v in pairs:
        out += s8(n) + s16(v)
    return out


def hello(version=1, reserved=0, maxc=0, dep="", rid="ingressd"):
    return struct.pack(">HHI", version, reserved, maxc) + s8(dep) + s8(rid)


def request(method="GET", target="/", dep="", rid="", deadline=0, hdrs=()):
    return (s8(method) + s16(target) + s8(dep) + s8(rid) +
            struct.pack(">I", deadline) + fields(list(hdrs)))


def response(status=200, hdrs=()):
    return struct.pack(">H", status) + fields(list(hdrs))


def error(code, text):
    return struct.pack(">I", code) + s16(text)


def goaway(last, code, text):
    return struct.pack(">II", last, code) + s16(text)


def u32(v):
    return struct.pack(">I", v)


OPAQUE = bytes(range(1, 9))
V = []


def vec(name, data, expected):
    V.append((name, data, expected))


# --- valid frames of every type ---
vec("hello_proxy", frame(HELLO, hello()), "ok")
vec("hello_replica", frame(HELLO, hello(1, 0, 1024, "echo", "r-1")), "ok")
vec("hello_future_version", frame(HELLO, hello(7, 0, 5, "d", "x")), "ok")
vec("ping", frame(PING, OPAQUE), "ok")
vec("pong", frame(PONG, OPAQUE), "ok")
vec("request_min_end", frame(REQUEST, request(), FLAG_END, 1), "ok")
vec("request_full", frame(REQUEST, request(
    "POST", "/api/v1?x=1&y=2", "models", "req-42", 30000,
    [("Host", "example.com"), ("Content-Type", "application/json"),
     ("X-Empty", "")]), 0, 3), "ok")
vec("request_256_fields", frame(REQUEST, request(
    hdrs=[("h%d" % i, "v") for i in range(256)]), FLAG_END, 5), "ok")
vec("request_high_stream", frame(REQUEST, request(), FLAG_END,
                                 0xffffffff), "ok")
vec("response_200_end", frame(RESPONSE, response(200, [
    ("content-type", "text/plain"), ("content-length", "12")]),
    FLAG_END, 1), "ok")
vec("response_no_fields", frame(RESPONSE, response(204), 0, 1), "ok")
vec("response_status_100", frame(RESPONSE, response(100), 0, 1), "ok")
vec("response_status_999", frame(RESPONSE, response(999), 0, 1), "ok")
vec("data", frame(DATA, b"Hello world!", 0, 1), "ok")
vec("data_end", frame(DATA, b"x", FLAG_END, 9), "ok")
vec("data_empty_end", frame(DATA, b"", FLAG_END, 1), "ok")
vec("end", frame(END, b"", 0, 1), "ok")
vec("cancel", frame(CANCEL, u32(4), 0, 7), "ok")
vec("cancel_unknown_code", frame(CANCEL, u32(1000), 0, 7), "ok")
vec("error_stream", frame(ERROR, error(2, "handler failed"), 0, 3), "ok")
vec("error_conn", frame(ERROR, error(1, "bad frame"), 0, 0), "ok")
vec("error_empty_text", frame(ERROR, error(6, ""), 0, 0), "ok")
vec("error_text_4096", frame(ERROR, error(2, "e" * 4096), 0, 1), "ok")
vec("goaway", frame(GOAWAY, goaway(11, 7, "shutting down")), "ok")
vec("window_conn", frame(WINDOW, u32(65536)), "ok")
vec("window_stream", frame(WINDOW, u32(1), 0, 3), "ok")
# v2: TRAILERS is u16 nfields + fields, on a stream, never with flag END.
vec("hello_v2", frame(HELLO, hello(2, 0, 64, "grpc-echo", "r-2")), "ok")
vec("trailers_grpc", frame(TRAILERS, fields([
    ("grpc-status", "3"), ("grpc-message", "bad%20arg")]), 0, 5), "ok")
vec("trailers_empty", frame(TRAILERS, fields([]), 0, 1), "ok")
vec("trailers_empty_value", frame(TRAILERS, fields([("x-t", "")]), 0, 1),
    "ok")
vec("trailers_256_fields", frame(TRAILERS, fields(
    [("t%d" % i, "v") for i in range(256)]), 0, 9), "ok")

# --- header errors, in the order they are checked ---
vec("type_zero", frame(0, b""), "E_TYPE")
vec("type_13", frame(13, b""), "E_TYPE")
vec("type_255", frame(255, b"", 0x80, 1, 1), "E_TYPE")
vec("flags_unknown_bit", frame(DATA, b"x", 0x02, 1), "E_FLAGS")
vec("flags_all_bits", frame(REQUEST, request(), 0xff, 1), "E_FLAGS")
vec("flags_end_on_ping", frame(PING, OPAQUE, FLAG_END), "E_FLAGS")
vec("flags_end_on_end", frame(END, b"", FLAG_END, 1), "E_FLAGS")
vec("flags_end_on_cancel", frame(CANCEL, u32(0), FLAG_END, 1), "E_FLAGS")
vec("flags_end_on_trailers", frame(TRAILERS, fields([]), FLAG_END, 1),
    "E_FLAGS")
vec("reserved_header", frame(DATA, b"x", 0, 1, 1), "E_RESERVED")
vec("reserved_header_high", frame(PING, OPAQUE, 0, 0, 0x8000),
    "E_RESERVED")
vec("too_large_header_only", hdr(0x100001, DATA, 0, 1), "E_TOO_LARGE")
vec("too_large_max_u32", hdr(0xffffffff, REQUEST, 0, 1), "E_TOO_LARGE")
vec("too_large_before_stream", hdr(0x100001, DATA, 0, 0), "E_TOO_LARGE")
vec("stream_zero_request", frame(REQUEST, request(), FLAG_END, 0),
    "E_STREAM")
vec("stream_zero_response", frame(RESPONSE, response(), 0, 0), "E_STREAM")
vec("stream_zero_data", frame(DATA, b"x", 0, 0), "E_STREAM")
vec("stream_zero_end", frame(END, b"", 0, 0), "E_STREAM")
vec("stream_zero_cancel", frame(CANCEL, u32(0), 0, 0), "E_STREAM")
vec("stream_zero_trailers", frame(TRAILERS, fields([]), 0, 0), "E_STREAM")
vec("stream_on_hello", frame(HELLO, hello(), 0, 1), "E_STREAM")
vec("stream_on_ping", frame(PING, OPAQUE, 0, 1), "E_STREAM")
vec("stream_on_pong", frame(PONG, OPAQUE, 0, 2), "E_STREAM")
vec("stream_on_goaway", frame(GOAWAY, goaway(0, 0, ""), 0, 3), "E_STREAM")
vec("ping_short", frame(PING, OPAQUE[:7]), "E_SHORT")
vec("ping_long", frame(PING, OPAQUE + b"\0"), "E_TRAILING")
vec("pong_empty", frame(PONG, b""), "E_SHORT")
vec("cancel_short", frame(CANCEL, b"\0\0\0", 0, 1), "E_SHORT")
vec("cancel_long", frame(CANCEL, b"\0\0\0\0\0", 0, 1), "E_TRAILING")
vec("window_short", frame(WINDOW, b"\0\1"), "E_SHORT")
vec("window_long", frame(WINDOW, u32(1) + b"\0"), "E_TRAILING")
vec("end_with_payload", frame(END, b"x", 0, 1), "E_TRAILING")
vec("data_empty_no_end", frame(DATA, b"", 0, 1), "E_EMPTY")

# --- payload errors ---
vec("hello_empty", frame(HELLO, b""), "E_SHORT")
vec("hello_short_ids", frame(HELLO, hello()[:-3]), "E_SHORT")
vec("hello_trailing", frame(HELLO, hello() + b"\0"), "E_TRAILING")
vec("hello_version_zero", frame(HELLO, hello(version=0)), "E_VALUE")
vec("hello_reserved", frame(HELLO, hello(reserved=1)), "E_RESERVED")
vec("request_empty_payload", frame(REQUEST, b"", 0, 1), "E_SHORT")
vec("request_method_cut", frame(REQUEST, b"\x05GET", 0, 1), "E_SHORT")
vec("request_no_deadline", frame(REQUEST, s8("GET") + s16("/") + s8("") +
                                 s8("") + b"\0\0", 0, 1), "E_SHORT")
vec("request_field_cut", frame(REQUEST, request(
    hdrs=[("a", "b")])[:-1], 0, 1), "E_SHORT")
vec("request_nfields_missing", frame(REQUEST, request()[:-2], 0, 1),
    "E_SHORT")
vec("request_trailing", frame(REQUEST, request() + b"\0", 0, 1),
    "E_TRAILING")
vec("request_empty_method", frame(REQUEST, request(method=""), 0, 1),
    "E_EMPTY")
vec("request_empty_target", frame(REQUEST, request(target=""), 0, 1),
    "E_EMPTY")
vec("request_empty_header_name", frame(REQUEST, request(
    hdrs=[("a", "1"), ("", "2")]), 0, 1), "E_EMPTY")
vec("request_257_fields", frame(REQUEST, request()[:-2] +
                                struct.pack(">H", 257), 0, 1), "E_LIMIT")
vec("request_65535_fields", frame(REQUEST, request()[:-2] +
                                  b"\xff\xff", 0, 1), "E_LIMIT")
vec("response_empty_payload", frame(RESPONSE, b"", 0, 1), "E_SHORT")
vec("response_status_99", frame(RESPONSE, response(99), 0, 1), "E_VALUE")
vec("response_status_1000", frame(RESPONSE, response(1000), 0, 1),
    "E_VALUE")
vec("response_status_0", frame(RESPONSE, response(0), 0, 1), "E_VALUE")
vec("response_no_nfields", frame(RESPONSE, b"\0\xc8", 0, 1), "E_SHORT")
vec("response_trailing", frame(RESPONSE, response() + b"!", 0, 1),
    "E_TRAILING")
vec("response_empty_header_name", frame(RESPONSE, response(
    200, [("", "x")]), 0, 1), "E_EMPTY")
vec("response_value_cut", frame(RESPONSE, response(
    200, [("a", "xyz")])[:-1], 0, 1), "E_SHORT")
vec("response_257_fields", frame(RESPONSE, b"\0\xc8\x01\x01", 0, 1),
    "E_LIMIT")
vec("trailers_empty_payload", frame(TRAILERS, b"", 0, 1), "E_SHORT")
vec("trailers_nfields_cut", frame(TRAILERS, b"\0", 0, 1), "E_SHORT")
vec("trailers_value_cut", frame(TRAILERS, fields(
    [("grpc-status", "0")])[:-1], 0, 1), "E_SHORT")
vec("trailers_trailing", frame(TRAILERS, fields([]) + b"\0", 0, 1),
    "E_TRAILING")
vec("trailers_empty_name", frame(TRAILERS, fields([("", "0")]), 0, 1),
    "E_EMPTY")
vec("trailers_257_fields", frame(TRAILERS, struct.pack(">H", 257), 0, 1),
    "E_LIMIT")
vec("error_empty_payload", frame(ERROR, b"", 0, 1), "E_SHORT")
vec("error_text_cut", frame(ERROR, u32(1) + b"\0\x05abc", 0, 1), "E_SHORT")
vec("error_trailing", frame(ERROR, error(1, "x") + b"y", 0, 1),
    "E_TRAILING")
vec("error_text_4097", frame(ERROR, error(2, "e" * 4097), 0, 1), "E_LIMIT")
vec("error_text_limit_before_short", frame(ERROR, u32(1) + b"\xff\xff"),
    "E_LIMIT")
vec("goaway_short", frame(GOAWAY, u32(1) + b"\0\0"), "E_SHORT")
vec("goaway_trailing", frame(GOAWAY, goaway(1, 7, "") + b"\0"),
    "E_TRAILING")
vec("goaway_text_4097", frame(GOAWAY, goaway(1, 7, "g" * 4097)), "E_LIMIT")
vec("window_zero", frame(WINDOW, u32(0), 0, 1), "E_VALUE")

# --- incomplete frames ---
vec("need_header", frame(PING, OPAQUE)[:11], "NEED_MORE")
vec("need_payload", frame(PING, OPAQUE)[:19], "NEED_MORE")
vec("need_request_payload", frame(REQUEST, request(), FLAG_END, 1)[:12],
    "NEED_MORE")
vec("need_trailers_payload", frame(TRAILERS, fields([("a", "b")]), 0,
                                   1)[:-1], "NEED_MORE")
vec("need_nothing", b"", "NEED_MORE")


def main():
    out = sys.stdout
    out.write("# ingressd wire protocol v2 test vectors; generated by "
              "tests/vectors/gen_frames.py.\n")
    out.write("# name<TAB>hex of the frame<TAB>expected (ok or a result "
              "name).  See docs/protocol.md.\n")
    names = set()
    for name, data, expected in V:
        assert name not in names, name
        names.add(name)
        out.write("%s\t%s\t%s\n" % (name, data.hex(), expected))


if __name__ == "__main__":
    main()
