build-ops-asan/obj/src/upstream.o: src/upstream.c src/conf.h src/handle.h \
 src/log.h src/net.h src/registry.h src/stream.h src/upstream.h \
 src/wire.h src/worker.h
src/conf.h:
src/handle.h:
src/log.h:
src/net.h:
src/registry.h:
src/stream.h:
src/upstream.h:
src/wire.h:
src/worker.h:
