build-ops-asan/obj/src/stream.o: src/stream.c src/deadline.h src/handle.h \
 src/http1.h src/resp.h src/stream.h src/upstream.h src/wire.h \
 src/worker.h
src/deadline.h:
src/handle.h:
src/http1.h:
src/resp.h:
src/stream.h:
src/upstream.h:
src/wire.h:
src/worker.h:
