#!/usr/bin/env python3
"""bench/bench.py -- the Python half of `make bench` (stdlib only).

bench/run.sh starts and stops the processes and runs the load generators;
this file does what is awkward in sh:

  ports N                 print N free 127.0.0.1 TCP ports, one a line
  ingressd-conf ...       write the bench conf for ingressd (JSON)
  replica-pids ADMIN      print replica pids from GET /-/deployments
  report ...              parse the raw tool outputs, print the table,
                          write results.md and results.json

The raw outputs stay in build/bench/raw/ so any figure can be checked
against what wrk or ab printed.
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

TARGETS = ["ingressd", "nginx-proxy", "nginx-direct"]
TOOLS = ["wrk", "ab", "abk"]
TARGET_NOTE = {
    "ingressd": "ingressd /hello -> 1 replica-hello (unix socket, wire protocol)",
    "nginx-proxy": "nginx proxy_pass -> nginx return 200 "
                   "(keepalive %(NGINX_KEEPALIVE)s)",
    "nginx-direct": "nginx return 200, no proxy (one-hop ceiling)",
}


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
    conf = {
        "listen": ["127.0.0.1:%d" % args.port],
        "admin": "127.0.0.1:%d" % args.admin,
        "workers": args.workers,
        "runtime_dir": os.path.abspath(args.runtime_dir),
        "log_level": "warn",
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
        pids = [int(r["pid"]) for d in doc.values()
                for r in d.get("replicas", []) if r.get("pid")]
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        print("GET /-/deployments: unexpected JSON: %s" % e, file=sys.stderr)
        return 1
    for p in pids:
        print(p)
    return 0 if pids else 1


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


def cpu_us(t0, t1, requests, hz):
    """CPU microseconds per request from utime+stime ticks, or None."""
    if t0 in ("-", "NA") or t1 in ("-", "NA") or not requests:
        return None
    return (int(t1) - int(t0)) * 1e6 / hz / requests


def load_runs(raw, hz):
    runs = []
    path = os.path.join(raw, "runs.tsv")
    if not os.path.exists(path):
        return runs
    with open(path) as f:
        for line in f:
            f_ = line.rstrip("\n").split("\t")
            if len(f_) != 9:
                continue
            target, tool, rnd, rc, p0, p1, b0, b1, out = f_
            run = {"target": target, "tool": tool, "round": int(rnd),
                   "rc": int(rc) if rc.lstrip("-").isdigit() else -1,
                   "raw": out, "ok": False}
            text = ""
            try:
                # run.sh's path may be relative to another directory.
                out = os.path.join(raw, os.path.basename(out))
                with open(out, errors="replace") as o:
                    text = o.read()
                run.update(parse_wrk(text) if tool == "wrk"
                           else parse_ab(text))
                run["cpu_proxy"] = cpu_us(p0, p1, run["requests"], hz)
                run["cpu_backend"] = cpu_us(b0, b1, run["requests"], hz)
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
            runs.append(run)
    return runs


def load_status(raw):
    """Target-level failures written by run.sh: target TAB reason."""
    failed = {}
    path = os.path.join(raw, "failed.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                t, _, why = line.rstrip("\n").partition("\t")
                failed.setdefault(t, why)
    return failed


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(runs, failed, tools):
    rows = []
    for tool in tools:
        for target in TARGETS:
            rs = [r for r in runs if r["target"] == target
                  and r["tool"] == tool]
            good = [r for r in rs if "rps" in r]
            row = {"target": target, "tool": tool, "runs": len(rs),
                   "bad": [r.get("why", "") for r in rs if not r["ok"]],
                   "errors": sum(r.get("errors", 0) for r in rs)}
            if target in failed and not good:
                row["failed"] = failed[target]
            elif not good:
                row["failed"] = (rs[0].get("why", "no output") if rs
                                 else failed.get(target, "not run"))
            else:
                rps = [r["rps"] for r in good]
                row.update({
                    "rps": med(rps), "rps_min": min(rps),
                    "rps_max": max(rps), "rps_all": rps,
                    "p50": med(r["p50"] for r in good),
                    "p99": med(r["p99"] for r in good),
                    "cpu_proxy": med(r.get("cpu_proxy") for r in good),
                    "cpu_backend": med(r.get("cpu_backend") for r in good),
                    "bytes_per_resp": med(r.get("bytes_per_resp")
                                          for r in good),
                })
            if target in failed and good:
                row["bad"].append(failed[target])
            rows.append(row)
    # Ratios are taken round by round, then the median: the targets of one
    # round ran seconds apart, so drift on the machine mostly cancels.
    rps = {(r["target"], r["tool"], r["round"]): r["rps"] for r in runs
           if "rps" in r}
    for row in rows:
        for ref in ("nginx-proxy", "nginx-direct"):
            ratios = [v / rps[(ref, t, n)]
                      for (tg, t, n), v in rps.items()
                      if tg == row["target"] and t == row["tool"]
                      and rps.get((ref, t, n))]
            if "rps" in row and ratios:
                row["vs_" + ref] = med(ratios)
    return rows


def tool_label(tool, env):
    c = env.get("CONNS", "100")
    if tool == "wrk":
        return "wrk -t1 -c%s -d%ss" % (c, env.get("DURATION", "5"))
    n = env.get("AB_N", "10000")
    return "ab %s-n %s -c %s" % ("-k " if tool == "abk" else "", n, c)


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(rows, env):
    head = ["target", "tool", "req/s median (min-max)", "p50 ms", "p99 ms",
            "CPU us/req proxy", "CPU us/req backend", "vs nginx-proxy",
            "vs nginx-direct", "errors"]
    body = []
    for r in rows:
        if "failed" in r:
            body.append([r["target"], tool_label(r["tool"], env),
                         "FAILED: " + r["failed"]] + [""] * 7)
            continue
        errs = str(r["errors"])
        if r["bad"]:
            errs += " (%d/%d runs bad)" % (len(r["bad"]), r["runs"])
        body.append([
            r["target"], tool_label(r["tool"], env),
            "%.0f (%.0f-%.0f)" % (r["rps"], r["rps_min"], r["rps_max"]),
            fmt(r["p50"], ".2f"), fmt(r["p99"], ".2f"),
            fmt(r["cpu_proxy"], ".1f"), fmt(r["cpu_backend"], ".1f"),
            fmt(r.get("vs_nginx-proxy"), ".2f"),
            fmt(r.get("vs_nginx-direct"), ".2f"), errs])
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
        "wrk": first_line(["wrk", "-v"]).split(" [")[0],
        "ab": first_line(["ab", "-V"]).replace("This is ", "")
                                              .split(" <")[0],
        "git": first_line(["git", "rev-parse", "--short", "HEAD"]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def loadavg(raw):
    """Load averages at the start (run.sh) and now: others' work skews us."""
    try:
        with open(os.path.join(raw, "loadavg.start")) as f:
            start = f.read().strip()
    except OSError:
        start = "?"
    now = " ".join("%.2f" % x for x in os.getloadavg())
    return "%s at start, %s at the end" % (start, now)


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


