#!/usr/bin/env python3
"""model.py -- a model that is loaded once at start-up and warmed before the
replica serves anything.

The model is a small naive Bayes sentiment classifier "trained" (loaded)
from the sentences below; a real one would read its weights here.  Loading
and warm-up run in serve()'s on_startup hook, which finishes before the
socket is bound: ingressd cannot reach this replica until it is ready, and
requests wait in ingressd's queue meanwhile.  --load-ms N adds N ms to the
load, to see that.

The handler is a plain function: inference is CPU work, so it runs in the
SDK's thread pool (--threads N) with the request body already read.

    POST /model        {"text": "what a great day"}
    GET  /model?text=what+a+great+day
      -> {"label": "positive", "scores": {...}, "replica": ..., "model": {...}}
    GET  /model/info   -> how and when the model was loaded and warmed
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(
    __file__))))

from ingressd_replica import HTTPError, serve  # noqa: E402

TRAINING = [
    ("positive", "what a great day , i love it"),
    ("positive", "excellent work , really well done"),
    ("positive", "this is wonderful and fast"),
    ("positive", "happy with the result , thank you"),
    ("positive", "the service was good and friendly"),
    ("positive", "brilliant idea , works perfectly"),
    ("positive", "i like this a lot , nice and clean"),
    ("positive", "superb quality , great value"),
    ("negative", "what a terrible day , i hate it"),
    ("negative", "awful work , badly done"),
    ("negative", "this is slow and broken"),
    ("negative", "unhappy with the result , it failed"),
    ("negative", "the service was bad and rude"),
    ("negative", "stupid idea , never works"),
    ("negative", "i dislike this , ugly and messy"),
    ("negative", "poor quality , a waste of money"),
]
WARMUP = ["great day", "terrible day", "works perfectly", "slow and broken"]


def words(text):
    return [w for w in text.lower().replace(",", " ").split() if w]


class Model:
    def __init__(self):
        self.counts = {}
        self.totals = {}
        self.priors = {}
        self.vocab = set()
        self.info = {"warm": False}

    def load(self, extra_ms=0):
        t0 = time.monotonic()
        docs = {}
        for label, text in TRAINING:
            docs[label] = docs.get(label, 0) + 1
            c = self.counts.setdefault(label, {})
            for w in words(text):
                c[w] = c.get(w, 0) + 1
                self.vocab.add(w)
        for label, n in docs.items():
            self.priors[label] = math.log(n / float(len(TRAINING)))
            self.totals[label] = sum(self.counts[label].values())
        if extra_ms:
            time.sleep(extra_ms / 1000.0)  # "reading weights"
        self.info.update(loaded_at=time.time(),
                         load_ms=round((time.monotonic() - t0) * 1000, 1),
                         labels=sorted(self.priors),
                         vocabulary=len(self.vocab))

    def warm(self):
        """Run the model before the first real request does."""
        t0 = time.monotonic()
        for text in WARMUP:
            self.predict(text)
        self.info.update(warm=True, warmup_runs=len(WARMUP),
                         warm_ms=round((time.monotonic() - t0) * 1000, 3))

    def predict(self, text):
        v = len(self.vocab) + 1
        scores = {}
        for label, prior in self.priors.items():
            c, total = self.counts[label], self.totals[label]
            scores[label] = prior + sum(
                math.log((c.get(w, 0) + 1.0) / (total + v))
                for w in words(text))
        top = max(scores.values())
        z = sum(math.exp(s - top) for s in scores.values())
        probs = {k: round(math.exp(s - top) / z, 4)
                 for k, s in scores.items()}
        return {"label": max(probs, key=probs.get), "scores": probs}


MODEL = Model()


def handler(req):
    if not MODEL.info["warm"]:
        raise HTTPError(503, "model not warm\n")  # cannot happen
    if req.path.rstrip("/").endswith("/info"):
        return MODEL.info
    text = req.args.get("text")
    if req.data:
        try:
            text = json.loads(req.data).get("text")
        except (ValueError, AttributeError):
            raise HTTPError(400, "body must be {\"text\": ...}\n")
    if not isinstance(text, str) or not text.strip():
        raise HTTPError(400, "no text\n")
    out = MODEL.predict(text)
    out["replica"] = req.replica_id
    out["model"] = {"loaded_at": MODEL.info["loaded_at"], "warm": True}
    return out


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--load-ms", type=int, default=0)
    opts, _ = ap.parse_known_args()

    def startup():
        MODEL.load(opts.load_ms)
        MODEL.warm()

    return serve(handler, on_startup=startup)


if __name__ == "__main__":
    sys.exit(main())
