# bench/uwsgi/hello.py -- the WSGI twin of replica/examples/hello.c for the
# nginx -> uwsgi target of `make bench`: 200 "Hello world!" to everything.

BODY = b"Hello world!"
HEADERS = [("Content-Type", "text/plain"),
           ("Content-Length", str(len(BODY)))]


def application(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]
