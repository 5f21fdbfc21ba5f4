build-ops-asan/obj/src/main.o: src/main.c src/accesslog.h src/conf.h \
 src/handle.h src/log.h src/metrics.h src/net.h src/registry.h \
 src/route.h src/sdnotify.h src/supervise.h src/worker.h
src/accesslog.h:
src/conf.h:
src/handle.h:
src/log.h:
src/metrics.h:
src/net.h:
src/registry.h:
src/route.h:
src/sdnotify.h:
src/supervise.h:
src/worker.h:
