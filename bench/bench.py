#!/usr/bin/env python3
"""bench/bench.py -- the Python half of `make bench` (stdlib only).

bench/run.sh starts and stops the processes and runs the load generators;
this file does what is awkward in sh:

  ports N                 print N free 127.0.0.1 TCP ports, one a line
  ingressd-conf ...       write the bench conf for ingressd (JSON)
  replica-pids ADMIN      print replica pids from GET /-/deployments
  stream ...              one streamed transfer through curl: rate, the
                          proxy's peak RSS and CPU; appends a JSON line
  report ...              parse the raw outputs, print the tables, check
                          issue 8's targets, write results.md and .json

The raw outputs stay in build/bench/raw/ so any figure can be checked
against what wrk, ab or curl printed.
"""

import argparse
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

TARGETS = ["ingressd", "ingressd-inproc", "ingressd-http", "haproxy", "nginx-proxy", "h2o",
           "nginx-uwsgi", "nginx-direct"]
STREAM_TARGETS = ["ingressd", "ingressd-http", "haproxy", "nginx-proxy", "h2o", "direct"]
TOOLS = ["wrk", "wrk1", "wrk1k", "ab", "abk"]
MODES = ["down", "down-chunked", "up", "up-chunked"]
REFS = [("nginx-proxy", "x nginx-proxy"), ("haproxy", "x haproxy"),
        ("nginx-direct", "x direct")]
TARGET_NOTE = {
    "ingressd": "ingressd /hello -> replica-hello (wire protocol over a "
                "unix socket, one connection multiplexed)",
    "ingressd-inproc": "ingressd /hello -> build/mod-hello.so loaded into "
                       "the worker (\"inproc\": direct calls, no hop)",
    "ingressd-http": "ingressd -> origin nginx (\"protocol\": \"http\", "
                     "keep-alive pool)",
    "haproxy": "HAProxy -> origin nginx (keep-alive, http-reuse always)",
    "nginx-proxy": "nginx proxy_pass -> origin nginx (HTTP/1.1, upstream "
                   "keepalive %(NGINX_KEEPALIVE)s)",
    "h2o": "h2o -> origin nginx (keep-alive)",
    "nginx-uwsgi": "nginx uwsgi_pass -> uwsgi, Python WSGI hello (one "
                   "connection per request on the second hop)",
    "nginx-direct": "origin nginx return 200, no proxy (one-hop ceiling)",
}
MODE_NOTE = {
    "down": "download, Content-Length (ingressd: replica-sleep "
            "?source=N&rate=0; others: the origin nginx's /big file)",
    "down-chunked": "download, Transfer-Encoding: chunked (ingressd: "
                    "replica-sleep ?source=N&rate=0&chunked=1; others: "
                    "bench/sink.py /source?bytes=N)",
    "up": "upload, Content-Length (ingressd: replica-sleep "
          "?sink=10^12; others: bench/sink.py)",
    "up-chunked": "upload, Transfer-Encoding: chunked (same backends)",
}
RSS_FLAT_MIB = 16	# "RSS flat": peak minus start during a transfer


def cmd_ports(args):
    """Hold all sockets open until every port is chosen, so they differ."""
    socks = []
    try:
        for _ in range(args.n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        for s in socks:
            print(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return 0


def cmd_ingressd_conf(args):
    workers = args.workers if args.workers == "auto" else int(args.workers)
    conf = {
        "listen": ["127.0.0.1:%d" % args.port],
        "admin": "127.0.0.1:%d" % args.admin,
        "workers": workers,
        "runtime_dir": os.path.abspath(args.runtime_dir),
        "log_level": "warn",
        # The streams need 1 GB bodies; nothing else comes near.
        "limits": {"max_body": 1 << 40},
        "routes": [{"prefix": "/hello", "deployment": "hello"}],
        "deployments": {
            "hello": {
                "spawn": {
                    "command": [os.path.abspath(args.replica)],
                    "replicas": args.replicas,
                },
                "max_ongoing_requests": 1024,
            }
        },
    }
    if args.sleep_replica:
        conf["routes"].append({"prefix": "/sleep", "deployment": "sleep"})
        conf["deployments"]["sleep"] = {
            "spawn": {"command": [os.path.abspath(args.sleep_replica)],
                      "replicas": 1},
        }
    with open(args.out, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    return 0


def cmd_ingressd_http_conf(args):
    """ingressd in front of the origin nginx, like the other proxies."""
    workers = args.workers if args.workers == "auto" else int(args.workers)
    conf = {
        "listen": ["127.0.0.1:%d" % args.port],
        "workers": workers,
        "runtime_dir": os.path.abspath(args.runtime_dir),
        "log_level": "warn",
        "limits": {"max_body": 1 << 40},
        "routes": [{"prefix": "/", "deployment": "origin"}],
        "deployments": {
            "origin": {
                "endpoints": [args.origin],
                "protocol": "http",
                "max_ongoing_requests": 1024,
                "idle_timeout": 60,
            }
        },
    }
    if args.sink:
        # Streams: bodies to and from bench/sink.py, as the proxies route.
        conf["routes"][:0] = [{"prefix": p, "deployment": "sink"}
                              for p in ("/sink", "/source")]
        conf["deployments"]["sink"] = {
            "endpoints": [args.sink], "protocol": "http",
            "idle_timeout": 60}
    with open(args.out, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    return 0


def cmd_ingressd_inproc_conf(args):
    """ingressd answering /hello itself: the hello module in process."""
    workers = args.workers if args.workers == "auto" else int(args.workers)
    conf = {
        "listen": ["127.0.0.1:%d" % args.port],
        "workers": workers,
        "runtime_dir": os.path.abspath(args.runtime_dir),
        "log_level": "warn",
        "routes": [{"prefix": "/", "deployment": "hello"}],
        "deployments": {
            "hello": {
                "inproc": {"module": os.path.abspath(args.module)},
                "max_ongoing_requests": 1024,
            }
        },
    }
    with open(args.out, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    return 0


def http_get(url, timeout):
    """Return (status, body bytes); status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (OSError, ValueError) as e:
        return 0, str(e).encode()


def cmd_replica_pids(args):
    status, body = http_get("http://%s/-/deployments" % args.admin, 5)
    if status != 200:
        print("GET /-/deployments: status %d" % status, file=sys.stderr)
        return 1
    try:
        doc = json.loads(body)
        pids = [int(r["pid"]) for name, d in doc.items()
                if args.deployment in (None, name)
                for r in d.get("replicas", []) if r.get("pid")]
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        print("GET /-/deployments: unexpected JSON: %s" % e, file=sys.stderr)
        return 1
    for p in pids:
        print(p)
    return 0 if pids else 1


# ---- /proc ---------------------------------------------------------------

def proc_ticks(pids):
    """utime+stime of the pids summed, or None if one is gone."""
    t = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        t += int(fields[11]) + int(fields[12])
    return t


def proc_rss_kib(pids):
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError):
            pass
    return total


# ---- streams -------------------------------------------------------------

def is_down(mode):
    return mode in ("down", "down-chunked")


def stream_cmd(args):
    cmd = args.client.split() + [
        "curl", "-s", "-S", "--max-time", str(args.timeout),
        "-w", "%{http_code} %{size_download} %{size_upload} %{time_total}",
        "-o", "/dev/null" if is_down(args.mode) else args.raw + ".body"]
    if args.mode == "down-chunked":
        cmd += ["-D", args.raw + ".head"]
    if not is_down(args.mode):
        # No Expect: 100-continue: curl would wait for it on big bodies.
        cmd += ["-X", "POST", "-T", args.file, "-H", "Expect:",
                "-H", "Content-Type: application/octet-stream"]
        if args.mode == "up-chunked":
            cmd += ["-H", "Transfer-Encoding: chunked"]
    return cmd + [args.url]


def final_head(path):
    """The header names and values (lower-cased) of the last response
    head curl -D wrote (interim 1xx heads come before it)."""
    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    heads = [h for h in re.split(r"\r?\n\r?\n", text)
             if h.startswith("HTTP/")]
    if not heads:
        raise ValueError("no response head in %s" % path)
    fields = []
    for line in heads[-1].splitlines()[1:]:
        k, sep, v = line.partition(":")
        if sep:
            fields.append((k.strip().lower(), v.strip().lower()))
    return fields


def chunked_check(path):
    """Why the download did not come chunked, or None."""
    try:
        fields = final_head(path)
    except (OSError, ValueError) as e:
        return "no response head: %s" % e
    te = ",".join(v for k, v in fields if k == "transfer-encoding")
    if "chunked" not in [t.strip() for t in te.split(",")]:
        return "not chunked (transfer-encoding: %r)" % (te or None)
    if any(k == "content-length" for k, _ in fields):
        return "chunked but with a content-length"
    return None


def stream_check(args, code, down):
    """Why this transfer does not count, or None."""
    if code != "200":
        return "status %s" % code
    if is_down(args.mode):
        if down != args.bytes:
            return "%d bytes downloaded, not %d" % (down, args.bytes)
        if args.mode == "down-chunked":
            return chunked_check(args.raw + ".head")
        return None
    try:
        with open(args.raw + ".body") as f:
            got = json.load(f)["received"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return "no {\"received\": N} answer: %s" % e
    return None if got == args.bytes else \
        "the backend received %s bytes, not %d" % (got, args.bytes)


def cmd_stream(args):
    hz = os.sysconf("SC_CLK_TCK")
    proxy = [int(p) for p in args.proxy_pids.split()]
    backend = [int(p) for p in args.backend_pids.split()]
    rss0 = peak = proc_rss_kib(proxy)
    p0, b0 = proc_ticks(proxy), proc_ticks(backend)
    cmd = stream_cmd(args)
    try:
        os.unlink(args.raw + ".head")  # no stale head may pass
    except FileNotFoundError:
        pass
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    while p.poll() is None:
        time.sleep(0.05)
        peak = max(peak, proc_rss_kib(proxy))
    out, err = p.communicate()
    p1, b1 = proc_ticks(proxy), proc_ticks(backend)
    with open(args.raw, "w") as f:
        f.write(" ".join(cmd) + "\n" + out + "\n" + err)
    run = {"target": args.target, "mode": args.mode, "round": args.round,
           "bytes": args.bytes, "rc": p.returncode,
           "rss_start_kib": rss0, "rss_peak_kib": peak,
           "load1": os.getloadavg()[0], "raw": args.raw}
    try:
        code, down, up, secs = out.split()
        run["secs"] = float(secs)
        run["mbps"] = args.bytes / float(secs) / 1e6
        why = stream_check(args, code, int(down))
    except ValueError:
        why = "curl: %s" % (err.strip() or out.strip() or "no output")
    if p.returncode != 0:
        why = "curl exit %d: %s" % (p.returncode, err.strip())
    run["ok"] = why is None
    if why:
        run["why"] = why
    gb = args.bytes / 1e9
    if p0 is not None and p1 is not None and proxy:
        run["cpu_proxy_s_gb"] = (p1 - p0) / hz / gb
    if b0 is not None and b1 is not None and backend:
        run["cpu_backend_s_gb"] = (b1 - b0) / hz / gb
    with open(args.out, "a") as f:
        f.write(json.dumps(run) + "\n")
    print("bench: stream round %d %s %s: %s" % (
        args.round, args.mode, args.target,
        "%.0f MB/s, RSS %d -> %d KiB" % (run["mbps"], rss0, peak)
        if run["ok"] else "FAILED: " + why), file=sys.stderr)
    return 0


# ---- parsing the tools' output -------------------------------------------

UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def wrk_ms(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError("bad wrk duration %r" % text)
    return float(m.group(1)) * UNIT_MS[m.group(2)]


def parse_wrk(text):
    r = {}
    m = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    if not m:
        raise ValueError("no Requests/sec line")
    r["rps"] = float(m.group(1))
    m = re.search(r"^\s*(\d+) requests in ([\d.]+\w+),", text, re.M)
    if not m:
        raise ValueError("no 'N requests in' line")
    r["requests"] = int(m.group(1))
    for pct in ("50", "99"):
        m = re.search(r"^\s+%s(?:\.0+)?%%\s+([\d.]+\w+)" % pct, text, re.M)
        if not m:
            raise ValueError("no %s%% latency (--latency missing?)" % pct)
        r["p" + pct] = wrk_ms(m.group(1))
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", text)
    if m:
        errors += sum(int(x) for x in m.groups())
        r["socket_errors"] = "connect %s, read %s, write %s, timeout %s" \
            % m.groups()
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        errors += int(m.group(1))
    r["errors"] = errors
    return r


def parse_ab(text):
    r = {}
    m = re.search(r"^Requests per second:\s+([\d.]+)", text, re.M)
    if not m:
        raise ValueError("no 'Requests per second' line")
    r["rps"] = float(m.group(1))
    m = re.search(r"^Complete requests:\s+(\d+)", text, re.M)
    if not m:
        raise ValueError("no 'Complete requests' line")
    r["requests"] = int(m.group(1))
    for pct in ("50", "99"):
        m = re.search(r"^\s+%s%%\s+(\d+)" % pct, text, re.M)
        if not m:
            raise ValueError("no %s%% line" % pct)
        r["p" + pct] = float(m.group(1))	# ab: whole milliseconds
    # A non-2xx answer is usually also a "Failed request" (its length
    # differs from the first answer's): count it once.
    failed = non2xx = 0
    m = re.search(r"^Failed requests:\s+(\d+)", text, re.M)
    if m:
        failed = int(m.group(1))
    m = re.search(r"^Non-2xx responses:\s+(\d+)", text, re.M)
    if m:
        non2xx = int(m.group(1))
    r["errors"] = max(failed, non2xx)
    m = re.search(r"^Total transferred:\s+(\d+) bytes", text, re.M)
    if m and r["requests"]:
        r["bytes_per_resp"] = int(m.group(1)) / r["requests"]
    return r


def parse_perf(path, event):
    """The count perf stat -x, wrote for EVENT, or None."""
    try:
        with open(path) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2].startswith(event):
                    return float(fields[0])
    except (OSError, ValueError):
        pass
    return None


def cpu_us(t0, t1, requests, hz):
    """CPU microseconds per request from utime+stime ticks, or None."""
    if t0 in ("-", "NA") or t1 in ("-", "NA") or not requests:
        return None
    return (int(t1) - int(t0)) * 1e6 / hz / requests


def load_run(fields, raw, hz, env):
    target, tool, rnd, rc, p0, p1, b0, b1, out, load = fields
    run = {"target": target, "tool": tool, "round": int(rnd),
           "rc": int(rc) if rc.lstrip("-").isdigit() else -1,
           "raw": out, "ok": False, "load1": float(load)}
    text = ""
    try:
        # run.sh's path may be relative to another directory.
        out = os.path.join(raw, os.path.basename(out))
        with open(out, errors="replace") as o:
            text = o.read()
        run.update(parse_wrk(text) if tool.startswith("wrk")
                   else parse_ab(text))
        run["cpu_proxy"] = cpu_us(p0, p1, run["requests"], hz)
        run["cpu_backend"] = cpu_us(b0, b1, run["requests"], hz)
        ev = env.get("PERF_EVENT", "instructions")
        for side in ("proxy", "backend"):
            n = parse_perf(out + ".perf-" + side, ev)
            run["instr_" + side] = n / run["requests"] \
                if n is not None and run["requests"] else None
        run["ok"] = run["rc"] == 0 and run["errors"] == 0
        if run["rc"] != 0:
            run["why"] = "exit status %d" % run["rc"]
        elif run["errors"]:
            run["why"] = "%d errors" % run["errors"]
    except (OSError, ValueError) as e:
        run["why"] = "exit %s: %s" % (rc, e)
        if rc in ("124", "137"):
            run["why"] = "timed out (exit %s)" % rc
        elif text.strip():
            run["why"] += " (%s)" % text.strip().splitlines()[-1]
    return run


def load_runs(raw, hz, env):
    runs = []
    path = os.path.join(raw, "runs.tsv")
    if not os.path.exists(path):
        return runs
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 10:
                runs.append(load_run(fields, raw, hz, env))
    return runs


def load_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_streams(raw):
    return load_jsonl(os.path.join(raw, "streams.jsonl"))


def load_tsv(raw, name):
    """Target-level notes written by run.sh: target TAB reason."""
    notes = {}
    path = os.path.join(raw, name)
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                t, _, why = line.rstrip("\n").partition("\t")
                notes.setdefault(t, why)
    return notes


SC_GROUPS = [
    ("epoll_wait", ["epoll_wait", "epoll_pwait"]),
    ("epoll_ctl", ["epoll_ctl"]),
    ("reads", ["read", "readv", "recvfrom", "recvmsg"]),
    ("writes", ["write", "writev", "sendto", "sendmsg", "sendfile64",
                "splice"]),
    ("ioctl", ["ioctl"]),
    ("accept+close", ["accept4", "close"]),
]


def perf_counts(path):
    """{event: count} from a perf stat -x, file."""
    counts = {}
    try:
        with open(path) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and re.match(r"^[\d.]+$", fields[0]):
                    counts[fields[2]] = float(fields[0])
    except OSError:
        pass
    return counts


def syscall_groups(c, per):
    """The SC_GROUPS sums of perf_counts() c, each divided by per."""
    return {g: sum(c.get("syscalls:sys_enter_" + x, 0) for x in names) / per
            for g, names in SC_GROUPS}


def load_counts(raw):
    """Syscalls per request from run.sh's counting runs."""
    rows = []
    for line in read_lines(os.path.join(raw, "counts.tsv")):
        f_ = line.split("\t")
        if len(f_) != 3:
            continue
        target, tool, out = f_
        out = os.path.join(raw, os.path.basename(out))
        try:
            with open(out, errors="replace") as o:
                m = re.search(r"^\s*(\d+) requests in|"
                              r"^Complete requests:\s+(\d+)",
                              o.read(), re.M)
        except OSError:
            m = None
        n = int(m.group(1) or m.group(2)) if m else 0
        if not n:
            rows.append({"target": target, "tool": tool,
                         "failed": "no %s output" % tool})
            continue
        row = {"target": target, "tool": tool, "requests": n}
        for side in ("proxy", "backend"):
            c = perf_counts(out + "." + side)
            row[side] = c.get("raw_syscalls:sys_enter", 0) / n \
                if "raw_syscalls:sys_enter" in c else None
            for g, v in syscall_groups(c, n).items():
                row["%s_%s" % (side, g)] = v if c else None
        rows.append(row)
    return rows


def load_stream_counts(raw):
    """Syscalls per MiB moved, per proxy and mode, from count_stream."""
    rows = []
    path = os.path.join(raw, "count-streams.tsv")
    done = {(s["target"], s["mode"]): s for s in
            load_jsonl(os.path.join(raw, "count-streams.jsonl"))}
    for line in read_lines(path):
        f_ = line.split("\t")
        if len(f_) != 3:
            continue
        target, mode, out = f_
        s = done.get((target, mode))
        if not s or not s["ok"]:
            rows.append({"target": target, "mode": mode,
                         "failed": (s or {}).get("why", "no transfer")})
            continue
        c = perf_counts(os.path.join(raw, os.path.basename(out)) +
                        ".proxy")
        mib = s["bytes"] / (1 << 20)
        row = {"target": target, "mode": mode, "mbps": s["mbps"],
               "total": c.get("raw_syscalls:sys_enter", 0) / mib}
        row.update(syscall_groups(c, mib))
        row["bytes_per_read"] = 1024 * 1024 / row["reads"] \
            if row["reads"] else None
        rows.append(row)
    return rows


def stream_count_table(rows):
    head = ["target", "mode", "syscalls/MiB"] + [g for g, _ in SC_GROUPS] + \
        ["MiB / reads (KiB)"]
    body = []
    for r in rows:
        if "failed" in r:
            body.append([r["target"], r["mode"], "FAILED: " + r["failed"]] +
                        [""] * (len(head) - 3))
            continue
        body.append([r["target"], r["mode"], "%.0f" % r["total"]] +
                    ["%.0f" % r[g] for g, _ in SC_GROUPS] +
                    [fmt(r["bytes_per_read"] and r["bytes_per_read"] / 1024,
                         ".1f")])
    return head, body


def count_table(crows, tool):
    head = ["target", "syscalls/req proxy"] + [g for g, _ in SC_GROUPS] + \
        ["syscalls/req backend"]
    body = []
    for r in crows:
        if r["tool"] != tool:
            continue
        if "failed" in r:
            body.append([r["target"], "FAILED: " + r["failed"]] +
                        [""] * (len(head) - 2))
            continue
        body.append([r["target"], fmt(r["proxy"], ".2f")] +
                    [fmt(r["proxy_" + g], ".2f") for g, _ in SC_GROUPS] +
                    [fmt(r["backend"], ".2f")])
    return head, body


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ---- summaries -----------------------------------------------------------

def ratios(values, target, key, ref):
    """Per-round value over the reference's in the same round, median:
    the targets of one round ran seconds apart, so drift mostly cancels."""
    rs = [v / values[(ref, key, n)] for (tg, k, n), v in values.items()
          if tg == target and k == key and values.get((ref, key, n))]
    return med(rs)


def summarise(runs, failed, tools, targets):
    rows = []
    for tool in tools:
        for target in targets:
            rs = [r for r in runs if r["target"] == target
                  and r["tool"] == tool]
            good = [r for r in rs if "rps" in r]
            row = {"target": target, "tool": tool, "runs": len(rs),
                   "bad": [r.get("why", "") for r in rs if not r["ok"]],
                   "errors": sum(r.get("errors", 0) for r in rs),
                   "socket_errors": [r["socket_errors"] for r in rs
                                     if r.get("socket_errors")]}
            if not good:
                row["failed"] = failed.get(target) or (
                    rs[0].get("why", "no output") if rs else "not run")
                rows.append(row)
                continue
            rps = [r["rps"] for r in good]
            row.update({"rps": med(rps), "rps_min": min(rps),
                        "rps_max": max(rps), "rps_all": rps})
            for k in ("p50", "p99", "cpu_proxy", "cpu_backend",
                      "instr_proxy", "instr_backend", "bytes_per_resp"):
                row[k] = med(r.get(k) for r in good)
            if target in failed:
                row["bad"].append(failed[target])
            rows.append(row)
    values = {(r["target"], r["tool"], r["round"]): r["rps"] for r in runs
              if "rps" in r}
    for row in rows:
        for ref, _ in REFS:
            if "rps" in row:
                row["vs_" + ref] = ratios(values, row["target"],
                                          row["tool"], ref)
    return rows


def summarise_streams(streams, modes):
    rows = []
    for mode in modes:
        for target in STREAM_TARGETS:
            rs = [s for s in streams if s["target"] == target
                  and s["mode"] == mode]
            if not rs:
                continue
            good = [s for s in rs if s["ok"]]
            row = {"target": target, "mode": mode, "runs": len(rs),
                   "bad": [s.get("why", "") for s in rs if not s["ok"]]}
            if good:
                mb = [s["mbps"] for s in good]
                row.update({
                    "mbps": med(mb), "mbps_min": min(mb),
                    "mbps_max": max(mb),
                    "rss_start_mib": min(s["rss_start_kib"]
                                         for s in good) / 1024,
                    "rss_peak_mib": max(s["rss_peak_kib"]
                                        for s in good) / 1024,
                    "rss_growth_mib": max(s["rss_peak_kib"] -
                                          s["rss_start_kib"]
                                          for s in good) / 1024,
                    "cpu_proxy_s_gb": med(s.get("cpu_proxy_s_gb")
                                          for s in good),
                    "cpu_backend_s_gb": med(s.get("cpu_backend_s_gb")
                                            for s in good)})
            rows.append(row)
    values = {(s["target"], s["mode"], s["round"]): s["mbps"]
              for s in streams if s["ok"]}
    for row in rows:
        for ref in ("nginx-proxy", "direct"):
            if "mbps" in row:
                row["vs_" + ref] = ratios(values, row["target"],
                                          row["mode"], ref)
    return rows


# ---- issue 8's targets ---------------------------------------------------

def find(rows, target, tool):
    for r in rows:
        if r["target"] == target and r.get("tool", r.get("mode")) == tool \
                and "failed" not in r:
            return r
    return None


def check(label, have, cmp, want, fmt_="%.3f"):
    if have is None or want is None:
        return [label, "-", "-", "not measured"]
    ok = have >= want if cmp == ">=" else have <= want
    return [label, fmt_ % have, "%s %s" % (cmp, fmt_ % want),
            "met" if ok else "NOT met"]


def targets_check(rows, srows):
    """Issue 8's targets, each a row: what, ingressd's figure, the bar,
    met or not."""
    out = []
    i, n = find(rows, "ingressd", "wrk"), find(rows, "nginx-proxy", "wrk")
    g = lambda r, k: r.get(k) if r else None
    out.append(check("wrk -c100 req/s vs nginx-proxy", g(i, "vs_nginx-proxy"),
                     ">=", 1.3))
    out.append(check("wrk -c100 req/s vs haproxy", g(i, "vs_haproxy"),
                     ">=", 1.0))
    out.append(check("wrk -c100 req/s vs one-hop ceiling",
                     g(i, "vs_nginx-direct"), ">=", 0.5))
    out.append(check("wrk -c100 p99 ms vs nginx-proxy", g(i, "p99"), "<=",
                     g(n, "p99")))
    out.append(check("wrk -c100 ingressd CPU us/req", g(i, "cpu_proxy"),
                     "<=", 25.0, "%.1f"))
    out.append(check("wrk -c100 replica CPU us/req", g(i, "cpu_backend"),
                     "<=", 10.0, "%.1f"))
    i1, n1 = find(rows, "ingressd", "wrk1"), find(rows, "nginx-proxy", "wrk1")
    out.append(check("wrk -c1 p50 ms vs nginx-proxy", g(i1, "p50"), "<=",
                     g(n1, "p50"), "%.3f"))
    out.append(check("wrk -c1 p99 ms vs nginx-proxy", g(i1, "p99"), "<=",
                     g(n1, "p99"), "%.3f"))
    ik, nk = find(rows, "ingressd", "wrk1k"), find(rows, "nginx-proxy",
                                                    "wrk1k")
    out.append(check("wrk -c1000 errors", g(ik, "errors"), "<=", 0, "%d"))
    out.append(check("wrk -c1000 p99 ms vs nginx-proxy", g(ik, "p99"), "<=",
                     g(nk, "p99")))
    out.append(check("ab -c100 req/s vs one-hop ceiling",
                     g(find(rows, "ingressd", "ab"), "vs_nginx-direct"),
                     ">=", 0.95))
    out.append(check("ab -k -c100 req/s vs nginx-proxy",
                     g(find(rows, "ingressd", "abk"), "vs_nginx-proxy"),
                     ">=", 1.3))
    for mode in MODES:
        s = find(srows, "ingressd", mode)
        if s is None and not any(r["mode"] == mode for r in srows):
            continue
        out.append(check("stream %s MB/s vs nginx-proxy" % mode,
                         g(s, "vs_nginx-proxy"), ">=", 0.8))
        out.append(check("stream %s RSS growth MiB" % mode,
                         g(s, "rss_growth_mib"), "<=", RSS_FLAT_MIB, "%.1f"))
    return out


# ---- tables --------------------------------------------------------------

def tool_label(tool, env):
    c, d = env.get("CONNS", "100"), env.get("DURATION", "4")
    n = env.get("AB_N", "10000")
    return {"wrk": "wrk -t1 -c%s -d%ss" % (c, d),
            "wrk1": "wrk -t1 -c1 -d%ss" % d,
            "wrk1k": "wrk -t1 -c1000 -d%ss" % d,
            "ab": "ab -n %s -c %s" % (n, c),
            "abk": "ab -k -n %s -c %s" % (n, c)}[tool]


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def instr(x, perf_ok):
    if not perf_ok:
        return "n/a"
    return fmt(x, ".0f" if x is None or x >= 100 else ".3g")


def load_table(rows, tool, env):
    perf_ok = env.get("PERF_OK") == "1"
    head = ["target", "req/s median (min-max)", "p50 ms", "p99 ms",
            "CPU us/req proxy", "CPU us/req backend", "instr/req proxy",
            "instr/req backend"] + [h for _, h in REFS] + ["errors"]
    body = []
    for r in rows:
        if r["tool"] != tool:
            continue
        if "failed" in r:
            body.append([r["target"], "FAILED: " + r["failed"]] +
                        [""] * (len(head) - 2))
            continue
        errs = str(r["errors"])
        if r["bad"]:
            errs += " (%d/%d runs bad)" % (len(r["bad"]), r["runs"])
        body.append([
            r["target"],
            "%.0f (%.0f-%.0f)" % (r["rps"], r["rps_min"], r["rps_max"]),
            fmt(r["p50"], ".2f"), fmt(r["p99"], ".2f"),
            fmt(r["cpu_proxy"], ".1f"), fmt(r["cpu_backend"], ".1f"),
            instr(r["instr_proxy"], perf_ok),
            instr(r["instr_backend"], perf_ok)] +
            [fmt(r.get("vs_" + ref), ".2f") for ref, _ in REFS] + [errs])
    return head, body


def stream_table(srows, mode):
    head = ["target", "MB/s median (min-max)", "x nginx-proxy", "x direct",
            "proxy RSS MiB start", "peak", "CPU s/GB proxy",
            "CPU s/GB backend", "failed runs"]
    body = []
    for r in srows:
        if r["mode"] != mode:
            continue
        bad = "%d/%d: %s" % (len(r["bad"]), r["runs"], r["bad"][0]) \
            if r["bad"] else "0"
        if "mbps" not in r:
            body.append([r["target"], "FAILED"] + [""] * 6 + [bad])
            continue
        body.append([
            r["target"],
            "%.0f (%.0f-%.0f)" % (r["mbps"], r["mbps_min"], r["mbps_max"]),
            fmt(r.get("vs_nginx-proxy"), ".2f"),
            fmt(r.get("vs_direct"), ".2f"),
            "%.1f" % r["rss_start_mib"], "%.1f" % r["rss_peak_mib"],
            fmt(r["cpu_proxy_s_gb"], ".2f"), fmt(r["cpu_backend_s_gb"],
                                                 ".2f"), bad])
    return head, body


def text_table(head, body):
    w = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w[i])
                                   for i, c in enumerate(cells)).rstrip()
    return "\n".join([line(head), line(["-" * n for n in w])] +
                     [line(b) for b in body])


def md_table(head, body):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in b) + " |" for b in body]
    return "\n".join(out)


def first_line(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (p.stdout + p.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "?"


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "kernel": platform.release(),
        "nginx": first_line(["/usr/sbin/nginx", "-v"]),
        "haproxy": first_line(["haproxy", "-v"]).split(" - ")[0],
        "h2o": first_line(["h2o", "--version"]),
        "uwsgi": "uwsgi " + first_line(["uwsgi", "--version"]),
        "wrk": first_line(["wrk", "-v"]).split(" [")[0],
        "ab": first_line(["ab", "-V"]).replace("This is ", "")
                                              .split(" <")[0],
        "git": first_line(["git", "rev-parse", "--short", "HEAD"]),
        "dirty": bool(subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "replica"],
            capture_output=True, text=True).stdout.strip()),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def binaries(build, raw):
    """What ran: others rebuild build/ while a bench runs; the binary
    started is what the figures belong to.  run.sh hashed them at start."""
    import hashlib
    start = {}
    for l in read_lines(os.path.join(raw, "binaries.start")):
        h, _, path = l.partition("  ")
        start[os.path.basename(path)] = h[:12]
    out = []
    for name in ("ingressd", "replica-hello", "replica-sleep"):
        path = os.path.join(build, name)
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()[:12]
            mtime = time.strftime("%Y-%m-%d %H:%M:%S",
                                  time.gmtime(os.path.getmtime(path)))
            if start.get(name, digest) == digest:
                out.append("%s sha256 %s (built %s UTC)" % (name, digest,
                                                            mtime))
            else:
                out.append("%s sha256 %s at the start, the process "
                           "measured (**rebuilt during the run**: %s, "
                           "%s UTC)" % (name, start[name], digest, mtime))
        except OSError:
            out.append("%s (missing)" % name)
    return "; ".join(out)


def loadavg(raw, runs, streams):
    """Load averages at the start, during and at the end: others' work
    on the machine skews everything."""
    try:
        with open(os.path.join(raw, "loadavg.start")) as f:
            start = f.read().strip()
    except OSError:
        start = "?"
    now = " ".join("%.2f" % x for x in os.getloadavg())
    during = [r["load1"] for r in runs + streams if "load1" in r]
    mid = "; 1-min load at the runs %.2f-%.2f" % (min(during), max(during)) \
        if during else ""
    return "%s at start, %s at the end%s" % (start, now, mid)


def load_params(raw):
    """The parameters run.sh ran with (KEY=VALUE lines), over the env."""
    env = dict(os.environ)
    env.setdefault("NGINX_KEEPALIVE", "64")
    try:
        with open(os.path.join(raw, "params")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                env[k] = v
    except OSError:
        pass
    return env


def header_md(m, env, targets, raw):
    return [
        "# ingressd benchmark results", "",
        "Generated by `sh bench/run.sh` (`make bench`) on %s." % m["date"],
        "",
        "- machine: %s CPUs, %s, kernel %s" % (m["nproc"], m["cpu"],
                                               m["kernel"]),
        "- peers: %s; %s; %s; %s" % (m["nginx"], m["haproxy"], m["h2o"],
                                     m["uwsgi"]),
        "- load: %s; %s" % (m["wrk"], m["ab"]),
        "- load average (1/5/15 min): %s" % m["loadavg"],
        "- source: git %s%s; WORKERS=%s ROUNDS=%s DURATION=%ss CONNS=%s "
        "AB_N=%s STREAM_BYTES=%s STREAM_ROUNDS=%s SERVER_CPUS=%s "
        "CLIENT_CPUS=%s ulimit -n %s"
        % (m["git"], " + working tree" if m["dirty"] else "",
           env.get("WORKERS", "1"), env.get("ROUNDS"), env.get("DURATION"),
           env.get("CONNS"), env.get("AB_N"), env.get("STREAM_BYTES"),
           env.get("STREAM_ROUNDS"), env.get("SERVER_CPUS") or "-",
           env.get("CLIENT_CPUS") or "-", env.get("ULIMIT_N")),
        "- binaries: %s" % binaries(
            env.get("BUILD", "build"), raw),
        "- instructions per request: %s" % (
            "perf stat -e %s" % env.get("PERF_EVENT")
            if env.get("PERF_OK") == "1"
            else "n/a (%s)" % env.get("PERF_WHY", "?")),
        "- targets: " + "; ".join("**%s**: %s" % (t, TARGET_NOTE[t] % env)
                                  for t in targets), ""]


def cmd_report(args):
    env = load_params(args.raw)
    hz = os.sysconf("SC_CLK_TCK")
    tools = [t for t in env.get("TOOLS", " ".join(TOOLS)).split()
             if t in TOOLS]
    modes = [s for s in env.get("STREAM", "").split() if s in MODES]
    runs = load_runs(args.raw, hz, env)
    streams = load_streams(args.raw)
    failed = load_tsv(args.raw, "failed.tsv")
    skipped = load_tsv(args.raw, "skipped.tsv")
    ran = env.get("TARGETS", " ".join(TARGETS)).split()
    targets = [t for t in TARGETS if t in ran or t in failed]
    rows = summarise(runs, failed, tools, targets)
    srows = summarise_streams(streams, modes)
    m = machine()
    m["loadavg"] = loadavg(args.raw, runs, streams)
    md = header_md(m, env, targets, args.raw)
    for t, why in skipped.items():
        md += ["**%s skipped**: %s." % (t, why), ""]
        print("%s skipped: %s" % (t, why))
    for tool in tools:
        head, body = load_table(rows, tool, env)
        print("\n" + tool_label(tool, env) + "\n" + text_table(head, body))
        md += ["## `%s`" % tool_label(tool, env), "", md_table(head, body),
               ""]
    for mode in modes:
        head, body = stream_table(srows, mode)
        label = "%s, %s bytes" % (MODE_NOTE[mode], env.get("STREAM_BYTES"))
        print("\nstream: " + label + "\n" + text_table(head, body))
        md += ["## Stream: %s" % label, "", md_table(head, body), ""]
    crows = load_counts(args.raw)
    if crows:
        md += ["## Syscalls per request", "",
               "A separate run per target and tool under `perf stat -e "
               "raw_syscalls:sys_enter,syscalls:sys_enter_*` on the proxy's "
               "and the backend's pids (tracepoints cost a little per "
               "call: no req/s from these runs).", ""]
    for tool in ("wrk", "ab"):
        if not any(r["tool"] == tool for r in crows):
            continue
        head, body = count_table(crows, tool)
        label = ("`wrk -t1 -c%s -d%ss` (keep-alive)" % (
            env.get("CONNS"), env.get("COUNT_DURATION")) if tool == "wrk"
            else "`ab -n %s -c %s` (a connection per request)" % (
                env.get("COUNT_AB_N"), env.get("CONNS")))
        print("\nsyscalls per request, " + label + "\n" +
              text_table(head, body))
        md += [label + ":", "", md_table(head, body), ""]
    scrows = load_stream_counts(args.raw)
    if scrows:
        head, body = stream_count_table(scrows)
        label = ("syscalls of the proxy per MiB streamed (one %s-byte "
                 "transfer per proxy and mode under the same `perf stat`; "
                 "*MiB / reads*: the mean bytes a read moved, as if every "
                 "read carried stream bytes)" % env.get("STREAM_BYTES"))
        print("\n" + label + "\n" + text_table(head, body))
        md += [label[0].upper() + label[1:] + ":", "", md_table(head, body),
               ""]
    chk = targets_check(rows, srows)
    head = ["issue 8 target (WORKERS=%s)" % env.get("WORKERS", "1"),
            "ingressd", "bar", "verdict"]
    print("\n" + text_table(head, chk))
    md += ["## Issue 8's targets", "", md_table(head, chk), ""]
    sizes = ["%s %.0f" % (r["target"], r["bytes_per_resp"]) for r in rows
             if r["tool"] == "ab" and r.get("bytes_per_resp")]
    if sizes:
        md += ["Bytes per response, head + body (from ab): %s." %
               ", ".join(sizes), ""]
    if any(r["errors"] for r in rows):
        print("WARNING: rows with errors count error responses in req/s; "
              "see %s" % args.raw)
        md += ["**Rows with errors are not comparable**: wrk and ab count "
               "error responses (non-2xx) in req/s. See the raw outputs.",
               ""]
        for r in rows:
            for s in r.get("socket_errors", []):
                md.append("- %s %s: socket errors %s" % (
                    r["target"], tool_label(r["tool"], env), s))
        md.append("")
    md += ["Medians over rounds; p50/p99 are medians of each round's "
           "percentile (wrk: --latency, ab: whole ms, connect included). "
           "CPU is utime+stime from /proc/PID/stat around each run "
           "divided by the requests completed: *proxy* is ingressd, "
           "HAProxy, h2o or the nginx in front (nginx-direct: the origin "
           "itself), *backend* the replica, the origin nginx or uwsgi. "
           "Ratios: req/s (MB/s) over the reference's in the same round, "
           "median over rounds. Streams: RSS is VmRSS of the proxy's "
           "processes sampled every 50 ms (start: before the transfer); "
           "*direct* is curl to the origin nginx (download) or to "
           "bench/sink.py (chunked download, upload), whose figures are "
           "then the server's. A chunked download counts only if the "
           "final response head has Transfer-Encoding: chunked and no "
           "Content-Length (curl -D).",
           ""]
    with open(args.md, "w") as f:
        f.write("\n".join(md))
    with open(args.json, "w") as f:
        json.dump({"machine": m, "params": {k: env.get(k) for k in (
            "ROUNDS", "DURATION", "CONNS", "AB_N", "WORKERS", "TOOLS",
            "STREAM", "STREAM_BYTES", "PERF_OK", "PERF_EVENT")},
            "rows": rows, "streams": srows, "runs": runs,
            "syscalls": crows, "stream_syscalls": scrows,
            "stream_runs": streams, "targets": chk}, f, indent=1)
    # A peer's errors under load are data (the tables flag them); ingressd
    # failing or erring anywhere, or a reference missing, fails the bench.
    bad = [r for r in rows + srows if r["target"] == "ingressd" and
           ("failed" in r or r["bad"])] + \
        [r for r in rows if r["target"] in ("nginx-proxy", "nginx-direct")
         and "failed" in r]
    return 1 if bad else 0


# ---- profile summary (bench/profile.sh) ----------------------------------

PROFILE_LOADS = [
    ("hello", "replica-hello", "wrk -t1 -c100 -d%(duration)ss --latency "
     "http://127.0.0.1:PORT/hello"),
    ("upload", "replica-sleep", "curl -X POST -T FILE -H 'Expect:' "
     "'http://127.0.0.1:PORT/sleep?sink=1000000000000' (%(upload)s bytes, "
     "Content-Length)"),
    ("download", "replica-sleep", "curl -o /dev/null "
     "'http://127.0.0.1:PORT/sleep?source=%(upload)s&rate=0'"),
]


def read_lines(path, n=None):
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip() for l in f if l.strip()]
    except OSError:
        return []
    return lines[:n] if n else lines


PERF_LINE = re.compile(r"^\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?(\S+)\s+(.*?)\s*$")


def perf_rows(path):
    """(pct, comm, rest) from a perf report of all processes."""
    rows = []
    for l in read_lines(path):
        m = PERF_LINE.match(l)
        if m:
            rows.append((float(m.group(1)), m.group(3), m.group(4)))
    return rows


def proc_share(dirname, load):
    """{comm: % of the recording's samples}."""
    share = {}
    for pct, comm, _ in perf_rows(os.path.join(
            dirname, "perf-%s-dso.txt" % load)):
        share[comm] = share.get(comm, 0) + pct
    return share


def perf_proc(dirname, load, proc, total, n):
    """The markdown for one process: libraries, symbols, own code."""
    base = os.path.join(dirname, "perf-%s-" % load)
    rel = lambda pct: 100 * pct / total
    md = ["### %s (%.1f%% of the samples): shares of its own samples"
          % (proc, total), "", "```", "by library:"]
    md += ["%7.2f%%  %s" % (rel(p), r) for p, c, r in
           perf_rows(base + "dso.txt") if c == proc][:8]
    self_ = [(p, r) for p, c, r in perf_rows(base + "self.txt")
             if c == proc]
    md += ["", "top symbols (self):"]
    md += ["%7.2f%%  %s" % (rel(p), r) for p, r in self_[:n]]
    own = [(p, r) for p, r in self_ if r.split()[0] == proc]
    md += ["", "its own code, %.1f%% (self, by function):"
           % rel(sum(p for p, _ in own))]
    md += ["%7.2f%%  %s" % (rel(p), r.split(None, 2)[-1])
           for p, r in own[:n]]
    md += ["```", ""]
    if proc == "ingressd" and load == "hello":
        md += ["Inclusive (children) shares of ingressd's samples, top "
               "entries:", "", "```"]
        md += ["%7.2f%%  %s" % (rel(p), r) for p, c, r in
               perf_rows(base + "children.txt") if c == proc][:n]
        md += ["```", ""]
    return md


def load_line(dirname, load):
    lines = read_lines(os.path.join(dirname, "load-%s.txt" % load))
    for l in lines:
        if l.startswith("Requests/sec") or l.startswith("Requests per"):
            return l
    return lines[-1] if lines else "?"


def perf_section(dirname, load, replica, cmd, n):
    share = proc_share(dirname, load)
    md = ["## perf: %s" % load, "", "Load: `%s` -> %s" % (
        cmd, load_line(dirname, load)), ""]
    for proc in ("ingressd", replica):
        if share.get(proc):
            md += perf_proc(dirname, load, proc, share[proc], n)
    return md


def callgrind_section(dirname, requests, n):
    md = ["## callgrind: instructions per request", "",
          "Load: `ab -k -n %d -c 50 http://127.0.0.1:PORT/hello` after a "
          "1000-request warm-up; counters dumped (and reset) before and "
          "after, so the figures are the load's alone (user space only: "
          "callgrind does not see the kernel)." % requests, ""]
    for l in read_lines(os.path.join(dirname, "callgrind-files.txt")):
        name, path = l.split(None, 1)
        ann = read_lines(os.path.join(dirname, "callgrind-%s.txt" % name))
        total = None
        for a in ann:
            if a.endswith("PROGRAM TOTALS"):
                total = int(a.split()[0].replace(",", ""))
        md += ["### %s: %s instructions per request" % (
            name, "?" if total is None else "{:,.0f}".format(
                total / requests)), "",
            "Top functions by their own instructions (`callgrind_annotate "
            "--inclusive=no %s`; the event loop and thread frames still "
            "on the stack at the dump are listed with their inclusive "
            "cost by callgrind and left out here):" % path, "", "```"]
        rows = [a for a in ann if re.match(r"^\s*[\d,]+ \(\s*[\d.]+%\)", a)
                and "PROGRAM TOTALS" not in a]
        rows = [a for a in rows
                if float(re.search(r"\(\s*([\d.]+)%", a).group(1)) < 99]
        md += [re.sub(r" \[[^]]*\]$", "", a) for a in rows[:n]] + \
            ["```", ""]
    return md


def cmd_profile_summary(args):
    d = args.dir
    m = machine()
    try:
        with open(os.path.join(d, "loadavg.start")) as f:
            start = f.read().strip()
    except OSError:
        start = "?"
    md = ["# ingressd profile (`sh bench/profile.sh`)", "",
          "- %s; %s CPUs, %s, kernel %s; git %s%s" % (
              m["date"], m["nproc"], m["cpu"], m["kernel"], m["git"],
              " + working tree" if m["dirty"] else ""),
          "- load average: %s at start, %s at the end" % (
              start, " ".join("%.2f" % x for x in os.getloadavg())),
          "- binaries: %s" % binaries(args.build, d),
          "- perf: `perf record -F 999 --call-graph dwarf,16384 -p "
          "INGRESSD,REPLICA` during each load (cpu-clock samples); "
          "`perf report -g none --no-children --sort comm,dso` and "
          "`--sort comm,dso,symbol`, `--children --sort comm,symbol`; "
          "shares below are of the process's own samples", ""]
    v = {"duration": args.duration, "upload": args.upload_bytes}
    for load, replica, cmd in PROFILE_LOADS:
        if os.path.exists(os.path.join(d, "perf-%s-dso.txt" % load)):
            md += perf_section(d, load, replica, cmd % v, args.top)
    if os.path.exists(os.path.join(d, "callgrind-files.txt")):
        md += callgrind_section(d, args.requests, args.top)
    print("\n".join(md))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ports")
    p.add_argument("n", type=int)
    p.set_defaults(fn=cmd_ports)
    p = sub.add_parser("ingressd-conf")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--admin", type=int, required=True)
    p.add_argument("--runtime-dir", required=True)
    p.add_argument("--replica", required=True)
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--sleep-replica")
    p.add_argument("--workers", default="1", help="an integer or auto")
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_ingressd_conf)
    p = sub.add_parser("ingressd-http-conf")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--runtime-dir", required=True)
    p.add_argument("--workers", default="1")
    p.add_argument("--origin", required=True)
    p.add_argument("--sink", help="HOST:PORT of bench/sink.py (streams)")
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_ingressd_http_conf)
    p = sub.add_parser("ingressd-inproc-conf")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--runtime-dir", required=True)
    p.add_argument("--workers", default="1")
    p.add_argument("--module", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_ingressd_inproc_conf)
    p = sub.add_parser("replica-pids")
    p.add_argument("admin", help="HOST:PORT of the admin listener")
    p.add_argument("--deployment", help="only this deployment's replicas")
    p.set_defaults(fn=cmd_replica_pids)
    p = sub.add_parser("stream")
    p.add_argument("--target", required=True)
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--round", type=int, required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--file", required=True, help="the upload body")
    p.add_argument("--proxy-pids", default="")
    p.add_argument("--backend-pids", default="")
    p.add_argument("--client", default="", help="a prefix (taskset -c N)")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--out", required=True, help="JSON lines, appended")
    p.add_argument("--raw", required=True, help="what curl printed")
    p.set_defaults(fn=cmd_stream)
    p = sub.add_parser("profile-summary")
    p.add_argument("--dir", required=True)
    p.add_argument("--build", default="build")
    p.add_argument("--requests", type=int, required=True)
    p.add_argument("--duration", type=int, required=True)
    p.add_argument("--upload-bytes", type=int, required=True)
    p.add_argument("--top", type=int, default=20)
    p.set_defaults(fn=cmd_profile_summary)
    p = sub.add_parser("report")
    p.add_argument("--raw", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--json", required=True)
    p.set_defaults(fn=cmd_report)
    args = ap.parse_args()
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
