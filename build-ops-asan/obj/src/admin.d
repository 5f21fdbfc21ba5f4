build-ops-asan/obj/src/admin.o: src/admin.c src/admin.h src/conf.h \
 src/http1.h src/metrics.h src/registry.h src/net.h src/worker.h
src/admin.h:
src/conf.h:
src/http1.h:
src/metrics.h:
src/registry.h:
src/net.h:
src/worker.h:
