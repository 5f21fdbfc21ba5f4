#!/usr/bin/env python3
"""bench/grpcstream.py -- the Python half of bench/grpcstream.sh (stdlib
only): a long gRPC server stream through ingressd against its HTTP/1.1
streaming rate (issue 14).

  ports N      print N free 127.0.0.1 TCP ports
  conf         write ingressd's conf: one h2c + HTTP/1.1 listener, /sleep ->
               replica-sleep, /ingressd.example.Echo/ -> replica-grpc-echo
  msg          write the gRPC request of Source: one message, the count
  stream       one transfer through h2load -n1 -c1 (or curl): HTTP/1.1
               ?source, or the gRPC Source call over h2c; its rate,
               ingressd's VmRSS sampled every 50 ms, the CPU of ingressd,
               of the replica and of the client
  slow         a slow gRPC reader over h2c (a raw client, its windows
               reopened only as it reads): RATE bytes/s for SECS, then
               RST_STREAM(CANCEL); ingressd's VmRSS sampled meanwhile
  report       the table, issue 14's checks, results.md and results.json
"""

import argparse
import json
import math
import os
import platform
import re
import socket
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import RSS_FLAT_MIB, cmd_ports, proc_rss_kib, proc_ticks  # noqa

SOURCE = "/ingressd.example.Echo/Source"
MSG = 64 << 10			# replica-grpc-echo's Source message size
RATIO_BAR = 0.80		# gRPC MB/s over HTTP/1.1 MB/s, issue 14


