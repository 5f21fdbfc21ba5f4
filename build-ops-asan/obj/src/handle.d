build-ops-asan/obj/src/handle.o: src/handle.c src/balance.h src/conf.h \
 src/handle.h src/log.h src/registry.h src/net.h src/stream.h \
 src/upstream.h src/worker.h
src/balance.h:
src/conf.h:
src/handle.h:
src/log.h:
src/registry.h:
src/net.h:
src/stream.h:
src/upstream.h:
src/worker.h:
