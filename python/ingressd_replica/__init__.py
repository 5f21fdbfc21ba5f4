"""ingressd_replica -- serve a model (or anything) behind ingressd, from
Python, with the standard library only.

    from ingressd_replica import serve

    async def handler(req):
        body = await req.body()
        return {"length": len(body), "path": req.path}

    serve(handler)

ingressd spawns the script with INGRESSD_LISTEN (and INGRESSD_REPLICA_ID,
INGRESSD_DEPLOYMENT) in its environment; run by hand, give --listen ADDR.
See python/README.md for the handler's contract.
"""

from .request import Headers, HTTPError, Request, Response
from .server import ConfigError, Replica, parse_address, serve

__version__ = "0.1.0"
__all__ = ["serve", "Replica", "Request", "Response", "Headers",
           "HTTPError", "ConfigError", "parse_address", "__version__"]