def cmd_conf(a):
    conf = {
        "listen": ["127.0.0.1:%d" % a.port],
        "admin": "127.0.0.1:%d" % a.admin,
        "workers": 1,
        "runtime_dir": os.path.abspath(a.runtime_dir),
        "log_level": "warn",
        "routes": [{"prefix": "/sleep", "deployment": "sleep"},
                   {"prefix": "/ingressd.example.Echo/",
                    "deployment": "grpc-echo"}],
        "deployments": {
            "sleep": {"spawn": {"command": [a.sleep], "replicas": 1}},
            "grpc-echo": {"spawn": {"command": [a.grpc], "replicas": 1}},
        },
    }
    with open(a.out, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    return 0


def grpc_msg(payload):
    return b"\x00" + struct.pack(">I", len(payload)) + payload


def cmd_msg(a):
    with open(a.out, "wb") as f:
        f.write(grpc_msg(struct.pack(">Q", a.bytes)))
    return 0


def grpc_size(n):
    """What Source's response body weighs: the bytes and a 5-byte
    prefix per message."""
    return n + 5 * math.ceil(n / MSG)


def grpc_status(head_path):
    """grpc-status in what curl -D wrote (the head, then the trailers)."""
    try:
        with open(head_path, "rb") as f:
            text = f.read().decode("latin-1")
    except OSError:
        return None
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip().lower() == "grpc-status":
            return v.strip()
    return None


def stream_cmd(a):
    if a.client == "h2load":
        cmd = ["h2load", "-n1", "-c1"]
        if a.kind == "h1":
            cmd.append("--h1")
        else:
            cmd += ["-d", a.msg]
    else:
        cmd = ["curl", "-s", "-S", "--max-time", str(a.timeout), "-o",
               "/dev/null", "-D", a.raw + ".head", "-w",
               "%{http_code} %{size_download} %{time_total}"]
        if a.kind == "grpc":
            cmd += ["--http2-prior-knowledge", "-X", "POST",
                    "--data-binary", "@" + a.msg]
    if a.kind == "grpc":
        cmd += ["-H", "content-type: application/grpc", "-H", "te: trailers"]
    return ["timeout", "-k", "5", str(a.timeout)] + cmd + [a.url]


def h2load_secs(s):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", s)
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def parse_h2load(text):
    """(status, data bytes, seconds) of h2load -n1: its one request's
    time (connect excluded), the 2xx count standing in for the status."""
    ok = re.search(r"^status codes: (\d+) 2xx", text, re.M)
    data = re.search(r"^traffic: .*\((\d+)\) data$", text, re.M)
    t = re.search(r"^time for request:\s+\S+\s+\S+\s+(\S+)", text, re.M)
    if not (ok and data and t):
        raise ValueError("h2load printed no result")
    return ("200" if ok.group(1) == "1" else "not 2xx",
            data.group(1), h2load_secs(t.group(1)))


def cmd_stream(a):
    hz = os.sysconf("SC_CLK_TCK")
    proxy = [int(p) for p in a.proxy_pids.split()]
    backend = [int(p) for p in a.backend_pids.split()]
    cmd = stream_cmd(a)
    try:
        os.unlink(a.raw + ".head")
    except FileNotFoundError:
        pass
    rss0 = peak = proc_rss_kib(proxy)
    p0, b0 = proc_ticks(proxy), proc_ticks(backend)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # The client's CPU from its rusage: wait4 reaps it, so poll with WNOHANG.
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.05)
        peak = max(peak, proc_rss_kib(proxy))
    p.returncode = os.waitstatus_to_exitcode(status)
    out, err = (x.decode(errors="replace") for x in p.communicate())
    p1, b1 = proc_ticks(proxy), proc_ticks(backend)
    with open(a.raw, "w") as f:
        f.write(" ".join(cmd) + "\n" + out + "\n" + err)
    want = grpc_size(a.bytes) if a.kind == "grpc" else a.bytes
    run = {"kind": a.kind, "round": a.round, "bytes": a.bytes,
           "client": a.client,
           "rc": p.returncode, "rss_start_kib": rss0, "rss_peak_kib": peak,
           "load1": os.getloadavg()[0], "raw": a.raw,
           "cpu_client_s": ru.ru_utime + ru.ru_stime}
    why = None
    try:
        code, down, secs = parse_h2load(out) if a.client == "h2load" \
            else out.split()
        run["secs"] = float(secs)
        run["mbps"] = a.bytes / float(secs) / 1e6
        if code != "200":
            why = "status %s" % code
        elif int(down) != want:
            why = "%s bytes downloaded, not %d" % (down, want)
        elif a.kind == "grpc" and a.client == "curl" and \
                grpc_status(a.raw + ".head") != "0":
            why = "grpc-status %s" % grpc_status(a.raw + ".head")
    except ValueError:
        why = "%s: %s" % (a.client, err.strip() or out.strip()[-200:] or
                          "no output")
    if p.returncode != 0:
        why = "%s exit %d: %s" % (a.client, p.returncode, err.strip())
    run["ok"] = why is None
    if why:
        run["why"] = why
    gb = a.bytes / 1e9
    if p0 is not None and p1 is not None:
        run["cpu_proxy_s_gb"] = (p1 - p0) / hz / gb
    if b0 is not None and b1 is not None and backend:
        run["cpu_backend_s_gb"] = (b1 - b0) / hz / gb
    run["cpu_client_s_gb"] = run["cpu_client_s"] / gb
    with open(a.out, "a") as f:
        f.write(json.dumps(run) + "\n")
    print("bench: round %d %s: %s" % (
        a.round, a.kind, "%.0f MB/s, RSS %d -> %d KiB" % (
            run["mbps"], rss0, peak) if run["ok"] else "FAILED: " + why),
        file=sys.stderr)
    return 0


# ---- a raw h2c client (RFC 9113), for the slow reader ---------------------

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = \
    0, 1, 3, 4, 6, 7, 8
END_STREAM, ACK = 0x1, 0x1
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid) + payload


def hpack_int(n, prefix):
    top = (1 << prefix) - 1
    if n < top:
        return bytes([n])
    out, n = [top], n - top
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    return bytes(out + [n])


def hpack_literal(name, value):
    """A literal field without indexing, no Huffman (RFC 7541 6.2.2):
    nothing to decode on our side, nothing kept in a table."""
    name, value = name.encode(), value.encode()
    return b"\x00" + hpack_int(len(name), 7) + name + \
        hpack_int(len(value), 7) + value


