"""Self-registration in etcd: --register etcd://HOST:PORT/PREFIX[?ttl=N]
(or INGRESSD_REGISTER; ttl defaults to 10 seconds; &weight=1..65535 and
&priority=0..65535 set the replica's share of its deployment in ingressd's
balance, default 1 and 0, lower priority preferred).  etcds:// is https,
verified with &ca=FILE (the certificate must name the IP; &cert=FILE&key=FILE:
mutual TLS);
&user=U&password_file=FILE authenticate (the token is renewed on a 401).

The replica grants itself a lease (TTL seconds), puts
PREFIX/deployments/NAME/replicas/ID = {"address", "max_ongoing_requests",
"weight", "priority"} (the last three when given) with it, and keeps it alive every TTL/3 from a daemon thread.  Every
ingressd instance watching PREFIX routes to it; a crashed replica stops
the keepalives, so etcd deletes the key after TTL and every instance drops
it.  On drain the lease is revoked, which deletes the key at once.  A lost
lease (etcd restarted, keepalive late) is granted again and the key put
again.  ingressd's HELLO/PING still gates traffic: etcd is membership.
Uses only the standard library (etcd's v3 JSON gateway over HTTP)."""

import base64
import json
import logging
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request

log = logging.getLogger("ingressd_replica")

DEFAULT_TTL = 10


def _b64(s):
    return base64.b64encode(s.encode()).decode()


# The certificate must name the endpoint's address (an IP SAN).
_PARAMS = ("ttl", "weight", "priority", "ca", "cert", "key", "user",
           "password_file")


def parse_url(url):
    """etcd[s]://HOST:PORT[,HOST:PORT...]/PREFIX[?ttl=N&...] ->
    (["http[s]://HOST:PORT"], "/PREFIX", ttl, {param: value})."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("etcd", "etcds") or not u.netloc:
        raise ValueError("--register: must be etcd[s]://HOST:PORT/PREFIX, "
                         "not %r" % url)
    prefix = u.path.rstrip("/") or "/ingressd"
    q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query).items()}
    bad = set(q) - set(_PARAMS)
    if bad:
        raise ValueError("--register: unknown parameter(s) %s" %
                         ", ".join(sorted(bad)))
    ttl = q.pop("ttl", DEFAULT_TTL)
    if not str(ttl).isdigit() or not 2 <= int(ttl) <= 3600:
        raise ValueError("--register: ttl must be 2..3600 seconds")
    for k, lo in (("weight", 1), ("priority", 0)):
        if k in q and (not q[k].isdigit() or not lo <= int(q[k]) <= 65535):
            raise ValueError("--register: %s must be %d..65535" % (k, lo))
    if ("cert" in q) != ("key" in q) or ("user" in q) != (
            "password_file" in q):
        raise ValueError("--register: cert and key, user and "
                         "password_file go together")
    scheme = "https://" if u.scheme == "etcds" else "http://"
    return [scheme + h for h in u.netloc.split(",")], prefix, int(ttl), q


def _ssl_context(q):
    ctx = ssl.create_default_context(cafile=q.get("ca"))
    if "cert" in q:
        ctx.load_cert_chain(q["cert"], q["key"])
    return ctx


class Registration:
    """Keep replica_id of deployment registered at address while alive."""

    def __init__(self, url, deployment, replica_id, address,
                 max_ongoing=None):
        if not deployment:
            raise ValueError("--register needs --deployment NAME")
        self.endpoints, prefix, self.ttl, q = parse_url(url)
        self._ctx = _ssl_context(q) if url.startswith("etcds:") else None
        self._user = q.get("user")
        self._password = None
        if self._user:
            with open(q["password_file"]) as f:
                self._password = f.readline().rstrip("\r\n")
        self._token = None
        self.key = "%s/deployments/%s/replicas/%s" % (prefix, deployment,
                                                      replica_id)
        value = {"address": address}
        if max_ongoing:
            value["max_ongoing_requests"] = int(max_ongoing)
        for k in ("weight", "priority"):
            if k in q:
                value[k] = int(q[k])
        self.value = json.dumps(value, sort_keys=True)
        self.lease = None
        self._stop = threading.Event()
        self._thread = None
        self._cur = 0

    def _post(self, ep, path, body, timeout, token):
        h = {"Content-Type": "application/json"}
        if token:
            h["Authorization"] = token
        req = urllib.request.Request(ep + path, data=json.dumps(body).encode(),
                                     headers=h)
        with urllib.request.urlopen(req, timeout=timeout,
                                    context=self._ctx) as r:
            return json.loads(r.read())

    def _call1(self, ep, path, body, timeout):
        for again in (True, False):
            if self._user and self._token is None:
                self._token = self._post(ep, "/v3/auth/authenticate", {
                    "name": self._user, "password": self._password},
                    timeout, None)["token"]
            try:
                return self._post(ep, path, body, timeout, self._token)
            except urllib.error.HTTPError as e:
                # 401: the token expired (or etcd restarted): renew once.
                if e.code != 401 or not self._user or not again:
                    raise
                self._token = None

    def _call(self, path, body, timeout=3.0):
        last = None
        for i in range(len(self.endpoints)):
            ep = self.endpoints[(self._cur + i) % len(self.endpoints)]
            try:
                r = self._call1(ep, path, body, timeout)
                self._cur = (self._cur + i) % len(self.endpoints)
                return r
            except (OSError, ValueError, KeyError) as e:
                last = e
        raise OSError("etcd: %s" % last)

    def _register(self):
        r = self._call("/v3/lease/grant", {"TTL": str(self.ttl)})
        self.lease = r["ID"]
        self._call("/v3/kv/put", {"key": _b64(self.key),
                                  "value": _b64(self.value),
                                  "lease": self.lease})
        log.info("registered %s (lease %s, ttl %ds)", self.key, self.lease,
                 self.ttl)

    def _keepalive(self):
        r = self._call("/v3/lease/keepalive", {"ID": self.lease})
        # An expired or unknown lease answers without a TTL.
        return int(r.get("result", {}).get("TTL", 0)) > 0

    def _run(self):
        while not self._stop.wait(self.ttl / 3.0 if self.lease else 1.0):
            try:
                if self.lease is None or not self._keepalive():
                    if self.lease is not None:
                        log.warning("lease %s lost: registering again",
                                    self.lease)
                    self.lease = None
                    self._register()
            except (OSError, KeyError, ValueError) as e:
                log.warning("etcd registration: %s", e)

    def start(self):
        """Register now (errors are logged; the thread retries)."""
        try:
            self._register()
        except (OSError, KeyError, ValueError) as e:
            log.warning("etcd registration: %s (retrying)", e)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="etcd-register")
        self._thread.start()
        return self

    def stop(self):
        """Revoke the lease: the key goes at once, everywhere."""
        self._stop.set()
        if self.lease is None:
            return
        try:
            self._call("/v3/lease/revoke", {"ID": self.lease}, timeout=2.0)
            log.info("unregistered %s", self.key)
        except OSError as e:
            log.warning("etcd revoke: %s", e)
        self.lease = None
