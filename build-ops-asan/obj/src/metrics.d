build-ops-asan/obj/src/metrics.o: src/metrics.c src/metrics.h \
 src/registry.h src/net.h src/reqlog.h src/worker.h
src/metrics.h:
src/registry.h:
src/net.h:
src/reqlog.h:
src/worker.h:
