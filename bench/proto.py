#!/usr/bin/env python3
"""bench/proto.py -- the Python half of bench/proto.sh (stdlib only).

  ports N           print N free 127.0.0.1 TCP ports
  ingressd-conf     write ingressd's conf: an h2c + HTTP/1.1 listener, a
                    TLS listener (TLS 1.3, TLS_AES_128_GCM_SHA256, like the
                    peers), /hello -> replica-hello, gRPC -> replica-grpc-echo
  report            parse the raw outputs of h2load and wrk, print the
                    tables, check issues 14 and 15's targets, write
                    results.md and results.json
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import cmd_ports, parse_wrk  # noqa: E402  (same directory)

TARGETS = ["ingressd", "nginx", "haproxy"]
TOOLS = ["h2", "grpc", "h1", "tls", "tlsnew"]
TOOL_NOTE = {
    "h2": "h2load -c H2_CONNS -m H2_STREAMS -n H2_N, GET /hello over h2c",
    "grpc": "h2load, the same, gRPC unary POST /ingressd.example.Echo/Unary "
            "(5-byte empty message) over h2c",
    "h1": "wrk -t1 -c CONNS, GET /hello, HTTP/1.1 keep-alive",
    "tls": "wrk -t1 -c CONNS, GET https://.../hello, keep-alive "
           "(TLS 1.3, TLS_AES_128_GCM_SHA256)",
    "tlsnew": "wrk -t1 -c CONNS -H 'Connection: close', https: a full "
              "handshake per request",
}
TARGET_NOTE = {
    "ingressd": "ingressd -> replica-hello / replica-grpc-echo (wire "
                "protocol over unix sockets)",
    "nginx": "nginx 1 worker -> origin nginx (/hello: HTTP/1.1 keepalive; "
             "gRPC: grpc_pass over h2c, keepalive)",
    "haproxy": "HAProxy 1 thread -> origin nginx (/hello: HTTP/1.1; gRPC: "
               "proto h2; http-reuse always)",
}
# (tool, peer, bar): ingressd's req/s over the peer's, same round, median.
BARS = [("h2", "nginx", 1.5), ("h2", "haproxy", 1.2),
        ("grpc", "nginx", 1.5), ("grpc", "haproxy", 1.2),
        ("tls", "nginx", 1.5), ("tls", "haproxy", 1.2),
        ("tlsnew", "nginx", 1.0)]


def cmd_ingressd_conf(a):
    tls = {"certificates": [{"cert": a.cert, "key": a.key}],
           "min_version": "TLSv1.3",
           "ciphersuites": "TLS_AES_128_GCM_SHA256",
           "alpn": ["http/1.1"],
           "session_tickets": a.tickets == 1}
    conf = {
        "listen": ["127.0.0.1:%d" % a.port,
                   {"address": "127.0.0.1:%d" % a.tls_port, "tls": tls}],
        "admin": "127.0.0.1:%d" % a.admin,
        "workers": 1,
        "runtime_dir": os.path.abspath(a.runtime_dir),
        "log_level": "warn",
        "limits": {"max_connections": 20000},
        "routes": [{"prefix": "/hello", "deployment": "hello"},
                   {"prefix": "/ingressd.example.Echo/",
                    "deployment": "grpc-echo"}],
        "deployments": {
            "hello": {"spawn": {"command": [a.hello], "replicas": 1},
                      "max_ongoing_requests": 1024},
            "grpc-echo": {"spawn": {"command": [a.grpc], "replicas": 1},
                          "max_ongoing_requests": 1024},
        },
    }
    with open(a.out, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    return 0


def parse_h2load(text):
    m = re.search(r"^finished in [^,]+, ([\d.]+) req/s", text, re.M)
    if not m:
        raise ValueError("no 'finished in' line")
    r = {"rps": float(m.group(1))}
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, "
                  r"(\d+) succeeded, (\d+) failed, (\d+) errored, "
                  r"(\d+) timeout", text, re.M)
    if not m:
        raise ValueError("no 'requests:' line")
    total, _, done, ok, failed, errored, tmo = map(int, m.groups())
    # "failed" counts 4xx/5xx answers as well as "errored" streams: every
    # request that was not a success counts once.
    r["requests"] = done
    r["errors"] = total - ok
    r["failed"] = "failed %d, errored %d, timeout %d" % (failed, errored,
                                                          tmo)
    m = re.search(r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
    if m:
        r["mean_ms"] = wrk_like_ms(m.group(3))
    return r


def wrk_like_ms(s):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", s)
    if not m:
        return None
    return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[
        m.group(2)]


def load_runs(raw):
    hz = os.sysconf("SC_CLK_TCK")
    runs = []
    with open(os.path.join(raw, "runs.tsv")) as f:
        for line in f:
            target, tool, rnd, rc, p0, p1, b0, b1, out, load = \
                line.rstrip("\n").split("\t")
            run = {"target": target, "tool": tool, "round": int(rnd),
                   "rc": int(rc), "raw": out, "load1": float(load),
                   "ok": False}
            try:	# found in RAW even if the directory was copied
                with open(os.path.join(raw, os.path.basename(out))) as g:
                    text = g.read()
                run.update(parse_h2load(text) if tool in ("h2", "grpc")
                           else parse_wrk(text))
                run["ok"] = run["rc"] == 0
            except (OSError, ValueError) as e:
                run["why"] = str(e)
            m = re.search(r"^client-cpu:([\d.]+):([\d.]+)$", text, re.M) \
                if run["ok"] else None
            n = run.get("requests")
            if m and n:
                run["cpu_client"] = (float(m.group(1)) + float(m.group(2))) \
                    * 1e6 / n
            for key, t0, t1 in (("cpu_proxy", p0, p1),
                                ("cpu_backend", b0, b1)):
                if n and t0 not in ("NA", "") and t1 not in ("NA", ""):
                    run[key] = (int(t1) - int(t0)) * 1e6 / hz / n
            runs.append(run)
    return runs


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratios(runs, tool, peer):
    """ingressd's req/s / the peer's in each round, in round order."""
    by = {(r["target"], r["round"]): r for r in runs
          if r["tool"] == tool and r["ok"]}
    return [by[("ingressd", n)]["rps"] / by[(peer, n)]["rps"]
            for (t, n) in sorted(by, key=lambda k: k[1])
            if t == "ingressd" and (peer, n) in by]


def ratio(runs, tool, peer):
    """Median over rounds of ingressd's req/s / the peer's, same round."""
    return med(ratios(runs, tool, peer))


def fmt(x, spec="%.1f"):
    return "-" if x is None else spec % x


def tables(runs, tools, targets):
    out = []
    for tool in tools:
        out.append("\n### %s: %s\n" % (tool, TOOL_NOTE[tool]))
        out.append("| target | req/s median (min-max) | latency ms | "
                   "CPU µs/req proxy | CPU µs/req backend | CPU µs/req client | "
                   "x nginx | x haproxy | errors | load1 |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for t in targets:
            rs = [r for r in runs if r["tool"] == tool and r["target"] == t]
            ok = [r for r in rs if r.get("rps") is not None]
            if not ok:
                out.append("| %s | FAILED: %s |||||||| " % (
                    t, "; ".join(r.get("why", "rc %d" % r["rc"])
                                 for r in rs) or "not run"))
                continue
            rps = [r["rps"] for r in ok]
            if tool in ("h2", "grpc"):
                lat = "mean %s" % fmt(med(r.get("mean_ms") for r in ok), "%.2f")
            else:
                lat = "p50 %s, p99 %s" % (fmt(med(r["p50"] for r in ok), "%.2f"),
                                          fmt(med(r["p99"] for r in ok), "%.2f"))
            x = ["%.2f" % ratio(runs, tool, p) if t == "ingressd" and
                 ratio(runs, tool, p) is not None else "" for p in
                 ("nginx", "haproxy")]
            out.append("| %s | %.0f (%.0f-%.0f) | %s | %s | %s | %s | %s | "
                       "%s | %d | %s |" % (
                           t, med(rps), min(rps), max(rps), lat,
                           fmt(med(r.get("cpu_proxy") for r in ok)),
                           fmt(med(r.get("cpu_backend") for r in ok)),
                           fmt(med(r.get("cpu_client") for r in ok)),
                           x[0], x[1], sum(r.get("errors", 0) for r in ok),
                           "/".join("%.1f" % r["load1"] for r in ok)))
    return out


def cpu_of(runs, target, tool):
    return med(r.get("cpu_proxy") for r in runs
               if r["target"] == target and r["tool"] == tool and r["ok"])


def checks(runs, tools):
    out = ["\n### Targets (issues 14 and 15)\n"]
    for tool, peer, bar in BARS:
        if tool not in tools:
            continue
        x = ratio(runs, tool, peer)
        out.append("- %s: ingressd / %s req/s = %s (bar %.1f): %s "
                   "(rounds: %s)" % (
                       tool, peer, fmt(x, "%.2f"), bar,
                       "n/a" if x is None else "met" if x >= bar
                       else "NOT met",
                       " ".join("%.2f" % y for y in
                                ratios(runs, tool, peer))))
    g, h = cpu_of(runs, "ingressd", "grpc"), cpu_of(runs, "ingressd", "h1")
    if "grpc" in tools and "h1" in tools:
        out.append("- ingressd CPU per gRPC call %s µs <= per HTTP/1.1 "
                   "keep-alive request %s µs: %s" % (
                       fmt(g), fmt(h), "n/a" if None in (g, h) else
                       "met" if g <= h else "NOT met"))
    if "tls" in tools and "tlsnew" in tools:
        for t in TARGETS:
            k, n = cpu_of(runs, t, "tls"), cpu_of(runs, t, "tlsnew")
            if None not in (k, n):
                out.append("- %s: CPU µs per HTTPS keep-alive request %.1f; "
                           "per new-connection request %.1f, so about %.1f "
                           "µs per handshake (connection)" % (t, k, n, n - k))
    return out


def machine(raw):
    lines = ["- machine: %s, %d CPUs, %s" % (
        platform.node(), os.cpu_count() or 0, platform.platform())]
    for name in ("start", "end"):
        try:
            with open(os.path.join(raw, "loadavg." + name)) as f:
                lines.append("- load average at %s: %s" % (name,
                                                           f.read().strip()))
        except OSError:
            pass
    for cmd in (["nginx", "-v"], ["haproxy", "-v"], ["h2load", "--version"],
                ["openssl", "version"]):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
            lines.append("- %s" % ((p.stdout or p.stderr).splitlines()[0]))
        except (OSError, IndexError, subprocess.SubprocessError):
            pass
    try:
        with open(os.path.join(raw, "params")) as f:
            lines.append("- params: " + "; ".join(
                l.strip() for l in f if l.strip()))
    except OSError:
        pass
    return lines


def cmd_report(a):
    runs = load_runs(a.raw)
    tools = [t for t in TOOLS if any(r["tool"] == t for r in runs)]
    targets = [t for t in TARGETS if any(r["target"] == t for r in runs)]
    lines = ["## bench/proto.sh results\n"] + machine(a.raw) + [""]
    lines += ["- %s: %s" % (t, TARGET_NOTE[t]) for t in targets]
    lines += tables(runs, tools, targets) + checks(runs, tools)
    try:
        with open(os.path.join(a.raw, "ingressd.tls-metrics.txt")) as f:
            m = dict(l.rsplit(None, 1) for l in f if l.strip())
        total = sum(float(v) for k, v in m.items()
                    if k.startswith("ingressd_tls_handshakes_total"))
        res = float(m.get("ingressd_tls_handshakes_resumed_total", 0))
        if total:
            lines.append("- ingressd's TLS handshakes (warm-up included): "
                         "%d, of which %d resumed a session (%.0f%%)" % (
                             total, res, 100 * res / total))
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(a.raw, "failed.tsv")) as f:
            lines += ["- FAILED " + l.strip() for l in f]
    except OSError:
        pass
    text = "\n".join(lines) + "\n"
    print(text)
    with open(a.md, "w") as f:
        f.write(text)
    with open(a.json, "w") as f:
        json.dump(runs, f, indent=1)
    bad = [r for r in runs if r["target"] == "ingressd" and
           (not r["ok"] or r.get("errors"))]
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ports")
    p.add_argument("n", type=int)
    p.set_defaults(fn=cmd_ports)
    p = sub.add_parser("ingressd-conf")
    for k in ("port", "tls-port", "admin", "tickets"):
        p.add_argument("--" + k, type=int, required=True)
    for k in ("cert", "key", "runtime-dir", "hello", "grpc", "out"):
        p.add_argument("--" + k, required=True)
    p.set_defaults(fn=cmd_ingressd_conf)
    p = sub.add_parser("report")
    for k in ("raw", "md", "json"):
        p.add_argument("--" + k, required=True)
    p.set_defaults(fn=cmd_report)
    a = ap.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