class H2c:
    """One connection, one gRPC call on stream 1; DATA credited back
    only when the caller says it has read it."""

    def __init__(self, port, path, body, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.buf = b""
        hdrs = b"".join(hpack_literal(k, v) for k, v in (
            (":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "127.0.0.1:%d" % port),
            ("content-type", "application/grpc"), ("te", "trailers")))
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0) +
                          frame(HEADERS, 0x4, 1, hdrs) +
                          frame(DATA, END_STREAM, 1, body))

    def read_frame(self, deadline):
        """(type, flags, sid, payload), or None at the deadline or EOF."""
        while len(self.buf) < 9 or \
                len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except (socket.timeout, ConnectionResetError):
                return None
            if not chunk:
                return None
            self.buf += chunk
        n = int.from_bytes(self.buf[:3], "big")
        f = (self.buf[3], self.buf[4],
             struct.unpack(">I", self.buf[5:9])[0] & 0x7fffffff,
             self.buf[9:9 + n])
        self.buf = self.buf[9 + n:]
        if f[0] == SETTINGS and not f[1] & ACK:
            self.sock.sendall(frame(SETTINGS, ACK, 0))
        elif f[0] == PING and not f[1] & ACK:
            self.sock.sendall(frame(PING, ACK, 0, f[3]))
        return f

    def credit(self, n):
        inc = struct.pack(">I", n)
        self.sock.sendall(frame(WINDOW_UPDATE, 0, 0, inc) +
                          frame(WINDOW_UPDATE, 0, 1, inc))

    def cancel(self):
        self.sock.sendall(frame(RST_STREAM, 0, 1, struct.pack(">I", 8)))

    def close(self):
        self.sock.close()


def source_sent(port):
    """replica-grpc-echo's SourceStats: bytes its Source calls sent."""
    c = H2c(port, "/ingressd.example.Echo/SourceStats", grpc_msg(b""))
    body, deadline = b"", time.monotonic() + 5
    try:
        while True:
            f = c.read_frame(deadline)
            if f is None:
                raise OSError("SourceStats: no answer")
            if f[0] == DATA and f[2] == 1:
                body += f[3]
            if f[2] == 1 and f[0] in (DATA, HEADERS) and f[1] & END_STREAM:
                break
    finally:
        c.close()
    return int(body[5:].split(b"=")[1])


def cmd_slow(a):
    """Read a gRPC Source stream at a.rate for a.secs; the stream and
    connection windows (65,535 bytes, the default) reopened as we read."""
    proxy = [int(p) for p in a.proxy_pids.split()]
    sent0 = source_sent(a.port)
    rss0 = peak = proc_rss_kib(proxy)
    samples, next_sample = [], 0.0
    c = H2c(a.port, SOURCE, grpc_msg(struct.pack(">Q", a.bytes)))
    got, ahead, why, t0 = 0, None, None, time.monotonic()
    end = t0 + a.secs
    while time.monotonic() < end:
        f = c.read_frame(end + 5)
        if f is None:
            why = "connection closed or stalled after %d bytes" % got
            break
        now = time.monotonic()
        if now >= next_sample:
            kb = proc_rss_kib(proxy)
            samples.append(kb)
            peak = max(peak, kb)
            next_sample = now + 0.05
        if f[0] == RST_STREAM or f[0] == GOAWAY:
            why = "stream reset (frame type %d)" % f[0]
            break
        if f[0] == HEADERS and f[1] & END_STREAM:
            why = "the stream ended early, after %d bytes" % got
            break
        if f[0] != DATA or f[2] != 1 or not f[3]:
            continue
        got += len(f[3])
        if ahead is None and now - t0 >= a.secs / 2:
            ahead = source_sent(a.port) - sent0 - got
        wait = t0 + got / a.rate - now
        if wait > 0:
            time.sleep(wait)
        c.credit(len(f[3]))
    elapsed = time.monotonic() - t0
    if why is None:
        c.cancel()
    c.close()
    run = {"kind": "slow", "bytes": a.bytes, "rate": a.rate,
           "secs": elapsed, "got": got, "mbps": got / elapsed / 1e6,
           "ahead": ahead, "rss_start_kib": rss0, "rss_peak_kib": peak,
           "rss_samples": len(samples), "load1": os.getloadavg()[0],
           "ok": why is None}
    if why:
        run["why"] = why
    with open(a.out, "a") as f:
        f.write(json.dumps(run) + "\n")
    print("bench: slow reader: %s" % (
        "%.1f MB/s for %.1f s, replica ahead %s, RSS %d -> %d KiB" % (
            run["mbps"], elapsed, ahead, rss0, peak)
        if run["ok"] else "FAILED: " + why), file=sys.stderr)
    return 0


