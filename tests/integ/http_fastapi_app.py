"""A FastAPI app (run under uvicorn by the HTTP upstream tests): a JSON
endpoint, a server-sent events token stream, a slow endpoint.

  /usr/bin/python3 -m uvicorn --app-dir tests/integ http_fastapi_app:app \
      --host 127.0.0.1 --port N
"""

import asyncio
import json
import time

from fastapi import FastAPI
from fastapi.responses import StreamingResponse

app = FastAPI()


@app.get("/health")
async def health():
	return {"ok": True}


@app.get("/json")
async def as_json(q: str = ""):
	return {"q": q, "tokens": ["a", "b", "c"]}


@app.get("/sse")
async def sse(n: int = 5, gap: float = 0.2):
	"""n events, gap seconds apart; each says when it was sent."""
	async def events():
		for i in range(n):
			yield "data: %s\n\n" % json.dumps({"i": i,
			    "sent": time.time()})
			await asyncio.sleep(gap)
	return StreamingResponse(events(), media_type="text/event-stream")


@app.get("/slow")
async def slow(s: float = 1.0):
	await asyncio.sleep(s)
	return {"slept": s}