def cmd_report(args):
    env = load_params(args.raw)
    hz = os.sysconf("SC_CLK_TCK")
    tools = [t for t in env.get("TOOLS", " ".join(TOOLS)).split()
             if t in TOOLS]
    runs = load_runs(args.raw, hz)
    failed = load_status(args.raw)
    rows = summarise(runs, failed, tools)
    head, body = table(rows, env)
    m = machine()
    m["loadavg"] = loadavg(args.raw)
    print(text_table(head, body))
    if any(r["errors"] for r in rows):
        print("WARNING: rows with errors count error responses in req/s; "
              "see %s" % args.raw)

    mdl = ["# ingressd benchmark results", "",
           "Generated by `sh bench/run.sh` (`make bench`) on %s." % m["date"],
           "",
           "- machine: %s CPUs, %s, kernel %s" % (m["nproc"], m["cpu"],
                                                  m["kernel"]),
           "- tools: %s; %s; %s" % (m["nginx"], m["wrk"], m["ab"]),
           "- load average (1/5/15 min): %s" % m["loadavg"],
           "- source: git %s; ROUNDS=%s DURATION=%ss CONNS=%s AB_N=%s"
           % (m["git"], env.get("ROUNDS", "3"), env.get("DURATION", "5"),
              env.get("CONNS", "100"), env.get("AB_N", "10000")),
           "- targets: " + "; ".join("**%s**: %s" % (t, TARGET_NOTE[t] % env)
                                     for t in TARGETS),
           "",
           md_table(head, body), ""]
    sizes = ["%s %.0f" % (r["target"], r["bytes_per_resp"]) for r in rows
             if r["tool"] == "ab" and r.get("bytes_per_resp")]
    if sizes:
        mdl += ["Bytes per response, head + body (from ab): %s." %
                ", ".join(sizes), ""]
    if any(r["errors"] for r in rows):
        mdl += ["**Rows with errors are not comparable**: wrk and ab count "
                "error responses (non-2xx) in req/s. See build/bench/raw/.",
                ""]
    mdl += ["Medians over rounds; p50/p99 are medians of each round's "
            "percentile (wrk: --latency, ab: whole ms, connect included). "
            "CPU is utime+stime from /proc/PID/stat around each run "
            "divided by the requests completed: *proxy* is ingressd or the "
            "nginx proxy (nginx-direct: the origin itself), *backend* is "
            "the replica or the origin nginx. Ratios: req/s over the "
            "reference's in the same round, median over rounds.",
            ""]
    with open(args.md, "w") as f:
        f.write("\n".join(mdl))
    with open(args.json, "w") as f:
        json.dump({"machine": m, "rows": rows, "runs": runs}, f, indent=1)
    bad = [r for r in rows if "failed" in r or r["bad"]]
    return 1 if bad else 0


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
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_ingressd_conf)
    p = sub.add_parser("replica-pids")
    p.add_argument("admin", help="HOST:PORT of the admin listener")
    p.set_defaults(fn=cmd_replica_pids)
    p = sub.add_parser("report")
    p.add_argument("--raw", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--json", required=True)
    p.set_defaults(fn=cmd_report)
    args = ap.parse_args()
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