# ---- the report -------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec="%.1f"):
    return "-" if x is None else spec % x


def read_lines(path):
    try:
        with open(path) as f:
            return [l.strip() for l in f if l.strip()]
    except OSError:
        return []


def cmd_report(a):
    runs = [json.loads(l) for l in read_lines(os.path.join(a.raw,
                                                            "runs.jsonl"))]
    params = read_lines(os.path.join(a.raw, "params"))
    load0 = read_lines(os.path.join(a.raw, "loadavg.start"))
    load1 = read_lines(os.path.join(a.raw, "loadavg.end"))
    out = ["# ingressd: a gRPC server stream against HTTP/1.1 (issue 14)",
           "", "- machine: %s, %d CPUs; load average at start %s, at end "
           "%s (1, 5, 15 min; the machine may be shared)" % (
               platform.platform(), os.cpu_count(),
               load0[0] if load0 else "?", load1[0] if load1 else "?"),
           "- " + ", ".join(params), "",
           "MB/s = 10^6 bytes/s of payload (h2load: its request's time, "
           "connect excluded; curl: time_total); RSS: "
           "ingressd's VmRSS every 50 ms; CPU s/GB: utime+stime per 10^9 "
           "bytes of payload.", "",
           "| load | MB/s median (min-max) | ingressd RSS MiB start / peak"
           " (max growth) | CPU s/GB ingressd | replica | client | "
           "load1 at each | failed |", "|---|---|---|---|---|---|---|---|"]
    stats = {}
    for kind, label in (("h1", "HTTP/1.1 `/sleep?source=N&rate=0`"),
                        ("grpc", "gRPC `Source` over h2c")):
        rs = [r for r in runs if r["kind"] == kind]
        ok = [r for r in rs if r["ok"]]
        bad = ["round %d: %s" % (r["round"], r["why"]) for r in rs
               if not r["ok"]]
        if not ok:
            out.append("| %s | FAILED |||||| %s |" % (label,
                                                     "; ".join(bad)))
            continue
        m = [r["mbps"] for r in ok]
        growth = max(r["rss_peak_kib"] - r["rss_start_kib"] for r in ok)
        stats[kind] = {"mbps": med(m), "growth_mib": growth / 1024}
        out.append("| %s | %.0f (%.0f-%.0f) | %.1f / %.1f (%.1f) | %s | "
                   "%s | %s | %s | %s |" % (
                       label, med(m), min(m), max(m),
                       min(r["rss_start_kib"] for r in ok) / 1024,
                       max(r["rss_peak_kib"] for r in ok) / 1024,
                       growth / 1024,
                       fmt(med(r.get("cpu_proxy_s_gb") for r in ok), "%.2f"),
                       fmt(med(r.get("cpu_backend_s_gb") for r in ok),
                           "%.2f"),
                       fmt(med(r.get("cpu_client_s_gb") for r in ok), "%.2f"),
                       "/".join("%.1f" % r["load1"] for r in ok),
                       "; ".join(bad) or "0"))
    by = {(r["kind"], r["round"]): r for r in runs
          if r["kind"] in ("h1", "grpc") and r["ok"]}
    ratios = [by[("grpc", n)]["mbps"] / by[("h1", n)]["mbps"]
              for (k, n) in sorted(by) if k == "grpc" and ("h1", n) in by]
    out += ["", "gRPC / HTTP/1.1 MB/s, same round: %s; median %s" % (
        " / ".join("%.2f" % x for x in ratios) or "-",
        fmt(med(ratios), "%.2f"))]
    slow = [r for r in runs if r["kind"] == "slow"]
    for r in slow:
        out += ["", "Slow gRPC reader (h2c, 65,535-byte windows reopened "
                "as it reads, then RST_STREAM CANCEL): " + (
                    "%.1f MB/s for %.1f s (%d bytes of %d offered); the "
                    "replica %s bytes ahead half way; ingressd RSS %.1f -> "
                    "%.1f MiB over %d samples" % (
                        r["mbps"], r["secs"], r["got"], r["bytes"],
                        r["ahead"], r["rss_start_kib"] / 1024,
                        r["rss_peak_kib"] / 1024, r["rss_samples"])
                    if r["ok"] else "FAILED: " + r["why"])]
    checks = []

    def check(label, ok, have):
        checks.append(ok)
        out.append("- %s: **%s** (%s)" % (label, "met" if ok else "NOT met",
                                           have))
    out += ["", "Issue 14's targets:", ""]
    r = med(ratios)
    size = max([x["bytes"] for x in runs if x["kind"] == "grpc"] or [0])
    check("a gRPC server stream of %d bytes >= %.0f%% of the HTTP/1.1 "
          "rate" % (size, 100 * RATIO_BAR), r is not None and r >= RATIO_BAR,
          fmt(r, "%.2f"))
    for kind in ("h1", "grpc"):
        g = stats.get(kind, {}).get("growth_mib")
        check("RSS flat during the %s stream (growth <= %d MiB)" % (
            kind, RSS_FLAT_MIB), g is not None and g <= RSS_FLAT_MIB,
            fmt(g) + " MiB")
    for s in slow:
        g = (s["rss_peak_kib"] - s["rss_start_kib"]) / 1024
        check("RSS flat under a slow gRPC reader (growth <= %d MiB)" %
              RSS_FLAT_MIB, s["ok"] and g <= RSS_FLAT_MIB, "%.1f MiB" % g)
    text = "\n".join(out) + "\n"
    print(text)
    with open(a.md, "w") as f:
        f.write(text)
    with open(a.json, "w") as f:
        json.dump({"runs": runs, "ratios": ratios}, f, indent=1)
    # Like proto.py: a target missed is reported, a transfer failed fails.
    return 0 if runs and all(x["ok"] for x in runs) else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ports")
    p.add_argument("n", type=int)
    p.set_defaults(fn=cmd_ports)
    p = sub.add_parser("conf")
    for k in ("port", "admin"):
        p.add_argument("--" + k, type=int, required=True)
    for k in ("runtime-dir", "sleep", "grpc", "out"):
        p.add_argument("--" + k, required=True)
    p.set_defaults(fn=cmd_conf)
    p = sub.add_parser("msg")
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_msg)
    p = sub.add_parser("stream")
    p.add_argument("--kind", choices=("h1", "grpc"), required=True)
    p.add_argument("--round", type=int, required=True)
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--timeout", type=int, default=300)
    for k in ("url", "proxy-pids", "out", "raw"):
        p.add_argument("--" + k, required=True)
    p.add_argument("--backend-pids", default="")
    p.add_argument("--msg", default="")
    p.add_argument("--client", choices=("h2load", "curl"), default="h2load")
    p.set_defaults(fn=cmd_stream)
    p = sub.add_parser("slow")
    for k in ("port", "bytes", "rate"):
        p.add_argument("--" + k, type=int, required=True)
    p.add_argument("--secs", type=float, required=True)
    for k in ("proxy-pids", "out"):
        p.add_argument("--" + k, required=True)
    p.set_defaults(fn=cmd_slow)
    p = sub.add_parser("report")
    for k in ("raw", "md", "json"):
        p.add_argument("--" + k, required=True)
    p.set_defaults(fn=cmd_report)
    a = ap.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
