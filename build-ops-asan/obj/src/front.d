build-ops-asan/obj/src/front.o: src/front.c src/admin.h src/deadline.h \
 src/conf.h src/front.h src/handle.h src/http1.h src/log.h src/net.h \
 src/reqlog.h src/resp.h src/route.h src/stream.h src/wire.h src/worker.h
src/admin.h:
src/deadline.h:
src/conf.h:
src/front.h:
src/handle.h:
src/http1.h:
src/log.h:
src/net.h:
src/reqlog.h:
src/resp.h:
src/route.h:
src/stream.h:
src/wire.h:
src/worker.h:
