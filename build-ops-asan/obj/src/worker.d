build-ops-asan/obj/src/worker.o: src/worker.c src/accesslog.h src/conf.h \
 src/front.h src/handle.h src/log.h src/metrics.h src/route.h \
 src/upstream.h src/worker.h
src/accesslog.h:
src/conf.h:
src/front.h:
src/handle.h:
src/log.h:
src/metrics.h:
src/route.h:
src/upstream.h:
src/worker.h:
